"""Showing a finished matplotlib figure, the one step every widget shares."""

from __future__ import annotations

import matplotlib.pyplot as plt


def display_figure(fig: plt.Figure) -> None:
    """Show ``fig`` as a static image in Jupyter (nothing elsewhere), then release it.

    Widgets draw their static view and every redraw through this, so a page without a
    kernel keeps the image and no figure is left open to be drawn a second time.
    """
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # pragma: no cover - IPython comes with the course
        get_ipython = None
    if get_ipython is not None and get_ipython() is not None:
        display(fig)
    plt.close(fig)

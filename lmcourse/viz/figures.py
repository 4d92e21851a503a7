"""Showing a finished matplotlib figure, and giving a widget its static figure as fallback."""

from __future__ import annotations

import functools

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


def figure_png(fig: plt.Figure, dpi: float = 100) -> str:
    """``fig`` as a base64 PNG, the way Jupyter stores an ``image/png`` output."""
    import base64
    import io

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


#: what a page shows for a widget when it can draw neither the widget nor its figure
WIDGET_TEXT = "(an interactive widget: run the notebook to use it)"


@functools.cache
def _box_with_figure() -> type:
    import ipywidgets as widgets

    class BoxWithFigure(widgets.VBox):
        """A ``VBox`` whose display data carries a PNG of its static figure beside the
        widget view: JupyterLab with a kernel draws the live widget and nothing else; a
        page without one (the site, the slides, a notebook reopened or not yet run) has no
        widget to draw and shows the PNG. One figure either way, never two."""

        static_png: str = ""
        static_html: str = ""

        def _repr_mimebundle_(self, **kwargs):
            data = super()._repr_mimebundle_(**kwargs)
            if self.static_png:
                data["image/png"] = self.static_png
            if self.static_html:
                data["text/html"] = self.static_html
            data["text/plain"] = WIDGET_TEXT
            return data

    return BoxWithFigure


def box_with_figure(children, static: plt.Figure | None = None, html: str = ""):
    """A ``VBox`` of ``children`` that carries ``static`` as its fallback PNG (see
    ``BoxWithFigure``; the figure is closed, and kept as the box's ``static_figure``), or
    ``html`` as its fallback for a widget that draws HTML rather than a figure."""
    if static is None and not html:
        raise ValueError("box_with_figure needs a static figure or fallback html")
    box = _box_with_figure()(children=list(children))
    box.static_figure, box.static_html = static, html
    if static is not None:
        box.static_png = figure_png(static)
        plt.close(static)
    return box

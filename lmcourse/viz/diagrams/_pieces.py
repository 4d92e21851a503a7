"""What every drawing of :mod:`lmcourse.viz.diagrams` shares: the palette and the
boxes, notes, operators and arrows they are made of."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch
from matplotlib.text import Text

from lmcourse.viz.architecture import COLORS, _arrow, _box

PALETTE = {**COLORS, "emb": "#e6dcf2", "rnn": "#fff2b3", "tok": "#ffffff",
           "drop": "#f2f2f2", "segA": "#fde8cf", "segB": "#dbe9f6", "bad": "#f9d2d2"}
HEADS = ["#cfe2f3", "#fce5cd", "#d9ead3", "#ead1dc"]  # one colour per attention head
CUT = "C3"  # where a gradient stops, what is dropped, what is replaced


# --- shared pieces ---------------------------------------------------------------------------

def _axes(ax: Axes | None, size: tuple[float, float]) -> Axes:
    if ax is None:
        _, ax = plt.subplots(figsize=size)
    return ax


def _rect(ax: Axes, x: float, y: float, text: str, kind: str = "io", w: float = 2.9,
          h: float = 0.55, fs: float = 8.5, gid: str | None = None, **kw) -> Text:
    """A box in :func:`lmcourse.viz.architecture._box`'s style with any colour (a kind of
    :data:`PALETTE` or a colour); returns its label."""
    if kind in COLORS and fs == 8.5 and not kw:
        _box(ax, x, y, text, kind, w, h)
        label = ax.texts[-1]
    else:
        ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.05",
                                    facecolor=PALETTE.get(kind, kind),
                                    edgecolor=kw.pop("edgecolor", "0.3"), linewidth=1, **kw))
        label = ax.text(x, y, text, ha="center", va="center", fontsize=fs)
    label.set_gid(gid)
    return label


def _note(ax: Axes, x: float, y: float, text: str, fs: float = 8, color: str = "0.3",
          **kw) -> Text:
    kw = {"ha": "center", "va": "center", **kw}
    return ax.text(x, y, text, fontsize=fs, color=color, **kw)


def _op(ax: Axes, x: float, y: float, text: str, r: float = 0.2, fs: float = 10) -> None:
    """An operation node (a circle), as in :mod:`lmcourse.viz.cells`."""
    ax.add_patch(Circle((x, y), r, facecolor=PALETTE["cross"], edgecolor="0.3", zorder=3))
    ax.text(x, y, text, ha="center", va="center", fontsize=fs, zorder=4)


def _link(ax: Axes, start: tuple[float, float], end: tuple[float, float], gid: str,
          **kw) -> None:
    """An arrow that carries a mapping; its ``gid`` names it for the tests."""
    _arrow(ax, start, end, **kw)
    ax.patches[-1].set_gid(gid)


def _thick(ax: Axes, start: tuple[float, float], end: tuple[float, float], width: float,
           color: str, alpha: float = 1.0) -> None:
    """An arrow of any line width (``_arrow`` draws them all 1 point wide)."""
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=8 + 2 * width,
                                 color=color, linewidth=width, alpha=alpha))


def _polyline(ax: Axes, points: list[tuple[float, float]], **kw) -> None:
    """A line through ``points`` with an arrow head on its last segment."""
    xs, ys = zip(*points, strict=True)
    ax.plot(xs[:-1], ys[:-1], color=kw.get("color", "0.25"), linewidth=1,
            linestyle=kw.get("linestyle", "-"))
    _arrow(ax, points[-2], points[-1], shrinkA=0, **kw)

r"""The LSTM and GRU cells drawn as boxes and arrows, matplotlib only.

Both drawings follow the equations of :mod:`lmcourse.models.gated` and the convention
of Olah's "Understanding LSTM Networks": yellow boxes are layers with weights (a
sigmoid gate $\sigma$ or the tanh candidate), circles are element-wise operations
($\odot$, $+$, $1-$, tanh), and the state runs left to right across the top.

    LSTM:  i, f, o = sigma(.),  g = tanh(.),  c_t = f * c_{t-1} + i * g,  h_t = o * tanh(c_t)
    GRU:   r, z = sigma(.),  n = tanh(x W_in^T + r * (h W_hn^T)),  h_t = (1 - z) * n + z * h_{t-1}

Every layer box reads the concatenation $[h_{t-1}, x_t]$ (one matrix applied to the
concatenation equals PyTorch's two matrices applied to each part).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch

from lmcourse.viz.architecture import _canvas

__all__ = ["draw_gru_cell", "draw_lstm_cell"]

LAYER, OP, STATE = "#fff2b3", "#f9d2d2", "C0"


def _layer(ax: Axes, x: float, y: float, text: str, name: str) -> None:
    """A layer with weights (yellow box) and the gate's name under it."""
    ax.add_patch(FancyBboxPatch((x - 0.32, y - 0.25), 0.64, 0.5, boxstyle="round,pad=0.04",
                                facecolor=LAYER, edgecolor="0.3"))
    ax.text(x, y, text, ha="center", va="center", fontsize=11)
    ax.text(x + 0.38, y - 0.42, name, ha="left", va="center", fontsize=9, color="0.25",
            style="italic")


def _op(ax: Axes, x: float, y: float, text: str, r: float = 0.2) -> None:
    """An element-wise operation (pink circle)."""
    ax.add_patch(Circle((x, y), r, facecolor=OP, edgecolor="0.3", zorder=3))
    ax.text(x, y, text, ha="center", va="center", fontsize=10 if len(text) < 3 else 7,
            zorder=4)


def _arrow(ax: Axes, points: list[tuple[float, float]], color: str = "0.3",
           lw: float = 1.2) -> None:
    """A polyline through ``points`` with an arrow head at the end."""
    xs, ys = zip(*points, strict=True)
    ax.plot(xs[:-1], ys[:-1], color=color, linewidth=lw, solid_capstyle="round")
    ax.add_patch(FancyArrowPatch(points[-2], points[-1], arrowstyle="-|>", mutation_scale=11,
                                 color=color, linewidth=lw, shrinkA=0, shrinkB=0))


def _frame(ax: Axes | None, title: str) -> Axes:
    if ax is None:
        _, ax = plt.subplots(figsize=(7.2, 4.2))
    ax.add_patch(FancyBboxPatch((0.4, 0.55), 7.2, 4.0, boxstyle="round,pad=0.1",
                                facecolor="#f4f4f4", edgecolor="0.6"))
    return _canvas(ax, (-0.6, 8.8), (-0.45, 5.25), title)


def _inputs(ax: Axes, h_label: str, layer_xs: list[float]) -> None:
    """h_{t-1} (from the left, bottom) and x_t (from below) merge into one bus that feeds
    every layer box."""
    ax.text(-0.45, 1.0, h_label, ha="left", va="center", fontsize=11)
    ax.text(1.0, -0.3, "$x_t$", ha="center", va="center", fontsize=11)
    ax.plot([0.1, 1.0], [1.0, 1.0], color="0.3", linewidth=1.2)
    ax.plot([1.0, 1.0], [-0.1, 1.0], color="0.3", linewidth=1.2)
    ax.plot([1.0, max(layer_xs)], [1.0, 1.0], color="0.3", linewidth=1.2)
    for x in layer_xs:
        _arrow(ax, [(x, 1.0), (x, 1.75)])


def draw_lstm_cell(ax: Axes | None = None) -> Axes:
    r"""One LSTM step: forget, input and output gates, the tanh candidate $g_t$, and the
    cell state $c$ running along the top, changed only by $\odot f_t$ and $+\,i_t\odot g_t$."""
    ax = _frame(ax, "LSTM cell:  $c_t = f_t\\odot c_{t-1} + i_t\\odot g_t$,   "
                    "$h_t = o_t\\odot\\tanh(c_t)$")
    top, mid = 4.0, 2.9
    xf, xi, xg, xo = 1.9, 3.2, 4.2, 5.6
    _inputs(ax, "$h_{t-1}$", [xf, xi, xg, xo])
    for x, text, name in ((xf, "$\\sigma$", "$f_t$"), (xi, "$\\sigma$", "$i_t$"),
                          (xg, "tanh", "$g_t$"), (xo, "$\\sigma$", "$o_t$")):
        _layer(ax, x, 2.0, text, name)
    # the cell state: the highway across the top
    ax.text(-0.45, top, "$c_{t-1}$", ha="left", va="center", fontsize=11, color=STATE)
    _arrow(ax, [(0.15, top), (xf - 0.2, top)], color=STATE, lw=2.2)
    _op(ax, xf, top, "×")
    _arrow(ax, [(xf + 0.2, top), (3.7 - 0.2, top)], color=STATE, lw=2.2)
    _op(ax, 3.7, top, "+")
    _arrow(ax, [(3.9, top), (8.2, top)], color=STATE, lw=2.2)
    ax.text(8.25, top, "$c_t$", ha="left", va="center", fontsize=11, color=STATE)
    # gates into the cell line
    _arrow(ax, [(xf, 2.25), (xf, top - 0.2)])
    _op(ax, 3.7, mid, "×")
    _arrow(ax, [(xi, 2.25), (xi, mid), (3.5, mid)])
    _arrow(ax, [(xg, 2.25), (xg, mid), (3.9, mid)])
    _arrow(ax, [(3.7, mid + 0.2), (3.7, top - 0.2)])
    # the output: h_t = o_t * tanh(c_t)
    _op(ax, 6.6, 3.35, "tanh", r=0.24)
    _arrow(ax, [(6.6, top), (6.6, 3.35 + 0.24)])
    _op(ax, 6.6, 2.0, "×")
    _arrow(ax, [(6.6, 3.35 - 0.24), (6.6, 2.2)])
    _arrow(ax, [(xo + 0.32, 2.0), (6.4, 2.0)])
    _arrow(ax, [(6.6, 1.8), (6.6, 1.0), (8.2, 1.0)])
    ax.text(8.25, 1.0, "$h_t$", ha="left", va="center", fontsize=11)
    _arrow(ax, [(7.2, 1.0), (7.2, 4.9)])
    ax.text(7.3, 4.95, "$h_t$ (output)", ha="left", va="center", fontsize=9)
    _legend(ax)
    return ax


def draw_gru_cell(ax: Axes | None = None) -> Axes:
    r"""One GRU step: reset and update gates and the candidate $n_t$ (which reads
    $h_{t-1}$ through $r_t$); the state along the top is mixed, $(1-z_t)\odot n_t +
    z_t\odot h_{t-1}$."""
    ax = _frame(ax, "GRU cell:  $h_t = (1-z_t)\\odot n_t + z_t\\odot h_{t-1}$   "
                    "(no separate cell, no output gate)")
    top = 4.0
    xr, xz, xn = 1.9, 3.2, 5.0
    _inputs(ax, "$h_{t-1}$", [xr, xz, xn])
    for x, text, name in ((xr, "$\\sigma$", "$r_t$"), (xz, "$\\sigma$", "$z_t$"),
                          (xn, "tanh", "$n_t$")):
        _layer(ax, x, 2.0, text, name)
    # the state line: h_{t-1} -> (x z) -> (+) -> h_t
    ax.text(-0.45, top, "$h_{t-1}$", ha="left", va="center", fontsize=11, color=STATE)
    ax.plot([0.35, 0.35], [1.0, top], color=STATE, linewidth=1.0, linestyle=":")
    _arrow(ax, [(0.15 + 0.45, top), (3.2 - 0.2, top)], color=STATE, lw=2.2)
    _op(ax, 3.2, top, "×")
    _arrow(ax, [(3.4, top), (6.2, top)], color=STATE, lw=2.2)
    _op(ax, 6.4, top, "+")
    _arrow(ax, [(6.6, top), (8.2, top)], color=STATE, lw=2.2)
    ax.text(8.25, top, "$h_t$", ha="left", va="center", fontsize=11, color=STATE)
    # update gate: z to the keep path, 1 - z to the candidate path
    _arrow(ax, [(xz, 2.25), (xz, top - 0.2)])
    _op(ax, 4.1, 3.1, "1−")
    _arrow(ax, [(xz, 3.1), (3.9, 3.1)])
    _op(ax, 6.4, 3.1, "×")
    _arrow(ax, [(4.3, 3.1), (6.2, 3.1)])
    _arrow(ax, [(xn, 2.25), (xn, 2.7), (6.4, 2.7), (6.4, 2.9)])
    _arrow(ax, [(6.4, 3.3), (6.4, top - 0.2)])
    # reset gate scales the candidate's view of h_{t-1}
    _op(ax, xn - 0.9, 1.45, "×")
    _arrow(ax, [(xr + 0.32, 2.0), (xr + 0.7, 2.0), (xr + 0.7, 1.45), (xn - 1.1, 1.45)])
    _arrow(ax, [(xn - 0.7, 1.45), (xn - 0.2, 1.45), (xn - 0.2, 1.75)])
    ax.text(xn - 0.9, 0.9, "$r_t\\odot(h_{t-1}W_{hn}^\\top)$", ha="center", va="top",
            fontsize=7.5, color="0.25")
    _arrow(ax, [(6.4, top), (7.3, top), (7.3, 4.9)])
    ax.text(7.4, 4.95, "$h_t$ (output)", ha="left", va="center", fontsize=9)
    _legend(ax)
    return ax


def _legend(ax: Axes) -> None:
    ax.add_patch(FancyBboxPatch((7.75, 2.45), 0.3, 0.22, boxstyle="round,pad=0.02",
                                facecolor=LAYER, edgecolor="0.3"))
    ax.text(8.15, 2.56, "layer (weights)", fontsize=7, va="center")
    ax.add_patch(Circle((7.9, 2.05), 0.11, facecolor=OP, edgecolor="0.3"))
    ax.text(8.15, 2.05, "element-wise", fontsize=7, va="center")
    ax.plot([7.75, 8.05], [1.6, 1.6], color=STATE, linewidth=2.2)
    ax.text(8.15, 1.6, "state path", fontsize=7, va="center")

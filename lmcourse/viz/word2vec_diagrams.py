r"""word2vec's two architectures drawn as boxes and arrows, matplotlib only.

* **skip-gram**: the center word's input vector $v_c$ predicts every word of its window,
  each through $\sigma(u_o^\top v_c)$, against $K$ noise words $\sigma(-u_k^\top v_c)$;
* **CBOW**: the mean of the window's input vectors, $\bar v$, predicts the center word.

The boxes and arrows are those of :mod:`lmcourse.viz.architecture` (same colours).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.axes import Axes

from lmcourse.viz.architecture import _arrow, _box, _canvas

__all__ = ["draw_cbow", "draw_skipgram", "draw_word2vec"]

_WINDOW = ["w(t−2)", "w(t−1)", "w(t+1)", "w(t+2)"]
_YS = [3.3, 2.3, 1.3, 0.3]


def _finish(ax: Axes, title: str) -> Axes:
    return _canvas(ax, (-1.0, 9.4), (-1.3, 4.1), title)


def draw_skipgram(ax: Axes | None = None) -> Axes:
    """Skip-gram with negative sampling: one center word, one binary decision per context
    word of the window (and per noise word)."""
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.4))
    _box(ax, 0.4, 1.8, "center word\nw(t)", "io", w=1.6, h=0.8)
    _box(ax, 3.6, 1.8, "lookup in $W_{in}$\n$v_c$  (d numbers)", "ffn", w=2.3, h=0.8)
    _arrow(ax, (1.25, 1.8), (2.4, 1.8))
    for word, y in zip(_WINDOW, _YS, strict=True):
        _box(ax, 7.9, y, f"{word}: $\\sigma(u_o^\\top v_c)$", "attn", w=2.6, h=0.55)
        _arrow(ax, (4.8, 1.8), (6.55, y))
    _box(ax, 7.9, -0.8, "K noise words ~ $P_n$:\n$\\sigma(-u_k^\\top v_c)$", "norm",
         w=2.6, h=0.75)
    _arrow(ax, (4.8, 1.8), (6.55, -0.8), linestyle="--")
    ax.text(5.6, 3.7, "one example per (center, context) pair", fontsize=8, ha="center",
            color="0.3")
    return _finish(ax, "Skip-gram: the center word predicts its window")


def draw_cbow(ax: Axes | None = None) -> Axes:
    """CBOW with negative sampling: the averaged window predicts the center word."""
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.4))
    for word, y in zip(_WINDOW, _YS, strict=True):
        _box(ax, 0.4, y, word, "io", w=1.5, h=0.55)
        _arrow(ax, (1.2, y), (2.55, 1.8))
    _box(ax, 3.9, 1.8, "mean of their\n$v_c$ in $W_{in}$:  $\\bar v$", "ffn", w=2.5, h=0.8)
    _box(ax, 7.9, 1.8, "center w(t):\n$\\sigma(u_{w(t)}^\\top \\bar v)$", "attn", w=2.6,
         h=0.8)
    _arrow(ax, (5.2, 1.8), (6.55, 1.8))
    _box(ax, 7.9, -0.8, "K noise words ~ $P_n$:\n$\\sigma(-u_k^\\top \\bar v)$", "norm",
         w=2.6, h=0.75)
    _arrow(ax, (5.2, 1.8), (6.55, -0.8), linestyle="--")
    ax.text(4.6, 3.7, "one example per position", fontsize=8, ha="center", color="0.3")
    return _finish(ax, "CBOW: the averaged window predicts the center word")


def draw_word2vec() -> plt.Figure:
    """Both architectures side by side (window 2 drawn; any window works the same)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.3))
    draw_skipgram(left)
    draw_cbow(right)
    fig.tight_layout()
    return fig

"""The encoder–decoder transformer drawn as boxes and arrows, matplotlib only.

The encoder (left) is a stack of ``N`` layers of self-attention and feed-forward blocks;
the decoder (right) adds, between its masked self-attention and its feed-forward block,
a cross-attention block whose keys and values come from the encoder's output (the
"memory"). Every block sits in a residual connection followed (post-norm) or preceded
(pre-norm) by a LayerNorm.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

__all__ = ["draw_encoder_decoder"]

COLORS = {"attn": "#fde8cf", "cross": "#f9d2d2", "ffn": "#dbe9f6", "norm": "#eeeeee",
          "io": "#d9f0d3"}


def _box(ax: Axes, x: float, y: float, text: str, kind: str, w: float = 2.9,
         h: float = 0.55) -> tuple[float, float]:
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.05",
                                facecolor=COLORS[kind], edgecolor="0.3", linewidth=1))
    ax.text(x, y, text, ha="center", va="center", fontsize=8.5)
    return x, y


def _arrow(ax: Axes, start: tuple[float, float], end: tuple[float, float],
           style: str = "-|>", **kw) -> None:
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=10,
                                 color=kw.pop("color", "0.25"), linewidth=1, **kw))


def _canvas(ax: Axes, xlim: tuple[float, float], ylim: tuple[float, float],
            title: str) -> Axes:
    """The frame every diagram shares: fixed limits, equal scales, no axes, a title."""
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(title, fontsize=10)
    return ax


def _stack(ax: Axes, x: float, y0: float, blocks: list[tuple[str, str]], norm_first: bool,
           step: float = 0.75) -> list[float]:
    """Draw ``blocks`` (label, kind) bottom-up, each with its LayerNorm and residual arrow;
    returns the heights of the block boxes."""
    y, heights, below = y0, [], y0 - step
    for label, kind in blocks:
        norm_y, block_y = (y, y + step) if norm_first else (y + step, y)
        _box(ax, x, block_y, label, kind)
        _box(ax, x, norm_y, "LayerNorm" if norm_first else "Add & LayerNorm", "norm", h=0.4)
        first, second = (norm_y, block_y) if norm_first else (block_y, norm_y)
        _arrow(ax, (x, below + 0.28), (x, first - 0.28))
        _arrow(ax, (x, first + 0.25), (x, second - 0.25))
        top = block_y if norm_first else norm_y
        # the residual path: around the block, back into the sum
        side = x - 1.55
        ax.plot([x - 0.2, side, side], [below + 0.3, below + 0.3, top + 0.42], color="C0",
                linewidth=1)
        _arrow(ax, (side, top + 0.42), (x - 0.15, top + 0.42), color="C0")
        if norm_first:
            ax.text(x + 1.4, top + 0.42, "+", color="C0", fontsize=11, va="center")
        heights.append(block_y)
        below = top + 0.42 if norm_first else norm_y
        y += 2 * step + (0.35 if norm_first else 0.2)
    return heights + [below]


def draw_encoder_decoder(norm_first: bool = False, ax: Axes | None = None) -> Axes:
    """Draw the encoder and decoder stacks side by side (post-norm, the paper's arrangement,
    by default; ``norm_first=True`` for pre-norm), with the memory feeding every
    decoder layer's cross-attention."""
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 6.4))
    ex, dx = 2.0, 7.0
    _box(ax, ex, 0, "source embedding\n+ positions", "io", h=0.7)
    _box(ax, dx, 0, "target embedding (shifted right)\n+ positions", "io", w=3.2, h=0.7)
    enc = _stack(ax, ex, 1.2, [("multi-head self-attention", "attn"),
                               ("feed-forward", "ffn")], norm_first)
    dec = _stack(ax, dx, 1.2, [("masked multi-head\nself-attention", "attn"),
                               ("cross-attention\nQ: target, K, V: memory", "cross"),
                               ("feed-forward", "ffn")], norm_first)
    enc_top, dec_top = enc[-1], dec[-1]
    if norm_first:  # a pre-norm stack ends with one more LayerNorm
        _box(ax, ex, enc_top + 0.6, "final LayerNorm", "norm", h=0.4)
        _box(ax, dx, dec_top + 0.6, "final LayerNorm", "norm", h=0.4)
        _arrow(ax, (ex, enc_top), (ex, enc_top + 0.38))
        _arrow(ax, (dx, dec_top), (dx, dec_top + 0.38))
        enc_top, dec_top = enc_top + 0.8, dec_top + 0.8
    for x, top, n_top in ((ex, enc[0] - 0.55, enc_top), (dx, dec[0] - 0.55, dec_top)):
        ax.add_patch(FancyBboxPatch((x - 1.85, top), 3.85, n_top - top + 0.05,
                                    boxstyle="round,pad=0.1", fill=False, linestyle="--",
                                    edgecolor="0.5"))
        ax.text(x + 2.15, (top + n_top) / 2, "× N", fontsize=11, va="center")
    _box(ax, ex, enc_top + 0.7, "memory m (S × d)", "io")
    _arrow(ax, (ex, enc_top + 0.1), (ex, enc_top + 0.42))
    _arrow(ax, (ex + 1.3, enc_top + 0.7), (dx - 1.3, dec[1]), color="C3",
           connectionstyle="arc3,rad=-0.25")
    ax.text((ex + dx) / 2 + 0.1, (enc_top + 0.7 + dec[1]) / 2 - 0.15,
            "keys and values\nfor every\ndecoder layer", color="C3", fontsize=8, ha="center",
            va="top")
    _box(ax, dx, dec_top + 0.7, "linear → softmax over the vocabulary", "io", w=3.2)
    _arrow(ax, (dx, dec_top + 0.1), (dx, dec_top + 0.42))
    return _canvas(ax, (-0.3, 9.6), (-0.6, max(enc_top, dec_top) + 1.3),
                   f"Encoder (left) and decoder (right), {'pre' if norm_first else 'post'}-norm")

"""Attention heads as pictures: a heatmap per head, a grid per layer, and a widget.

``attentions`` is what our models and Hugging Face models (``output_attentions=True``)
return: a sequence with one tensor ``B x heads x T x S`` per layer. Row ``i`` of a
head's matrix is the distribution of query token ``i`` over the key tokens, so every
row sums to 1 (or is all 0 for a query that may attend to nothing).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch

from lmcourse.viz.figures import box_with_figure, display_figure

__all__ = ["attention_widget", "plot_attention", "plot_heads_grid"]

ALL_HEADS = "all heads"


def _as_layers(attentions) -> list[torch.Tensor]:
    """A list of ``B x heads x T x S`` tensors from a sequence of them or a single tensor."""
    if isinstance(attentions, torch.Tensor | np.ndarray):
        attentions = [attentions]
    layers = []
    for a in attentions:
        a = torch.as_tensor(a).detach().float().cpu()
        if a.dim() == 2:  # T x S: one head of one example
            a = a[None, None]
        elif a.dim() == 3:  # heads x T x S: one example
            a = a[None]
        if a.dim() != 4:
            raise ValueError(f"expected B x heads x T x S attention weights, got shape "
                             f"{tuple(a.shape)}")
        layers.append(a)
    if not layers:
        raise ValueError("no attention weights given")
    return layers


def _label_size(n: int, inches: float | None = None) -> float:
    """Font size (points) for ``n`` tick labels along a side of ``inches``: about three
    quarters of the room each label has, between 4 and 9 points."""
    if inches is None:
        return float(np.clip(220 / max(n, 1), 4, 9))
    return float(np.clip(0.75 * 72 * inches / max(n, 1), 4, 9))


def _panel_inches(n: int) -> float:
    """Side of one head's panel for ``n`` tokens: larger for longer sentences, so that every
    token keeps a legible label."""
    return float(np.clip(0.17 * n + 1.0, 2.5, 5.0))


def _show_token(t: str) -> str:
    return {" ": "␣", "\n": "↵", "\t": "⇥"}.get(t, t)


def plot_attention(weights, tokens: Sequence[str], query_tokens: Sequence[str] | None = None,
                   *, ax: plt.Axes | None = None, title: str | None = None,
                   cmap: str = "viridis", vmax: float | None = None, colorbar: bool = True,
                   labels: bool = True, aspect: str = "auto",
                   fontsize: float | None = None) -> plt.Figure:
    """Heatmap of one head's ``T x S`` weights: queries down the side, keys along the top.

    ``tokens`` label the keys, ``query_tokens`` the queries (the same tokens by default:
    self-attention). Leading axes of size 1 (batch, head) are dropped. ``fontsize`` of the
    token labels defaults to one that shrinks with the number of tokens.
    """
    w = torch.as_tensor(weights).detach().float().cpu()
    while w.dim() > 2 and w.shape[0] == 1:
        w = w[0]
    if w.dim() != 2:
        raise ValueError(f"plot_attention draws one T x S matrix, got shape {tuple(w.shape)}")
    query_tokens = tokens if query_tokens is None else query_tokens
    T, S = w.shape
    if len(tokens) != S or len(query_tokens) != T:
        raise ValueError(f"{T} x {S} weights need {T} query and {S} key tokens, got "
                         f"{len(query_tokens)} and {len(tokens)}")
    if ax is None:
        side = float(np.clip(0.18 * max(T, S) + 1.5, 3.0, 7.0))
        _, ax = plt.subplots(figsize=(side + (0.8 if colorbar else 0), side))
    image = ax.imshow(w.numpy(), cmap=cmap, vmin=0.0, vmax=vmax, aspect=aspect,
                      interpolation="nearest")
    if labels:
        ax.set_xticks(range(S), [_show_token(t) for t in tokens], rotation=90,
                      fontsize=fontsize or _label_size(S))
        ax.set_yticks(range(T), [_show_token(t) for t in query_tokens],
                      fontsize=fontsize or _label_size(T))
        ax.xaxis.tick_top()
        ax.set_xlabel("key (attended to)", fontsize=8)
        ax.xaxis.set_label_position("bottom")
        ax.set_ylabel("query (attending)", fontsize=8)
    else:
        ax.set_xticks([])
        ax.set_yticks([])
    if title:
        ax.set_title(title, fontsize=9, pad=6)
    if colorbar:
        ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return ax.figure


def plot_heads_grid(attentions, tokens: Sequence[str], layer: int = -1, *,
                    batch_index: int = 0, ncols: int | None = None,
                    query_tokens: Sequence[str] | None = None,
                    cmap: str = "viridis") -> plt.Figure:
    """Every head of one layer side by side (one shared colour scale from 0 to 1).

    Every token is labelled: panels grow with the number of tokens (up to 5 inches), the
    labels shrink to fit them, and long sentences get two panels per row instead of four.
    """
    layers = _as_layers(attentions)
    layer_index = range(len(layers))[layer]
    heads = layers[layer_index][batch_index]
    H = heads.shape[0]
    n = max(len(tokens), len(tokens if query_tokens is None else query_tokens))
    panel = _panel_inches(n)
    fontsize = _label_size(n, panel)
    ncols = min(H, 4 if n <= 16 else 2) if ncols is None else ncols
    nrows = math.ceil(H / ncols)
    longest = max(len(t) for t in [*tokens, *(query_tokens or [])])
    margin = 0.6 * fontsize / 72 * longest + 0.3  # inches for the rotated key labels
    fig, axes = plt.subplots(nrows, ncols, squeeze=False, layout="constrained",
                             figsize=(panel * ncols + margin + 0.3,
                                      (panel + margin) * nrows + 0.4))
    for h, ax in enumerate(axes.flat):
        if h >= H:
            ax.axis("off")
            continue
        plot_attention(heads[h], tokens, query_tokens, ax=ax, cmap=cmap, vmax=1.0,
                       colorbar=False, title=f"head {h}", aspect="equal", fontsize=fontsize)
        ax.set_xlabel("")  # one axis title for the whole grid, below
        ax.set_ylabel("")
        if h % ncols:  # query labels on the first column only
            ax.set_yticklabels([])
    fig.suptitle(f"layer {layer_index}: attention of every head", fontsize=10)
    fig.supxlabel("key (attended to), along the top of each head", fontsize=8)
    fig.supylabel("query (attending)", fontsize=8)
    return fig


def attention_widget(attentions, tokens: Sequence[str], *, layer: int = -1,
                     batch_index: int = 0, query_tokens: Sequence[str] | None = None,
                     compute: Callable[[str], tuple] | None = None, text: str | None = None,
                     head: int | str = ALL_HEADS):
    """Dropdowns for the layer and the head (or all heads) of ``attentions``.

    Its fallback figure is every head of ``layer`` (what a page without a kernel shows,
    carried in the widget's own display data and kept as the box's ``static_figure``); the
    live controls redraw into an ``Output``: the grid of all heads, or one head large with
    its token labels (``head`` picks which the live view starts with).

    With ``compute`` (a function ``sentence -> (attentions, tokens)``) the widget also has
    a text box, starting at ``text``: type a sentence, press Enter, and the heads are
    recomputed for it. An error raised by ``compute`` is shown under the box.
    """
    import ipywidgets as widgets

    layers = _as_layers(attentions)
    static = plot_heads_grid(layers, tokens, layer, batch_index=batch_index,
                             query_tokens=query_tokens)

    num_heads = layers[0].shape[1]
    if head != ALL_HEADS and head not in range(num_heads):
        raise ValueError(f"head must be {ALL_HEADS!r} or 0..{num_heads - 1}, got {head!r}")
    shown = {"layers": layers, "tokens": list(tokens), "query_tokens": query_tokens,
             "batch": batch_index}
    layer_w = widgets.Dropdown(options=list(range(len(layers))),
                               value=range(len(layers))[layer], description="layer")
    head_w = widgets.Dropdown(options=[ALL_HEADS, *range(num_heads)], value=head,
                              description="head")
    out = widgets.Output()
    message = widgets.HTML()

    def redraw(*_):
        with out:
            out.clear_output(wait=True)
            layers, tokens = shown["layers"], shown["tokens"]
            if head_w.value == ALL_HEADS:
                fig = plot_heads_grid(layers, tokens, layer_w.value, batch_index=shown["batch"],
                                      query_tokens=shown["query_tokens"])
            else:
                fig = plot_attention(layers[layer_w.value][shown["batch"], head_w.value],
                                     tokens, shown["query_tokens"], vmax=1.0,
                                     title=f"layer {layer_w.value}, head {head_w.value}")
            display_figure(fig)

    def recompute(change=None):
        sentence = text_w.value
        try:
            new_attentions, new_tokens = compute(sentence)
            new_layers = _as_layers(new_attentions)
            if len(new_tokens) != new_layers[0].shape[-1]:
                raise ValueError(f"compute gave {len(new_tokens)} tokens for "
                                 f"{new_layers[0].shape[-1]} attention columns")
        except Exception as error:  # shown to the student, the last good picture stays
            message.value = f"<b>cannot show {sentence!r}:</b> {error}"
            return
        shown.update(layers=new_layers, tokens=list(new_tokens), query_tokens=None, batch=0)
        message.value = f"heads of {sentence!r}, {len(new_tokens)} tokens"
        with layer_w.hold_trait_notifications():
            layer_w.options = list(range(len(new_layers)))
            layer_w.value = min(layer_w.value if layer_w.value is not None else 0,
                                len(new_layers) - 1)
        redraw()

    layer_w.observe(redraw, names="value")
    head_w.observe(redraw, names="value")
    controls = [widgets.HBox([layer_w, head_w])]
    text_w = None
    if compute is not None:
        text_w = widgets.Text(value=" ".join(tokens) if text is None else text,
                              description="sentence", continuous_update=False,
                              layout=widgets.Layout(width="60%"))
        text_w.observe(recompute, names="value")
        controls = [text_w, message, *controls]
    redraw()
    box = box_with_figure([*controls, out], static)
    box.redraw = redraw
    box.layer_dropdown, box.head_dropdown = layer_w, head_w
    box.text_box, box.message = text_w, message
    box.shown = shown
    return box

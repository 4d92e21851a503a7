"""Attention heads as pictures: a heatmap per head, a grid per layer, and a widget.

``attentions`` is what our models and Hugging Face models (``output_attentions=True``)
return: a sequence with one tensor ``B x heads x T x S`` per layer. Row ``i`` of a
head's matrix is the distribution of query token ``i`` over the key tokens, so every
row sums to 1 (or is all 0 for a query that may attend to nothing).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch

from lmcourse.viz.figures import display_figure

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


def _label_size(n: int) -> float:
    return float(np.clip(220 / max(n, 1), 4, 9))


def _show_token(t: str) -> str:
    return {" ": "␣", "\n": "↵", "\t": "⇥"}.get(t, t)


def plot_attention(weights, tokens: Sequence[str], query_tokens: Sequence[str] | None = None,
                   *, ax: plt.Axes | None = None, title: str | None = None,
                   cmap: str = "viridis", vmax: float | None = None, colorbar: bool = True,
                   labels: bool = True, aspect: str = "auto") -> plt.Figure:
    """Heatmap of one head's ``T x S`` weights: queries down the side, keys along the top.

    ``tokens`` label the keys, ``query_tokens`` the queries (the same tokens by default:
    self-attention). Leading axes of size 1 (batch, head) are dropped.
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
                      fontsize=_label_size(S))
        ax.set_yticks(range(T), [_show_token(t) for t in query_tokens],
                      fontsize=_label_size(T))
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
    """Every head of one layer side by side (one shared colour scale from 0 to 1)."""
    layers = _as_layers(attentions)
    layer_index = range(len(layers))[layer]
    heads = layers[layer_index][batch_index]
    H = heads.shape[0]
    ncols = min(H, 4) if ncols is None else ncols
    nrows = math.ceil(H / ncols)
    labels = len(tokens) <= 16  # token labels only where they stay readable
    margin = 0.07 * max(len(t) for t in tokens) + 0.3 if labels else 0.0  # room for labels
    fig, axes = plt.subplots(nrows, ncols, squeeze=False,
                             figsize=(2.5 * ncols + margin + 0.3, (2.5 + margin) * nrows + 0.4))
    for h, ax in enumerate(axes.flat):
        if h >= H:
            ax.axis("off")
            continue
        plot_attention(heads[h], tokens, query_tokens, ax=ax, cmap=cmap, vmax=1.0,
                       colorbar=False, labels=labels, title=f"head {h}", aspect="equal")
        if labels and h % ncols:  # query labels on the first column only
            ax.set_yticklabels([])
            ax.set_ylabel("")
    fig.suptitle(f"layer {layer_index}: attention of every head", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.3 / fig.get_figheight()))  # room for the suptitle
    return fig



def attention_widget(attentions, tokens: Sequence[str], *, layer: int = -1,
                     batch_index: int = 0, query_tokens: Sequence[str] | None = None):
    """Dropdowns for the layer and the head (or all heads) of ``attentions``.

    It first draws a static figure, every head of ``layer`` (what a page without a
    kernel shows), then returns the live controls, which redraw into an ``Output``:
    the grid of all heads, or one head large with its token labels. The static figure
    is kept as the returned box's ``static_figure``.
    """
    import ipywidgets as widgets

    layers = _as_layers(attentions)
    static = plot_heads_grid(layers, tokens, layer, batch_index=batch_index,
                             query_tokens=query_tokens)
    display_figure(static)

    num_heads = layers[0].shape[1]
    layer_w = widgets.Dropdown(options=list(range(len(layers))),
                               value=range(len(layers))[layer], description="layer")
    head_w = widgets.Dropdown(options=[ALL_HEADS, *range(num_heads)], value=ALL_HEADS,
                              description="head")
    out = widgets.Output()

    def redraw(*_):
        with out:
            out.clear_output(wait=True)
            if head_w.value == ALL_HEADS:
                fig = plot_heads_grid(layers, tokens, layer_w.value, batch_index=batch_index,
                                      query_tokens=query_tokens)
            else:
                fig = plot_attention(layers[layer_w.value][batch_index, head_w.value], tokens,
                                     query_tokens, vmax=1.0,
                                     title=f"layer {layer_w.value}, head {head_w.value}")
            display_figure(fig)

    layer_w.observe(redraw, names="value")
    head_w.observe(redraw, names="value")
    redraw()
    box = widgets.VBox([widgets.HBox([layer_w, head_w]), out])
    box.static_figure = static
    box.redraw = redraw
    box.layer_dropdown, box.head_dropdown = layer_w, head_w
    return box

"""Seeing segmentations: coloured pieces, as a static figure and as a live text box."""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping

Segmenter = Callable[[str], list[str]]
_COLOURS = ("#cfe2f3", "#fce5cd", "#d9ead3", "#f4cccc", "#ead1dc", "#fff2cc")

__all__ = ["plot_segmentations", "segmentation_html", "segmentation_widget"]


def plot_segmentations(text: str, segmenters: Mapping[str, Segmenter], max_pieces: int = 30,
                       ax=None):
    """One row per tokenizer, each piece a coloured box (width ∝ its length)."""
    import matplotlib.pyplot as plt

    rows = {name: seg(text) for name, seg in segmenters.items()}
    if ax is None:
        _, ax = plt.subplots(figsize=(9, 0.55 * len(rows) + 0.6))
    width = 1.0
    for r, (name, pieces) in enumerate(rows.items()):
        y, x = -r, 0.0
        for k, piece in enumerate(pieces[:max_pieces]):
            w = width * max(len(piece), 1) + 0.6
            ax.add_patch(plt.Rectangle((x, y - 0.35), w, 0.7, color=_COLOURS[k % 2 + 2 * (r % 3)],
                                       ec="grey", lw=0.5))
            ax.text(x + w / 2, y, piece, ha="center", va="center", family="monospace",
                    fontsize=8)
            x += w + 0.15
        more = f" (+{len(pieces) - max_pieces})" if len(pieces) > max_pieces else ""
        ax.text(-0.5, y, f"{name}: {len(pieces)}{more}", ha="right", va="center", fontsize=9)
    longest = max((sum(max(len(p), 1) + 0.75 for p in ps[:max_pieces]) for ps in rows.values()),
                  default=1)
    ax.set_xlim(-0.2, longest + 0.2)
    ax.set_ylim(-len(rows) + 0.4, 0.6)
    ax.axis("off")
    ax.set_title(f"{text[:80]!r}", fontsize=9, loc="left", x=0)
    return ax


def segmentation_html(text: str, segmenters: Mapping[str, Segmenter]) -> str:
    """The same picture as HTML: one line of coloured pieces per tokenizer."""
    lines = []
    for r, (name, seg) in enumerate(segmenters.items()):
        pieces = seg(text)
        spans = "".join(
            f'<span style="background:{_COLOURS[k % 2 + 2 * (r % 3)]};padding:1px 3px;'
            f'margin:1px;border:1px solid #999;border-radius:3px;font-family:monospace">'
            f"{html.escape(p)}</span>" for k, p in enumerate(pieces))
        lines.append(f"<div style='margin:3px 0'><b>{html.escape(name)}</b> "
                     f"({len(pieces)} tokens): {spans}</div>")
    return "".join(lines)


def segmentation_widget(segmenters: Mapping[str, Segmenter], text: str = ""):
    """A text box; every keystroke re-segments what you type with every tokenizer. A page
    without a kernel shows the segmentations of ``text`` (the widget's HTML fallback)."""
    import ipywidgets as widgets

    from lmcourse.viz.figures import box_with_figure

    box = widgets.Text(value=text, description="text", continuous_update=True,
                       layout=widgets.Layout(width="95%"))
    out = widgets.HTML(segmentation_html(text, segmenters))

    def update(change):
        out.value = segmentation_html(change["new"], segmenters)

    box.observe(update, names="value")
    return box_with_figure([box, out], html=out.value)

"""Pictures of word embeddings: a 2-D projection and a nearest-neighbour / analogy explorer.

The explorer is an ipywidget; it first draws the same panels as a static figure, which is
what a page without a kernel shows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np

from lmcourse.models.embeddings import analogy, most_similar
from lmcourse.viz.figures import box_with_figure, display_figure

__all__ = ["neighbours_widget", "pca_2d", "plot_neighbours", "plot_projection", "plot_projections"]


def pca_2d(vectors: np.ndarray) -> np.ndarray:
    """The first two principal components of the rows of ``vectors`` (centred, then SVD)."""
    centred = vectors - vectors.mean(axis=0)
    _, _, Vt = np.linalg.svd(centred, full_matrices=False)
    return centred @ Vt[:2].T


def plot_projection(vectors: np.ndarray, words: Sequence[str],
                    groups: Mapping[str, Sequence[str]], title: str = "",
                    ax: plt.Axes | None = None) -> plt.Axes:
    """Unit-normalise the vectors of the words in ``groups``, project them with PCA (fitted
    on those words only) and plot them, one colour per group."""
    index = {w: i for i, w in enumerate(words)}
    chosen = [(g, w) for g, ws in groups.items() for w in ws if w in index]
    rows = vectors[[index[w] for _, w in chosen]]
    xy = pca_2d(rows / np.linalg.norm(rows, axis=1, keepdims=True))
    ax = ax or plt.subplots(figsize=(7, 3.5))[1]
    colours = dict(zip(groups, plt.rcParams["axes.prop_cycle"].by_key()["color"], strict=False))
    for (group, word), (x, y) in zip(chosen, xy, strict=True):
        ax.scatter(x, y, color=colours[group], s=18,
                   label=group if word == groups[group][0] else None)
        ax.annotate(word, (x, y), fontsize=7, xytext=(2, 2), textcoords="offset points")
    ax.set_title(title, fontsize=9)
    ax.set_xticks([])
    ax.set_yticks([])
    return ax


def plot_projections(embeddings: Mapping[str, np.ndarray], words: Sequence[str],
                     groups: Mapping[str, Sequence[str]]) -> plt.Figure:
    """:func:`plot_projection` side by side, one panel per embedding (by name), with the
    groups' legend in the first."""
    fig, axes = plt.subplots(1, len(embeddings), figsize=(4 * len(embeddings), 3.6),
                             squeeze=False)
    for ax, (name, vectors) in zip(axes[0], embeddings.items(), strict=True):
        plot_projection(vectors, words, groups, title=name, ax=ax)
    axes[0, 0].legend(fontsize=7, loc="best")
    fig.tight_layout()
    return fig


def plot_neighbours(embeddings: Mapping[str, np.ndarray], words: Sequence[str], query: str,
                    k: int = 8, analogy_of: tuple[str, str, str] | None = None) -> plt.Figure:
    """One panel per embedding: the ``k`` nearest neighbours of ``query`` (or the answers
    to the analogy ``a : b :: c : ?``) with their cosine similarities."""
    n = len(embeddings)
    fig, axes = plt.subplots(1, n, figsize=(1.7 * n, 3.0), squeeze=False)
    for ax, (name, vectors) in zip(axes[0], embeddings.items(), strict=True):
        if analogy_of is None:
            hits = most_similar(vectors, words, query, k)
        else:
            hits = analogy(vectors, words, *analogy_of, k=k)
        labels, sims = [w for w, _ in hits][::-1], [s for _, s in hits][::-1]
        ax.barh(range(len(sims)), sims, color="tab:blue", alpha=0.7)
        for y, label in enumerate(labels):
            ax.text(0.02, y, label, va="center", fontsize=8)
        ax.set_yticks([])
        ax.set_xlim(min(0.0, min(sims)), 1)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("cosine", fontsize=8)
    what = (f"{analogy_of[0]} : {analogy_of[1]} :: {analogy_of[2]} : ?" if analogy_of
            else f"nearest neighbours of '{query}'")
    fig.suptitle(what, fontsize=10)
    fig.tight_layout()
    return fig



def neighbours_widget(embeddings: Mapping[str, np.ndarray], words: Sequence[str],
                      choices: Sequence[str], query: str, k: int = 8,
                      analogy_of: tuple[str, str, str] = ("cairo", "egypt", "rome")):
    """Pick a word (nearest neighbours) or type an analogy ``a : b :: c : ?``; every
    embedding answers side by side. The view of ``query`` is its static fallback."""
    import ipywidgets as widgets

    static = plot_neighbours(embeddings, words, query, k)
    word_w = widgets.Dropdown(options=list(choices), value=query, description="word")
    a_w, b_w, c_w = (widgets.Text(value=v, layout=widgets.Layout(width="110px"))
                     for v in analogy_of)
    go = widgets.Button(description="a : b :: c : ?")
    out = widgets.Output()
    vocab = set(words)

    def show_neighbours(*_):
        with out:
            out.clear_output(wait=True)
            display_figure(plot_neighbours(embeddings, words, word_w.value, k))

    def show_analogy(*_):
        with out:
            out.clear_output(wait=True)
            a, b, c = (w.value.strip().lower() for w in (a_w, b_w, c_w))
            missing = [w for w in (a, b, c) if w not in vocab]
            if missing:
                print(f"not in the vocabulary: {missing}")
                return
            display_figure(plot_neighbours(embeddings, words, c, k, analogy_of=(a, b, c)))

    word_w.observe(show_neighbours, names="value")
    go.on_click(show_analogy)
    show_neighbours()
    return box_with_figure([widgets.HBox([word_w]), widgets.HBox([a_w, b_w, c_w, go]), out],
                           static)

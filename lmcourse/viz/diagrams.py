r"""Eleven architecture drawings from the course's papers, boxes and arrows, matplotlib only.

Each ``draw_*`` function draws one static figure into ``ax`` (a new figure when ``ax`` is
``None``) and returns the Axes. The look is that of :mod:`lmcourse.viz.architecture`:
rounded boxes, grey arrows, equal scales, no axes, a title.

* :func:`draw_elmo`: characters → char-CNN → highway → $x_k$ → 2-layer biLSTM → tied
  softmax; $\mathrm{ELMo}_k = \gamma \sum_j s_j h_{k,j}$.
* :func:`draw_bahdanau`: $e_{ij} = v^\top\tanh(W s_{i-1} + U h_j)$, $\alpha_{ij} =
  \mathrm{softmax}_j(e_{ij})$, $c_i = \sum_j \alpha_{ij} h_j$.
* :func:`draw_multi_head`: split into $h$ heads of $d_k = d_{model}/h$, attend, concatenate,
  $W^O$.
* :func:`draw_truncation`: full, regular and randomized truncation of BPTT.
* :func:`draw_bert_inputs`: $x_i = E_{tok} + E_{seg} + E_{pos}$.
* :func:`draw_bert_heads`: BERT's four fine-tuning setups.
* :func:`draw_electra`: generator, discriminator, $\mathcal{L}_{MLM} + \lambda
  \mathcal{L}_{Disc}$.
* :func:`draw_albert`: factorised embeddings and cross-layer sharing.
* :func:`draw_deberta`: disentangled attention and the enhanced mask decoder.
* :func:`draw_distilbert_init`: the student copies one teacher layer out of two.
* :func:`draw_tinybert_mapping`: TinyBERT's layer map $g(m) = mN/M$ and its losses.

Labels that tests look up carry a ``gid`` (e.g. ``"teacher:4"``, ``"segment:3"``), and the
arrows that carry a mapping have one too (``"copy:4:2"``, ``"map:2:6"``).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch
from matplotlib.text import Text

from lmcourse.models.distill import layer_map
from lmcourse.viz.architecture import COLORS, _arrow, _box, _canvas

__all__ = ["draw_albert", "draw_bahdanau", "draw_bert_heads", "draw_bert_inputs",
           "draw_deberta", "draw_distilbert_init", "draw_electra", "draw_elmo",
           "draw_multi_head", "draw_tinybert_mapping", "draw_truncation"]

PALETTE = {**COLORS, "emb": "#e6dcf2", "rnn": "#fff2b3", "tok": "#ffffff",
           "drop": "#f2f2f2", "segA": "#fde8cf", "segB": "#dbe9f6", "bad": "#f9d2d2"}
HEADS = ["#cfe2f3", "#fce5cd", "#d9ead3", "#ead1dc"]  # one colour per attention head
CUT = "C3"  # where a gradient stops, what is dropped, what is replaced

BERT_PAIR = ["[CLS]", "my", "dog", "is", "cute", "[SEP]", "he", "likes", "play", "##ing",
             "[SEP]"]
DISTIL_TEACHER, DISTIL_STUDENT = 6, 3  # MiniLM-L6 as the teacher, one layer out of two
TINY_M, TINY_N = 4, 12  # the paper's TinyBERT-4 and BERT-base


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


# --- 1. ELMo ---------------------------------------------------------------------------------

def _elmo_token_layer(ax: Axes, x: float) -> None:
    """The context-free token representation of one word, bottom-up."""
    for i, char in enumerate("cat"):
        _rect(ax, x + 0.6 * (i - 1), 0.0, char, "tok", w=0.42, h=0.42)
    steps = [(1.0, "char-CNN\n(filters + max-pool)", "ffn", 0.7),
             (2.05, "2 highway layers", "ffn", 0.45), (2.9, "linear projection", "ffn", 0.45),
             (3.8, "$x_k$   (layer j = 0)", "emb", 0.45)]
    below = 0.26
    for y, text, kind, h in steps:
        _rect(ax, x, y, text, kind, w=2.3, h=h)
        _arrow(ax, (x, below), (x, y - h / 2 - 0.05))
        below = y + h / 2 + 0.05
    _note(ax, x, 4.65, "token representation\n(every word alone)", fs=8.5, color="0.1")
    _note(ax, x, -0.6, "the same $x_k$ feeds\nboth directions")


def _elmo_direction(ax: Axes, xs: list[float], forward: bool, targets: list[str]) -> None:
    """One direction of the biLM: x_k, two LSTM layers, the word it predicts."""
    arrow = "\\overrightarrow{h}" if forward else "\\overleftarrow{h}"
    for k, (x, word, target) in enumerate(zip(xs, ["the", "cat", "sat"], targets,
                                              strict=True), start=1):
        _note(ax, x, 0.0, word, fs=9, color="0.1")
        _rect(ax, x, 0.9, f"$x_{k}$", "emb", w=0.95, h=0.45)
        _arrow(ax, (x, 0.15), (x, 0.62))
        for j, y in ((1, 2.0), (2, 3.1)):
            _rect(ax, x, y, f"${arrow}_{{{k},{j}}}$", "rnn", w=0.95, h=0.5)
            _arrow(ax, (x, 2.3 if j == 2 else 1.18), (x, y - 0.3))
        _arrow(ax, (x, 3.4), (x, 3.98))
        _arrow(ax, (x, 4.62), (x, 4.92))
        _note(ax, x, 5.1, target, fs=9, color="0.1")
    for y in (2.0, 3.1):  # the recurrences: left to right, or right to left
        for a, b in zip(xs[:-1], xs[1:], strict=True):
            start, end = ((a + 0.53, y), (b - 0.53, y)) if forward else ((b - 0.53, y),
                                                                          (a + 0.53, y))
            _arrow(ax, start, end, color="C0")
    mid = (xs[0] + xs[-1]) / 2
    _note(ax, mid, 5.6, "predicts the " + ("next" if forward else "previous") + " word",
          fs=8.5, color="0.1")
    _note(ax, mid, -0.6, ("forward LSTM: left → right" if forward
                          else "backward LSTM: right → left"), fs=8.5, color="0.1")


def _elmo_mix(ax: Axes) -> None:
    """The task's scalar mix of the three layers of token k."""
    rows = [(0.9, "$h_{k,0} = [x_k;\\, x_k]$"),
            (2.0, "$h_{k,1} = [\\overrightarrow{h}_{k,1};\\, \\overleftarrow{h}_{k,1}]$"),
            (3.1, "$h_{k,2} = [\\overrightarrow{h}_{k,2};\\, \\overleftarrow{h}_{k,2}]$")]
    for j, (y, text) in enumerate(rows):
        _rect(ax, 14.0, y, text, "emb", w=2.35, h=0.5)
        _rect(ax, 15.7, y, f"$\\times s_{j}$", "cross", w=0.62, h=0.42, fs=8)
        _arrow(ax, (15.23, y), (15.34, y))
        _arrow(ax, (16.06, y), (16.5, 2.0 + 0.1 * (y - 2.0)))
    _op(ax, 16.72, 2.0, "Σ", r=0.22)
    _rect(ax, 16.72, 3.1, "$\\times\\,\\gamma$", "cross", w=0.62, h=0.42, fs=8)
    _arrow(ax, (16.72, 2.22), (16.72, 2.84))
    _rect(ax, 16.72, 4.05, "ELMo$_k$", "io", w=0.95, h=0.45)
    _arrow(ax, (16.72, 3.36), (16.72, 3.78))
    _note(ax, 14.7, 4.75, "$\\mathrm{ELMo}_k = \\gamma \\sum_{j=0}^{2} s_j\\, h_{k,j}$",
          fs=10, color="0.1")
    _note(ax, 14.7, 5.3, "task-specific scalar mix,  $s = \\mathrm{softmax}(w)$", fs=8.5,
          color="0.1")


def draw_elmo(ax: Axes | None = None) -> Axes:
    r"""ELMo (Peters et al. 2018): each word's characters go through a char-CNN, two
    highway layers and a projection to $x_k$; a 2-layer biLSTM (forward left to right,
    backward right to left) reads the $x_k$, and one softmax, shared by both directions,
    predicts the next (forward) and the previous (backward) word. A task mixes the layers:
    $\mathrm{ELMo}_k = \gamma \sum_{j=0}^{2} s_j h_{k,j}$, $s = \mathrm{softmax}(w)$."""
    ax = _axes(ax, (12.6, 5.6))
    _elmo_token_layer(ax, 1.2)
    _elmo_direction(ax, [3.8, 5.3, 6.8], True, ["cat", "sat", "</s>"])
    _elmo_direction(ax, [8.6, 10.1, 11.6], False, ["<s>", "the", "cat"])
    for y, j in ((0.9, 0), (2.0, 1), (3.1, 2)):
        _note(ax, 7.7, y, f"j = {j}", fs=8)
    _rect(ax, 7.7, 4.3, "softmax $\\Theta_s$: one layer shared (tied) by both directions",
          "attn", w=8.8, h=0.55)
    _elmo_mix(ax)
    return _canvas(ax, (-0.3, 17.3), (-1.05, 6.0),
                   "ELMo: char-CNN token layer, 2-layer biLSTM language model, "
                   "task-specific mix of its layers")


# --- 2. Bahdanau attention -------------------------------------------------------------------

def _birnn_encoder(ax: Axes, xs: list[float]) -> None:
    """Inputs x_j, one box per position holding both directions, annotations h_j."""
    for j, x in enumerate(xs, start=1):
        _rect(ax, x, 0.0, f"$x_{j}$", "io", w=0.8, h=0.42)
        _rect(ax, x, 1.1, "", "rnn", w=0.95, h=0.8)
        _note(ax, x, 1.29, f"$\\overrightarrow{{h}}_{j}$", fs=9, color="0.1")
        _note(ax, x, 0.91, f"$\\overleftarrow{{h}}_{j}$", fs=9, color="0.1")
        _rect(ax, x, 2.3, f"$h_{j}$", "emb", w=0.8, h=0.42)
        _arrow(ax, (x, 0.26), (x, 0.65))
        _arrow(ax, (x, 1.55), (x, 2.04))
    for a, b in zip(xs[:-1], xs[1:], strict=True):
        _arrow(ax, (a + 0.53, 1.29), (b - 0.53, 1.29), color="C0")
        _arrow(ax, (b - 0.53, 0.91), (a + 0.53, 0.91), color="C0")
    right = xs[-1] + 0.75
    _note(ax, right, 0.0, "inputs $x_1, \\dots, x_T$", ha="left")
    _note(ax, right, 1.29, "forward RNN reads $x_1 \\dots x_T$", ha="left")
    _note(ax, right, 0.91, "backward RNN reads $x_T \\dots x_1$", ha="left")
    _note(ax, right, 2.3, "annotations $h_j = [\\overrightarrow{h}_j;\\,"
                          "\\overleftarrow{h}_j]$", ha="left", fs=9)


def draw_bahdanau(ax: Axes | None = None) -> Axes:
    r"""Bahdanau et al. (2015): a bidirectional RNN encoder gives annotations $h_j =
    [\overrightarrow{h}_j; \overleftarrow{h}_j]$; the alignment model scores them against
    the previous decoder state, $e_{ij} = v^\top\tanh(W s_{i-1} + U h_j)$, $\alpha_{ij} =
    \mathrm{softmax}_j(e_{ij})$ (the arrows' widths), the context is $c_i = \sum_j
    \alpha_{ij} h_j$, and $s_i = f(s_{i-1}, y_{i-1}, c_i)$ emits $y_i$."""
    ax = _axes(ax, (8.4, 5.6))
    xs, alphas = [2.0, 3.5, 5.0, 6.5], [0.1, 0.2, 0.6, 0.1]
    cx, cy = 4.25, 3.9
    _birnn_encoder(ax, xs)
    for j, (x, a) in enumerate(zip(xs, alphas, strict=True), start=1):
        _thick(ax, (x, 2.55), (cx + 0.1 * (x - cx), cy - 0.27), 0.6 + 7 * a, "C3",
               alpha=0.35 + a)
        left = x < cx
        _note(ax, x + (-0.1 if left else 0.1), 2.8, f"$\\alpha_{{i{j}}}$ = {a:.1f}",
              ha="right" if left else "left", color="C3")
    _op(ax, cx, cy, "$c_i$", r=0.28, fs=9)
    _note(ax, cx + 0.4, 4.32, "$c_i = \\sum_j \\alpha_{ij} h_j$", ha="left", color="0.1")
    _rect(ax, 1.3, cy, "alignment model\n$e_{ij} = v^\\top\\tanh(W s_{i-1} + U h_j)$\n"
          "$\\alpha_{ij} = \\mathrm{softmax}_j(e_{ij})$", "attn", w=2.9, h=1.0)
    _polyline(ax, [(1.55, 2.3), (0.3, 2.3), (0.3, 3.36)], linestyle="--")
    _rect(ax, 1.3, 5.1, "$s_{i-1}$", "rnn", w=1.0, h=0.45)
    _arrow(ax, (1.3, 4.85), (1.3, 4.46), linestyle="--")
    _rect(ax, cx, 5.1, "$s_i = f(s_{i-1}, y_{i-1}, c_i)$", "rnn", w=2.4, h=0.45)
    _arrow(ax, (1.85, 5.1), (cx - 1.25, 5.1))
    _arrow(ax, (cx, cy + 0.28), (cx, 4.84))
    _rect(ax, 6.8, 5.1, "$y_{i-1}$", "io", w=0.9, h=0.45)
    _arrow(ax, (6.3, 5.1), (cx + 1.25, 5.1))
    _rect(ax, cx, 6.05, "$y_i$: softmax over the target vocabulary", "io", w=4.0, h=0.45)
    _arrow(ax, (cx, 5.36), (cx, 5.79))
    _note(ax, 1.3, 3.05, "for every $h_j$", ha="center")
    return _canvas(ax, (-0.3, 10.7), (-0.5, 6.5),
                   "Bahdanau attention: decoder step i reads a weighted sum of the "
                   "annotations (T = 4)")


# --- 3. multi-head attention -----------------------------------------------------------------

def _slices(ax: Axes, x: float, y: float, names: list[str], step: float, w: float,
            h: float, fs: float = 8) -> list[float]:
    """A matrix drawn as one coloured column block per head; returns the blocks' x."""
    xs = [x + step * (i - (len(names) - 1) / 2) for i in range(len(names))]
    for i, (sx, name) in enumerate(zip(xs, names, strict=True)):
        _rect(ax, sx, y, name, HEADS[i], w=w, h=h, fs=fs)
    return xs


def draw_multi_head(ax: Axes | None = None) -> Axes:
    r"""Multi-head attention with $h = 4$: $X$ ($T \times d_{model}$) goes through $W^Q$,
    $W^K$, $W^V$; each result is split into $h$ slices of width $d_k = d_{model}/h$;
    head $i$ computes $\mathrm{softmax}(Q_i K_i^\top/\sqrt{d_k})V_i$; the heads are
    concatenated ($T \times h d_k$) and mixed by $W^O$ into $T \times d_{model}$."""
    ax = _axes(ax, (10.4, 6.6))
    _rect(ax, 6.0, 0.0, "X   (T × $d_{model}$)", "io", w=3.0, h=0.45)
    heads = [1.95, 4.65, 7.35, 10.05]
    for name, mx in (("Q", 2.4), ("K", 6.0), ("V", 9.6)):
        _rect(ax, mx, 1.1, f"${name} = XW^{name}$", "ffn", w=1.8, h=0.45)
        _arrow(ax, (6.0 + 0.3 * (mx - 6.0), 0.27), (mx, 0.84))
        _slices(ax, mx, 2.4, [f"${name}_{i}$" for i in range(1, 5)], 0.62, 0.54, 0.8)
        _arrow(ax, (mx, 1.37), (mx, 1.94))
        ax.plot([mx, mx], [2.85, 3.35], color="0.25", linewidth=1)
    ax.plot([heads[0], heads[-1]], [3.35, 3.35], color="0.25", linewidth=1)
    for i, hx in enumerate(heads, start=1):
        _rect(ax, hx, 4.6, f"head {i}\nsoftmax($Q_{i}K_{i}^\\top/\\sqrt{{d_k}}$)$V_{i}$",
              HEADS[i - 1], w=2.5, h=0.75, fs=8)
        _arrow(ax, (hx, 3.35), (hx, 4.17), shrinkA=0)
    slices = _slices(ax, 6.0, 5.9, [f"head {i}" for i in range(1, 5)], 0.88, 0.8, 0.55,
                     fs=7.5)
    for hx, sx in zip(heads, slices, strict=True):
        _arrow(ax, (hx, 5.03), (sx, 5.58))
    _rect(ax, 6.0, 6.95, "$W^O$   ($h\\,d_k \\times d_{model}$)", "ffn", w=2.6, h=0.45)
    _arrow(ax, (6.0, 6.23), (6.0, 6.68))
    _rect(ax, 6.0, 7.85, "output   (T × $d_{model}$)", "io", w=3.0, h=0.45)
    _arrow(ax, (6.0, 7.22), (6.0, 7.58))
    for y, text in ((1.1, "three projections,\n$d_{model} \\times d_{model}$ each"),
                    (2.4, "each split into h = 4 slices\nof width $d_k = d_{model}/h$"),
                    (3.35, "head i reads slice i of\nQ, K and V (same colour)"),
                    (4.6, "scaled dot-product attention\nin every head: T × $d_k$"),
                    (5.9, "concatenate: T × $h\\,d_k$\n($= d_{model}$)"),
                    (6.95, "mix the heads")):
        _note(ax, 11.6, y, text, ha="left")
    _note(ax, 6.0, -0.75, "MultiHead(X) = Concat(head$_1$, …, head$_h$) $W^O$,   head$_i$ = "
          "softmax($Q_iK_i^\\top/\\sqrt{d_k}$)$V_i$", fs=9, color="0.1")
    return _canvas(ax, (-0.3, 15.0), (-1.1, 8.3),
                   "Multi-head attention: split, attend per head, concatenate, project "
                   "(h = 4)")


# --- 4. truncated backpropagation through time -----------------------------------------------

def _bptt_row(ax: Axes, y: float, windows: list[int], title: str, note: str,
              step: float = 0.55) -> None:
    """T cells in a row; a backprop arrow inside each window; a red cut between windows."""
    total = sum(windows)
    for t in range(total):
        _rect(ax, 0.3 + step * t, y, str(t + 1), "rnn", w=0.4, h=0.4, fs=6.5)
    start = 0
    for length in windows:
        left, right = 0.3 + step * start - 0.2, 0.3 + step * (start + length - 1) + 0.2
        _thick(ax, (right, y - 0.45), (left, y - 0.45), 1.4, "C0")
        if start > 0:
            cut = 0.3 + step * (start - 0.5)
            ax.plot([cut, cut], [y - 0.62, y + 0.36], color=CUT, linewidth=2.2)
        start += length
    _note(ax, 0.05, y + 0.62, title, fs=9, color="0.1", ha="left")
    _note(ax, 0.3 + step * total + 0.2, y, note, ha="left")


def draw_truncation(ax: Axes | None = None) -> Axes:
    r"""Backpropagation through time over T = 16 steps, three ways (Tallec & Ollivier
    2017; d2l §9.7): in full; cut every $\tau = 4$ steps (regular truncation); cut after
    windows of random length 3, 7, 2, 4 (randomized truncation, unbiased in expectation
    when each term is reweighted by $1/P(\text{kept})$). Blue arrows: the backward pass
    within a window; red bars: where the gradient stops."""
    ax = _axes(ax, (11.0, 4.9))
    _bptt_row(ax, 4.4, [16], "full BPTT",
              "one backward pass over all T = 16 steps:\nexact gradient, cost and memory ∝ T")
    _bptt_row(ax, 2.6, [4, 4, 4, 4], "regular truncation, τ = 4",
              "gradient cut every τ steps (equal windows):\ncheap, but biased: no "
              "dependency longer than τ")
    _bptt_row(ax, 0.8, [3, 7, 2, 4], "randomized truncation, windows of length 3, 7, 2, 4",
              "cuts at random steps; each window's term is\nreweighted by 1 / P(kept), "
              "so E[gradient] = full\ngradient (unbiased), but noisier")
    _arrow(ax, (6.3, 5.45), (8.6, 5.45))
    _note(ax, 6.2, 5.45, "time", ha="right")
    _note(ax, 0.05, -0.3, "the forward pass runs over every step in all three rows; the red "
          "cuts stop only the backward pass (blue)", fs=8, ha="left")
    return _canvas(ax, (-0.2, 15.2), (-0.65, 5.75),
                   "Truncating backpropagation through time: full, regular, randomized")


# --- 5. BERT's input representation ----------------------------------------------------------

def _token_math(token: str) -> str:
    if token.startswith("["):
        return f"$E_{{[\\mathrm{{{token[1:-1]}}}]}}$"
    if token.startswith("##"):
        return f"$E_{{\\#\\#\\mathrm{{{token[2:]}}}}}$"
    return f"$E_{{\\mathrm{{{token}}}}}$"


def draw_bert_inputs(ax: Axes | None = None) -> Axes:
    r"""BERT's input for a sentence pair: every token's vector is the sum of its token
    embedding, its segment embedding ($E_A$ up to and including the first [SEP], $E_B$
    after) and its position embedding ($E_0 \dots E_{10}$): $x_i = E_{tok} + E_{seg} +
    E_{pos}$, then LayerNorm and dropout."""
    ax = _axes(ax, (11.2, 4.6))
    first_sep = BERT_PAIR.index("[SEP]")
    rows = ((4.2, "Input"), (3.1, "Token\nembeddings"), (2.0, "Segment\nembeddings"),
            (0.9, "Position\nembeddings"))
    for y, text in rows:
        _note(ax, -0.65, y, text, fs=8.5, color="0.1", ha="right")
    for i, token in enumerate(BERT_PAIR):
        x, seg = 1.15 * i, "A" if i <= first_sep else "B"
        _rect(ax, x, 4.2, token, "tok", w=1.0, h=0.5, gid=f"token:{i}")
        _rect(ax, x, 3.1, _token_math(token), "norm", w=1.0, h=0.5)
        _rect(ax, x, 2.0, f"$E_{seg}$", f"seg{seg}", w=1.0, h=0.5, gid=f"segment:{i}")
        _rect(ax, x, 0.9, f"$E_{{{i}}}$", "emb", w=1.0, h=0.5, gid=f"position:{i}")
        for y in (2.55, 1.45):
            _note(ax, x, y, "+", fs=10, color="0.1")
    for a, b, name in ((0, first_sep, "sentence A"), (first_sep + 1, len(BERT_PAIR) - 1,
                                                      "sentence B")):
        ax.plot([1.15 * a - 0.45, 1.15 * b + 0.45], [4.65, 4.65], color="0.4", linewidth=1)
        _note(ax, 1.15 * (a + b) / 2, 4.88, name, fs=8.5, color="0.1")
    _note(ax, 5.75, -0.05, "$x_i = E_{tok} + E_{seg} + E_{pos}$   →   LayerNorm   →   "
          "dropout   →   encoder", fs=10, color="0.1")
    return _canvas(ax, (-2.2, 12.2), (-0.45, 5.2),
                   "BERT's input: token + segment + position embeddings (a sentence pair)")


# --- 6. BERT's fine-tuning heads -------------------------------------------------------------

def _bert_panel(ax: Axes, ox: float, oy: float, title: str, tokens: list[str]) -> list[float]:
    """Tokens, the BERT box and the output vectors (C, T_1, ...); returns the columns' x."""
    step = 0.9
    x0 = ox + (9.0 - step * (len(tokens) - 1)) / 2
    xs = [x0 + step * i for i in range(len(tokens))]
    for i, (x, token) in enumerate(zip(xs, tokens, strict=True)):
        _rect(ax, x, oy + 0.35, token, "tok", w=0.76, h=0.4, fs=7.5)
        out = "C" if i == 0 else ("…" if token == "…" else f"$T_{{{i}}}$")
        _rect(ax, x, oy + 2.25, out, "emb", w=0.76, h=0.4, fs=8)
        _arrow(ax, (x, oy + 0.58), (x, oy + 0.98))
        _arrow(ax, (x, oy + 1.62), (x, oy + 2.02))
    _rect(ax, (xs[0] + xs[-1]) / 2, oy + 1.3, "BERT (pre-trained; all weights fine-tuned)",
          "attn", w=xs[-1] - xs[0] + 0.76, h=0.55)
    _note(ax, ox, oy + 4.05, title, fs=9, color="0.1", ha="left")
    return xs


def _class_head(ax: Axes, x: float, y: float, example: str) -> None:
    _rect(ax, x + 1.2, y, "class label\nsoftmax(W · pooler(C))", "cross", w=2.8, h=0.62,
          fs=8)
    _arrow(ax, (x, y - 0.88), (x, y - 0.36))
    _note(ax, x + 2.8, y, example, ha="left")


def draw_bert_heads(ax: Axes | None = None) -> Axes:
    r"""BERT's four fine-tuning setups (Devlin et al. 2019, Figure 4): (a) a sentence pair
    and (b) one sentence classified from $C$, the [CLS] vector (through the pooler); (c)
    extractive QA: start and end logits $S \cdot T_i$, $E \cdot T_i$ over the paragraph,
    span $= \arg\max_{i \le j} S\cdot T_i + E \cdot T_j$; (d) a label for every token."""
    ax = _axes(ax, (12.6, 6.8))
    top, right = 4.85, 9.9
    xs = _bert_panel(ax, 0, top, "(a) sentence-pair classification (MNLI, QQP, …)",
                     ["[CLS]", "$A_1$", "…", "$A_N$", "[SEP]", "$B_1$", "…", "$B_M$",
                      "[SEP]"])
    _class_head(ax, xs[0], top + 3.3, "e.g. entailment /\ncontradiction / neutral")
    xs = _bert_panel(ax, right, top, "(b) single-sentence classification (SST-2, CoLA)",
                     ["[CLS]", "$w_1$", "$w_2$", "…", "$w_N$", "[SEP]"])
    _class_head(ax, xs[0], top + 3.3, "e.g. positive / negative")
    xs = _bert_panel(ax, 0, 0, "(c) extractive question answering (SQuAD)",
                     ["[CLS]", "$q_1$", "…", "$q_N$", "[SEP]", "$p_1$", "$p_2$", "…",
                      "$p_M$", "[SEP]"])
    para = xs[5:9]
    _rect(ax, (para[0] + para[-1]) / 2, 3.3, "start $S\\cdot T_i$,  end $E\\cdot T_i$\n"
          "(softmax over the paragraph)", "cross", w=para[-1] - para[0] + 0.76, h=0.62,
          fs=8)
    for x in para:
        _arrow(ax, (x, 2.47), (x, 2.94))
    _note(ax, (xs[0] + xs[4]) / 2, 3.3, "answer span: the i ≤ j that\nmaximise "
          "$S\\cdot T_i + E\\cdot T_j$", color="0.1")
    xs = _bert_panel(ax, right, 0, "(d) token tagging (NER, CoNLL-2003)",
                     ["[CLS]", "Jim", "Henson", "was", "in", "Paris", "[SEP]"])
    for x, tag in zip(xs[1:6], ["B-PER", "I-PER", "O", "O", "B-LOC"], strict=True):
        _rect(ax, x, 3.3, tag, "cross", w=0.76, h=0.4, fs=7.5)
        _arrow(ax, (x, 2.47), (x, 3.07))
    _note(ax, xs[-1] + 0.55, 3.3, "one classifier\non every $T_i$", ha="left")
    return _canvas(ax, (-0.2, 19.1), (-0.1, 9.25),
                   "Fine-tuning BERT: four ways to read its outputs (Devlin et al., Figure 4)")


# --- 7. ELECTRA ------------------------------------------------------------------------------

def _token_column(ax: Axes, x: float, tokens: list[str], marked: set[int],
                  ys: list[float]) -> None:
    for i, (token, y) in enumerate(zip(tokens, ys, strict=True)):
        _rect(ax, x, y, token, "bad" if i in marked else "tok", w=1.4, h=0.45)


def draw_electra(ax: Axes | None = None) -> Axes:
    r"""ELECTRA (Clark et al. 2020): two positions of "the chef cooked the meal" are
    masked; a small generator (a masked LM) samples replacements ("the", "ate"); the
    discriminator reads the corrupted sentence and says, for every token, original or
    replaced. Loss $\mathcal{L}_{MLM} + \lambda \mathcal{L}_{Disc}$ with $\lambda = 50$;
    sampling passes no gradient from D to G; G is discarded after pre-training."""
    ax = _axes(ax, (10.2, 5.2))
    ys = [4.0, 3.3, 2.6, 1.9, 1.2]
    _token_column(ax, 0.9, ["the", "chef", "cooked", "the", "meal"], set(), ys)
    _token_column(ax, 3.2, ["[MASK]", "chef", "[MASK]", "the", "meal"], set(), ys)
    _token_column(ax, 8.0, ["the", "chef", "ate", "the", "meal"], {2}, ys)
    _token_column(ax, 12.8, ["original", "original", "replaced", "original", "original"],
                  {2}, ys)
    for y in ys:
        _arrow(ax, (1.65, y), (2.45, y))
        _arrow(ax, (3.95, y), (4.6, y))
        _arrow(ax, (6.6, y), (7.25, y))
        _arrow(ax, (8.75, y), (9.4, y))
        _arrow(ax, (11.4, y), (12.05, y))
    _rect(ax, 5.6, 2.6, "generator\n(a small\nmasked LM)\n\nsamples\n$\\hat x_t \\sim "
          "p_G(x_t \\mid \\tilde x)$\nat [MASK]", "attn", w=1.9, h=3.3)
    _rect(ax, 10.4, 2.6, "discriminator\n(the model kept)\n\nfor every token:\n"
          "$D(\\hat x, t)$ =\nP(original)", "ffn", w=1.9, h=3.3)
    for x, text in ((0.9, "input"), (3.2, "random masking"), (8.0, "corrupted sentence"),
                    (12.8, "original or replaced?")):
        _note(ax, x, 4.6, text, fs=8.5, color="0.1")
    _note(ax, 8.0, 0.45, "sampling is not differentiable:\nno gradient from D back to G",
          color=CUT)
    _note(ax, 5.6, 0.45, "$\\mathcal{L}_{MLM}$: masked\npositions only", color="0.1")
    _note(ax, 10.4, 0.45, "$\\mathcal{L}_{Disc}$: every\ntoken", color="0.1")
    _note(ax, 6.8, -0.45, "$\\mathcal{L} = \\mathcal{L}_{MLM} + \\lambda\\, "
          "\\mathcal{L}_{Disc}$,  λ = 50,  trained jointly;  after pre-training G is "
          "discarded and D is fine-tuned", fs=9, color="0.1")
    return _canvas(ax, (-0.2, 14.1), (-0.8, 5.0),
                   "ELECTRA: replaced-token detection with a generator and a discriminator")


# --- 8. ALBERT -------------------------------------------------------------------------------

def _matrix(ax: Axes, x0: float, y0: float, w: float, h: float, text: str, kind: str,
            rotation: float = 0) -> None:
    ax.add_patch(FancyBboxPatch((x0, y0), w, h, boxstyle="round,pad=0.02",
                                facecolor=PALETTE[kind], edgecolor="0.3", linewidth=1))
    ax.text(x0 + w / 2, y0 + h / 2, text, ha="center", va="center", fontsize=8.5,
            rotation=rotation)


def _layer_stack(ax: Axes, x: float, colours: list[str], names: list[str]) -> None:
    for i, (colour, name) in enumerate(zip(colours, names, strict=True)):
        _rect(ax, x, 1.0 + 0.38 * i, name, colour, w=2.1, h=0.28, fs=7.5)


def draw_albert(ax: Axes | None = None) -> Axes:
    r"""ALBERT's two parameter savings (Lan et al. 2020). Left: a factorised embedding,
    $V \times E$ then $E \times H$ with $E \ll H$: $V \cdot E + E \cdot H$ parameters
    instead of BERT's $V \cdot H$. Right: cross-layer sharing, one layer's parameters
    $\theta$ used by all $L = 12$ layers, against BERT's 12 different layers."""
    ax = _axes(ax, (11.4, 5.6))
    _note(ax, 3.3, 6.05, "factorised embedding parameterisation", fs=9.5, color="0.1")
    _matrix(ax, 0.3, 1.2, 1.8, 3.8, "V × H", "emb")
    _note(ax, 1.2, 5.35, "BERT", fs=9, color="0.1")
    _note(ax, 1.2, 0.75, "V · H", fs=9.5, color="0.1")
    _matrix(ax, 3.3, 1.2, 0.45, 3.8, "V × E", "emb", rotation=90)
    _note(ax, 4.1, 3.1, "×", fs=12, color="0.1")
    _matrix(ax, 4.5, 2.88, 1.8, 0.45, "E × H", "ffn")
    _note(ax, 4.8, 5.35, "ALBERT", fs=9, color="0.1")
    _note(ax, 4.8, 0.75, "V · E + E · H", fs=9.5, color="0.1")
    _note(ax, 3.3, 0.0, "V = 30 000, H = 768, E = 128 ($E \\ll H$):\n"
          "V · H ≈ 23.0 M   vs   V · E + E · H ≈ 3.9 M", fs=8.5)
    ax.plot([7.45, 7.45], [-0.4, 6.2], color="0.75", linewidth=1)
    _note(ax, 11.0, 6.05, "cross-layer parameter sharing (L = 12)", fs=9.5, color="0.1")
    colours = [plt.get_cmap("tab20")(2 * i + 1) for i in range(10)] + ["#d9d9d9", "#f6e8c3"]
    _layer_stack(ax, 9.2, colours, [f"layer {i}: $\\theta_{{{i}}}$" for i in range(1, 13)])
    _layer_stack(ax, 12.5, ["ffn"] * 12, ["layer: $\\theta$"] * 12)
    ax.plot([13.75, 13.9, 13.9, 13.75], [0.83, 0.83, 5.35, 5.35], color="C0", linewidth=1.2)
    _note(ax, 14.0, 3.1, "θ\nshared", fs=9, color="C0", ha="left")
    _note(ax, 9.2, 0.45, "BERT: 12 different layers\n12 × 7.1 M ≈ 85 M", fs=8.5)
    _note(ax, 12.5, 0.45, "ALBERT: one θ for all 12\n1 × 7.1 M (same compute)", fs=8.5)
    _note(ax, 10.85, 3.1, "vs", fs=10, color="0.1")
    return _canvas(ax, (-0.2, 14.7), (-0.45, 6.35),
                   "ALBERT: fewer parameters, same depth and width (ALBERT-base sizes)")


# --- 9. DeBERTa ------------------------------------------------------------------------------

def _deberta_attention(ax: Axes) -> None:
    """Content H and relative positions P, projected apart; three score terms summed."""
    _rect(ax, 4.0, 0.0, "relative position embeddings P   (2k × d, one table for all "
          "layers)", "io", w=7.6, h=0.45)
    _rect(ax, 4.0, 0.9, "content H   (T × d)", "ffn", w=2.4, h=0.45)
    _note(ax, 4.0, -0.62, "$\\delta(i,j)$ = clip(i − j + k, 0, 2k − 1) ∈ [0, 2k):  relative "
          "distance clipped at ± k")
    proj = {"Kr": (0.4, "$K^r = P\\,W_{k,r}$", "io"), "Qc": (2.8, "$Q^c = H\\,W_{q,c}$", "ffn"),
            "Kc": (5.2, "$K^c = H\\,W_{k,c}$", "ffn"), "Qr": (7.6, "$Q^r = P\\,W_{q,r}$", "io")}
    for x, text, kind in proj.values():
        _rect(ax, x, 1.95, text, kind, w=1.75, h=0.45)
        source = (x, 0.27) if kind == "io" else (4.0 + 0.35 * (x - 4.0), 1.17)
        _arrow(ax, source, (x, 1.68))
    terms = [(1.6, "content → position\n$Q^c_i\\,{K^r_{\\delta(i,j)}}^\\top$", "Kr", "Qc"),
             (4.0, "content → content\n$Q^c_i\\,{K^c_j}^\\top$", "Qc", "Kc"),
             (6.4, "position → content\n$K^c_j\\,{Q^r_{\\delta(j,i)}}^\\top$", "Kc", "Qr")]
    for x, text, a, b in terms:
        _rect(ax, x, 3.25, text, "attn", w=2.05, h=0.8)
        for name in (a, b):
            px = proj[name][0]
            _arrow(ax, (px, 2.22), (x + 0.3 * (px - x), 2.82))
        _arrow(ax, (x, 3.7), (4.0 + 0.09 * (x - 4.0), 4.13))
    _op(ax, 4.0, 4.35, "+", r=0.22)
    _note(ax, 4.35, 4.42, "$\\tilde A_{ij}$", fs=9, color="0.1", ha="left")
    _rect(ax, 4.0, 5.25, "$H_o = \\mathrm{softmax}(\\tilde A / \\sqrt{3d})\\, V^c$,   "
          "$V^c = H\\,W_{v,c}$", "cross", w=4.6, h=0.5)
    _arrow(ax, (4.0, 4.57), (4.0, 4.96))
    _note(ax, 4.0, 6.0, "disentangled attention (one head): content and position kept "
          "apart", fs=9.5, color="0.1")


def _deberta_emd(ax: Axes, x: float) -> None:
    """The enhanced mask decoder: absolute positions only after the encoder."""
    steps = [(0.0, "token embeddings\n(no absolute positions)", "emb", 0.65),
             (1.15, "L layers of disentangled\nattention (relative only)", "attn", 0.65),
             (2.2, "H: the encoder's output", "norm", 0.45),
             (4.25, "the last layer once more\n(same weights) on H + positions", "attn",
              0.65),
             (5.3, "MLM head → masked tokens", "io", 0.45)]
    for (y, text, kind, h), (y2, _, _, h2) in zip(steps, steps[1:] + [steps[-1]],
                                                  strict=True):
        _rect(ax, x, y, text, kind, w=3.4, h=h)
        if y2 > y and y != 2.2:
            _arrow(ax, (x, y + h / 2 + 0.05), (x, y2 - h2 / 2 - 0.05))
    _op(ax, x, 3.2, "+", r=0.2)
    _arrow(ax, (x, 2.48), (x, 3.0))
    _arrow(ax, (x, 3.4), (x, 3.87))
    _rect(ax, x + 2.15, 3.2, "absolute\npositions", "io", w=1.3, h=0.6)
    _arrow(ax, (x + 1.45, 3.2), (x + 0.2, 3.2))
    _note(ax, x + 0.4, 6.0, "enhanced mask decoder (EMD)", fs=9.5, color="0.1")


def draw_deberta(ax: Axes | None = None) -> Axes:
    r"""DeBERTa (He et al. 2021). Left: disentangled attention, content vectors $H$ and
    relative position vectors $P_{\delta(i,j)}$ projected apart, $\tilde A_{ij} =
    Q^c_i {K^c_j}^\top + Q^c_i {K^r_{\delta(i,j)}}^\top + K^c_j {Q^r_{\delta(j,i)}}^\top$,
    scaled by $1/\sqrt{3d}$, $\delta$ clipped to $[0, 2k)$. Right: the enhanced mask
    decoder adds absolute positions only after the encoder, before the MLM head."""
    ax = _axes(ax, (11.4, 5.7))
    _deberta_attention(ax)
    ax.plot([9.0, 9.0], [-0.4, 6.2], color="0.75", linewidth=1)
    _deberta_emd(ax, 11.3)
    return _canvas(ax, (-0.7, 14.8), (-0.9, 6.35),
                   "DeBERTa: disentangled attention (left), enhanced mask decoder (right)")


# --- 10. DistilBERT --------------------------------------------------------------------------

def _dropped(ax: Axes, x: float, y: float, text: str, gid: str) -> None:
    _rect(ax, x, y, text, "drop", w=2.6, h=0.45, gid=gid, linestyle="--")
    _note(ax, x - 1.45, y, "✗ dropped", color=CUT, ha="right")


def draw_distilbert_init(ax: Axes | None = None) -> Axes:
    r"""DistilBERT's student (Sanh et al. 2019): half the teacher's layers, initialised by
    copying one teacher layer out of two (teacher layers 0, 2, 4 of 6 → student layers 0,
    1, 2; BERT-base has 12); word and position embeddings copied, token-type embeddings
    and pooler dropped. Trained with $L = \alpha_d T^2 L_d + \alpha_{mlm} L_{mlm} +
    \alpha_{cos} L_{cos}$."""
    ax = _axes(ax, (8.0, 6.9))
    tx, sx = 2.0, 7.7
    copied = list(range(0, DISTIL_TEACHER, 2))
    _rect(ax, tx, 0.0, "word + position embeddings", "emb", w=3.0, h=0.45, gid="teacher:emb")
    _dropped(ax, tx, -0.65, "token-type embeddings", "teacher:token-type")
    for n in range(DISTIL_TEACHER):
        kind = "ffn" if n in copied else "norm"
        _rect(ax, tx, 1.0 + 0.7 * n, f"teacher layer {n}", kind, w=2.6, h=0.45,
              gid=f"teacher:{n}")
    _dropped(ax, tx, 1.0 + 0.7 * DISTIL_TEACHER, "pooler", "teacher:pooler")
    _rect(ax, sx, 0.0, "word + position embeddings", "emb", w=3.0, h=0.45, gid="student:emb")
    _link(ax, (tx + 1.55, 0.0), (sx - 1.55, 0.0), "copy:emb:emb", color="C2")
    for m, n in enumerate(copied):
        ys = 1.35 + 0.95 * m
        _rect(ax, sx, ys, f"student layer {m}", "io", w=2.6, h=0.45, gid=f"student:{m}")
        _link(ax, (tx + 1.35, 1.0 + 0.7 * n), (sx - 1.35, ys), f"copy:{n}:{m}", color="C2")
    _note(ax, 4.85, 0.22, "copied", color="C2")
    _note(ax, 4.85, 4.75, "one layer out of two:\nstudent layer m ← teacher layer 2m",
          color="C2")
    _note(ax, sx, 4.05, "no token types,\nno pooler")
    _note(ax, tx, 6.0, f"teacher: {DISTIL_TEACHER} layers (MiniLM-L6;\n"
          "12 in BERT-base)", fs=9, color="0.1")
    _note(ax, sx, 6.0, f"student: {DISTIL_STUDENT} layers", fs=9, color="0.1")
    _note(ax, 4.2, -1.55, "$L = \\alpha_d\\, T^2 L_d + \\alpha_{mlm} L_{mlm} + \\alpha_{cos} "
          "L_{cos}$", fs=11, color="0.1")
    _note(ax, 4.2, -2.25, "$L_d$: cross-entropy with the teacher's outputs softened by "
          "temperature T;\n$L_{mlm}$: masked LM;  $L_{cos}$: 1 − cos between the hidden "
          "states")
    return _canvas(ax, (-1.5, 9.4), (-2.7, 6.5),
                   "DistilBERT: a student initialised from every other teacher layer")


# --- 11. TinyBERT ----------------------------------------------------------------------------

def _tiny_losses(m: int) -> str:
    if m == 0:
        return "$L_{embd}$ = MSE($E^S W_e$, $E^T$)"
    return f"$L_{{hidn}}$ = MSE($H^S_{m} W_h$, $H^T_{{g({m})}}$) + $L_{{attn}}$"


def draw_tinybert_mapping(ax: Axes | None = None) -> Axes:
    r"""TinyBERT's layer mapping (Jiao et al. 2020) with $M = 4$ student and $N = 12$
    teacher layers: student layer $m$ learns from teacher layer $g(m) = mN/M$
    (:func:`lmcourse.models.distill.layer_map`); $m = 0$ is the embedding layer
    (embedding loss), transformer layers are matched by the hidden-state loss (through
    $W_h$) and the attention loss, the prediction layers by the prediction loss. Two
    stages: general, then task-specific distillation."""
    ax = _axes(ax, (9.8, 8.2))
    tx, sx, pred = 1.6, 6.0, 6.7
    teacher_y = [0.5 * n for n in range(TINY_N + 1)]
    for n, y in enumerate(teacher_y):
        text = "embeddings (n = 0)" if n == 0 else f"layer n = {n}"
        _rect(ax, tx, y, text, "ffn" if n else "emb", w=2.4, h=0.34, fs=8, gid=f"teacher:{n}")
    for m, n in enumerate(layer_map(TINY_M, TINY_N)):
        y = 0.4 + 1.2 * m
        text = "embeddings (m = 0)" if m == 0 else f"layer m = {m}"
        _rect(ax, sx, y, text, "io" if m else "emb", w=2.4, h=0.45, gid=f"student:{m}")
        _link(ax, (tx + 1.25, teacher_y[n]), (sx - 1.25, y), f"map:{m}:{n}", color="C2")
        _note(ax, sx + 1.4, y, _tiny_losses(m), ha="left", color="0.1")
    for x in (tx, sx):
        _rect(ax, x, pred, "prediction layer", "cross", w=2.4, h=0.45)
    _arrow(ax, (tx + 1.25, pred), (sx - 1.25, pred), color="C2")
    _note(ax, sx + 1.4, pred, "$L_{pred}$ = −softmax($z^T/t$) · log softmax($z^S/t$)",
          ha="left", color="0.1")
    _note(ax, sx + 1.4, 5.95, "$W_e$, $W_h$: learned projections from the\n"
          "student's width d′ to the teacher's d", ha="left")
    _note(ax, tx, 7.45, f"teacher (N = {TINY_N})", fs=9.5, color="0.1")
    _note(ax, sx, 7.45, f"student (M = {TINY_M})", fs=9.5, color="0.1")
    _note(ax, 3.8, 7.45, "g(m) = m·N/M", fs=9.5, color="C2")
    _rect(ax, 2.3, -1.1, "1. general distillation\npre-trained teacher, unlabelled text",
          "norm", w=4.0, h=0.7)
    _rect(ax, 8.0, -1.1, "2. task-specific distillation\nfine-tuned teacher, task data "
          "(augmented)", "attn", w=4.4, h=0.7)
    _arrow(ax, (4.35, -1.1), (5.75, -1.1))
    _note(ax, 5.2, -1.85, "layer losses in both stages; the prediction loss in stage 2")
    return _canvas(ax, (-0.2, 11.6), (-2.15, 7.75),
                   f"TinyBERT: student layer m learns from teacher layer g(m) = m·N/M "
                   f"(M = {TINY_M}, N = {TINY_N})")

"""Drawings of sequence models: truncated BPTT, ELMo, Bahdanau attention and
multi-head attention (see :mod:`lmcourse.viz.diagrams`)."""

from __future__ import annotations

from matplotlib.axes import Axes

from lmcourse.viz.architecture import _arrow, _canvas
from lmcourse.viz.diagrams._pieces import CUT, HEADS, _axes, _note, _op, _polyline, _rect, _thick

__all__ = ["draw_bahdanau", "draw_elmo", "draw_multi_head", "draw_truncation"]


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

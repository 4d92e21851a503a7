"""Drawings of the BERT family: BERT's inputs and heads, ELECTRA, ALBERT, DeBERTa,
DistilBERT's initialisation and TinyBERT's layer map (see :mod:`lmcourse.viz.diagrams`)."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.patches import FancyBboxPatch

from lmcourse.models.distill import layer_map
from lmcourse.viz.architecture import _arrow, _canvas
from lmcourse.viz.diagrams._pieces import CUT, PALETTE, _axes, _link, _note, _op, _rect

__all__ = ["draw_albert", "draw_bert_heads", "draw_bert_inputs", "draw_deberta",
           "draw_distilbert_init", "draw_electra", "draw_tinybert_mapping"]

BERT_PAIR = ["[CLS]", "my", "dog", "is", "cute", "[SEP]", "he", "likes", "play", "##ing",
             "[SEP]"]
DISTIL_TEACHER, DISTIL_STUDENT = 6, 3  # MiniLM-L6 as the teacher, one layer out of two
TINY_M, TINY_N = 4, 12  # the paper's TinyBERT-4 and BERT-base


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

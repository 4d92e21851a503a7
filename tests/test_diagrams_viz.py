"""The eleven architecture drawings of ``lmcourse.viz.diagrams``: each draws its facts, keeps
its labels inside the axes and apart, and maps layers the way the code does."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402
from matplotlib.path import Path  # noqa: E402

from lmcourse.models.distill import layer_map  # noqa: E402
from lmcourse.viz import diagrams  # noqa: E402

DRAWINGS = [getattr(diagrams, name) for name in diagrams.__all__]


@pytest.fixture
def draw():
    """Call a drawing, hand back its Axes, close its figure afterwards."""
    figures = []

    def run(fn):
        ax = fn()
        figures.append(ax.figure)
        return ax

    yield run
    for fig in figures:
        plt.close(fig)


def _texts(ax: Axes) -> list[str]:
    return [t.get_text() for t in ax.texts]


def _has(ax: Axes, *fragments: str) -> None:
    joined = "\n".join(_texts(ax))
    for fragment in fragments:
        assert fragment in joined, fragment


def _gids(ax: Axes, prefix: str) -> dict[str, matplotlib.text.Text]:
    """Labels whose gid starts with ``prefix:``, keyed by the rest of the gid."""
    return {t.get_gid().split(":", 1)[1]: t for t in ax.texts
            if t.get_gid() and t.get_gid().startswith(prefix + ":")}


def _ends(arrow: FancyArrowPatch) -> tuple[np.ndarray, np.ndarray]:
    """An arrow's start and the tip of its head, in data coordinates."""
    path = arrow.get_path()
    points = path.vertices if path.codes is None else path.vertices[path.codes != Path.CLOSEPOLY]
    start = points[0]
    return start, points[np.argmax(np.linalg.norm(points - start, axis=1))]


def _nearest(point: np.ndarray, labels: dict[str, matplotlib.text.Text]) -> str:
    return min(labels, key=lambda k: np.linalg.norm(np.array(labels[k].get_position()) - point))


def _drawn_pairs(ax: Axes, prefix: str) -> list[tuple[str, str]]:
    """(teacher, student) for every arrow whose gid starts with ``prefix``, read from where
    the arrow starts and ends: the nearest teacher label and the nearest student label."""
    teachers, students = _gids(ax, "teacher"), _gids(ax, "student")
    pairs = []
    for arrow in ax.patches:
        if isinstance(arrow, FancyArrowPatch) and (arrow.get_gid() or "").startswith(prefix):
            start, end = _ends(arrow)
            pairs.append((_nearest(start, teachers), _nearest(end, students)))
    return sorted(pairs, key=lambda p: int(p[1]) if p[1].isdigit() else -1)


def _box_colour(ax: Axes, label) -> tuple:
    """The face colour of the box under a label."""
    x, y = label.get_position()
    for patch in ax.patches:
        if isinstance(patch, FancyBboxPatch) and patch.get_x() <= x <= patch.get_x() + \
                patch.get_width() and patch.get_y() <= y <= patch.get_y() + patch.get_height():
            return patch.get_facecolor()
    raise AssertionError(f"no box under {label.get_text()!r}")


# --- every drawing ---------------------------------------------------------------------------

def test_eleven_public_drawings():
    assert len(diagrams.__all__) == 11 and all(n.startswith("draw_") for n in diagrams.__all__)


@pytest.mark.parametrize("fn", DRAWINGS, ids=diagrams.__all__)
def test_returns_a_titled_axes_without_axis(fn, draw):
    ax = draw(fn)
    assert isinstance(ax, Axes) and not ax.axison
    assert ax.get_title() and len(ax.texts) >= 8 and len(ax.patches) >= 8
    assert fn.__doc__ and "$" in fn.__doc__  # says what it shows, with its equation


@pytest.mark.parametrize("fn", DRAWINGS, ids=diagrams.__all__)
def test_draws_into_a_given_axes(fn):
    fig, (left, right) = plt.subplots(1, 2)
    assert fn(ax=right) is right
    assert right.texts and not left.texts and not left.patches
    plt.close(fig)


@pytest.mark.parametrize("fn", DRAWINGS, ids=diagrams.__all__)
def test_text_stays_inside_the_axes_and_apart(fn, draw):
    ax = draw(fn)
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in ax.texts
             if t.get_text().strip()]
    slack = 3  # pixels
    for text, box in boxes:
        assert (box.x0 >= frame.x0 - slack and box.x1 <= frame.x1 + slack
                and box.y0 >= frame.y0 - slack and box.y1 <= frame.y1 + slack), text
    shrunk = [(text, box.padded(-1)) for text, box in boxes]
    for i, (a, box_a) in enumerate(shrunk):
        for b, box_b in shrunk[i + 1:]:
            assert not box_a.overlaps(box_b), (a, b)


# --- what each one says ----------------------------------------------------------------------

def test_elmo(draw):
    ax = draw(diagrams.draw_elmo)
    texts = _texts(ax)
    _has(ax, "char-CNN\n(filters + max-pool)", "2 highway layers", "projection",
         "shared (tied) by both directions", "forward LSTM: left → right",
         "backward LSTM: right → left", "next word", "previous word",
         "\\mathrm{ELMo}_k = \\gamma \\sum_{j=0}^{2} s_j\\, h_{k,j}", "s = \\mathrm{softmax}(w)")
    # two layers in each direction, for each of the three words
    assert sum(t.startswith("$\\overrightarrow{h}") for t in texts) == 6
    assert sum(t.startswith("$\\overleftarrow{h}") for t in texts) == 6
    assert {"j = 0", "j = 1", "j = 2"} <= set(texts)
    assert {f"$\\times s_{j}$" for j in range(3)} <= set(texts)


def test_bahdanau(draw):
    ax = draw(diagrams.draw_bahdanau)
    _has(ax, "$h_j = [\\overrightarrow{h}_j;", "$e_{ij} = v^\\top\\tanh(W s_{i-1} + U h_j)$",
         "$\\alpha_{ij} = \\mathrm{softmax}_j(e_{ij})$", "$c_i = \\sum_j \\alpha_{ij} h_j$",
         "$s_i = f(s_{i-1}, y_{i-1}, c_i)$", "$s_{i-1}$", "$y_i$")
    weights = [float(t.split("= ")[1]) for t in _texts(ax) if t.startswith("$\\alpha_{i")]
    assert len(weights) == 4 and sum(weights) == pytest.approx(1.0)
    widths = [p.get_linewidth() for p in ax.patches
              if isinstance(p, FancyArrowPatch) and p.get_linewidth() > 1]
    assert len(widths) == 4
    assert np.argsort(widths).tolist() == np.argsort(weights, kind="stable").tolist()
    assert np.argmax(widths) == np.argmax(weights)


def test_multi_head(draw):
    ax = draw(diagrams.draw_multi_head)
    texts = _texts(ax)
    for name in "QKV":
        assert {f"${name}_{i}$" for i in range(1, 5)} <= set(texts)
        assert f"${name} = XW^{name}$" in texts
    heads = [t for t in texts if t.startswith("head ") and "softmax" in t]
    assert len(heads) == 4 and all("\\sqrt{d_k}" in t for t in heads)
    assert sum(t.startswith("head ") and "\n" not in t for t in texts) == 4  # concatenated
    _has(ax, "$d_k = d_{model}/h$", "$W^O$", "T × $h\\,d_k$", "output   (T × $d_{model}$)")
    assert "h = 4" in ax.get_title()


def test_truncation_cuts_where_the_windows_end(draw):
    ax = draw(diagrams.draw_truncation)
    _has(ax, "full BPTT", "regular truncation, τ = 4", "randomized truncation", "unbiased")
    cells = [t for t in ax.texts if t.get_text().isdigit()]
    assert len(cells) == 3 * 16
    cuts = [line for line in ax.lines if line.get_color() == diagrams.CUT]
    rows = {}
    for line in cuts:
        x, ys = line.get_xdata()[0], line.get_ydata()
        row = [c for c in cells if min(ys) < c.get_position()[1] < max(ys)]
        left = max((c for c in row if c.get_position()[0] < x), key=lambda c: c.get_position()[0])
        rows.setdefault(round(np.mean(ys), 1), []).append(int(left.get_text()))
    ends = sorted(sorted(v) for v in rows.values())
    assert ends == [[3, 10, 12], [4, 8, 12]]  # random lengths 3, 7, 2, 4; regular tau = 4


def test_bert_inputs_segments_and_positions(draw):
    ax = draw(diagrams.draw_bert_inputs)
    tokens = ["[CLS]", "my", "dog", "is", "cute", "[SEP]", "he", "likes", "play", "##ing",
              "[SEP]"]
    by_token, by_segment, by_position = (_gids(ax, k) for k in ("token", "segment", "position"))
    assert [by_token[str(i)].get_text() for i in range(11)] == tokens
    assert [by_segment[str(i)].get_text() for i in range(11)] == ["$E_A$"] * 6 + ["$E_B$"] * 5
    assert [by_position[str(i)].get_text() for i in range(11)] == [f"$E_{{{i}}}$"
                                                                   for i in range(11)]
    for i in range(11):  # every embedding sits under its token
        assert by_segment[str(i)].get_position()[0] == by_token[str(i)].get_position()[0]
    assert _texts(ax).count("+") == 22
    _has(ax, "$x_i = E_{tok} + E_{seg} + E_{pos}$", "LayerNorm", "dropout")


def test_bert_heads(draw):
    ax = draw(diagrams.draw_bert_heads)
    texts = _texts(ax)
    _has(ax, "(a) sentence-pair classification", "(b) single-sentence classification",
         "(c) extractive question answering", "(d) token tagging", "pooler(C)",
         "start $S\\cdot T_i$", "end $E\\cdot T_i$", "i ≤ j")
    assert texts.count("C") == 4 and sum("class label" in t for t in texts) == 2
    assert {"B-PER", "I-PER", "O", "B-LOC"} <= set(texts)
    assert texts.count("[CLS]") == 4


def test_electra(draw):
    ax = draw(diagrams.draw_electra)
    texts = _texts(ax)
    assert texts.count("[MASK]") == 2 and texts.count("replaced") == 1
    assert texts.count("original") == 4 and "ate" in texts and "cooked" in texts
    _has(ax, "generator", "discriminator", "λ = 50", "no gradient from D", "G is discarded",
         "\\mathcal{L}_{MLM} + \\lambda")
    # the replaced token is the one the generator changed: same row as "ate"
    ate = next(t for t in ax.texts if t.get_text() == "ate")
    replaced = next(t for t in ax.texts if t.get_text() == "replaced")
    assert ate.get_position()[1] == replaced.get_position()[1]


def test_albert_shares_one_layer(draw):
    ax = draw(diagrams.draw_albert)
    _has(ax, "V × H", "V × E", "E × H", "V · H", "V · E + E · H", "shared")
    bert = [t for t in ax.texts if t.get_text().startswith("layer ") and "theta_" in t.get_text()]
    albert = [t for t in ax.texts if t.get_text() == "layer: $\\theta$"]
    assert len(bert) == len(albert) == 12
    assert len({_box_colour(ax, t) for t in albert}) == 1
    assert len({_box_colour(ax, t) for t in bert}) == 12


def test_deberta(draw):
    ax = draw(diagrams.draw_deberta)
    _has(ax, "content → content\n$Q^c_i\\,{K^c_j}^\\top$",
         "content → position\n$Q^c_i\\,{K^r_{\\delta(i,j)}}^\\top$",
         "position → content\n$K^c_j\\,{Q^r_{\\delta(j,i)}}^\\top$", "\\sqrt{3d}",
         "[0, 2k)", "absolute\npositions", "MLM head", "enhanced mask decoder",
         "no absolute positions")


def test_distilbert_copies_every_other_teacher_layer(draw):
    ax = draw(diagrams.draw_distilbert_init)
    teachers, students = _gids(ax, "teacher"), _gids(ax, "student")
    assert [teachers[str(n)].get_text() for n in range(6)] == [f"teacher layer {n}"
                                                               for n in range(6)]
    assert [students[str(m)].get_text() for m in range(3)] == [f"student layer {m}"
                                                               for m in range(3)]
    expected = [("emb", "emb")] + [(str(n), str(m)) for m, n in enumerate(range(0, 6, 2))]
    assert _drawn_pairs(ax, "copy:") == expected
    assert "pooler" not in students and "token-type" not in students
    assert _texts(ax).count("✗ dropped") == 2
    _has(ax, "$L = \\alpha_d\\, T^2 L_d + \\alpha_{mlm} L_{mlm} + \\alpha_{cos} L_{cos}$")


def test_tinybert_arrows_follow_layer_map(draw):
    ax = draw(diagrams.draw_tinybert_mapping)
    M, N = 4, 12
    assert f"M = {M}" in ax.get_title() and f"N = {N}" in ax.get_title()
    teachers, students = _gids(ax, "teacher"), _gids(ax, "student")
    assert len(teachers) == N + 1 and len(students) == M + 1
    assert all(f"= {n})" in t.get_text() or t.get_text().endswith(f"= {n}")
               for n, t in ((int(k), v) for k, v in teachers.items()))
    expected = [(str(n), str(m)) for m, n in enumerate(layer_map(M, N))]
    assert expected == [("0", "0"), ("3", "1"), ("6", "2"), ("9", "3"), ("12", "4")]
    assert _drawn_pairs(ax, "map:") == expected
    texts = _texts(ax)
    assert sum("L_{embd}" in t for t in texts) == 1 and sum("L_{hidn}" in t for t in texts) == M
    _has(ax, "W_h", "L_{attn}", "L_{pred}", "general distillation", "task-specific distillation",
         "pre-trained teacher, unlabelled text", "fine-tuned teacher, task data")

"""The skip-gram and CBOW drawings of chapter 04 (``lmcourse.viz.word2vec_diagrams``)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

from lmcourse.viz.word2vec_diagrams import draw_cbow, draw_skipgram, draw_word2vec  # noqa: E402


def _parts(ax):
    texts = [t.get_text() for t in ax.texts]
    boxes = sum(isinstance(p, FancyBboxPatch) for p in ax.patches)
    arrows = sum(isinstance(p, FancyArrowPatch) for p in ax.patches)
    return texts, boxes, arrows


def test_skipgram_fans_out_from_one_center_to_every_window_word_and_the_noise():
    texts, boxes, arrows = _parts(draw_skipgram())
    window = [t for t in texts if t.startswith("w(t") and "u_o" in t]
    assert len(window) == 4 and sum("center word" in t for t in texts) == 1
    assert any("noise" in t and "-u_k" in t for t in texts)
    assert boxes == 7 and arrows == 6  # input, lookup, 4 contexts, noise
    plt.close("all")


def test_cbow_averages_the_window_into_one_prediction_of_the_center():
    ax = draw_cbow()
    texts, boxes, arrows = _parts(ax)
    assert sum(t.startswith("w(t") for t in texts) == 4
    assert any("mean" in t for t in texts) and any("center w(t)" in t for t in texts)
    assert boxes == 7 and arrows == 6  # 4 contexts into the mean, mean to center and noise
    assert "CBOW" in ax.get_title()
    plt.close("all")


def test_both_side_by_side():
    fig = draw_word2vec()
    assert [ax.get_title().split(":")[0] for ax in fig.axes] == ["Skip-gram", "CBOW"]
    plt.close(fig)

"""The LSTM and GRU cell drawings of chapter 03 (``lmcourse.viz.cells``)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Circle, FancyBboxPatch  # noqa: E402

from lmcourse.viz.cells import draw_gru_cell, draw_lstm_cell  # noqa: E402


def _parts(ax):
    texts = [t.get_text() for t in ax.texts]
    layers = [t for t in texts if t in ("$\\sigma$", "tanh")]
    ops = sum(isinstance(p, Circle) for p in ax.patches) - 1  # minus the legend's circle
    boxes = sum(isinstance(p, FancyBboxPatch) for p in ax.patches) - 2  # frame, legend
    return texts, layers, ops, boxes


def test_lstm_cell_has_three_sigmoid_gates_a_tanh_candidate_and_the_cell_line():
    ax = draw_lstm_cell()
    texts, layers, ops, boxes = _parts(ax)
    assert layers.count("$\\sigma$") == 3 and boxes == 4
    for name in ("$f_t$", "$i_t$", "$g_t$", "$o_t$", "$c_{t-1}$", "$c_t$", "$h_t$", "$x_t$"):
        assert name in texts, name
    # forget x, input x, +, tanh(c), output x
    assert ops == 5
    assert "c_t = f_t" in ax.get_title()
    plt.close(ax.figure)


def test_gru_cell_has_two_gates_a_candidate_and_no_cell():
    ax = draw_gru_cell()
    texts, layers, ops, boxes = _parts(ax)
    assert layers.count("$\\sigma$") == 2 and boxes == 3
    for name in ("$r_t$", "$z_t$", "$n_t$", "$h_{t-1}$", "$h_t$"):
        assert name in texts, name
    assert "$c_t$" not in texts and "$o_t$" not in texts
    # z x h, +, 1 - z, (1 - z) x n, r x (h W)
    assert ops == 5
    plt.close(ax.figure)


def test_draws_into_a_given_axes():
    fig, axes = plt.subplots(1, 2)
    assert draw_lstm_cell(axes[0]) is axes[0] and draw_gru_cell(axes[1]) is axes[1]
    plt.close(fig)


def test_temperature_slider_and_legend_write_t_alike():
    """The legend reads what the slider shows (9.95, not 9.95268)."""
    import matplotlib.pyplot as plt

    from lmcourse.viz.temperature import T_FORMAT, temperature_figure, temperature_widget

    fig = temperature_figure([2.0, 0.5, -1.0], ["a", "b", "c"], T=9.95268)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    plt.close(fig)
    assert labels == ["T = 1", "T = 9.95"]
    slider = temperature_widget([2.0, 0.5, -1.0], ["a", "b", "c"]).children[0]
    assert slider.readout_format == T_FORMAT and f"{9.95268:{T_FORMAT}}" == "9.95"
    plt.close("all")

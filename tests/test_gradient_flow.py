"""Gradient flow through time, measured: rho^(T-t) for a linear chain, and the widget."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from lmcourse.viz import gradient_flow, gradient_flow_widget, plot_gradient_flow  # noqa: E402
from lmcourse.viz.gradient_flow import (  # noqa: E402
    CELLS,
    DEFAULT_SETTINGS,
    Cell,
    matrix_power_norms,
    recurrent_matrix,
    register_cell,
)

T = 30


def _power_norm(weight: torch.Tensor, k: int) -> float:
    return float(torch.linalg.matrix_norm(torch.linalg.matrix_power(weight, k), ord=2))


@pytest.mark.parametrize("radius", [0.8, 1.0, 1.25])
def test_linear_orthogonal_chain_scales_like_rho_to_the_power(radius):
    flow = gradient_flow(radius, "linear", seq_len=T, hidden_size=16, seed=3)
    weight = recurrent_matrix(16, radius, "orthogonal", seed=3)
    assert torch.equal(flow.weight, weight)
    for t in range(T + 1):
        k = T - t
        expected = _power_norm(weight, k)  # = rho^k for a scaled orthogonal matrix
        assert flow.norms[t] == pytest.approx(expected, rel=1e-9)
        assert flow.norms[t] == pytest.approx(radius ** k, rel=1e-9)
    back = flow.norms[::-1]  # back[k]: k steps from the loss
    if radius > 1:
        assert np.all(np.diff(back) > 0) and back[-1] > 100
    elif radius < 1:
        assert np.all(np.diff(back) < 0) and back[-1] < 1e-2


def test_linear_gaussian_chain_is_the_matrix_power_applied_to_the_readout():
    radius = 1.1
    flow = gradient_flow(radius, "linear", seq_len=T, hidden_size=20, seed=1, init="gaussian")
    w, u = flow.weight, flow.readout
    assert float(torch.linalg.eigvals(w).abs().max()) == pytest.approx(radius, rel=1e-9)
    for t in range(T + 1):
        k = T - t
        expected = float((torch.linalg.matrix_power(w, k).T @ u).norm())
        assert flow.norms[t] == pytest.approx(expected, rel=1e-9)
        assert flow.norms[t] <= _power_norm(w, k) * (1 + 1e-9)
    # the growth rate per step tends to the spectral radius (Gelfand's formula)
    long = gradient_flow(radius, "linear", seq_len=300, hidden_size=20, seed=1, init="gaussian")
    rate = (long.norms[0] / long.norms[100]) ** (1 / 200)
    assert rate == pytest.approx(radius, rel=0.05)


def test_matrix_power_norms():
    w = recurrent_matrix(10, 0.7, "gaussian", seed=0)
    norms = matrix_power_norms(w, 6)
    assert norms[0] == pytest.approx(1.0)
    for k in range(7):
        assert norms[k] == pytest.approx(_power_norm(w, k), rel=1e-9)


@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
def test_saturating_slopes_only_shrink_the_gradient(nonlinearity):
    # |phi'| <= 1, so ||dL/dh_t|| <= ||W||^(T-t) = rho^(T-t) (Pascanu et al.'s bound)
    radius = 1.2
    flow = gradient_flow(radius, nonlinearity, seq_len=T, hidden_size=16, seed=0,
                         input_scale=1.0)
    k = np.arange(T, -1, -1)
    assert np.all(flow.norms <= radius ** k * (1 + 1e-9))
    assert flow.norms[0] < 0.5 * radius ** T  # and strictly less once units saturate


def test_other_cells_plug_in():
    def doubled(weight, nonlinearity):  # a linear cell with recurrent matrix 2W
        return Cell(step=lambda state, x: (state[0] @ (2 * weight).T + x,))

    flow = gradient_flow(0.5, "linear", seq_len=10, hidden_size=8, cell=doubled)
    assert flow.norms == pytest.approx([1.0] * 11, rel=1e-9)  # (2 * 0.5)^k = 1
    register_cell("doubled", doubled)
    try:
        named = gradient_flow(0.5, "linear", seq_len=10, hidden_size=8, cell="doubled")
        assert named.settings["cell"] == "doubled"
        assert np.allclose(named.norms, flow.norms)
    finally:
        CELLS.pop("doubled")


def test_two_state_cells_measure_the_whole_state():
    def with_memory(weight, nonlinearity):  # state (h, c): h a linear RNN, c carried unchanged
        return Cell(step=lambda state, x: (state[0] @ weight.T + x, state[1] * 1.0),
                    init=lambda h0: (h0, torch.zeros_like(h0)),
                    hidden=lambda state: state[0] + state[1])

    radius = 0.8
    flow = gradient_flow(radius, "linear", seq_len=6, hidden_size=5, cell=with_memory)
    # dL/dh_t has norm rho^k (orthogonal W), dL/dc_t = u has norm 1: together sqrt(rho^2k + 1)
    k = np.arange(6, -1, -1)
    assert flow.norms == pytest.approx(np.sqrt(radius ** (2 * k) + 1), rel=1e-9)


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="nonlinearity"):
        gradient_flow(1.0, "sigmoid")
    with pytest.raises(ValueError, match="init"):
        recurrent_matrix(4, 1.0, "uniform")


def test_plot_has_one_line_per_setting_on_a_log_scale():
    fig = plot_gradient_flow(seq_len=20, hidden_size=8)
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"
    assert len(ax.get_lines()) == len(DEFAULT_SETTINGS)
    assert len(ax.get_legend().get_texts()) == len(DEFAULT_SETTINGS)
    x, y = ax.get_lines()[0].get_data()
    assert len(x) == 21 and np.all(np.asarray(y) > 0)


def test_widget_builds_headless_with_a_static_figure():
    import ipywidgets as widgets
    from matplotlib.figure import Figure

    box = gradient_flow_widget(seq_len=20, hidden_size=8)
    assert isinstance(box, widgets.VBox)
    assert isinstance(box.static_figure, Figure)
    assert box.static_figure.axes[0].get_yscale() == "log"
    assert len(box.static_figure.axes[0].get_lines()) == len(DEFAULT_SETTINGS)
    controls = [w for row in box.children[:-1] for w in row.children]
    kinds = {type(w).__name__ for w in controls}
    assert {"FloatSlider", "Dropdown", "IntSlider"} <= kinds
    assert isinstance(box.children[-1], widgets.Output)
    radius = next(w for w in controls if w.description.startswith("ρ"))
    radius.value = 1.3  # redraws without a kernel and without error


def test_the_cell_menu_does_not_depend_on_import_order():
    """A fresh interpreter that imports only the gradient-flow module offers every cell."""
    import subprocess
    import sys

    code = "from lmcourse.viz.gradient_flow import CELLS; print(sorted(CELLS))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "['gru', 'lstm', 'rnn']"


def test_single_curve_is_strong_thick_and_above_the_reference():
    """The widget's one curve must stand out, not sit pale on the grey reference line."""
    from matplotlib.colors import to_rgb

    from lmcourse.viz.gradient_flow import SINGLE_COLOR

    fig = plot_gradient_flow([dict(radius=1.0, nonlinearity="linear")], reference=True,
                             seq_len=20, hidden_size=8)
    curve, ref = fig.axes[0].get_lines()
    assert to_rgb(curve.get_color()) == to_rgb(SINGLE_COLOR)
    r, g, b = to_rgb(curve.get_color())
    assert max(r, g, b) - min(r, g, b) > 0.4  # saturated, not a pale or grey tone
    assert curve.get_linewidth() >= 2 * ref.get_linewidth()
    assert curve.get_zorder() > ref.get_zorder()
    assert to_rgb(ref.get_color()) != to_rgb(curve.get_color())


def test_flat_line_is_not_magnified_into_round_off():
    """rho = 1, linear: the norm is 1 up to round-off; the axis must not zoom into it."""
    fig = plot_gradient_flow([dict(radius=1.0, nonlinearity="linear")], reference=True,
                             seq_len=20, hidden_size=8)
    lo, hi = fig.axes[0].get_ylim()
    assert hi / lo >= 100

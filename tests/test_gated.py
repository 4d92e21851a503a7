"""lmcourse.models.gated against torch.nn.LSTM / GRU / LSTMCell / GRUCell (same weights)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from torch import nn

from lmcourse.models.gated import (
    GRU,
    LSTM,
    GatedLM,
    GRUCell,
    LSTMCell,
    param_count_formula,
)
from lmcourse.train import fit_lm
from lmcourse.viz.gates import hidden_gradient_norms, lstm_gate_trace

PAIRS = {"lstm": (LSTM, nn.LSTM), "gru": (GRU, nn.GRU)}
CONFIGS = list(itertools.product(("lstm", "gru"), (1, 2), (False, True), (False, True),
                                 (False, True)))


def pair(kind: str, **kwargs):
    """Ours and torch's, same arguments, ours loaded with torch's (float64) weights."""
    ours_cls, torch_cls = PAIRS[kind]
    ref = torch_cls(3, 5, **kwargs).double()
    ours = ours_cls(3, 5, **kwargs).double()
    ours.load_state_dict(ref.state_dict())
    return ours, ref


def flat(state) -> list[torch.Tensor]:
    return list(state) if isinstance(state, tuple) else [state]


@pytest.mark.parametrize("kind, layers, bidirectional, batch_first, given_hx", CONFIGS)
def test_matches_torch_outputs_states_and_gradients(kind, layers, bidirectional, batch_first,
                                                    given_hx):
    torch.manual_seed(0)
    ours, ref = pair(kind, num_layers=layers, bidirectional=bidirectional,
                     batch_first=batch_first)
    batch, steps, dirs = 4, 7, 2 if bidirectional else 1
    shape = (batch, steps, 3) if batch_first else (steps, batch, 3)
    x1 = torch.randn(*shape, dtype=torch.float64, requires_grad=True)
    x2 = x1.detach().clone().requires_grad_()
    hx1 = hx2 = None
    if given_hx:
        h0 = torch.randn(layers * dirs, batch, 5, dtype=torch.float64)
        hx1 = (h0, torch.randn_like(h0)) if kind == "lstm" else h0
        hx1 = tuple(t.clone().requires_grad_() for t in flat(hx1))
        hx2 = tuple(t.detach().clone().requires_grad_() for t in hx1)
        if kind == "gru":
            hx1, hx2 = hx1[0], hx2[0]
    out1, s1 = ours(x1, hx1)
    out2, s2 = ref(x2, hx2)
    assert out1.shape == out2.shape == (*shape[:2], 5 * dirs)
    assert isinstance(s1, tuple) == (kind == "lstm")
    assert torch.allclose(out1, out2, atol=1e-12, rtol=0)
    for a, b in zip(flat(s1), flat(s2), strict=True):
        assert a.shape == b.shape == (layers * dirs, batch, 5)
        assert torch.allclose(a, b, atol=1e-12, rtol=0)
    # a loss that reads the outputs and every final state
    g = torch.Generator().manual_seed(1)
    w = torch.randn(out1.shape, generator=g, dtype=torch.float64)
    loss1 = (w * out1).sum() + sum(s.sin().sum() for s in flat(s1))
    loss2 = (w * out2).sum() + sum(s.sin().sum() for s in flat(s2))
    inputs1 = [x1, *(flat(hx1) if given_hx else [])]
    inputs2 = [x2, *(flat(hx2) if given_hx else [])]
    g1 = torch.autograd.grad(loss1, inputs1 + list(ours.parameters()))
    g2 = torch.autograd.grad(loss2, inputs2 + list(ref.parameters()))
    for a, b in zip(g1, g2, strict=True):
        assert torch.allclose(a, b, atol=1e-11, rtol=0), float((a - b).abs().max())


@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize("kwargs", [dict(), dict(num_layers=3, bidirectional=True),
                                    dict(bias=False, num_layers=2)])
def test_state_dict_keys_and_shapes_equal_torch(kind, kwargs):
    ours_cls, torch_cls = PAIRS[kind]
    ours, ref = ours_cls(6, 4, **kwargs), torch_cls(6, 4, **kwargs)
    ours_sd, ref_sd = ours.state_dict(), ref.state_dict()
    assert list(ours_sd) == list(ref_sd)  # same names, same order
    assert {k: v.shape for k, v in ours_sd.items()} == {k: v.shape for k, v in ref_sd.items()}


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_load_state_dict_round_trip(kind):
    ours_cls, torch_cls = PAIRS[kind]
    torch.manual_seed(3)
    ref = torch_cls(3, 5, num_layers=2, bidirectional=True)
    ours = ours_cls(3, 5, num_layers=2, bidirectional=True)
    ours.load_state_dict(ref.state_dict())
    back = torch_cls(3, 5, num_layers=2, bidirectional=True)
    back.load_state_dict(ours.state_dict())
    for k, v in ref.state_dict().items():
        assert torch.equal(back.state_dict()[k], v)
    x = torch.randn(6, 2, 3)
    assert torch.allclose(ours(x)[0], back(x)[0], atol=1e-6)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_same_seed_gives_torchs_initial_weights(kind):
    ours_cls, torch_cls = PAIRS[kind]
    torch.manual_seed(7)
    ours = ours_cls(3, 5, num_layers=2)
    torch.manual_seed(7)
    ref = torch_cls(3, 5, num_layers=2)
    assert all(torch.equal(a, b) for a, b in zip(ours.parameters(), ref.parameters(),
                                                   strict=True))


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_unbatched_input(kind):
    ours, ref = pair(kind, num_layers=2, bidirectional=True)
    x = torch.randn(6, 3, dtype=torch.float64)
    out1, s1 = ours(x)
    out2, s2 = ref(x)
    assert out1.shape == out2.shape == (6, 10)
    assert torch.allclose(out1, out2, atol=1e-12)
    for a, b in zip(flat(s1), flat(s2), strict=True):
        assert a.shape == b.shape == (4, 5)
        assert torch.allclose(a, b, atol=1e-12)


def test_cells_match_torch_cells():
    torch.manual_seed(0)
    x = torch.randn(4, 3, dtype=torch.float64)
    h = torch.randn(4, 5, dtype=torch.float64)
    c = torch.randn(4, 5, dtype=torch.float64)
    ours, ref = LSTMCell(3, 5).double(), nn.LSTMCell(3, 5).double()
    ours.load_state_dict(ref.state_dict())
    for a, b in zip(ours(x, (h, c)), ref(x, (h, c)), strict=True):
        assert torch.allclose(a, b, atol=1e-13)
    for a, b in zip(ours(x), ref(x), strict=True):
        assert torch.allclose(a, b, atol=1e-13)
    ours, ref = GRUCell(3, 5).double(), nn.GRUCell(3, 5).double()
    ours.load_state_dict(ref.state_dict())
    assert list(ours.state_dict()) == list(ref.state_dict())
    assert torch.allclose(ours(x, h), ref(x, h), atol=1e-13)


def test_dropout_between_layers_only_in_training():
    torch.manual_seed(0)
    lstm = LSTM(3, 5, num_layers=2, dropout=0.5)
    x = torch.randn(7, 2, 3)
    lstm.eval()
    a, b = lstm(x)[0], lstm(x)[0]
    assert torch.equal(a, b)
    lstm.train()
    assert not torch.equal(lstm(x)[0], lstm(x)[0])
    with pytest.raises(ValueError, match="dropout"):
        LSTM(3, 5, dropout=1.5)


@pytest.mark.parametrize("bad, match", [
    (torch.randn(7, 2, 4), "input_size=3"),
    (torch.randn(7), "3-d input"),
    (torch.randn(2, 7, 2, 3), "3-d input"),
    (torch.randint(3, (7, 2, 3)), "floating-point"),
])
def test_bad_inputs_give_clear_errors(bad, match):
    with pytest.raises(ValueError, match=match):
        LSTM(3, 5)(bad)
    with pytest.raises(ValueError, match=match):
        GRU(3, 5)(bad)


def test_bad_states_give_clear_errors():
    x = torch.randn(7, 2, 3)
    with pytest.raises(ValueError, match=r"h_0 must have shape .* = \(2, 2, 5\)"):
        LSTM(3, 5, num_layers=2)(x, (torch.zeros(1, 2, 5), torch.zeros(1, 2, 5)))
    with pytest.raises(ValueError, match=r"c_0 must have shape"):
        LSTM(3, 5)(x, (torch.zeros(1, 2, 5), torch.zeros(1, 3, 5)))
    with pytest.raises(ValueError, match=r"hx = \(h_0, c_0\)"):
        LSTM(3, 5)(x, torch.zeros(1, 2, 5))
    with pytest.raises(ValueError, match=r"hx = h_0, one tensor"):
        GRU(3, 5)(x, (torch.zeros(1, 2, 5), torch.zeros(1, 2, 5)))
    with pytest.raises(ValueError, match=r"h_0 must have shape .* = \(2, 2, 5\)"):
        GRU(3, 5, bidirectional=True)(x, torch.zeros(1, 2, 5))


@pytest.mark.parametrize("cell, blocks", [("rnn", 1), ("gru", 3), ("lstm", 4)])
def test_param_count_formula_matches_modules(cell, blocks):
    module = {"rnn": nn.RNN, "gru": nn.GRU, "lstm": nn.LSTM}[cell](17, 9)
    counted = sum(p.numel() for p in module.parameters())
    assert param_count_formula(cell, 17, 9) == counted == blocks * (9 * (17 + 9) + 2 * 9)


@pytest.mark.parametrize("cell", ["rnn", "lstm", "gru"])
def test_gated_lm_trains_with_fit_lm_and_ours_equals_torch(cell):
    torch.manual_seed(0)
    ours = GatedLM(11, 8, cell=cell, impl="ours")
    ref = GatedLM(11, 8, cell=cell, impl="torch")
    ref.load_state_dict(ours.state_dict())
    x = torch.randint(11, (3, 9))
    (l1, s1), (l2, s2) = ours(x), ref(x)
    assert l1.shape == (3, 9, 11)
    assert torch.allclose(l1, l2, atol=1e-5)
    for a, b in zip(flat(s1), flat(s2), strict=True):
        assert torch.allclose(a, b, atol=1e-5)
    data = torch.arange(200) % 11  # a cycle: easy to learn
    batches = [(data[i:i + 40].reshape(4, 10), data[i + 1:i + 41].reshape(4, 10))
               for i in range(0, 120, 40)]
    history = fit_lm(ours, lambda epoch: batches, epochs=15, lr=0.03, progress=False)
    assert history.epoch_perplexity[-1] < history.epoch_perplexity[0] / 2


def test_forget_bias_is_added_to_the_forget_block_only():
    torch.manual_seed(0)
    plain = GatedLM(5, 4, cell="lstm")
    torch.manual_seed(0)
    biased = GatedLM(5, 4, cell="lstm", forget_bias=1.0)
    diff = biased.rnn.bias_ih_l0 - plain.rnn.bias_ih_l0
    assert torch.allclose(diff, torch.tensor([0.0] * 4 + [1.0] * 4 + [0.0] * 8))
    assert torch.equal(biased.rnn.bias_hh_l0, plain.rnn.bias_hh_l0)
    with pytest.raises(ValueError, match="forget_bias"):
        GatedLM(5, 4, cell="gru", forget_bias=1.0)


@pytest.mark.parametrize("cell", ["rnn", "lstm", "gru"])
def test_hidden_gradient_norms_match_a_perturbation_reference(cell):
    """dL/dh_t equals dL/dp_t when a zero tensor p_t is added to h_t in the recurrence."""
    from lmcourse.models.rnn import rnn_step

    torch.manual_seed(0)
    model = GatedLM(6, 5, cell=cell, impl="ours").double()
    x, y = torch.randint(6, (2, 8)), torch.randint(6, (2, 8))
    norms = hidden_gradient_norms(model, x, y)
    assert norms.shape == (8,)
    rnn = model.rnn
    state = (torch.zeros(2, 5, dtype=torch.float64),) * (2 if cell == "lstm" else 1)
    probes = []
    for x_t in model.inputs(x).transpose(0, 1):
        if cell == "rnn":
            state = (rnn_step(x_t, state[0], *rnn.layer_weights(0)),)
        else:
            w_ih, w_hh, b_ih, b_hh = rnn.weights(0)
            state = rnn.step(x_t @ w_ih.T + b_ih, state, w_hh, b_hh)
        probe = torch.zeros(2, 5, dtype=torch.float64, requires_grad=True)
        probes.append(probe)
        state = (state[0] + probe, *state[1:])
    loss = nn.functional.cross_entropy(model.head(state[0]), y[:, -1], reduction="sum")
    ref = [float(g.norm(dim=-1).mean()) for g in torch.autograd.grad(loss, probes)]
    assert np.allclose(norms, ref, rtol=1e-10, atol=0)
    assert norms[0] < norms[-1]  # an untrained tanh RNN / gated cell loses gradient going back


def test_lstm_gate_trace_reproduces_the_forward_pass():
    torch.manual_seed(0)
    ours, ref = pair("lstm")
    x = torch.randn(9, 3, dtype=torch.float64)
    trace = lstm_gate_trace(ref, x)  # works on torch's module too
    out, (h_n, c_n) = ours(x)
    assert torch.allclose(trace["h"], out, atol=1e-12)
    assert torch.allclose(trace["c"][-1], c_n[0], atol=1e-12)
    for gate in "ifo":
        assert trace[gate].min() > 0 and trace[gate].max() < 1
    assert torch.allclose(trace["c"][1], trace["f"][1] * trace["c"][0]
                          + trace["i"][1] * trace["g"][1])


# ---- the gradient-flow cells and the gate picture (lmcourse.viz.gates) --------------------

def test_gated_chains_are_registered_and_follow_the_gate_equations():
    from lmcourse.models.gated import gru_step, lstm_step
    from lmcourse.viz.gates import _gate_matrices, gru_chain, lstm_chain
    from lmcourse.viz.gradient_flow import CELLS, recurrent_matrix

    assert {"rnn", "lstm", "gru"} <= set(CELLS)
    H = 6
    W = recurrent_matrix(H, 1.0)
    g = torch.Generator().manual_seed(5)
    h, c, x = (torch.randn(2, H, generator=g, dtype=torch.float64) for _ in range(3))
    # the chain's LSTM is lstm_step with stacked blocks [i, f, g, o]
    w_i, w_f, w_o, u_i, u_f, u_o = _gate_matrices(H, 6)
    x_part = torch.cat([x @ u_i.T, x @ u_f.T + 2.0, x, x @ u_o.T], dim=-1)
    want = lstm_step(x_part, h, c, torch.cat([w_i, w_f, W, w_o]))
    got = lstm_chain(W, "tanh", forget_bias=2.0).step((h, c), x)
    for a, b in zip(got, want, strict=True):
        assert torch.allclose(a, b, atol=1e-13)
    # the chain's GRU is gru_step with stacked blocks [r, z, n] and no bias on n's h-part
    w_r, w_z, u_r, u_z = _gate_matrices(H, 4)
    x_part = torch.cat([x @ u_r.T, x @ u_z.T - 1.0, x], dim=-1)
    want = gru_step(x_part, h, torch.cat([w_r, w_z, W]))
    (got,) = gru_chain(W, "tanh", update_bias=-1.0).step((h,), x)
    assert torch.allclose(got, want, atol=1e-13)


def test_an_open_forget_gate_keeps_the_gradient_alive():
    from functools import partial

    from lmcourse.viz.gates import gru_chain, lstm_chain
    from lmcourse.viz.gradient_flow import gradient_flow

    far = {}
    for name, builder in [("lstm0", partial(lstm_chain, forget_bias=0.0)),
                          ("lstm3", partial(lstm_chain, forget_bias=3.0)),
                          ("gru0", partial(gru_chain, update_bias=0.0)),
                          ("gru3", partial(gru_chain, update_bias=3.0))]:
        flow = gradient_flow(1.0, "tanh", seq_len=60, hidden_size=32, cell=builder)
        far[name] = flow.norms[0] / flow.norms[-1]
    assert far["lstm3"] > 1e3 * far["lstm0"]
    assert far["gru3"] > 1e3 * far["gru0"]


def test_plot_gate_heatmap_draws_one_panel_per_gate():
    import matplotlib.pyplot as plt

    from lmcourse.viz.gates import plot_gate_heatmap

    torch.manual_seed(0)
    lstm = LSTM(4, 6)
    trace = lstm_gate_trace(lstm, torch.randn(10, 4))
    fig = plot_gate_heatmap(trace, "abcdefghij", units=[0, 2, 5])
    heatmaps = [ax for ax in fig.axes if ax.images]
    assert len(heatmaps) == 3
    assert heatmaps[0].images[0].get_array().shape == (3, 10)
    plt.close(fig)

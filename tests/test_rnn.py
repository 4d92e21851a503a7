"""The from-scratch RNN against torch.nn.RNN, its language model, and BPTT written out."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from lmcourse.data import Vocab
from lmcourse.models.rnn import (
    RNN,
    RNNLM,
    bptt,
    full_bptt,
    generate,
    lm_bptt_inputs,
    randomized_truncation,
    regular_truncation,
    rnn_step,
)
from lmcourse.train import fit_lm, lm_loss

TOL = 1e-10


def _pair(input_size=5, hidden_size=7, **kwargs):
    torch.manual_seed(0)
    ref = nn.RNN(input_size, hidden_size, **kwargs).double()
    ours = RNN(input_size, hidden_size, **kwargs).double()
    ours.load_state_dict(ref.state_dict())
    return ours, ref


@pytest.mark.parametrize("num_layers", [1, 2])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
@pytest.mark.parametrize("with_h0", [False, True])
def test_matches_torch_outputs_and_gradients(num_layers, batch_first, nonlinearity, with_h0):
    ours, ref = _pair(num_layers=num_layers, batch_first=batch_first, nonlinearity=nonlinearity)
    T, B = 6, 3
    shape = (B, T, 5) if batch_first else (T, B, 5)
    x = torch.randn(*shape, dtype=torch.float64)
    h0 = torch.randn(num_layers, B, 7, dtype=torch.float64) if with_h0 else None
    results = []
    for model in (ours, ref):
        xi = x.clone().requires_grad_()
        hi = None if h0 is None else h0.clone().requires_grad_()
        out, h_n = model(xi, hi)
        # a loss that touches every output and every final state with different weights
        w_out = torch.linspace(-1, 1, out.numel(), dtype=torch.float64).reshape(out.shape)
        loss = (out * w_out).sum() + (h_n ** 2).sum()
        model.zero_grad()
        loss.backward()
        grads = [xi.grad] + ([hi.grad] if hi is not None else [])
        grads += [p.grad for _, p in sorted(model.named_parameters())]
        results.append((out, h_n, grads))
    (o1, h1, g1), (o2, h2, g2) = results
    assert o1.shape == o2.shape and h1.shape == h2.shape
    assert (o1 - o2).abs().max() < TOL
    assert (h1 - h2).abs().max() < TOL
    assert len(g1) == len(g2)
    for a, b in zip(g1, g2, strict=True):
        assert (a - b).abs().max() < TOL


def test_no_bias_and_unbatched_input():
    ours, ref = _pair(bias=False, num_layers=2)
    assert sorted(ours.state_dict()) == sorted(ref.state_dict())
    x = torch.randn(4, 5, dtype=torch.float64)  # T x input_size, no batch axis
    h0 = torch.randn(2, 7, dtype=torch.float64)
    (o1, h1), (o2, h2) = ours(x, h0), ref(x, h0)
    assert o1.shape == o2.shape == (4, 7) and h1.shape == h2.shape == (2, 7)
    assert (o1 - o2).abs().max() < TOL and (h1 - h2).abs().max() < TOL


def test_state_dict_keys_shapes_and_round_trip():
    torch.manual_seed(1)
    ref = nn.RNN(3, 4, num_layers=3)
    ours = RNN(3, 4, num_layers=3)
    a, b = ours.state_dict(), ref.state_dict()
    assert list(a) == list(b)
    assert all(a[k].shape == b[k].shape for k in a)
    # ours -> torch -> ours leaves every tensor unchanged
    ref.load_state_dict(ours.state_dict())
    back = RNN(3, 4, num_layers=3)
    back.load_state_dict(ref.state_dict())
    assert all(torch.equal(back.state_dict()[k], a[k]) for k in a)
    # and PyTorch's initialisation range
    bound = 1 / 4 ** 0.5
    assert all(p.abs().max() <= bound for p in ours.parameters())


def test_rnn_step_is_the_equation():
    torch.manual_seed(2)
    x, h = torch.randn(3, 5), torch.randn(3, 4)
    w_ih, w_hh, b_ih, b_hh = torch.randn(4, 5), torch.randn(4, 4), torch.randn(4), torch.randn(4)
    expected = torch.tanh(torch.einsum("ij,bj->bi", w_ih, x) + b_ih
                          + torch.einsum("ij,bj->bi", w_hh, h) + b_hh)
    assert torch.allclose(rnn_step(x, h, w_ih, w_hh, b_ih, b_hh), expected, atol=1e-6)
    with pytest.raises(ValueError, match="nonlinearity"):
        RNN(2, 3, nonlinearity="sigmoid")


@pytest.mark.parametrize("embed", [None, 6])
def test_rnnlm_shapes(embed):
    model = RNNLM(11, 8, num_layers=2, embed=embed)
    x = torch.randint(11, (3, 5))
    logits, state = model(x)
    assert logits.shape == (3, 5, 11)
    assert state.shape == (2, 3, 8)
    logits2, _ = model(x, state)
    assert not torch.allclose(logits, logits2)  # the carried state changes the prediction


def test_rnnlm_accepts_torch_recurrent_modules():
    model = RNNLM(9, 6, rnn_class=nn.LSTM)
    logits, (h, c) = model(torch.randint(9, (2, 4)))
    assert logits.shape == (2, 4, 9) and h.shape == c.shape == (1, 2, 6)


def test_training_on_a_repeating_sequence_reduces_the_loss():
    torch.manual_seed(0)
    text = "hello world " * 40
    vocab = Vocab(list(text))
    ids = torch.tensor(vocab.encode(list(text)))
    x, y = ids[:-1].reshape(1, -1)[:, :400], ids[1:].reshape(1, -1)[:, :400]
    batches = [(x[:, i:i + 20].repeat(4, 1), y[:, i:i + 20].repeat(4, 1))
               for i in range(0, 400, 20)]
    model = RNNLM(len(vocab), 32)
    before = lm_loss(model(batches[0][0])[0], batches[0][1]).item()
    history = fit_lm(model, lambda epoch: batches, epochs=3, lr=0.01, progress=False)
    after = lm_loss(model(batches[0][0])[0], batches[0][1]).item()
    assert after < 0.5 * before, (before, after)
    assert history.epoch_perplexity[-1] < history.epoch_perplexity[0]
    # a trained model continues the pattern when sampling greedily
    out = generate(model, vocab, "hello wor", 10, temperature=0)
    assert out.startswith("hello wor") and len(out) == 19
    assert out[9:12] == "ld "


def test_generate_is_reproducible_with_a_generator():
    torch.manual_seed(0)
    vocab = Vocab(list("abcdef"))
    model = RNNLM(len(vocab), 8)
    a = generate(model, vocab, "ab", 12, 1.0, generator=torch.Generator().manual_seed(3))
    b = generate(model, vocab, "ab", 12, 1.0, generator=torch.Generator().manual_seed(3))
    assert a == b and a.startswith("ab")
    c = generate(model, vocab, "ab", 12, 1.0, generator=torch.Generator().manual_seed(4))
    assert c != a


def _lm_setup(T=12, B=3, V=6, H=5, seed=0):
    torch.manual_seed(seed)
    model = RNNLM(V, H).double()
    xb = torch.randint(V, (B, T))
    yb = torch.randint(V, (B, T))
    return model, xb, yb


def _bptt_inputs(model, xb, yb):
    args = lm_bptt_inputs(model, xb, yb)
    x, h = args[0], args[1]
    assert torch.equal(x, nn.functional.one_hot(xb, model.vocab_size).double().transpose(0, 1))
    with torch.no_grad():
        states = model.rnn(x.transpose(0, 1))[0]  # the LM's RNN is batch-first
    assert torch.allclose(h, states.transpose(0, 1))  # the cached states, time-first
    return args


def _manual_grads(model, xb, yb, keep=None):
    return bptt(*_bptt_inputs(model, xb, yb), keep=keep)


def test_bptt_by_hand_equals_autograd():
    model, xb, yb = _lm_setup()
    model.zero_grad()
    lm_loss(model(xb)[0], yb).backward()
    grads, products = _manual_grads(model, xb, yb)
    for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
        ref = getattr(model.rnn, f"{name}_l0").grad
        assert (grads[name] - ref).abs().max() < TOL, name
    assert products == xb.shape[1]


def test_regular_truncation_equals_detaching_every_tau_steps():
    model, xb, yb = _lm_setup(T=12)
    tau = 4
    # reference: autograd over chunks of tau steps, the state detached in between
    model.zero_grad()
    state, total = None, 0.0
    for i in range(0, 12, tau):
        logits, state = model(xb[:, i:i + tau], None if state is None else state.detach())
        total = total + lm_loss(logits, yb[:, i:i + tau]) * tau / 12
    total.backward()
    grads, products = _manual_grads(model, xb, yb, keep=regular_truncation(12, tau))
    assert (grads["weight_hh"] - model.rnn.weight_hh_l0.grad).abs().max() < TOL
    assert (grads["weight_ih"] - model.rnn.weight_ih_l0.grad).abs().max() < TOL
    assert products == 12 - 12 // tau


def test_randomized_truncation_is_unbiased():
    model, xb, yb = _lm_setup(T=15, seed=1)
    full, _ = _manual_grads(model, xb, yb, keep=full_bptt(15))
    regular, _ = _manual_grads(model, xb, yb, keep=regular_truncation(15, 3))
    g = torch.Generator().manual_seed(0)
    args = _bptt_inputs(model, xb, yb)
    draws = [bptt(*args, keep=randomized_truncation(15, 1 / 3, g))[0]["weight_hh"]
             for _ in range(1000)]
    mean = torch.stack(draws).mean(0)
    rel = lambda a: float((a - full["weight_hh"]).norm() / full["weight_hh"].norm())  # noqa: E731
    single = sum(rel(d) for d in draws[:50]) / 50
    # the mean of many randomized estimates approaches the full gradient; regular
    # truncation with the same mean chunk length stays off by its bias
    assert rel(mean) < 0.25 * single
    assert rel(mean) < 0.5 * rel(regular["weight_hh"])
    keep = randomized_truncation(100_000, 0.25, torch.Generator().manual_seed(1))
    assert abs(float(keep.mean()) - 1.0) < 0.02  # each link is kept with weight 1 on average
    assert set(keep.unique().tolist()) == {0.0, 1 / 0.75}


def test_finite_differences():
    model, xb, yb = _lm_setup(T=8, seed=3)
    model.zero_grad()
    lm_loss(model(xb)[0], yb).backward()
    eps = 1e-6
    for name, index in [("weight_hh_l0", (1, 2)), ("weight_ih_l0", (0, 3)), ("bias_hh_l0", (4,))]:
        p = getattr(model.rnn, name)
        with torch.no_grad():
            old = p[index].item()
            p[index] = old + eps
            up = lm_loss(model(xb)[0], yb).item()
            p[index] = old - eps
            down = lm_loss(model(xb)[0], yb).item()
            p[index] = old
        numeric = (up - down) / (2 * eps)
        assert abs(numeric - p.grad[index].item()) < 1e-7 * max(1.0, abs(numeric)), name


def test_io_dropout_is_off_by_default_and_drops_inputs_and_outputs_when_on():
    from lmcourse.models.rnn import RNNLM

    torch.manual_seed(0)
    plain = RNNLM(7, 5, embed=3)
    assert isinstance(plain.io_dropout, torch.nn.Identity)
    torch.manual_seed(0)
    dropped = RNNLM(7, 5, embed=3, io_dropout=0.5)
    x = torch.randint(7, (2, 6))
    dropped.eval()  # no dropout at evaluation: the same function as without it
    torch.testing.assert_close(dropped(x)[0], plain(x)[0])
    dropped.train()
    assert not torch.allclose(dropped(x)[0], plain(x)[0])
    with pytest.raises(ValueError, match="io_dropout"):
        RNNLM(7, 5, io_dropout=1.0)

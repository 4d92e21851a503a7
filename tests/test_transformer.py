"""Transformer pieces vs PyTorch and vs their definitions."""

import math

import pytest
import torch

from lmcourse.models.attention import causal_mask
from lmcourse.models.transformer import (
    TransformerEncoderLayer,
    TransformerLM,
    encoder_layer_parameters,
    sinusoidal_positions,
)
from lmcourse.train import lm_loss


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_encoder_layer_matches_torch(norm_first, batch_first, masked, activation):
    torch.manual_seed(0)
    d, heads, ff, T, B = 16, 4, 24, 7, 3
    ref = torch.nn.TransformerEncoderLayer(d, heads, ff, dropout=0.0, activation=activation,
                                           batch_first=batch_first,
                                           norm_first=norm_first).double().eval()
    with torch.no_grad():  # non-trivial LayerNorm parameters and biases
        for p in ref.parameters():
            p.add_(0.1 * torch.randn_like(p))
    ours = TransformerEncoderLayer(d, heads, ff, activation=activation,
                                   batch_first=batch_first, norm_first=norm_first).double()
    ours.load_state_dict(ref.state_dict())
    ours.eval()
    x = torch.randn((B, T, d) if batch_first else (T, B, d), dtype=torch.float64)
    if masked:
        mask = causal_mask(T)
        expected = ref(x, src_mask=~mask)  # torch: True = not allowed
        got = ours(x, mask)
    else:
        expected, got = ref(x), ours(x)
    assert got.shape == expected.shape
    assert (got - expected).abs().max().item() < 1e-10


def test_state_dict_names_match_torch():
    ref = torch.nn.TransformerEncoderLayer(8, 2, 16)
    ours = TransformerEncoderLayer(8, 2, 16)
    assert {k: v.shape for k, v in ours.state_dict().items()} == {
        k: v.shape for k, v in ref.state_dict().items()}
    assert sum(p.numel() for p in ours.parameters()) == encoder_layer_parameters(8, 16)


@pytest.mark.parametrize("d", [6, 7])
def test_sinusoidal_positions_formula(d):
    T = 11
    pe = sinusoidal_positions(T, d)
    for pos in range(T):
        for j in range(d):
            i = j // 2
            angle = pos / 10000 ** (2 * i / d)
            want = math.sin(angle) if j % 2 == 0 else math.cos(angle)
            assert abs(pe[pos, j].item() - want) < 1e-6


@pytest.mark.parametrize("positions", ["sinusoidal", "learned"])
def test_transformer_lm_is_causal(positions):
    torch.manual_seed(0)
    model = TransformerLM(13, 16, 2, 2, 32, max_len=10, positions=positions).double().eval()
    x = torch.randint(0, 13, (2, 10))
    x2 = x.clone()
    x2[:, 6] = (x[:, 6] + 1) % 13  # change a future token
    a, state = model(x)
    b, _ = model(x2)
    assert state is None and a.shape == (2, 10, 13)
    assert (a[:, :6] - b[:, :6]).abs().max().item() == 0.0
    assert (a[:, 6:] - b[:, 6:]).abs().max().item() > 1e-6  # later positions do see it
    att = model.attentions(x)
    assert len(att) == 2 and att[0].shape == (2, 2, 10, 10)
    assert torch.all(att[1].triu(1) == 0)
    assert torch.allclose(att[0].sum(-1), torch.ones(2, 2, 10, dtype=torch.float64))


def test_training_reduces_loss():
    torch.manual_seed(0)
    model = TransformerLM(5, 16, 2, 1, 32, max_len=12)
    x = torch.arange(12).remainder(5).repeat(4, 1)  # a periodic sequence: easy to learn
    inputs, targets = x[:, :-1], x[:, 1:]
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(30):
        loss = lm_loss(model(inputs)[0], targets)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


def test_tied_weights_share_one_tensor_and_save_v_times_d():
    V, d = 11, 16
    torch.manual_seed(0)
    untied = TransformerLM(V, d, 2, 1, 32, max_len=8)
    tied = TransformerLM(V, d, 2, 1, 32, max_len=8, tie_weights=True).double()
    assert tied.head.weight is tied.embed.weight  # the same Parameter, even after .double()
    n = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731 (counts shared once)
    assert n(untied) - n(tied) == V * d
    assert untied.head.weight is not untied.embed.weight
    # a gradient step moves input and output embedding together
    x = torch.randint(0, V, (2, 8))
    lm_loss(tied(x[:, :-1])[0], x[:, 1:]).backward()
    assert tied.embed.weight.grad is tied.head.weight.grad
    # logits = E h + b, with the same E that embeds the inputs (scaled by sqrt(d) on the way in)
    h = tied.hidden(x)[0]
    assert torch.allclose(tied(x)[0], h @ tied.embed.weight.T + tied.head.bias)
    assert tied.embed_scale == d ** 0.5 and untied.embed_scale == 1.0


def test_embed_dropout_only_in_training_and_default_off():
    torch.manual_seed(0)
    model = TransformerLM(7, 16, 2, 1, 32, max_len=8, embed_dropout=0.5)
    x = torch.randint(0, 7, (3, 8))
    model.eval()
    assert torch.equal(model(x)[0], model(x)[0])  # eval: deterministic
    model.train()
    assert not torch.equal(model(x)[0], model(x)[0])  # training: inputs dropped at random
    assert TransformerLM(7, 16, 2, 1, 32, max_len=8).embed_dropout.p == 0.0
    with pytest.raises(ValueError, match="embed_dropout"):
        TransformerLM(7, 16, 2, 1, 32, max_len=8, embed_dropout=1.5)

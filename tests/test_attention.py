"""Attention from scratch against PyTorch: scaled dot-product attention, masks, multi-head."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from lmcourse.models.attention import (
    AdditiveAttention,
    AttentionLM,
    MultiHeadAttention,
    attention_scores,
    causal_mask,
    mask_from_torch,
    masked_softmax,
    merge_heads,
    padding_mask,
    scaled_dot_product_attention,
    softmax_jacobian,
    split_heads,
)

TOL = 1e-10
f64 = torch.float64


def randn(*shape, g):
    return torch.randn(*shape, generator=g, dtype=f64)


def maxdiff(a, b):
    return float((a - b).detach().abs().max())


# ---- scaled dot-product attention ----------------------------------------------------------

@pytest.mark.parametrize("lead", [(), (3,), (2, 4)])
def test_sdpa_matches_torch_without_mask(lead):
    g = torch.Generator().manual_seed(0)
    q, k, v = randn(*lead, 5, 8, g=g), randn(*lead, 7, 8, g=g), randn(*lead, 7, 3, g=g)
    out, weights = scaled_dot_product_attention(q, k, v)
    assert maxdiff(out, F.scaled_dot_product_attention(q, k, v)) < TOL
    manual = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(8), dim=-1)
    assert maxdiff(weights, manual) < TOL
    assert weights.shape == (*lead, 5, 7)
    assert torch.allclose(weights.sum(-1), torch.ones((), dtype=f64))


def test_sdpa_gradients_match_torch():
    g = torch.Generator().manual_seed(1)
    tensors = [randn(2, 3, 4, 6, g=g).requires_grad_() for _ in range(3)]
    mask = causal_mask(4)
    upstream = randn(2, 3, 4, 6, g=g)
    ours = torch.autograd.grad((scaled_dot_product_attention(*tensors, mask)[0] * upstream).sum(),
                               tensors)
    ref = torch.autograd.grad((F.scaled_dot_product_attention(*tensors, attn_mask=mask)
                               * upstream).sum(), tensors)
    assert max(maxdiff(a, b) for a, b in zip(ours, ref, strict=True)) < TOL


def test_explicit_scale_matches_torch():
    g = torch.Generator().manual_seed(2)
    q, k, v = randn(2, 5, 16, g=g), randn(2, 6, 16, g=g), randn(2, 6, 4, g=g)
    for scale in (1.0, 0.1, 1 / 16):
        out, _ = scaled_dot_product_attention(q, k, v, scale=scale)
        assert maxdiff(out, F.scaled_dot_product_attention(q, k, v, scale=scale)) < TOL
    assert maxdiff(attention_scores(q, k, 1.0), q @ k.transpose(1, 2)) < TOL


def _mask_cases(g):
    """(name, q/k/v lead shape, T, S, a boolean mask of some broadcastable shape)."""
    B, H, T, S = 3, 2, 4, 6
    lengths = torch.tensor([6, 2, 4])
    random_mask = torch.rand(B, H, T, S, generator=g) < 0.6
    random_mask[..., 0] = True  # every query keeps at least one key
    return [
        ("T x S causal", (B, H), T, S, causal_mask(T, S)),
        ("1 x 1 x T x S", (B, H), T, S, causal_mask(T, S)[None, None]),
        ("B x 1 x 1 x S padding", (B, H), T, S, padding_mask(lengths, S)[:, None, None, :]),
        ("B x 1 x S padding, no heads", (B,), T, S, padding_mask(lengths, S)[:, None, :]),
        ("B x H x T x S random", (B, H), T, S, random_mask),
        ("B x 1 x T x S padding & causal", (B, H), T, S,
         padding_mask(lengths, S)[:, None, None, :] & causal_mask(T, S)),
        ("H x T x S, broadcast over batch", (B, H), T, S, random_mask[0]),
    ]


@pytest.mark.parametrize("case", range(7))
def test_sdpa_matches_torch_with_masks_of_several_shapes(case):
    g = torch.Generator().manual_seed(3)
    name, lead, T, S, mask = _mask_cases(g)[case]
    q, k, v = randn(*lead, T, 5, g=g), randn(*lead, S, 5, g=g), randn(*lead, S, 3, g=g)
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    assert maxdiff(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask)) < TOL, name
    full = mask.expand_as(weights)
    assert float(weights.masked_fill(full, 0.0).abs().max()) == 0.0
    assert torch.allclose(weights.sum(-1), torch.ones((), dtype=f64))
    # the same weights by hand: exp of the allowed scores, renormalised
    e = torch.exp(q @ k.transpose(-2, -1) / math.sqrt(5)) * full
    assert maxdiff(weights, e / e.sum(-1, keepdim=True)) < TOL


def test_is_causal_and_torch_causal_mask_agree_with_ours():
    g = torch.Generator().manual_seed(4)
    q, k, v = randn(2, 5, 4, g=g), randn(2, 5, 4, g=g), randn(2, 5, 4, g=g)
    out, _ = scaled_dot_product_attention(q, k, v, causal_mask(5))
    assert maxdiff(out, F.scaled_dot_product_attention(q, k, v, is_causal=True)) < TOL
    blocked = nn.Transformer.generate_square_subsequent_mask(5) == float("-inf")
    assert torch.equal(causal_mask(5), ~blocked)


def test_fully_masked_queries_get_zero_weights_and_output_without_nan():
    g = torch.Generator().manual_seed(5)
    q, k, v = (randn(2, 3, 4, g=g).requires_grad_() for _ in range(3))
    mask = torch.ones(2, 3, 3, dtype=torch.bool)
    mask[1, 1] = False  # query 1 of example 1 may attend to nothing
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    assert torch.equal(weights[1, 1], torch.zeros(3, dtype=f64))
    assert torch.equal(out[1, 1], torch.zeros(4, dtype=f64))
    out.sum().backward()
    assert all(torch.isfinite(t.grad).all() for t in (q, k, v))
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    ok = mask.any(-1)
    assert maxdiff(out[ok], ref[ok]) < TOL  # the other rows as torch
    if torch.isfinite(ref).all():  # PyTorch >= 2.5 also returns 0 there
        assert maxdiff(out, ref) < TOL


def test_masks_must_be_boolean():
    x = torch.randn(1, 2, 4)
    with pytest.raises(TypeError, match="boolean"):
        scaled_dot_product_attention(x, x, x, torch.ones(2, 2, dtype=torch.long))


def test_dropout_drops_weights_but_returns_them_undropped():
    torch.manual_seed(0)
    x = torch.randn(2, 6, 8, dtype=f64)
    out, weights = scaled_dot_product_attention(x, x, x, dropout_p=0.5)
    plain_out, plain_w = scaled_dot_product_attention(x, x, x)
    assert torch.equal(weights, plain_w)
    assert maxdiff(out, plain_out) > 1e-3


# ---- mask helpers --------------------------------------------------------------------------

def test_padding_mask_against_a_loop():
    lengths = [3, 0, 5, 1]
    mask = padding_mask(torch.tensor(lengths), 6)
    assert mask.dtype == torch.bool and mask.shape == (4, 6)
    for b, n in enumerate(lengths):
        for j in range(6):
            assert bool(mask[b, j]) == (j < n)
    assert padding_mask([2, 4]).shape == (2, 4)  # max_len defaults to the longest


def test_causal_mask_against_a_loop():
    mask = causal_mask(4, 6)
    assert mask.dtype == torch.bool and mask.shape == (4, 6)
    for i in range(4):
        for j in range(6):
            assert bool(mask[i, j]) == (j <= i)


def test_mask_from_torch_flips_polarity_and_shapes():
    kpm = torch.tensor([[False, False, True], [False, True, True]])  # True = padding (torch)
    am = torch.tensor([[False, True, True], [False, False, True]])  # True = blocked (torch)
    allowed = mask_from_torch(kpm, am)
    assert allowed.shape == (2, 1, 2, 3)
    for b in range(2):
        for i in range(2):
            for j in range(3):
                assert bool(allowed[b, 0, i, j]) == (not kpm[b, j] and not am[i, j])
    per_head = torch.rand(2 * 4, 2, 3) < 0.5
    assert torch.equal(mask_from_torch(attn_mask=per_head, num_heads=4),
                       ~per_head.view(2, 4, 2, 3))
    assert mask_from_torch() is None


# ---- multi-head attention ------------------------------------------------------------------

def _pair(E, H, bias=True, batch_first=True, seed=0):
    """nn.MultiheadAttention with random (non-zero) weights and biases, and ours with them."""
    g = torch.Generator().manual_seed(seed)
    ref = nn.MultiheadAttention(E, H, bias=bias, batch_first=batch_first).double()
    with torch.no_grad():
        for p in ref.parameters():
            p.copy_(0.3 * torch.randn(p.shape, generator=g, dtype=f64))
    ours = MultiHeadAttention(E, H, bias=bias, batch_first=batch_first).double()
    return ref, ours.load_from_torch(ref)


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("masks", ["none", "key_padding", "attn_2d", "attn_3d", "both"])
def test_mha_matches_torch(batch_first, masks):
    E, H, B, T, S = 12, 3, 2, 4, 5
    ref, ours = _pair(E, H, batch_first=batch_first, seed=1)
    g = torch.Generator().manual_seed(2)
    query, memory = randn(B, T, E, g=g), randn(B, S, E, g=g)
    if not batch_first:
        query, memory = query.transpose(0, 1), memory.transpose(0, 1)
    kpm = torch.tensor([[False] * S, [False] * 2 + [True] * (S - 2)])
    am2 = torch.rand(T, S, generator=g) < 0.4
    am3 = torch.rand(B * H, T, S, generator=g) < 0.4
    am2[:, 0] = am3[:, :, 0] = False  # keep one key for every query
    torch_kwargs = {"none": {}, "key_padding": dict(key_padding_mask=kpm),
                    "attn_2d": dict(attn_mask=am2), "attn_3d": dict(attn_mask=am3),
                    "both": dict(key_padding_mask=kpm, attn_mask=am2)}[masks]
    mask = mask_from_torch(**torch_kwargs, num_heads=H)
    for average in (True, False):
        want_out, want_w = ref(query, memory, memory, **torch_kwargs,
                               average_attn_weights=average)
        got_out, got_w = ours(query, memory, memory, mask, average_attn_weights=average)
        assert got_out.shape == want_out.shape and got_w.shape == want_w.shape
        assert maxdiff(got_out, want_out) < TOL
        assert maxdiff(got_w, want_w) < TOL
    assert ours(query, memory, memory, mask, need_weights=False)[1] is None


def test_mha_gradients_match_torch():
    ref, ours = _pair(8, 2, seed=3)
    x = torch.randn(2, 5, 8, dtype=f64)
    mask = causal_mask(5)
    ref(x, x, x, attn_mask=~mask)[0].pow(2).sum().backward()
    ours(x, x, x, mask)[0].pow(2).sum().backward()
    ref_params = dict(ref.named_parameters())
    assert max(maxdiff(p.grad, ref_params[n].grad) for n, p in ours.named_parameters()) < TOL


def test_mha_without_bias_and_unbatched():
    ref, ours = _pair(8, 4, bias=False, seed=4)
    assert ours.in_proj_bias is None and ours.out_proj.bias is None
    x = torch.randn(5, 8, dtype=f64)  # unbatched T x E
    want_out, want_w = ref(x, x, x)
    got_out, got_w = ours(x, x, x)
    assert got_out.shape == (5, 8) and got_w.shape == (5, 5)
    assert maxdiff(got_out, want_out) < TOL and maxdiff(got_w, want_w) < TOL


def test_mha_state_dict_names_and_load_state_dict():
    ref = nn.MultiheadAttention(16, 4)
    ours = MultiHeadAttention(16, 4)
    assert {k: v.shape for k, v in ours.state_dict().items()} == \
           {k: v.shape for k, v in ref.state_dict().items()}
    ours.load_state_dict(ref.state_dict())  # directly, without load_from_torch
    x = torch.randn(3, 2, 16)
    assert torch.allclose(ours(x, x, x)[0], ref(x, x, x)[0], atol=1e-6)
    assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in ref.parameters())


def test_mha_rejects_mismatched_or_unsupported_modules():
    with pytest.raises(ValueError, match="size mismatch"):
        MultiHeadAttention(16, 4).load_from_torch(nn.MultiheadAttention(16, 2))
    with pytest.raises(ValueError, match="plain configuration"):
        MultiHeadAttention(16, 4).load_from_torch(nn.MultiheadAttention(16, 4, kdim=8))
    with pytest.raises(ValueError, match="divisible"):
        MultiHeadAttention(10, 4)


def test_split_and_merge_heads():
    x = torch.randn(2, 5, 12)
    parts = split_heads(x, 3)
    assert parts.shape == (2, 3, 5, 4)
    for h in range(3):  # head h holds the contiguous block of features h*4 .. h*4+3
        assert torch.equal(parts[:, h], x[..., 4 * h:4 * (h + 1)])
    assert torch.equal(merge_heads(parts), x)


# ---- additive attention, softmax Jacobian, the tiny LM -------------------------------------

def test_additive_attention_against_a_loop():
    torch.manual_seed(0)
    att = AdditiveAttention(query_size=6, key_size=4, hidden_size=5).double()
    q, k, v = torch.randn(2, 3, 6, dtype=f64), torch.randn(2, 7, 4, dtype=f64), \
        torch.randn(2, 7, 2, dtype=f64)
    mask = padding_mask([7, 4], 7)[:, None, :]
    with torch.no_grad():
        out, weights = att(q, k, v, mask)
    assert out.shape == (2, 3, 2) and weights.shape == (2, 3, 7)
    assert torch.allclose(weights.sum(-1), torch.ones((), dtype=f64))
    assert float(weights[1, :, 4:].abs().max()) == 0.0
    scores = torch.empty(2, 3, 7, dtype=f64)
    for b in range(2):
        for i in range(3):
            for j in range(7):
                hidden = att.W_q.weight @ q[b, i] + att.W_k.weight @ k[b, j]
                scores[b, i, j] = att.w.weight[0] @ torch.tanh(hidden)
    ref_w = F.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    assert maxdiff(weights, ref_w) < TOL
    assert maxdiff(out, ref_w @ v) < TOL


def test_masked_softmax_rows():
    scores = torch.randn(3, 4, dtype=f64)
    mask = torch.tensor([[True, False, True, False], [False] * 4, [True] * 4])
    w = masked_softmax(scores, mask)
    assert torch.equal(w[1], torch.zeros(4, dtype=f64))
    assert maxdiff(w[2], scores[2].softmax(-1)) < TOL
    assert maxdiff(w[0, [0, 2]], scores[0, [0, 2]].softmax(-1)) < TOL


def test_softmax_jacobian_matches_autograd():
    z = torch.randn(6, dtype=f64)
    J = torch.autograd.functional.jacobian(lambda t: t.softmax(-1), z)
    assert maxdiff(softmax_jacobian(z), J) < TOL
    batch = torch.randn(3, 5, dtype=f64)
    for i in range(3):
        J = torch.autograd.functional.jacobian(lambda t: t.softmax(-1), batch[i])
        assert maxdiff(softmax_jacobian(batch)[i], J) < TOL


def test_attention_lm_is_causal_and_returns_attentions():
    torch.manual_seed(0)
    model = AttentionLM(vocab_size=11, embed_dim=16, num_heads=4, max_len=8).double().eval()
    x = torch.randint(11, (2, 8))
    logits, state = model(x)
    assert logits.shape == (2, 8, 11) and state is None
    changed = x.clone()
    changed[:, 5] = (changed[:, 5] + 1) % 11
    assert maxdiff(model(changed)[0][:, :5], logits[:, :5]) == 0.0  # the future cannot leak
    assert maxdiff(model(changed)[0][:, 5:], logits[:, 5:]) > 0
    (weights,) = model.attentions(x)
    assert weights.shape == (2, 4, 8, 8)
    assert float(weights.triu(1).abs().max()) == 0.0
    assert torch.allclose(weights.sum(-1), torch.ones((), dtype=f64))

"""Lab 05 checks: each accepts the right answer and names the usual mistakes."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from lmcourse.checks import CheckFailed
from lmcourse.checks import attention as check


def fails_with(fn, *args, hint: str) -> str:
    with pytest.raises(CheckFailed) as info:
        fn(*args)
    assert hint in str(info.value), str(info.value)
    return str(info.value)


def stub(*_args, **_kwargs):
    raise NotImplementedError


# ---- the lab's solution (the same code as labs/solutions/05_attention.py) ------

def make_attention(scale="sqrt", axis=-1, mask_mode="before", fill=float("-inf"),
                   transpose="last"):
    def attention(q, k, v, mask=None):
        d = q.shape[-1]
        kt = {"last": k.transpose(-2, -1), "T": k.T if k.dim() == 2 else k.permute(
            *range(k.dim() - 1, -1, -1)), "12": k.transpose(1, 2)}[transpose]
        scores = q @ kt
        scores = {"sqrt": scores / math.sqrt(d), "none": scores, "d": scores / d,
                  "times": scores * math.sqrt(d)}[scale]
        if mask is not None and mask_mode == "before":
            scores = scores.masked_fill(~mask, fill)
        if mask is not None and mask_mode == "flipped":
            scores = scores.masked_fill(mask, fill)
        weights = torch.softmax(scores, dim=axis)
        if mask is not None and mask_mode == "after":
            weights = weights * mask
        return weights @ v, weights
    return attention


attention = make_attention()


def padding_mask(lengths, max_len):
    return torch.arange(max_len)[None, :] < lengths[:, None]


def causal_mask(T):
    return torch.ones(T, T, dtype=torch.bool).tril()


def split_heads(x, num_heads):
    B, T, E = x.shape
    return x.view(B, T, num_heads, E // num_heads).transpose(1, 2)


def merge_heads(x):
    B, H, T, D = x.shape
    return x.transpose(1, 2).reshape(B, T, H * D)


def make_mha(scale_embed=False, out_proj=True, transpose_w=True, split=split_heads,
             average=False):
    class MultiHeadAttention(nn.Module):
        def __init__(self, embed_dim, num_heads):
            super().__init__()
            self.embed_dim, self.num_heads = embed_dim, num_heads
            self.in_proj_weight = nn.Parameter(torch.empty(3 * embed_dim, embed_dim))
            self.in_proj_bias = nn.Parameter(torch.zeros(3 * embed_dim))
            self.out_proj = nn.Linear(embed_dim, embed_dim)
            nn.init.xavier_uniform_(self.in_proj_weight)

        def forward(self, query, key, value, mask=None):
            Ws, bs = self.in_proj_weight.chunk(3), self.in_proj_bias.chunk(3)
            q, k, v = (split(x @ (W.T if transpose_w else W) + b, self.num_heads)
                       for x, W, b in zip((query, key, value), Ws, bs, strict=True))
            if scale_embed:  # scores scaled by 1/sqrt(E) instead of 1/sqrt(E/h)
                q = q * math.sqrt(q.shape[-1]) / math.sqrt(self.embed_dim)
            heads, weights = attention(q, k, v, mask)
            merged = merge_heads(heads)
            out = self.out_proj(merged) if out_proj else merged
            return out, weights.mean(1) if average else weights
    return MultiHeadAttention


MultiHeadAttention = make_mha()


def causal_self_attention(mha, x):
    return mha(x, x, x, causal_mask(x.shape[1]))[0]


# ---- exercise 1: attention -----------------------------------------------------------------

def test_attention_accepts_the_solution_and_torch(capsys):
    check.attention(attention)
    check.attention(lambda q, k, v, mask=None: (
        F.scaled_dot_product_attention(q, k, v),
        torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), -1)))
    assert capsys.readouterr().out.count("attention: passed") == 2


@pytest.mark.parametrize("kwargs, hint", [
    (dict(scale="none"), "the 1/√d scale is missing"),
    (dict(scale="d"), "you divided the scores by d = 16; divide by √d"),
    (dict(scale="times"), "you multiplied the scores by √d"),
    (dict(axis=-2), "softmax over the wrong axis"),
    (dict(axis=-2, scale="none"), "softmax over the wrong axis (dim=-1, the keys) and the 1/√d"),
    (dict(axis=0), "dim=0 is the batch"),
    (dict(transpose="T"), "k.T, which reverses ALL axes"),
    (dict(transpose="12"), "Count those axes from the end"),
])
def test_attention_rejects_typical_mistakes(kwargs, hint):
    fails_with(check.attention, make_attention(**kwargs), hint=hint)


def test_attention_rejects_other_wrong_returns():
    fails_with(check.attention, lambda q, k, v, mask=None: attention(q, k, v)[0],
               hint="return a pair of tensors (output, weights)")
    fails_with(check.attention,
               lambda q, k, v, mask=None: (attention(q, k, v)[1] @ k, attention(q, k, v)[1]),
               hint="multiply the weights by v")
    fails_with(check.attention, lambda q, k, v, mask=None: (
        attention(q, k, v)[0], q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])),
        hint="the weights are the scores before the softmax")
    fails_with(check.attention, stub, hint="not implemented yet")


# ---- exercise 2: masks ---------------------------------------------------------------------

def test_masks_accept_the_solution(capsys):
    check.masks(padding_mask, causal_mask)
    assert "masks: passed" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, hint", [
    (lambda lengths, max_len: torch.arange(max_len)[None] >= lengths[:, None],
     "True must mark the REAL tokens"),
    (lambda lengths, max_len: torch.arange(max_len)[None] <= lengths[:, None], "off by one"),
    (lambda lengths, max_len: (torch.arange(max_len)[None] < lengths[:, None]).long(),
     "return a boolean tensor"),
    (lambda lengths, max_len: torch.arange(max_len)[None] < lengths[None, :],
     "compare a row of positions"),
])
def test_padding_mask_rejects_typical_mistakes(wrong, hint):
    fails_with(check.masks, wrong, causal_mask, hint=hint)


@pytest.mark.parametrize("wrong, hint", [
    (lambda T: torch.ones(T, T, dtype=torch.bool).triu(), "this is the upper triangle"),
    (lambda T: torch.ones(T, T, dtype=torch.bool).triu(1), "yours marks the future as True"),
    (lambda T: torch.ones(T, T, dtype=torch.bool).tril(-1), "the diagonal must be True"),
    (lambda T: torch.ones(T, T).tril(), "return a boolean tensor"),
])
def test_causal_mask_rejects_typical_mistakes(wrong, hint):
    fails_with(check.masks, padding_mask, wrong, hint=hint)


def test_masks_not_implemented():
    fails_with(check.masks, stub, causal_mask, hint="not implemented yet")
    fails_with(check.masks, padding_mask, stub, hint="not implemented yet")


# ---- exercise 3: masked attention ----------------------------------------------------------

def test_masked_attention_accepts_the_solution_and_a_large_negative_fill(capsys):
    check.masked_attention(attention)
    check.masked_attention(make_attention(fill=-1e9))
    assert capsys.readouterr().out.count("masked attention: passed") == 2


@pytest.mark.parametrize("kwargs, hint", [
    (dict(mask_mode="after"), "the mask was applied after the softmax"),
    (dict(mask_mode="flipped"), "mask polarity: True means attention is ALLOWED"),
    (dict(mask_mode="ignored"), "the mask had no effect"),
    (dict(fill=0.0), "exp(0) = 1 still gives those keys weight"),
])
def test_masked_attention_rejects_typical_mistakes(kwargs, hint):
    fails_with(check.masked_attention, make_attention(**kwargs), hint=hint)


def test_masked_attention_needs_exercise_1_first():
    fails_with(check.masked_attention, make_attention(scale="none"),
               hint="pass exercise 1 first")
    fails_with(check.masked_attention, stub, hint="not implemented yet")


def test_masked_attention_rejects_multiplying_scores_by_the_mask():
    def times_mask(q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores * mask
        weights = scores.softmax(-1)
        return weights @ v, weights
    fails_with(check.masked_attention, times_mask, hint="exp(0) = 1 still gives")


# ---- exercise 4: heads ---------------------------------------------------------------------

def test_heads_accept_the_solution(capsys):
    check.heads(split_heads, merge_heads)
    assert "heads: passed" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, hint", [
    (lambda x, h: x.reshape(x.shape[0], h, x.shape[1], -1),
     "you reshaped straight to (B, heads, T, E/heads)"),
    (lambda x, h: x.view(*x.shape[:2], h, -1), "T and heads axes still have to be swapped"),
    (lambda x, h: x.view(*x.shape[:2], -1, h).permute(0, 3, 1, 2),
     "each head must take a contiguous block"),
    (lambda x, h: x.view(2, 5, h, -1).transpose(1, 2), "do not hard-code sizes"),
])
def test_split_heads_rejects_typical_mistakes(wrong, hint):
    fails_with(check.heads, wrong, merge_heads, hint=hint)


@pytest.mark.parametrize("wrong, hint", [
    (lambda x: x.reshape(x.shape[0], x.shape[2], -1), "first swap the heads and T axes back"),
    (lambda x: x.transpose(1, 2).view(x.shape[0], x.shape[2], -1), "not contiguous"),
    (lambda x: x.permute(0, 2, 3, 1).reshape(x.shape[0], x.shape[2], -1),
     "the heads come out interleaved"),
    (lambda x: x.transpose(1, 2), "merge_heads should return B x T x heads*D"),
])
def test_merge_heads_rejects_typical_mistakes(wrong, hint):
    fails_with(check.heads, split_heads, wrong, hint=hint)


# ---- exercise 5: multi-head attention ------------------------------------------------------

def test_mha_accepts_the_solution_and_ours(capsys):
    check.multi_head_attention(MultiHeadAttention)
    check.multi_head_attention(_OursPerHead)
    assert capsys.readouterr().out.count("multi-head attention: passed") == 2


class _OursPerHead(nn.Module):
    """The package's module, adapted to the lab's call (per-head weights returned)."""

    def __init__(self, E, H):
        super().__init__()
        from lmcourse.models.attention import MultiHeadAttention as Ours
        self.inner = Ours(E, H, batch_first=True)

    def state_dict(self, *args, **kwargs):
        return self.inner.state_dict(*args, **kwargs)

    def load_state_dict(self, state, strict=True, assign=False):
        return self.inner.load_state_dict(state, strict, assign)

    def forward(self, query, key, value, mask=None):
        return self.inner(query, key, value, mask, average_attn_weights=False)


@pytest.mark.parametrize("kwargs, hint", [
    (dict(scale_embed=True), "scaled by 1/√(E/heads)"),
    (dict(out_proj=False), "the output projection is missing"),
    (dict(transpose_w=False), "weight as (out, in)"),
    (dict(split=lambda x, h: x.reshape(x.shape[0], h, x.shape[1], -1)),
     "without the transpose"),
    (dict(average=True), "don't average them"),
])
def test_mha_rejects_typical_mistakes(kwargs, hint):
    fails_with(check.multi_head_attention, make_mha(**kwargs), hint=hint)


def test_mha_rejects_missing_biases_and_swapped_projections():
    class NoBias(MultiHeadAttention):
        def forward(self, query, key, value, mask=None):
            with torch.no_grad():
                saved = self.in_proj_bias.clone()
                self.in_proj_bias.zero_()
            try:
                return super().forward(query, key, value, mask)
            finally:
                with torch.no_grad():
                    self.in_proj_bias.copy_(saved)

    class Swapped(MultiHeadAttention):
        def forward(self, query, key, value, mask=None):
            W_q, W_k, W_v = self.in_proj_weight.chunk(3)
            b_q, b_k, b_v = self.in_proj_bias.chunk(3)
            q = split_heads(F.linear(query, W_k, b_k), self.num_heads)
            k = split_heads(F.linear(key, W_q, b_q), self.num_heads)
            v = split_heads(F.linear(value, W_v, b_v), self.num_heads)
            heads, weights = attention(q, k, v, mask)
            return self.out_proj(merge_heads(heads)), weights

    fails_with(check.multi_head_attention, NoBias, hint="in_proj_bias) are missing")
    fails_with(check.multi_head_attention, Swapped, hint="order queries, keys, values")


def test_mha_not_implemented():
    class Stub(MultiHeadAttention):
        def forward(self, *args):
            raise NotImplementedError
    fails_with(check.multi_head_attention, Stub, hint="not implemented yet")


# ---- exercise 6: causal self-attention -----------------------------------------------------

def test_causal_self_attention_accepts_the_solution(capsys):
    check.causal_self_attention(causal_self_attention, MultiHeadAttention)
    assert "causal self-attention: passed" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, hint", [
    (lambda mha, x: mha(x, x, x)[0], "the future leaks"),
    (lambda mha, x: mha(x, x, x, causal_mask(x.shape[1]).T)[0], "the future leaks"),
    (lambda mha, x: mha(x, x, x, torch.ones(x.shape[1], x.shape[1], dtype=torch.bool)
                        .tril(-1))[0], "The diagonal of the causal mask must be True"),
    (lambda mha, x: mha(x, x, x, causal_mask(x.shape[1]))[0] * 2, "differs from "
                                                                  "nn.MultiheadAttention"),
    (stub, "not implemented yet"),
])
def test_causal_self_attention_rejects_typical_mistakes(wrong, hint):
    fails_with(check.causal_self_attention, wrong, MultiHeadAttention, hint=hint)

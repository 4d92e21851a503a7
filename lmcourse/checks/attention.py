"""Auto-checks for scaled dot-product attention, masks and multi-head attention.

Every check computes the right answer itself, with :mod:`lmcourse.models.attention` or
``torch.nn.MultiheadAttention`` in float64, and when the student's answer differs it
compares it with the answers of the usual mistakes (a missing or wrong scale, softmax
over the wrong axis, a mask applied after the softmax or with the wrong polarity, heads
split without a transpose, ...) to say which one it is.

Conventions of the lab: row vectors (``q`` is ``... x T x d``), boolean masks with
``True`` = attention allowed, ``batch_first`` multi-head attention whose ``forward``
returns ``(output, per-head weights B x heads x T x S)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from lmcourse.checks import attempt, earlier, expect, fail, passed, requires, run_student, same
from lmcourse.checks.mha_variants import MHA_MISTAKES, mha_variant, torch_mha
from lmcourse.models import attention as reference

__all__ = ["attention", "causal_self_attention", "heads", "masked_attention", "masks",
           "multi_head_attention"]

_TOL = 1e-8


def _randn(*shape: int, g: torch.Generator) -> torch.Tensor:
    return torch.randn(*shape, generator=g, dtype=torch.float64)


def _pair(name: str, result: Any) -> tuple[torch.Tensor, torch.Tensor]:
    expect(isinstance(result, tuple | list) and len(result) == 2
           and all(isinstance(r, torch.Tensor) for r in result), name,
           f"return a pair of tensors (output, weights), got {type(result).__name__}")
    return result[0], result[1]


def _softmax_variants(q: torch.Tensor, k: torch.Tensor, mask: torch.Tensor | None
                      ) -> list[tuple[torch.Tensor, str]]:
    """Attention weights of the usual mistakes about scale, axis and mask, with hints."""
    d = q.shape[-1]
    raw = q @ k.transpose(-2, -1)
    scaled = raw / math.sqrt(d)
    out = [
        (raw.softmax(-1), f"the 1/√d scale is missing: divide the scores q kᵀ by √d (d is "
                          f"the size of the query vectors, here {d}) before the softmax."),
        ((raw / d).softmax(-1), f"you divided the scores by d = {d}; divide by √d = "
                                f"{math.sqrt(d):g}: the variance of q·k is d, so its standard "
                                "deviation is √d."),
        ((raw * math.sqrt(d)).softmax(-1), "you multiplied the scores by √d; divide by it."),
        (scaled.softmax(-2), "softmax over the wrong axis: the weights of one query over "
                             "the keys must sum to 1, so take the softmax over the last axis "
                             "(dim=-1), the keys; yours sum to 1 over the queries."),
        (raw.softmax(-2), "softmax over the wrong axis (dim=-1, the keys) and the 1/√d scale "
                          "is missing."),
        (scaled, "the weights are the scores before the softmax: take the softmax over the "
                 "keys (the last axis) and return its result."),
    ]
    if q.dim() > 2:
        out.append((scaled.softmax(0), "softmax over the wrong axis: dim=0 is the batch; "
                                       "use dim=-1 (the keys)."))
    if mask is not None:
        allowed = mask.expand_as(raw)
        after = scaled.softmax(-1) * allowed
        out += [
            (scaled.softmax(-1), "the mask had no effect: before the softmax, the scores "
                                 "where the mask is False must become -inf."),
            (scaled.masked_fill(allowed, float("-inf")).softmax(-1),
             "mask polarity: True means attention is ALLOWED (PyTorch's convention); you "
             "blocked the allowed positions. Fill the scores where the mask is False, not "
             "where it is True."),
            (after, "the mask was applied after the softmax: the remaining weights no "
                    "longer sum to 1. Mask the scores (with -inf) before the softmax."),
            (scaled.softmax(-1).masked_fill(allowed, 0.0),
             "the mask was applied after the softmax, and with the wrong polarity (True = "
             "allowed). Set the scores to -inf where the mask is False, before the "
             "softmax."),
            (scaled.masked_fill(~allowed, 0.0).softmax(-1),  # = the scores times the mask
             "masked scores were set to 0 (filled with 0, or multiplied by the mask), but "
             "exp(0) = 1 still gives those keys weight: fill them with -inf instead, so "
             "that their weight is exactly 0."),
        ]
    return out


def _diagnose(name: str, got_out: torch.Tensor, got_w: torch.Tensor, q: torch.Tensor,
              k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None,
              want_out: torch.Tensor, want_w: torch.Tensor, what: str) -> None:
    expect(got_w.shape == want_w.shape, name,
           f"{what}: the weights should be ... x T x S = {tuple(want_w.shape)} (one row per "
           f"query, one column per key), got {tuple(got_w.shape)}")
    expect(got_out.shape == want_out.shape, name,
           f"{what}: the output should be ... x T x d_v = {tuple(want_out.shape)}, got "
           f"{tuple(got_out.shape)}; multiply the weights by v (a matrix product).")
    for wrong, hint in _softmax_variants(q, k, mask):
        if same(got_w, wrong):
            fail(name, f"{what}: {hint}")
    if same(got_w, want_w):
        fail(name, f"{what}: the weights are right but the output is not the weights times v "
                   f"(max difference {float((got_out.double() - want_out).abs().max()):.3g}).")
    sums = got_w.double().sum(-1)
    expect(torch.allclose(sums, want_w.sum(-1), atol=1e-6), name,
           f"{what}: each query's weights should sum to 1 over the keys; yours sum to values "
           f"between {float(sums.min()):.3g} and {float(sums.max()):.3g}.")
    fail(name, f"{what}: the weights differ from softmax(q kᵀ / √d) by up to "
               f"{float((got_w.double() - want_w).abs().max()):.3g}, and match none of the "
               "usual mistakes. Check in order: the scores q kᵀ (k's last two axes swapped), "
               "the scale, where the mask enters (before the softmax), the softmax's axis.")


_SHAPE_HINT = ("q is ... x T x d and k is ... x S x d: the scores are q times k with its LAST "
               "TWO axes swapped, ... x T x S. Count those axes from the end (not k.T, which "
               "reverses ALL axes, nor axes 1 and 2, which are the last two only for 3-d "
               "inputs) so it works with any leading batch and head axes.")


def _attention_cases(g: torch.Generator) -> list[tuple[str, tuple[torch.Tensor, ...]]]:
    return [
        ("a batch (2 x 3 queries, 5 keys, d = 16)",
         (_randn(2, 3, 16, g=g), _randn(2, 5, 16, g=g), _randn(2, 5, 4, g=g))),
        ("batch and heads (2 x 2 x 3 queries, 5 keys, d = 9)",
         (_randn(2, 2, 3, 9, g=g), _randn(2, 2, 5, 9, g=g), _randn(2, 2, 5, 7, g=g))),
    ]


def attention(student: Callable[..., Any]) -> None:
    """Exercise 1: ``attention`` returns ``(softmax(q kᵀ/√d) v, weights)``, without a mask."""
    name = "attention"
    g = torch.Generator().manual_seed(0)
    worst = 0.0
    for what, (q, k, v) in _attention_cases(g):
        got_out, got_w = _pair(name, run_student(name, student, q, k, v, shape_hint=_SHAPE_HINT))
        want_out, want_w = reference.scaled_dot_product_attention(q, k, v)
        if not (same(got_out, want_out) and same(got_w, want_w)):
            _diagnose(name, got_out, got_w, q, k, v, None, want_out, want_w, what)
        worst = max(worst, float((got_out.double() - want_out).abs().max()))
    ref = F.scaled_dot_product_attention(q, k, v)
    passed(name, f"2 cases; max |yours - torch F.scaled_dot_product_attention| = "
                 f"{float((got_out.double() - ref).abs().max()):.1e}, max |yours - reference|"
                 f" = {worst:.1e} (tolerance {_TOL:.0e})")


def _wrong_cells(got: torch.Tensor, want: torch.Tensor, rows: int = 3) -> str:
    """Where two masks of one shape differ, by row and how many cells (not which: that
    would be the answer): ``"row 0 (1 cell)"``."""
    parts = [f"row {r} ({n} cell{'s' * (n > 1)})" for r in range(len(got))
             if (n := int((got[r] != want[r]).sum()))]
    return ", ".join(parts[:rows]) + (" (and more)" if len(parts) > rows else "")


def masks(student_padding: Callable[..., Any] | None,
          student_causal: Callable[..., Any] | None) -> None:
    """Exercise 2: ``padding_mask(lengths, max_len)`` (B x max_len) and ``causal_mask(T)``
    (a later check that runs only one of them passes None for the other)."""
    name = "padding_mask"
    for lengths, max_len in () if student_padding is None else (([3, 1, 4], 5), ([2, 6], 6)):
        lengths = torch.tensor(lengths)
        got = run_student(name, student_padding, lengths, max_len,
                    shape_hint="compare a row of positions 0 .. max_len - 1 with a column of "
                               "lengths (a trailing axis of size 1): broadcasting gives "
                               "batch x max_len.")
        want = reference.padding_mask(lengths, max_len)
        expect(isinstance(got, torch.Tensor), name,
               f"return a tensor, got {type(got).__name__}")
        expect(got.shape == want.shape, name,
               f"for lengths {lengths.tolist()} and max_len {max_len} the mask is "
               f"batch x max_len = {tuple(want.shape)}, got {tuple(got.shape)}")
        expect(got.dtype == torch.bool, name,
               f"return a boolean tensor (got {got.dtype}): a comparison such as "
               "positions < lengths gives one, and masked_fill needs booleans.")
        if torch.equal(got, want):
            continue
        expect(not torch.equal(got, ~want), name,
               "polarity: True must mark the REAL tokens (attention allowed) and False the "
               "padding; yours is the other way round.")
        positions = torch.arange(max_len)
        expect(not torch.equal(got, positions[None] <= lengths[:, None]), name,
               "off by one: position lengths[b] is already padding (positions 0 .. "
               "lengths[b] - 1 are real): use <, not <=.")
        fail(name, f"for lengths {lengths.tolist()} and max_len {max_len} yours is\n"
                   f"{got.int()}\nwhich is wrong in {_wrong_cells(got, want)}: row b is True "
                   "at the positions of its real tokens, 0 .. lengths[b] - 1, and False at "
                   "the padding after them.")
    name = "causal_mask"
    for T in () if student_causal is None else (4, 1):
        got = run_student(name, student_causal, T)
        want = reference.causal_mask(T)
        expect(isinstance(got, torch.Tensor) and got.shape == want.shape, name,
               f"causal_mask({T}) should be a {T} x {T} tensor, got "
               f"{tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__}")
        expect(got.dtype == torch.bool, name,
               f"return a boolean tensor (got {got.dtype}): build the triangle from a matrix "
               "of dtype torch.bool, not of numbers.")
        if torch.equal(got, want):
            continue
        ones = torch.ones(T, T, dtype=torch.bool)
        expect(not torch.equal(got, ones.triu()), name,
               "this is the upper triangle: query i may then see keys j >= i, the future. "
               "A query may attend to keys j <= i: the LOWER triangle (torch.tril).")
        expect(not torch.equal(got, ~want), name,
               "polarity: True = allowed, so the allowed keys j <= i are True; yours marks "
               "the future as True.")
        expect(not torch.equal(got, ones.tril(-1)), name,
               "the diagonal must be True: a token may attend to itself (otherwise the first "
               "token has nothing to attend to).")
        fail(name, f"causal_mask({T}): yours is\n{got.int()}\nwhich is wrong in "
                   f"{_wrong_cells(got, want)}: row i (query i) is True at the keys it may "
                   "attend to, j <= i, and False at the later ones.")
    passed("masks", "padding_mask on 2 batches, causal_mask for T = 4 and T = 1 match the "
                    "reference exactly")


def masked_attention(student: Callable[..., Any]) -> None:
    """Exercise 3: ``attention`` with a mask, a padding mask and a causal mask."""
    name = "masked attention"
    requires(name, 1, attention, student)
    g = torch.Generator().manual_seed(1)
    q0, k0, v0 = _randn(2, 3, 8, g=g), _randn(2, 5, 8, g=g), _randn(2, 5, 3, g=g)
    x = _randn(1, 4, 8, g=g)
    cases = [
        ("padding mask (B x 1 x S, lengths 5 and 3)",
         (q0, k0, v0, reference.padding_mask(torch.tensor([5, 3]), 5)[:, None, :])),
        ("causal mask (4 x 4, self-attention)", (x, x, x, reference.causal_mask(4))),
        ("padding mask for 2 heads (B x 1 x 1 x S, lengths 2 and 5)",
         (_randn(2, 2, 3, 6, g=g), _randn(2, 2, 5, 6, g=g), _randn(2, 2, 5, 2, g=g),
          reference.padding_mask(torch.tensor([2, 5]), 5)[:, None, None, :])),
    ]
    worst = 0.0
    for what, (q, k, v, mask) in cases:
        got_out, got_w = _pair(name, run_student(name, student, q, k, v, mask,
                                           shape_hint="the mask broadcasts against the T x S "
                                                      "scores as it comes: fill the scores "
                                                      "where it is False, without reshaping "
                                                      "it."))
        want_out, want_w = reference.scaled_dot_product_attention(q, k, v, mask)
        if bool(torch.isnan(got_w).any()):
            flipped = reference.attention_scores(q, k).masked_fill(
                mask, float("-inf")).softmax(-1)
            expect(not torch.allclose(got_w.double(), flipped, equal_nan=True), name,
                   f"{what}: mask polarity: True means attention is ALLOWED (PyTorch's "
                   "convention); you blocked the allowed positions (a query whose keys are "
                   "all real then has nothing left: NaN). Fill the scores where the mask is "
                   "False, not where it is True.")
            fail(name, f"{what}: your weights contain NaN: some query had all its keys "
                       "filled with -inf. True = allowed: fill where the mask is False.")
        if not (same(got_out, want_out) and same(got_w, want_w)):
            _diagnose(name, got_out, got_w, q, k, v, mask, want_out, want_w, what)
        worst = max(worst, float((got_out.double() - want_out).abs().max()))
        ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        worst = max(worst, float((got_out.double() - ref).abs().max()))
    passed(name, f"padding and causal masks, 3 cases; max |yours - torch| = {worst:.1e} "
                 f"(tolerance {_TOL:.0e}); masked keys get weight exactly "
                 f"{float(got_w.masked_select(~mask.expand_as(got_w)).abs().max()):g}")


def heads(student_split: Callable[..., Any], student_merge: Callable[..., Any]) -> None:
    """Exercise 4: ``split_heads(x, num_heads)`` and ``merge_heads(x)``."""
    g = torch.Generator().manual_seed(2)
    B, T, E, H = 2, 5, 12, 3
    D = E // H
    x = _randn(B, T, E, g=g)
    name = "split_heads"
    got = run_student(name, student_split, x, H)
    want = reference.split_heads(x, H)
    expect(isinstance(got, torch.Tensor), name, f"return a tensor, got {type(got).__name__}")
    if not same(got, want, 0.0):
        expect(not (got.shape == (B, T, H, D) and same(got, x.view(B, T, H, D), 0.0)), name,
               f"split_heads should return B x heads x T x E/heads = {(B, H, T, D)}, got "
               f"{tuple(got.shape)}: after regrouping the features, the T and heads axes "
               "still have to be swapped.")
        expect(not same(got, x.reshape(B, H, T, D), 0.0), name,
               "you reshaped straight to (B, heads, T, E/heads). That cuts the memory of "
               "each sequence into chunks that mix positions. Regroup the last axis into "
               "(heads, E/heads) first, then swap the T and heads axes.")
        expect(not same(got, x.view(B, T, D, H).permute(0, 3, 1, 2), 0.0), name,
               "each head must take a contiguous block of E/heads features (head h: "
               "features h*E/heads .. (h+1)*E/heads - 1, as in nn.MultiheadAttention); yours "
               "takes every heads-th feature. Regroup the last axis as (heads, E/heads), "
               "in that order.")
        expect(got.shape == want.shape, name,
               f"split_heads should return B x heads x T x E/heads = {tuple(want.shape)}, got "
               f"{tuple(got.shape)}")
        fail(name, "the shape is right but the values are not x with its last axis regrouped "
                   "into (heads, E/heads) and the T and heads axes swapped.")
    name = "merge_heads"
    parts = reference.split_heads(x, H).contiguous()  # as attention returns it
    got = run_student(name, student_merge, parts)
    if not same(got, x, 0.0):
        expect(isinstance(got, torch.Tensor), name, f"return a tensor, got {type(got).__name__}")
        expect(not same(got, parts.reshape(B, T, E), 0.0), name,
               "you reshaped B x heads x T x D straight to B x T x E, which mixes positions: "
               "first swap the heads and T axes back (B x T x heads x D), then flatten the "
               "last two axes.")
        expect(not same(got, parts.permute(0, 2, 3, 1).reshape(B, T, E), 0.0), name,
               "the heads come out interleaved: after swapping the axes back the tensor is "
               "B x T x heads x D; flatten its last two axes in that order.")
        expect(got.shape == x.shape, name,
               f"merge_heads should return B x T x heads*D = {tuple(x.shape)}, got "
               f"{tuple(got.shape)}")
        fail(name, "merge_heads(split_heads(x)) should give x back exactly.")
    for y, what in ((x.transpose(0, 1).contiguous(), "a 5 x 2 x 12 input"),
                    (_randn(1, 1, 8, g=g), "a 1 x 1 x 8 input")):
        back = run_student(name, student_merge, run_student("split_heads", student_split, y, 2))
        expect(same(back, y, 0.0), name,
               f"merge_heads(split_heads(x, 2)) does not give x back for {what}; do not "
               "hard-code sizes, read them from x.shape.")
    passed("heads", f"split {tuple(x.shape)} into {tuple(want.shape)} and back, exactly")


# ---- multi-head attention -----------------------------------------------------------------

def _needs_earlier(name: str, student_cls: type) -> None:
    """Exercises 1, 3 and 4 first: the checks of the attention and the head functions that
    ``student_cls`` calls (those it can see where it was defined)."""
    att = earlier(student_cls, "attention")
    if callable(att):
        requires(name, 1, attention, att)
        requires(name, 3, masked_attention, att)
    split, merge = earlier(student_cls, "split_heads"), earlier(student_cls, "merge_heads")
    if callable(split) and callable(merge):
        requires(name, 4, heads, split, merge)


def multi_head_attention(student_cls: type) -> None:
    """Exercise 5: ``MultiHeadAttention(E, H)`` with ``nn.MultiheadAttention``'s parameters;
    ``forward(query, key, value, mask=None)`` returns ``(output, per-head weights)``."""
    name = "multi-head attention"
    _needs_earlier(name, student_cls)
    E, H = 12, 3
    ref = torch_mha(E, H, seed=3)
    ours = attempt(name, student_cls, E, H)
    ours = ours.double()
    try:
        ours.load_state_dict(ref.state_dict())
    except RuntimeError as err:
        fail(name, f"cannot load nn.MultiheadAttention's weights ({str(err).splitlines()[0]}):"
                   " keep the parameter names and shapes of the given __init__.")
    g = torch.Generator().manual_seed(4)
    query, memory = _randn(2, 4, E, g=g), _randn(2, 6, E, g=g)
    allowed = reference.padding_mask(torch.tensor([6, 4]), 6)[:, None, None, :]
    cases = [("cross-attention, no mask", (query, memory, memory, None), {}),
             ("cross-attention with a padding mask", (query, memory, memory, allowed),
              dict(key_padding_mask=~allowed[:, 0, 0, :]))]
    worst = 0.0
    for what, args, torch_masks in cases:
        result = run_student(name, ours, *args,
                       shape_hint="inputs are batch-first (B x T x E); project, split the "
                                  "heads, attend, merge, project.")
        got_out, got_w = _pair(name, result)
        want_out, want_w = ref(*args[:3], **torch_masks, average_attn_weights=False)
        want_out, want_w = want_out.detach(), want_w.detach()
        if same(got_out, want_out) and same(got_w, want_w):
            worst = max(worst, float((got_out.double() - want_out).abs().max()))
            continue
        expect(got_w.shape == want_w.shape, name,
               f"{what}: return the weights of every head, B x heads x T x S = "
               f"{tuple(want_w.shape)}, got {tuple(got_w.shape)} (don't average them).")
        expect(got_out.shape == want_out.shape, name,
               f"{what}: the output should be B x T x E = {tuple(want_out.shape)}, got "
               f"{tuple(got_out.shape)}")
        for knobs, hint in MHA_MISTAKES:
            wrong_out, wrong_w = mha_variant(ref, *args, **knobs)
            if same(got_out, wrong_out.detach()):
                fail(name, f"{what}: {hint}")
        if same(got_w, want_w):
            fail(name, f"{what}: the weights are right but the output is not: merge the "
                       "heads back to B x T x E and apply out_proj.")
        fail(name, f"{what}: your output differs from nn.MultiheadAttention's by up to "
                   f"{float((got_out.double() - want_out).abs().max()):.3g}, and matches none "
                   "of the usual mistakes. Check in order: the three projections (in_proj's "
                   "rows q, k, v), the head split, the mask's shape, out_proj.")
    passed(name, f"E = {E}, {H} heads, with and without a padding mask: max |yours - "
                 f"nn.MultiheadAttention| = {worst:.1e} (tolerance {_TOL:.0e})")


def causal_self_attention(student: Callable[..., Any], student_cls: type) -> None:
    """Exercise 6: ``causal_self_attention(mha, x)``: no position sees the tokens after it."""
    name = "causal self-attention"
    requires(name, 5, multi_head_attention, student_cls)
    padding, causal = earlier(student, "padding_mask"), earlier(student, "causal_mask")
    if callable(padding) or callable(causal):  # the half of exercise 2 that it calls
        requires(name, 2, masks, padding if callable(padding) else None,
                 causal if callable(causal) else None)
    E, H, T = 12, 3, 6
    ref = torch_mha(E, H, seed=5)
    mha = attempt(name, student_cls, E, H).double()
    mha.load_state_dict(ref.state_dict())
    g = torch.Generator().manual_seed(6)
    x = _randn(2, T, E, g=g)
    got = run_student(name, student, mha, x)
    if isinstance(got, tuple):
        got = got[0]
    expect(isinstance(got, torch.Tensor) and got.shape == x.shape, name,
           f"return the output of the layer, B x T x E = {tuple(x.shape)}")
    expect(not bool(torch.isnan(got).any()), name,
           "the output has NaN: some query has no allowed key. The diagonal of the causal "
           "mask must be True (a token may attend to itself).")
    changed = x.clone()
    changed[:, -1] += 1.0  # only the last token changes
    got2 = run_student(name, student, mha, changed)
    got2 = got2[0] if isinstance(got2, tuple) else got2
    leak = float((got2[:, :-1] - got[:, :-1]).abs().max())
    expect(leak == 0.0, name,
           f"changing only the LAST token changed the outputs of earlier positions (by up to "
           f"{leak:.3g}): the future leaks. Pass the causal mask of exercise 2, for the "
           "sequence's length, as the mask (True = allowed, the lower triangle).")
    want = ref(x, x, x, attn_mask=nn.Transformer.generate_square_subsequent_mask(
        T, dtype=torch.float64), need_weights=False)[0].detach()
    diff = float((got.double() - want).abs().max())
    expect(diff < _TOL, name,
           f"no future leaks, but the output differs from nn.MultiheadAttention with a causal "
           f"mask by up to {diff:.3g}: is the diagonal allowed? Is the mask T x T?")
    passed(name, f"the future does not leak (change at the last token moves earlier outputs by "
                 f"{leak:g}); max |yours - torch, causal| = {diff:.1e}")

"""A check that names a mistake by replaying it must not meet two named mistakes (or a
mistake and the right answer) that give the same result at its sizes: the student would be
told the wrong one (issue: lab 09's √E was reported as "you divided by d" when d = √E).

For each check's own cases: the named variants that differ from the right answer there
differ from each other, and each variant differs from the right answer in at least one case
(otherwise it could never be named). Lab 09's tables are tested in test_check_gpt_block.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import combinations
from typing import Any

import pytest
import torch

from lmcourse.checks import attention as check05
from lmcourse.checks import autograd as check01
from lmcourse.checks import bpe as check08
from lmcourse.checks import distill as check07
from lmcourse.checks import mha_variants
from lmcourse.checks import word2vec as check04
from lmcourse.models import attention as att
from lmcourse.models import distill as dist
from lmcourse.tokenizers import bpe as ref08

Case = tuple[Any, dict[str, Any]]  # the right answer, {named mistake: its answer}


def clashes(cases: Sequence[Case], equal: Callable[[Any, Any], bool]) -> list[str]:
    """What is wrong with a variant table over a check's cases (empty when nothing)."""
    found, shown = [], set()
    for i, (right, variants) in enumerate(cases):
        live = {k: v for k, v in variants.items() if not equal(v, right)}
        shown |= set(live)
        found += [f"case {i}: {a!r} = {b!r}" for a, b in combinations(live, 2)
                  if equal(live[a], live[b])]
    found += [f"{k!r} never differs from the right answer"
              for k in cases[0][1] if k not in shown]
    return found


def tensors_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and bool(torch.allclose(a.double(), b.double(), atol=1e-8,
                                                      rtol=1e-8, equal_nan=True))


def numbers_equal(a: Sequence[float] | float, b: Sequence[float] | float) -> bool:
    a, b = (torch.as_tensor(v, dtype=torch.float64).reshape(-1) for v in (a, b))
    return tensors_equal(a, b)


# ---- lab 01: the local derivatives' mistakes ------------------------------------------------

def test_autograd_local_mistakes_differ():
    seed, up = check01._SEED_GRAD, check01._UPSTREAM
    for what, _build, _data, _forward, local, wrong in check01._local_cases():
        variants = {"unchanged": [seed] * len(local), "overwritten": [up * g for g in local],
                    "no out.grad": [seed + g for g in local]}
        variants |= {hint: [seed + up * g for g in w] for w, hint in wrong}
        right = [seed + up * g for g in local]
        found = clashes([(right, variants)], numbers_equal)
        assert [c for c in found if "never differs" not in c] == [], what
        assert not any(hint in c for hint, _ in ((h, 0) for _, h in wrong) for c in found), what


# ---- lab 05: attention -------------------------------------------------------------------

def _attention_cases() -> list[tuple]:
    g = torch.Generator().manual_seed(0)
    plain = [(q, k, None) for _, (q, k, _v) in check05._attention_cases(g)]
    g = torch.Generator().manual_seed(1)
    q0, k0 = check05._randn(2, 3, 8, g=g), check05._randn(2, 5, 8, g=g)
    check05._randn(2, 5, 3, g=g)
    x = check05._randn(1, 4, 8, g=g)
    masked = [(q0, k0, att.padding_mask(torch.tensor([5, 3]), 5)[:, None, :]),
              (x, x, att.causal_mask(4))]
    q2, k2 = check05._randn(2, 2, 3, 6, g=g), check05._randn(2, 2, 5, 6, g=g)
    masked.append((q2, k2, att.padding_mask(torch.tensor([2, 5]), 5)[:, None, None, :]))
    return plain + masked


@pytest.mark.parametrize("i", range(5))
def test_attention_softmax_mistakes_differ(i):
    q, k, mask = _attention_cases()[i]
    right = att.scaled_dot_product_attention(q, k, k, mask)[1]
    variants = {hint: w for w, hint in check05._softmax_variants(q, k, mask)}
    found = clashes([(right, variants)], tensors_equal)
    assert [c for c in found if "never differs" not in c] == []


def test_multi_head_attention_mistakes_differ():
    ref = mha_variants.torch_mha(12, 3, seed=3)
    g = torch.Generator().manual_seed(4)
    query, memory = check05._randn(2, 4, 12, g=g), check05._randn(2, 6, 12, g=g)
    allowed = att.padding_mask(torch.tensor([6, 4]), 6)[:, None, None, :]
    cases = []
    with torch.no_grad():
        for mask in (None, allowed):
            args = (query, memory, memory, mask)
            right = mha_variants.mha_variant(ref, *args)[0]
            cases.append((right, {str(knobs): mha_variants.mha_variant(ref, *args, **knobs)[0]
                                  for knobs, _ in mha_variants.MHA_MISTAKES}))
    assert clashes(cases, tensors_equal) == []


# ---- lab 07: distillation ----------------------------------------------------------------

def test_distillation_mistakes_differ():
    z = check07._logits(2, 3, 5, scale=2.0)
    soft = [(dist.softmax_t(z, T), {h: v for v, h in check07._softmax_t_variants(z, T)})
            for T in (2.0, 0.5, 1.0, 5.0)]
    assert clashes(soft, tensors_equal) == []
    s, t = check07._logits(5, 7, seed=1), check07._logits(5, 7, scale=3.0, seed=2)
    losses = [(dist.distillation_loss(s, t, T), {h: v for v, h in check07._loss_variants(s, t, T)})
              for T in (2.0, 4.0, 1.0)]
    assert clashes(losses, numbers_equal) == []
    s, t = check07._logits(6, 3, seed=3), check07._logits(6, 3, scale=3.0, seed=4)
    y = torch.tensor([0, 2, 1, 1, 0, 2])
    combined = [(dist.combined_loss(s, t, y, T, a, b),
                 {h: v for v, h in check07._combined_variants(s, t, y, T, a, b)})
                for T, a, b in ((2.0, 0.7, 0.2), (4.0, 0.5, 0.5), (3.0, 0.3, 0.9))]
    assert clashes(combined, numbers_equal) == []


# ---- lab 04: word2vec's loss --------------------------------------------------------------

def test_word2vec_loss_mistakes_differ():
    g = torch.Generator().manual_seed(0)
    v, u_pos = (torch.randn(5, 4, generator=g, dtype=torch.float64) for _ in range(2))
    u_neg = torch.randn(5, 3, 4, generator=g, dtype=torch.float64)
    variants = check04._loss_variants(v, u_pos, u_neg)
    right = variants.pop("right")
    assert clashes([(right, variants)], numbers_equal) == []


# ---- lab 08: byte-pair encoding ------------------------------------------------------------

def test_bpe_mistakes_differ():
    seg = check08._segmentation(check08.WORDS)

    def counts_equal(a, b):
        return {k: v for k, v in a.items() if v} == {k: v for k, v in b.items() if v}

    pairs = [(ref08.pair_frequencies(seg), {h: c for c, h in check08._pair_count_variants(seg)})]
    assert clashes(pairs, counts_equal) == []
    merges = [(ref08._merge(list(s), a, b), {h: w for w, h in check08._merge_variants(s, a, b)})
              for s, (a, b) in check08._MERGE_CASES]
    assert clashes(merges, lambda a, b: list(a) == list(b)) == []
    learned = [(ref08.train_bpe(words, n), {h: w for w, h in check08._learn_variants(words, n)})
               for words, n in ((check08.WORDS, 12), ({"aaaa": 3, "ab": 1}, 5), ({"ab": 1}, 4))]
    assert clashes(learned, lambda a, b: [tuple(p) for p in a] == [tuple(p) for p in b]) == []

"""Auto-checks for word2vec's sampling: the noise distribution of negative sampling
and the discard probability of frequent-word subsampling (Mikolov et al., 2013).

Each check computes the answer on a small Zipf-like vocabulary and, when the student's
differs, tries the typical mistakes to name the one made. ``lmcourse.checks.word2vec``
re-exports both, so the lab calls them as ``check.noise_distribution`` and
``check.discard_probability``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from lmcourse.checks import attempt, expect, fail, passed
from lmcourse.checks.compare import how_far

_COUNTS = np.array([5000, 1200, 300, 40, 7, 5], dtype=np.int64)  # a Zipf-like vocabulary


def _as_probs(name: str, got: Any, n: int) -> np.ndarray:
    if isinstance(got, torch.Tensor):
        got = got.detach().cpu().numpy()
    got = np.asarray(got, dtype=np.float64)
    expect(got.shape == (n,), name,
           f"return one number per word ({n} for {n} counts), got shape {got.shape}")
    return got


def _worst(got: np.ndarray, want: np.ndarray) -> str:
    """The word whose probability is furthest off, and how, without the right value."""
    i = int(np.abs(got - want).argmax())
    return (f"the most wrong is word {i} (count {_COUNTS[i]}), whose value "
            f"{how_far(got[i], want[i])}")


def noise_distribution(student: Callable[..., Any]) -> None:
    """Exercise 4: ``P_n(w) = count(w)^0.75 / sum_w' count(w')^0.75``."""
    name = "noise_distribution"
    counts = _COUNTS
    got = _as_probs(name, attempt(name, student, counts.copy()), len(counts))
    c = counts.astype(np.float64)
    want = c ** 0.75 / (c ** 0.75).sum()
    if np.allclose(got, want, rtol=1e-9, atol=0):
        passed(name, "P_n = count^0.75 / sum count^0.75 to 1e-9; 'the'-like word "
                     f"{c[0] / c.sum():.1%} of the text, {want[0]:.1%} of the noise draws")
        return
    f = c / c.sum()
    wrong = {
        "the plain unigram distribution count / total: raise the counts to the power 0.75 "
        "before normalising (frequent words must be drawn less than their share).": f,
        "count^0.75 is not renormalised: divide by sum_w' count(w')^0.75 so the "
        "probabilities sum to 1.": c ** 0.75,
        "(count / total)^0.75 does not sum to 1: after the power, normalise again "
        "(divide by the sum of the powered values).": f ** 0.75,
        "the power is 4/3 instead of 3/4 (0.75): frequent words must become LESS likely "
        "than in the unigram distribution, not more.": c ** (4 / 3) / (c ** (4 / 3)).sum(),
        "all words are equally likely (the uniform distribution): weight each word by "
        "count^0.75.": np.full(len(c), 1 / len(c)),
        "the power is applied to the rank or the word id, not to the count: raise each "
        "word's count to the power 0.75.":
            np.arange(1, len(c) + 1) ** 0.75 / (np.arange(1, len(c) + 1) ** 0.75).sum(),
    }
    for hint, value in wrong.items():
        if np.allclose(got, value, rtol=1e-6, atol=0):
            fail(name, hint)
    if abs(got.sum() - 1) > 1e-6:
        fail(name, f"the probabilities sum to {got.sum():.6f}, not 1: normalise.")
    fail(name, f"yours is {np.round(got, 5).tolist()} for counts {counts.tolist()}: "
               f"{_worst(got, want)} (count^0.75, normalised).")


def discard_probability(student: Callable[..., Any]) -> None:
    """Exercise 5: the paper's ``P_discard(w) = max(0, 1 - sqrt(t / f(w)))`` with
    ``f(w) = count(w) / total``."""
    name = "discard_probability"
    counts, t = _COUNTS, 0.01
    got = _as_probs(name, attempt(name, student, counts.copy(), t), len(counts))
    f = counts / counts.sum()
    root = np.sqrt(t / f)
    want = np.maximum(0.0, 1 - root)
    if np.allclose(got, want, rtol=1e-9, atol=1e-12):
        got2 = _as_probs(name, attempt(name, student, counts.copy(), 1e-5), len(counts))
        want2 = np.maximum(0.0, 1 - np.sqrt(1e-5 / f))
        expect(np.allclose(got2, want2, rtol=1e-9, atol=1e-12), name,
               "right for t = 0.01 but not for t = 1e-5: use the argument t, not a constant.")
        passed(name, f"max(0, 1 - sqrt(t / f)) to 1e-9 for t = 0.01 and 1e-5; the most "
                     f"frequent word is dropped {want[0]:.0%} of the time at t = 0.01")
        return
    gensim_keep = np.minimum(1.0, (np.sqrt(f / t) + 1) * t / f)
    wrong = {
        "this is the probability of KEEPING the word (sqrt(t / f)); the exercise asks for "
        "the probability of DISCARDING it, 1 - sqrt(t / f).": np.minimum(1.0, root),
        "negative probabilities for rare words: 1 - sqrt(t / f) is below 0 when f < t; "
        "clip it at 0 (NumPy's elementwise maximum): rare words are never discarded.":
            1 - root,
        "f(w) must be the relative frequency count / total, not the raw count.":
            np.maximum(0.0, 1 - np.sqrt(t / counts)),
        "the square root is missing: the paper discards with probability 1 - sqrt(t / f).":
            np.maximum(0.0, 1 - t / f),
        "this is word2vec.c / gensim's KEEP probability (sqrt(f/t) + 1) t / f; the exercise "
        "asks for the paper's DISCARD probability 1 - sqrt(t / f).": gensim_keep,
        "this is 1 minus gensim's keep probability; the exercise asks for the paper's "
        "formula 1 - sqrt(t / f).": 1 - gensim_keep,
        "t and f are swapped: the ratio under the root is t / f (small for frequent words), "
        "so that frequent words are discarded most.": np.maximum(0.0, 1 - np.sqrt(f / t)),
    }
    for hint, value in wrong.items():
        if np.allclose(got, value, rtol=1e-6, atol=1e-12):
            fail(name, hint)
    expect(bool(((got >= 0) & (got <= 1)).all()), name,
           f"probabilities must lie in [0, 1], got {np.round(got, 4).tolist()}")
    fail(name, f"yours is {np.round(got, 4).tolist()} for counts {counts.tolist()} and "
               f"t = {t}: {_worst(got, want)} (max(0, 1 - sqrt(t / f)), f = count / total).")

"""Lab 08 checks: each accepts the right answer and names the usual mistakes."""

from __future__ import annotations

from collections import Counter

import pytest

from lmcourse.checks import CheckFailed
from lmcourse.checks import bpe as check


def fails_with(fn, *args, hint: str) -> str:
    with pytest.raises(CheckFailed) as info:
        fn(*args)
    assert hint in str(info.value), str(info.value)
    return str(info.value)


def stub(*_args, **_kwargs):
    raise NotImplementedError


# ---- the lab's solution (the same code as labs/solutions/08_bpe.py) ---------------------

def pair_counts(segmentation, weighted=True, distinct=False):
    counts = Counter()
    for symbols, count in segmentation.items():
        pairs = list(zip(symbols[:-1], symbols[1:], strict=False))
        for pair in (dict.fromkeys(pairs) if distinct else pairs):
            counts[pair] += count if weighted else 1
    return counts


def merge(symbols, a, b, first_only=False, from_right=False, as_text=False):
    if as_text:
        joined = "".join(symbols).replace(a + b, "\0")
        return [a + b if ch == "\0" else ch for ch in joined]
    if from_right:
        return [s if s != b + a else a + b for s in merge(list(symbols)[::-1], b, a)][::-1]
    out, i, done = [], 0, False
    while i < len(symbols):
        if (i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b
                and not (first_only and done)):
            out.append(a + b)
            i, done = i + 2, True
        else:
            out.append(symbols[i])
            i += 1
    return out


def learn_bpe(word_counts, num_merges, recount=True, alphabetical_ties=False, stop=True):
    segmentation = {tuple(w): c for w, c in word_counts.items()}
    merges, counts = [], pair_counts(segmentation)
    for _ in range(num_merges):
        if recount:
            counts = pair_counts(segmentation)
        counts = Counter({p: c for p, c in counts.items() if c and p not in merges})
        if not counts:
            if stop:
                break
            merges.append(("?", "?"))
            continue
        if alphabetical_ties:
            a, b = min(counts, key=lambda p, c=counts: (-c[p], p))
        else:
            a, b = max(counts, key=counts.get)
        segmentation = {tuple(merge(list(s), a, b)): c for s, c in segmentation.items()}
        merges.append((a, b))
    return merges


def encode(word, merges, order="learned", longest=False):
    if longest:
        vocab = set(word) | {a + b for a, b in merges}
        out, i = [], 0
        while i < len(word):
            j = max(k for k in range(i + 1, len(word) + 1) if word[i:k] in vocab or k == i + 1)
            out.append(word[i:j])
            i = j
        return out
    ordered = merges if order == "learned" else merges[::-1]
    symbols = list(word)
    for a, b in ordered:
        symbols = merge(symbols, a, b)
    return symbols


def test_the_solution_passes(capsys):
    check.pair_counts(pair_counts)
    check.merge(merge)
    check.learn_bpe(learn_bpe)
    check.encode(encode)
    out = capsys.readouterr().out
    assert out.count("passed") == 4


def test_pair_count_mistakes_are_named():
    fails_with(check.pair_counts, lambda s: pair_counts(s, weighted=False),
               hint="weight it by its count")
    fails_with(check.pair_counts, lambda s: pair_counts(s, distinct=True), hint="count twice")
    def across(seg):
        flat = [x for symbols in seg for x in symbols]
        return Counter(zip(flat[:-1], flat[1:], strict=False))
    fails_with(check.pair_counts, across, hint="across word boundaries")
    fails_with(check.pair_counts, stub, hint="not implemented yet")
    fails_with(check.pair_counts, lambda s: [], hint="return a dict")


def test_merge_mistakes_are_named():
    fails_with(check.merge, lambda s, a, b: merge(s, a, b, first_only=True),
               hint="only the first occurrence")
    fails_with(check.merge, lambda s, a, b: merge(s, a, b, from_right=True),
               hint="merged from the right")
    fails_with(check.merge, lambda s, a, b: merge(s, a, b, as_text=True),
               hint="joined into one string")


def test_learn_mistakes_are_named():
    fails_with(check.learn_bpe, lambda w, n: learn_bpe(w, n, recount=False),
               hint="FIRST count")
    fails_with(check.learn_bpe, lambda w, n: learn_bpe(w, n, alphabetical_ties=True),
               hint="alphabetical")
    fails_with(check.learn_bpe, lambda w, n: learn_bpe(dict(sorted(w.items())), n),
               hint="sorted order")
    fails_with(check.learn_bpe, lambda w, n: learn_bpe(w, n, stop=False), hint="stop there")


def test_encode_mistakes_are_named():
    fails_with(check.encode, lambda w, m: encode(w, m, longest=True),
               hint="greedy longest match")
    fails_with(check.encode, lambda w, m: encode(w, m, order="reversed"), hint="reverse order")
    fails_with(check.encode, lambda w, m: list(w)[:-1], hint="do not spell the word")

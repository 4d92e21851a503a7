"""Auto-checks for byte-pair encoding: pair counts, one merge, training, encoding.

Every check computes the right answer with :mod:`lmcourse.tokenizers.bpe` (the course's
reference, which equals Hugging Face ``tokenizers`` under its tie rule) and, when the
student's answer differs, compares it with the answers of the usual mistakes: counting a
pair once per word instead of once per occurrence times the word's count, pairs across
word boundaries, merging only the first occurrence or overlapping from the right, counts
never recomputed after a merge, ties broken alphabetically, and segmenting new words by
greedy longest match or in the wrong merge order.

Conventions of the lab: a segmentation is a dict ``{(s_1, ..., s_n): count}``; a pair is a
tuple ``(a, b)`` of strings; merges are a list of pairs in the order they were learned;
ties go to the pair *seen first* (words in the dict's order, each from left to right).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from lmcourse.checks import attempt, expect, fail, passed, requires_earlier
from lmcourse.checks.compare import first_difference
from lmcourse.tokenizers import bpe as reference

__all__ = ["encode", "learn_bpe", "merge", "pair_counts"]

#: word counts with repeated pairs inside a word ("lolo"), shared prefixes and ties
WORDS = {"low": 5, "lower": 2, "newest": 6, "widest": 3, "lolo": 4, "aaa": 2, "new": 1}


def _segmentation(words: Mapping[str, int]) -> dict[tuple[str, ...], int]:
    return {tuple(w): c for w, c in words.items()}


# ---- exercise 1: pair counts ----------------------------------------------------------------

def _pair_count_variants(seg: Mapping[tuple[str, ...], int]) -> list[tuple[Counter, str]]:
    unweighted, distinct, across = Counter(), Counter(), Counter()
    for symbols, count in seg.items():
        pairs = list(zip(symbols[:-1], symbols[1:], strict=True))
        unweighted.update(pairs)
        distinct.update({p: count for p in set(pairs)})
    flat = [s for symbols in seg for s in symbols]
    across.update(zip(flat[:-1], flat[1:], strict=True))
    return [(unweighted, "you counted each word once: weight it by its count, f(a, b) = "
                         "Σ count(w) × #occurrences of (a, b) in w (\"low\" appears 5 "
                         "times)."),
            (distinct, "a pair that occurs twice in one word (\"l o l o\" holds (l, o) twice) "
                       "must count twice: count occurrences, not distinct pairs per word."),
            (across, "pairs across word boundaries were counted (the last symbol of one word "
                     "with the first of the next) and the counts were not weighted: count "
                     "inside each word, times its count.")]


def pair_counts(fn: Callable[[Mapping[tuple[str, ...], int]], Mapping]) -> None:
    """Exercise 1: ``fn(segmentation)`` returns f(a, b) for every adjacent pair."""
    name = "pair_counts"
    seg = _segmentation(WORDS)
    got = attempt(name, fn, seg)
    expect(isinstance(got, Mapping), name,
           f"return a dict (or Counter) {{(a, b): count}}, got {type(got).__name__}")
    want = reference.pair_frequencies(seg)
    got = {k: v for k, v in got.items() if v}
    if got == dict(want):
        passed(name, f"{len(want)} pairs, f('l', 'o') = {want[('l', 'o')]} as the reference")
        return
    for wrong, hint in _pair_count_variants(seg):
        if got == {k: v for k, v in wrong.items() if v}:
            fail(name, hint)
    bad = sorted(set(got) ^ set(want))[:3] or [
        k for k in sorted(want) if got.get(k) != want[k]][:3]
    fail(name, "these pairs are wrong: " + "; ".join(_count_problem(k, got, want) for k in bad)
         + ". f(a, b) = Σ count(w) × #occurrences of (a, b) in w, over the words w.")


def _count_problem(pair: tuple[str, str], got: Mapping, want: Mapping) -> str:
    """What is wrong with the count of one pair, without the right count."""
    if pair not in want:
        return f"{pair}: yours {got[pair]}, but no word holds this pair"
    if pair not in got:
        return f"{pair}: missing (it occurs inside a word)"
    return f"{pair}: yours {got[pair]}, too {'high' if got[pair] > want[pair] else 'low'}"


# ---- exercise 2: one merge -------------------------------------------------------------------

_MERGE_CASES = [(("l", "o", "l", "o"), ("l", "o")), (("a", "a", "a"), ("a", "a")),
                (("n", "e", "w", "e", "s", "t"), ("e", "s")), (("x",), ("x", "y")),
                (("ab", "c", "a", "bc"), ("a", "bc")), (("l", "ow", "l", "o", "w"), ("l", "o"))]


def _merge_variants(symbols: tuple[str, ...], a: str, b: str) -> list[tuple[list[str], str]]:
    first_only, i = list(symbols), 0
    while i + 1 < len(first_only):
        if first_only[i] == a and first_only[i + 1] == b:
            first_only[i:i + 2] = [a + b]
            break
        i += 1
    from_right = reference._merge(list(symbols)[::-1], b, a)[::-1]
    from_right = [s if s != b + a else a + b for s in from_right]
    joined = "".join(symbols).replace(a + b, "\0")
    as_text = [a + b if ch == "\0" else ch for ch in joined]
    return [(first_only, "only the first occurrence was merged: replace EVERY occurrence of "
                         "(a, b), scanning left to right."),
            (from_right, "overlapping occurrences were merged from the right: scan left to "
                         "right, so 'a a a' with (a, a) becomes 'aa a', not 'a aa'."),
            (as_text, "the symbols were joined into one string and replaced as text, which "
                      "loses the symbol boundaries (and merges 'ab c' with (a, bc)): walk the "
                      "list and compare whole symbols.")]


def merge(fn: Callable[[Sequence[str], str, str], Sequence[str]]) -> None:
    """Exercise 2: ``fn(symbols, a, b)`` replaces every ``a b`` by ``a+b``, left to right."""
    name = "merge"
    for symbols, (a, b) in _MERGE_CASES:
        got = attempt(name, fn, list(symbols), a, b)
        expect(isinstance(got, list | tuple), name,
               f"return the new list of symbols, got {type(got).__name__}")
        want = reference._merge(list(symbols), a, b)
        if list(got) == want:
            continue
        for wrong, hint in _merge_variants(symbols, a, b):
            if list(got) == wrong:
                fail(name, f"{' '.join(symbols)} with ({a}, {b}): {hint}")
        at = first_difference(list(got), want)
        fail(name, f"{' '.join(symbols)} with ({a}, {b}): yours is {list(got)}, which goes "
                   f"wrong at its symbol {at}: walk the list from left to right, and wherever "
                   "a is followed by b put the one symbol a+b in their place (then go on after "
                   "it); copy every other symbol as it is.")
    passed(name, f"{len(_MERGE_CASES)} cases, overlaps and multi-character symbols included")


# ---- exercise 3: learning the merges ---------------------------------------------------------

def _train_alphabetical(words: Mapping[str, int], n: int) -> list[tuple[str, str]]:
    """Training with ties going to the alphabetically smallest pair."""
    seg, merges = _segmentation(words), []
    for _ in range(n):
        counts = reference.pair_frequencies(seg)
        if not counts:
            break
        a, b = min(counts, key=lambda p: (-counts[p], p))
        seg = {tuple(reference._merge(list(s), a, b)): c for s, c in seg.items()}
        merges.append((a, b))
    return merges


def _learn_variants(words: Mapping[str, int], n: int) -> list[tuple[list, str]]:
    seg = _segmentation(words)
    initial = reference.pair_frequencies(seg)
    frozen = [p for p, _ in initial.most_common(n)]
    alphabetical = reference.train_bpe(dict(sorted(words.items())), n)
    return [(frozen, "the merges are the most frequent pairs of the FIRST count: after each "
                     "merge, re-segment every word and count the pairs again (new symbols "
                     "make new pairs, like (e, st) after (s, t))."),
            (_train_alphabetical(words, n),
             "ties were broken by the symbols' order (alphabetical): take the pair seen "
             "first, i.e. the first maximal pair in your counts' insertion order "
             "(Python's max with a key function keeps the first of equal keys)."),
            (alphabetical, "the words were processed in sorted order: keep the dict's order "
                           "(the order the words were first seen), which decides ties.")]


def _merge_problem(words: Mapping[str, int], want: list, got: list, step: int) -> str:
    """Why merge ``step`` (0-based; the first ``step`` are right) is wrong, from the pair
    counts of the segmentation after the first ``step`` merges, without the right merge."""
    where = f"{words}: merge {step + 1} differs (the first {step} are right)"
    if step >= len(got):
        return f"{where}: yours stops after {len(got)} merges, but pairs remain to merge."
    if step >= len(want):
        return f"{where}: every word is one symbol after {step} merges; stop there."
    seg = _segmentation(words)
    for a, b in want[:step]:
        seg = {tuple(reference._merge(list(s), a, b)): c for s, c in seg.items()}
    counts = reference.pair_frequencies(seg)
    pair, top = got[step], max(counts.values())
    if pair not in counts:
        return (f"{where}: yours is {pair}, which no word holds after the first {step} "
                "merges: count the pairs of the current segmentation.")
    if counts[pair] < top:
        return (f"{where}: yours is {pair}, which occurs {counts[pair]} times after the first "
                f"{step} merges, but another pair occurs more often: count the pairs of the "
                "current segmentation, each word's pairs times its count.")
    return (f"{where}: yours is {pair}, tied for the most frequent ({top}), but another pair "
            "with that count was seen first: ties go to the pair seen first (words in the "
            "dict's order, each from left to right).")


def learn_bpe(fn: Callable[[Mapping[str, int], int], Sequence[tuple[str, str]]]) -> None:
    """Exercise 3: ``fn(word_counts, num_merges)`` returns the merges, in order."""
    name = "learn_bpe"
    requires_earlier(name, fn, ("pair_counts", 1, pair_counts), ("merge", 2, merge))
    total = 0
    for words, n in ((WORDS, 12), ({"aaaa": 3, "ab": 1}, 5), ({"ab": 1}, 4)):
        got = attempt(name, fn, dict(words), n)
        expect(isinstance(got, list | tuple), name,
               f"return the list of merges [(a, b), ...], got {type(got).__name__}")
        got = [tuple(p) for p in got]
        want = reference.train_bpe(words, n)
        if got == want:
            total += len(want)
            continue
        if len(got) > len(want) and got[:len(want)] == want:
            fail(name, f"{words}: after {len(want)} merges every word is one symbol; stop "
                       "there instead of merging pairs with zero count.")
        for wrong, hint in _learn_variants(words, n):
            if got == wrong:
                fail(name, hint)
        step = first_difference(got, want)
        fail(name, _merge_problem(words, want, got, step))
    passed(name, f"{total} merges on 3 word lists equal chapter 08's train_bpe, ties and an "
                 "early stop included")


# ---- exercise 4: encoding a new word ---------------------------------------------------------

def _longest_match(word: str, merges: Sequence[tuple[str, str]]) -> list[str]:
    vocab = set(word) | {a + b for a, b in merges}
    out, i = [], 0
    while i < len(word):
        j = max(k for k in range(i + 1, len(word) + 1) if word[i:k] in vocab or k == i + 1)
        out.append(word[i:j])
        i = j
    return out


def _sequential(word: str, merges: Sequence[tuple[str, str]]) -> list[str]:
    """Each merge applied once to the whole word, in the order given."""
    symbols = list(word)
    for a, b in merges:
        symbols = reference._merge(symbols, a, b)
    return symbols


def encode(fn: Callable[[str, Sequence[tuple[str, str]]], Sequence[str]]) -> Any:
    """Exercise 4: ``fn(word, merges)`` segments any word by replaying the merges."""
    name = "encode"
    requires_earlier(name, fn, ("merge", 2, merge))
    merges = reference.train_bpe(
        {"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5, "unhug": 3, "bug": 2}, 8)
    # a hand-made list where learned order, reversed order and longest match all differ
    cases = [(merges, ["hugs", "bunhug", "unpugs", "hugging", "xyz", "ug"]),
             ([("b", "c"), ("a", "b"), ("ab", "c")], ["abc", "cabcab"])]
    for case_merges, words in cases:
        for word in words:
            got = attempt(name, fn, word, case_merges)
            expect(isinstance(got, list | tuple), name,
                   f"return the list of symbols, got {type(got).__name__}")
            got, want = list(got), reference.apply_bpe(word, case_merges)
            if got == want:
                continue
            expect("".join(got) == word, name,
                   f"{word!r}: the symbols {got} do not spell the word; every merge joins two "
                   "neighbours, nothing is dropped or added.")
            if got == _sequential(word, case_merges[::-1]):
                fail(name, f"{word!r}: the merges were applied in reverse order; the earliest "
                           "learned merge goes first.")
            if got == _longest_match(word, case_merges):
                fail(name, f"{word!r}: greedy longest match from the left gives {got}; BPE "
                           "replays the merges instead, in the order they were learned, each "
                           "one over the whole word.")
            fail(name, f"{word!r}: yours is {got}, which goes wrong at its symbol "
                       f"{first_difference(got, want)}: start from the characters and apply "
                       "each merge, in the order learned, to the whole word.")
    passed(name, f"{sum(len(w) for _, w in cases)} words, unseen characters included, as "
                 "chapter 08's apply_bpe")
    return merges

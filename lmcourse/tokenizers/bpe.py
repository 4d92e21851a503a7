"""Byte-pair encoding (Sennrich, Haddow & Birch, 2016), learned from word counts.

Every word starts as a sequence of characters. The pair frequency of two adjacent
symbols ``(a, b)`` is

    f(a, b) = sum over words w of count(w) * #{i : s_i = a and s_{i+1} = b}

where ``s`` is the current segmentation of ``w``. One training step merges every
occurrence of the most frequent pair into a new symbol ``a + b``; ``num_merges`` steps
give a vocabulary of ``|alphabet| + num_merges`` symbols and an ordered list of merges.
Segmenting a new word replays those merges (:func:`apply_bpe`). There is no end-of-word
marker: a symbol can be a whole word or a piece of one.

Ties (two pairs with the same frequency) are common in small data, so the rule matters:
by default the pair *seen first* wins (defined in :func:`train_bpe`).
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from lmcourse.data import tokenize as _word_tokenize

Pair = tuple[str, str]
TIE_BREAKS = ("first", "ids")

__all__ = ["BPEStep", "BPETokenizer", "Pair", "apply_bpe", "count_words", "pair_frequencies",
           "train_bpe", "train_bpe_steps"]


@dataclass(frozen=True)
class BPEStep:
    """One training step: the merged ``pair``, its frequency f(a, b), the pairs it beat on
    a tie (same frequency, in first-seen order), the vocabulary after the merge, and
    ``merged``, the number of occurrences replaced (the tokens the step removes). ``merged``
    equals ``freq`` except when ``a == b`` overlaps itself: ``0 0 0`` holds two ``(0, 0)``
    pairs but only one can be merged."""

    pair: Pair
    freq: int
    ties: tuple[Pair, ...]
    vocab: tuple[str, ...]
    merged: int

    @property
    def symbol(self) -> str:
        """The new symbol, ``a + b``."""
        return self.pair[0] + self.pair[1]


def _pairs(symbols: Sequence[str]) -> list[Pair]:
    """The adjacent pairs of a segmentation: (s_1, s_2), (s_2, s_3), ..."""
    return list(zip(symbols[:-1], symbols[1:], strict=True))


def count_words(texts: Iterable[str], pre_tokenize: Callable[[str], list[str]] = _word_tokenize
                ) -> dict[str, int]:
    """Word counts of ``texts`` in order of first occurrence (the order ties are broken by)."""
    counts: dict[str, int] = {}
    for text in texts:
        for word in pre_tokenize(text):
            counts[word] = counts.get(word, 0) + 1
    return counts


def pair_frequencies(segmentation: Mapping[tuple[str, ...], int]) -> Counter:
    """f(a, b) for a segmented dictionary ``{(s_1, ..., s_n): count}`` (brute force)."""
    freqs: Counter = Counter()
    for symbols, count in segmentation.items():
        for pair in _pairs(symbols):
            freqs[pair] += count
    return freqs


def _check(word_counts: Mapping[str, int], num_merges: int, tie_break: str) -> None:
    if not isinstance(word_counts, Mapping):
        raise TypeError(f"word_counts must be a dict of word -> count, got "
                        f"{type(word_counts).__name__}; build one with count_words(texts)")
    for word, count in word_counts.items():
        if not isinstance(word, str) or not word:
            raise ValueError(f"every word must be a non-empty string, got {word!r}")
        if isinstance(count, bool) or not isinstance(count, int) or count <= 0:
            raise ValueError(f"the count of {word!r} must be a positive int, got {count!r}")
    if isinstance(num_merges, bool) or not isinstance(num_merges, int) or num_merges < 0:
        raise ValueError(f"num_merges must be an int >= 0, got {num_merges!r}")
    if tie_break not in TIE_BREAKS:
        raise ValueError(f"tie_break must be one of {TIE_BREAKS}, got {tie_break!r}")


def _merge(symbols: list[str], a: str, b: str) -> list[str]:
    """Replace every occurrence of ``a b`` (left to right, no overlaps) by ``a+b``."""
    out, i, n = [], 0, len(symbols)
    while i < n:
        if i + 1 < n and symbols[i] == a and symbols[i + 1] == b:
            out.append(a + b)
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


def _train(word_counts: Mapping[str, int], num_merges: int, tie_break: str):
    """Yield ``(pair, freq, ties, alphabet, merged)`` for each merge, updating counts incrementally:
    a merge only touches the words that contain the merged pair."""
    _check(word_counts, num_merges, tie_break)
    words = [list(w) for w in word_counts]
    freqs = list(word_counts.values())
    alphabet = list(dict.fromkeys(ch for w in word_counts for ch in w))
    counts: dict[Pair, int] = {}
    where: dict[Pair, set[int]] = {}
    for k, symbols in enumerate(words):
        for pair in _pairs(symbols):
            counts[pair] = counts.get(pair, 0) + freqs[k]
            where.setdefault(pair, set()).add(k)
    heap = [(-c, p) for p, c in counts.items()]
    heapq.heapify(heap)
    ids = {s: i for i, s in enumerate(sorted(alphabet))}  # the rule of HF `tokenizers`

    def first_seen(pair: Pair) -> tuple[int, int]:
        k = min(where[pair])  # first word (insertion order) that contains the pair ...
        symbols, offset = words[k], 0
        for left, right in _pairs(symbols):
            if (left, right) == pair:
                return k, offset  # ... and its first occurrence, left to right
            offset += len(left)
        raise AssertionError("index out of sync")  # pragma: no cover

    for _ in range(num_merges):
        while heap and counts.get(heap[0][1], 0) != -heap[0][0]:
            heapq.heappop(heap)  # stale entry: that pair's count has changed since
        if not heap:
            return  # every word is a single symbol: nothing left to merge
        best = -heap[0][0]
        tied = set()
        while heap and -heap[0][0] == best:
            _, pair = heapq.heappop(heap)
            if counts.get(pair, 0) == best:
                tied.add(pair)
        if tie_break == "first":
            ordered = sorted(tied, key=first_seen)
        else:
            ordered = sorted(tied, key=lambda p: (ids[p[0]], ids[p[1]]))
        pair, ties = ordered[0], tuple(ordered[1:])
        for p in ties:
            heapq.heappush(heap, (-best, p))
        a, b = pair
        ids.setdefault(a + b, len(ids))
        changed, merged = set(), 0
        for k in list(where[pair]):
            old = words[k]
            new = _merge(old, a, b)
            merged += (len(old) - len(new)) * freqs[k]
            for p in _pairs(old):
                counts[p] -= freqs[k]
                changed.add(p)
            for p in _pairs(new):
                counts[p] = counts.get(p, 0) + freqs[k]
                changed.add(p)
            for p in set(_pairs(old)) - set(_pairs(new)):
                where[p].discard(k)
            for p in _pairs(new):
                where.setdefault(p, set()).add(k)
            words[k] = new
        for p in changed:
            if counts[p] > 0:
                heapq.heappush(heap, (-counts[p], p))
            else:
                del counts[p]
                where.pop(p, None)
        yield pair, best, ties, alphabet, merged


def train_bpe(word_counts: Mapping[str, int], num_merges: int, *,
              tie_break: str = "first") -> list[Pair]:
    """Learn up to ``num_merges`` BPE merges from ``{word: count}``; returns them in order.

    Each step merges the pair with the largest f(a, b). Ties (``tie_break="first"``) go
    to the pair *seen first*: scan the words in the dict's insertion order, each from
    left to right in its current segmentation; the tied pair whose first occurrence
    comes earliest wins. ``tie_break="ids"`` is the rule of Hugging Face ``tokenizers``
    instead: the smallest ``(id(a), id(b))``, characters numbered in code-point order and
    merged symbols after them in order of creation. Training stops early when every word
    has become a single symbol.
    """
    return [pair for pair, *_ in _train(word_counts, num_merges, tie_break)]


def train_bpe_steps(word_counts: Mapping[str, int], num_merges: int, *,
                    tie_break: str = "first") -> list[BPEStep]:
    """Like :func:`train_bpe`, with each step's frequency, ties and vocabulary after it.

    The vocabulary starts as the characters in order of first appearance.
    """
    steps, vocab = [], None
    for pair, freq, ties, alphabet, merged in _train(word_counts, num_merges, tie_break):
        vocab = (tuple(alphabet) if vocab is None else vocab) + (pair[0] + pair[1],)
        steps.append(BPEStep(pair, freq, ties, vocab, merged))
    return steps


def apply_bpe(word: str, merges: Sequence[Pair] | Mapping[Pair, int]) -> list[str]:
    """Segment ``word`` with learned merges: start from characters and repeatedly merge the
    adjacent pair learned earliest (lowest rank), until no learned pair is left.

    This replays training exactly on the training words, and works on any other word:
    characters never seen in training simply stay single symbols.
    """
    if isinstance(merges, Mapping):
        ranks = merges
    else:
        ranks = {}
        for i, pair in enumerate(merges):
            ranks.setdefault(tuple(pair), i)
    symbols = list(word)
    while len(symbols) > 1:
        candidates = [(ranks[p], p) for p in _pairs(symbols) if p in ranks]
        if not candidates:
            break
        _, (a, b) = min(candidates)
        symbols = _merge(symbols, a, b)
    return symbols


class BPETokenizer:
    """A BPE tokenizer: pre-tokenize into words, then segment each word with the merges.

    ``alphabet`` (the characters seen in training) makes a character outside it come out
    as ``unk_token``: the weakness byte-level BPE removes.
    """

    def __init__(self, merges: Sequence[Pair], alphabet: Iterable[str] | None = None,
                 unk_token: str = "<unk>",
                 pre_tokenize: Callable[[str], list[str]] = _word_tokenize):
        self.merges = [tuple(p) for p in merges]
        self.ranks: dict[Pair, int] = {}
        for i, pair in enumerate(self.merges):
            self.ranks.setdefault(pair, i)
        self.alphabet = None if alphabet is None else list(dict.fromkeys(alphabet))
        self._known = None if alphabet is None else set(self.alphabet)
        self.unk_token = unk_token
        self.pre_tokenize = pre_tokenize
        self._cache: dict[str, list[str]] = {}

    @classmethod
    def train(cls, texts: Iterable[str], num_merges: int,
              pre_tokenize: Callable[[str], list[str]] = _word_tokenize,
              **kwargs) -> BPETokenizer:
        """Count the words of ``texts`` and learn ``num_merges`` merges from them."""
        counts = count_words(texts, pre_tokenize)
        merges = train_bpe(counts, num_merges, **kwargs)
        alphabet = dict.fromkeys(ch for w in counts for ch in w)
        return cls(merges, alphabet, pre_tokenize=pre_tokenize)

    @property
    def vocab(self) -> list[str]:
        """Alphabet (if known) followed by the merged symbols, in order."""
        merged = list(dict.fromkeys(a + b for a, b in self.merges))
        return list(dict.fromkeys((self.alphabet or []) + merged))

    def segment(self, word: str) -> list[str]:
        """The pieces of one word (cached)."""
        if word not in self._cache:
            pieces = apply_bpe(word, self.ranks)
            if self._known is not None:
                pieces = [p if len(p) > 1 or p in self._known else self.unk_token
                          for p in pieces]
            self._cache[word] = pieces
        return self._cache[word]

    def tokenize(self, text: str) -> list[str]:
        """Pre-tokenize ``text`` and segment every word."""
        return [piece for word in self.pre_tokenize(text) for piece in self.segment(word)]

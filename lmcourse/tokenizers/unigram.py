"""The unigram language-model tokenizer (Kudo, 2018), SentencePiece's default algorithm.

A vocabulary ``V`` of pieces, each with a probability ``p(x)`` (``sum_x p(x) = 1``). A
segmentation ``x = (x_1, ..., x_m)`` of a word ``w`` is scored as if the pieces were drawn
independently,

    P(x) = prod_i p(x_i),          x* = argmax_{x in S(w)} P(x),

where ``S(w)`` is every way of writing ``w`` as a sequence of pieces of ``V``. The best
segmentation ``x*`` is found by Viterbi over end positions (:func:`viterbi`). Unlike BPE
there is no merge list: the same vocabulary could segment a word in many ways, and the
probabilities choose.

Training (:func:`train_unigram`) starts from a large seed vocabulary (all characters, and
all substrings up to ``max_len`` seen at least ``min_count`` times) and alternates

- **EM** on the word counts ``c(w)``. E-step: the expected number of times each piece is
  used, by **forward-backward** over each word's lattice (all segmentations weighted by
  their posterior, not just the best one); M-step: ``p(x) = E[c(x)] / sum_y E[c(y)]``.
  Each step cannot lower the corpus log-likelihood ``L = sum_w c(w) log sum_{x in S(w)} P(x)``.
- **pruning**: the loss of a piece is how much ``L`` would drop if it were removed and
  each of its uses were replaced by its best segmentation without it, ``alt(x)``:

      loss(x) = E[c(x)] * (log p(x) - sum_{y in alt(x)} log p(y)).

  Keep the ``shrink`` share (75%, SentencePiece's default) with the largest loss, never
  dropping a single character, until ``vocab_size`` pieces are left.

Words are written SentencePiece's way (``metaspace_words``): a space is the symbol ``▁``,
so ``"the cat"`` is the two words ``▁the`` and ``▁cat``. SentencePiece's trainer differs in
details (its seed, a sparse prior in the M-step, Viterbi counts in the loss, 10% spare
pieces before a final cut by probability), so its vocabulary differs from ours; its
segmentation is the same Viterbi (tested with its own scores).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping

from lmcourse.tokenizers.bpe import count_words
from lmcourse.tokenizers.metaspace import metaspace_words

__all__ = ["UnigramLM", "corpus_log_likelihood", "em_step", "forward_backward", "pruning_losses",
           "seed_vocabulary", "train_unigram", "viterbi"]

UNK_PENALTY = 10.0  # an unknown character costs min_x log p(x) - 10 (SentencePiece's rule)
CHAR_FLOOR = 0.5  # a character keeps at least half an expected use, so p(char) > 0


def _check_word(word: object) -> None:
    if not isinstance(word, str) or not word:
        raise ValueError(f"expected a non-empty string to segment, got {word!r}")


def _lattice(word: str, log_probs: Mapping[str, float], max_len: int, unk: float):
    """Every piece that fits in ``word``: ``(start, end, piece, log p)``, ends ascending.
    A character outside the vocabulary gets the score ``unk``, so every string segments."""
    edges = []
    for j in range(1, len(word) + 1):
        for i in range(max(0, j - max_len), j):
            piece = word[i:j]
            if piece in log_probs:
                edges.append((i, j, piece, log_probs[piece]))
            elif j - i == 1:
                edges.append((i, j, piece, unk))
    return edges


def viterbi(word: str, log_probs: Mapping[str, float], unk: float | None = None, *,
            max_len: int | None = None, whole: bool = True) -> list[str]:
    """The most probable segmentation: ``best[0] = 0``,

        best[j] = max_{i < j, w[i:j] in V} best[i] + log p(w[i:j]),

    remembering the ``i`` that wins (the back-pointer) and reading the pieces off backwards
    from ``j = len(w)``. Ties go to the longest last piece. ``unk`` is the log-probability
    of a character missing from ``log_probs`` (default: the smallest one minus 10);
    ``whole=False`` forbids the piece that is all of ``word`` (what pruning asks)."""
    _check_word(word)
    if not log_probs:
        raise ValueError("the vocabulary is empty: give at least one piece with its log p")
    unk = min(log_probs.values()) - UNK_PENALTY if unk is None else unk
    max_len = max_len or max(map(len, log_probs))
    best = [0.0] + [-math.inf] * len(word)
    back = [0] * (len(word) + 1)
    for i, j, _, lp in _lattice(word, log_probs, max_len, unk):
        if best[i] + lp > best[j] and (whole or j - i < len(word)):
            best[j], back[j] = best[i] + lp, i
    pieces, j = [], len(word)
    while j > 0:
        pieces.append(word[back[j]:j])
        j = back[j]
    return pieces[::-1]


def _logaddexp(a: float, b: float) -> float:
    if a < b:
        a, b = b, a
    return a if b == -math.inf else a + math.log1p(math.exp(b - a))


def forward_backward(word: str, log_probs: Mapping[str, float], max_len: int | None = None
                     ) -> tuple[float, dict[str, float]]:
    """``(log Z, expected counts)`` of one word, summing over all its segmentations:

        alpha[j] = sum_i alpha[i] p(w[i:j])     (alpha[0] = 1; Z = alpha[n] = sum_x P(x))
        beta[i]  = sum_j p(w[i:j]) beta[j]      (beta[n] = 1)
        E[c(x)]  = sum_{(i, j): w[i:j] = x} alpha[i] p(x) beta[j] / Z,

    all in log space. Every character of ``word`` must be in ``log_probs``."""
    max_len = max_len or max(map(len, log_probs))
    edges = _lattice(word, log_probs, max_len, -math.inf)
    n = len(word)
    alpha, beta = [0.0] + [-math.inf] * n, [-math.inf] * n + [0.0]
    for i, j, _, lp in edges:
        alpha[j] = _logaddexp(alpha[j], alpha[i] + lp)
    for i, j, _, lp in reversed(edges):
        beta[i] = _logaddexp(beta[i], lp + beta[j])
    log_z = alpha[n]
    if log_z == -math.inf:
        raise ValueError(f"{word!r} cannot be segmented: one of its characters is not a piece")
    counts: dict[str, float] = {}
    for i, j, piece, lp in edges:
        counts[piece] = counts.get(piece, 0.0) + math.exp(alpha[i] + lp + beta[j] - log_z)
    return log_z, counts


def em_step(word_counts: Mapping[str, int], log_probs: Mapping[str, float]
            ) -> tuple[dict[str, float], float, dict[str, float]]:
    """One EM iteration: ``(new log p, corpus log-likelihood L before it, E[c(x)])``.
    A piece whose expected count is 0 drops out; a character keeps ``CHAR_FLOOR``."""
    max_len = max(map(len, log_probs))
    expected: dict[str, float] = dict.fromkeys(log_probs, 0.0)
    loglik = 0.0
    for word, c in word_counts.items():
        log_z, counts = forward_backward(word, log_probs, max_len)
        loglik += c * log_z
        for piece, e in counts.items():
            expected[piece] += c * e
    for piece in expected:
        if len(piece) == 1:
            expected[piece] = max(expected[piece], CHAR_FLOOR)
    total = math.log(sum(expected.values()))
    new = {x: math.log(e) - total if e > 0 else -math.inf for x, e in expected.items()}
    return {x: lp for x, lp in new.items() if lp > -math.inf}, loglik, expected


def pruning_losses(log_probs: Mapping[str, float], expected: Mapping[str, float]
                   ) -> dict[str, float]:
    """``loss(x) = E[c(x)] (log p(x) - sum_{y in alt(x)} log p(y))`` for every piece longer
    than one character, ``alt(x)`` being the Viterbi segmentation of ``x`` without ``x``."""
    max_len, unk = max(map(len, log_probs)), min(log_probs.values()) - UNK_PENALTY
    losses = {}
    for x, lp in log_probs.items():
        if len(x) > 1:
            alt = viterbi(x, log_probs, unk, max_len=max_len, whole=False)
            losses[x] = expected.get(x, 0.0) * (lp - sum(log_probs.get(y, unk) for y in alt))
    return losses


def seed_vocabulary(word_counts: Mapping[str, int], max_len: int = 16, min_count: int = 3
                    ) -> dict[str, float]:
    """log p of every character and every substring of 2..``max_len`` characters seen at
    least ``min_count`` times (counting each word ``c(w)`` times), p proportional to the count.
    A piece may start with ``▁`` but not contain one later (no piece spans two words)."""
    counts: Counter = Counter()
    for word, c in word_counts.items():
        for i in range(len(word)):
            for j in range(i + 1, min(len(word), i + max_len) + 1):
                counts[word[i:j]] += c
    seed = {x: n for x, n in counts.items() if len(x) == 1 or n >= min_count}
    total = math.log(sum(seed.values()))
    return {x: math.log(n) - total for x, n in seed.items()}


def train_unigram(word_counts: Mapping[str, int], vocab_size: int, *, max_len: int = 16,
                  min_count: int = 3, shrink: float = 0.75, em_iters: int = 2
                  ) -> tuple[dict[str, float], list[tuple[int, float]]]:
    """Seed, then (``em_iters`` EM steps, prune to ``max(vocab_size, shrink * |V|)``) until
    ``|V| = vocab_size``, then EM again. Returns ``(log p, history)``: ``history`` holds
    ``(|V|, L)`` before every EM step and at the end, ``L`` the corpus log-likelihood."""
    if not isinstance(word_counts, Mapping) or not word_counts:
        raise ValueError("word_counts must be a non-empty dict of word -> count; build one "
                         "with count_words(texts, metaspace_words)")
    for word, c in word_counts.items():
        _check_word(word)
        if isinstance(c, bool) or not isinstance(c, int) or c <= 0:
            raise ValueError(f"the count of {word!r} must be a positive int, got {c!r}")
    chars = {ch for w in word_counts for ch in w}
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < len(chars):
        raise ValueError(f"vocab_size must be an int >= the {len(chars)} characters of the "
                         f"training words (they are never pruned), got {vocab_size!r}")
    if not 0 < shrink < 1:
        raise ValueError(f"shrink must be in (0, 1), got {shrink!r}")
    log_probs = seed_vocabulary(word_counts, max_len, min_count)
    history = []
    while True:
        for _ in range(em_iters):
            size = len(log_probs)
            log_probs, loglik, expected = em_step(word_counts, log_probs)
            history.append((size, loglik))
        if len(log_probs) <= vocab_size:
            history.append((len(log_probs), corpus_log_likelihood(word_counts, log_probs)))
            return log_probs, history
        losses = pruning_losses(log_probs, expected)
        keep = max(vocab_size, int(shrink * len(log_probs))) - (len(log_probs) - len(losses))
        kept = set(sorted(losses, key=losses.__getitem__, reverse=True)[:keep])
        log_probs = {x: lp for x, lp in log_probs.items() if len(x) == 1 or x in kept}


def corpus_log_likelihood(word_counts: Mapping[str, int], log_probs: Mapping[str, float]
                          ) -> float:
    """``L = sum_w c(w) log Z(w)``, ``Z(w) = sum_{x in S(w)} P(x)`` (the forward pass)."""
    max_len = max(map(len, log_probs))
    return sum(c * forward_backward(w, log_probs, max_len)[0] for w, c in word_counts.items())


class UnigramLM:
    """A trained unigram tokenizer: ``tokenize(text)`` = Viterbi on each ``▁`` word."""

    def __init__(self, log_probs: Mapping[str, float]):
        if not log_probs or not all(isinstance(x, str) and x for x in log_probs):
            raise ValueError("log_probs must map non-empty piece strings to log-probabilities")
        if not all(math.isfinite(v) for v in log_probs.values()):
            raise ValueError("every log-probability must be a finite number")
        self.log_probs = dict(log_probs)
        self.max_len = max(map(len, log_probs))
        self.unk = min(log_probs.values()) - UNK_PENALTY
        self._cache: dict[str, list[str]] = {}

    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int, **kwargs) -> UnigramLM:
        """Count the ``▁`` words of ``texts`` and train (see :func:`train_unigram`)."""
        log_probs, history = train_unigram(count_words(texts, metaspace_words), vocab_size,
                                           **kwargs)
        model = cls(log_probs)
        model.history = history
        return model

    @property
    def vocab(self) -> list[str]:
        """The pieces, most probable first."""
        return sorted(self.log_probs, key=lambda x: -self.log_probs[x])

    def segment(self, word: str) -> list[str]:
        """Viterbi segmentation of one string (cached)."""
        if word not in self._cache:
            self._cache[word] = viterbi(word, self.log_probs, self.unk, max_len=self.max_len)
        return self._cache[word]

    def tokenize(self, text: str) -> list[str]:
        """Mark spaces with ``▁``, split into words, segment each."""
        if not isinstance(text, str):
            raise TypeError(f"tokenize expects a str, got {type(text).__name__}")
        return [p for w in metaspace_words(text) for p in self.segment(w)]

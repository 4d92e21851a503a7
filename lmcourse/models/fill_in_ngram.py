"""Filling a blank with an n-gram model: the count-based rival of a masked language model.

A masked LM guesses a hidden token from both sides. A left-to-right n-gram model can too:
the hidden token ``w`` enters the history of the ``n - 1`` tokens after it, so the guess
that makes the whole window most probable is

    argmax_w  P(w | l_{n-1} ... l_1) * prod_{j=1}^{n-1} P(r_j | ... l_1 w r_1 ... r_{j-1}),

which reads ``n - 1`` tokens on each side: an order-3 model sees two words left and two
right, like the ``±2`` window the masked LM's rival gets here. A neighbour that is itself
masked is unknown: the history stops before it on the left, and the product stops before
it on the right. ``[PAD]`` ends a window too.

The model (:class:`lmcourse.models.ngram.NGramLM`, Kneser-Ney) is fitted on the training
sentences, each followed by ``[SEP]`` as the text between two segments is. Candidates are
the ``k`` most likely tokens under ``P(w | left)`` and, for the right side, under a second
model fitted on the reversed sentences, ``P(w | r_1 r_2 ...)``; special tokens are never
guessed. :func:`tune_fill_in` chooses the order and the discount on development masks,
as the networks' settings are chosen.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from lmcourse.models.ngram import NGramLM

__all__ = ["FillIn", "tune_fill_in"]

ORDERS = (2, 3, 4, 5)
MAX_ORDER = 9  # the grid grows past 5 while its best order is its largest (below)
DISCOUNTS: tuple[float | str, ...] = (0.75, "modified")


@dataclass
class FillIn:
    """An order-``order`` Kneser-Ney model that fills masked positions from both sides."""

    order: int
    discount: float | str
    vocab_size: int
    special_ids: Sequence[int]
    sep_id: int
    pad_id: int
    k: int = 200
    forward: NGramLM = field(init=False)
    backward: NGramLM = field(init=False)

    def fit(self, sentences: Sequence[Sequence[int]]) -> FillIn:
        """Fit both directions on ``sentences`` (lists of ids), each followed by ``[SEP]``."""
        stream = [t for s in sentences for t in (*s, self.sep_id)]
        self.forward = NGramLM(self.order, self.vocab_size, self.discount).fit(stream)
        self.backward = NGramLM(self.order, self.vocab_size, self.discount).fit(stream[::-1])
        return self

    def _candidates(self, left: list[int], right: list[int]) -> list[int]:
        ban = set(self.special_ids)
        found: dict[int, None] = {}
        for model, context in ((self.forward, left), (self.backward, right[::-1])):
            p = model.distribution(context[-(self.order - 1):] if self.order > 1 else [])
            for w in torch.topk(p, min(self.k + len(ban), len(p))).indices.tolist():
                if w not in ban:
                    found[w] = None
        return list(found)

    def guess(self, row: Sequence[int], i: int, masked: Sequence[bool]) -> int:
        """The filled-in token at position ``i`` of ``row``; ``masked[j]`` says whether
        position ``j`` is hidden."""
        n = self.order - 1
        left: list[int] = []
        for j in range(i - 1, max(-1, i - 1 - n), -1):
            if masked[j] or row[j] == self.pad_id:
                break
            left.insert(0, row[j])
        right: list[int] = []
        for j in range(i + 1, min(len(row), i + 1 + n)):
            if masked[j] or row[j] == self.pad_id:
                break
            right.append(row[j])
        best, best_score = None, -math.inf
        for w in self._candidates(left, right):
            window = [*left, w, *right]
            at = len(left)
            score = math.log(self.forward.prob(w, window[max(0, at - n):at]))
            for j in range(at + 1, len(window)):
                score += math.log(self.forward.prob(window[j], window[max(0, j - n):j]))
            if score > best_score:
                best, best_score = w, score
        return best

    def accuracy(self, inputs: torch.Tensor, labels: torch.Tensor) -> float:
        """Share of the masked positions (``labels != -100``) filled with the right token;
        ``inputs`` are the masked rows the networks are scored on."""
        selected = labels != -100
        hits = total = 0
        for b, i in selected.nonzero().tolist():
            row, hidden = inputs[b].tolist(), selected[b].tolist()
            hits += self.guess(row, i, hidden) == int(labels[b, i])
            total += 1
        return hits / max(total, 1)


def tune_fill_in(sentences: Sequence[Sequence[int]], dev: tuple[torch.Tensor, torch.Tensor],
                 *, vocab_size: int, special_ids: Sequence[int], sep_id: int, pad_id: int,
                 orders: Sequence[int] = ORDERS, discounts: Sequence[float | str] = DISCOUNTS,
                 k: int = 200, workers: int = 1, max_order: int = MAX_ORDER
                 ) -> tuple[FillIn, list[tuple[int, float | str, float]]]:
    """Fit every ``(order, discount)`` on ``sentences``, score each on the development masks
    ``dev = (inputs, labels)``, keep the most accurate (ties: the first tried). While the best
    order is the largest tried, the next order is tried too (up to ``max_order``), so the
    choice never sits at the edge of the grid unless the cap is reached. Returns the model and
    every setting's development accuracy. ``workers`` > 1 scores the settings in that many
    processes (the same numbers, sooner: each setting is minutes of Python on 8,000
    pieces)."""
    args = (vocab_size, special_ids, sep_id, pad_id, k)
    tried: list[tuple[int, float | str, float]] = []
    batch = list(orders)
    while batch:
        settings = [(order, discount) for order in batch for discount in discounts]
        scores = _score_settings(settings, sentences, dev, args, workers)
        tried += [(o, d, score) for (o, d), score in zip(settings, scores, strict=True)]
        best = max(tried, key=lambda t: t[2])[0]  # the first of equals
        top = max(o for o, _, _ in tried)
        batch = [top + 1] if best == top and top < max_order else []
    order, discount, _ = max(tried, key=lambda t: t[2])
    return FillIn(order, discount, *args).fit(sentences), tried


def _score_settings(settings: list[tuple[int, float | str]], sentences, dev, args,
                    workers: int) -> list[float]:
    if workers > 1 and len(settings) > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        _SHARED["job"] = (sentences, dev, args)  # forked workers inherit it, unpickled
        context = multiprocessing.get_context("fork")
        try:
            with ProcessPoolExecutor(min(workers, len(settings)), mp_context=context,
                                     initializer=_one_thread) as pool:
                return list(pool.map(_score_setting, settings))
        finally:
            _SHARED.clear()
    return [FillIn(o, d, *args).fit(sentences).accuracy(*dev) for o, d in settings]


_SHARED: dict = {}


def _one_thread() -> None:
    """A forked worker runs torch on one thread: a parallel region entered after the parent's
    thread pool has run would wait for threads the fork did not copy, for ever."""
    torch.set_num_threads(1)


def _score_setting(setting: tuple[int, float | str]) -> float:
    sentences, dev, args = _SHARED["job"]
    return FillIn(*setting, *args).fit(sentences).accuracy(*dev)

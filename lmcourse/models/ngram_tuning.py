r"""Choosing an n-gram model's settings on a tuning split, the way a network's are chosen.

A baseline deserves the care its rival gets: the network's size and learning rate were
picked on a tuning split, so the n-gram's order and discount are too. :func:`tune_ngram`
tries every order in a range, a grid of single discounts $D$ (interpolated Kneser–Ney) and
modified Kneser–Ney (three discounts read off the counts), scores each on the tuning text,
and returns what it tried and the best.

The readable :class:`~lmcourse.models.ngram.NGramLM` walks its tables one token at a time;
tuning asks for dozens of settings on up to millions of characters. So :class:`NGramCounts`
counts every order once with numpy (an n-gram is a 64-bit polynomial hash of its ids,
exact in practice: two different n-grams of a text share a hash with probability about
$m^2 / 2^{64}$ for $m$ distinct n-grams) and :class:`NGramScorer` scores a whole text per
setting in a few array passes, level by level, with the recursion of ``NGramLM``:

$$p_k(t) = \frac{c(h_k\,w) - D(c(h_k\,w)) + \big(D_1 N_1(h_k\bullet) + D_2 N_2(h_k\bullet)
  + D_{3+} N_{3+}(h_k\bullet)\big)\, p_{k-1}(t)}{c(h_k)}$$

where $h_k$ are the $k$ tokens before position $t$ (raw counts at the top level,
continuation counts below) and $p_{-1} = 1/V$. The numbers equal ``NGramLM``'s (tested).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from lmcourse.models.ngram import NGramLM, _as_ids, modified_discounts

# The single discounts tried (interpolated KN); "modified" adds Chen & Goodman's three.
DISCOUNTS = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98)
# long histories still pay on repetitive text; the grid reaches past the best order on
# the Lee characters (24: the tuning perplexity is flat from 15 to 32 and rises at 40)
CHAR_ORDERS = (*range(2, 17), 20, 24, 32, 40)
# on the Lee words the best order is 5 (modified KN; 6 to 8 are flat or worse), inside the grid
WORD_ORDERS = range(2, 8)

_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)  # odd, so the hash is a bijection per step


def _hashes(ids: np.ndarray, length: int) -> np.ndarray:
    """Hash of ``ids[i : i + length]`` for every start ``i`` (``len(ids) - length + 1`` of
    them; a length of 0 gives the empty history's hash, 1, at every start)."""
    h = np.ones(len(ids) - length + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(length):
            h = h * _MULTIPLIER + ids[j:len(ids) - length + 1 + j].astype(np.uint64) + 1
    return h


@dataclass
class _Table:
    """One level's counts: n-grams (sorted hashes, counts) and their histories (sorted hashes,
    total count, how many next tokens were seen once, twice, three times or more)."""

    grams: np.ndarray
    counts: np.ndarray
    histories: np.ndarray
    totals: np.ndarray
    n1: np.ndarray
    n2: np.ndarray
    n3: np.ndarray
    count_of_counts: tuple[int, int, int, int]

    @classmethod
    def build(cls, grams: np.ndarray, histories: np.ndarray, counts: np.ndarray) -> _Table:
        """From distinct n-grams (hashes), the hash of each one's history, and its count."""
        order = np.argsort(grams)
        grams, histories, counts = grams[order], histories[order], counts[order]
        hist, inverse = np.unique(histories, return_inverse=True)

        def per_history(weights: np.ndarray) -> np.ndarray:
            return np.bincount(inverse, weights=weights, minlength=len(hist)).astype(np.int64)

        return cls(grams, counts.astype(np.int64), hist, per_history(counts),
                   per_history(counts == 1), per_history(counts == 2), per_history(counts >= 3),
                   tuple(int((counts == r).sum()) for r in (1, 2, 3, 4)))

    def look_up(self, grams: np.ndarray, histories: np.ndarray) -> dict[str, np.ndarray]:
        """c(h w), c(h), N1(h .), N2(h .), N3+(h .) for each queried (history, n-gram)."""
        out = {}
        i = np.minimum(np.searchsorted(self.grams, grams), len(self.grams) - 1)
        out["c"] = np.where(self.grams[i] == grams, self.counts[i], 0)
        j = np.minimum(np.searchsorted(self.histories, histories), len(self.histories) - 1)
        seen = self.histories[j] == histories
        for name in ("totals", "n1", "n2", "n3"):
            out[name] = np.where(seen, getattr(self, name)[j], 0)
        return out


class NGramCounts:
    """Raw and continuation counts of ``train_ids`` for every order up to ``max_order``."""

    def __init__(self, train_ids: Sequence[int] | np.ndarray | torch.Tensor, vocab_size: int,
                 max_order: int):
        if not isinstance(max_order, int) or max_order < 1:
            raise ValueError(f"max_order must be an integer >= 1, got {max_order!r}.")
        ids = _as_ids(train_ids, vocab_size, "train_ids")
        if len(ids) < max_order + 1:
            raise ValueError(f"{len(ids)} training tokens are too few for order {max_order}; "
                             "pass more text or lower max_order.")
        self.vocab_size, self.max_order = vocab_size, max_order
        self.raw: list[_Table] = []
        self.cont: list[_Table] = []
        grams = _hashes(ids, 1)
        for k in range(max_order):  # level k: histories of k tokens, n-grams of k + 1
            histories = _hashes(ids, k)[:len(grams)]
            unique, first, counts = np.unique(grams, return_index=True, return_counts=True)
            self.raw.append(_Table.build(unique, histories[first], counts))
            longer = _hashes(ids, k + 2)
            if k + 1 < max_order:
                # N1+(. h w): distinct (k+2)-grams ending in the (k+1)-gram (h w), which starts
                # one token later, at index i + 1 of `grams`
                _, first_longer = np.unique(longer, return_index=True)
                suffix_index = first_longer + 1
                unique, first, counts = np.unique(grams[suffix_index], return_index=True,
                                                  return_counts=True)
                self.cont.append(_Table.build(unique, histories[suffix_index[first]], counts))
            grams = longer

    def scorer(self, ids: Sequence[int] | np.ndarray | torch.Tensor) -> NGramScorer:
        """Everything the counts say about the positions of ``ids``, to score any setting."""
        return NGramScorer(self, _as_ids(ids, self.vocab_size, "ids"))

    def rows_scorer(self, rows: np.ndarray | torch.Tensor) -> RowsScorer:
        """A scorer for the rows of a ``(rows x length)`` array, each read alone."""
        return RowsScorer(self, rows)

    def text_scorer(self, text: Sequence[int] | np.ndarray | torch.Tensor
                    ) -> NGramScorer | RowsScorer:
        """:meth:`scorer` for one stream, :meth:`rows_scorer` for a 2-D array of windows."""
        return self.rows_scorer(text) if np.ndim(text) == 2 else self.scorer(text)


class NGramScorer:
    """Perplexity of one text under any (order, discount) the counts allow, each in a few
    array passes (the table look-ups are done once, here)."""

    def __init__(self, counts: NGramCounts, ids: np.ndarray):
        if len(ids) == 0:
            raise ValueError("perplexity needs at least one token id; got an empty sequence.")
        self.counts, self.length = counts, len(ids)
        self.raw, self.cont = [], []
        for k in range(min(counts.max_order, len(ids))):
            grams = _hashes(ids, k + 1)  # position t = i + k
            histories = _hashes(ids, k)[:len(grams)]
            self.raw.append(counts.raw[k].look_up(grams, histories))
            self.cont.append(counts.cont[k].look_up(grams, histories)
                             if k < len(counts.cont) else None)

    def log_prob(self, order: int, discount: float | str) -> float:
        """Total natural log-likelihood, as ``NGramLM(order, V, discount).log_prob(ids)``."""
        return float(self.log_probs(order, discount).sum())

    def log_probs(self, order: int, discount: float | str) -> np.ndarray:
        """log P(x_t | the up to ``order - 1`` tokens before it in the text), for every t."""
        if not 1 <= order <= self.counts.max_order:
            raise ValueError(f"order {order} is outside the counts' 1..{self.counts.max_order}.")
        p = np.full(self.length, 1.0 / self.counts.vocab_size)
        for k in range(min(order, self.length)):
            top = k == order - 1
            # positions k.. use continuation counts below the top level; the text's first
            # positions (t = k, history shorter than order - 1) use raw counts at their top
            kinds = [("raw", slice(k, None))] if top else [("raw", slice(k, k + 1)),
                                                          ("cont", slice(k + 1, None))]
            for kind, where in kinds:
                table = (self.counts.raw if kind == "raw" else self.counts.cont)[k]
                found = (self.raw if kind == "raw" else self.cont)[k]
                shift = slice(where.start - k, None if where.stop is None else where.stop - k)
                self._step(p[where], {n: a[shift] for n, a in found.items()},
                           _level_discounts(table, discount))
        return np.log(p)

    @staticmethod
    def _step(p: np.ndarray, found: dict[str, np.ndarray], ds: tuple[float, float, float]
              ) -> None:
        """One level of the recursion, in place on the positions whose history was seen."""
        seen = found["totals"] > 0
        c = found["c"][seen]
        d = np.where(c > 0, np.asarray(ds)[np.clip(c, 1, 3) - 1], 0.0)
        freed = ds[0] * found["n1"][seen] + ds[1] * found["n2"][seen] + ds[2] * found["n3"][seen]
        p[seen] = (c - d + freed * p[seen]) / found["totals"][seen]

    def perplexity(self, order: int, discount: float | str) -> float:
        """exp(-log_prob / number of tokens)."""
        return math.exp(-self.log_prob(order, discount) / self.length)


class RowsScorer:
    """The protocol of a network that reads each row (a window, or a stream) from an empty
    state: every row of a ``(rows x length)`` array is read alone, so no history crosses a
    row's start, and each row's first token, which has no context on either side, is not
    scored. ``scored`` is how many tokens are: ``rows x (length - 1)``, the count a
    network's loss over ``row[1:]`` averages."""

    def __init__(self, counts: NGramCounts, rows: np.ndarray | torch.Tensor):
        rows = np.asarray(rows.cpu() if isinstance(rows, torch.Tensor) else rows)
        if rows.ndim != 2 or rows.shape[1] < 2:
            raise ValueError(f"rows must be a 2-D array (rows x length, length >= 2), got "
                             f"shape {rows.shape}; cut the text into windows first.")
        self.scorers = [counts.scorer(row) for row in rows]
        self.scored = rows.shape[0] * (rows.shape[1] - 1)

    def log_prob(self, order: int, discount: float | str) -> float:
        """Total natural log-likelihood of every row's tokens but its first."""
        return float(sum(s.log_probs(order, discount)[1:].sum() for s in self.scorers))

    def perplexity(self, order: int, discount: float | str) -> float:
        """exp(-log_prob / scored)."""
        return math.exp(-self.log_prob(order, discount) / self.scored)


def _level_discounts(table: _Table, discount: float | str) -> tuple[float, float, float]:
    if discount == "modified":
        return modified_discounts(table.count_of_counts)
    return (float(discount),) * 3


@dataclass(frozen=True)
class NGramSetting:
    """One point of the grid: an order and a discount (a number, or ``"modified"``)."""

    order: int
    discount: float | str

    def __str__(self) -> str:
        if self.discount == "modified":
            return f"modified Kneser-Ney, order {self.order}"
        return f"Kneser-Ney, order {self.order}, D = {self.discount:g}"

    def model(self, train_ids: Sequence[int] | np.ndarray | torch.Tensor, vocab_size: int
              ) -> NGramLM:
        """The readable model with these settings, fitted (to sample from, or to inspect)."""
        return NGramLM(self.order, vocab_size, self.discount).fit(train_ids)


@dataclass
class TunedNGram:
    """What :func:`tune_ngram` tried (every setting's tuning-split perplexity) and chose."""

    best: NGramSetting
    tuning_perplexity: float
    tried: dict[NGramSetting, float] = field(repr=False)

    def best_of(self, variant: str) -> tuple[NGramSetting, float]:
        """The best single-discount (``"kn"``) or ``"modified"`` setting and its perplexity."""
        if variant not in ("kn", "modified"):
            raise ValueError(f"variant is 'kn' or 'modified', got {variant!r}")
        pool = {s: v for s, v in self.tried.items()
                if (s.discount == "modified") == (variant == "modified")}
        if not pool:
            raise ValueError(f"no {variant!r} setting was tried")
        best = min(pool, key=pool.get)
        return best, pool[best]

    def label(self, name: str = "tuned KN") -> str:
        """A baseline's name for a table or a verdict, with the settings the tuning chose:
        ``tuned KN (modified Kneser-Ney, order 24)``."""
        return f"{name} ({self.best})"

    def summary(self) -> str:
        orders = sorted({s.order for s in self.tried})
        return (f"tuned n-gram: {self.best} (tuning-split perplexity "
                f"{self.tuning_perplexity:.3f}; {len(self.tried)} settings tried, orders "
                f"{orders[0]} to {orders[-1]})")

    def perplexity(self, train_ids: Sequence[int] | np.ndarray | torch.Tensor,
                   held_out_ids: Sequence[int] | np.ndarray | torch.Tensor,
                   vocab_size: int) -> float:
        """The chosen setting refitted on ``train_ids`` and scored on ``held_out_ids`` (one
        stream, or a 2-D array of windows each read alone, as in :func:`tune_ngram`)."""
        counts = NGramCounts(train_ids, vocab_size, self.best.order)
        scorer = counts.text_scorer(held_out_ids)
        return scorer.perplexity(self.best.order, self.best.discount)


def tuned_perplexities(tuned: TunedNGram, train_ids: Sequence[int] | np.ndarray | torch.Tensor,
                       held_out: Sequence[int] | np.ndarray | torch.Tensor, vocab_size: int,
                       suffix: str = "") -> dict[str, float]:
    """Both variants as a reference run records them: the best single-discount setting
    (``kn_tuned``) and the best modified one (``modified_kn_tuned``) that ``tuned`` chose,
    each counted on ``train_ids`` and scored on ``held_out`` (a stream, or windows each read
    alone), with its order, its discount and its tuning-split perplexity; ``suffix`` is
    appended to each name (``"_fwd"``)."""
    orders = [tuned.best_of(v)[0].order for v in ("kn", "modified")]
    counts = NGramCounts(train_ids, vocab_size, max(orders))
    scorer = counts.text_scorer(held_out)
    out: dict[str, float] = {}
    for variant, key in (("kn", "kn_tuned"), ("modified", "modified_kn_tuned")):
        setting, tuning_ppl = tuned.best_of(variant)
        key += suffix
        out[key] = round(scorer.perplexity(setting.order, setting.discount), 4)
        out[f"{key}_order"] = setting.order
        if variant == "kn":
            out[f"{key}_discount"] = float(setting.discount)
        out[f"{key}_tuning_ppl"] = round(tuning_ppl, 4)
    return out


def recorded_kn_baseline(baselines: Mapping[str, float], suffix: str = "") -> tuple[str, float]:
    """The tuned modified Kneser–Ney baseline that :func:`tuned_perplexities` recorded in a
    reference run's ``baselines``, as a verdict's ``(name, held-out perplexity)``:
    ``("tuned KN (modified Kneser-Ney, order 16)", 4.6992)``."""
    key = f"modified_kn_tuned{suffix}"
    if key not in baselines or f"{key}_order" not in baselines:
        raise KeyError(f"no tuned modified Kneser-Ney baseline ({key!r} and {key + '_order'!r}) "
                       f"among {sorted(baselines)}: was it recorded by tuned_perplexities?")
    setting = NGramSetting(int(baselines[f"{key}_order"]), "modified")
    return f"tuned KN ({setting})", float(baselines[key])


def tune_ngram(train_ids: Sequence[int] | np.ndarray | torch.Tensor,
               tuning_ids: Sequence[int] | np.ndarray | torch.Tensor, vocab_size: int,
               orders: Iterable[int] = CHAR_ORDERS,
               discounts: Iterable[float | str] = (*DISCOUNTS, "modified")) -> TunedNGram:
    """Every (order, discount) of the grid fitted on ``train_ids`` and scored on
    ``tuning_ids``; the lowest tuning perplexity wins. ``tuning_ids`` is one stream, or a
    2-D array of windows each read alone (:class:`RowsScorer`), to score the tuning text
    the way the rival network reads it. Never pass the held-out text here: the held-out
    text is for the verdict, after the choice."""
    orders, discounts = sorted(set(orders)), list(dict.fromkeys(discounts))
    if not orders or not discounts:
        raise ValueError("tune_ngram needs at least one order and one discount to try.")
    counts = NGramCounts(train_ids, vocab_size, orders[-1])
    scorer = counts.text_scorer(tuning_ids)
    tried = {NGramSetting(n, d): scorer.perplexity(n, d) for n in orders for d in discounts}
    best = min(tried, key=tried.get)
    return TunedNGram(best, tried[best], tried)


def best_ngram(train_ids: Sequence[int] | np.ndarray | torch.Tensor,
               held_out_ids: Sequence[int] | np.ndarray | torch.Tensor, vocab_size: int,
               orders: Iterable[int] = CHAR_ORDERS,
               discounts: Iterable[float | str] = (*DISCOUNTS, "modified")
               ) -> tuple[TunedNGram, float]:
    """"The best n-gram", chosen as a network's settings are: the end of the training text
    (as long as the held-out text, at most a fifth of the training text) is cut off as a
    tuning split, the grid is scored on it with counts from the rest, and the winner is
    refitted on all of ``train_ids`` and scored on ``held_out_ids``. Returns the tuning
    record and that held-out perplexity."""
    train = _as_ids(train_ids, vocab_size, "train_ids")
    held_out = _as_ids(held_out_ids, vocab_size, "held_out_ids")
    cut = min(len(held_out), len(train) // 5)
    tuned = tune_ngram(train[:-cut], train[-cut:], vocab_size, orders, discounts)
    return tuned, tuned.perplexity(train, held_out, vocab_size)

r"""Interpolated Kneser–Ney n-gram language model: the baseline every neural LM must beat.

An order-$n$ model predicts token $w$ from its history $h$, the previous $n-1$ tokens.
Kneser–Ney (in Chen & Goodman's *interpolated* form, with one absolute discount $D$)
subtracts $D$ from every observed count and gives the mass it frees to a lower-order
model that conditions on the shorter history $h'$ ($h$ without its first token):

$$P_{KN}(w \mid h) = \frac{\max(c(h\,w) - D,\ 0)}{c(h)}
  + \frac{D \cdot N_{1+}(h\,\bullet)}{c(h)}\; P_{KN}(w \mid h'),$$

where $c(h\,w)$ is how often $w$ followed $h$, $c(h) = \sum_w c(h\,w)$, and
$N_{1+}(h\,\bullet)$ is the number of distinct tokens seen after $h$ (each lost $D$).
If $h$ was never seen ($c(h) = 0$) the model backs off fully: $P_{KN}(w \mid h) =
P_{KN}(w \mid h')$.

The lower orders use **continuation counts** instead of raw counts:
$c(h\,w)$ is replaced by $N_{1+}(\bullet\,h\,w)$, the number of distinct tokens that
preceded $h\,w$. A word like "Francisco" is frequent but follows almost only "San", so
as a *fallback* for unseen histories it deserves little probability.

The recursion ends at the unigram level, which interpolates with the uniform
distribution $1/V$ over the whole vocabulary, so every probability is $> 0$:

$$P_{KN}(w) = \frac{\max(N_{1+}(\bullet\,w) - D,\ 0)}{N_{1+}(\bullet\,\bullet)}
  + \frac{D \cdot N_{1+}(\bullet)}{N_{1+}(\bullet\,\bullet)} \cdot \frac{1}{V}.$$

A history shorter than $n-1$ tokens (the start of a text) is scored by the shorter
model it defines: its top level uses raw counts, the levels below continuation counts.
So ``distribution([])`` of any model equals that of an order-1 model of the same text.

**Modified Kneser–Ney** (Chen & Goodman 1998, section 3) discounts a count by how large it
is: $D(c) = D_1, D_2, D_{3+}$ for $c = 1, 2, \ge 3$, and the mass freed at $h$ becomes
$D_1 N_1(h\,\bullet) + D_2 N_2(h\,\bullet) + D_{3+} N_{3+}(h\,\bullet)$ (how many tokens
followed $h$ once, twice, three times or more). The three discounts are not tuned but read
off each level's count-of-counts $n_r$ (how many n-grams occur exactly $r$ times):

$$Y = \frac{n_1}{n_1 + 2 n_2},\quad D_1 = 1 - 2Y\frac{n_2}{n_1},\quad
  D_2 = 2 - 3Y\frac{n_3}{n_2},\quad D_{3+} = 3 - 4Y\frac{n_4}{n_3}.$$

``NGramLM(order, V, discount="modified")`` builds it; a number builds the one-discount model.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np
import torch

# A table for one level: history tuple -> (counts of the next token, their total).
Table = dict[tuple[int, ...], tuple[dict[int, int], int]]
# The discounts of one level, for counts 1, 2 and 3 or more (all equal in plain KN).
Discounts = tuple[float, float, float]


def _as_ids(ids: Sequence[int] | np.ndarray | torch.Tensor, vocab_size: int,
            what: str) -> np.ndarray:
    """Token ids as a 1-D int64 array, checked to lie in ``[0, vocab_size)``."""
    if isinstance(ids, torch.Tensor):
        ids = ids.detach().cpu().numpy()
    arr = np.asarray(ids)
    if arr.size == 0:
        arr = arr.astype(np.int64)
    if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"{what} must be a 1-D sequence of integer token ids, got an array of "
                        f"shape {arr.shape} and dtype {arr.dtype}; encode the text first "
                        "(e.g. with Vocab.encode) and flatten it.")
    if arr.size and (arr.min() < 0 or arr.max() >= vocab_size):
        bad = arr[(arr < 0) | (arr >= vocab_size)][0]
        raise ValueError(f"{what} contains id {bad}, outside [0, vocab_size={vocab_size}); "
                         "build the model with vocab_size=len(vocab) of the vocabulary "
                         "that encoded these ids.")
    return arr.astype(np.int64)


def _table(counts: Counter[tuple[int, ...]]) -> Table:
    """Group counts of n-grams (h..., w) by their history h."""
    table: Table = {}
    for gram, c in counts.items():
        nexts, total = table.get(gram[:-1], ({}, 0))
        nexts[gram[-1]] = c
        table[gram[:-1]] = (nexts, total + c)
    return table


def modified_discounts(count_of_counts: Sequence[int]) -> Discounts:
    """Chen & Goodman's $D_1, D_2, D_{3+}$ from $n_1..n_4$ (n-grams seen exactly 1..4 times).

    Each is kept inside $(0, r)$ for the count $r$ it discounts (with too few counts to
    estimate it, a sparse level, it falls back to the edge of that range)."""
    n1, n2, n3, n4 = (max(int(n), 0) for n in count_of_counts)
    y = n1 / (n1 + 2 * n2) if n1 + 2 * n2 else 0.5
    raw = (1 - 2 * y * n2 / n1 if n1 else 0.5,
           2 - 3 * y * n3 / n2 if n2 else 1.0,
           3 - 4 * y * n4 / n3 if n3 else 1.5)
    return tuple(min(max(d, 0.05), r - 0.05) for r, d in zip((1, 2, 3), raw, strict=True))


def _discounts(table: Table, discount: float | str) -> Discounts:
    if discount != "modified":
        return (discount, discount, discount)
    n = Counter(min(c, 5) for nexts, _ in table.values() for c in nexts.values())
    return modified_discounts([n[1], n[2], n[3], n[4]])


class NGramLM:
    """Interpolated Kneser–Ney language model of order ``order`` over ``vocab_size`` ids.

    Usage::

        lm = NGramLM(order=3, vocab_size=len(vocab)).fit(train_ids)
        lm.distribution(context)   # float64 tensor of size vocab_size, sums to 1
        lm.prob(token, context)    # one entry of it, computed alone (fast)
        lm.perplexity(heldout_ids)
    """

    def __init__(self, order: int, vocab_size: int, discount: float | str = 0.75):
        if not isinstance(order, int) or order < 1:
            raise ValueError(f"order must be an integer >= 1 (1 = unigram, 2 = bigram, ...), "
                             f"got {order!r}.")
        if not isinstance(vocab_size, int) or vocab_size < 1:
            raise ValueError(f"vocab_size must be a positive integer (len(vocab)), "
                             f"got {vocab_size!r}.")
        if discount != "modified" and not (isinstance(discount, (int, float))
                                           and 0.0 < discount < 1.0):
            raise ValueError(f"discount must lie strictly between 0 and 1 (0.75 is the usual "
                             f"choice) or be 'modified' (three discounts per level, read off "
                             f"the counts), got {discount!r}.")
        self.order, self.vocab_size = order, vocab_size
        self.discount = discount if discount == "modified" else float(discount)
        # raw[k] / cont[k]: tables for histories of length k with raw / continuation counts;
        # raw_d[k] / cont_d[k]: their discounts for counts 1, 2, 3+.
        self.raw: list[Table] = []
        self.cont: list[Table] = []
        self.raw_d: list[Discounts] = []
        self.cont_d: list[Discounts] = []
        self._freed: dict[tuple[int, tuple[int, ...]], float] = {}  # modified KN's freed mass

    def __repr__(self) -> str:
        state = "fitted" if self.raw else "not fitted"
        return (f"NGramLM(order={self.order}, vocab_size={self.vocab_size}, "
                f"discount={self.discount}, {state})")

    def fit(self, ids: Sequence[int] | np.ndarray | torch.Tensor) -> NGramLM:
        """Count the n-grams of ``ids`` (all orders 1..order); returns ``self``."""
        arr = _as_ids(ids, self.vocab_size, "ids")
        if len(arr) < self.order:
            raise ValueError(f"cannot fit an order-{self.order} model on {len(arr)} tokens: "
                             f"it needs at least {self.order}; pass more text or lower the "
                             "order.")
        toks = arr.tolist()
        grams = [Counter(zip(*(toks[i:] for i in range(k + 1)), strict=False))
                 for k in range(self.order)]  # grams[k]: counts of (k+1)-grams
        self.raw = [_table(g) for g in grams]
        # N1+(. h w): the number of distinct tokens seen before the k+1-gram (h w).
        self.cont = [_table(Counter(g[1:] for g in grams[k + 1])) for k in range(self.order - 1)]
        self._freed = {}
        self.raw_d = [_discounts(t, self.discount) for t in self.raw]
        self.cont_d = [_discounts(t, self.discount) for t in self.cont]
        return self

    def _history(self, context: Sequence[int] | np.ndarray | torch.Tensor) -> tuple[int, ...]:
        """The last (up to) ``order - 1`` ids of ``context``, checked, as a tuple."""
        if not self.raw:
            raise RuntimeError("this NGramLM has not been fitted yet; call .fit(train_ids) "
                               "before asking it for probabilities.")
        if isinstance(context, (list, tuple)) and all(
                type(t) is int and 0 <= t < self.vocab_size for t in context):
            ctx = tuple(context)  # the common case, checked without a round trip to numpy
        else:
            ctx = tuple(_as_ids(context, self.vocab_size, "context").tolist())
        return ctx[max(0, len(ctx) - self.order + 1):]

    def _levels(self, h: tuple[int, ...]) -> list[tuple[Table, Discounts, tuple[int, ...]]]:
        """(table, its discounts, history) from the unigram level up to the full history."""
        top = len(h)
        return [(self.raw[k], self.raw_d[k], h) if k == top else
                (self.cont[k], self.cont_d[k], h[top - k:]) for k in range(top + 1)]

    def distribution(self, context: Sequence[int] | np.ndarray | torch.Tensor = ()
                     ) -> torch.Tensor:
        """P(. | context) over the whole vocabulary: float64 tensor, sums to 1, all > 0.

        Only the last ``order - 1`` ids of ``context`` matter; fewer (even none) are allowed.
        """
        p = np.full(self.vocab_size, 1.0 / self.vocab_size)
        for table, ds, h in self._levels(self._history(context)):
            if h not in table:  # unseen history: back off fully
                continue
            nexts, total = table[h]
            counts = np.fromiter(nexts.values(), np.float64, len(nexts))
            d = np.asarray(ds)[np.minimum(counts, 3).astype(np.int64) - 1]
            p *= d.sum() / total  # the mass the discounts freed goes to the shorter history
            p[np.fromiter(nexts.keys(), np.int64, len(nexts))] += (counts - d) / total
        return torch.from_numpy(p)

    def prob(self, token: int, context: Sequence[int] | np.ndarray | torch.Tensor = ()
             ) -> float:
        """P(token | context), the same recursion as ``distribution`` for one token only."""
        if not 0 <= int(token) < self.vocab_size:
            raise ValueError(f"token {token} is outside [0, vocab_size={self.vocab_size}).")
        return self._prob(int(token), self._levels(self._history(context)))

    def _prob(self, w: int, levels: list[tuple[Table, Discounts, tuple[int, ...]]]) -> float:
        p = 1.0 / self.vocab_size
        for table, ds, h in levels:
            entry = table.get(h)
            if entry is not None:
                nexts, total = entry
                c = nexts.get(w, 0)
                if ds[0] == ds[1] == ds[2]:  # one discount: D * N1+(h .) is freed
                    freed = ds[0] * len(nexts)
                else:  # D1 N1(h .) + D2 N2(h .) + D3+ N3+(h .), summed once per history
                    key = (id(table), h)
                    freed = self._freed.get(key)
                    if freed is None:
                        freed = self._freed[key] = sum(ds[min(n, 3) - 1]
                                                       for n in nexts.values())
                p = ((c - ds[min(c, 3) - 1] if c else 0.0) + freed * p) / total
        return p

    def log_prob(self, ids: Sequence[int] | np.ndarray | torch.Tensor) -> float:
        """Total natural log-likelihood of ``ids``: sum over t of log P(x_t | x_<t).

        Each token is scored given the up to ``order - 1`` tokens before it *inside* ``ids``:
        the first token with no history (the unigram model), the second with one token, and
        so on; from token ``order`` on, with the full history. Every token is scored.
        """
        toks = _as_ids(ids, self.vocab_size, "ids").tolist()
        self._history(())  # raises if not fitted
        n, total = self.order, 0.0
        for t, w in enumerate(toks):
            total += math.log(self._prob(w, self._levels(tuple(toks[max(0, t - n + 1):t]))))
        return total

    def perplexity(self, ids: Sequence[int] | np.ndarray | torch.Tensor) -> float:
        """exp(-log_prob(ids) / len(ids)) on held-out ids (see ``log_prob`` for the start)."""
        n = len(ids)
        if n == 0:
            raise ValueError("perplexity needs at least one token id; got an empty sequence.")
        return math.exp(-self.log_prob(ids) / n)


class NGramAsNetwork(torch.nn.Module):
    """An :class:`NGramLM` behind the networks' interface, ``logits, None = module(x)``, so
    the same decoding code (greedy, temperature, top-k in :mod:`lmcourse.sampling`) writes
    with it: ``logits[b, t] = log P_KN(. | x[b, t-n+2 .. t])``. Stateless, with
    ``max_len = order - 1``: a decoder re-reads only the history the counts can use."""

    def __init__(self, ngram: NGramLM):
        super().__init__()
        self.ngram = ngram
        self.max_len = max(1, ngram.order - 1)
        # an empty parameter, so that code asking a model for its device finds one
        self._anchor = torch.nn.Parameter(torch.zeros(0), requires_grad=False)

    def forward(self, x: torch.Tensor, state: None = None) -> tuple[torch.Tensor, None]:
        rows = []
        for row in x.tolist():
            history = (row[max(0, t - self.max_len + 1):t + 1] for t in range(len(row)))
            rows.append(torch.stack([self.ngram.distribution(h) for h in history]))
        return torch.stack(rows).log().float().to(x.device), None

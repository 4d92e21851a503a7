"""The bag of words, tuned like a model: features and penalty chosen on a tuning split.

A baseline left at its defaults is a straw man. This one gets what the networks get: a
grid of settings, each fitted on the training labels and scored on the same **tuning
split** the networks choose their settings on, the best refitted and kept. The grid:

- **n-grams**: words only, or words and word pairs (bigrams: "not good" is its own
  feature, which single words cannot say);
- **weighting** of a text's feature counts ``c_j``: ``counts`` (``c_j``), ``binary``
  (``1[c_j > 0]``) or ``tfidf`` (``(1 + log c_j) * idf_j``, with
  ``idf_j = log((1 + N) / (1 + df_j)) + 1`` over the ``N`` training texts, then the row
  scaled to unit length);
- **penalty** ``lambda`` of the L2 logistic regression (:func:`lmcourse.models.logistic.
  fit_logistic`, here on a sparse matrix: most of a text's features are 0).

A feature is kept if it occurs in at least ``min_count`` training texts (2 for bigrams, 1
for words), so a handful of labels still has a vocabulary. Selection reads ROC-AUC on the
tuning split, ties going to the first setting tried (the simplest).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from lmcourse.data import tokenize
from lmcourse.metrics import roc_auc
from lmcourse.models.logistic import LogisticModel, fit_logistic

__all__ = ["GRID_LAMBDAS", "NGRAMS", "WEIGHTINGS", "Settings", "TunedBagOfWords", "features",
           "tune_bag_of_words", "tune_logistic"]

NGRAMS = (1, 2)
WEIGHTINGS = ("counts", "binary", "tfidf")
GRID_LAMBDAS = (1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0)


@dataclass(frozen=True)
class Settings:
    """One point of the grid: the largest n-gram, the weighting and the L2 penalty."""

    ngrams: int
    weighting: str
    lam: float

    def __str__(self) -> str:
        words = "words" if self.ngrams == 1 else "words + bigrams"
        return f"{words}, {self.weighting}, lambda {self.lam:g}"


def _grams(text: str, ngrams: int) -> list[str]:
    words = tokenize(text)
    out = list(words)
    if ngrams >= 2:
        out += [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]
    return out


@dataclass
class Vocabulary:
    """The kept features of a training set, their column and (for tf-idf) their idf."""

    ngrams: int
    weighting: str
    columns: dict[str, int]
    idf: torch.Tensor

    @classmethod
    def fit(cls, texts: Sequence[str], ngrams: int, weighting: str) -> Vocabulary:
        if weighting not in WEIGHTINGS:
            raise ValueError(f"unknown weighting {weighting!r}: use one of {WEIGHTINGS}")
        if ngrams not in NGRAMS:
            raise ValueError(f"ngrams is the longest n-gram kept, one of {NGRAMS}; got {ngrams}")
        df = Counter(g for t in texts for g in set(_grams(t, ngrams)))
        kept = sorted(g for g, n in df.items() if n >= (2 if " " in g else 1))
        idf = torch.tensor([math.log((1 + len(texts)) / (1 + df[g])) + 1 for g in kept],
                           dtype=torch.float64)
        return cls(ngrams, weighting, {g: i for i, g in enumerate(kept)}, idf)


def features(vocab: Vocabulary, texts: Sequence[str]) -> torch.Tensor:
    """The ``len(texts) x len(vocab)`` sparse (COO) feature matrix of the module docstring."""
    rows, cols, values = [], [], []
    for r, text in enumerate(texts):
        counts = Counter(vocab.columns[g] for g in _grams(text, vocab.ngrams)
                         if g in vocab.columns)
        if not counts:
            continue
        js = sorted(counts)
        if vocab.weighting == "counts":
            vs = [float(counts[j]) for j in js]
        elif vocab.weighting == "binary":
            vs = [1.0] * len(js)
        else:
            vs = [(1 + math.log(counts[j])) * float(vocab.idf[j]) for j in js]
            norm = math.sqrt(sum(v * v for v in vs))
            vs = [v / norm for v in vs]
        rows += [r] * len(js)
        cols += js
        values += vs
    index = torch.tensor([rows, cols], dtype=torch.long).reshape(2, -1)
    return torch.sparse_coo_tensor(index, torch.tensor(values, dtype=torch.float64),
                                   (len(texts), len(vocab.columns)),
                                   check_invariants=True).coalesce()


@dataclass
class TunedBagOfWords:
    """The chosen setting refitted on the training labels; ``tried`` holds every setting's
    tuning-split ROC-AUC, in the order tried. Call it on texts for ``P(y = 1)``."""

    settings: Settings
    vocab: Vocabulary
    model: LogisticModel
    tried: list[tuple[Settings, float]] = field(default_factory=list)

    def __call__(self, texts: Sequence[str]) -> torch.Tensor:
        return self.model(features(self.vocab, texts))

    @property
    def num_parameters(self) -> int:
        return self.model.w.numel() + 1


def _check(texts_or_X, labels, part: str) -> torch.Tensor:
    labels = torch.as_tensor(labels)
    if len(texts_or_X) != len(labels):
        raise ValueError(f"{part}: {len(texts_or_X)} examples for {len(labels)} labels")
    return labels


def tune_logistic(X: torch.Tensor, y: torch.Tensor, X_tune: torch.Tensor, y_tune: torch.Tensor,
                  lambdas: Sequence[float] = GRID_LAMBDAS) -> tuple[LogisticModel, list[float]]:
    """The L2 logistic regression whose ``lambda`` scores the highest ROC-AUC on the tuning
    split (ties: the first); returns it and every ``lambda``'s tuning ROC-AUC."""
    y, y_tune = _check(X, y, "training"), _check(X_tune, y_tune, "tuning")
    if len(set(y_tune.tolist())) < 2:
        raise ValueError("the tuning split needs both classes to score a setting by ROC-AUC")
    best, scores = None, []
    for lam in lambdas:
        model = fit_logistic(X, y, lam)
        scores.append(roc_auc(y_tune.tolist(), model(X_tune).tolist()))
        if best is None or scores[-1] > max(scores[:-1]):
            best = model
    return best, scores


def tune_bag_of_words(train_texts: Sequence[str], train_labels: torch.Tensor,
                      tune_texts: Sequence[str], tune_labels: torch.Tensor,
                      ngrams: Sequence[int] = NGRAMS, weightings: Sequence[str] = WEIGHTINGS,
                      lambdas: Sequence[float] = GRID_LAMBDAS) -> TunedBagOfWords:
    """Fit every setting of the grid on the training labels, score each on the tuning split
    (ROC-AUC), keep the best. ``*_labels`` are 0/1; both classes must be in each set."""
    train_labels = _check(train_texts, train_labels, "training")
    tune_labels = _check(tune_texts, tune_labels, "tuning")
    tried, best = [], None
    for n in ngrams:
        for weighting in weightings:
            vocab = Vocabulary.fit(train_texts, n, weighting)
            model, scores = tune_logistic(features(vocab, train_texts), train_labels,
                                          features(vocab, tune_texts), tune_labels, lambdas)
            tried += [(Settings(n, weighting, lam), score)
                      for lam, score in zip(lambdas, scores, strict=True)]
            if best is None or max(scores) > best[0]:
                best = (max(scores), Settings(n, weighting, model.lam), vocab, model)
    _, settings, vocab, model = best
    return TunedBagOfWords(settings, vocab, model, tried)

"""Logistic regression with an L2 penalty, its strength chosen by cross-validation.

The classifier every learning curve of the course is measured against, on two kinds of
features: word counts (a bag of words) and frozen sentence vectors of a pre-trained
encoder. With ``x`` a feature vector and ``y`` in {0, 1},

    P(y = 1 | x) = sigmoid(w . x + b),

fitted by minimising the class-balanced cross-entropy plus an L2 penalty on ``w``,

    L(w, b) = sum_i c_{y_i} softplus(-s_i (w . x_i + b)) / sum_i c_{y_i} + (lambda / 2) ||w||^2,

with ``s_i = 2 y_i - 1`` and ``c_k = n / (2 n_k)`` (both classes weigh the same in total;
``softplus(-z) = -log sigmoid(z)``). ``L`` is convex, so L-BFGS on the full batch finds
its minimum in float64. ``lambda`` is chosen by **k-fold cross-validation on the labelled
examples themselves** (mean ROC-AUC over the held-out folds, classes stratified): with 16
labels there is no spare validation set, so none is used.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F

from lmcourse.data import tokenize
from lmcourse.metrics import roc_auc

__all__ = ["LAMBDAS", "LogisticModel", "bag_of_words", "bag_of_words_classifier",
           "cross_validate", "fit_logistic", "stratified_folds"]

#: the penalties cross-validation chooses from
LAMBDAS = (1e-4, 1e-3, 1e-2, 1e-1, 1.0)


class LogisticModel:
    """``P(y = 1 | x) = sigmoid(x . w + b)`` with the ``lam`` it was fitted with."""

    def __init__(self, w: torch.Tensor, b: torch.Tensor, lam: float):
        self.w, self.b, self.lam = w, b, lam

    def __call__(self, X: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(X.double() @ self.w + self.b)


def fit_logistic(X: torch.Tensor, y: torch.Tensor, lam: float = 1e-2, max_iter: int = 200
                 ) -> LogisticModel:
    """Minimise ``L(w, b)`` (module docstring) with L-BFGS; ``X`` is ``N x D``, ``y`` 0/1."""
    X, y = X.double(), torch.as_tensor(y).double()
    counts = torch.stack([(y == 0).sum(), (y == 1).sum()])
    if (counts == 0).any():
        raise ValueError(f"logistic regression needs both classes; got {counts.tolist()} "
                         "examples of labels 0 and 1")
    c = (len(y) / (2 * counts))[y.long()]
    s = 2 * y - 1
    w = torch.zeros(X.shape[1], dtype=torch.float64, requires_grad=True)
    b = torch.zeros((), dtype=torch.float64, requires_grad=True)
    optimizer = torch.optim.LBFGS([w, b], max_iter=max_iter, line_search_fn="strong_wolfe",
                                  tolerance_grad=1e-9, tolerance_change=1e-12)

    def closure() -> torch.Tensor:
        optimizer.zero_grad()
        loss = (c * F.softplus(-s * (X @ w + b))).sum() / c.sum() + lam / 2 * w.square().sum()
        loss.backward()
        return loss

    optimizer.step(closure)
    return LogisticModel(w.detach(), b.detach(), lam)


def stratified_folds(y: torch.Tensor, k: int, seed: int = 0) -> list[torch.Tensor]:
    """``k`` disjoint index sets covering ``range(len(y))``, each class dealt round-robin
    in a random order, so every fold holds ``n_c / k`` (rounded) examples of class ``c``."""
    g = torch.Generator().manual_seed(seed)
    folds: list[list[int]] = [[] for _ in range(k)]
    for label in (0, 1):
        members = torch.nonzero(torch.as_tensor(y) == label).flatten()
        for position, index in enumerate(members[torch.randperm(len(members), generator=g)]):
            folds[position % k].append(int(index))
    return [torch.tensor(sorted(f)) for f in folds]


def cross_validate(X: torch.Tensor, y: torch.Tensor, lambdas: Sequence[float] = LAMBDAS,
                   k: int = 5, seed: int = 0) -> LogisticModel:
    """Choose ``lambda`` by stratified k-fold cross-validation (``k`` at most the size of the
    smaller class, at least 2), then refit on all of ``X``. The first of equally good
    penalties wins; the mean held-out AUC of each is kept as ``model.cv_auc``."""
    y = torch.as_tensor(y)
    k = max(2, min(k, int((y == 0).sum()), int((y == 1).sum())))
    if min(int((y == 0).sum()), int((y == 1).sum())) < 2:
        raise ValueError("cross-validation needs at least 2 examples of each class")
    folds = stratified_folds(y, k, seed)
    scores = {}
    for lam in lambdas:
        aucs = []
        for held in folds:
            keep = torch.ones(len(y), dtype=torch.bool)
            keep[held] = False
            model = fit_logistic(X[keep], y[keep], lam)
            aucs.append(roc_auc(y[held].tolist(), model(X[held]).tolist()))
        scores[lam] = sum(aucs) / len(aucs)
    best = max(lambdas, key=lambda lam: scores[lam])
    model = fit_logistic(X, y, best)
    model.cv_auc = scores  # type: ignore[attr-defined]
    return model


def bag_of_words(train_texts: Sequence[str], texts: Sequence[str]) -> torch.Tensor:
    """``N x V`` word counts of ``texts`` over the words of ``train_texts``
    (:func:`lmcourse.data.tokenize`; a word never seen in training is dropped)."""
    vocab = {w: i for i, w in enumerate(sorted({w for t in train_texts for w in tokenize(t)}))}
    X = torch.zeros(len(texts), len(vocab), dtype=torch.float64)
    for row, text in enumerate(texts):
        for word in tokenize(text):
            if word in vocab:
                X[row, vocab[word]] += 1
    return X


def bag_of_words_classifier(texts: Sequence[str], labels: torch.Tensor,
                            lambdas: Sequence[float] = LAMBDAS, seed: int = 0
                            ) -> Callable[[Sequence[str]], torch.Tensor]:
    """The bag-of-words baseline for ``texts`` and their 0/1 ``labels``: word counts, the
    cross-validated logistic regression. Returns ``predict(texts) -> P(y = 1)``, with the
    chosen penalty as ``predict.lam`` and its size as ``predict.num_parameters``."""
    model = cross_validate(bag_of_words(texts, texts), labels, lambdas, seed=seed)

    def predict(new_texts: Sequence[str]) -> torch.Tensor:
        return model(bag_of_words(texts, new_texts))

    predict.lam = model.lam  # type: ignore[attr-defined]
    predict.num_parameters = model.w.numel() + 1  # type: ignore[attr-defined]
    return predict

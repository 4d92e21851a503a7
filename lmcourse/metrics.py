"""Metrics for a rare positive class: precision, recall, F1, the ROC curve and its area.

With 3% spoiler sentences, accuracy says little (always answering "no spoiler" scores
97%). Two views that do not reward that:

* **F1** at a threshold: ``P = TP / (TP + FP)``, ``R = TP / (TP + FN)``,
  ``F1 = 2 P R / (P + R) = 2 TP / (2 TP + FP + FN)``; 0 when there is no true positive.
* **ROC-AUC**, threshold-free: sweep the threshold ``t`` from high to low and plot the
  true-positive rate ``TPR = TP / (TP + FN)`` (y) against the false-positive rate
  ``FPR = FP / (FP + TN)`` (x); the area under that curve equals the probability that a
  random positive scores higher than a random negative (ties count one half), the
  Mann-Whitney statistic. Scores are needed, not hard labels: with 0/1 predictions the
  curve has a single corner and the area is ``(TPR + 1 - FPR) / 2``.

Every function takes lists, NumPy arrays or (CPU) torch tensors.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["best_threshold", "confusion_counts", "f1_score", "positive_weight",
           "precision_recall_f1", "rank_auc", "roc_auc", "roc_curve"]


def _array(x: Any, dtype: Any = float) -> np.ndarray:
    if hasattr(x, "detach"):  # a torch tensor
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=dtype).reshape(-1)


def _labels(labels: Any) -> np.ndarray:
    y = _array(labels)
    if not np.isin(y, (0, 1)).all():
        raise ValueError("labels must be 0 or 1")
    return y.astype(bool)


def confusion_counts(labels: Any, predictions: Any) -> tuple[int, int, int, int]:
    """``(TP, FP, FN, TN)`` of 0/1 ``predictions`` against 0/1 ``labels``."""
    y, p = _labels(labels), _labels(predictions)
    if y.shape != p.shape:
        raise ValueError(f"{y.size} labels but {p.size} predictions")
    return (int((y & p).sum()), int((~y & p).sum()), int((y & ~p).sum()),
            int((~y & ~p).sum()))


def precision_recall_f1(labels: Any, predictions: Any) -> tuple[float, float, float]:
    """``P = TP/(TP+FP)``, ``R = TP/(TP+FN)``, ``F1 = 2TP/(2TP+FP+FN)`` (0 when undefined)."""
    tp, fp, fn, _ = confusion_counts(labels, predictions)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
    return precision, recall, f1


def f1_score(labels: Any, predictions: Any) -> float:
    """F1 of the positive class: the harmonic mean of precision and recall."""
    return precision_recall_f1(labels, predictions)[2]


def roc_curve(labels: Any, scores: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(fpr, tpr, thresholds)``: the ROC curve, one point per distinct score.

    Predicting ``score >= thresholds[i]`` gives the rates ``fpr[i]``, ``tpr[i]``. The
    first point is ``(0, 0)`` (threshold ``+inf``, nothing predicted positive), the last
    ``(1, 1)``. Tied scores move together, so they make one diagonal step.
    """
    y, s = _labels(labels), _array(scores)
    if y.shape != s.shape:
        raise ValueError(f"{y.size} labels but {s.size} scores")
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        raise ValueError("the ROC curve needs at least one positive and one negative label")
    order = np.argsort(-s, kind="stable")
    s, y = s[order], y[order]
    last_of_tie = np.r_[np.flatnonzero(np.diff(s)), s.size - 1]  # end of each score group
    tp = np.cumsum(y)[last_of_tie]
    fp = (last_of_tie + 1) - tp
    return (np.r_[0.0, fp / n_neg], np.r_[0.0, tp / n_pos], np.r_[np.inf, s[last_of_tie]])


def roc_auc(labels: Any, scores: Any) -> float:
    """Area under the ROC curve by the trapezoid rule: ``sum (x_i - x_{i-1})(y_i + y_{i-1})/2``."""
    fpr, tpr, _ = roc_curve(labels, scores)
    return float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2))


def rank_auc(labels: Any, scores: Any) -> float:
    """The same area as P(score of a positive > score of a negative) + P(tie) / 2, from
    ranks (Mann-Whitney U): ``(sum of the positives' ranks - n+(n+ + 1)/2) / (n+ n-)``."""
    y, s = _labels(labels), _array(scores)
    order = np.argsort(s, kind="stable")
    ranks = np.empty(s.size)
    sorted_s = s[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_s)) + 1]
    ends = np.r_[starts[1:], s.size]
    for a, b in zip(starts, ends, strict=True):  # tied scores share their mean rank
        ranks[order[a:b]] = (a + b + 1) / 2
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def best_threshold(labels: Any, scores: Any) -> tuple[float, float]:
    """The threshold ``t`` (predict ``score >= t``) with the highest F1, and that F1.

    Choose it on validation data and apply it to the test data, never the other way.
    """
    y, s = _labels(labels), _array(scores)
    fpr, tpr, thresholds = roc_curve(y, s)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    tp, fp = tpr[1:] * n_pos, fpr[1:] * n_neg
    f1 = 2 * tp / (tp + fp + n_pos)  # 2TP / (2TP + FP + FN), as TP + FN = n_pos
    i = int(np.argmax(f1))
    return float(thresholds[1:][i]), float(f1[i])


def positive_weight(labels: Any) -> float:
    """``n_negative / n_positive``: the ``pos_weight`` of ``BCEWithLogitsLoss`` that makes
    the positives weigh as much in the loss, in total, as the negatives."""
    y = _labels(labels)
    n_pos = int(y.sum())
    if n_pos == 0:
        raise ValueError("no positive label: the weight n_negative / n_positive is undefined")
    return float((~y).sum() / n_pos)

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

__all__ = ["best_threshold", "confusion_counts", "f1_score", "lift_share", "mean_spread",
           "positive_weight", "precision_recall_f1", "rank_auc", "roc_auc", "roc_curve"]


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


def bootstrap_auc_difference(labels: Any, a: Any, b: Any, n: int = 500, seed: int = 0
                             ) -> tuple[float, float, float]:
    """``AUC(a) - AUC(b)`` on the same examples, and a 95% interval for it from ``n``
    bootstrap resamples of the examples (positives and negatives resampled separately, so
    every resample keeps the class counts)."""
    y, a, b = _labels(labels).astype(int), _array(a), _array(b)
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    rng = np.random.default_rng(seed)
    diffs = []
    for _ in range(n):
        idx = np.concatenate([rng.choice(pos, len(pos)), rng.choice(neg, len(neg))])
        diffs.append(roc_auc(y[idx], a[idx]) - roc_auc(y[idx], b[idx]))
    low, high = np.percentile(diffs, [2.5, 97.5])
    return roc_auc(y, a) - roc_auc(y, b), float(low), float(high)


def compare_classifiers(models: dict, validation, test, parts: dict | None = None, *,
                        units: str = "sentences", positives: str = "spoilers",
                        validation_name: str = "validation") -> tuple[dict, dict]:
    """ROC-AUC and F1 on ``test`` of several models, each ``predict(texts) -> P(y=1)`` or
    its ``(validation scores, test scores)``, printed as a table beside the majority class;
    each model's F1 threshold is its best on ``validation``. Rows are ``(text, label,
    review_id)``; ``parts`` names subsets of the test rows by a test on their review id.
    Returns ``({model: {part: (AUC, F1)}}, {model: test scores})``; a model whose scores
    are constant or not finite gets NaN. The majority class predicts the validation rows'
    more common label for every row (F1 ``2p / (1 + p)`` for a positive majority of share
    ``p``, 0 otherwise). ``units``, ``positives`` and ``validation_name`` name the rows,
    class 1 and the validation rows in the printed table."""
    v_texts = [t for t, _, _ in validation]
    v_y = [lab for _, lab, _ in validation]
    t_texts, t_y = [t for t, _, _ in test], np.array([lab for _, lab, _ in test])
    selections = {"all": np.ones(len(test), dtype=bool)}
    for part, keep in (parts or {}).items():
        selections[part] = np.array([bool(keep(review_id)) for _, _, review_id in test])
    positive_majority = 2 * sum(v_y) >= len(v_y)

    def majority_f1(y) -> float:
        share = float(np.mean(y)) if len(y) else 0.0
        return 2 * share / (1 + share) if positive_majority and share > 0 else 0.0

    rows = {"majority class": {part: (0.5, majority_f1(t_y[sel]))  # a constant score
                               for part, sel in selections.items()}}
    test_scores = {}
    for key, fn in models.items():
        v_s, t_s = (_array(s) for s in (fn if isinstance(fn, tuple) else
                                         (fn(v_texts), fn(t_texts))))
        test_scores[key] = t_s
        if not np.isfinite(t_s).all() or np.ptp(t_s) == 0:
            rows[key] = {part: (float("nan"), float("nan")) for part in selections}
            continue
        threshold, _ = best_threshold(v_y, v_s)
        rows[key] = {part: (roc_auc(t_y[sel], t_s[sel]), f1_score(t_y[sel], t_s[sel] >= threshold))
                     for part, sel in selections.items()}
    print(f"test {units}: ROC-AUC and F1 (at the threshold with the best F1 on "
          f"{len(v_y):,} {validation_name} {units})")
    header = f"{units} / {positives}"
    w = max(22, len(header) + 1, *(len(key) + 1 for key in rows))
    print(f"{'':{w}s}" + "".join(f"{part[:18]:>20s}" for part in selections))
    print(f"{header:{w}s}" + "".join(
        f"{f'{int(sel.sum()):,} / {int(t_y[sel].sum())}':>20s}" for sel in selections.values()))
    print(f"{'':{w}s}" + f"{'AUC      F1':>20s}" * len(selections))
    for key, row in rows.items():
        print(f"{key:{w}s}" + "".join(f"{auc:>13.3f} {f:6.3f}" for auc, f in row.values()))
    return rows, test_scores


def lift_share(auc: float, teacher_auc: float, chance: float = 0.5) -> float:
    """The share of a teacher's lift above chance that a model keeps:

        (AUC - chance) / (AUC_teacher - chance).

    A ratio of ROC-AUCs, AUC / AUC_teacher, flatters every model: chance alone scores 0.5,
    so a coin "keeps" half of any teacher. Measured from chance, a coin keeps 0%."""
    if teacher_auc <= chance:
        raise ValueError(f"the teacher's ROC-AUC {teacher_auc:.3f} is not above chance "
                         f"({chance}): it has no lift to share")
    return (auc - chance) / (teacher_auc - chance)


#: the course's one spread over seeds, as every table that shows ``±`` names it
SPREAD = "mean ± half range"


def mean_spread(values: Any, digits: int = 3) -> str:
    """``mean ± half the range`` of a few seeds' results, e.g. ``"5.154 ± 0.019"``: the
    course's one spread over seeds (:data:`SPREAD`; every table that shows it says so).
    With three seeds the half range is a plainer spread than a standard deviation."""
    values = _array(values)
    if values.size == 0:
        raise ValueError("mean_spread needs at least one value (one per seed)")
    half_range = (values.max() - values.min()) / 2
    return f"{values.mean():.{digits}f} ± {half_range:.{digits}f}"

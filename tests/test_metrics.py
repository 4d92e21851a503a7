"""lmcourse.metrics against brute force (every pair, every threshold) and scikit-learn."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from lmcourse import metrics


def cases():
    """Random labels and scores: continuous, heavily tied, and rare positives."""
    rng = np.random.default_rng(0)
    out = []
    for n, rate, decimals in ((50, 0.3, None), (200, 0.1, 1), (300, 0.03, 2), (40, 0.5, 0)):
        y = (rng.random(n) < rate).astype(int)
        y[0], y[1] = 1, 0  # both classes present
        s = rng.random(n) + 0.5 * y
        out.append((y, s if decimals is None else np.round(s, decimals)))
    return out


CASES = cases()


def pairs_auc(y, s):
    """P(positive outranks negative) + P(tie)/2, over every pair."""
    pos, neg = s[y == 1], s[y == 0]
    wins = sum((p > q) + 0.5 * (p == q) for p, q in itertools.product(pos, neg))
    return wins / (len(pos) * len(neg))


def brute_curve(y, s):
    """(FPR, TPR) of ``score >= t`` for t = +inf and every distinct score, high to low."""
    points = [(0.0, 0.0)]
    for t in sorted(set(s), reverse=True):
        pred = s >= t
        points.append(((pred & (y == 0)).sum() / (y == 0).sum(), (pred & (y == 1)).sum()
                       / (y == 1).sum()))
    return np.array(points)


def brute_f1(y, p):
    tp = int(((y == 1) & (p == 1)).sum())
    fp = int(((y == 0) & (p == 1)).sum())
    fn = int(((y == 1) & (p == 0)).sum())
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


@pytest.mark.parametrize("y, s", CASES)
def test_roc_curve_is_every_distinct_threshold(y, s):
    fpr, tpr, thresholds = metrics.roc_curve(y, s)
    np.testing.assert_allclose(np.c_[fpr, tpr], brute_curve(y, s), atol=1e-12)
    assert thresholds[0] == np.inf and list(thresholds[1:]) == sorted(set(s), reverse=True)


@pytest.mark.parametrize("y, s", CASES)
def test_auc_is_the_pairwise_probability(y, s):
    want = pairs_auc(y, s)
    assert metrics.roc_auc(y, s) == pytest.approx(want, abs=1e-12)
    assert metrics.rank_auc(y, s) == pytest.approx(want, abs=1e-12)


def test_auc_of_hard_predictions_is_one_corner():
    y = np.array([1, 1, 0, 0, 0, 1, 0, 0])
    p = np.array([1, 0, 0, 1, 0, 1, 0, 0])
    tpr, fpr = 2 / 3, 1 / 5
    assert metrics.roc_auc(y, p) == pytest.approx((tpr + 1 - fpr) / 2)


@pytest.mark.parametrize("y, s", CASES)
def test_f1_and_best_threshold(y, s):
    for t in sorted(set(s))[:: max(1, len(set(s)) // 7)]:
        p = (s >= t).astype(int)
        assert metrics.f1_score(y, p) == pytest.approx(brute_f1(y, p), abs=1e-12)
    t, best = metrics.best_threshold(y, s)
    scan = {u: brute_f1(y, (s >= u).astype(int)) for u in set(s)}
    assert best == pytest.approx(max(scan.values()), abs=1e-12)
    assert scan[t] == pytest.approx(best, abs=1e-12)


def test_confusion_and_zero_division():
    y = [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]
    p = [1, 0, 0, 0, 1, 1, 0, 0, 0, 0]
    assert metrics.confusion_counts(y, p) == (1, 2, 3, 4)
    precision, recall, f1 = metrics.precision_recall_f1(y, p)
    assert (precision, recall) == pytest.approx((1 / 3, 1 / 4))
    assert f1 == pytest.approx(2 / 7)
    assert metrics.precision_recall_f1(y, [0] * 10) == (0.0, 0.0, 0.0)


def test_positive_weight_and_inputs():
    y = torch.tensor([0, 1, 0, 0, 1, 0, 0, 0])
    assert metrics.positive_weight(y) == 3.0
    s = torch.tensor([0.1, 0.9, 0.2, 0.4, 0.35, 0.3, 0.0, 0.8], requires_grad=True)
    assert metrics.roc_auc(y, s) == pytest.approx(pairs_auc(y.numpy(), s.detach().numpy()))
    with pytest.raises(ValueError, match="positive"):
        metrics.positive_weight([0, 0, 0])
    with pytest.raises(ValueError, match="at least one positive and one negative"):
        metrics.roc_auc([1, 1], [0.2, 0.3])
    with pytest.raises(ValueError, match="0 or 1"):
        metrics.f1_score([0, 2], [0, 1])
    with pytest.raises(ValueError, match="labels but"):
        metrics.roc_curve([0, 1, 1], [0.2, 0.3])


@pytest.mark.parametrize("y, s", CASES)
def test_against_scikit_learn(y, s):
    skm = pytest.importorskip("sklearn.metrics")
    fpr, tpr, _ = metrics.roc_curve(y, s)
    ref_fpr, ref_tpr, _ = skm.roc_curve(y, s, drop_intermediate=False)
    np.testing.assert_allclose(fpr, ref_fpr, atol=1e-12)
    np.testing.assert_allclose(tpr, ref_tpr, atol=1e-12)
    assert metrics.roc_auc(y, s) == pytest.approx(skm.roc_auc_score(y, s), abs=1e-12)
    p = (s >= np.median(s)).astype(int)
    assert metrics.f1_score(y, p) == pytest.approx(skm.f1_score(y, p), abs=1e-12)


def test_mean_spread_is_the_mean_and_half_the_range():
    assert metrics.mean_spread([5.0, 5.5, 6.5]) == "5.667 ± 0.750"
    assert metrics.mean_spread([0.25], digits=2) == "0.25 ± 0.00"
    with pytest.raises(ValueError, match="at least one"):
        metrics.mean_spread([])


def test_lift_share_measures_from_chance_not_from_zero():
    from lmcourse.metrics import lift_share

    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 4000)
    coin = metrics.roc_auc(labels, rng.random(4000))  # about 0.5: keeps nothing of any teacher
    assert abs(lift_share(coin, 0.9)) < 0.05 and coin / 0.9 > 0.5
    assert lift_share(0.9, 0.9) == 1.0
    assert lift_share(0.85, 0.9) == pytest.approx(0.875)  # 0.35 of 0.4; the ratio says 94%
    with pytest.raises(ValueError, match="not above chance"):
        lift_share(0.6, 0.5)

"""Auto-check for exercise 5 of the spoiler lab: the ROC curve and its area. The student's
curve is compared with the reference one on random and on tied scores (a curve that orders
tied scores one sample at a time is named), and the area with the trapezoid rule's.
``lmcourse.checks.spoilers`` re-exports both checks, so the lab calls ``check.roc_auc``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from lmcourse import metrics
from lmcourse.checks import (
    as_floats,
    as_number,
    attempt,
    close,
    expect,
    fail,
    passed,
    requires_earlier,
)
from lmcourse.checks.compare import how_far

# ---- exercise 5: the ROC curve and its area ----------------------------------------------

_TIE_Y = torch.tensor([1, 1, 0, 1, 0, 1, 0, 0, 1, 0])
_TIE_S = torch.tensor([0.9, 0.8, 0.8, 0.7, 0.6, 0.6, 0.6, 0.4, 0.3, 0.1])


def _on_polyline(px: np.ndarray, py: np.ndarray, qx: np.ndarray, qy: np.ndarray,
                 tol: float = 1e-6) -> bool:
    """Is every point ``(px, py)`` on the polyline through ``(qx, qy)``?"""
    a = np.stack([qx[:-1], qy[:-1]], 1)
    b = np.stack([qx[1:], qy[1:]], 1)
    for p in np.stack([px, py], 1):
        ab, ap = b - a, p - a
        t = np.clip((ap * ab).sum(1) / np.maximum((ab * ab).sum(1), 1e-300), 0, 1)
        if np.min(np.linalg.norm(a + t[:, None] * ab - p, axis=1)) > tol:
            return False
    return True


def _per_sample_curves(y: np.ndarray, s: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """ROC curves that step one example at a time through ties (positives first, last,
    or in the given order): what forgetting to group ties gives."""
    curves = []
    for tie_key in (np.zeros_like(y), -y, y):
        order = np.lexsort((tie_key, -s))
        ys = y[order]
        tp, fp = np.cumsum(ys), np.cumsum(1 - ys)
        curves.append((np.r_[0, fp / fp[-1]], np.r_[0, tp / tp[-1]]))
    return curves


def _student_curve(name: str, student: Callable[..., Any], y: torch.Tensor,
                   s: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    got = attempt(name, student, y.clone(), s.clone())
    expect(isinstance(got, (tuple, list)) and len(got) == 2, name,
           "return a pair (fpr, tpr): two sequences of the same length")
    fpr, tpr = as_floats(got[0]), as_floats(got[1])
    expect(fpr is not None and tpr is not None and fpr.shape == tpr.shape and fpr.size >= 2,
           name, "return (fpr, tpr): two 1-d sequences of numbers of the same length")
    return fpr, tpr


def roc_curve(student: Callable[..., Any]) -> None:
    """Exercise 5a: ``roc_curve`` of labels and scores, ``(fpr, tpr)``, ties grouped."""
    name = "roc_curve"
    g = torch.Generator().manual_seed(5)
    y_r = (torch.rand(60, generator=g) < 0.3).long()
    s_r = torch.rand(60, generator=g) + 0.4 * y_r
    for y, s, what in ((y_r, s_r, "60 random scores"), (_TIE_Y, _TIE_S, "tied scores")):
        fpr, tpr = _student_curve(name, student, y, s)
        ref_x, ref_y, _ = metrics.roc_curve(y, s)
        yn, sn = y.numpy(), s.numpy().astype(float)
        if max(fpr.max(), tpr.max()) > 1 + 1e-6:
            fail(name, "rates go above 1: divide the counts, TPR = TP / n_positive and "
                       "FPR = FP / n_negative.")
        expect(close(fpr[0], 0.0, 1e-6) and close(tpr[0], 0.0, 1e-6), name,
               f"the curve should start at (0, 0) (threshold above every score, nothing "
               f"predicted positive), yours starts at ({fpr[0]:.3g}, {tpr[0]:.3g}); sort the "
               "scores from high to low and prepend (0, 0).")
        expect(close(fpr[-1], 1.0, 1e-6) and close(tpr[-1], 1.0, 1e-6), name,
               f"the curve should end at (1, 1) (everything predicted positive), yours ends at "
               f"({fpr[-1]:.3g}, {tpr[-1]:.3g}); FPR = FP / n_negative, TPR = TP / n_positive.")
        if _on_polyline(fpr, tpr, ref_x, ref_y):
            if _on_polyline(ref_x, ref_y, fpr, tpr):
                continue
            fail(name, f"on {what}, your points lie on the ROC curve but some corners are "
                       "missing: add one point (FPR, TPR) for every distinct score, "
                       f"{len(ref_x)} points here with (0, 0).")
        if _on_polyline(tpr, fpr, ref_x, ref_y):
            fail(name, "FPR and TPR are swapped: x is FPR = FP / (FP + TN), y is "
                       "TPR = TP / (TP + FN); return (fpr, tpr).")
        if any(_on_polyline(fpr, tpr, cx, cy) for cx, cy in _per_sample_curves(yn, sn)):
            fail(name, "tied scores are split into several steps: examples with the same score "
                       "are all above a threshold or all below it, so they move together, one "
                       "diagonal step per distinct score.")
        yours = [(round(float(a), 3), round(float(b), 3)) for a, b in zip(fpr, tpr,
                                                                             strict=True)]
        off = next(i for i in range(len(fpr))
                   if not _on_polyline(fpr[i:i + 1], tpr[i:i + 1], ref_x, ref_y))
        fail(name, f"on {what}, your curve leaves the ROC curve: your first points are "
                   f"{yours[:6]}, and point {off}, {yours[off]}, is not on it. At each "
                   "distinct score, from high to low, FPR = FP / n_negative and "
                   "TPR = TP / n_positive among the examples scored at least that high.")
    passed(name, f"on the ROC curve, with and without ties ({len(ref_x)} distinct points in "
                 "the tied case)")


def roc_auc(student: Callable[..., Any]) -> None:
    """Exercise 5b: ``roc_auc`` of labels and scores, the trapezoid area under ROC."""
    name = "roc_auc"
    requires_earlier(name, student, ("roc_curve", "5's roc_curve", roc_curve))
    g = torch.Generator().manual_seed(7)
    y = (torch.rand(80, generator=g) < 0.25).long()
    s = (torch.rand(80, generator=g) * 0.6 + 0.3 * y).clamp(0, 1)
    for yy, ss in ((y, s), (_TIE_Y, _TIE_S)):
        got = as_number(name, attempt(name, student, yy.clone(), ss.clone()))
        want = metrics.roc_auc(yy, ss)
        if close(got, want, 1e-6):
            continue
        hard = (ss >= 0.5).long()
        fx, fy, _ = metrics.roc_curve(yy, ss)
        wrong = [(metrics.roc_auc(yy, hard), "that is the AUC of hard 0/1 predictions "
                                             "(score >= 0.5): pass the scores themselves, the "
                                             "whole ranking is what AUC measures."),
                 (1 - want, "that is 1 - AUC: the curve is read backwards (a higher score "
                            "should mean 'spoiler'), or FPR and TPR are swapped."),
                 (float(((ss >= 0.5).long() == yy).float().mean()),
                  "that is the accuracy at threshold 0.5, not the area under the ROC curve."),
                 (float(np.sum(np.diff(fx) * fy[:-1])),
                  "left rectangles (y_{i-1}) count a tie between a positive and a negative as "
                  "0; use trapezoids, (x_i - x_{i-1}) * (y_i + y_{i-1}) / 2, so it counts 1/2."),
                 (float(np.sum(np.diff(fx) * fy[1:])),
                  "right rectangles (y_i) count a tie between a positive and a negative as "
                  "1; use trapezoids, (x_i - x_{i-1}) * (y_i + y_{i-1}) / 2, so it counts 1/2.")]
        for value, hint in wrong:
            if close(got, value, 1e-6):
                fail(name, hint)
        fail(name, f"your AUC {got:.6f} {how_far(got, want, 1e-6)} (if roc_curve passed its "
                   "check, look at how the area is summed: trapezoids between consecutive "
                   "points)")
    passed(name, f"{got:.6f} on tied scores (reference {want:.6f}; ties count 1/2)")

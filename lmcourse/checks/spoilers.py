"""Auto-checks for a BiLSTM that finds spoiler sentences in book reviews.

The lab's pieces and what each check compares them with:

* ``pad_batch(sequences, pad_id) -> (ids, lengths)``: right-padded ``B x T`` LongTensor;
* ``SpoilerLSTM`` (constructor given: ``embedding``, bidirectional ``lstm`` with
  ``batch_first=True``, ``head = Linear(2H, 1)``), ``forward(ids, lengths)`` -> ``B``
  logits that do not depend on padding: each sentence read alone, unpadded;
* ``positive_weight(labels)``: ``n_negative / n_positive``;
* ``f1`` (of labels and 0/1 predictions), ``roc_curve`` (of labels and scores, returning
  ``(fpr, tpr)``) and ``roc_auc`` (the same arguments): :mod:`lmcourse.metrics`;
* the trained model against two baselines on the test sentences.

Each check computes the right answer itself and, when the student's answer matches a
typical mistake instead, says which one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
)
from lmcourse.checks.compare import how_far
from lmcourse.checks.spoiler_roc import roc_auc, roc_curve  # noqa: F401 - the lab calls check.*
from lmcourse.course.claims import verdict as claim
from lmcourse.data import tokenize

__all__ = ["SPOILER_WORDS", "beats_baselines", "f1", "keyword_scores", "pad_batch",
           "positive_weight", "roc_auc", "roc_curve", "spoiler_model"]

#: The keyword baseline's list: words that often come with a plot being given away.
SPOILER_WORDS = frozenset("""dies died die dying death dead kill kills killed killer murder
murdered murderer ending end ends twist turns reveal reveals revealed finally betrays
betrayed traitor last epilogue""".split())


def keyword_scores(texts: Sequence[str]) -> torch.Tensor:
    """The keyword baseline: how many of :data:`SPOILER_WORDS` a sentence contains."""
    return torch.tensor([float(sum(w in SPOILER_WORDS for w in tokenize(t))) for t in texts])


# ---- exercise 1: padding -----------------------------------------------------------------

def pad_batch(student: Callable[..., Any], pad_id: int = 1) -> None:
    """Exercise 1: ``pad_batch([[5, 6, 7], [8], [9, 10]], pad_id)``."""
    name = "pad_batch"
    seqs = [[5, 6, 7], [8], [9, 10], [11, 12, 13, 14]]
    want = torch.tensor([[5, 6, 7, pad_id], [8, pad_id, pad_id, pad_id],
                         [9, 10, pad_id, pad_id], [11, 12, 13, 14]])
    want_len = torch.tensor([3, 1, 2, 4])
    got = attempt(name, student, [list(s) for s in seqs], pad_id)
    expect(isinstance(got, tuple) and len(got) == 2, name,
           "return a pair (ids, lengths): the padded B x T tensor and the real lengths")
    ids, lengths = got
    expect(isinstance(ids, torch.Tensor) and isinstance(lengths, torch.Tensor), name,
           f"return torch tensors, got {type(ids).__name__} and {type(lengths).__name__}")
    expect(ids.dtype == torch.long, name,
           f"ids must be a LongTensor (dtype torch.long) for nn.Embedding, got {ids.dtype}")
    expect(ids.dim() == 2, name, f"ids must be B x T (batch_first), got shape "
                                 f"{tuple(ids.shape)}")
    if ids.shape == (4, 4) and ids.T.shape == want.shape and torch.equal(ids, want.T) \
            and not torch.equal(ids, want):
        fail(name, "ids are T x B: put the batch first (one row per sentence).")
    expect(tuple(ids.shape) == (4, 4), name,
           f"for 4 sentences of lengths 3, 1, 2, 4 the padded batch is 4 x 4 (as long as the "
           f"longest; nothing is cut), got shape {tuple(ids.shape)}")
    if not torch.equal(ids, want):
        left = torch.stack([torch.cat([torch.full((4 - len(s),), pad_id), torch.tensor(s)])
                            for s in seqs])
        if torch.equal(ids, left):
            fail(name, "the padding is on the left: put it on the right (after the words); "
                       "pack_padded_sequence expects each sentence to start at position 0.")
        zero = torch.where(want == pad_id, torch.zeros_like(want), want)
        if torch.equal(ids, zero) and pad_id != 0:
            fail(name, f"pad with pad_id (here {pad_id}), not 0: id 0 is <unk>, a real token "
                       "that nn.Embedding(padding_idx=pad_id) would not treat as padding.")
        rows = [r for r in range(len(want)) if not torch.equal(ids[r], want[r])]
        fail(name, f"your ids are\n{ids.tolist()}\nand row(s) {rows} are wrong: row b is "
                   "sentence b's ids in order, then pad_id up to the longest sentence's "
                   "length.")
    expect(lengths.shape == (4,), name, f"lengths must have one entry per sentence, got shape "
                                        f"{tuple(lengths.shape)}")
    if torch.equal(lengths.long(), torch.full((4,), 4)):
        fail(name, "every length is 4, the padded length: lengths are the REAL lengths "
                   "(the number of ids of each sentence before padding), which is what tells "
                   "the LSTM where each sentence ends.")
    expect(torch.equal(lengths.long(), want_len), name,
           f"your lengths are {lengths.tolist()}: entry b is the number of ids of sentence "
           "b before padding (wrong at position(s) "
           f"{torch.nonzero(lengths.long() != want_len).flatten().tolist()}).")
    passed(name, f"right-padded with {pad_id}, lengths {want_len.tolist()}")


# ---- exercise 2: the model ---------------------------------------------------------------

def _reference_logits(model: torch.nn.Module, seqs: list[list[int]]) -> torch.Tensor:
    """Each sentence alone, unpadded: final forward state after the last word, final
    backward state after reading back to the first, concatenated, through the head."""
    out = []
    for s in seqs:
        x = model.embedding(torch.tensor([s]))
        _, (h_n, _) = model.lstm(x)
        out.append(model.head(torch.cat([h_n[-2], h_n[-1]], dim=-1)).reshape(()))
    return torch.stack(out)


def spoiler_model(SpoilerLSTM: type, pad_id: int = 1) -> None:
    """Exercise 2: ``SpoilerLSTM(...)(ids, lengths)`` equals each sentence read alone."""
    name = "SpoilerLSTM.forward"
    torch.manual_seed(0)
    model = attempt(name, SpoilerLSTM, 40, 6, 5, pad_id)
    seqs = [[5, 6, 7, 8, 9, 10], [11, 12], [13, 14, 15, 16], [17]]
    T = max(map(len, seqs))
    ids = torch.tensor([s + [pad_id] * (T - len(s)) for s in seqs])
    lengths = torch.tensor([len(s) for s in seqs])
    with torch.no_grad():
        want = _reference_logits(model, seqs)
        got = attempt(name, model, ids, lengths)
    expect(isinstance(got, torch.Tensor), name,
           f"forward should return a tensor of logits, got {type(got).__name__}")
    if got.shape == (4, 1):
        fail(name, "the output is B x 1: drop the head's last axis of size 1 and return B "
                   "logits, the shape of the labels BCEWithLogitsLoss compares them with.")
    expect(got.shape == (4,), name, f"expected one logit per sentence (shape (4,)), got shape "
                                    f"{tuple(got.shape)}")
    err = float((got - want).abs().max())
    if err < 1e-5:
        passed(name, f"padded batch vs each sentence alone: max |difference| {err:.1e} "
                     "(tolerance 1e-5)")
        return
    if torch.allclose(got, torch.sigmoid(want), atol=1e-5):
        fail(name, "these are probabilities: return the logits (no sigmoid); "
                   "BCEWithLogitsLoss applies the sigmoid itself, more stably.")
    with torch.no_grad():
        emb = model.embedding(ids)
        out, (h_n, _) = model.lstm(emb)
        unpacked = model.head(torch.cat([h_n[-2], h_n[-1]], -1)).squeeze(-1)
        last_step = model.head(out[:, -1]).squeeze(-1)
    if torch.allclose(got, unpacked, atol=1e-5):
        fail(name, "the logits change when a sentence is padded: the LSTM read the padding. "
                   "Pack the embedded batch with nn.utils.rnn.pack_padded_sequence (batch "
                   "first, the lengths on the CPU, not sorted) and run the LSTM on that, so "
                   "that each direction stops at the sentence's real end.")
    if torch.allclose(got, last_step, atol=1e-5):
        fail(name, "you used output[:, -1], the last time step: for a padded sentence that "
                   "is padding, and the backward direction has read only one token there. "
                   "Use the final states in h_n instead: the forward direction's, then the "
                   "backward direction's, side by side (chapter 03, Bidirectional LSTMs).")
    with torch.no_grad():
        packed = torch.nn.utils.rnn.pack_padded_sequence(emb, lengths, batch_first=True,
                                                         enforce_sorted=False)
        _, (h_n, _) = model.lstm(packed)
        swapped = model.head(torch.cat([h_n[-1], h_n[-2]], -1)).squeeze(-1)
    if torch.allclose(got, swapped, atol=1e-5):
        fail(name, "the two directions are swapped: h_n[-2] is the forward direction, "
                   "h_n[-1] the backward one; concatenate them in that order.")
    fail(name, f"your logits {[round(v, 5) for v in got.tolist()]} differ from those of each "
               f"sentence read alone, unpadded (max |difference| {err:.2e}, most for sentence "
               f"{int((got - want).abs().argmax())}): pack the batch, and classify from the "
               "final states of both directions.")


# ---- exercise 3: the class weight --------------------------------------------------------

def positive_weight(student: Callable[..., Any]) -> None:
    """Exercise 3: ``pos_weight = n_negative / n_positive`` for ``BCEWithLogitsLoss``."""
    name = "positive_weight"
    labels = torch.zeros(40, dtype=torch.long)
    labels[[3, 11, 19, 27]] = 1  # 4 positives, 36 negatives
    got = as_number(name, attempt(name, student, labels.clone()))
    n_pos, n_neg, n = 4, 36, 40
    wrong = [(n_pos / n_neg, "the ratio is inverted: pos_weight = n_negative / n_positive, "
                             "so that each rare spoiler counts more, not less."),
             (n_neg / n, "n_negative / n_total is the share of negatives; the weight is "
                         "n_negative / n_positive."),
             (n / n_pos, "n_total / n_positive counts the positives once too often; the "
                         "weight is n_negative / n_positive."),
             (n_pos / n, "that is the share of positives; the weight is n_negative / "
                         "n_positive.")]
    if not close(got, n_neg / n_pos, 1e-6):
        for value, hint in wrong:
            if close(got, value, 1e-6):
                fail(name, hint)
        fail(name, f"with {n_pos} positives and {n_neg} negatives yours is {got:g}, which "
                   f"{how_far(got, n_neg / n_pos, 1e-6)}: count the negatives (label 0) and "
                   "the positives (label 1), and divide.")
    got2 = as_number(name, attempt(name, student, torch.tensor([1, 0, 0, 1, 0, 1, 1, 0, 0, 0])))
    expect(close(got2, 1.5, 1e-6), name,
           f"with 4 positives and 6 negatives yours is {got2:g}, which "
           f"{how_far(got2, 1.5, 1e-6)}: count the labels given, not a fixed number.")
    passed(name, f"{n_neg}/{n_pos} -> {got:g}, 6/4 -> {got2:g}")


# ---- exercise 4: F1 ----------------------------------------------------------------------

def f1(student: Callable[..., Any]) -> None:
    """Exercise 4: F1 of the positive class, ``2TP / (2TP + FP + FN)``, 0 without TP."""
    name = "f1"
    y = torch.tensor([1, 1, 1, 1, 0, 0, 0, 0, 0, 0])
    p = torch.tensor([1, 0, 0, 0, 1, 1, 0, 0, 0, 0])  # TP 1, FP 2, FN 3, TN 4
    got = as_number(name, attempt(name, student, y.clone(), p.clone()))
    want = metrics.f1_score(y, p)
    if not close(got, want, 1e-6):
        prec, rec = 1 / 3, 1 / 4
        wrong = [(0.5, "that is the accuracy, (TP + TN) / n; F1 ignores the true negatives, "
                       "which is the point when they are 97% of the data."),
                 ((prec + rec) / 2, "that is the arithmetic mean of precision and recall; "
                                    "F1 is their harmonic mean, 2PR / (P + R)."),
                 (metrics.f1_score(1 - y, 1 - p), "that is the F1 of the negative class: "
                                                  "the positive class (label 1, spoiler) is "
                                                  "the one to score."),
                 (prec, "that is the precision TP / (TP + FP) alone."),
                 (rec, "that is the recall TP / (TP + FN) alone.")]
        for value, hint in wrong:
            if close(got, value, 1e-6):
                fail(name, hint)
        fail(name, f"with TP=1, FP=2, FN=3, TN=4 yours is {got:.6f}, which "
                   f"{how_far(got, want, 1e-6)}: F1 = 2TP / (2TP + FP + FN), with the counts "
                   "of the positive class (label 1).")
    never = torch.zeros(10, dtype=torch.long)
    try:
        none = student(y.clone(), never.clone())
    except ZeroDivisionError:
        fail(name, "a model that never predicts a spoiler made your code divide by zero "
                   "(precision 0/0): return 0.0 when TP = 0, as the majority baseline's F1.")
    except Exception:  # noqa: BLE001 - let attempt() phrase any other crash
        none = attempt(name, student, y.clone(), never.clone())
    none = as_number(name, none)
    expect(close(none, 0.0, 1e-12) and none == none, name,
           f"with no positive prediction F1 is 0 (there is no true positive), got {none}")
    g = torch.Generator().manual_seed(3)
    y3 = (torch.rand(300, generator=g) < 0.1).long()
    p3 = (torch.rand(300, generator=g) < 0.2).long()
    got3 = as_number(name, attempt(name, student, y3, p3))
    expect(close(got3, metrics.f1_score(y3, p3), 1e-6), name,
           f"on 300 random labels yours is {got3:.6f}, which "
           f"{how_far(got3, metrics.f1_score(y3, p3), 1e-6)}: count TP, FP and FN from the "
           "arguments (no fixed numbers).")
    passed(name, f"2/7 = {got:.6f}; no positive prediction -> {none:g}; random case "
                 f"{got3:.6f} (reference {metrics.f1_score(y3, p3):.6f})")


# ---- the trained model -------------------------------------------------------------------

def _split(data: Sequence[tuple[str, int, str]]) -> tuple[list[str], torch.Tensor]:
    return [t for t, _, _ in data], torch.tensor([int(lab) for _, lab, _ in data])


def beats_baselines(predict: Callable[[list[str]], Any],
                    validation: Sequence[tuple[str, int, str]],
                    test: Sequence[tuple[str, int, str]], min_gain: float = 0.1,
                    baselines: dict[str, Callable[[list[str]], Any]] | None = None
                    ) -> dict[str, tuple[float, float]]:
    """The trained model beats the majority class and the keyword baseline on ``test``.

    ``predict(texts)`` returns P(spoiler) for each sentence. The F1 threshold of the
    model and of the keyword counts is chosen on ``validation`` (best F1), then applied to
    ``test``; AUC and F1 use :mod:`lmcourse.metrics`. The model must beat the keyword
    baseline by ``min_gain`` in both. ``baselines`` (e.g. ``{"bag of words": predict_bow}``)
    add rows scored the same way, each with a bootstrap interval of the model's AUC minus
    theirs and a printed verdict; they inform, they do not decide the check. Returns
    ``{name: (AUC, F1)}``.
    """
    name = "model vs baselines"
    v_texts, v_y = _split(validation)
    t_texts, t_y = _split(test)
    v_s, t_s = (as_floats(attempt(name, predict, list(x))) for x in (v_texts, t_texts))
    expect(v_s is not None and t_s is not None, name, "predict(texts) should return one "
                                                      "score per sentence (a 1-d tensor)")
    expect(t_s.size == len(t_texts) and v_s.size == len(v_texts), name,
           f"predict returned {t_s.size} scores for {len(t_texts)} sentences")
    expect(np.isfinite(t_s).all(), name, "some scores are NaN or infinite: did training "
                                         "diverge? Lower the learning rate.")
    threshold, _ = metrics.best_threshold(v_y, v_s)
    k_val, k_test = keyword_scores(v_texts), keyword_scores(t_texts)
    k_threshold, _ = metrics.best_threshold(v_y, k_val)
    rows = {
        "majority class": (0.5, 0.0),  # a constant score; never predicts a spoiler
        "keyword baseline": (metrics.roc_auc(t_y, k_test),
                             metrics.f1_score(t_y, k_test >= k_threshold)),
    }
    extra = {}
    for label, fn in (baselines or {}).items():
        b_val, b_test = (as_floats(fn(list(x))) for x in (v_texts, t_texts))
        b_threshold, _ = metrics.best_threshold(v_y, b_val)
        rows[label] = (metrics.roc_auc(t_y, b_test), metrics.f1_score(t_y, b_test >= b_threshold))
        extra[label] = b_test
    rows["your BiLSTM"] = (metrics.roc_auc(t_y, t_s), metrics.f1_score(t_y, t_s >= threshold))
    print(f"test sentences: {len(t_y):,} ({int(t_y.sum())} spoilers)")
    print(f"{'':18s} {'ROC-AUC':>8s} {'F1':>7s}")
    for label, (auc, f) in rows.items():
        print(f"{label:18s} {auc:8.3f} {f:7.3f}")
    for label, b_test in extra.items():
        diff, low, high = metrics.bootstrap_auc_difference(t_y, t_s, b_test)
        verdict = ("ahead of" if low > 0 else "behind" if high < 0
                   else "not distinguishable from")
        print(f"AUC(your BiLSTM) - AUC({label}) = {diff:+.3f}, 95% bootstrap interval "
              f"[{low:+.3f}, {high:+.3f}] over test sentences: your BiLSTM is {verdict} "
              f"the {label} (one training run; the interval does not cover seeds)")
        claim(f"your BiLSTM ranks spoilers better than the {label}",
              rows["your BiLSTM"][0], baseline=(label, rows[label][0]), higher_is_better=True,
              metric="test ROC-AUC",
              verdict={"ahead of": "ahead", "behind": "behind"}.get(verdict, "level"),
              note="decided by the 95% bootstrap interval over test sentences, one run")
    auc, f = rows["your BiLSTM"]
    k_auc, k_f = rows["keyword baseline"]
    if np.ptp(t_s) < 1e-6:
        fail(name, "every test sentence gets the same score: the model predicts the majority "
                   "class. Did you use the positive-class weight in the loss? Train longer?")
    if auc < 0.5:
        fail(name, f"AUC {auc:.3f} is below chance: the scores rank spoilers LOWEST. Does "
                   "predict return P(spoiler) = sigmoid(logit), not 1 - p? Are labels 1 for "
                   "spoilers?")
    expect(auc >= k_auc + min_gain, name,
           f"ROC-AUC {auc:.3f} does not beat the keyword baseline's {k_auc:.3f} by "
           f"{min_gain}: train longer, or check the class weight and the packing.")
    expect(f >= k_f + min_gain, name,
           f"F1 {f:.3f} does not beat the keyword baseline's {k_f:.3f} by {min_gain} (its "
           f"ROC-AUC {auc:.3f} is fine, so look at the scores near the threshold "
           f"{threshold:.3f} chosen on the validation set)")
    passed(name, f"ROC-AUC {auc:.3f} vs keyword {k_auc:.3f} vs majority 0.5; F1 {f:.3f} vs "
                 f"keyword {k_f:.3f} vs majority 0.0")
    return rows

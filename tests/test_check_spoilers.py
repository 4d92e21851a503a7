"""Lab 03 checks: right answers pass; typical wrong answers fail with specific hints."""

from __future__ import annotations

from collections import defaultdict

import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from lmcourse import metrics
from lmcourse.checks import CheckFailed
from lmcourse.checks import spoilers as check
from lmcourse.data.goodreads import load_reviews, sample_path, sentences, split_reviews


def fails_with(fn, *args, hint: str) -> str:
    with pytest.raises(CheckFailed) as info:
        fn(*args)
    assert hint in str(info.value), str(info.value)
    return str(info.value)


def not_implemented(*args, **kwargs):
    raise NotImplementedError


# ---- exercise 1: padding ------------------------------------------------------------------

def pad_right(seqs, pad_id):
    lengths = torch.tensor([len(s) for s in seqs])
    ids = torch.full((len(seqs), int(lengths.max())), pad_id, dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s)
    return ids, lengths


def test_pad_batch():
    check.pad_batch(pad_right, pad_id=1)
    check.pad_batch(lambda s, p: (nn.utils.rnn.pad_sequence(
        [torch.tensor(x) for x in s], batch_first=True, padding_value=p),
        torch.tensor([len(x) for x in s])), pad_id=3)

    def pad_left(seqs, pad_id):
        T = max(map(len, seqs))
        return (torch.tensor([[pad_id] * (T - len(s)) + s for s in seqs]),
                torch.tensor([len(s) for s in seqs]))

    def pad_zero(seqs, pad_id):
        return pad_right(seqs, 0)

    def padded_lengths(seqs, pad_id):
        ids, _ = pad_right(seqs, pad_id)
        return ids, torch.full((len(seqs),), ids.shape[1])

    def time_first(seqs, pad_id):
        ids, lengths = pad_right(seqs, pad_id)
        return ids.T, lengths

    def floats(seqs, pad_id):
        ids, lengths = pad_right(seqs, pad_id)
        return ids.float(), lengths

    fails_with(check.pad_batch, pad_left, 1, hint="padding is on the left")
    fails_with(check.pad_batch, pad_zero, 1, hint="not 0: id 0 is <unk>")
    fails_with(check.pad_batch, padded_lengths, 1, hint="lengths are the REAL lengths")
    fails_with(check.pad_batch, time_first, 1, hint="put the batch first")
    fails_with(check.pad_batch, floats, 1, hint="must be a LongTensor")
    fails_with(check.pad_batch, not_implemented, 1, hint="not implemented yet")


# ---- exercise 2: the model ----------------------------------------------------------------

class Base(nn.Module):
    def __init__(self, vocab_size, embed_dim, hidden_size, pad_id):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=pad_id)
        self.lstm = nn.LSTM(embed_dim, hidden_size, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * hidden_size, 1)

    def final_states(self, ids, lengths):
        packed = pack_padded_sequence(self.embedding(ids), lengths.cpu(), batch_first=True,
                                      enforce_sorted=False)
        return self.lstm(packed)[1][0]


class Right(Base):
    def forward(self, ids, lengths):
        h_n = self.final_states(ids, lengths)
        return self.head(torch.cat([h_n[-2], h_n[-1]], dim=-1)).squeeze(-1)


class NoPacking(Base):
    def forward(self, ids, lengths):
        _, (h_n, _) = self.lstm(self.embedding(ids))
        return self.head(torch.cat([h_n[-2], h_n[-1]], dim=-1)).squeeze(-1)


class LastStep(Base):
    def forward(self, ids, lengths):
        out, _ = self.lstm(self.embedding(ids))
        return self.head(out[:, -1]).squeeze(-1)


class Probabilities(Right):
    def forward(self, ids, lengths):
        return torch.sigmoid(super().forward(ids, lengths))


class NotSqueezed(Base):
    def forward(self, ids, lengths):
        h_n = self.final_states(ids, lengths)
        return self.head(torch.cat([h_n[-2], h_n[-1]], dim=-1))


class Swapped(Base):
    def forward(self, ids, lengths):
        h_n = self.final_states(ids, lengths)
        return self.head(torch.cat([h_n[-1], h_n[-2]], dim=-1)).squeeze(-1)


class ForwardOnly(Base):
    def forward(self, ids, lengths):
        return self.head(self.final_states(ids, lengths)[-2]).squeeze(-1)


class Stub(Base):
    forward = not_implemented


def test_spoiler_model():
    check.spoiler_model(Right, pad_id=1)
    check.spoiler_model(Right, pad_id=0)
    fails_with(check.spoiler_model, NoPacking, 1, hint="the LSTM read the padding")
    fails_with(check.spoiler_model, LastStep, 1, hint="you used output[:, -1]")
    fails_with(check.spoiler_model, Probabilities, 1, hint="these are probabilities")
    fails_with(check.spoiler_model, NotSqueezed, 1, hint="the output is B x 1")
    fails_with(check.spoiler_model, Swapped, 1, hint="the two directions are swapped")
    fails_with(check.spoiler_model, ForwardOnly, 1, hint="your code raised RuntimeError")
    fails_with(check.spoiler_model, Stub, 1, hint="not implemented yet")


# ---- exercise 3: the class weight ---------------------------------------------------------

def test_positive_weight():
    check.positive_weight(lambda y: float((y == 0).sum() / (y == 1).sum()))
    check.positive_weight(metrics.positive_weight)
    check.positive_weight(lambda y: (y == 0).sum() / (y == 1).sum())  # a 0-d tensor is fine
    fails_with(check.positive_weight, lambda y: float((y == 1).sum() / (y == 0).sum()),
               hint="the ratio is inverted")
    fails_with(check.positive_weight, lambda y: float((y == 0).sum() / len(y)),
               hint="n_negative / n_total is the share of negatives")
    fails_with(check.positive_weight, lambda y: float(len(y) / (y == 1).sum()),
               hint="n_total / n_positive")
    fails_with(check.positive_weight, lambda y: [3, 4], hint="return one number")


# ---- exercise 4: F1 -----------------------------------------------------------------------

def counts(y, p):
    y, p = y.bool(), p.bool()
    return int((y & p).sum()), int((~y & p).sum()), int((y & ~p).sum()), int((~y & ~p).sum())


def test_f1():
    def right(y, p):
        tp, fp, fn, _ = counts(y, p)
        return 2 * tp / (2 * tp + fp + fn) if tp else 0.0

    def accuracy(y, p):
        return float((y == p).float().mean())

    def arithmetic(y, p):
        tp, fp, fn, _ = counts(y, p)
        return ((tp / (tp + fp) if tp + fp else 0) + (tp / (tp + fn) if tp + fn else 0)) / 2

    def negative_class(y, p):
        return right(1 - y, 1 - p)

    def divides_by_zero(y, p):
        tp, fp, fn, _ = counts(y, p)
        precision, recall = tp / (tp + fp), tp / (tp + fn)
        return 2 * precision * recall / (precision + recall)

    check.f1(right)
    check.f1(metrics.f1_score)
    fails_with(check.f1, accuracy, hint="that is the accuracy")
    fails_with(check.f1, arithmetic, hint="arithmetic mean of precision and recall")
    fails_with(check.f1, negative_class, hint="the F1 of the negative class")
    fails_with(check.f1, divides_by_zero, hint="divide by zero")
    fails_with(check.f1, not_implemented, hint="not implemented yet")


# ---- exercise 5: ROC curve and AUC -------------------------------------------------------

def right_curve(y, s):
    fpr, tpr, _ = metrics.roc_curve(y, s)
    return torch.tensor(fpr, dtype=torch.float32), torch.tensor(tpr, dtype=torch.float32)


roc_curve = right_curve  # the lab's name: roc_auc calls it


def roc_auc(labels, scores):
    """The lab's solution: trapezoids under the curve of roc_curve."""
    fpr, tpr = roc_curve(labels, scores)
    return float(((fpr[1:] - fpr[:-1]) * (tpr[1:] + tpr[:-1]) / 2).sum())


def per_sample_curve(y, s):
    """Steps through ties one example at a time: not a ROC curve where scores tie."""
    order = torch.argsort(s, descending=True, stable=True)
    ys = y[order].float()
    tp, fp = torch.cumsum(ys, 0), torch.cumsum(1 - ys, 0)
    zero = torch.zeros(1)
    return torch.cat([zero, fp / fp[-1]]), torch.cat([zero, tp / tp[-1]])


def test_roc_curve():
    check.roc_curve(right_curve)
    check.roc_curve(lambda y, s: tuple(a.tolist() for a in right_curve(y, s)))  # lists too
    fails_with(check.roc_curve, lambda y, s: right_curve(y, s)[::-1],
               hint="FPR and TPR are swapped")
    fails_with(check.roc_curve, per_sample_curve, hint="tied scores are split")
    fails_with(check.roc_curve, lambda y, s: tuple(a[1:] for a in right_curve(y, s)),
               hint="should start at (0, 0)")
    fails_with(check.roc_curve, lambda y, s: (right_curve(y, s)[0] * int((y == 0).sum()),
                                              right_curve(y, s)[1] * int(y.sum())),
               hint="divide the counts")
    fails_with(check.roc_curve, lambda y, s: ([0.0, 1.0], [0.0, 1.0]),
               hint="some corners are missing")
    fails_with(check.roc_curve, lambda y, s: ([0.0, 0.5, 1.0], [0.0, 0.9, 1.0]),
               hint="your curve leaves the ROC curve")


def test_roc_auc():
    def trapezoid(y, s):
        fpr, tpr = right_curve(y, s)
        return float(((fpr[1:] - fpr[:-1]) * (tpr[1:] + tpr[:-1]) / 2).sum())

    def hard(y, s):
        return metrics.roc_auc(y, (s >= 0.5).long())

    def left(y, s):
        fpr, tpr = right_curve(y, s)
        return float(((fpr[1:] - fpr[:-1]) * tpr[:-1]).sum())

    def right_rect(y, s):
        fpr, tpr = right_curve(y, s)
        return float(((fpr[1:] - fpr[:-1]) * tpr[1:]).sum())

    check.roc_auc(trapezoid)
    check.roc_auc(roc_auc)
    check.roc_auc(metrics.roc_auc)
    fails_with(check.roc_auc, hard, hint="hard 0/1 predictions")
    fails_with(check.roc_auc, lambda y, s: 1 - metrics.roc_auc(y, s), hint="that is 1 - AUC")
    fails_with(check.roc_auc, lambda y, s: float(((s >= 0.5).long() == y).float().mean()),
               hint="accuracy at threshold 0.5")
    fails_with(check.roc_auc, left, hint="left rectangles")
    fails_with(check.roc_auc, right_rect, hint="right rectangles")


# ---- the trained model --------------------------------------------------------------------

@pytest.fixture(scope="module")
def splits():
    parts = split_reviews(load_reviews(sample_path()))
    return sentences(parts.train), sentences(parts.validation), sentences(parts.test)


def test_beats_baselines(splits, capsys):
    train, val, test = splits
    share = defaultdict(list)  # a lookup "model": the share of spoilers among equal texts
    for text, label, _ in train + val + test:
        share[text].append(label)

    def good(texts):
        return torch.tensor([sum(share[t]) / len(share[t]) for t in texts])

    rows = check.beats_baselines(good, val, test)
    out = capsys.readouterr().out
    assert "keyword baseline" in out and "majority class" in out and "✅" in out
    assert rows["your BiLSTM"][0] > rows["keyword baseline"][0] + 0.1
    assert rows["majority class"] == (0.5, 0.0)
    test_y = [label for _, label, _ in test]
    assert rows["keyword baseline"][0] == pytest.approx(
        metrics.roc_auc(test_y, check.keyword_scores([t for t, _, _ in test])))

    fails_with(check.beats_baselines, lambda texts: torch.full((len(texts),), 0.03), val, test,
               hint="the model predicts the majority class")
    fails_with(check.beats_baselines, lambda texts: 1 - good(texts), val, test,
               hint="below chance")
    fails_with(check.beats_baselines, check.keyword_scores, val, test,
               hint="does not beat the keyword baseline")
    fails_with(check.beats_baselines, lambda texts: good(texts)[:-1], val, test,
               hint="scores for")
    fails_with(check.beats_baselines, not_implemented, val, test, hint="not implemented yet")


def test_beats_baselines_adds_rows_and_a_verdict_for_extra_baselines(splits, capsys):
    train, val, test = splits
    share = defaultdict(list)
    for text, label, _ in train + val + test:
        share[text].append(label)

    def good(texts):
        return torch.tensor([sum(share[t]) / len(share[t]) for t in texts])

    rows = check.beats_baselines(good, val, test, baselines={"keywords again": check.keyword_scores,
                                                             "same model": good})
    out = capsys.readouterr().out
    assert rows["keywords again"] == rows["keyword baseline"]
    assert rows["same model"] == rows["your BiLSTM"]
    assert "your BiLSTM is ahead of the keywords again" in out
    assert "your BiLSTM is not distinguishable from the same model" in out
    assert list(rows)[-1] == "your BiLSTM"
    # the extra rows inform; they do not change what passes or fails
    fails_with(check.beats_baselines, check.keyword_scores, val, test, 0.1,
               {"the lookup model": good}, hint="does not beat the keyword baseline")

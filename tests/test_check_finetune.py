"""Lab 06 checks: right answers pass; typical wrong answers fail with specific hints."""

from __future__ import annotations

from collections import defaultdict

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.optim.lr_scheduler import LambdaLR

from lmcourse import finetune, metrics
from lmcourse.checks import CheckFailed
from lmcourse.checks import finetune as check
from lmcourse.data.goodreads import (
    heldout_phrasing,
    load_reviews,
    sample_path,
    sentences,
    split_reviews,
)
from lmcourse.models.baselines import bag_of_words_baseline, bilstm_baseline


def fails_with(fn, *args, hint: str, **kwargs) -> str:
    with pytest.raises(CheckFailed) as info:
        fn(*args, **kwargs)
    assert hint in str(info.value), str(info.value)
    return str(info.value)


def not_implemented(*args, **kwargs):
    raise NotImplementedError


# ---- exercise 1: the classification head ---------------------------------------------------

class Base(nn.Module):
    def __init__(self, encoder, num_labels=2, dropout=0.1):
        super().__init__()
        self.encoder = encoder
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(encoder.config.hidden_size, num_labels)

    def hidden(self, input_ids, attention_mask):
        return self.encoder(input_ids, attention_mask=attention_mask).last_hidden_state


class Right(Base):
    def forward(self, input_ids, attention_mask):
        return self.classifier(self.dropout(self.hidden(input_ids, attention_mask)[:, 0]))


class DropoutOnSequence(Base):  # dropout before taking [CLS]: the same in distribution
    def forward(self, input_ids, attention_mask):
        return self.classifier(self.dropout(self.hidden(input_ids, attention_mask))[:, 0])


class NoMask(Base):
    def forward(self, input_ids, attention_mask):
        return self.classifier(self.dropout(self.encoder(input_ids).last_hidden_state[:, 0]))


class MeanPooled(Base):
    def forward(self, input_ids, attention_mask):
        h = self.hidden(input_ids, attention_mask)
        m = attention_mask[..., None].float()
        return self.classifier(self.dropout((h * m).sum(1) / m.sum(1)))


class Pooler(Base):
    def forward(self, input_ids, attention_mask):
        out = self.encoder(input_ids, attention_mask=attention_mask)
        return self.classifier(self.dropout(out.pooler_output))


class LastToken(Base):
    def forward(self, input_ids, attention_mask):
        return self.classifier(self.dropout(self.hidden(input_ids, attention_mask)[:, -1]))


class Probabilities(Right):
    def forward(self, input_ids, attention_mask):
        return torch.softmax(super().forward(input_ids, attention_mask), -1)


class EveryToken(Base):
    def forward(self, input_ids, attention_mask):
        return self.classifier(self.dropout(self.hidden(input_ids, attention_mask)))


class NoDropout(Base):
    def forward(self, input_ids, attention_mask):
        return self.classifier(self.hidden(input_ids, attention_mask)[:, 0])


class AlwaysDropout(Base):
    def forward(self, input_ids, attention_mask):
        h = F.dropout(self.hidden(input_ids, attention_mask)[:, 0], 0.1, training=True)
        return self.classifier(h)


class DropoutOnLogits(Base):
    def forward(self, input_ids, attention_mask):
        return self.dropout(self.classifier(self.hidden(input_ids, attention_mask)[:, 0]))


class Stub(Base):
    forward = not_implemented


def test_classifier():
    check.classifier(Right)
    check.classifier(DropoutOnSequence)
    check.classifier(finetune.SequenceClassifier)
    fails_with(check.classifier, NoMask, hint="attention_mask was not passed")
    fails_with(check.classifier, MeanPooled, hint="mean of the token vectors")
    fails_with(check.classifier, Pooler, hint="you used pooler_output")
    fails_with(check.classifier, LastToken, hint="the last position")
    fails_with(check.classifier, Probabilities, hint="these are probabilities")
    fails_with(check.classifier, EveryToken, hint="for every token")
    fails_with(check.classifier, NoDropout, hint="apply self.dropout")
    fails_with(check.classifier, AlwaysDropout, hint="dropout is still on")
    fails_with(check.classifier, DropoutOnLogits, hint="dropout was applied to the logits")
    fails_with(check.classifier, Stub, hint="not implemented yet")


def test_classifier_leaves_the_global_random_state_alone():
    torch.manual_seed(5)
    want = torch.rand(3)
    torch.manual_seed(5)
    check.classifier(Right)
    assert torch.equal(torch.rand(3), want)


# ---- exercise 2: AdamW and the schedule ----------------------------------------------------

def factor(W, T):
    return lambda t: t / W if t < W else max(0.0, (T - t) / (T - W))


def right_configure(model, total_steps, lr=5e-5, warmup=0.1):
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    return optimizer, LambdaLR(optimizer, factor(round(warmup * total_steps), total_steps))


def test_configure():
    check.configure(right_configure)
    check.configure(lambda m, T, lr=5e-5, warmup=0.1: (
        opt := finetune.make_optimizer(m, lr),
        finetune.warmup_linear(opt, round(warmup * T), T)))

    def adam(model, total_steps, lr=5e-5, warmup=0.1):
        optimizer = torch.optim.Adam(model.parameters(), lr=lr)
        return optimizer, LambdaLR(optimizer, factor(round(warmup * total_steps), total_steps))

    def too_fast(model, total_steps, lr=5e-5, warmup=0.1):
        return right_configure(model, total_steps, 1e-2, warmup)

    def hard_coded(model, total_steps, lr=5e-5, warmup=0.1):
        return right_configure(model, total_steps, 5e-5, warmup)

    def head_only(model, total_steps, lr=5e-5, warmup=0.1):
        optimizer = torch.optim.AdamW(model.classifier.parameters(), lr=lr)
        return optimizer, LambdaLR(optimizer, factor(round(warmup * total_steps), total_steps))

    def encoder_only(model, total_steps, lr=5e-5, warmup=0.1):
        optimizer = torch.optim.AdamW(model.encoder.parameters(), lr=lr)
        return optimizer, LambdaLR(optimizer, factor(round(warmup * total_steps), total_steps))

    def constant(model, total_steps, lr=5e-5, warmup=0.1):
        optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
        return optimizer, LambdaLR(optimizer, lambda t: 1.0)

    def no_warmup(model, total_steps, lr=5e-5, warmup=0.1):
        optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
        return optimizer, LambdaLR(optimizer, lambda t: max(0.0, 1 - t / total_steps))

    def no_decay(model, total_steps, lr=5e-5, warmup=0.1):
        W = round(warmup * total_steps)
        optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
        return optimizer, LambdaLR(optimizer, lambda t: min(1.0, t / W))

    def warmup_as_steps(model, total_steps, lr=5e-5, warmup=0.1):
        optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
        return optimizer, LambdaLR(optimizer, lambda t: t / warmup if t < warmup else
                                   max(0.0, (total_steps - t) / (total_steps - warmup)))

    def not_to_zero(model, total_steps, lr=5e-5, warmup=0.1):
        W = round(warmup * total_steps)
        optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
        return optimizer, LambdaLR(optimizer, lambda t: t / W if t < W else
                                   max(0.1, (total_steps - t) / (total_steps - W)))

    fails_with(check.configure, adam, hint="use torch.optim.AdamW, not Adam")
    fails_with(check.configure, too_fast, hint="destroys the pre-trained weights")
    fails_with(check.configure, hard_coded, hint="use the lr argument")
    fails_with(check.configure, head_only, hint="encoder's parameters are not")
    fails_with(check.configure, encoder_only, hint="head's parameters are not")
    fails_with(check.configure, constant, hint="never changes")
    fails_with(check.configure, no_warmup, hint="no warm-up")
    fails_with(check.configure, no_decay, hint="no decay")
    fails_with(check.configure, warmup_as_steps, hint="the warm-up should last")

    def above(model, total_steps, lr=5e-5, warmup=0.1):
        W = round(warmup * total_steps)
        optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
        return optimizer, LambdaLR(optimizer, lambda t: t / W)

    fails_with(check.configure, above, hint="goes above lr")
    fails_with(check.configure, not_to_zero, hint="should reach 0")
    fails_with(check.configure, lambda m, T, lr, w: torch.optim.AdamW(m.parameters()),
               hint="return a pair")
    fails_with(check.configure, not_implemented, hint="not implemented yet")


# ---- exercise 3: one training step ---------------------------------------------------------

def step(model, batch, optimizer, scheduler, clip=1.0, class_weight=None, *, train=True,
         zero=True, clip_it=True, weighted=True, sched=True, float_labels=False, item=True,
         zero_after_backward=False, clip_after_step=False, sched_first=False):
    input_ids, attention_mask, labels = batch
    if train:
        model.train()
    if zero:
        optimizer.zero_grad()
    if float_labels:
        labels = labels.float()
    loss = F.cross_entropy(model(input_ids, attention_mask), labels,
                           weight=class_weight if weighted else None)
    loss.backward()
    if zero_after_backward:
        optimizer.zero_grad()
    if clip_it and not clip_after_step:
        nn.utils.clip_grad_norm_(model.parameters(), clip)
    if sched and sched_first:
        scheduler.step()
    optimizer.step()
    if clip_it and clip_after_step:
        nn.utils.clip_grad_norm_(model.parameters(), clip)
    if sched and not sched_first:
        scheduler.step()
    return loss.item() if item else loss


def variant(**kwargs):
    return lambda *args, **kw: step(*args, **kw, **kwargs)


def test_train_step():
    check.train_step(step)
    check.train_step(finetune.train_step)
    fails_with(check.train_step, variant(train=False), hint="call model.train()")
    fails_with(check.train_step, variant(zero=False), hint="optimizer.zero_grad() before")
    fails_with(check.train_step, variant(zero_after_backward=True), hint="saw no gradient")
    fails_with(check.train_step, variant(clip_it=False), hint="not clipped")
    fails_with(check.train_step, variant(clip_after_step=True), hint="not clipped")
    fails_with(check.train_step, variant(weighted=False), hint="class_weight was ignored")
    fails_with(check.train_step, variant(sched=False), hint="scheduler was not stepped")
    fails_with(check.train_step, variant(sched_first=True), hint="step the optimiser first")
    fails_with(check.train_step, variant(float_labels=True), hint="turned into floats")
    fails_with(check.train_step, variant(item=False), hint="(its .item()), not the tensor")
    fails_with(check.train_step, not_implemented, hint="not implemented yet")

    def twice(*args, **kwargs):
        step(*args, **kwargs)
        return step(*args, **kwargs)

    fails_with(check.train_step, twice, hint="called 2 times")

    def summed(model, batch, optimizer, scheduler, clip=1.0, class_weight=None):
        step(model, batch, optimizer, scheduler, clip, class_weight)
        return 123.0

    fails_with(check.train_step, summed, hint="returned loss")


# ---- exercise 4: predictions ---------------------------------------------------------------

def predictions(model, input_ids, attention_mask, batch_size=64, *, evaluate=True,
                no_grad=True, transform=lambda z: torch.softmax(z, -1)[:, 1], mask=True,
                drop_last=False):
    if evaluate:
        model.eval()
    out = []
    with torch.set_grad_enabled(not no_grad):
        for start in range(0, len(input_ids), batch_size):
            ids = input_ids[start:start + batch_size]
            if drop_last and len(ids) < batch_size:
                break
            m = attention_mask[start:start + batch_size] if mask else None
            out.append(transform(model(ids, m)))
    return torch.cat(out)


def pvariant(**kwargs):
    return lambda *args: predictions(*args, **kwargs)


def test_predict_proba():
    check.predict_proba(predictions)
    check.predict_proba(finetune.predict_proba)
    fails_with(check.predict_proba, pvariant(evaluate=False), hint="dropout is still on")
    fails_with(check.predict_proba, pvariant(no_grad=False), hint="torch.no_grad()")
    fails_with(check.predict_proba, pvariant(transform=lambda z: z[:, 1]),
               hint="these are logits")
    fails_with(check.predict_proba, pvariant(transform=lambda z: torch.softmax(z, -1)[:, 0]),
               hint="that is P(class 0)")
    fails_with(check.predict_proba, pvariant(transform=lambda z: torch.softmax(z, -1)),
               hint="return P(class 1) only")
    fails_with(check.predict_proba, pvariant(transform=lambda z: torch.sigmoid(z[:, 1])),
               hint="sigmoid(z_1) ignores z_0")
    fails_with(check.predict_proba, pvariant(mask=False), hint="attention_mask was not passed")
    fails_with(check.predict_proba, pvariant(drop_last=True), hint="expected 10 probabilities")
    fails_with(check.predict_proba, not_implemented, hint="not implemented yet")


# ---- baselines and the fine-tuned model ----------------------------------------------------

@pytest.fixture(scope="module")
def splits():
    parts = split_reviews(load_reviews(sample_path()))
    return sentences(parts.train), sentences(parts.validation), sentences(parts.test)


def test_baselines_beat_chance_and_are_deterministic(splits):
    train, val, test = splits
    texts, y = [t for t, _, _ in test], [label for _, label, _ in test]
    bow = bag_of_words_baseline(train)
    scores = bow(texts)
    assert scores.shape == (len(texts),) and ((scores >= 0) & (scores <= 1)).all()
    assert metrics.roc_auc(y, scores) > 0.8
    assert torch.equal(bag_of_words_baseline(train)(texts), scores)
    small = train[:4000]  # the BiLSTM recipe, on a slice to keep the test fast
    lstm = bilstm_baseline(small, epochs=1)
    lstm_scores = lstm(texts)
    assert lstm_scores.shape == (len(texts),)
    assert torch.equal(bilstm_baseline(small, epochs=1)(texts), lstm_scores)
    threads = torch.get_num_threads()
    bilstm_baseline(train[:200], epochs=1)
    assert torch.get_num_threads() == threads


def _oracle(*parts):
    """A lookup "model": for each text, the share of spoilers among its rows in ``parts``."""
    share = defaultdict(list)
    for part in parts:
        for text, label, _ in part:
            share[text].append(label)

    def oracle(texts):
        return torch.tensor([sum(share[t]) / len(share[t]) for t in texts])

    return oracle


def test_beats_baseline(splits, capsys):
    train, val, test = splits
    oracle = _oracle(train, val, test)
    bow = bag_of_words_baseline(train)
    baselines = {"bag of words": bow, "BiLSTM": bow}
    held = {"held-out phrasing": heldout_phrasing}
    rows = check.beats_baseline(oracle, val, test, baselines, parts=held,
                                losses=[0.7, 0.6, 0.5, 0.4])
    out = capsys.readouterr().out
    assert "bag of words" in out and "majority class" in out and "✅" in out
    assert "95% bootstrap interval" in out and "held-out phrasing" in out
    assert rows["fine-tuned MiniLM"]["all"][0] > rows["BiLSTM"]["all"][0]
    assert rows["majority class"]["all"] == (0.5, 0.0)
    test_y = [label for _, label, _ in test]
    assert rows["bag of words"]["all"][0] == pytest.approx(
        metrics.roc_auc(test_y, bow([t for t, _, _ in test])))
    part = [(t, label) for t, label, r in test if heldout_phrasing(r)]
    assert rows["bag of words"]["held-out phrasing"][0] == pytest.approx(
        metrics.roc_auc([y for _, y in part], bow([t for t, _ in part])))

    calls = []

    def counted(texts):
        calls.append(len(texts))
        return oracle(texts)

    check.beats_baseline(counted, val, test, baselines)
    assert calls == [len(val) + len(test)]  # the model is run once

    def slightly_worse(texts):  # the bag of words with one test spoiler ranked lowest
        scores = bow(texts)
        first = next(i for i, t in enumerate(texts) if t == spoiler)
        scores[first] = -1.0
        return scores

    spoiler = next(t for t, label, _ in test if label)
    fails_with(check.beats_baseline, slightly_worse, val, test, baselines,
               hint="does not reach the BiLSTM")
    check.beats_baseline(slightly_worse, val, test, baselines, tolerance=0.02)
    fails_with(check.beats_baseline, lambda texts: torch.full((len(texts),), 0.5), val, test,
               baselines, hint="the same score")
    fails_with(check.beats_baseline, lambda texts: 1 - oracle(texts), val, test, baselines,
               hint="below chance")
    fails_with(check.beats_baseline, lambda texts: oracle(texts)[:-1], val, test, baselines,
               hint="one score per sentence")
    fails_with(check.beats_baseline, oracle, val, test, baselines, losses=[0.7, 0.7, 3.0, 9.0],
               hint="did not go down")
    fails_with(check.beats_baseline, lambda texts: oracle(texts) * float("nan"), val, test,
               baselines, hint="NaN")
    fails_with(check.beats_baseline, not_implemented, val, test, baselines,
               hint="not implemented yet")
    with pytest.raises(ValueError, match="no baseline named"):
        check.beats_baseline(oracle, val, test, {"bag of words": bow})


def test_beats_baseline_over_seeds(splits, capsys):
    """A baseline trained with several seeds: the target is the mean of their AUCs."""
    train, val, test = splits
    bow = bag_of_words_baseline(train)
    test_texts = [t for t, _, _ in test]
    test_y = [label for _, label, _ in test]
    spoilers = [t for t, label, _ in test if label]

    def worse(k):  # the bag of words with its k first test spoilers ranked lowest
        def predict(texts):
            scores = bow(texts)
            for i, t in enumerate(texts):
                if t in spoilers[:k]:
                    scores[i] = -1.0
            return scores
        return predict

    seeds = [bow, worse(1), worse(3)]
    aucs = [metrics.roc_auc(test_y, fn(test_texts)) for fn in seeds]
    rows = check.beats_baseline(bow, val, test, {"BiLSTM": seeds})
    out = capsys.readouterr().out
    assert "mean of 3 seeds" in out and "BiLSTM (seed 2)" in out
    assert rows["BiLSTM (mean of 3 seeds)"]["all"][0] == pytest.approx(sum(aucs) / 3)
    fails_with(check.beats_baseline, worse(2), val, test, {"BiLSTM": [bow, bow, worse(1)]},
               hint="mean of 3 seeds")
    with pytest.raises(ValueError, match="at least one"):
        check.beats_baseline(bow, val, test, {"BiLSTM": []})


def test_bootstrap_auc_difference():
    y = [0, 0, 0, 1, 1, 0, 1, 0]
    a = [0.1, 0.2, 0.3, 0.9, 0.8, 0.4, 0.7, 0.5]
    diff, low, high = metrics.bootstrap_auc_difference(y, a, a)
    assert diff == low == high == 0.0
    b = [0.9, 0.2, 0.3, 0.1, 0.8, 0.4, 0.7, 0.5]
    diff, low, high = metrics.bootstrap_auc_difference(y, a, b, n=200)
    assert diff == pytest.approx(metrics.roc_auc(y, a) - metrics.roc_auc(y, b))
    assert low <= diff <= high


def test_beats_baseline_beyond_the_bootstrap_interval(splits, capsys):
    """Lab 06's rule: ahead of the bag of words by more than another test set could undo."""
    train, val, test = splits
    oracle = _oracle(train, val, test)
    bow = bag_of_words_baseline(train)
    check.beats_baseline(oracle, val, test, {"bag of words": bow}, target="bag of words",
                         beyond_interval=True, record=True)
    out = capsys.readouterr().out
    assert "paired bootstrap" in out and "verdict: supported" in out and "✅" in out
    fails_with(check.beats_baseline, bow, val, test, {"bag of words": bow},
               target="bag of words", beyond_interval=True, hint="could reverse it")


def test_beats_baseline_can_decide_without_recording_a_claim(splits, capsys):
    """Lab 06 reads its verdict from chapter 09's seeds: by default the check records none."""
    train, val, test = splits
    oracle = _oracle(train, val, test)
    bow = bag_of_words_baseline(train)
    check.beats_baseline(oracle, val, test, {"bag of words": bow}, target="bag of words",
                         beyond_interval=True, positives="fresh reviews")
    out = capsys.readouterr().out
    assert "✅" in out and "95% bootstrap interval" in out and "verdict:" not in out
    fails_with(check.beats_baseline, lambda texts: 1 - oracle(texts), val, test,
               {"bag of words": bow}, target="bag of words", positives="fresh reviews",
               hint="rank fresh reviews LOWEST")


def test_the_majority_row_predicts_the_validation_majority(capsys):
    """With more positives than negatives (Rotten Tomatoes: 61% fresh), always saying
    "positive" has F1 2p / (1 + p), not 0; the table names the rows and the classes."""
    validation = [("a", 1, ""), ("b", 1, ""), ("c", 0, "")]
    test = [("a", 1, ""), ("b", 1, ""), ("c", 0, ""), ("d", 1, "")]
    scores = {"a": 0.9, "b": 0.8, "c": 0.1, "d": 0.2, "e": 0.3}
    rows, _ = metrics.compare_classifiers({"m": lambda texts: [scores[t] for t in texts]},
                                          validation, test, units="snippets", positives="fresh",
                                          validation_name="tuning")
    assert rows["majority class"]["all"] == (0.5, pytest.approx(2 * 0.75 / 1.75))
    out = capsys.readouterr().out
    assert "test snippets" in out and "3 tuning snippets" in out and "snippets / fresh" in out
    rows, _ = metrics.compare_classifiers({"m": lambda texts: [scores[t] for t in texts]},
                                          [("c", 0, ""), ("e", 0, ""), ("a", 1, "")], test)
    assert rows["majority class"]["all"] == (0.5, 0.0)

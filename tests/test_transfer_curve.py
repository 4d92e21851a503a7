"""The learning-curve references' parts: the logistic regression, its cross-validation,
the label orders, the real-English loader and MiniLM's sentence vectors."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from lmcourse.course.reference import transfer_curve as tc
from lmcourse.data import corpora, load_polarity
from lmcourse.metrics import roc_auc
from lmcourse.models import logistic


def _toy(n=120, d=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=g, dtype=torch.float64)
    y = ((X[:, 0] + 0.5 * torch.randn(n, generator=g, dtype=torch.float64)) > 0.8).long()
    return X, y


def test_fit_logistic_reaches_the_minimum_of_its_objective():
    X, y = _toy()
    model = logistic.fit_logistic(X, y, lam=0.05)
    w, b = model.w.clone().requires_grad_(), model.b.clone().requires_grad_()
    counts = torch.bincount(y, minlength=2).double()
    c = (len(y) / (2 * counts))[y]
    s = 2 * y.double() - 1
    loss = (c * F.softplus(-s * (X @ w + b))).sum() / c.sum() + 0.05 / 2 * w.square().sum()
    loss.backward()
    assert w.grad.abs().max() < 1e-6 and b.grad.abs() < 1e-6
    assert model(X).shape == (len(y),) and roc_auc(y.tolist(), model(X).tolist()) > 0.8


def test_a_larger_penalty_gives_smaller_weights():
    X, y = _toy()
    norms = [logistic.fit_logistic(X, y, lam).w.norm() for lam in (1e-3, 1e-1, 1.0)]
    assert norms[0] > norms[1] > norms[2]


def test_fit_logistic_names_a_missing_class():
    X, _ = _toy()
    with pytest.raises(ValueError, match="both classes"):
        logistic.fit_logistic(X, torch.zeros(len(X), dtype=torch.long))


def test_stratified_folds_cover_every_row_once_and_share_the_classes():
    _, y = _toy()
    folds = logistic.stratified_folds(y, 4, seed=3)
    assert sorted(torch.cat(folds).tolist()) == list(range(len(y)))
    positives = [int(y[f].sum()) for f in folds]
    assert max(positives) - min(positives) <= 1


def test_cross_validate_keeps_the_penalty_with_the_best_held_out_auc():
    X, y = _toy(n=60, d=30)
    model = logistic.cross_validate(X, y, lambdas=(1e-4, 1e-1, 10.0), k=3, seed=1)
    assert model.lam == max(model.cv_auc, key=model.cv_auc.get)
    aucs = []
    for held in logistic.stratified_folds(y, 3, seed=1):
        keep = torch.ones(len(y), dtype=torch.bool)
        keep[held] = False
        fold_model = logistic.fit_logistic(X[keep], y[keep], 10.0)
        aucs.append(roc_auc(y[held].tolist(), fold_model(X[held]).tolist()))
    assert model.cv_auc[10.0] == pytest.approx(sum(aucs) / 3)
    with pytest.raises(ValueError, match="2 examples of each class"):
        logistic.cross_validate(X, torch.tensor([1] + [0] * (len(y) - 1)))


def test_bag_of_words_counts_the_training_words_only():
    X = logistic.bag_of_words(["the cat sat", "a dog"], ["the the dog", "an owl"])
    vocab = sorted({"the", "cat", "sat", "a", "dog"})
    assert X[0, vocab.index("the")] == 2 and X[0, vocab.index("dog")] == 1
    assert X[1].sum() == 0 and X.shape == (2, 5)


@pytest.mark.parametrize("share", [0.1, 0.5])
def test_label_order_keeps_the_rare_share_in_every_prefix(share):
    n_rare = int(200 * share)
    labels = torch.tensor([1] * n_rare + [0] * (200 - n_rare))
    order = tc.label_order(labels, seed=4)
    assert sorted(order.tolist()) == list(range(200))
    for n in (4, 16, 33, 100):
        assert int(labels[order[:n]].sum()) == max(2, round(n * share))
    assert not torch.equal(order, tc.label_order(labels, seed=5))


def test_finetune_steps_follow_the_recipe():
    recipe = tc.SPOILER_RECIPE
    assert [tc.finetune_steps(n, recipe) for n in (16, 128, 256, 8784)] == [50, 80, 160, 300]


def test_polarity_is_real_and_balanced_and_a_bad_line_is_named(tmp_path, monkeypatch):
    rows = load_polarity()
    assert len(rows) == 200 and sum(y for _, y in rows) == 100
    assert len({t for t, _ in rows}) == 200
    task = tc.polarity_task(0)
    assert not set(task.train_texts) & set(task.test_texts)
    assert int(task.test_labels.sum()) == 50 and len(task.test_texts) == 100
    bad = tmp_path / "bad.cor"
    bad.write_text("__label__pos fine .\n__label__meh what ?\n")
    monkeypatch.setattr(corpora, "corpus_path", lambda name="lee": bad)
    with pytest.raises(ValueError, match="line 2"):
        load_polarity()


def test_sentence_vectors_average_the_real_tokens_only():
    from lmcourse.models.bert import BertConfig, BertModel
    from lmcourse.models.feature_based import sentence_vectors

    torch.manual_seed(0)
    encoder = BertModel(BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1,
                                   num_attention_heads=2, intermediate_size=32))
    ids = torch.tensor([[2, 7, 9, 3, 0, 0], [2, 5, 3, 0, 0, 0]])
    mask = (ids != 0).long()
    got = sentence_vectors(encoder.eval(), ids, mask, batch_size=1)
    for row in range(2):
        n = int(mask[row].sum())
        h = encoder(ids[row:row + 1, :n]).last_hidden_state[0]
        torch.testing.assert_close(got[row], h.mean(0), atol=1e-5, rtol=1e-5)


def test_bag_of_words_classifier_is_the_cross_validated_regression_on_counts():
    texts = ["he dies at the end", "she dies", "a lovely book", "slow start", "the end twist",
             "lovely prose", "who dies", "great cover"]
    labels = torch.tensor([1, 1, 0, 0, 1, 0, 1, 0])
    predict = logistic.bag_of_words_classifier(texts, labels, lambdas=(1e-2, 1.0), seed=0)
    model = logistic.cross_validate(logistic.bag_of_words(texts, texts), labels, (1e-2, 1.0))
    new = ["the hero dies", "a lovely cover"]
    torch.testing.assert_close(predict(new), model(logistic.bag_of_words(texts, new)))
    assert predict.lam == model.lam and predict(new)[0] > predict(new)[1]

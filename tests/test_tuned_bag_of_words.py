"""The tuned bag of words: its features, and a grid that really is searched on the tuning
split (lmcourse.models.tuned_bag_of_words)."""

from __future__ import annotations

import math
import random

import pytest
import torch

from lmcourse.models.tuned_bag_of_words import (
    Settings,
    Vocabulary,
    features,
    tune_bag_of_words,
    tune_logistic,
)

TEXTS = ["good film", "good good film", "bad film", "not good"]


def test_counts_binary_and_tfidf_features():
    counts = features(Vocabulary.fit(TEXTS, 1, "counts"), ["good good film", "unseen"])
    vocab = Vocabulary.fit(TEXTS, 1, "counts").columns
    dense = counts.to_dense()
    assert dense[0, vocab["good"]] == 2 and dense[0, vocab["film"]] == 1
    assert dense[1].abs().sum() == 0  # a word never seen in training is dropped
    binary = features(Vocabulary.fit(TEXTS, 1, "binary"), ["good good film"]).to_dense()
    assert binary[0, vocab["good"]] == 1
    tfidf_vocab = Vocabulary.fit(TEXTS, 1, "tfidf")
    row = features(tfidf_vocab, ["good good film"]).to_dense()[0]
    assert math.isclose(row.norm().item(), 1.0, rel_tol=1e-12)
    idf = lambda df: math.log((1 + 4) / (1 + df)) + 1  # noqa: E731 - the docstring's formula
    good, film = (1 + math.log(2)) * idf(3), idf(3)
    assert math.isclose(row[vocab["good"]].item() / row[vocab["film"]].item(), good / film)


def test_a_bigram_is_kept_only_if_two_training_texts_hold_it():
    columns = Vocabulary.fit(TEXTS, 2, "counts").columns
    assert "good film" in columns and "bad film" not in columns and "not good" not in columns
    assert "bad" in columns  # words are kept from one text on


def _xor_texts(n: int, seed: int) -> tuple[list[str], torch.Tensor]:
    """Label 1 for "very good" and "not bad", 0 for "not good" and "very bad": every word is
    as common in both classes, so only the word pairs tell them apart."""
    rng = random.Random(seed)
    pairs = {("very", "good"): 1, ("not", "bad"): 1, ("not", "good"): 0, ("very", "bad"): 0}
    texts, labels = [], []
    for _ in range(n):
        (a, b), y = rng.choice(list(pairs.items()))
        filler = rng.sample(["the", "film", "was", "plot", "cast", "really"], 3)
        texts.append(" ".join(filler[:2] + [a, b] + filler[2:]))
        labels.append(y)
    return texts, torch.tensor(labels)


def test_the_tuning_split_chooses_bigrams_where_only_word_order_carries_the_label():
    train, tune = _xor_texts(200, 0), _xor_texts(100, 1)
    tuned = tune_bag_of_words(*train, *tune)
    assert tuned.settings.ngrams == 2
    assert len(tuned.tried) == 2 * 3 * 6  # every setting of the grid was scored
    words_only = max(score for s, score in tuned.tried if s.ngrams == 1)
    with_pairs = max(score for s, score in tuned.tried if s.ngrams == 2)
    assert words_only < 0.7 < 0.95 < with_pairs
    test_texts, test_labels = _xor_texts(100, 2)
    predicted = (tuned(test_texts) > 0.5).long()
    assert (predicted == test_labels).float().mean() > 0.95
    assert str(tuned.settings).startswith("words + bigrams")


def test_tune_logistic_keeps_the_penalty_with_the_best_tuning_score():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(60, 5, generator=g, dtype=torch.float64)
    y = (X[:, 0] > 0).long()
    X_tune = torch.randn(40, 5, generator=g, dtype=torch.float64)
    y_tune = (X_tune[:, 0] > 0).long()
    model, scores = tune_logistic(X, y, X_tune, y_tune, lambdas=(1e-3, 1e3))
    assert len(scores) == 2 and model.lam == (1e-3 if scores[0] >= scores[1] else 1e3)


def test_bad_input_is_refused_with_a_clear_error():
    with pytest.raises(ValueError, match="both classes"):
        tune_bag_of_words(TEXTS, torch.tensor([1, 1, 0, 0]), TEXTS[:2], torch.tensor([1, 1]))
    with pytest.raises(ValueError, match="3 examples for 4 labels"):
        tune_bag_of_words(TEXTS[:3], torch.tensor([1, 1, 0, 0]), TEXTS, torch.tensor([1, 0] * 2))
    with pytest.raises(ValueError, match="unknown weighting"):
        Vocabulary.fit(TEXTS, 1, "bm25")
    assert str(Settings(1, "tfidf", 0.01)) == "words, tfidf, lambda 0.01"

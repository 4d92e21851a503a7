"""The spoiler bag of words is tuned like a network: its learning rate and number of steps
are the grid's best on held-out labelled sentences, not defaults."""

from __future__ import annotations

import pytest

from lmcourse import metrics
from lmcourse.data.goodreads import load_reviews, sample_path, sentences, split_reviews
from lmcourse.models.baselines import (
    BagOfWordsSetting,
    bag_of_words_baseline,
    tuned_bag_of_words_baseline,
)


@pytest.fixture(scope="module")
def splits():
    parts = split_reviews(load_reviews(sample_path()))
    return sentences(parts.train)[:6000], sentences(parts.validation)


def test_the_chosen_setting_is_the_grids_best_on_validation(splits):
    train, validation = splits
    rates, steps = (0.01, 0.2), (10, 60)
    tuned = tuned_bag_of_words_baseline(train, validation, rates, steps)
    texts, labels = [t for t, _, _ in validation], [y for _, y, _ in validation]
    # each grid point refitted on its own, the slow way
    measured = {(n, lr): metrics.roc_auc(labels, bag_of_words_baseline(train, n, lr)(texts))
                for lr in rates for n in steps}
    assert set(tuned.tried) == set(measured)
    for key, auc in measured.items():
        assert tuned.tried[key] == pytest.approx(auc, abs=1e-9)
    best = max(measured.values())
    assert tuned.setting.validation_auc == pytest.approx(best, abs=1e-9)
    assert measured[(tuned.setting.steps, tuned.setting.lr)] == pytest.approx(best, abs=1e-9)
    assert len(set(measured.values())) > 1  # the grid is not flat: the choice matters
    assert metrics.roc_auc(labels, tuned(texts)) == pytest.approx(best, abs=1e-9)


def test_a_setting_names_itself():
    assert str(BagOfWordsSetting(25, 0.05)) == "Adam lr 0.05, 25 steps"
    assert str(BagOfWordsSetting(25, 0.05, 0.98765)) == (
        "Adam lr 0.05, 25 steps, chosen on validation (ROC-AUC 0.988)")


def test_validation_with_one_label_is_refused(splits):
    train, validation = splits
    only_negatives = [row for row in validation if row[1] == 0][:50]
    with pytest.raises(ValueError, match="both labels"):
        tuned_bag_of_words_baseline(train, only_negatives)
    with pytest.raises(ValueError, match="at least 1"):
        bag_of_words_baseline(train, steps=0)

"""lmcourse.models.ngram_tuning: the fast counts equal NGramLM, and tuning picks the grid's best."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from lmcourse.models.ngram import NGramLM, modified_discounts
from lmcourse.models.ngram_tuning import (
    NGramCounts,
    NGramSetting,
    recorded_kn_baseline,
    tune_ngram,
    tuned_perplexities,
)

V = 12


@pytest.fixture(scope="module")
def toy() -> np.ndarray:
    rng = np.random.default_rng(1)
    weights = 1.0 / np.arange(1, V)
    return rng.choice(V - 1, size=2500, p=weights / weights.sum())


@pytest.mark.parametrize("discount", [0.3, 0.75, 0.95, "modified"])
@pytest.mark.parametrize("order", [1, 2, 3, 5, 8])
def test_fast_scores_equal_the_readable_model(toy, order, discount):
    train, held = toy[:2000], toy[2000:]
    fast = NGramCounts(train, V, 8).scorer(held).perplexity(order, discount)
    slow = NGramLM(order, V, discount).fit(train).perplexity(held)
    assert fast == pytest.approx(slow, rel=1e-10)


def test_a_text_shorter_than_the_order_is_scored_like_ngramlm(toy):
    held = toy[:3]  # fewer tokens than the order: every position has a short history
    fast = NGramCounts(toy, V, 6).scorer(held).perplexity(6, "modified")
    assert fast == pytest.approx(NGramLM(6, V, "modified").fit(toy).perplexity(held), rel=1e-10)


@pytest.mark.parametrize("discount", [0.75, "modified"])
def test_rows_are_read_alone_and_their_first_token_is_not_scored(toy, discount):
    train, rows = toy[:2000], toy[2000:2480].reshape(20, 24)
    scorer = NGramCounts(train, V, 4).rows_scorer(rows)
    lm = NGramLM(4, V, discount).fit(train)
    # each row alone: the row's log-likelihood minus that of its first token
    expected = sum(lm.log_prob(row) - lm.log_prob(row[:1]) for row in rows)
    assert scorer.scored == 20 * 23
    assert scorer.log_prob(4, discount) == pytest.approx(expected, rel=1e-10)
    # reading the rows as one stream gives more context, so a different score
    stream = NGramCounts(train, V, 4).scorer(rows.flatten()).log_probs(4, discount)
    assert scorer.log_prob(4, discount) != pytest.approx(
        float(stream.reshape(20, 24)[:, 1:].sum()), rel=1e-6)
    with pytest.raises(ValueError, match="2-D"):
        NGramCounts(train, V, 4).rows_scorer(rows.flatten())


def test_tuning_on_windows_scores_them_as_rows(toy):
    train, rows = toy[:2000], toy[2000:2480].reshape(20, 24)
    tuned = tune_ngram(train, rows, V, orders=[2, 3], discounts=[0.5, 0.9])
    scorer = NGramCounts(train, V, 3).rows_scorer(rows)
    assert tuned.tuning_perplexity == pytest.approx(
        min(scorer.perplexity(n, d) for n in (2, 3) for d in (0.5, 0.9)))
    assert tuned.perplexity(train, rows, V) == pytest.approx(
        scorer.perplexity(tuned.best.order, tuned.best.discount))


def test_modified_discounts_follow_chen_and_goodman():
    n1, n2, n3, n4 = 1000, 400, 200, 120
    y = n1 / (n1 + 2 * n2)
    expected = (1 - 2 * y * n2 / n1, 2 - 3 * y * n3 / n2, 3 - 4 * y * n4 / n3)
    assert modified_discounts([n1, n2, n3, n4]) == pytest.approx(expected)
    for r, d in zip((1, 2, 3), modified_discounts([5, 0, 0, 0]), strict=True):
        assert 0 < d < r  # too few counts: kept inside the range it must lie in


def test_modified_model_reads_its_discounts_off_each_levels_counts(toy):
    lm = NGramLM(3, V, "modified").fit(toy)
    bigram_counts = Counter(zip(toy[:-1].tolist(), toy[1:].tolist(), strict=True))
    n = Counter(bigram_counts.values())
    assert lm.raw_d[1] == modified_discounts([n[1], n[2], n[3], n[4]])
    for ctx in ([], toy[:1].tolist(), toy[5:7].tolist(), [V - 1, V - 1]):
        p = lm.distribution(ctx)
        assert float(p.sum()) == pytest.approx(1.0, abs=1e-12) and float(p.min()) > 0


def test_tuning_returns_the_grids_best_on_the_tuning_split(toy):
    train, tuning = toy[:2000], toy[2000:]
    tuned = tune_ngram(train, tuning, V, orders=range(1, 7), discounts=(0.5, 0.9, "modified"))
    assert len(tuned.tried) == 6 * 3
    for setting, ppl in tuned.tried.items():  # each entry is the readable model's own score
        assert ppl == pytest.approx(setting.model(train, V).perplexity(tuning), rel=1e-10)
    assert tuned.tuning_perplexity == min(tuned.tried.values())
    assert tuned.tried[tuned.best] == tuned.tuning_perplexity
    kn, _ = tuned.best_of("kn")
    assert kn.discount != "modified"
    assert "order" in tuned.summary() and str(tuned.best) in tuned.summary()


def test_tuned_perplexity_refits_on_the_training_text(toy):
    tuned = tune_ngram(toy[:1500], toy[1500:2000], V, orders=[2, 3], discounts=[0.7])
    held = toy[2000:]
    expected = NGramLM(tuned.best.order, V, 0.7).fit(toy[:2000]).perplexity(held)
    assert tuned.perplexity(toy[:2000], held, V) == pytest.approx(expected, rel=1e-10)


def test_a_recorded_baseline_names_the_modified_setting_the_tuning_chose(toy):
    train, tuning, held = toy[:1500], toy[1500:2000], toy[2000:]
    tuned = tune_ngram(train, tuning, V, orders=range(1, 6), discounts=(0.5, "modified"))
    recorded = tuned_perplexities(tuned, train, held, V, suffix="_fwd")
    name, value = recorded_kn_baseline(recorded, suffix="_fwd")
    modified, _ = tuned.best_of("modified")
    assert name == f"tuned KN ({modified})"
    assert value == recorded["modified_kn_tuned_fwd"]
    assert value == pytest.approx(modified.model(train, V).perplexity(held), abs=1e-4)
    with pytest.raises(KeyError, match="tuned_perplexities"):
        recorded_kn_baseline(recorded)  # recorded with a suffix, asked for without one


def test_bad_settings_are_refused_clearly(toy):
    counts = NGramCounts(toy, V, 3)
    with pytest.raises(ValueError, match="outside the counts"):
        counts.scorer(toy[:10]).perplexity(4, 0.7)
    with pytest.raises(ValueError, match="at least one order"):
        tune_ngram(toy, toy, V, orders=[])
    with pytest.raises(ValueError, match="'modified'"):
        NGramLM(2, V, "modifed")
    assert str(NGramSetting(5, 0.9)) == "Kneser-Ney, order 5, D = 0.9"

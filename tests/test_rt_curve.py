"""Reference rt-curve's plan: which label counts each seed runs, and a recipe whose grid is
the tuned bag of words' own (lmcourse.course.reference.rt_curve)."""

from __future__ import annotations

from lmcourse.course.reference import rt_curve
from lmcourse.models import tuned_bag_of_words as tb


def test_five_seeds_below_1024_labels_and_three_at_the_largest_sizes():
    recipe = rt_curve.RT_RECIPE
    assert rt_curve.RT_CURVE.seeds == (0, 1, 2, 3, 4)
    every = [rt_curve.sizes_for(recipe, seed, 9_295) for seed in rt_curve.RT_CURVE.seeds]
    for n in (16, 64, 256, 1024):
        assert sum(n in sizes for sizes in every) == 5
    for n in (4096, 9_295):
        assert sum(n in sizes for sizes in every) == 3
    assert every[0] == sorted(every[0]) and every[0][-1] == 9_295  # 0 stands for all


def test_the_recipe_records_the_grid_the_code_searches():
    grid = rt_curve.RT_RECIPE["bag_of_words_grid"]
    assert grid == {"ngrams": list(tb.NGRAMS), "weighting": list(tb.WEIGHTINGS),
                    "lambdas": list(tb.GRID_LAMBDAS)}
    assert rt_curve.RT_CURVE.keep_weights == ()


def test_curve_values_reads_each_size_from_the_seeds_that_ran_it():
    from types import SimpleNamespace

    import pytest

    from lmcourse.course.reference.result import ReferenceResult
    from lmcourse.course.reference.transfer_curve import curve_values

    run = SimpleNamespace(
        name="demo", seeds=[0, 1, 2], curves={0: [[16, 1.0, 0.6], [9295, 2.0, 0.9]]},
        metrics={0: {"bag_of_words@16": 0.5, "bag_of_words@9295": 0.8},
                 1: {"bag_of_words@16": 0.6}, 2: {"bag_of_words@16": 0.7}})
    run.values = lambda metric: ReferenceResult.values(run, metric)
    assert curve_values(run, "bag_of_words") == {16: [0.5, 0.6, 0.7], 9295: [0.8]}
    with pytest.raises(KeyError, match="demo has no metric 'bilstm@16'"):
        curve_values(run, "bilstm")

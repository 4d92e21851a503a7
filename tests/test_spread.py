"""The interval a repeated figure spans (lmcourse.course.spread)."""

import statistics

import pytest

from lmcourse.course.spread import COVERAGE, Interval, last_digit_unit


def test_interval_is_mean_plus_minus_three_standard_deviations():
    values = [0.891, 0.826, 0.699, 0.895]
    span = Interval.of(values, 0.001)
    sd = statistics.stdev(values)
    assert span.low == pytest.approx(statistics.fmean(values) - COVERAGE * sd)
    assert span.high == pytest.approx(statistics.fmean(values) + COVERAGE * sd)
    assert 0.935 in span and 0.2 not in span


def test_repeats_that_agree_leave_one_unit_of_the_last_digit():
    span = Interval.of([0.325, 0.325, 0.325], last_digit_unit("0.325"))
    assert 0.326 in span and 0.324 in span and 0.327 not in span


def test_a_miss_says_how_far_and_the_reference_spread():
    span = Interval.of([0.50, 0.52, 0.51], 0.01, "seeds 0-2")
    message = span.miss(0.30)
    assert "below the reference interval" in message and "seeds 0-2" in message
    assert f"{span.low - 0.30:.3g}" in message
    assert span.distance(0.51) == 0 and span.distance(0.9) > 0
    assert span.outside(0.51) == "" and span.outside(0.30) == message
    assert span.place(0.51) == "inside" and span.place(0.30).endswith(" below")


def test_last_digit_unit():
    assert last_digit_unit("0.935") == pytest.approx(0.001)
    assert last_digit_unit("12.5") == pytest.approx(0.1)
    assert last_digit_unit("7") == 1


def test_bad_repeats_are_refused_with_a_reason():
    with pytest.raises(ValueError, match="at least two repeats"):
        Interval.of([0.5], 0.01)
    with pytest.raises(ValueError, match="non-finite"):
        Interval.of([0.5, float("nan")], 0.01)

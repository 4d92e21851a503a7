"""The benchmark registry (``make bench``): missing pieces are reported, not fatal; results
merge and render; one real benchmark runs end to end."""

from __future__ import annotations

import time

import torch

from benchmarks import registry
from benchmarks.__main__ import _merge_notebook_rows
from benchmarks.registry import MISSING, OK, Benchmark, Result, run_one
from lmcourse import timing


def _bench(fn):
    return Benchmark("tmp", "A temporary benchmark", "implementations", fn)


def _needs_missing_module():
    from lmcourse.models import no_such_module  # noqa: F401


def test_a_missing_attribute_is_reported_with_its_name():
    def needs_missing_attribute():
        from lmcourse.autograd import NoSuchClass  # noqa: F401

    record = run_one(_bench(needs_missing_attribute))
    assert record["status"] == MISSING and "NoSuchClass" in record["message"]


def test_an_import_error_inside_the_benchmark_counts_as_missing():
    def needs_future_code():
        from lmcourse.models import not_written_yet  # noqa: F401

    record = run_one(_bench(needs_future_code))
    assert record["status"] == MISSING and "not_written_yet" in record["message"]


def test_a_crashing_benchmark_is_an_error_not_a_crash():
    def broken():
        raise ValueError("shapes do not match")

    record = run_one(_bench(broken))
    assert record["status"] == "error"
    assert record["message"] == "ValueError: shapes do not match"


def test_results_record_the_ratio_and_the_machine():
    record = run_one(_bench(lambda: Result("ours / ref", ours_s=3.0, reference_s=1.5, ratio=2.0)))
    assert record["status"] == OK and record["ratio"] == 2.0
    assert record["machine"]["cores"] >= 1 and "torch" in record["machine"]


def test_timeit_is_the_median_of_the_repeats():
    delays = iter([0.0, 0.001, 0.03, 0.001])  # warm-up, then three timed calls

    seconds = timing.measure(lambda: time.sleep(next(delays)), repeats=3, warmup=1)
    assert 0.001 <= seconds < 0.02  # the median ignores the one slow call


def test_report_lists_ratios_and_what_is_missing():
    ok = run_one(_bench(lambda: Result("ours / ref", rows=[{"size": 8, "ms": 1.5}],
                                       ours_s=0.004, reference_s=0.002, ratio=2.0)))
    missing = run_one(_bench(_needs_missing_module))
    text = registry.render_markdown({"tmp": ok, "other": {**missing, "name": "other"}})
    assert "| A temporary benchmark | 4.0 ms | 2.0 ms | 2.00× | ours / ref |" in text
    assert "| size | ms |" in text and "| 8 | 1.5 |" in text
    assert "not yet available" in text and "no_such_module" in text


def test_notebook_timings_of_other_notebooks_are_kept():
    old = {"status": OK, "rows": [{"notebook": "chapters/01_backprop.ipynb", "seconds": 30.0},
                                  {"notebook": "chapters/99_gone.ipynb", "seconds": 1.0}]}
    new = {"status": OK, "rows": [{"notebook": "labs/01_autograd.ipynb", "seconds": 4.0}]}
    merged = _merge_notebook_rows(new, old)
    assert [r["notebook"] for r in merged["rows"]] == ["chapters/01_backprop.ipynb",
                                                       "labs/01_autograd.ipynb"]
    assert merged["ours_s"] == 34.0
    # the caption's total, median and slowest are those of the kept and new rows together
    assert "2 notebooks: total 34 s" in merged["summary"] and "slowest 30 s" in merged["summary"]


def test_compare_alternates_the_two_functions():
    calls = []
    a, b = timing.compare(lambda: calls.append("a"), lambda: calls.append("b"), repeats=2)
    assert calls == ["a", "b", "a", "b", "a", "b"]  # warm-up pair, then alternating
    assert a >= 0 and b >= 0


def test_list_names_every_benchmark(capsys):
    """`python -m benchmarks --list` used to crash on a field Benchmark does not have."""
    from benchmarks.__main__ import main
    from benchmarks.registry import REGISTRY

    assert main(["--list"]) == 0
    printed = capsys.readouterr().out
    assert all(name in printed for name in REGISTRY)
    assert "(opt-in)" in printed  # the setup timing is not run unless asked for


def test_calibration_is_a_stable_positive_time():
    from lmcourse.course.speed import calibrate, normalised

    a, b = calibrate(repeats=3), calibrate(repeats=3)
    assert 0 < a < 30 and 0.5 < a / b < 2
    assert normalised(10.0, calibration=2.0, reference=1.0) == 5.0
    assert normalised(10.0, calibration=2.0, reference=None) == 10.0


def test_lm_training_step_trains_the_model_it_times():
    from lmcourse.models.gated import GatedLM
    from lmcourse.timing import lm_training_step, measure

    torch.manual_seed(0)
    model = GatedLM(11, 8, cell="lstm", embed=4, impl="torch")
    before = [p.detach().clone() for p in model.parameters()]
    step = lm_training_step(model, batch_size=3, seq_len=5, vocab_size=11)
    assert measure(step, repeats=2, warmup=1) > 0
    assert all(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))

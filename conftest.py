"""Course-wide pytest hooks: a per-notebook timing table and a hard timeout.

A notebook's wall time is a **benchmark, not a test**: machines of one kind differ in
speed by 1.5x, so a notebook over its CPU budget (``LMCOURSE_NOTEBOOK_BUDGET_S``, 120 s
by default) is reported in the summary, never failed. The summary prints each notebook's
time, the same time normalised to the machine that produced ``benchmarks/RESULTS.md``
(by a short calibration of this machine's speed, :mod:`lmcourse.course.speed`), and the
median and slowest against the course's aims (median <= 60 s, none over 90 s).

What does fail is a notebook that runs away: once it has spent
``LMCOURSE_NOTEBOOK_TIMEOUT_S`` seconds (2.5 times the budget by default; 0 turns it
off), its remaining cells fail at once instead of running. A single hanging cell is
stopped by nbval's ``--nbval-cell-timeout``.
"""

from __future__ import annotations

import os
import statistics
from collections import defaultdict

import pytest

_seconds: dict[str, float] = defaultdict(float)
_failed: set[str] = set()

#: the course's aims for the normalised times (reported, not enforced)
AIM_MEDIAN_S, AIM_SLOWEST_S = 60.0, 90.0


def _budget() -> float:
    return float(os.environ.get("LMCOURSE_NOTEBOOK_BUDGET_S", "120"))


def _timeout() -> float:
    return float(os.environ.get("LMCOURSE_NOTEBOOK_TIMEOUT_S", 2.5 * _budget()))


def _notebook(nodeid: str) -> str | None:
    path = nodeid.split("::", 1)[0]
    return path if path.endswith(".ipynb") else None


_cold_cache: dict[str, str] = {}


def _cold_cache_notebooks() -> set[str]:
    """``LMCOURSE_COLD_CACHE_NOTEBOOKS``: notebooks run with an empty course cache, so the
    suite proves the path of a student who never ran ``make teacher``."""
    return set(os.environ.get("LMCOURSE_COLD_CACHE_NOTEBOOKS", "").split())


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Point a cold-cache notebook's kernel at an empty cache (nbval starts a notebook's
    kernel when its first cell is set up, with this process's environment), and fail the
    remaining cells of a notebook that has used up its hard timeout."""
    path, limit = _notebook(item.nodeid), _timeout()
    if path in _cold_cache_notebooks():
        if path not in _cold_cache:
            import tempfile
            _cold_cache[path] = tempfile.mkdtemp(prefix="lmcourse-cold-cache-")
            _cold_cache["saved"] = os.environ.get("LMCOURSE_CACHE", "")
        os.environ["LMCOURSE_CACHE"] = _cold_cache[path]
    elif "saved" in _cold_cache:  # every other notebook: the cache it was given
        if _cold_cache["saved"]:
            os.environ["LMCOURSE_CACHE"] = _cold_cache["saved"]
        else:
            os.environ.pop("LMCOURSE_CACHE", None)
    if path and limit and _seconds[path] > limit:
        pytest.fail(f"{path} has already run {_seconds[path]:.0f} s, over its "
                    f"{limit:g} s timeout (LMCOURSE_NOTEBOOK_TIMEOUT_S); its remaining "
                    "cells are not run. A cell is looping or waiting: look at the last "
                    "cell that ran.", pytrace=False)


def pytest_runtest_logreport(report):
    path = _notebook(report.nodeid)
    if path:
        _seconds[path] += report.duration
        if report.failed:
            _failed.add(path)


def pytest_sessionfinish(session, exitstatus):
    import shutil
    for path, folder in _cold_cache.items():
        if path != "saved":
            shutil.rmtree(folder, ignore_errors=True)


def _speed() -> tuple[float | None, float | None]:
    """(this machine's calibration, the reference machine's), or Nones when switched off."""
    if os.environ.get("LMCOURSE_CALIBRATE", "1") == "0":
        return None, None
    from lmcourse.course.speed import calibrate, reference_calibration
    return calibrate(), reference_calibration()


def pytest_terminal_summary(terminalreporter):
    if not _seconds:
        return
    from lmcourse.course.speed import normalised

    tr, budget = terminalreporter, _budget()
    calibration, reference = _speed()
    scale = (lambda s: normalised(s, calibration, reference)) if calibration else (lambda s: s)
    tr.write_sep("=", "notebook execution times (a benchmark: budget "
                 f"{budget:.0f} s each, reported, not failed)" if budget
                 else "notebook execution times")
    if calibration and reference:
        tr.write_line(f"calibration: {calibration:.3f} s here, {reference:.3f} s on the machine "
                      f"of benchmarks/RESULTS.md: this machine is {calibration / reference:.2f}x "
                      "as slow; 'normalised' is the time there")
    elif calibration:
        tr.write_line(f"calibration: {calibration:.3f} s here; benchmarks/results.json records "
                      "no reference calibration yet (make bench), so 'normalised' = wall")
    width = max(len(p) for p in _seconds)
    tr.write_line(f"{'notebook':<{width}}  {'wall':>9}  {'normalised':>10}  status")
    for path in sorted(_seconds):
        status = "FAILED" if path in _failed else "ok"
        if budget and scale(_seconds[path]) > budget and path not in _failed:
            status = f"ok, over the {budget:.0f} s budget (reported, not failed)"
        tr.write_line(f"{path:<{width}}  {_seconds[path]:7.1f} s  {scale(_seconds[path]):8.1f} s"
                      f"  {status}")
    times = [scale(s) for s in _seconds.values()]
    tr.write_line(f"{'total':<{width}}  {sum(_seconds.values()):7.1f} s  {sum(times):8.1f} s")
    median, slowest = statistics.median(times), max(times)
    tr.write_line(f"normalised median {median:.1f} s (aim <= {AIM_MEDIAN_S:.0f} s: "
                  f"{'met' if median <= AIM_MEDIAN_S else 'NOT met'}), slowest {slowest:.1f} s "
                  f"(aim <= {AIM_SLOWEST_S:.0f} s: "
                  f"{'met' if slowest <= AIM_SLOWEST_S else 'NOT met'})")

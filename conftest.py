"""Course-wide pytest hooks: a per-notebook timing table, the CPU budget and a hard timeout.

Every notebook must execute in at most ``LMCOURSE_NOTEBOOK_BUDGET_S`` seconds
(120 by default; 0 turns the budget off) on a laptop CPU. The sum of a
notebook's cell times (kernel start included) is printed after the run, and a
notebook over budget fails the session with its name and time.

A notebook that runs away is stopped: once it has spent
``LMCOURSE_NOTEBOOK_TIMEOUT_S`` seconds (twice the budget by default; 0 turns it off),
its remaining cells fail at once instead of running. A single hanging cell is stopped
by nbval's ``--nbval-cell-timeout``.
"""

from __future__ import annotations

import os
from collections import defaultdict

import pytest

_seconds: dict[str, float] = defaultdict(float)
_failed: set[str] = set()


def _budget() -> float:
    return float(os.environ.get("LMCOURSE_NOTEBOOK_BUDGET_S", "120"))


def _timeout() -> float:
    return float(os.environ.get("LMCOURSE_NOTEBOOK_TIMEOUT_S", 2 * _budget()))


def _notebook(nodeid: str) -> str | None:
    path = nodeid.split("::", 1)[0]
    return path if path.endswith(".ipynb") else None


def pytest_runtest_setup(item):
    """Fail the remaining cells of a notebook that has used up its hard timeout."""
    path, limit = _notebook(item.nodeid), _timeout()
    if path and limit and _seconds[path] > limit:
        pytest.fail(f"{path} has already run {_seconds[path]:.0f} s, over its "
                    f"{limit:g} s timeout (LMCOURSE_NOTEBOOK_TIMEOUT_S); its remaining "
                    "cells are not run. Shrink its lmcourse.budget(cpu=...) sizes.",
                    pytrace=False)


def pytest_runtest_logreport(report):
    path = _notebook(report.nodeid)
    if path:
        _seconds[path] += report.duration
        if report.failed:
            _failed.add(path)


def _over_budget() -> dict[str, float]:
    budget = _budget()
    return {p: s for p, s in _seconds.items() if budget and s > budget}


def pytest_sessionfinish(session, exitstatus):
    if _over_budget() and session.exitstatus == 0:
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter):
    if not _seconds:
        return
    tr, budget = terminalreporter, _budget()
    tr.write_sep("=", "notebook execution times (CPU budget: "
                 f"{budget:.0f} s each)" if budget else "notebook execution times")
    width = max(len(p) for p in _seconds)
    for path in sorted(_seconds):
        status = "FAILED" if path in _failed else "ok"
        if path in _over_budget():
            status = "OVER BUDGET"
        tr.write_line(f"{path:<{width}}  {_seconds[path]:7.1f} s  {status}")
    tr.write_line(f"{'total':<{width}}  {sum(_seconds.values()):7.1f} s")
    for path, seconds in _over_budget().items():
        tr.write_line(f"ERROR: {path} took {seconds:.1f} s, over the {budget:.0f} s budget; "
                      "shrink its lmcourse.budget(cpu=...) sizes", red=True)

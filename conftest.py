"""Course-wide pytest hooks: a per-notebook timing table and a hard timeout.

A notebook's wall time is a **benchmark, not a test**: machines of one kind differ in
speed by 1.5x, so a notebook over its CPU budget (``LMCOURSE_NOTEBOOK_BUDGET_S``, 120 s
by default) is reported in the summary, never failed. The summary prints each notebook's
time, the same time normalised to the reference machine of ``benchmarks/calibration.json``
(by a short calibration of this machine's speed, :mod:`lmcourse.course.speed`), the median
and slowest against the course's aims (median <= 60 s, none over 90 s), and the whole
``make test`` so far (``LMCOURSE_MAKE_TEST_START``, set by the Makefile) against its aim of
20 minutes, normalised the same way.

Each notebook that passes also gets a **run card** (:mod:`lmcourse.course.runcard`): its
time, its kernel's peak memory and the data and model files it read, written to
``_build/runcards.json`` at the end of the session (``python -m tools.runcards`` puts them
into the notebooks).

What does fail is a notebook that runs away: once it has spent
``LMCOURSE_NOTEBOOK_TIMEOUT_S`` seconds (2.5 times the budget by default; 0 turns it
off), its remaining cells fail at once instead of running. A single hanging cell is
stopped by nbval's ``--nbval-cell-timeout``.
"""

from __future__ import annotations

import os
import statistics
from collections import defaultdict
from pathlib import Path

import pytest

_seconds: dict[str, float] = defaultdict(float)
_failed: set[str] = set()

#: the course's aims for the normalised times (reported, not enforced)
AIM_MEDIAN_S, AIM_SLOWEST_S, AIM_MAKE_TEST_S = 60.0, 90.0, 20 * 60.0


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


_reads: dict[str, str] = {}  # notebook -> the file its kernel logs its reads to
SESSION_ENV = "LMCOURSE_RUNCARD_SESSION"
_created: dict[str, str] = {}  # the folder this (outermost) session made


def _session_dir(config) -> Path:
    """This session's run-card folder (shared with the xdist workers through the
    environment; a pytest started inside a test inherits it and never clears it)."""
    return Path(os.environ[SESSION_ENV])


def pytest_configure(config):
    """The outermost controller makes a fresh run-card folder under _build/ for its session;
    xdist workers and nested pytest runs inherit it."""
    if hasattr(config, "workerinput") or os.environ.get(SESSION_ENV):
        return
    import tempfile
    parent = Path(str(config.rootpath)) / "_build" / "runcards-session"
    parent.mkdir(parents=True, exist_ok=True)
    os.environ[SESSION_ENV] = _created["dir"] = tempfile.mkdtemp(dir=parent)


def pytest_unconfigure(config):
    """The session that made the run-card folder removes it (its cards are written)."""
    if _created.get("dir"):
        import shutil
        shutil.rmtree(_created.pop("dir"), ignore_errors=True)
        os.environ.pop(SESSION_ENV, None)


def _watch_reads(item, path: str) -> None:
    """Before a notebook's kernel starts: an IPython startup file that logs what the kernel
    reads (lmcourse.course.runcard.reads_startup), and the log it writes to."""
    from lmcourse.course.runcard import READS_ENV, reads_startup
    folder = _session_dir(item.config)
    folder.mkdir(parents=True, exist_ok=True)
    startup = folder / "ipython" / "profile_default" / "startup" / "00-lmcourse-reads.py"
    if not startup.exists():
        startup.parent.mkdir(parents=True, exist_ok=True)
        startup.write_text(reads_startup())
    os.environ["IPYTHONDIR"] = str(folder / "ipython")
    _reads[path] = str(folder / (path.replace("/", "__") + ".reads"))
    os.environ[READS_ENV] = _reads[path]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item, nextitem):
    """After a notebook's last cell, before nbval stops its kernel: its peak memory and the
    data and model files it read, for its run card."""
    path = _notebook(item.nodeid)
    if path not in _reads or (nextitem is not None and _notebook(nextitem.nodeid) == path):
        return
    import json

    from lmcourse.course.cache import cache_dir
    from lmcourse.course.runcard import classify_read
    peak = 0
    try:
        pid = item.parent.kernel.km.provisioner.pid
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                peak = int(line.split()[1]) * 1024
    except (AttributeError, OSError, ValueError):
        pass  # not Linux, or the kernel is gone: the card says memory was not measured
    reads, log = {}, Path(_reads.get(path, "/nonexistent"))
    if log.exists():
        for line in log.read_text().splitlines():
            name = classify_read(line, cache_dir())
            if name and name not in reads:
                reads[name] = Path(line).stat().st_size
    from lmcourse.course.runcard import READS_ENV
    os.environ.pop(READS_ENV, None)  # kernels started by later tests log nothing
    out = _session_dir(item.config) / (path.replace("/", "__") + ".json")
    out.write_text(json.dumps({"peak_bytes": peak, "reads": sorted(reads.items())}))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Point a cold-cache notebook's kernel at an empty cache (nbval starts a notebook's
    kernel when its first cell is set up, with this process's environment), and fail the
    remaining cells of a notebook that has used up its hard timeout."""
    path, limit = _notebook(item.nodeid), _timeout()
    if path and path not in _reads and type(item).__name__ == "IPyNbCell":  # nbval's cells
        _watch_reads(item, path)
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


def _write_run_cards(config, calibration: float | None) -> None:
    """Every notebook that passed: its run card's measurements, into _build/runcards.json
    (``python -m tools.runcards`` keeps them and writes the cards into the notebooks)."""
    import datetime
    import json
    import subprocess

    import nbformat
    import torch

    from lmcourse.course.runcard import SESSION_CARDS, code_digest, load_cards, save_cards
    from lmcourse.course.speed import cpu_model
    root = Path(str(config.rootpath))
    commit = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=root,
                            capture_output=True, text=True).stdout.strip() or "unknown"
    today = datetime.date.today().isoformat()
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    cards = load_cards(SESSION_CARDS)
    for path, seconds in _seconds.items():
        measured = _session_dir(config) / (path.replace("/", "__") + ".json")
        if path in _failed or not measured.exists():
            continue
        try:
            code = code_digest(nbformat.read(root / path, as_version=4))
        except Exception:  # not a notebook nbformat can read: no card
            continue
        record = cards.get(path, {})
        timing = ({"device": gpu, "wall_s": round(seconds, 1), "date": today} if gpu else
                  {"wall_s": round(seconds, 1), "processor": cpu_model(),
                   "calibration_s": round(calibration, 4) if calibration else None})
        record.update(json.loads(measured.read_text()), date=today, commit=commit, code=code)
        record["gpu" if gpu else "cpu"] = timing
        cards[path] = record
    save_cards(cards, SESSION_CARDS)


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
        tr.write_line(f"calibration: {calibration:.3f} s here, {reference:.3f} s on the reference "
                      f"machine (benchmarks/calibration.json): this machine is "
                      f"{calibration / reference:.2f}x as slow; 'normalised' is the time there")
    elif calibration:
        tr.write_line(f"calibration: {calibration:.3f} s here; no reference calibration is "
                      "recorded (python -m tools.runcards --set-reference), so 'normalised' = wall")
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
    _write_run_cards(terminalreporter.config, calibration)
    tr.write_line(f"normalised median {median:.1f} s (aim <= {AIM_MEDIAN_S:.0f} s: "
                  f"{'met' if median <= AIM_MEDIAN_S else 'NOT met'}), slowest {slowest:.1f} s "
                  f"(aim <= {AIM_SLOWEST_S:.0f} s: "
                  f"{'met' if slowest <= AIM_SLOWEST_S else 'NOT met'})")
    start = os.environ.get("LMCOURSE_MAKE_TEST_START")
    if start:
        import time
        whole = time.time() - float(start)
        tr.write_line(f"make test so far: {whole / 60:.1f} min wall, {scale(whole) / 60:.1f} min "
                      f"normalised (aim <= {AIM_MAKE_TEST_S / 60:.0f} min: "
                      f"{'met' if scale(whole) <= AIM_MAKE_TEST_S else 'NOT met'})")
    tr.write_line("run cards: _build/runcards.json (python -m tools.runcards writes them into "
                  "the notebooks)")

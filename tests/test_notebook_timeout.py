"""The root conftest's budget and hard timeout, run on a tiny fake notebook suite."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from tools.nbtools import ROOT

# Each "cell" of the fake notebook is a test that sleeps; nodeids ending in .ipynb are
# what the hooks time. The fake file is collected by a plugin that mimics nbval's items.
PLUGIN = '''
import time
import pytest


class Cell(pytest.Item):
    def runtest(self):
        time.sleep(0.4)


class Notebook(pytest.File):
    def collect(self):
        for i in range(5):
            yield Cell.from_parent(self, name=f"Cell {i}")


def pytest_collect_file(file_path, parent):
    if file_path.suffix == ".ipynb":
        return Notebook.from_parent(parent, path=file_path)
'''


def run_suite(tmp_path, budget: str, timeout: str) -> subprocess.CompletedProcess:
    shutil.copy(ROOT / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "fake_nb_plugin.py").write_text(PLUGIN)
    (tmp_path / "slow.ipynb").write_text("{}")
    env = {"LMCOURSE_NOTEBOOK_BUDGET_S": budget, "LMCOURSE_NOTEBOOK_TIMEOUT_S": timeout,
           "PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "fake_nb_plugin", "-p", "no:cacheprovider",
         "-p", "no:xdist", "-p", "no:nbval", "-q", "slow.ipynb"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.slow
def test_within_budget_passes_and_prints_the_timing_table(tmp_path):
    result = run_suite(tmp_path, budget="60", timeout="120")
    assert result.returncode == 0, result.stdout
    assert "notebook execution times" in result.stdout
    assert "slow.ipynb" in result.stdout and "ok" in result.stdout


@pytest.mark.slow
def test_over_budget_fails_the_run_but_runs_every_cell(tmp_path):
    result = run_suite(tmp_path, budget="1", timeout="0")
    assert result.returncode == 1, result.stdout
    assert "5 passed" in result.stdout
    assert "OVER BUDGET" in result.stdout and "over the 1 s budget" in result.stdout


@pytest.mark.slow
def test_hard_timeout_stops_the_remaining_cells(tmp_path):
    result = run_suite(tmp_path, budget="0.5", timeout="0.7")
    assert result.returncode == 1, result.stdout
    # two cells run (0.8 s > 0.7 s); the other three fail in setup, without running
    assert "2 passed, 3 errors" in result.stdout, result.stdout
    assert "over its 0.7 s timeout (LMCOURSE_NOTEBOOK_TIMEOUT_S)" in result.stdout

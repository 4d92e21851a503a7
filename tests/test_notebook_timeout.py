"""The root conftest's budget and hard timeout, run on a tiny fake notebook suite."""

from __future__ import annotations

import re
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


def run_suite(tmp_path, budget: str, timeout: str, calibrate: str = "0"
              ) -> subprocess.CompletedProcess:
    shutil.copy(ROOT / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "fake_nb_plugin.py").write_text(PLUGIN)
    (tmp_path / "slow.ipynb").write_text("{}")
    env = {"LMCOURSE_NOTEBOOK_BUDGET_S": budget, "LMCOURSE_NOTEBOOK_TIMEOUT_S": timeout,
           "LMCOURSE_CALIBRATE": calibrate, "LMCOURSE_CALIBRATION_REFERENCE_S": "0.2",
           "PYTHONPATH": f"{tmp_path}:{ROOT}", "PATH": "/usr/bin:/bin"}
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
def test_over_budget_is_reported_not_failed(tmp_path):
    """A slower machine must not turn the suite red: the budget is a benchmark figure."""
    result = run_suite(tmp_path, budget="1", timeout="0")
    assert result.returncode == 0, result.stdout
    assert "5 passed" in result.stdout
    assert "over the 1 s budget (reported, not failed)" in result.stdout
    assert "normalised median" in result.stdout


@pytest.mark.slow
def test_normalised_times_use_the_calibration(tmp_path):
    """With a reference calibration recorded, the table prints the speed ratio."""
    result = run_suite(tmp_path, budget="60", timeout="120", calibrate="1")
    assert result.returncode == 0, result.stdout
    assert "this machine is" in result.stdout and "as slow" in result.stdout


@pytest.mark.slow
def test_hard_timeout_stops_the_remaining_cells(tmp_path):
    result = run_suite(tmp_path, budget="0.5", timeout="0.7")
    assert result.returncode == 1, result.stdout
    # two cells run (0.8 s > 0.7 s); the other three fail in setup, without running
    assert "2 passed, 3 errors" in result.stdout, result.stdout
    assert "over its 0.7 s timeout (LMCOURSE_NOTEBOOK_TIMEOUT_S)" in result.stdout


COLD_PLUGIN = '''
import os
import pytest


class Cell(pytest.Item):
    def runtest(self):
        print(f"CACHE[{self.parent.path.name}]={os.environ.get('LMCOURSE_CACHE', '-')}")


class Notebook(pytest.File):
    def collect(self):
        for i in range(2):
            yield Cell.from_parent(self, name=f"Cell {i}")


def pytest_collect_file(file_path, parent):
    if file_path.suffix == ".ipynb":
        return Notebook.from_parent(parent, path=file_path)
'''


@pytest.mark.slow
def test_a_cold_cache_notebook_gets_an_empty_cache_and_the_others_keep_theirs(tmp_path):
    shutil.copy(ROOT / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "fake_nb_plugin.py").write_text(COLD_PLUGIN)
    for name in ("a.ipynb", "b.ipynb", "c.ipynb"):
        (tmp_path / name).write_text("{}")
    env = {"LMCOURSE_CALIBRATE": "0", "LMCOURSE_CACHE": "/warm",
           "LMCOURSE_COLD_CACHE_NOTEBOOKS": "b.ipynb",
           "PYTHONPATH": f"{tmp_path}:{ROOT}", "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "fake_nb_plugin", "-p", "no:cacheprovider",
         "-p", "no:xdist", "-p", "no:nbval", "-q", "-s", "a.ipynb", "b.ipynb", "c.ipynb"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout
    lines = re.findall(r"CACHE\[[a-z]\.ipynb\]=\S+", result.stdout)
    cold = {x.split("=", 1)[1] for x in lines if x.startswith("CACHE[b.ipynb]")}
    assert len(cold) == 1 and "lmcourse-cold-cache-" in cold.pop()
    assert all(x.endswith("=/warm") for x in lines if not x.startswith("CACHE[b.ipynb]"))
    assert len(lines) == 6

"""Shared fixtures for the unit tests.

The repository root is importable through pytest's ``pythonpath`` setting
(pyproject.toml), so tests import ``tools`` and ``benchmarks`` as ordinary packages.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib
import pytest

from tools.nbtools import ROOT

matplotlib.use("Agg")  # tests draw figures without a display


@pytest.fixture(scope="session")
def root() -> Path:
    """The repository root."""
    return ROOT

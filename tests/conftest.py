"""Shared fixtures for the unit tests."""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # tests draw figures without a display

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))  # nbtools: notebook build / student-copy tooling

"""One spread over seeds, named wherever it is shown (issue 56, item 8).

The course reports a figure over seeds as ``mean ± half range`` (:data:`lmcourse.metrics.SPREAD`,
:func:`lmcourse.metrics.mean_spread`). A reader cannot tell a half range from a standard
deviation by looking, so every cell of a committed notebook whose outputs show ``±`` between
two numbers names its statistic in them: the half range, or, for a check's interval,
the standard deviations it spans."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted([*ROOT.glob("chapters/*.ipynb"), *ROOT.glob("labs/solutions/*.ipynb")])
PLUS_MINUS = re.compile(r"\d\s*(?:±|\+-)\s*\d")
NAMED = re.compile(r"half[ -]?(?:the )?range|\bs\.d\.|standard deviation", re.IGNORECASE)


def _texts(output: dict) -> list[str]:
    if "text" in output:
        return ["".join(output["text"])]
    data = output.get("data", {})
    return ["".join(data[kind]) for kind in ("text/plain", "text/html", "text/markdown")
            if kind in data]


def unnamed_spreads(notebook: dict) -> list[str]:
    """The lines of outputs that show ``±`` without naming what it is."""
    found = []
    for cell in notebook["cells"]:  # a table and its note may print as separate outputs
        text = "\n".join(t for output in cell.get("outputs", []) for t in _texts(output))
        if PLUS_MINUS.search(text) and not NAMED.search(text):
            found += [line.strip()[:120] for line in text.splitlines() if PLUS_MINUS.search(line)]
    return found


def test_the_scan_finds_an_unnamed_spread_and_accepts_a_named_one():
    def notebook(text):
        return {"cells": [{"cell_type": "code", "outputs": [
            {"output_type": "stream", "name": "stdout", "text": text}]}]}

    assert unnamed_spreads(notebook("LSTM  3.650 ± 0.026\n")) == ["LSTM  3.650 ± 0.026"]
    assert unnamed_spreads(notebook("(3 seeds: mean ± half range)\nLSTM  3.650 ± 0.026\n")) == []
    assert unnamed_spreads(notebook("0.9 to 1.0 (mean 0.95 ± 3 s.d. over 6 repeats)")) == []
    assert unnamed_spreads(notebook("scale ±1 positions, no figures")) == []


def test_the_course_has_one_spread_and_mean_spread_is_it():
    from lmcourse.metrics import SPREAD, mean_spread

    assert SPREAD == "mean ± half range"
    assert mean_spread([1.0, 2.0, 4.0], 2) == "2.33 ± 1.50"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_spread_a_notebook_shows_is_named(path):
    found = unnamed_spreads(json.loads(path.read_text()))
    assert not found, (f"{path.name} shows ± without saying what it is (print the course's "
                       f"one spread, lmcourse.metrics.SPREAD, beside it):\n  "
                       + "\n  ".join(found[:8]))

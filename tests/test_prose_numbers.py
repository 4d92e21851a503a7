"""Every number a run produced that a chapter's prose quotes is printed by a cell of that
chapter (tools.prose_numbers; code, maths, cited figures and version numbers aside). The
numbers quoted inside folded worked answers are not yet held to this (``--answers`` lists
them)."""

from __future__ import annotations

import json

from tools.nbtools import ROOT
from tools.prose_numbers import unprinted


def _notebook(tmp_path, markdown: str, output: str):
    nb = {"cells": [
        {"cell_type": "markdown", "source": markdown, "metadata": {}},
        {"cell_type": "code", "source": "print(x)", "metadata": {}, "outputs": [
            {"output_type": "stream", "name": "stdout", "text": output}]}]}
    path = tmp_path / "c.ipynb"
    path.write_text(json.dumps(nb))
    return path


def test_a_typed_number_no_cell_prints_is_found(tmp_path):
    path = _notebook(tmp_path, "The loss fell to 2.31, then to 1.05.", "loss 2.31\n")
    assert unprinted(path) == [("1.05", "The loss fell to 2.31, then to 1.05.")]


def test_code_maths_and_cited_figures_are_not_run_numbers(tmp_path):
    markdown = ("Run `f(0.75)` first.\n$\\log 4/3 = 0.288$ by hand.\n"
                "Vaswani et al. report 27.3 BLEU.\n```python\nx = 9.5\n```\n")
    assert unprinted(_notebook(tmp_path, markdown, "")) == []


def test_every_run_number_in_chapter_prose_is_printed_by_a_cell():
    left = [f"{path.name}: {number}  | {sentence[:90]}"
            for path in sorted((ROOT / "chapters").glob("*.ipynb"))
            for number, sentence in unprinted(path)]
    assert not left, ("numbers in prose that no cell prints; print them from the run (or "
                      "cite their source in the sentence):\n" + "\n".join(left))

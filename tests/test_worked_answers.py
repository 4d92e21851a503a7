"""Every chapter's exercises come with at least one worked answer a student can reveal
(``<details><summary>Worked answer to exercise N</summary>``), and the code in each one
runs as it is written: its asserts compute the answer and check it against the course's
code or PyTorch, so a changed function or a wrong number fails here."""

from __future__ import annotations

import contextlib
import io
import re

import nbformat
import pytest

from tools.nbtools import ROOT

CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
DETAILS = re.compile(r"<details><summary>Worked answer to exercise (\d+)</summary>(.*?)</details>",
                     re.S)
CODE = re.compile(r"```python\n(.*?)```", re.S)


def worked_answers(path) -> list[tuple[str, str]]:
    """``(exercise number, python code)`` of each worked answer in a chapter."""
    nb = nbformat.read(path, as_version=4)
    found = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for number, body in DETAILS.findall(cell.source):
                found += [(number, code) for code in CODE.findall(body)]
    return found


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_every_chapter_has_a_worked_answer(path):
    assert worked_answers(path), (
        f"{path.name}: give at least one exercise a worked answer in a "
        "<details><summary>Worked answer to exercise N</summary> block")


ANSWERS = [(p.stem, number, code) for p in CHAPTERS for number, code in worked_answers(p)]


@pytest.mark.parametrize("chapter, number, code", ANSWERS,
                         ids=[f"{c}-ex{n}" for c, n, _ in ANSWERS])
def test_worked_answer_code_runs_and_its_checks_hold(chapter, number, code):
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(code, f"{chapter} worked answer {number}", "exec"), {})

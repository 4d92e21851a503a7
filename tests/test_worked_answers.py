"""Every chapter's exercises come with at least one worked answer a student can reveal
(``<details><summary>Worked answer to exercise N</summary>``), and the code in each one
runs as it is written: its asserts compute the answer and check it against the course's
code or PyTorch, so a changed function or a wrong number fails here. Every figure the
answer's prose quotes (``tools.prose_numbers.quoted_numbers``) must be one that the
answer's code prints (its stdout is kept), that the code sets, or that a cell of the
chapter prints: a quoted number that drifts from its run fails."""

from __future__ import annotations

import contextlib
import io
import re

import nbformat
import pytest

from tools.nbtools import ROOT
from tools.prose_numbers import printed_text, quoted_numbers

CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
DETAILS = re.compile(r"<details><summary>Worked answer to exercise (\d+)</summary>(.*?)</details>",
                     re.S)
CODE = re.compile(r"```python\n(.*?)```", re.S)


def worked_answer_blocks(path) -> list[tuple[str, str]]:
    """``(exercise number, markdown body)`` of each worked answer in a chapter."""
    nb = nbformat.read(path, as_version=4)
    return [found for cell in nb.cells if cell.cell_type == "markdown"
            for found in DETAILS.findall(cell.source)]


def worked_answers(path) -> list[tuple[str, str]]:
    """``(exercise number, python code)`` of each worked answer in a chapter."""
    return [(number, code) for number, body in worked_answer_blocks(path)
            for code in CODE.findall(body)]


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_every_chapter_has_a_worked_answer(path):
    assert worked_answers(path), (
        f"{path.name}: give at least one exercise a worked answer in a "
        "<details><summary>Worked answer to exercise N</summary> block")


ANSWERS = [(p, number, body) for p in CHAPTERS for number, body in worked_answer_blocks(p)
           if CODE.search(body)]


def run_answer(chapter: str, number: str, body: str) -> str:
    """Run every code block of one worked answer in a fresh namespace; its stdout."""
    stdout, namespace = io.StringIO(), {}
    with contextlib.redirect_stdout(stdout):
        for code in CODE.findall(body):
            exec(compile(code, f"{chapter} worked answer {number}", "exec"), namespace)
    return stdout.getvalue()


@pytest.mark.parametrize("path, number, body", ANSWERS,
                         ids=[f"{p.stem}-ex{n}" for p, n, _ in ANSWERS])
def test_worked_answer_runs_and_the_numbers_it_quotes_are_printed(path, number, body):
    printed = run_answer(path.stem, number, body)
    seen = printed + "\n".join(CODE.findall(body)) + printed_text(
        nbformat.read(path, as_version=4))
    missing = [(n, sentence) for n, sentence in quoted_numbers(body) if n not in seen]
    assert not missing, (
        f"{path.name}, worked answer to exercise {number} quotes numbers its code does not "
        "print (print them, or quote what it prints):\n" + "\n".join(
            f"  {n}  in: {sentence[:120]}" for n, sentence in missing))

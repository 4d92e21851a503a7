"""Every chapter's exercises come with at least one worked answer a student can reveal
(``<details><summary>Worked answer to exercise N</summary>``), and the code in each one
runs as it is written: its asserts compute the answer and check it against the course's
code or PyTorch, so a changed function or a wrong number fails here. Every figure the
answer's prose quotes (``tools.prose_numbers.quoted_numbers``) must be one that the
answer's code prints (its stdout is kept), that the code sets, or that a cell of the
chapter prints: a quoted number that drifts from its run fails.

The answers train small models live, and their last digits depend on the machine: the same
answer printed 0.0249 on an Intel Xeon, 0.0248 on an AMD EPYC with one thread and 0.0247
with two. So a figure the answer's own code prints matches within ``PRINTED_TOLERANCE``
(relative); every other figure must appear exactly. A quoted number further than that from
everything printed still fails."""

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
DECIMAL = re.compile(r"\d+\.\d+")
PRINTED_TOLERANCE = 0.03  # the widest CPU-to-CPU spread measured on a quoted figure: 2.7%


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


def printed_within_tolerance(number: str, printed: str,
                             tolerance: float = PRINTED_TOLERANCE) -> bool:
    """Whether some decimal in ``printed`` lies within ``tolerance`` (relative) of ``number``:
    |p - q| <= tolerance * |q|."""
    quoted = float(number)
    return any(abs(float(p) - quoted) <= tolerance * abs(quoted)
               for p in DECIMAL.findall(printed))


def test_printed_tolerance_accepts_machine_noise_and_rejects_a_stale_figure():
    assert printed_within_tolerance("0.0249", "importance removed 0.0247")
    assert not printed_within_tolerance("0.1532", "test MSE at T = 10 0.1751")
    assert not printed_within_tolerance("0.5", "no decimals here: 1, 2")


@pytest.mark.parametrize("path, number, body", ANSWERS,
                         ids=[f"{p.stem}-ex{n}" for p, n, _ in ANSWERS])
def test_worked_answer_runs_and_the_numbers_it_quotes_are_printed(path, number, body):
    printed = run_answer(path.stem, number, body)
    seen = printed + "\n".join(CODE.findall(body)) + printed_text(
        nbformat.read(path, as_version=4))
    missing = [(n, sentence) for n, sentence in quoted_numbers(body)
               if n not in seen and not printed_within_tolerance(n, printed)]
    assert not missing, (
        f"{path.name}, worked answer to exercise {number} quotes numbers its code does not "
        "print (print them, or quote what it prints):\n" + "\n".join(
            f"  {n}  in: {sentence[:120]}" for n, sentence in missing))

"""Hints that teach: a lab says at the top what the student will get and how long it takes;
every exercise has two folded hints (the idea, then the shape of the answer); and neither a
hint, nor an exercise's text, nor a check's failure message gives away the solution's code.

"Gives away" is measured, not judged: each expression of a solution block (a call with
arguments, arithmetic, a slice, a comparison, an assignment or a return) that is at least
14 characters long without spaces must appear neither in the lab's markdown nor in any
string of its check module, unless the lab's own given code already shows it.
"""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import jupytext
import pytest

from tools.nbtools import ROOT

LABS = sorted((ROOT / "labs" / "solutions").glob("[0-9]*.py"))
SOLUTION = re.compile(r"[ \t]*# (?:BEGIN|END) SOLUTION\n?")
MIN_CHARS = 14


def _squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _expressions(block: str) -> set[str]:
    """The telling expressions of one solution block, without spaces."""
    try:
        tree = ast.parse(textwrap.dedent(block))
    except SyntaxError:  # a fragment (e.g. the arguments of a call): judge it by lines
        return {_squeeze(line) for line in block.splitlines()
                if len(_squeeze(line)) >= MIN_CHARS and not line.strip().startswith("#")}
    found = set()
    for node in ast.walk(tree):
        telling = (isinstance(node, ast.Call) and (node.args or node.keywords)) or isinstance(
            node, ast.BinOp | ast.AugAssign | ast.Assign | ast.Subscript | ast.Compare
            | ast.Return)
        if telling and len(text := _squeeze(ast.unparse(node))) >= MIN_CHARS:
            found.add(text)
    return found


def _check_modules(module: str, seen: set[str] | None = None) -> set[str]:
    """``module`` and every check module it imports, however deep (``beats``, ...)."""
    seen = set() if seen is None else seen
    path = ROOT / "lmcourse" / "checks" / f"{module}.py"
    if module in seen or not path.exists():
        return seen
    seen.add(module)
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module == "lmcourse.checks":
            for alias in node.names:
                _check_modules(alias.name, seen)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "lmcourse.checks."):
            _check_modules(node.module.rsplit(".", 1)[1], seen)
    return seen


def _check_strings(module: str) -> str:
    tree = ast.parse((ROOT / "lmcourse" / "checks" / f"{module}.py").read_text())
    return "\n".join(node.value for node in ast.walk(tree)
                     if isinstance(node, ast.Constant) and isinstance(node.value, str))


def given_away(lab: Path) -> list[str]:
    """Each solution expression of ``lab`` that its markdown or its check's messages show."""
    nb = jupytext.read(lab)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    blocks, given = [], []
    for source in code:
        parts = SOLUTION.split(source)
        given += parts[0::2]
        blocks += parts[1::2]
    shown = {"the lab's text": "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")}
    for imported in re.findall(r"from lmcourse\.checks import (\w+) as \w+", "\n".join(code)):
        for module in sorted(_check_modules(imported)):
            shown[f"lmcourse/checks/{module}.py"] = _check_strings(module)
    shown = {where: _squeeze(text) for where, text in shown.items()}
    given_code = _squeeze("\n".join(given))
    return [f"{expression}  (in {where})"
            for expression in sorted(set().union(*map(_expressions, blocks)))
            if expression not in given_code
            for where, text in shown.items() if expression in text]


@pytest.mark.parametrize("lab", LABS, ids=[p.stem for p in LABS])
def test_no_hint_or_failure_message_gives_the_solution_away(lab):
    leaks = given_away(lab)
    assert not leaks, (f"{lab.name}: these pieces of the solution are printed for the "
                       "student; say the idea or the shape instead:\n" + "\n".join(leaks))


@pytest.mark.parametrize("lab", LABS, ids=[p.stem for p in LABS])
def test_a_lab_says_what_to_expect_and_how_long_at_the_top(lab):
    first = next(c.source for c in jupytext.read(lab).cells if c.cell_type == "markdown")
    assert "**What to expect.**" in first, f"{lab.name}: no 'What to expect' in the intro"
    expect = first.split("**What to expect.**")[1].split("\n\n")[0]
    # roughly, in words ("in seconds", "a minute or two"): the measured figure is the run
    # card's (tests/test_notebooks.py refuses a typed one there)
    assert re.search(r"\b(?:seconds|(?:a|a few|one or two|two)\s+minutes?|a minute)\b",
                     expect), (
        f"{lab.name}: 'What to expect' should say how long the lab takes on a CPU")


@pytest.mark.parametrize("lab", LABS, ids=[p.stem for p in LABS])
def test_every_exercise_has_two_folded_hints(lab):
    cells = [c.source for c in jupytext.read(lab).cells if c.cell_type == "markdown"]
    exercises = [c for c in cells if re.match(r"#+ Exercise \d", c)]
    assert exercises, f"{lab.name}: no '## Exercise N' headings"
    for text in exercises:
        title = text.splitlines()[0]
        assert "<summary>Hint 1</summary>" in text and "<summary>Hint 2</summary>" in text, (
            f"{lab.name}, {title}: needs two folded hints (<details><summary>Hint 1</summary> "
            "..., then Hint 2)")


def test_the_leak_finder_finds_a_leak(tmp_path):
    """given_away() fails on a lab whose text repeats a line of its solution."""
    lab = tmp_path / "01_x.py"
    lab.write_text('# %% [markdown]\n# Use `p.data -= lr * p.grad` here.\n\n# %%\n'
                   'def step(p, lr):\n    # BEGIN SOLUTION\n    p.data -= lr * p.grad\n'
                   '    # END SOLUTION\n')
    assert given_away(lab) == ["p.data-=lr*p.grad  (in the lab's text)"]

"""A failed lab check reads as one short message with its hint: in Jupyter, two lines (no
traceback through the check or through PyTorch), and the student's unfinished function or
crashing line named."""

from __future__ import annotations

import functools
import re
import traceback

import nbformat
import pytest
import torch

from lmcourse import checks
from lmcourse.checks import CheckFailed
from tools import nbtools
from tools.nbtools import ROOT

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def unfinished(x):
    # YOUR CODE HERE
    raise NotImplementedError("replace this line with your code")


def crashing(x):
    return x / 0


class Head(torch.nn.Module):
    def forward(self, x):
        raise NotImplementedError


def _plain(lines: list[str]) -> str:
    return ANSI.sub("", "\n".join(lines))


def test_render_traceback_is_the_check_and_its_hint():
    err = CheckFailed("configure", "use torch.optim.AdamW, not Adam")
    assert str(err) == "❌ configure: use torch.optim.AdamW, not Adam"
    shown = _plain(err._render_traceback_())
    assert shown == "✗ check failed: configure\nuse torch.optim.AdamW, not Adam"
    assert "Traceback" not in shown
    assert _plain(CheckFailed("just a message")._render_traceback_()) == (
        "✗ check failed: just a message")


def test_fail_raises_check_failed_with_its_parts():
    with pytest.raises(CheckFailed, match="x: hint") as info:
        checks.fail("x", "hint")
    assert (info.value.check, info.value.hint) == ("x", "hint")


def test_a_missing_implementation_names_the_function_deep_in_a_loop():
    """The stub raises inside library code (here functools.reduce, as finetune.fit calls a
    student's train_step): the hint names the student's function, and nothing is chained."""
    def loop():
        return functools.reduce(lambda acc, x: acc + unfinished(x), [1, 2, 3], 0)

    with pytest.raises(CheckFailed) as info:
        checks.attempt("training", loop)
    err = info.value
    assert "not implemented yet: fill in `unfinished`" in err.hint
    assert err.__cause__ is None and err.__suppress_context__
    text = "".join(traceback.format_exception(err))
    assert "During handling" not in text and "NotImplementedError(" not in text
    assert len(err._render_traceback_()) == 2


def test_a_method_is_named_with_its_class():
    with pytest.raises(CheckFailed, match=r"fill in `Head\.forward`"):
        checks.attempt("Head.forward", Head(), torch.zeros(2))


def test_a_crash_names_the_students_line():
    with pytest.raises(CheckFailed) as info:
        checks.attempt("divide", crashing, 1)
    hint = info.value.hint
    assert hint.startswith("your code raised ZeroDivisionError: division by zero")
    assert "in `crashing`" in hint and "`return x / 0`" in hint


def test_run_student_keeps_its_specific_hints_and_does_not_chain():
    def bad_view(x):
        return x.t().view(-1)

    with pytest.raises(CheckFailed, match="not contiguous") as info:
        checks.run_student("view", bad_view, torch.zeros(2, 3))
    assert info.value.__suppress_context__
    with pytest.raises(CheckFailed, match="not implemented yet: fill in `unfinished`"):
        checks.run_student("stub", unfinished, torch.zeros(2))


def test_every_check_failure_suppresses_its_context():
    """Checks that call fail() inside their own `except` blocks don't print the chain."""
    try:
        try:
            raise ValueError("inner")
        except ValueError:
            checks.fail("outer", "a hint")
    except CheckFailed as err:
        assert isinstance(err.__context__, ValueError)  # kept for whoever debugs a check
        assert "inner" not in "".join(traceback.format_exception(err))


def _first_check(fn):
    checks.expect(fn(2) == 4, "doubling", "double the number")
    print("✅ doubling: passed")


def _second_check(fn, first):
    checks.requires("adding", 1, _first_check, first)
    checks.expect(fn(2) == 3, "adding", "add one")


def test_requires_sends_the_student_back_to_the_earliest_failing_exercise(capsys):
    with pytest.raises(CheckFailed) as info:
        _second_check(lambda x: x + 1, lambda x: x * 3)
    err = info.value
    assert (err.check, err.exercise) == ("adding", 1)
    assert err.hint.startswith("pass exercise 1 first") and "double the number" in err.hint
    with pytest.raises(CheckFailed) as info:  # a check that requires that one: still exercise 1
        checks.requires("third", 2, _second_check, lambda x: x + 1, lambda x: x * 3)
    assert info.value.check == "third" and info.value.hint == err.hint
    with pytest.raises(CheckFailed, match="pass exercise 1 first.*ZeroDivisionError"):
        checks.requires("adding", 1, _first_check, crashing)
    assert capsys.readouterr().out == ""


def test_requires_is_quiet_and_leaves_the_random_state_alone(capsys):
    def noisy(_):
        torch.rand(5)
        print("✅ passed")

    torch.manual_seed(3)
    want = torch.rand(2)
    torch.manual_seed(3)
    checks.requires("later", 1, noisy, None)
    assert torch.equal(torch.rand(2), want)
    assert capsys.readouterr().out == ""


def test_earlier_finds_what_the_students_code_calls_not_a_librarys():
    from lmcourse import metrics

    def roc_auc(y, s):
        return crashing(y)

    assert checks.earlier(roc_auc, "crashing") is crashing
    assert checks.earlier(Head, "unfinished") is unfinished  # a class: through its methods
    assert checks.earlier(Head(), "unfinished") is unfinished
    assert checks.earlier(roc_auc, "no_such_name") is None
    assert checks.earlier(metrics.roc_auc, "roc_curve") is None  # the course's, not a lab's


@pytest.mark.slow
def test_finetune_lab_student_copy_fails_its_first_check_in_two_lines():
    """Lab 06's student copy, generated from its solution and executed by nbclient up to its
    first check: the check cell's error output is the message and hint, not a traceback."""
    from nbclient import NotebookClient

    solution = ROOT / "labs" / "solutions" / "06_finetune.ipynb"
    student = nbformat.reads(nbtools.student_text(solution), as_version=4)
    first = next(i for i, c in enumerate(student.cells)
                 if "check" in c.metadata.get("tags", []))
    student.cells = student.cells[:first + 1]
    NotebookClient(student, timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(ROOT / "labs")}}).execute()
    errors = [o for o in student.cells[first].outputs if o.output_type == "error"]
    assert [e.ename for e in errors] == ["CheckFailed"]
    shown = _plain(errors[0].traceback)
    assert len(shown.splitlines()) <= 5, shown
    assert shown.startswith("✗ check failed: ReviewClassifier.forward"), shown
    assert "not implemented yet: fill in `ReviewClassifier.forward`" in shown

"""The autograder's side of a lab check (``make grader``): grade with the grader's own checks.

A submitted notebook runs from top to bottom in a kernel, then otter runs the lab's tests in
that same kernel. Whatever the notebook did to the names it used is still there: a scratch
``check = torch.ones(3)``, or ``setattr(check, name, lambda *a, **k: None)`` in a last cell.
So a test does not use the notebook's ``check`` at all:

- it imports a fresh copy of the course (``lmcourse``, the checks among it), after making
  sure the files on disk are the ones ``make grader`` recorded (:func:`course_digest`), and
  puts the notebook's modules back as they were (the student's code keeps what it imported);
- from the notebook it reads only what the check cell names: the student's functions and
  classes, and the lab's data (:func:`grade`); ``check`` is always the grader's;
- before it runs the check, :func:`lmcourse.checks.own_work.require_own_work` makes sure the
  graded code is the student's, judged on what it really uses.

:class:`GradingPlugin` is the otter plugin the lab's zips name: one torch thread for the whole
grading (Gradescope's machines are small and torch's threads wait on each other), the lab's
closing run trained once (by the grader, not also by the notebook), and feedback that shows
the check's own words: its measured figure when it passes, its hint when it fails, and not
otter's harness line.

The rule stops the easy routes, not a determined attacker: code the student's functions run
while a check calls them can still reach anything in the process.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from lmcourse.checks import CheckFailed, problem
from lmcourse.checks.own_work import require_own_work

#: what the grading sets before the submission's kernel starts (it inherits them)
GRADING_ENVIRONMENT = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                       "TOKENIZERS_PARALLELISM": "false", "TQDM_DISABLE": "1",
                       "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                       "LMCOURSE_GRADING": "1"}


def course_digest(root: Path) -> str:
    """SHA-256 of the course package's Python files (their paths and bytes): what a test
    compares with the figure ``make grader`` recorded before it trusts the checks on disk."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _reads(cell: str) -> set[str]:
    """The names a check cell reads."""
    import ast

    return {n.id for n in ast.walk(ast.parse(cell))
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def grade(env: dict[str, Any], cell: str, checks: Any, graded: Iterable[str] = (),
          given: Iterable[str] = (), elsewhere: Iterable[str] = ()) -> str:
    """Run a lab's check ``cell`` with the grader's ``checks`` module as ``check``, on a copy
    of what it needs from the submitted notebook's namespace ``env``, once the functions and
    classes it grades (``graded``) are the student's own. Returns what the check printed (its
    measured figure); a failure raises :class:`CheckFailed`, whose message is the feedback."""
    require_own_work(env, graded, given, elsewhere)
    namespace = {name: env[name] for name in _reads(cell) if name in env}
    namespace.update(__name__="__main__", __builtins__=__builtins__, check=checks)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(cell, "<check cell>", "exec"), namespace)  # noqa: S102 - the lab's
    except CheckFailed:
        raise
    except Exception as err:  # noqa: BLE001 - a crash in the student's code is a failed check
        raise CheckFailed("the check could not run your code", problem(err)) from None
    return out.getvalue().strip()


# ---- the otter plugin ----------------------------------------------------------------------

_HARNESS = re.compile(r"^Error at line \d+ in test [^\n]*\n(?:  [^\n]*\n)*?(?=\w*\w:)", re.M)


def feedback(result_message: str, body: Any) -> str:
    """The student's feedback for one test case: the check's own words (what the test stored
    on its ``body``), not otter's harness line and exception type."""
    said = getattr(body, "lmcourse_feedback", None)
    if said:
        return ("✅ " if result_message.startswith("✅") else "❌ ") + said.lstrip("✅❌ ")
    return _HARNESS.sub("", result_message)


try:  # otter is the grader's; the course runs without it
    from otter.plugins import AbstractOtterPlugin
except ImportError:  # pragma: no cover - otter is in the course's pins
    AbstractOtterPlugin = object  # type: ignore[assignment,misc]


class GradingPlugin(AbstractOtterPlugin):  # type: ignore[misc,valid-type]
    """The lab zips' otter plugin (``otter_config.json``: ``"plugins": [{"lmcourse.checks.
    grading.GradingPlugin": {"closing": [...]}}]``; ``closing``: the code of the lab's closing
    check cells, which the grader runs itself, so the notebook does not train them too)."""

    def before_grading(self, config: Any) -> None:
        os.environ.update(GRADING_ENVIRONMENT)

    def before_execution(self, submission: Any) -> Any:
        os.environ.update(GRADING_ENVIRONMENT)
        closing = [_squash(c) for c in (self.plugin_config or {}).get("closing", [])]
        if not closing or isinstance(submission, str):
            return submission
        for cell in submission.cells:
            if cell.cell_type == "code" and _squash(cell.source) in closing:
                cell.source = "# the lab's closing check: the grader runs it once, as a test"
        return submission

    def after_grading(self, results: Any) -> None:
        for test_file in results.results.values():
            for result in test_file.test_case_results:
                body = result.test_case.body
                said = getattr(body, "lmcourse_feedback", None)
                if result.passed and said:
                    result.test_case.success_message = said
                elif not result.passed:
                    result.message = feedback(result.message, body)


def _squash(source: str) -> str:
    """A cell's code without its comments and spaces (a student may drop the "# q05" line)."""
    return re.sub(r"\s+", "", re.sub(r"#[^\n]*", "", source))

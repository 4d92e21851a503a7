"""The labs as an otter-grader assignment each: ``make grader`` (``python -m tools.grader``).

    python -m tools.grader [--out _build/grader] [LAB ...]   # every lab, or "08", "05" ...
    python -m tools.grader --verify [LAB ...]               # and grade every solution

For each lab in ``labs/solutions/`` it writes, under ``--out``:

- ``student/NN_name.ipynb``: the student copy (``labs/``), with a last cell on handing in;
- ``NN_name/tests/``: one otter test file per check cell of the lab, worth
  :data:`POINTS_PER_CHECK`. The test runs that cell's code on the submitted notebook's
  namespace, so a student's feedback is the lab's own check message, and first makes sure
  the graded functions and classes are the student's own
  (:func:`lmcourse.checks.own_work.require_own_work`);
- ``NN_name-autograder.zip``: the bundle Gradescope accepts, made by ``otter generate``.
  It carries the course (``lmcourse/``, ``data/``, the reference runs the lab reads) and the
  pinned requirements, and installs them in Gradescope's image;
- ``points.md`` (and ``points.json``): the points of every check.

Nothing is downloaded: ``otter generate`` only zips. Grading on this machine uses the
installed course: ``otter run -a NN_name-autograder.zip submission.ipynb``.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import json
import os
import re
import shutil
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat

from lmcourse.checks.grading import course_digest
from lmcourse.course.reference.result import result_path
from tools.nbtools import ROOT, student_copy

SOLUTIONS = ROOT / "labs" / "solutions"
OUT = ROOT / "_build" / "grader"
POINTS_PER_CHECK = 1
#: checks worth more than :data:`POINTS_PER_CHECK`: lab 01's local derivatives and backward
#: are the two exercises the rest of its engine stands on, and each is a whole exercise's
#: work (its integration checks, which a wrong derivative also fails, keep one point each)
POINTS = {"01_autograd": {"q01_autograd_ops": 2, "q03_autograd_backward": 2}}
CHECK_TAG = "check"
_EXERCISE = re.compile(r"^#+\s*Exercise\s+(\d+)", re.M)
_REFERENCE = re.compile(r"""\bload\(\s*["']([\w.-]+)["']\s*\)""")
_SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints")

HANDING_IN = """## Handing in

Save this notebook and upload it, as it is (`.ipynb`), where your course collects the lab
(Gradescope, or your hub's assignment). The grader runs your notebook from top to bottom in a
fresh kernel, on a CPU with one thread (a correct notebook takes one to two minutes at most).
A cell that raises an error does not stop it: only the checks that need what that cell
defines fail. In a lab with a closing run, the grader skips your copy of its cell and runs it
itself. Then it runs every check cell with its own copy of the checks, for the points in
*How this lab is graded* at the top. Your feedback for each question is the check's own
message: what it measured when it passes, what looks wrong and where to look when it fails.
Before you upload, *Restart Kernel and Run All Cells* and see every check pass, and make sure
each graded function is written here: the own-work rule is applied only by the grader."""


@dataclass(frozen=True)
class Check:
    """One check cell of a lab: what it runs and what it grades."""

    name: str             # the otter question: "q03_merge"
    exercise: int | None  # the exercise it follows (None: the lab's closing result)
    source: str           # the cell's code, run on the submission's namespace
    graded: tuple[str, ...]  # the student's functions and classes it grades
    points: int = POINTS_PER_CHECK


def _defined(source: str) -> set[str]:
    """Top-level names a cell defines or extends: functions, classes, assignments, and a
    class given methods by ``@add_to_class(Value)`` (lab 01 writes ``Value`` that way)."""
    names: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
            names |= {a.id for d in node.decorator_list if isinstance(d, ast.Call)
                      for a in d.args if isinstance(a, ast.Name)}
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def _imported(source: str) -> set[str]:
    """Names a cell imports (what the lab gives the student)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def _call_names(source: str) -> list[str]:
    """Plain names passed to a ``check.*`` call in the cell, in order."""
    names: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "check":
            args = [*node.args, *(k.value for k in node.keywords)]
            names += [a.id for a in args if isinstance(a, ast.Name) and a.id not in names]
    return names


def checks_module(nb: nbformat.NotebookNode) -> str:
    """The checks module a lab imports as ``check`` (``lmcourse.checks.attention``)."""
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if alias.asname == "check":
                        return f"{node.module}.{alias.name}"
    raise SystemExit("the lab imports no checks module as `check` "
                     "(from lmcourse.checks import NAME as check)")


def lab_checks(nb: nbformat.NotebookNode, lab: str = "") -> tuple[list[Check], list[str]]:
    """The checks of a solution notebook, and the names its given cells import."""
    written: set[str] = set()
    given: set[str] = set()
    checks: list[Check] = []
    exercise = None
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            found = _EXERCISE.findall(cell.source)
            exercise = int(found[-1]) if found else exercise
            continue
        if cell.cell_type != "code":
            continue
        if CHECK_TAG in cell.metadata.get("tags", []):
            call = re.search(r"\bcheck\.(\w+)\(", cell.source)
            closing = not cell.source.lstrip().startswith("check.")
            number = len(checks) + 1
            question = f"q{number:02d}_{call.group(1) if call else 'check'}"
            checks.append(Check(
                name=question,
                exercise=None if closing else exercise,
                source=cell.source.strip(),
                graded=tuple(n for n in _call_names(cell.source) if n in written),
                points=POINTS.get(lab, {}).get(question, POINTS_PER_CHECK)))
        elif "BEGIN SOLUTION" in cell.source:
            written |= _defined(cell.source)
        else:
            given |= _imported(cell.source)
    return checks, sorted(given)


TEST_FILE = '''"""{title}: the lab's check, run by the grader with its own copy of the checks
(lmcourse.checks.grading): nothing the notebook did to `check`, `lmcourse` or the checks
changes the grade."""

from otter.test_files import test_case

OK_FORMAT = False

name = {name!r}
points = {points!r}

CELL = {cell!r}
CHECKS = {checks!r}
GRADED = {graded!r}
GIVEN = {given!r}
ELSEWHERE = {elsewhere!r}
COURSE_SHA256 = {digest!r}


def _fresh_course():
    """The grader's own checks: the course imported afresh, from files whose digest make
    grader recorded; the notebook's own modules are put back as they were."""
    import hashlib
    import importlib
    import importlib.util
    import sys
    from pathlib import Path

    saved = {{k: sys.modules.pop(k) for k in list(sys.modules) if k.split(".")[0] == "lmcourse"}}
    try:
        root = Path(importlib.util.find_spec("lmcourse").origin).parent
        digest = hashlib.sha256()
        for path in sorted(root.rglob("*.py")):
            if "__pycache__" not in path.parts:
                digest.update(path.relative_to(root).as_posix().encode() + b"\\0")
                digest.update(path.read_bytes() + b"\\0")
        if digest.hexdigest() != COURSE_SHA256:
            raise RuntimeError("the course's files differ from the ones this autograder was "
                               "built with: ask your instructor (make grader rebuilds it)")
        return (importlib.import_module("lmcourse.checks.grading"),
                importlib.import_module(CHECKS))
    finally:
        for k in [k for k in sys.modules if k.split(".")[0] == "lmcourse"]:
            del sys.modules[k]
        sys.modules.update(saved)


@test_case(points={points!r}, hidden=False)
def {name}(env):
    try:
        grading, checks = _fresh_course()
        {name}.lmcourse_feedback = grading.grade(env, CELL, checks, GRADED, GIVEN, ELSEWHERE)
    except Exception as err:
        {name}.lmcourse_feedback = str(err)
        raise
'''


def test_file(check: Check, checks: list[Check], module: str, allowed: list[str],
              digest: str) -> str:
    """An otter exception-based test file for one check: the grader's own copy of the
    lab's checks module runs the check cell on the student's definitions
    (:func:`lmcourse.checks.grading.grade`)."""
    others = sorted({g for c in checks for g in c.graded} - set(check.graded))
    title = f"Exercise {check.exercise}" if check.exercise else "The lab's closing result"
    return TEST_FILE.format(title=title, name=check.name, points=check.points,
                            cell=check.source, checks=module, graded=list(check.graded),
                            given=allowed, elsewhere=others, digest=digest)


def _loads(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _at_definition(node: ast.AST) -> set[str]:
    """Names a def or class needs when it is defined: decorators, defaults, bases."""
    parts = [*node.decorator_list]
    if isinstance(node, ast.ClassDef):
        parts += node.bases
    else:
        parts += [*node.args.defaults, *node.args.kw_defaults]
    return set().union(*(_loads(p) for p in parts if p is not None))


def exercises_namespace(nb: nbformat.NotebookNode) -> dict:
    """The namespace the exercises' checks need, without the lab's demonstrations: every
    import, def and class of the cells up to the closing result, and the assignments the
    check cells (or those definitions) read, run in order as the grader runs a submission
    (a statement that raises does not stop the rest)."""
    statements, wanted = [], set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if "check" in cell.metadata.get("tags", []):
            if not cell.source.lstrip().startswith("check."):
                break  # the closing result: the lab's nbval run shows it
            wanted |= _loads(ast.parse(cell.source))
            continue  # the grader runs it again, as the lab's test
        statements += ast.parse(cell.source).body
    keep = [isinstance(n, ast.Import | ast.ImportFrom | ast.FunctionDef | ast.ClassDef)
            for n in statements]
    wanted |= set().union(*(_at_definition(n) for n, k in zip(statements, keep, strict=True)
                            if isinstance(n, ast.FunctionDef | ast.ClassDef)))
    changed = True
    while changed:  # the assignments the wanted names come from, and theirs
        changed = False
        for i, node in enumerate(statements):
            if not keep[i] and isinstance(node, ast.Assign) and \
                    {n.id for t in node.targets for n in ast.walk(t)
                     if isinstance(n, ast.Name)} & wanted:
                keep[i], changed = True, True
                wanted |= _loads(node.value)
    env: dict = {"__name__": "__main__"}
    for node, kept in zip(statements, keep, strict=True):
        if kept:
            with contextlib.suppress(Exception), contextlib.redirect_stdout(io.StringIO()):
                exec(compile(ast.Module([node], []), "<cell>", "exec"), env)  # noqa: S102
    return env


def chains(solution: Path) -> dict[str, list[int | str]]:
    """For each exercise check of a lab, the earlier exercises whose checks it runs first on
    the lab's own solution (:func:`lmcourse.checks.required_exercises`): what a student whose
    code is organised like the solution sees as "pass exercise N first"."""
    import importlib

    from lmcourse.checks import grading, required_exercises

    nb = nbformat.read(solution, as_version=4)
    checks, _ = lab_checks(nb, solution.stem)
    env = exercises_namespace(nb)
    module = importlib.import_module(checks_module(nb))
    found = {}
    for check in checks:
        if check.exercise is None:
            continue
        with required_exercises() as ran:
            grading.grade(env, check.source, module)  # as the zip's test runs it
        found[check.name] = sorted(ran, key=str)
    return found


def grading_markdown(lab: dict, chain: dict[str, list[int | str]]) -> str:
    """The lab's "How this lab is graded" cell: points per check, the total, the chain of
    checks that run an earlier exercise's first, and the rules of the grader."""
    checks = lab["checks"]
    total = sum(c["points"] for c in checks)
    rows = []
    for c in checks:
        ran = [re.sub(r"^(\d+)'s (\w+)$", r"\1 (`\2`)", str(n))
               for n in chain.get(c["question"], []) if n != c["exercise"]]
        after = "closing run" if c["exercise"] is None else f"exercise {c['exercise']}"
        graded = ", ".join(f"`{g}`" for g in c["grades"]) or "your trained model"
        rows.append(f"| {c['question'][:3]} · {after} | {graded} | {', '.join(ran) or '–'} "
                    f"| {c['points']} |")
    closing = [c for c in checks if c["exercise"] is None]
    rules = [
        *([f"**The closing run is a question too** ({closing[0]['points']} point"
           f"{'s' * (closing[0]['points'] > 1)}). The grader runs the lab's last check cell "
           "itself, once, with the lab's own settings for a CPU (its CPU budget, even if you "
           "trained longer on a GPU), with one thread. Your "
           "notebook's copy of that cell is skipped while grading, so editing it changes "
           "nothing; the cells after it that use its result raise an error while grading, "
           "which costs no points."]
          if closing else []),
        "**A failed exercise costs the checks that need it.** When your code calls a "
        "function from an earlier exercise, that exercise's check runs first; if it fails, "
        "this check fails too, saying \"pass exercise N first\", and passes again once the "
        "earlier exercise does. The third column lists those exercises for code that calls "
        "the earlier functions as the exercises suggest. If your code does not call an "
        "earlier function, a mistake there does not cost this check. An unfinished exercise "
        "fails its own check (and those that need it); the others still count.",
        "**Your own work.** Each graded function or class must be written in this notebook. "
        "One taken from the course's package `lmcourse` (its own function or class, a "
        "subclass of one, or code that hands its work to one by a call, an import, a default "
        "argument or a class attribute) gets no points for the checks that grade it. The "
        "exceptions: what the lab's own cells import, and the package's top-level helpers "
        "such as `lmcourse.device()`. Your notebook's checks do not test this rule, only the "
        "grader does: a check that passes at home can still score 0 if the code is not yours.",
        "**Names.** The grader uses your functions, your classes and the lab's data as they "
        "stand after the whole notebook has run, so do not reuse their names for scratch "
        "work. Other scratch names, even `check`, are fine: the grader brings its own copy "
        "of the checks.",
    ]
    return "\n".join([
        GRADING_HEADING, "",
        textwrap.fill(f"Each check cell below is a question of the autograder ({total} "
                      "points in all), and ends with its name and points (`# q01: 1 "
                      "point`).", width=92), "",
        "| question | your code it grades | also needs exercise | points |",
        "|---|---|---|---|", *rows, "",
        *(textwrap.fill(rule, width=92, initial_indent="- ", subsequent_indent="  ")
          for rule in rules)])


def question_line(check: Check) -> str:
    """The comment that ends a lab's check cell: ``# q03: 1 point``."""
    return f"# {check.name[:3]}: {check.points} point{'s' * (check.points > 1)}"


def _with_question_line(source: str, check: Check) -> str:
    """A check cell's code ending with its :func:`question_line` (an old one replaced)."""
    lines = [line for line in source.rstrip().splitlines()
             if not re.fullmatch(r"# q\d\d: \d+ points?", line.strip())]
    return "\n".join([*lines, question_line(check)])


GRADING_HEADING = "### How this lab is graded"
GRADING_TAG = "grading"


def write_grading_cells(selected: list[str]) -> list[Path]:
    """Put each lab's "How this lab is graded" cell (:func:`grading_markdown`) in its
    solution notebook and twin, after the run card, and end each check cell with its
    :func:`question_line`; returns the notebooks that changed.
    The student copies in ``labs/`` are rewritten by ``python -m tools.nbtools student``."""
    import jupytext

    changed = []
    for path in solutions(selected):
        nb = nbformat.read(path, as_version=4)
        checks, _ = lab_checks(nb, path.stem)
        entry = {"checks": [{"question": c.name, "exercise": c.exercise, "points": c.points,
                             "grades": list(c.graded), "cell": c.source} for c in checks]}
        text = grading_markdown(entry, chains(path))
        tagged = [c for c in nb.cells if CHECK_TAG in c.metadata.get("tags", [])]
        sources = [_with_question_line(c.source, check)
                   for c, check in zip(tagged, checks, strict=True)]
        cell = next((c for c in nb.cells if GRADING_TAG in c.metadata.get("tags", [])), None)
        if cell is not None and cell.source == text and \
                sources == [c.source for c in tagged]:
            continue
        for c, source in zip(tagged, sources, strict=True):
            c.source = source
        new = nbformat.v4.new_markdown_cell(text, metadata={
            "slideshow": {"slide_type": "skip"}, "tags": [GRADING_TAG]})
        if cell is not None:
            new.id = cell.id  # the same cell, rewritten: no churn in the committed files
            nb.cells.remove(cell)  # (re)placed right after the run card, the second cell
        at = next(i for i, c in enumerate(nb.cells) if "run-card" in c.metadata.get("tags", []))
        nb.cells.insert(at + 1, new)
        nbformat.write(nb, path)
        jupytext.write(nb, path.with_suffix(".py"), fmt="py:percent")
        changed.append(path)
    return changed


def _requirements() -> str:
    """Gradescope's pip requirements: this course's pins, torch's CPU build, and the
    course itself (carried in the zip's ``files/course``, installed editable so that it
    finds its ``reference/`` and ``data/`` beside it)."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    torch = re.search(r"^TORCH_VERSION\s*[:?]?=\s*(\S+)", makefile, re.M).group(1)
    pins = [line for line in (ROOT / "requirements-lock.txt").read_text().splitlines()
            if line and not line.startswith("#")]
    return "\n".join(["--extra-index-url https://download.pytorch.org/whl/cpu",
                      f"torch=={torch}", *pins,
                      "-e /autograder/source/files/course"]) + "\n"


def _course_files(solution: Path, into: Path) -> None:
    """The part of the course the lab runs with: the package, its data, and the
    reference runs the lab loads (not every run's weights: the zip stays small)."""
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, into / name)
    shutil.copytree(ROOT / "lmcourse", into / "lmcourse", ignore=_SKIP)
    shutil.copytree(ROOT / "data", into / "data", ignore=_SKIP)
    for name in sorted(set(_REFERENCE.findall(solution.with_suffix(".py").read_text()))):
        found = result_path(name)
        if found.exists():
            carried = into / found.relative_to(ROOT)
            carried.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(found, carried)


@contextlib.contextmanager
def _cwd(path: Path):
    before = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def build_lab(solution: Path, out: Path) -> dict:
    """Write one lab's student notebook, tests and Gradescope zip; returns its points."""
    from otter.generate import main as otter_generate

    nb = nbformat.read(solution, as_version=4)
    checks, given = lab_checks(nb, solution.stem)
    module = checks_module(nb)
    digest = course_digest(ROOT / "lmcourse")
    if not checks:
        raise SystemExit(f"{solution.name} has no cell tagged {CHECK_TAG!r}: nothing to grade")
    student = student_copy(nb)
    student.cells.append(nbformat.v4.new_markdown_cell(HANDING_IN))
    (out / "student").mkdir(parents=True, exist_ok=True)
    nbformat.write(student, out / "student" / solution.name)

    lab = out / solution.stem
    shutil.rmtree(lab, ignore_errors=True)
    (lab / "tests").mkdir(parents=True)
    for check in checks:
        (lab / "tests" / f"{check.name}.py").write_text(
            test_file(check, checks, module, given, digest))
    (lab / "requirements.txt").write_text(_requirements())
    (lab / "otter_config.json").write_text(json.dumps(
        {"lang": "python", "show_stdout": True, "show_hidden": True,
         "plugins": [{"lmcourse.checks.grading.GradingPlugin": {
             "closing": [c.source for c in checks if c.exercise is None]}}]},
        indent=2) + "\n")
    course = lab / "course"
    course.mkdir()
    _course_files(solution, course)
    bundle = out / f"{solution.stem}-autograder.zip"
    with _cwd(lab):
        with contextlib.redirect_stdout(sys.stderr):
            otter_generate(tests_dir="tests", output_path=str(bundle),
                           config="otter_config.json", requirements="requirements.txt",
                           overwrite_requirements=False, files=["course"], no_environment=True,
                           python_version=f"{sys.version_info[0]}.{sys.version_info[1]}")
    return {"lab": solution.stem, "checks": [
        {"question": c.name, "exercise": c.exercise, "points": c.points,
         "grades": list(c.graded), "cell": c.source} for c in checks]}


def points_page(labs: list[dict]) -> str:
    lines = ["# Points per check", "",
             "Written by `make grader`: one otter question per check cell of each lab, "
             f"{POINTS_PER_CHECK} point each unless `POINTS` in `tools/grader.py` weighs it "
             "otherwise (then `python -m tools.grader --write-cells` restates the points in "
             "each lab's *How this lab is graded* cell).", ""]
    for lab in labs:
        total = sum(c["points"] for c in lab["checks"])
        lines += [f"## {lab['lab']} ({total} points)", "",
                  "| question | exercise | grades | points |", "|---|---|---|---|"]
        lines += [f"| `{c['question']}` | {c['exercise'] or 'closing result'} | "
                  f"{', '.join(f'`{g}`' for g in c['grades']) or '–'} | {c['points']} |"
                  for c in lab["checks"]]
        lines.append("")
    return "\n".join(lines)


def solutions(selected: list[str]) -> list[Path]:
    found = sorted(SOLUTIONS.glob("[0-9][0-9]_*.ipynb"))
    if selected:
        found = [p for p in found if p.name[:2] in selected or p.stem in selected]
        missing = set(selected) - {p.name[:2] for p in found} - {p.stem for p in found}
        if missing:
            raise SystemExit(f"no lab {', '.join(sorted(missing))} in {SOLUTIONS}: "
                             f"give two digits such as 05, or a name such as 05_attention")
    return found


def grade(submission: Path, bundle: Path) -> dict:
    """Grade one notebook with a lab's zip, as Gradescope would (no container: this
    machine's course environment): ``{question: (score, possible, message)}``."""
    from otter.run import main as otter_run

    with contextlib.redirect_stdout(sys.stderr):
        results = otter_run(str(submission), autograder=str(bundle), output_dir=None,
                            no_logo=True)
    return {name: (r.score, r.possible, r.summary()) for name, r in results.results.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("labs", nargs="*", help="lab numbers (05) or names; default: all")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--verify", action="store_true",
                        help="then grade every solution with its zip (full marks expected)")
    parser.add_argument("--write-cells", action="store_true",
                        help="write each lab's 'How this lab is graded' cell (points, chain) "
                             "into its solution notebook and twin, then stop")
    args = parser.parse_args(argv)
    if args.write_cells:
        changed = write_grading_cells(args.labs)
        print("\n".join(f"wrote the grading cell of {p.relative_to(ROOT)}" for p in changed)
              or "every lab's grading cell is up to date")
        print("now: python -m tools.nbtools student (the student copies in labs/)")
        return 0
    args.out = args.out.resolve()  # otter generate runs in each lab's folder
    args.out.mkdir(parents=True, exist_ok=True)
    labs = [build_lab(p, args.out) for p in solutions(args.labs)]
    (args.out / "points.json").write_text(json.dumps(labs, indent=1) + "\n")
    (args.out / "points.md").write_text(points_page(labs) + "\n")
    print(f"wrote {args.out}: {len(labs)} labs, student notebooks in student/, "
          f"Gradescope zips *-autograder.zip, points in points.md")
    failed = 0
    for path in solutions(args.labs) if args.verify else []:
        start = time.perf_counter()
        scores = grade(path, args.out / f"{path.stem}-autograder.zip")
        got, possible = (sum(s[i] for s in scores.values()) for i in (0, 1))
        failed += got < possible
        print(f"{path.stem}: {got:g} / {possible:g} in {time.perf_counter() - start:.0f} s "
              f"(one torch thread, as on Gradescope)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

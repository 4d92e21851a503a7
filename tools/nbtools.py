"""Notebook tooling: build (pair + execute) chapters and labs, and make student copies.

    python -m tools.nbtools build chapters/01_backprop.py [...]   # .py twin -> executed .ipynb
    python -m tools.nbtools sync                                   # report twins out of sync
    python -m tools.nbtools renames chapters/09_bert.py            # refactor: keep outputs
    python -m tools.nbtools student [--out _build/student]        # labs/*.ipynb + a zip
    python -m tools.nbtools student --check                        # exit 1 if one is stale

The jupytext ``py:percent`` twin is what you edit and review; ``build`` writes the paired
``.ipynb``, fills in default slide metadata, executes it top to bottom in a fresh
kernel and writes both files back so they stay in sync. Widget views are dropped from the
committed outputs: an untrusted notebook cannot draw them (JupyterLab shows their text
repr, ``VBox(children=...``), so a student sees each widget's static figure until the cell
is run, and the site shows the same figure.

A lab is written once, with its solutions, in ``labs/solutions/`` (twin and executed
notebook; the site shows it). What a student opens is its generated copy in ``labs/``:
solutions replaced by stubs, no outputs, no jupytext pairing. ``build`` of a lab rewrites
its student copy too; ``student`` rewrites them all (and zips them for the site).
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import sys
import time
import zipfile
from pathlib import Path

import jupytext
import nbformat

ROOT = Path(__file__).resolve().parents[1]
#: the notebooks that are paired, executed and tested: chapters and the labs' solutions
NOTEBOOK_DIRS = ("chapters", "labs/solutions")
LABS, SOLUTIONS = "labs", "labs/solutions"
FORMATS = "ipynb,py:percent"
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
BEGIN, END = "# BEGIN SOLUTION", "# END SOLUTION"
#: Environment every notebook is executed with: offline, quiet, deterministic.
EXEC_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TQDM_DISABLE": "1",
    "PYTHONHASHSEED": "0",
    "MPLBACKEND": "module://matplotlib_inline.backend_inline",
}


def notebooks(root: Path = ROOT) -> list[Path]:
    """Every executed ``.ipynb`` of the course (chapters, then lab solutions), in syllabus
    order; the student copies in ``labs/`` are not among them."""
    return [p for d in NOTEBOOK_DIRS for p in sorted((root / d).glob("*.ipynb"))]


def solutions(root: Path = ROOT) -> list[Path]:
    """The labs as written, with their solutions: ``labs/solutions/*.ipynb``."""
    return sorted((root / SOLUTIONS).glob("*.ipynb"))


MAX_CELL_LINES = {"chapters": 30, "solutions": 20}  # a lab cell is what a student writes


def long_cells(path: Path, nb: nbformat.NotebookNode | None = None) -> list[str]:
    """Code cells of ``path`` longer than the course allows (30 lines in a chapter, 20 in
    a lab), as ``"cell N: L lines (first line)"``; a long experiment belongs in a named
    function in ``lmcourse``, shown with ``show()``, or in cells that each do one thing."""
    limit = MAX_CELL_LINES[path.parent.name]
    nb = nbformat.read(path, as_version=4) if nb is None else nb
    found = []
    for i, cell in enumerate(nb.cells):
        lines = cell.source.rstrip().splitlines()
        if cell.cell_type == "code" and len(lines) > limit:
            found.append(f"cell {i}: {len(lines)} lines > {limit} ({lines[0][:50]!r})")
    return found


def student_path(solution: Path) -> Path:
    """Where a lab's student copy is committed: ``labs/NN_name.ipynb``."""
    return solution.parent.parent / solution.name


def default_slide_type(cell: nbformat.NotebookNode, index: int) -> str:
    """A heading starts a slide (``#``/``##``) or sub-slide (``###``); the rest follows."""
    if index == 0:
        return "slide"
    if cell.cell_type == "markdown":
        first = cell.source.lstrip().split("\n", 1)[0]
        if re.match(r"#{1,2}\s", first):
            return "slide"
        if first.startswith("### "):
            return "subslide"
    return "-"


def prepare(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Course metadata: python3 kernelspec, jupytext pairing, slide type on every cell."""
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata.setdefault("language_info", {"name": "python"})
    nb.metadata["jupytext"] = {"formats": FORMATS}
    for i, cell in enumerate(nb.cells):
        cell.metadata.setdefault("slideshow", {"slide_type": default_slide_type(cell, i)})
    return nb


def execute(nb: nbformat.NotebookNode, cwd: Path, timeout: int = 300, attempts: int = 2
            ) -> float:
    """Run every cell in a fresh kernel; returns the wall time in seconds.

    A kernel that never answers (its reply lost between kernel and client: the run sits
    idle until the cell timeout) is not the notebook's fault: after ``timeout`` seconds
    without a reply, the run starts again in a fresh kernel, up to ``attempts`` times in
    all. No course cell needs anywhere near 300 s; an error raised by a cell is not
    retried."""
    import copy

    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    os.environ.update(EXEC_ENV)
    for attempt in range(1, attempts + 1):
        work = copy.deepcopy(nb)
        client = NotebookClient(work, timeout=timeout, startup_timeout=120,
                                kernel_name="python3",
                                resources={"metadata": {"path": str(cwd)}},
                                store_widget_state=True)  # nbclient needs it for Output widgets
        start = time.perf_counter()
        try:
            client.execute()
        except (TimeoutError, DeadKernelError) as err:  # CellTimeoutError is a TimeoutError
            if attempt == attempts:
                raise
            print(f"attempt {attempt}: {type(err).__name__} after "
                  f"{time.perf_counter() - start:.0f} s; running it again in a fresh kernel",
                  flush=True)
            continue
        nb.cells, nb.metadata = work.cells, work.metadata
        drop_widget_views(nb)
        return time.perf_counter() - start
    raise AssertionError("unreachable")


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def drop_widget_views(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Remove live-widget views (and stored widget state): they need a kernel to draw. An
    output that also carries its widget's static figure (``lmcourse.viz.figures.
    box_with_figure``) keeps the figure (or its HTML), so the site, the slides and an unrun
    notebook show it; a view with nothing else to show is dropped."""
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        kept = []
        for output in cell.outputs:
            data = output.get("data", {})
            if WIDGET_VIEW in data:
                if "image/png" not in data and "text/html" not in data:
                    continue
                data.pop(WIDGET_VIEW)
            kept.append(output)
        cell.outputs = kept
    return nb


def build(twin: Path, run: bool = True) -> None:
    """Turn a ``.py`` twin into its executed ``.ipynb`` and resync the twin."""
    twin = twin.resolve()
    nb = prepare(jupytext.read(twin))
    if run:
        seconds = execute(nb, twin.parent)
        print(f"{twin.name}: executed in {seconds:.1f} s")
    _write_pair(nb, twin)


def _write_pair(nb: nbformat.NotebookNode, twin: Path) -> None:
    """Write ``nb`` as the twin's ``.ipynb`` (atomically: a failed run never leaves half a
    notebook), resync the twin, and rewrite a lab solution's student copy."""
    target = twin.with_suffix(".ipynb")
    tmp = target.with_suffix(".ipynb.tmp")
    nbformat.write(nb, tmp)
    tmp.replace(target)
    jupytext.write(nb, twin, fmt="py:percent")
    if twin.parent.name == "solutions" and twin.parent.parent.name == LABS:
        write_student_copy(target)


def copy_prose(twin: Path) -> int:
    """Copy a twin's markdown into its executed notebook, keeping every output.

    For prose-only edits (no re-execution): the code cells must be unchanged, else the
    outputs would no longer belong to them and the notebook has to be rebuilt.
    Returns how many markdown cells changed."""
    twin = twin.resolve()
    target = twin.with_suffix(".ipynb")
    edited, executed = prepare(jupytext.read(twin)), nbformat.read(target, as_version=4)
    code = [[_cell_key(c) for c in nb.cells if c.cell_type == "code"]
            for nb in (edited, executed)]
    if code[0] != code[1]:
        raise ValueError(f"{twin.name}: code cells differ from {target.name}; prose can only "
                         f"be copied when just markdown changed. Run "
                         f"`python -m tools.nbtools build {twin.name}` instead.")
    outputs = iter([c for c in executed.cells if c.cell_type == "code"])
    same_layout = len(edited.cells) == len(executed.cells)
    cells, changed = [], 0
    for i, cell in enumerate(edited.cells):
        if cell.cell_type == "code":
            cells.append(next(outputs))
            continue
        old = [c for c in executed.cells if _cell_key(c) == _cell_key(cell)]
        if not old and same_layout and "id" in executed.cells[i]:
            cell["id"] = executed.cells[i]["id"]  # an edited cell keeps its id: a small diff
        changed += not old
        cells.append(old[0] if old else cell)
    executed.cells = cells
    _write_pair(executed, twin)
    return changed


def copy_renames(twin: Path) -> int:
    """Copy a twin's cells into its executed notebook, keeping every output, for a refactor
    that renames or moves what the code imports and changes no output: same cells, same
    types, same metadata, only sources differ. ``make test`` executes the notebook again
    (nbval) and compares the outputs that are checked. Returns how many cells changed."""
    twin = twin.resolve()
    target = twin.with_suffix(".ipynb")
    edited, executed = prepare(jupytext.read(twin)), nbformat.read(target, as_version=4)
    layout = [[(c.cell_type, c.metadata.get("slideshow"), tuple(c.metadata.get("tags", ())))
               for c in nb.cells] for nb in (edited, executed)]
    if layout[0] != layout[1]:
        raise ValueError(f"{twin.name}: cells were added, removed or retyped; only sources may "
                         f"differ. Run `python -m tools.nbtools build {twin.name}` instead.")
    changed = 0
    for new, old in zip(edited.cells, executed.cells, strict=True):
        if new.source.strip() != old.source.strip():
            old.source, changed = new.source, changed + 1
    _write_pair(executed, twin)
    return changed


def _cell_key(cell: nbformat.NotebookNode) -> tuple:
    """What a twin must agree on: type, source, and the metadata slides and the site read."""
    return (cell.cell_type, cell.source.strip(), cell.metadata.get("slideshow"),
            tuple(cell.metadata.get("tags", ())))


def out_of_sync(root: Path = ROOT) -> list[str]:
    """Notebooks whose ``.py`` twin is missing or whose cells differ from it."""
    problems = []
    for path in notebooks(root):
        twin = path.with_suffix(".py")
        if not twin.exists():
            problems.append(f"{path.relative_to(root)}: no jupytext twin {twin.name}")
            continue
        a, b = nbformat.read(path, as_version=4), jupytext.read(twin)
        cells_a, cells_b = [_cell_key(c) for c in a.cells], [_cell_key(c) for c in b.cells]
        if cells_a != cells_b:
            first = next((i for i, (x, y) in enumerate(zip(cells_a, cells_b, strict=False))
                          if x != y),
                         min(len(cells_a), len(cells_b)))
            fix = f"python -m tools.nbtools build {twin.relative_to(root)}"
            problems.append(f"{path.relative_to(root)}: differs from {twin.name} at cell "
                            f"{first}; run `{fix}`")
    return problems


# ---- student copies --------------------------------------------------------------

def strip_solutions(source: str) -> str:
    """Replace each ``# BEGIN SOLUTION`` ... ``# END SOLUTION`` block by a stub."""
    out, inside, indent = [], False, ""
    for line in source.splitlines():
        stripped = line.strip()
        if stripped == BEGIN:
            if inside:
                raise ValueError("nested '# BEGIN SOLUTION' markers")
            inside, indent = True, line[: len(line) - len(line.lstrip())]
            out.append(f"{indent}# YOUR CODE HERE")
            out.append(f'{indent}raise NotImplementedError("replace this line with your code")')
        elif stripped == END:
            if not inside:
                raise ValueError("'# END SOLUTION' without a matching '# BEGIN SOLUTION'")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError("'# BEGIN SOLUTION' without a matching '# END SOLUTION'")
    return "\n".join(out)


def student_copy(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The lab as handed out: solutions stubbed, outputs, run times and widget state
    cleared, and no jupytext pairing (saving it in JupyterLab must not write a ``.py``)."""
    nb = copy.deepcopy(nb)
    nb.metadata.pop("widgets", None)
    nb.metadata.pop("jupytext", None)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = strip_solutions(cell.source)
            cell.outputs, cell.execution_count = [], None
            cell.metadata.pop("execution", None)  # the solution's run times
    return nb


def student_text(solution: Path) -> str:
    """The student copy of ``solution`` exactly as it is written to disk."""
    text = nbformat.writes(student_copy(nbformat.read(solution, as_version=4)))
    return text if text.endswith("\n") else text + "\n"


def write_student_copy(solution: Path, target: Path | None = None) -> bool:
    """Write the student copy of ``solution`` (to ``labs/`` by default); True if it changed."""
    target = target or student_path(solution)
    text = student_text(solution)
    if target.exists() and target.read_text(encoding="utf-8") == text:
        return False
    target.write_text(text, encoding="utf-8")
    return True


def stale_student_copies(root: Path = ROOT) -> list[str]:
    """What is wrong with the committed student copies: missing, out of date with their
    solution, or left over from a lab that no longer exists."""
    problems, fix = [], "run `python -m tools.nbtools student`"
    for solution in solutions(root):
        target = student_path(solution)
        rel = target.relative_to(root)
        if not target.exists():
            problems.append(f"{rel}: missing; {fix}")
        elif target.read_text(encoding="utf-8") != student_text(solution):
            problems.append(f"{rel}: out of date with {solution.relative_to(root)}; {fix}")
    names = {p.name for p in solutions(root)}
    problems += [f"{p.relative_to(root)}: no solution {SOLUTIONS}/{p.name}; delete it"
                 for p in sorted((root / LABS).glob("*.ipynb")) if p.name not in names]
    return problems


def write_student_copies(root: Path = ROOT) -> list[Path]:
    """Rewrite the committed student copies ``labs/*.ipynb``; returns those that changed."""
    return [student_path(s) for s in solutions(root) if write_student_copy(s)]


def make_student(out: Path, root: Path = ROOT) -> list[Path]:
    """Write student copies of every lab under ``out/labs`` plus a zip of them (the site
    offers both)."""
    written = []
    (out / "labs").mkdir(parents=True, exist_ok=True)
    for solution in solutions(root):
        target = out / "labs" / solution.name
        write_student_copy(solution, target)
        written.append(target)
    with zipfile.ZipFile(out / "lmcourse-labs.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        for path in written:
            zf.write(path, f"lmcourse-labs/{path.name}")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="execute .py twins into .ipynb notebooks")
    b.add_argument("twins", nargs="+", type=Path)
    b.add_argument("--no-run", action="store_true", help="pair only, do not execute")
    sub.add_parser("sync", help="list notebooks out of sync with their twins")
    pr = sub.add_parser("prose", help="copy a twin's markdown into its notebook, keep outputs")
    pr.add_argument("twins", nargs="+", type=Path)
    rn = sub.add_parser("renames", help="copy a twin's sources into its notebook, keep outputs "
                        "(a refactor that changes no output)")
    rn.add_argument("twins", nargs="+", type=Path)
    s = sub.add_parser("student", help="write the student copies labs/*.ipynb (and a zip)")
    s.add_argument("--out", type=Path, default=ROOT / "_build" / "student",
                   help="where the zip (and its copies) go")
    s.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 if a committed student copy is stale")
    args = parser.parse_args(argv)
    if args.cmd == "build":
        for twin in args.twins:
            if twin.suffix != ".py":
                parser.error(f"{twin}: give the .py twin, not {twin.suffix}")
            build(twin, run=not args.no_run)
        return 0
    if args.cmd == "prose":
        for twin in args.twins:
            try:
                changed = copy_prose(twin)
            except ValueError as error:
                parser.error(str(error))
            print(f"{twin.name}: {changed} markdown cell(s) copied, outputs kept")
        return 0
    if args.cmd == "renames":
        for twin in args.twins:
            try:
                changed = copy_renames(twin)
            except ValueError as error:
                parser.error(str(error))
            print(f"{twin.name}: {changed} cell(s) copied, outputs kept")
        return 0
    if args.cmd == "sync":
        problems = out_of_sync()
        print("\n".join(problems) or "all notebooks in sync")
        return 1 if problems else 0
    if args.check:
        problems = stale_student_copies()
        print("\n".join(problems) or "every student copy in labs/ matches its solution")
        return 1 if problems else 0
    changed = write_student_copies()
    for path in changed:
        print(f"rewrote {path.relative_to(ROOT)}")
    orphans = [p for p in stale_student_copies() if "no solution" in p]
    if orphans:
        print("\n".join(orphans))
    written = make_student(args.out)
    print(f"{len(written)} student copies in {LABS}/ ({len(changed)} changed); "
          f"lmcourse-labs.zip in {args.out}")
    return 1 if orphans else 0


if __name__ == "__main__":
    sys.exit(main())

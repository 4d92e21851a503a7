"""Lab machinery: solution markers, the committed student copies (``labs/*.ipynb``, generated
from ``labs/solutions/``) up to date and failing their checks. That the solutions pass them
is nbval's part: it executes ``labs/solutions/``."""

from __future__ import annotations

import subprocess
import sys
import zipfile

import nbformat
import pytest

from tools import nbtools
from tools.nbtools import ROOT

LABS = nbtools.solutions()
STUDENT = sorted((ROOT / "labs").glob("*.ipynb"))


def test_strip_solutions_keeps_indentation_and_surroundings():
    src = "def f(x):\n    # BEGIN SOLUTION\n    return x + 1\n    # END SOLUTION\n\nprint(f)"
    out = nbtools.strip_solutions(src)
    assert "return x + 1" not in out
    assert "    raise NotImplementedError" in out
    assert out.startswith("def f(x):") and out.endswith("print(f)")


@pytest.mark.parametrize("bad", [
    "# BEGIN SOLUTION\nx = 1",
    "x = 1\n# END SOLUTION",
    "# BEGIN SOLUTION\n# BEGIN SOLUTION\n# END SOLUTION",
])
def test_unbalanced_markers_are_errors(bad):
    with pytest.raises(ValueError, match="SOLUTION"):
        nbtools.strip_solutions(bad)


def test_every_lab_has_a_committed_student_copy_that_is_up_to_date():
    assert LABS, "no lab solutions in labs/solutions/"
    assert [p.name for p in STUDENT] == [p.name for p in LABS]
    assert nbtools.stale_student_copies() == []


def test_a_stale_student_copy_is_detected(tmp_path):
    (tmp_path / "labs" / "solutions").mkdir(parents=True)
    code = "def f():\n    # BEGIN SOLUTION\n    return 1\n    # END SOLUTION"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Lab"),
                                         nbformat.v4.new_code_cell(code)])
    solution = tmp_path / "labs" / "solutions" / "01_x.ipynb"
    nbformat.write(nb, solution)
    assert "missing" in nbtools.stale_student_copies(tmp_path)[0]
    assert nbtools.write_student_copies(tmp_path) == [tmp_path / "labs" / "01_x.ipynb"]
    assert nbtools.stale_student_copies(tmp_path) == []
    assert nbtools.write_student_copies(tmp_path) == []  # nothing to rewrite
    nb.cells[1].source = code.replace("return 1", "return 2")
    nb.cells.append(nbformat.v4.new_code_cell("f()"))
    nbformat.write(nb, solution)
    assert "out of date" in nbtools.stale_student_copies(tmp_path)[0]
    nbtools.write_student_copies(tmp_path)
    (tmp_path / "labs" / "02_gone.ipynb").write_text("{}")
    assert ["labs/02_gone.ipynb: no solution" in p
            for p in nbtools.stale_student_copies(tmp_path)] == [True]


def test_student_check_command_passes_on_the_committed_copies():
    proc = subprocess.run([sys.executable, "-m", "tools.nbtools", "student", "--check"],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_student_copy_has_no_outputs_pairing_or_solutions():
    for path in STUDENT:
        nb = nbformat.read(path, as_version=4)
        assert "jupytext" not in nb.metadata, f"{path.name}: saving it would write a .py twin"
        assert nb.metadata["kernelspec"]["name"] == "python3"
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert all(not c.outputs and c.execution_count is None for c in code), path.name
        assert nbtools.BEGIN not in "".join(c.source for c in code), path.name
        assert "raise NotImplementedError" in "".join(c.source for c in code), path.name


def test_nbval_collects_the_solutions_not_the_student_copies():
    """labs/conftest.py keeps `pytest --nbval-lax labs` off the student copies, whose checks
    fail by design."""
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                           "--nbval-lax", "-p", "no:cacheprovider", "labs"],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    files = {line.split("::")[0] for line in proc.stdout.splitlines() if "::" in line}
    assert files == {f"labs/solutions/{p.name}" for p in LABS}, files


@pytest.mark.parametrize("lab", LABS, ids=[p.name for p in LABS])
def test_lab_has_solutions_and_checks(lab):
    nb = nbformat.read(lab, as_version=4)
    assert any(nbtools.BEGIN in c.source for c in nb.cells), f"{lab.name}: no solution blocks"
    checks = [c for c in nb.cells if "check" in c.metadata.get("tags", [])]
    assert checks, f"{lab.name}: no cell tagged 'check'"
    assert all("check." in c.source for c in checks)


@pytest.mark.slow
@pytest.mark.parametrize("lab", STUDENT, ids=[p.name for p in STUDENT])
def test_student_copy_fails_every_check(lab):
    """The committed copy a student opens must not pass: every check cell fails with
    CheckFailed."""
    from nbclient import NotebookClient

    student = nbformat.read(lab, as_version=4)
    assert nbtools.BEGIN not in "".join(c.source for c in student.cells)
    assert all(not c.get("outputs") for c in student.cells if c.cell_type == "code")
    NotebookClient(student, timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(lab.parent)}}).execute()
    for cell in student.cells:
        if "check" not in cell.metadata.get("tags", []):
            continue
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert errors, f"{lab.name}: check cell passed on the student copy:\n{cell.source}"
        assert errors[0].ename == "CheckFailed", (
            f"{lab.name}: check cell failed with {errors[0].ename}, not CheckFailed:\n"
            f"{cell.source}")
        shown = "\n".join(errors[0].traceback)
        assert "check failed" in shown and len(shown.splitlines()) <= 5, (
            f"{lab.name}: a failed check should read as its message and hint, not as a "
            f"traceback:\n{shown}")


@pytest.mark.slow
def test_make_student_writes_copies_and_zip(tmp_path):
    written = nbtools.make_student(tmp_path)
    assert [p.name for p in written] == [p.name for p in LABS]
    with zipfile.ZipFile(tmp_path / "lmcourse-labs.zip") as zf:
        assert sorted(zf.namelist()) == sorted(f"lmcourse-labs/{p.name}" for p in LABS)
    for path in written:
        assert nbtools.BEGIN not in path.read_text()


def test_building_a_lab_rewrites_its_student_copy(tmp_path):
    """`nbtools build labs/solutions/NN_name.py` keeps labs/NN_name.ipynb in step."""
    import jupytext

    (tmp_path / "labs" / "solutions").mkdir(parents=True)
    code = "def f():\n    # BEGIN SOLUTION\n    return 1\n    # END SOLUTION"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Lab"),
                                         nbformat.v4.new_code_cell(code)])
    twin = tmp_path / "labs" / "solutions" / "01_x.py"
    jupytext.write(nb, twin, fmt="py:percent")
    nbtools.build(twin, run=False)
    assert (tmp_path / "labs" / "solutions" / "01_x.ipynb").exists()
    assert nbtools.stale_student_copies(tmp_path) == []
    copy = (tmp_path / "labs" / "01_x.ipynb").read_text()
    assert "return 1" not in copy and "NotImplementedError" in copy

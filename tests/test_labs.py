"""Lab machinery: solution markers, student copies that fail their checks."""

from __future__ import annotations

import zipfile

import nbformat
import pytest

from tools import nbtools
from tools.nbtools import ROOT

LABS = sorted((ROOT / "labs").glob("*.ipynb"))


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


@pytest.mark.parametrize("lab", LABS, ids=[p.name for p in LABS])
def test_lab_has_solutions_and_checks(lab):
    nb = nbformat.read(lab, as_version=4)
    assert any(nbtools.BEGIN in c.source for c in nb.cells), f"{lab.name}: no solution blocks"
    checks = [c for c in nb.cells if "check" in c.metadata.get("tags", [])]
    assert checks, f"{lab.name}: no cell tagged 'check'"
    assert all("check." in c.source for c in checks)


@pytest.mark.slow
@pytest.mark.parametrize("lab", LABS, ids=[p.name for p in LABS])
def test_student_copy_fails_every_check(lab):
    """The handed-out copy must not pass: every check cell fails with CheckFailed."""
    from nbclient import NotebookClient

    student = nbtools.student_copy(nbformat.read(lab, as_version=4))
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


@pytest.mark.slow
def test_make_student_writes_copies_and_zip(tmp_path):
    written = nbtools.make_student(tmp_path)
    assert [p.name for p in written] == [p.name for p in LABS]
    with zipfile.ZipFile(tmp_path / "lmcourse-labs.zip") as zf:
        assert sorted(zf.namelist()) == sorted(f"lmcourse-labs/{p.name}" for p in LABS)
    for path in written:
        assert nbtools.BEGIN not in path.read_text()

"""The site page of every reference run (issue 57, item 2): ``runs.md``."""

from __future__ import annotations

import json

from benchmarks import runs
from lmcourse.course.reference.result import ReferenceResult, reference_dir


def test_the_runs_page_is_current():
    assert runs.RUNS_MD.read_text() == runs.render(runs.results(), runs.readers()), (
        "runs.md is stale: run `make claims` (python -m benchmarks.runs)")


def test_every_reference_run_has_its_row_with_command_device_time_and_date():
    page = runs.RUNS_MD.read_text()
    names = sorted(p.parent.name for p in reference_dir().glob("*/result.json"))
    assert names and f"{len(names)} runs." in page
    for name in names:
        row = next((line for line in page.splitlines() if line.startswith(f"| `{name}` |")),
                   None)
        assert row, f"runs.md has no row for {name}"
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        result = ReferenceResult.from_json(json.loads(
            (reference_dir() / name / "result.json").read_text()))
        assert cells[3] == result.device_kind and cells[6] == f"`{result.command}`"
        assert cells[4].endswith(("min", " s")) and cells[5] != "–", (name, cells)


def test_a_run_without_a_date_or_reader_says_so(tmp_path):
    (tmp_path / "x").mkdir()
    data = json.loads((reference_dir() / "bilm-lee" / "result.json").read_text())
    data.update(name="x", created=None, wall_s=42.0)
    (tmp_path / "x" / "result.json").write_text(json.dumps(data))
    found = runs.results(tmp_path)
    assert runs.render(found, {}, {}).splitlines()[-1].split(" | ")[4:6] == ["42 s", "–"]
    row = runs.render(found, {"x": ["chapters/05_elmo.ipynb"]}, {"x": "2026-01-02"})
    assert "2026-01-02 *" in row and "[05](chapters/05_elmo.ipynb)" in row

"""The site page of every reference run (issue 57, item 2): ``runs.md``."""

from __future__ import annotations

import dataclasses

from benchmarks import runs
from lmcourse.course.reference.result import committed, load, result_path, run_of


def test_the_runs_page_is_current():
    assert runs.RUNS_MD.read_text() == runs.render(runs.results(), runs.readers()), (
        "runs.md is stale: run `make claims` (python -m benchmarks.runs)")


def test_every_reference_run_has_its_row_with_command_device_time_and_date():
    page = runs.RUNS_MD.read_text()
    results = committed()
    assert results and f"{len(results)} runs." in page
    for result in results:
        row = next((line for line in page.splitlines()
                    if line.startswith(f"| `{result.name}` |")), None)
        assert row, f"runs.md has no row for {result.name}"
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        assert cells[3] == result.device_kind and cells[6] == f"`{result.command}`"
        assert cells[4].endswith(("min", " s")) and cells[5] != "–", (result.name, cells)


def test_a_run_without_a_date_or_reader_says_so():
    x = dataclasses.replace(load("bilm-lee"), name="x", created=None, wall_s=42.0)
    assert runs.render([x], {}, {}).splitlines()[-1].split(" | ")[4:6] == ["42 s", "–"]
    row = runs.render([x], {"x": ["chapters/05_elmo.ipynb"]}, {"x": "2026-01-02"})
    assert "2026-01-02 *" in row and "[05](chapters/05_elmo.ipynb)" in row


def test_a_run_card_read_names_its_run():
    read = f"reference/bilm-lee/{result_path('bilm-lee').name}"  # as a run card records it
    assert run_of(read) == "bilm-lee"
    assert run_of("reference/bilm-lee/seed0.safetensors") is None
    assert run_of("data/goodreads_sample.jsonl.gz") is None

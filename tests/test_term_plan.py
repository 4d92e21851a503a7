"""The instructors' term plan (``instructor/term_plan.md``): current with the run cards and the
notebooks, every time on it generated from them, never typed; its order, prerequisites and
schedules derived as the page says."""

from __future__ import annotations

import itertools
import json
import re

import pytest

from tools import grader, term_plan
from tools.nbtools import ROOT
from tools.term_plan import Unit, plan_order, prerequisites, references, schedule

CARDS = json.loads((ROOT / "benchmarks" / "runcards.json").read_text())
REFERENCE_S = json.loads((ROOT / "benchmarks" / "calibration.json").read_text())["calibration_s"]


@pytest.fixture(scope="module")
def units() -> list[Unit]:
    return term_plan.load_units()


@pytest.fixture(scope="module")
def page(units) -> str:
    return term_plan.render(units)


def _row(page: str, path: str) -> list[str]:
    """The cells of the order table's row for ``path``."""
    line = next(x for x in page.splitlines() if f"](../{path}) |" in x)
    return [c.strip() for c in line.strip("|").split("|")]


def test_the_committed_page_is_what_the_tool_writes(page):
    assert term_plan.PLAN.read_text(encoding="utf-8") == page, (
        "instructor/term_plan.md is stale (new run cards, a notebook's prose, or an edit by "
        "hand): run `python -m tools.term_plan` (make term-plan)")


def test_a_typed_time_fails_the_check(units, page, tmp_path, monkeypatch, capsys):
    row = _row(page, units[1].path)
    typed = page.replace(f"| {row[5]} | {row[6]} |", f"| 999 s | {row[6]} |", 1)
    assert typed != page
    edited = tmp_path / "term_plan.md"
    edited.write_text(typed, encoding="utf-8")
    assert term_plan.stale(edited, page)
    edited.write_text(page, encoding="utf-8")
    assert not term_plan.stale(edited, page)
    edited.write_text(typed, encoding="utf-8")
    monkeypatch.setattr(term_plan, "PLAN", edited)
    monkeypatch.setattr(term_plan, "ROOT", tmp_path)
    monkeypatch.setattr(term_plan, "render", lambda *a, **k: page)
    assert term_plan.main(["--check"]) == 1
    assert "stale" in capsys.readouterr().out


def test_running_times_are_the_run_cards_normalised(units, page):
    for unit in units:
        cpu = CARDS[unit.path]["cpu"]
        seconds = cpu["wall_s"] * REFERENCE_S / cpu["calibration_s"]
        shown = f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
        row = _row(page, unit.path)
        assert row[5] == shown, f"{unit.path}: the page says {row[5]}, its run card {shown}"


def test_reading_times_are_the_words_at_the_stated_rate(units, page):
    assert f"at {term_plan.READING_WPM} words a minute" in page
    for unit in units:
        row = _row(page, unit.path)
        assert row[3] == f"{unit.words:,}"
        assert row[4] == f"{round(unit.words / term_plan.READING_WPM)} min"


def test_a_new_run_card_changes_the_page(units):
    path = units[0].path
    cards = {**CARDS, path: {**CARDS[path], "cpu": {**CARDS[path]["cpu"], "wall_s": 600.0}}}
    changed = term_plan.load_units(cards=cards)
    assert changed[0].run_s == pytest.approx(600.0 * REFERENCE_S / CARDS[path]["cpu"][
        "calibration_s"])
    assert _row(term_plan.render(changed), path)[5] != _row(term_plan.render(units), path)[5]
    missing = term_plan.load_units(cards={k: v for k, v in CARDS.items() if k != path})
    assert _row(term_plan.render(missing), path)[5] == "not measured"


def test_reading_words_leave_out_folds_maths_code_and_tags():
    text = ("Two words $x^2 + y$ and `code here`.\n\n$$\na = b\n$$\n"
            "<details><summary>Hint</summary>many hidden words here</details>\n"
            "<b>bold</b> end")
    assert term_plan.reading_words(text) == 5  # Two, words, and, bold, end


def test_references_read_the_ways_the_prose_names_notebooks():
    known = ["01", "02", "03", "04", "4b", "4c", "06", "6b", "07", "7b", "09", "10", "11",
             "12", "lab 03", "lab 06"]
    assert references("As chapter 03 showed, and Chapter 4b's section", known) == ["03", "4b"]
    assert references("Chapters 06 and 6b built attention; ch. 07 too", known) == [
        "06", "6b", "07"]
    assert references("lab 06's teacher beats lab 03", known) == ["lab 06", "lab 03"]
    assert references("chapters\n09–12 show it", known) == ["09", "10", "11", "12"]
    assert references("chapter 1 and chapter 14, and chapters 02, 03 or 04", known) == [
        "01", "02", "03", "04"]
    assert references("lab 06 and chapter 06", known) == ["lab 06", "06"]


def _unit(key: str, refs: tuple[str, ...] = (), opening: tuple[str, ...] = ()) -> Unit:
    return Unit(key=key, path=f"{key}.ipynb", title=key, words=200, run_s=60.0, refs=refs,
                opening=opening, checks=None)


def test_order_places_each_lab_after_the_chapter_its_opening_names():
    units = [_unit("01"), _unit("02", ("01",)), _unit("03", ("02", "lab 01")),
             _unit("lab 01", ("01", "03"), opening=("01",)),
             _unit("lab 02", ("03", "01"))]  # opening names none: the last it names anywhere
    assert [u.key for u in plan_order(units)] == ["01", "lab 01", "02", "03", "lab 02"]
    with pytest.raises(ValueError, match="names no chapter"):
        plan_order([_unit("01"), _unit("lab 01", ("lab 02",))])


def test_prerequisites_are_earlier_named_notebooks_less_the_implied():
    order = [_unit("01"), _unit("02", ("01", "03")), _unit("03", ("02", "01")),
             _unit("04", ("03", "02", "01"))]
    assert prerequisites(order) == {"01": [], "02": ["01"], "03": ["02"], "04": ["03"]}


def test_every_prerequisite_comes_earlier_in_the_committed_order(units):
    order = plan_order(units)
    position = {u.key: i for i, u in enumerate(order)}
    assert sorted(position) == sorted(u.key for u in units)
    for key, needs in prerequisites(order).items():
        assert all(position[k] < position[key] for k in needs), key
    for lab in (u for u in order if u.is_lab):
        chapter = [u for u in order[:position[lab.key]] if not u.is_lab][-1]
        named = [k for k in lab.opening if not k.startswith("lab ")] or lab.refs
        assert chapter.key in named, (
            f"{lab.key} comes after {chapter.key}, which it does not name")


def test_schedule_is_the_most_even_split_into_consecutive_weeks():
    loads = [5.0, 1.0, 3.0, 8.0, 2.0, 2.0, 7.0]
    for weeks in range(1, len(loads) + 1):
        sizes = schedule(loads, weeks)
        assert len(sizes) == weeks and sum(sizes) == len(loads) and min(sizes) >= 1

        def cost(sizes):
            bounds = list(itertools.accumulate(sizes, initial=0))
            return sum(sum(loads[a:b]) ** 2 for a, b in itertools.pairwise(bounds))

        best = min(cost([b - a for a, b in itertools.pairwise((0, *cuts, len(loads)))])
                   for cuts in itertools.combinations(range(1, len(loads)), weeks - 1))
        assert cost(sizes) == pytest.approx(best)
    with pytest.raises(ValueError):
        schedule(loads, len(loads) + 1)


def test_the_page_has_both_schedules_covering_every_notebook(units, page):
    for weeks in term_plan.WEEKS:
        section = page.split(f"### {weeks} weeks")[1].split("\n## ")[0].split("\n### ")[0]
        rows = [r for r in section.splitlines() if re.match(r"\| *\d+ \|", r)]
        assert len(rows) == weeks
        listed = [k.strip() for r in rows for k in r.split("|")[2].split(",")]
        assert listed == [u.key for u in plan_order(units)]


def test_the_page_says_where_each_notebooks_material_lives(units, page):
    table = page.split("## Where each one's material lives")[1]
    for unit in units:
        line = next(x for x in table.splitlines() if x.startswith(f"| {unit.key} |"))
        if unit.is_lab:
            assert f"lmcourse/checks/{unit.checks}.py" in line
            bundle = grader.OUT.relative_to(ROOT) / f"{unit.stem}-autograder.zip"
            assert f"`{bundle.as_posix()}`" in line  # where make grader writes it
            assert (ROOT / "lmcourse" / "checks" / f"{unit.checks}.py").exists()
            assert f"labs/{unit.stem}.ipynb" in line
        else:
            assert f"_build/slides/{unit.stem}.slides.html" in line
            assert f"notes/{unit.stem}.md" in line
    assert "make grader" in table and "planned" not in table


def test_write_is_atomic_and_idempotent(tmp_path, page):
    target = tmp_path / "term_plan.md"
    assert term_plan.write(target, page)
    assert not term_plan.write(target, page)
    assert target.read_text(encoding="utf-8") == page
    assert [p.name for p in tmp_path.iterdir()] == ["term_plan.md"]

"""The markdown of ``instructor/term_plan.md`` (:mod:`tools.term_plan` gathers its figures)."""

from __future__ import annotations

from pathlib import Path

from tools.nbtools import ROOT, student_path
from tools.term_plan import READING_WPM, Unit

TITLE = "Term plan"
NOTES = ROOT / "instructor" / "notes"


def seconds(s: float) -> str:
    """A running time as the run cards write it: ``72 s``, ``6.6 s``."""
    return f"{s:.0f} s" if s >= 10 else f"{s:.1f} s"


def minutes(m: float) -> str:
    """``14 min``, ``2 h 05 min``."""
    whole = round(m)
    return f"{whole} min" if whole < 60 else f"{whole // 60} h {whole % 60:02d} min"


def _link(unit: Unit) -> str:
    return f"[{unit.title}](../{unit.path})"


def _order_table(order: list[Unit], needs: dict[str, list[str]]) -> list[str]:
    rows = ["| # | chapter or lab | builds on | words | reading | running | student time |",
            "|---|---|---|---:|---:|---:|---:|"]
    for u in order:
        run = seconds(u.run_s) if u.run_s is not None else "not measured"
        rows.append(f"| {u.key} | {_link(u)} | {', '.join(needs[u.key]) or '–'} | "
                    f"{u.words:,} | {minutes(u.reading_min)} | {run} | "
                    f"{minutes(u.student_min)} |")
    run_total = sum(u.run_s or 0.0 for u in order)
    rows.append(f"| | **all {len(order)}** | | {sum(u.words for u in order):,} | "
                f"{minutes(sum(u.reading_min for u in order))} | {minutes(run_total / 60)} | "
                f"{minutes(sum(u.student_min for u in order))} |")
    return rows


def _week_table(order: list[Unit], sizes: list[int]) -> list[str]:
    rows = ["| week | chapters and labs | reading | running | student time |",
            "|---:|---|---:|---:|---:|"]
    start = 0
    for week, size in enumerate(sizes, 1):
        units = order[start:start + size]
        start += size
        rows.append(f"| {week} | {', '.join(u.key for u in units)} | "
                    f"{minutes(sum(u.reading_min for u in units))} | "
                    f"{seconds(sum(u.run_s or 0.0 for u in units))} | "
                    f"{minutes(sum(u.student_min for u in units))} |")
    return rows


def _material_table(order: list[Unit]) -> list[str]:
    rows = ["| # | page on the site | deck (`make slides`) | speaker notes | student copy "
            "(`make student`) | checks | grader |",
            "|---|---|---|---|---|---|---|"]
    for u in order:
        site = f"`{Path(u.path).with_suffix('').as_posix()}/`"
        notes = NOTES / f"{u.stem}.md"
        if u.is_lab:
            copy = student_path(ROOT / u.path).relative_to(ROOT).as_posix()
            checks = f"lmcourse/checks/{u.checks}.py" if u.checks else None
            rows.append(f"| {u.key} | {site} | – | – | [{copy}](../{copy}) | "
                        + (f"[{checks}](../{checks})" if checks else "–")
                        + f" | `_build/grader/{u.stem}-autograder.zip` |")
        else:
            note = f"[notes/{notes.name}](notes/{notes.name})" if notes.exists() else "none"
            rows.append(f"| {u.key} | {site} | `_build/slides/{u.stem}.slides.html` | {note} "
                        "| – | – | – |")
    return rows


def page(order: list[Unit], needs: dict[str, list[str]], weeks: dict[int, list[int]],
         machine: dict) -> str:
    """The whole page: order and times, the schedules, and where each one's material is."""
    processor = machine.get("processor", "the machine that measured the cards")
    estimate = (f"; its calibration is an estimate, measured on {machine['measured_on']} and "
                "scaled by how much slower that runs the course's CPU benchmarks"
                ) if machine.get("scaled_by") else ""
    labs = sum(u.is_lab for u in order)
    lines = [
        f"# {TITLE}",
        "",
        "<!-- Written by `python -m tools.term_plan` (make term-plan) from the notebooks, "
        "benchmarks/runcards.json and benchmarks/calibration.json; do not edit by hand: "
        "tests/test_term_plan.py fails on a page that differs from what the tool writes. -->",
        "",
        f"For instructors: the {len(order) - labs} chapters and {labs} labs in teaching "
        "order, what each builds on, how long a student spends on it, two suggested "
        "schedules, and where each one's deck, speaker notes, student copy and checks live. "
        "No figure here is typed: after `make test` has measured new run cards "
        "(`python -m tools.runcards`), or after a notebook's prose changed, run "
        "`make term-plan`.",
        "",
        "**How the figures are made.**",
        "",
        f"- *Reading*: the words of the notebook's prose at {READING_WPM} words a minute, the "
        "rate at which college readers study a text to learn it (Carver, 1992, \"Reading "
        "rate: theory, research and practical implications\"; ordinary silent reading of "
        "non-fiction averages 238, Brysbaert, 2019). The words are the open markdown: maths, "
        "code, outputs, figures and the folded hints, worked answers and run card are not "
        "counted, so a student who also reads the code and works the answers spends longer.",
        "- *Running*: the CPU time the test run measured for the notebook "
        "(`benchmarks/runcards.json`, one torch thread), normalised to the reference "
        f"machine ({processor}{estimate}): the figure the notebook's own run card shows. "
        "A laptop may be faster or slower; a GPU is faster.",
        "- *Student time*: reading plus running. A lab's leaves out the time to write its "
        "exercises, which nothing measures yet: plan for it on top.",
        "- *Builds on*: the earlier chapters and labs the notebook's prose names (\"as "
        "chapter 03 showed\", \"lab 06's teacher\"), less any that another of them already "
        "builds on; forward references (\"chapter 10 shows\") are left out. Chapters are in "
        "the syllabus order of the course's design (the file names follow it); a lab comes "
        "right after the chapter its opening paragraph names. Every notebook also assumes "
        "the course's own prerequisites: Python, matrix products and the chain rule.",
        "",
        "## Chapters and labs in order",
        "",
        *_order_table(order, needs),
        "",
        "## Suggested schedules",
        "",
        "Each schedule keeps the order above and splits it into weeks of as even a student "
        "time as the order allows (the least sum of squared weekly times). Add the labs' "
        "exercise time, and lecture time if you present the decks, on top.",
    ]
    for count, sizes in weeks.items():
        lines += ["", f"### {count} weeks", "", *_week_table(order, sizes)]
    lines += [
        "",
        "## Where each one's material lives",
        "",
        "Paths are relative to the repository. Decks are built by `make slides` into "
        "`_build/slides/` (one per chapter; a site built after them links each from its "
        "chapter's page and serves it under `slides/`). Speaker notes are inserted into the "
        "deck from `instructor/notes/`. A lab's page on the site is its executed solution "
        "(`labs/solutions/`); students open the student copy, which `make student` writes "
        "and zips into `_build/student/lmcourse-labs.zip`. The checks are what the lab's "
        "check cells run. The grader is built by `make grader` into `_build/grader/`: a "
        "Gradescope autograder zip per lab (otter-grader), the student notebooks and the "
        "points of every check (`points.md`); `README.md` here says how to use it.",
        "",
        *_material_table(order),
        "",
    ]
    return "\n".join(lines)

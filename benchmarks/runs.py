"""The site page of every reference run, ``runs.md``, written from the committed
``reference/*/result.json`` (``make claims`` writes it beside the ledger; nothing is run).

The chapters show results; this page is their provenance in one place: for each run its
question, seeds, the device and time it took, the date it was made, the command that makes
it again, and the notebooks that read it (from their run cards).

    python -m benchmarks.runs           # rewrite runs.md
    python -m benchmarks.runs --check   # exit 1 when it is stale
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from lmcourse.course.reference.result import ReferenceResult, committed, run_of
from lmcourse.course.runcard import CARDS

ROOT = Path(__file__).resolve().parent.parent
RUNS_MD = ROOT / "runs.md"
#: for runs assembled before result.json recorded ``created``: the date its file was last
#: committed (``git log -1 --format=%ad --date=short -- reference/<name>/result.json``)
COMMITTED = Path(__file__).resolve().parent / "run_dates.json"
TITLE = "Every reference run, and how to make it again"


def readers(cards: dict | None = None) -> dict[str, list[str]]:
    """``{run name: [notebooks whose run card says they read its result.json]}``."""
    cards = json.loads(CARDS.read_text()) if cards is None else cards
    found: dict[str, list[str]] = {}
    for notebook, card in cards.items():
        for read, _size in card.get("reads", []):
            if run_of(read):
                found.setdefault(run_of(read), []).append(notebook)
    return found


def results(root: Path | None = None) -> list[ReferenceResult]:
    """Every committed reference run, by name."""
    return committed(root)


def _notebook_link(notebook: str) -> str:
    label = Path(notebook).stem.split("_")[0]
    return f"[{'lab ' if notebook.startswith('labs/') else ''}{label}]({notebook})"


def render(runs: list[ReferenceResult], read_by: dict[str, list[str]],
           committed: dict[str, str] | None = None) -> str:
    """The page: one row per run. ``committed``: the dates of runs with no ``created``."""
    committed = json.loads(COMMITTED.read_text()) if committed is None else committed
    lines = [
        f"# {TITLE}", "",
        "<!-- Written by `make claims` (python -m benchmarks.runs) from reference/*/result.json "
        "and the run cards; do not edit by hand. -->", "",
        "Where a chapter needs more than its minute of CPU to show a result, the course trained "
        "it once, over several seeds, and committed what it measured. The chapters read "
        "these runs; this page says how each was made. The time is the training time of all "
        "its seeds together; the date is when its results were assembled (for the older runs, "
        "which did not record it, marked *, when their file was last committed); the command "
        "trains it again from nothing (on a GPU where one is named, as the README explains).",
        "", f"{len(runs)} runs.", "",
        "| run | what it measures | seeds | device | time | date | command | read by |",
        "|---|---|---|---|---|---|---|---|"]
    for r in runs:
        who = ", ".join(_notebook_link(n) for n in sorted(read_by.get(r.name, []))) or "–"
        minutes = r.wall_s / 60
        time = f"{minutes:.0f} min" if minutes >= 1 else f"{r.wall_s:.0f} s"
        date = r.created[:10] if r.created else (
            f"{committed[r.name]} *" if r.name in committed else "–")
        cells = (f"`{r.name}`", r.title, str(len(r.seeds)), r.device_kind, time, date,
                 f"`{r.command}`", who)
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only report whether runs.md "
                        "is up to date")
    args = parser.parse_args(argv)
    text = render(results(), readers())
    stale = not RUNS_MD.exists() or RUNS_MD.read_text() != text
    if args.check:
        if stale:
            print("runs.md is stale: run `make claims`")
        return 1 if stale else 0
    if stale:
        RUNS_MD.write_text(text)
    print(f"{'wrote' if stale else 'unchanged:'} runs.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())

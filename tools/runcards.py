"""Run cards into the notebooks: ``python -m tools.runcards``.

``make test`` measures every notebook it runs and writes ``_build/runcards.json``
(:mod:`lmcourse.course.runcard`). This keeps the records of notebooks that passed with
their current code in ``benchmarks/runcards.json`` (a GPU run adds its time beside the
CPU's), then writes each notebook's card, one folded line, as its second cell (tagged
``run-card``, skipped by the slides), in the ``.ipynb``, its twin and a lab's student copy.

    python -m tools.runcards                 # keep this session's records, write the cards
    python -m tools.runcards --check         # exit 1 if a card is missing or stale
    python -m tools.runcards --set-reference # this machine becomes the reference (calibrate)
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

import jupytext
import nbformat

from lmcourse.course.runcard import (
    CARD_TAG,
    CARDS,
    SESSION_CARDS,
    card_cell_source,
    code_digest,
    load_cards,
    save_cards,
)
from lmcourse.course.speed import CALIBRATION_JSON, cpu_model, reference_calibration
from tools.nbtools import ROOT, notebooks, write_student_copy


def card_cell(nb: nbformat.NotebookNode) -> nbformat.NotebookNode | None:
    cards = [c for c in nb.cells if CARD_TAG in c.metadata.get("tags", [])]
    return cards[0] if cards else None


def expected_card(path: Path, cards: dict, reference: float | None) -> str:
    return card_cell_source(cards.get(path.relative_to(ROOT).as_posix()), reference)


def problems(cards: dict | None = None, reference: float | None = None) -> list[str]:
    """Why a notebook's card is missing or stale (empty when every card is current)."""
    cards = load_cards() if cards is None else cards
    reference = reference_calibration() if reference is None else reference
    found = []
    for path in notebooks():
        rel = path.relative_to(ROOT).as_posix()
        nb = nbformat.read(path, as_version=4)
        cell, record = card_cell(nb), cards.get(rel)
        if record is None:
            found.append(f"{rel}: no measured run recorded in benchmarks/runcards.json")
        elif record["code"] != code_digest(nb):
            found.append(f"{rel}: its code changed since the run its card describes "
                         f"({record['date']}, {record['commit']})")
        if cell is None or nb.cells.index(cell) != 1:
            found.append(f"{rel}: no run card as its second cell")
        elif cell.source != expected_card(path, cards, reference):
            found.append(f"{rel}: its card differs from benchmarks/runcards.json")
    return found


def keep_session(cards: dict, session: dict) -> list[str]:
    """Merge the session's records of notebooks whose code is unchanged since they ran."""
    kept = []
    for rel, record in session.items():
        path = ROOT / rel
        if not path.exists() or record["code"] != code_digest(nbformat.read(path, as_version=4)):
            continue
        old = cards.get(rel, {})
        merged = {**old, **record}
        if "gpu" in old and "gpu" not in record:
            merged["gpu"] = old["gpu"]
        if "cpu" not in record and "cpu" in old:
            merged["cpu"] = old["cpu"]
        if "cpu" in merged:
            cards[rel] = merged
            kept.append(rel)
    return kept


def write_cards(cards: dict, reference: float | None) -> list[Path]:
    """Put each notebook's card in place; the notebooks that changed."""
    changed = []
    for path in notebooks():
        nb = nbformat.read(path, as_version=4)
        source = expected_card(path, cards, reference)
        cell = card_cell(nb)
        if cell is not None and cell.source == source and nb.cells.index(cell) == 1:
            continue
        if cell is not None:
            nb.cells.remove(cell)
        cell = nbformat.v4.new_markdown_cell(source)
        cell.metadata = {"slideshow": {"slide_type": "skip"}, "tags": [CARD_TAG]}
        nb.cells.insert(1, cell)
        tmp = path.with_suffix(".ipynb.tmp")
        nbformat.write(nb, tmp)
        tmp.replace(path)
        jupytext.write(nb, path.with_suffix(".py"), fmt="py:percent")
        if path.parent.name == "solutions":
            write_student_copy(path)
        changed.append(path)
    return changed


def set_reference() -> float:
    import statistics

    from lmcourse.course.speed import calibrate
    runs = [calibrate(repeats=9) for _ in range(5)]  # a shared machine drifts by 10-15%
    seconds = statistics.median(runs)
    CALIBRATION_JSON.write_text(json.dumps({
        "calibration_s": round(seconds, 4), "runs_s": [round(r, 4) for r in runs],
        "processor": cpu_model(),
        "date": datetime.date.today().isoformat(),
        "what": "lmcourse.course.speed.calibrate() on the machine whose times the course's "
                "aims are set on (median <= 60 s, none over 90 s, make test <= 20 min); "
                "a time 'normalised' anywhere is what it would take there"}, indent=1) + "\n")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--set-reference", action="store_true")
    args = parser.parse_args(argv)
    if args.set_reference:
        print(f"reference calibration: {set_reference():.4f} s on {cpu_model()}")
        return 0
    if args.check:
        found = problems()
        print("\n".join(found) or "every run card is current")
        return 1 if found else 0
    cards = load_cards()
    session = load_cards(SESSION_CARDS)
    kept = keep_session(cards, session)
    save_cards(cards, CARDS)
    changed = write_cards(cards, reference_calibration())
    print(f"kept {len(kept)} measured run(s) from {SESSION_CARDS.relative_to(ROOT)}; "
          f"wrote {len(changed)} card(s)")
    for line in problems(cards):
        print("  still:", line)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Run cards into the notebooks: ``python -m tools.runcards``.

``make test`` measures every notebook it runs and writes ``_build/runcards.json``
(:mod:`lmcourse.course.runcard`). This keeps the records of notebooks that passed with
their current code in ``benchmarks/runcards.json`` (a GPU run adds its time beside the
CPU's), then writes each notebook's card, one folded line, as its second cell (tagged
``run-card``, skipped by the slides), in the ``.ipynb``, its twin and a lab's student copy.

    python -m tools.runcards                 # keep this session's records, write the cards
                                             # (and the term plan, which reads them)
    python -m tools.runcards --check         # exit 1 if a card is missing or stale
    python -m tools.runcards --set-reference # this machine becomes the reference (calibrate)
    python -m tools.runcards --set-reference --scaled-to-benchmarks
        # the reference is the machine that measured benchmarks/results.json's CPU
        # benchmarks: this machine's calibration divided by how much slower it runs them
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


#: CPU benchmarks shaped like the notebooks' work (small recurrent and attention steps,
#: word2vec, a BERT forward); their committed times name the machine a scaled reference is
SCALING_BENCHMARKS = ("attention", "lstm", "gru", "skipgram", "bert")


def benchmark_slowdown(rounds: int = 3) -> dict:
    """How much slower this machine runs :data:`SCALING_BENCHMARKS` than the machine whose
    times ``benchmarks/results.json`` holds. Each benchmark times two implementations
    (``ours_s``, ``reference_s``: compute only, no loading); each is compared, fastest of
    ``rounds`` here over the recorded time, and the slowdown is their geometric mean."""
    import math

    from benchmarks import suite as _suite  # noqa: F401  (registers the benchmarks)
    from benchmarks.registry import REGISTRY, load_results, run_one
    recorded = load_results()
    rows, processors = {}, set()
    for name in SCALING_BENCHMARKS:
        there = recorded.get(name, {})
        if not (there.get("ours_s") and there.get("reference_s")):
            raise SystemExit(f"benchmarks/results.json has no time for {name!r}: run "
                             f"`python -m benchmarks --only {name}` on the reference machine")
        runs = [run_one(REGISTRY[name]) for _ in range(rounds)]
        for part in ("ours_s", "reference_s"):
            rows[f"{name}.{part[:-2]}"] = {"reference_s": there[part],
                                           "here_s": min(r[part] for r in runs)}
        processors.add(there["machine"]["cpu"])
    if len(processors) != 1:
        raise SystemExit(f"the scaling benchmarks were recorded on several processors "
                         f"({sorted(processors)}): re-run them on one machine")
    ratios = [r["here_s"] / r["reference_s"] for r in rows.values()]
    return {"benchmarks": rows, "processor": processors.pop(),
            "slowdown": math.exp(sum(map(math.log, ratios)) / len(ratios))}


def set_reference(scaled_to_benchmarks: bool = False) -> float:
    """Measure and record the reference calibration (``benchmarks/calibration.json``).

    Plain: the median of 5 calibrations of this machine. Scaled: the median of the
    calibrations taken around :func:`benchmark_slowdown`, divided by that slowdown: the
    calibration the machine that recorded the benchmarks would have measured."""
    import statistics

    from lmcourse.course.speed import calibration_parts
    runs = [calibration_parts(repeats=5)]
    scaling = benchmark_slowdown() if scaled_to_benchmarks else None
    runs += [calibration_parts(repeats=5) for _ in range(4)]
    here = statistics.median(sum(r.values()) for r in runs)
    record = {"calibration_s": round(here / scaling["slowdown"] if scaling else here, 4),
              "processor": scaling["processor"] if scaling else cpu_model(),
              "measured_on": cpu_model(), "date": datetime.date.today().isoformat(),
              "runs_s": [{k: round(v, 4) for k, v in r.items()} for r in runs]}
    if scaling:
        record["scaled_by"] = {
            "slowdown": round(scaling["slowdown"], 3),
            "benchmarks": scaling["benchmarks"],
            "how": "this machine's median calibration divided by the geometric mean of how "
                   "many times slower it ran these benchmarks than the reference processor "
                   "did (benchmarks/results.json); re-run --set-reference on that processor "
                   "to replace the estimate with a measurement"}
    record["what"] = ("lmcourse.course.speed.calibrate() on the machine whose times the "
                      "course's aims are set on (median <= 60 s, none over 90 s, make test "
                      "<= 20 min); a time 'normalised' anywhere is what it would take there")
    tmp = CALIBRATION_JSON.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    tmp.replace(CALIBRATION_JSON)
    return record["calibration_s"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--set-reference", action="store_true")
    parser.add_argument("--scaled-to-benchmarks", action="store_true",
                        help="with --set-reference: the reference is the processor that "
                             "recorded the CPU benchmarks, scaled by how fast this one runs them")
    args = parser.parse_args(argv)
    if args.set_reference:
        seconds = set_reference(args.scaled_to_benchmarks)
        print(f"reference calibration: {seconds:.4f} s "
              f"({json.loads(CALIBRATION_JSON.read_text())['processor']})")
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
    from tools import term_plan  # its running times are these cards'

    if term_plan.write():
        print(f"rewrote {term_plan.PLAN.relative_to(ROOT)} with the new times")
    return 0


if __name__ == "__main__":
    sys.exit(main())

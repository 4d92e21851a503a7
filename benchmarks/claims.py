"""``python -m benchmarks.claims`` (``make claims``; ``make bench`` runs it too): collect the
claims every committed, executed notebook recorded (``lmcourse.course.claims.verdict``) into
``benchmarks/claims.json`` and the site page ``claims.md``. Nothing is executed: the records
are read from the notebooks' outputs, so they are what the notebooks print.

    python -m benchmarks.claims           # rewrite claims.json and claims.md
    python -m benchmarks.claims --check   # exit 1 when either is stale
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import sys
from collections import Counter
from pathlib import Path

from lmcourse.course.claims import recorded
from lmcourse.course.verdict_rules import (
    NO_DIFFERENCE,
    NO_VERDICT,
    NOT_REPRODUCED,
    OWN_VERDICTS,
    PAPER_VERDICTS,
    REPRODUCED,
    format_number,
)

#: every verdict word in the order the page counts them
WORDS = (*PAPER_VERDICTS, *OWN_VERDICTS, NO_VERDICT)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CLAIMS_JSON = HERE / "claims.json"
CLAIMS_MD = ROOT / "claims.md"
#: hand-written, dated notes: when a fix (a leak closed, a baseline tuned) moves verdicts
MOVED = ROOT / "benchmarks" / "moved.md"
TITLE = "What this course reproduces, and what it finds"
#: the fields of claims.json, in this order (DESIGN.md, "Claims ledger", then the details)
FIELDS = ("notebook", "claim", "paper", "ours", "spread", "seeds", "baseline", "verdict",
          "per_seed", "metric", "higher_is_better", "rule", "note", "digits", "tuning")


def collect(paths: list[Path] | None = None) -> list[dict]:
    """Every recorded claim of the committed notebooks, in syllabus order."""
    import nbformat

    from tools import nbtools

    records = []
    for path in paths or nbtools.notebooks():
        nb = nbformat.read(path, as_version=4)
        for record in recorded(nb):
            record = {"notebook": path.resolve().relative_to(ROOT).as_posix(), **record}
            records.append({k: record.get(k) for k in FIELDS})
    return records


def render_json(records: list[dict]) -> str:
    return json.dumps(records, indent=1, ensure_ascii=False) + "\n"


# ---- the site page -------------------------------------------------------------------------

def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return str(text).replace("\\", "\\\\").replace("|", r"\|").replace("\n", " ")


def _figure(mean: float, spread: float | None, seeds: int, digits: int) -> str:
    shown = format_number(mean, digits)
    if spread is not None:
        shown += f" ± {format_number(spread, digits)}"
    return f"{shown} ({seeds} seed{'s' * (seeds != 1)})"


@functools.cache
def _title_key(notebook: str) -> str | None:
    """The key a notebook's title gives it ("9c" in "# 9c · ..."), as its prose names it."""
    path = ROOT / notebook
    if not path.exists():
        return None
    first = json.loads(path.read_text(encoding="utf-8"))["cells"][0]["source"]
    found = re.match(r"#\s+(?:Lab\s+)?(\w+)\s+·", "".join(first))
    return found.group(1) if found else None


def _chapter(notebook: str) -> str:
    """``[9c](chapters/09_bert_prose.ipynb)``: the key its title gives it (else the file's
    number), linked to the notebook's page."""
    name = Path(notebook).name
    number = re.match(r"\d+", name)
    label = _title_key(notebook) or (number.group(0) if number else Path(notebook).stem)
    if notebook.startswith("labs/"):
        label = f"lab {label}"
    return f"[{label}]({notebook})"


def _row(r: dict) -> str:
    digits = 3 if r.get("digits") is None else r["digits"]
    paper = r["paper"]
    if paper is None:
        paper = "–"
    elif isinstance(paper, float):
        paper = format_number(paper, digits)
    base = r["baseline"]
    base = "–" if base is None else (
        f"{base['name']} {format_number(base['figure'], digits)}" if base["seeds"] == 1
        else f"{base['name']} {_figure(base['figure'], base['spread'], base['seeds'], digits)}")
    metric = r.get("metric")
    if metric and r.get("higher_is_better") is not None:
        metric += ", " + ("higher" if r["higher_is_better"] else "lower") + " is better"
    if r.get("tuning"):
        base += f" (settings tried: {r['tuning']['baseline']}; ours {r['tuning']['ours']})"
    ours = _figure(r["ours"], r["spread"], r["seeds"], digits)
    claim = r["claim"] + (f" ({metric})" if metric else "")
    return "| " + " | ".join(_cell(x) for x in (
        _chapter(r["notebook"]), claim, paper, ours, base, f"**{r['verdict']}**")) + " |"


def render_markdown(records: list[dict]) -> str:
    counts = Counter(r["verdict"] for r in records)
    notebooks = list(dict.fromkeys(r["notebook"] for r in records))
    lines = [
        f"# {TITLE}",
        "",
        "<!-- Written by `make claims` (python -m benchmarks.claims) from the committed, "
        "executed notebooks; do not edit by hand. -->",
        "",
        "Every comparison a notebook of this course ends with a verdict is listed here, as "
        "the notebook printed it when it was last executed: the claim, the published figure "
        "where there is one, our figure (the mean over seeds ± half their range), the "
        "strongest simple baseline on the same data, and the verdict. The live notebooks run "
        "on a laptop's CPU budget, so many claims of the papers are tested at a scale far "
        "below theirs: read a verdict as what this run shows, not as a judgement on the "
        "paper.",
        "",
        "**The words.** A claim names the side that should win (\"the LSTM reaches a lower "
        "perplexity than the RNN\"). Where a paper made the claim (the *paper* column says "
        "which, or its figure), the verdict is",
        "",
        f"- **{REPRODUCED}**: ours is ahead of the baseline by more than the seeds scatter;",
        f"- **{NOT_REPRODUCED}**: the baseline is ahead by more than the seeds scatter;",
        f"- **{NO_DIFFERENCE}**: neither is (the seeds overlap).",
        "",
        "Where the claim is the course's own (no paper made it: \"the RNN beats the tuned "
        "n-gram\"), the same three outcomes read **supported**, **contradicted** and "
        "**inconclusive**. A figure from one run (one seed) has no spread to judge a gap "
        "against, and a live run of a notebook's minute is a demonstration, not the "
        f"experiment: both are listed with **{NO_VERDICT}**.",
        "",
        "By default \"more than the seeds scatter\" means that every seed is on the winning "
        "side of every seed of the other; two arms that share seeds and data are compared "
        "pair by pair (every paired difference on one side); a single model scored against "
        "a baseline on the same test examples is decided by a paired bootstrap interval; a "
        "few comparisons use the gap between the means against the two spreads added, and a "
        "few decide on a threshold the notebook states (the JSON records which: `rule`). "
        "Every row links to the notebook that printed it.",
        "",
        f"{len(records)} claims from {len(notebooks)} notebooks: "
        + ", ".join(f"{counts[v]} {v}" for v in WORDS if counts.get(v)) + ".",
        "",
        "| notebook | claim | paper | ours | baseline | verdict |",
        "|---|---|---|---|---|---|",
    ]
    lines += [_row(r) for r in records]
    lines += ["", "The same records, with every seed's figure, are in `benchmarks/claims.json`.",
              ""]
    if MOVED.exists():  # dated notes of what a fix of the science moved, newest first
        lines += ["## What moved, and why", "", MOVED.read_text().strip(), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="only report whether claims.json and claims.md are up to date")
    args = parser.parse_args(argv)
    records = collect()
    outputs = {CLAIMS_JSON: render_json(records), CLAIMS_MD: render_markdown(records)}
    stale = [p for p, text in outputs.items() if not p.exists() or p.read_text() != text]
    if args.check:
        for path in stale:
            print(f"{path.relative_to(ROOT)} is stale: run `make claims`")
        return 1 if stale else 0
    for path in stale:
        path.write_text(outputs[path])
    counts = Counter(r["verdict"] for r in records)
    notebooks = Counter(r["notebook"] for r in records)
    print(f"{len(records)} claims from {len(notebooks)} notebooks ("
          + ", ".join(f"{counts[v]} {v}" for v in WORDS if counts.get(v))
          + "): " + ", ".join(f"{Path(n).stem} {k}" for n, k in notebooks.items()))
    print(f"{'wrote' if stale else 'unchanged:'} "
          f"{', '.join(str(p.relative_to(ROOT)) for p in (stale or outputs))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``python -m benchmarks`` (``make bench``): run the benchmarks, update results.json and
RESULTS.md.

    python -m benchmarks                       # every default benchmark, notebooks included
    python -m benchmarks --only lstm attention # some of them (the others keep their results)
    python -m benchmarks --skip notebooks      # all but the notebook timings
    python -m benchmarks --notebooks chapters/01_backprop.ipynb   # time some notebooks only
    python -m benchmarks --setup               # also time `make setup` in a fresh clone (~2 min)
    python -m benchmarks --list
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmarks import notebooks as _notebooks  # noqa: F401  (registers its benchmarks)
from benchmarks import suite as _suite  # noqa: F401
from benchmarks.registry import (
    OK,
    REGISTRY,
    RESULTS_JSON,
    RESULTS_MD,
    load_results,
    render_markdown,
    run_one,
    save_results,
)


def _merge_notebook_rows(new: dict, old: dict | None) -> dict:
    """Keep the timings of notebooks not run this time (each row says when it was taken)."""
    if not old or old.get("status") != OK or new.get("status") != OK:
        return new
    ran = {r["notebook"] for r in new["rows"]}
    exists = {r["notebook"] for r in old["rows"] if Path(_notebooks.ROOT, r["notebook"]).exists()}
    kept = [r for r in old["rows"] if r["notebook"] not in ran and r["notebook"] in exists]
    rows = sorted(kept + new["rows"], key=lambda r: r["notebook"])
    return {**new, "rows": rows, "ours_s": sum(r["seconds"] for r in rows),
            "summary": _notebooks.notebook_summary(rows)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run just these benchmarks")
    parser.add_argument("--skip", nargs="+", default=[], metavar="NAME")
    parser.add_argument("--notebooks", nargs="+", type=Path, metavar="IPYNB",
                        help="time these notebooks (implies --only notebooks)")
    parser.add_argument("--setup", action="store_true",
                        help="also time `make setup` in a fresh clone")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    args = parser.parse_args(argv)

    if args.list:
        for b in REGISTRY.values():
            print(f"{b.name:<14} {b.title}  [{b.group}]{'' if b.default else ' (opt-in)'}")
        return 0
    names = args.only or [n for n, b in REGISTRY.items() if b.default]
    if args.notebooks:
        names = ["notebooks"]
    if args.setup and "setup" not in names:
        names.append("setup")
    unknown = [n for n in names + args.skip if n not in REGISTRY]
    if unknown:
        parser.error(f"unknown benchmark(s) {unknown}; see --list")
    names = [n for n in names if n not in args.skip]

    results = load_results()
    for name in names:
        print(f"== {name}: {REGISTRY[name].title}", flush=True)
        kwargs = {}
        if name == "notebooks" and args.notebooks:
            kwargs["paths"] = [p.resolve() for p in args.notebooks]
        record = run_one(REGISTRY[name], **kwargs)
        if name == "notebooks":
            record = _merge_notebook_rows(record, results.get(name))
            if record["status"] == OK:  # the machine's speed, so other machines can compare
                from lmcourse.course.speed import calibrate
                record["calibration_s"] = round(calibrate(), 4)
        results[name] = record
        line = record.get("summary") if record["status"] == OK else record.get("message")
        ratio = f" ratio {record['ratio']:.2f}x" if record.get("ratio") is not None else ""
        print(f"   {record['status']}{ratio}: {line}", flush=True)
        save_results(results)  # after each benchmark: an interrupted run keeps what it measured
    RESULTS_MD.write_text(render_markdown(results))
    print(f"wrote {RESULTS_JSON} and {RESULTS_MD}")
    failed = [n for n in names if results[n]["status"] == "error"]
    if failed:
        print(f"benchmark(s) with errors: {failed}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

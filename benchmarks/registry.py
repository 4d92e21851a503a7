"""The benchmark registry: register, run (isolating failures), store, report.

A benchmark is a function returning a :class:`Result`: rows for a detail table and, when
it compares our implementation with a reference, the headline times and their ratio.
It imports what it measures inside its body: when that code does not exist yet, the
``ImportError`` records the benchmark as "not yet available" with the missing name, and
the run goes on. Times are taken with the course's one timer, :mod:`lmcourse.timing`.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS_JSON = HERE / "results.json"
RESULTS_MD = HERE / "RESULTS.md"

OK, MISSING, ERROR = "ok", "not yet available", "error"


@dataclass
class Result:
    """What a benchmark measured. ``ours_s``/``reference_s`` are the headline times in
    seconds; ``ratio`` is ours / reference (or another ratio named in ``summary``)."""

    summary: str
    rows: list[dict] = field(default_factory=list)
    ours_s: float | None = None
    reference_s: float | None = None
    ratio: float | None = None
    reference: str = ""
    notes: str = ""


@dataclass
class Benchmark:
    name: str
    title: str
    group: str  # "implementations", "efficiency", "notebooks", "setup"
    fn: Callable[..., Result]
    default: bool = True  # run without being asked for (setup time is opt-in)


REGISTRY: dict[str, Benchmark] = {}


def benchmark(name: str, title: str, *, group: str = "implementations",
              default: bool = True):
    """Register ``fn`` as benchmark ``name``."""

    def register(fn: Callable[..., Result]) -> Callable[..., Result]:
        if name in REGISTRY:
            raise ValueError(f"benchmark {name!r} registered twice")
        REGISTRY[name] = Benchmark(name, title, group, fn, default)
        return fn

    return register


def machine() -> dict:
    """Where the numbers were measured: CPU model, cores, load, library versions."""
    from lmcourse.course.speed import cpu_model

    info = {"cpu": cpu_model(), "cores": os.cpu_count(), "python": platform.python_version(),
            "platform": platform.platform(terse=True)}
    try:
        info["load_average"] = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        pass
    try:
        import torch

        info["torch"] = torch.__version__
        info["torch_threads"] = torch.get_num_threads()
        info["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except ImportError:
        pass
    return info


def run_one(bench: Benchmark, **kwargs) -> dict:
    """Run one benchmark; never raises. Returns its JSON-ready record."""
    record = {"name": bench.name, "title": bench.title, "group": bench.group,
              "measured_at": dt.datetime.now().isoformat(timespec="seconds"),
              "machine": machine()}
    start = time.perf_counter()
    try:
        result = bench.fn(**kwargs)
    except (ImportError, AttributeError) as err:
        # a module that exists but does not (yet) have what the benchmark uses
        return {**record, "status": MISSING, "message": f"{type(err).__name__}: {err}"}
    except Exception as err:  # noqa: BLE001 - one broken benchmark must not stop the others
        tb = traceback.format_exc(limit=3)
        return {**record, "status": ERROR, "message": f"{type(err).__name__}: {err}",
                "traceback": tb}
    return {**record, "status": OK, "seconds": round(time.perf_counter() - start, 2),
            **asdict(result)}


def load_results(path: Path = RESULTS_JSON) -> dict[str, dict]:
    if not path.exists():
        return {}
    return {r["name"]: r for r in json.loads(path.read_text())["benchmarks"]}


def save_results(results: dict[str, dict], path: Path = RESULTS_JSON) -> None:
    ordered = [results[n] for n in sorted(results, key=_order)]
    path.write_text(json.dumps({"benchmarks": ordered}, indent=1, default=float) + "\n")


def _order(name: str) -> tuple[int, str]:
    names = list(REGISTRY)
    return (names.index(name), name) if name in names else (len(names), name)


# ---- the report -----------------------------------------------------------------------------

def _fmt_time(s: float | None) -> str:
    if s is None:
        return "–"
    return f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.2f} s"


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1e-3 or abs(v) >= 1e4 else f"{v:.4g}"
    return str(v)


def _table(rows: list[dict]) -> list[str]:
    if not rows:
        return []
    cols = list(dict.fromkeys(k for r in rows for k in r))
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_fmt(r.get(c, "")) for c in cols) + " |" for r in rows]
    return lines


def _where(r: dict) -> str:
    m = r.get("machine", {})
    load = m.get("load_average")
    return (f"{m.get('cpu', '?')}, {m.get('cores', '?')} cores"
            + (f", load {load[0]}" if load else "") + f", {r.get('measured_at', '?')}")


def render_markdown(results: dict[str, dict]) -> str:
    """RESULTS.md from the stored results."""
    records = [results[n] for n in sorted(results, key=_order)]
    machines = {(r["machine"].get("cpu"), r["machine"].get("cores"), r["machine"].get("torch"))
                for r in records if "machine" in r}
    out = ["# Benchmarks", "",
           "Written by `make bench` (`python -m benchmarks`); do not edit by hand. Each entry "
           "says when and on what it was measured. Ratios compare our implementation with the "
           "reference **in the same process on the same inputs**: read the ratio, not the "
           "absolute times, which depend on the machine and on what else it runs.", ""]
    if machines:
        out.append("Measured on: " + "; ".join(
            f"{cpu} ({cores} cores, torch {torch})" for cpu, cores, torch in sorted(
                machines, key=str)) + ".")
        out.append("")

    ok = [r for r in records if r["status"] == OK]
    for group, heading in [("implementations", "Our implementations vs the references"),
                           ("efficiency", "Size and speed ratios (chapters 12–13)")]:
        rows = [r for r in ok if r["group"] == group]
        if not rows:
            continue
        out += [f"## {heading}", "",
                "| benchmark | ours | reference | ratio | what the ratio is |",
                "|---|---|---|---|---|"]
        for r in rows:
            ratio = f"{r['ratio']:.2f}×" if r.get("ratio") is not None else "–"
            out.append(f"| {r['title']} | {_fmt_time(r.get('ours_s'))} | "
                       f"{_fmt_time(r.get('reference_s'))} | {ratio} | {r['summary']} |")
        out.append("")
        for r in rows:
            out += [f"### {r['title']}", "", f"Reference: {r.get('reference') or '–'}. "
                    f"Measured {_where(r)}.", ""]
            if r.get("notes"):
                out += [r["notes"], ""]
            out += _table(r.get("rows", [])) + [""]

    for r in [r for r in ok if r["group"] in ("notebooks", "setup")]:
        out += [f"## {r['title']}", "", r["summary"], "", f"Measured {_where(r)}.", ""]
        if r.get("notes"):
            out += [r["notes"], ""]
        out += _table(r.get("rows", [])) + [""]

    pending = [(r["title"], r["status"], r["message"]) for r in records if r["status"] != OK]
    pending += [(b.title, "not run", f"opt-in: `python -m benchmarks --only {b.name}`"
                 + (" or `make bench BENCH_FLAGS=--setup`" if b.name == "setup" else ""))
                for b in REGISTRY.values() if b.name not in results]
    if pending:
        out += ["## Not measured", "", "| benchmark | status | why |", "|---|---|---|"]
        out += [f"| {title} | {status} | {why} |" for title, status, why in pending]
        out.append("")
    return "\n".join(out)

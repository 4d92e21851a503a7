"""Running reference runs: ``make reference [NAME=...] [JOBS=2] [LIST=1]``.

Picks references by name or glob (``bench-*``), estimates their time from the committed
runs' measured wall time, and runs them ``JOBS`` at a time, each in its own process with one
torch thread (on a 2-core CPU two processes of one thread are much faster than one of two),
longest first. One reference is :func:`lmcourse.course.reference.running.run`.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import sys
import tempfile
import time
from pathlib import Path

from lmcourse.course.reference.registry import REFERENCES, get
from lmcourse.course.reference.result import ROOT, load, result_path
from lmcourse.course.reference.running import run, verify

__all__ = ["expected_seconds", "main", "run_parallel", "schedule", "select"]


def select(patterns: list[str]) -> list[str]:
    """The registered references matching ``patterns`` (names or shell globs such as
    ``bench-*``), in registry order; every reference when ``patterns`` is empty."""
    known = sorted(REFERENCES)
    if not patterns:
        return known
    chosen: list[str] = []
    for pattern in patterns:
        hits = fnmatch.filter(known, pattern)
        if not hits:
            raise KeyError(f"no reference matches {pattern!r}; known: {known} "
                           f"(`make reference LIST=1` lists them)")
        chosen += [h for h in hits if h not in chosen]
    return chosen


def expected_seconds(name: str) -> tuple[float, str]:
    """How long ``make reference NAME=name`` takes: the committed run's measured wall time
    when there is one (and which device measured it), else the declared estimate."""
    ref = get(name)
    if result_path(name).exists():
        result = load(name)
        return float(result.wall_s), f"measured, {result.device_kind}"
    return ref.seconds_per_seed * len(ref.seeds), "estimated"


def schedule(durations: dict[str, float], jobs: int) -> tuple[list[list[str]], float]:
    """Longest-first assignment of runs to ``jobs`` workers; returns each worker's runs and
    the wall time, the largest worker total (the makespan of greedy LPT scheduling)."""
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    workers: list[list[str]] = [[] for _ in range(jobs)]
    totals = [0.0] * jobs
    for name in sorted(durations, key=lambda n: (-durations[n], n)):
        w = totals.index(min(totals))
        workers[w].append(name)
        totals[w] += durations[name]
    return workers, max(totals)


def run_parallel(names: list[str], jobs: int, log_dir: Path | None = None) -> int:
    """Run ``names`` in ``jobs`` processes of one torch thread each (on a 2-core CPU two
    processes of one thread are much faster than one of two, or two of two), longest
    first; each run's output goes to a log file. Returns the number of failed runs."""
    import subprocess
    from concurrent.futures import ThreadPoolExecutor

    durations = {n: expected_seconds(n)[0] for n in names}
    _, wall = schedule(durations, jobs)
    log_dir = Path(log_dir or tempfile.mkdtemp(prefix="lmcourse-reference-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    print(f"== {len(names)} reference runs in {jobs} processes of 1 thread: about "
          f"{wall / 60:.0f} min wall ({sum(durations.values()) / 60:.0f} process-min); "
          f"logs in {log_dir}", flush=True)
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", TQDM_DISABLE="1",
               TOKENIZERS_PARALLELISM="false")
    start, done, failed = time.perf_counter(), [], []

    def one(name: str) -> None:
        tick = time.perf_counter()
        with open(log_dir / f"{name}.log", "w") as log:
            code = subprocess.call([sys.executable, "-m", "lmcourse.course.reference", name],
                                   stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
        (done if code == 0 else failed).append(name)
        status = "ok" if code == 0 else f"FAILED (exit {code}; see {log_dir / name}.log)"
        print(f"   [{len(done) + len(failed)}/{len(names)}] {name}: {status}, "
              f"{(time.perf_counter() - tick) / 60:.1f} min "
              f"(elapsed {(time.perf_counter() - start) / 60:.1f} min)", flush=True)

    with ThreadPoolExecutor(jobs) as pool:
        list(pool.map(one, sorted(names, key=lambda n: -durations[n])))
    print(f"   done: {len(done)} written, {len(failed)} failed, "
          f"{(time.perf_counter() - start) / 60:.1f} min wall", flush=True)
    return len(failed)


def main(argv: list[str] | None = None) -> int:
    """``make reference [NAME=...] [JOBS=2]``: run reference runs from scratch and write
    them. NAME takes names or globs (``bench-*``); JOBS runs that many at once."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("names", nargs="*", help="references or globs to run (default: all)")
    parser.add_argument("--list", action="store_true", help="list them with time estimates")
    parser.add_argument("--verify", action="store_true", help="only check the committed ones")
    parser.add_argument("--jobs", type=int, default=1,
                        help="runs at once, each in its own single-thread process")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    try:
        names = select(args.names)
    except KeyError as err:
        parser.error(err.args[0])
    if args.list:
        for n in names:
            ref = REFERENCES[n]
            seconds, how = expected_seconds(n)
            print(f"{n:<20} {ref.title}  (~{seconds / 60:.0f} min, {how}; seeds "
                  f"{list(ref.seeds)})")
        durations = {n: expected_seconds(n)[0] for n in names}
        walls = ", ".join(f"{j} at once ~{schedule(durations, j)[1] / 60:.0f} min" for j in (2, 4))
        print(f"{len(names)} references: ~{sum(durations.values()) / 60:.0f} min one after "
              f"another; {walls} (JOBS={args.jobs})")
        return 0
    if args.verify:
        for n in names:
            print(f"{n}: " + "; ".join(verify(n)))
        return 0
    if args.jobs > 1 and len(names) > 1:
        return 1 if run_parallel(names, args.jobs) else 0
    for n in names:
        run(n, progress=os.environ.get("TQDM_DISABLE", "") not in ("1", "true"))
    return 0

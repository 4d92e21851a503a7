"""Per-notebook execution time on this machine, and setup time from a fresh clone."""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.registry import Result, benchmark

ROOT = Path(__file__).resolve().parents[1]


@benchmark("notebooks", "Notebook execution times", group="notebooks")
def notebooks(paths: list[Path] | None = None, budget: float = 120.0) -> Result:
    """Execute each notebook top to bottom in a fresh kernel (the committed file is not
    touched) and time it, as the test suite does."""
    import nbformat

    from tools import nbtools  # needs the dev extras (nbclient)

    paths = paths or nbtools.notebooks()
    # `make test` runs 2 kernels at once, each with its share of the cores: time them so too
    saved = os.environ.get("OMP_NUM_THREADS")
    os.environ["OMP_NUM_THREADS"] = str(kernel_threads())
    try:
        rows = []
        for path in paths:
            nb = nbformat.read(path, as_version=4)
            try:
                seconds = nbtools.execute(nb, path.parent)
                status = "ok" if seconds <= budget else f"over the {budget:.0f} s budget"
            except Exception as err:  # noqa: BLE001 - report and go on with the next notebook
                seconds, status = float("nan"), f"failed: {type(err).__name__}"
            rows.append({"notebook": path.relative_to(ROOT).as_posix(),
                         "seconds": round(seconds, 1), "status": status,
                         "load": round(os.getloadavg()[0], 2),
                         "measured_at": dt.datetime.now().isoformat(timespec="seconds")})
            print(f"  {rows[-1]['notebook']}: {seconds:.1f} s ({status})", flush=True)
    finally:
        if saved is None:
            os.environ.pop("OMP_NUM_THREADS")
        else:
            os.environ["OMP_NUM_THREADS"] = saved
    return Result(summary=notebook_summary(rows, budget), rows=rows,
                  ours_s=sum(r["seconds"] for r in rows if r["seconds"] == r["seconds"]))


def kernel_threads() -> int:
    """The torch threads `make test` gives each of its 2 parallel kernels: cores / 2."""
    return max(1, (os.cpu_count() or 2) // 2)


def notebook_summary(rows: list[dict], budget: float = 120.0) -> str:
    """The table's caption, with total, median and slowest computed from ``rows``."""
    times = sorted(r["seconds"] for r in rows if r["seconds"] == r["seconds"])
    total = sum(times)
    median = times[len(times) // 2] if times else float("nan")
    return (f"Wall time of each notebook executed one after another in a fresh kernel by "
            f"nbclient, each kernel with {kernel_threads()} torch thread(s) as `make test` "
            f"gives each of its 2 parallel kernels; CPU budget {budget:.0f} s each. "
            f"{len(times)} notebooks: total {total:.0f} s ({total / 60:.1f} min; `make test` "
            f"runs two at a time), median {median:.0f} s, slowest "
            f"{max(times, default=float('nan')):.0f} s. `load` is the 1-minute load average "
            "when it finished: on a shared machine times grow with it.")


#: a training rate as the notebooks print it: "43,305 tokens/s", "2,231 examples/s", ...
RATE = re.compile(r"\d[\d,.]*\s*[kKM]?\s*(?:tokens|characters|examples|pairs|words|"
                  r"sentences|sequences)/s\b")
#: the heading of a printed table with a rate column ("... tokens/s  train s")
RATE_HEADING = re.compile(r"\b(?:tokens|characters|examples|pairs|words|sentences)/s\b")


def printed_rates(nb) -> list[str]:
    """The lines of a notebook's outputs that report a training rate: every line with
    a number followed by ``tokens/s`` (or characters, examples, ...), and every table whose
    heading has such a column, heading and rows (up to the next blank line)."""
    found: list[str] = []
    for cell in nb.cells:
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            text = out.get("text", "") if out.get("output_type") == "stream" else ""
            lines = text.splitlines()
            i = 0
            while i < len(lines):
                line = lines[i].strip()
                if RATE.search(line):
                    found.append(line)
                elif RATE_HEADING.search(line):
                    j = i + 1
                    while j < len(lines) and lines[j].strip():
                        j += 1
                    found.extend(x.strip() for x in lines[i:j])
                    i = j
                i += 1
    return found


@benchmark("throughput", "Training rates printed by the notebooks", group="notebooks")
def throughput(paths: list[Path] | None = None) -> Result:
    """Collect the tokens/s (examples/s, ...) every training run printed in the committed,
    executed notebooks: the rates students see, measured when each notebook was built."""
    import nbformat

    from tools import nbtools

    paths = paths or nbtools.notebooks()
    rows = [{"notebook": path.relative_to(ROOT).as_posix(), "printed": line[:140]}
            for path in paths for line in printed_rates(nbformat.read(path, as_version=4))]
    return Result(
        summary="Every line of a committed notebook's outputs that reports a training rate "
                "(tokens/s, characters/s, examples/s, ...), with its table when the rate is a "
                "column. Notebooks are built with one torch thread (`OMP_NUM_THREADS=1`, as "
                "`make test` runs them); a build on a busy machine prints lower rates.",
        rows=rows, ours_s=None)


@benchmark("setup", "Setup from a fresh clone", group="setup", default=False)
def setup_time(python: str = "python3") -> Result:
    """``git clone`` the repository into a temporary folder and time ``make setup`` there
    (a new .venv with CPU torch and the pinned dependencies); the folder is removed."""
    tmp = Path(tempfile.mkdtemp(prefix="lmcourse-setup-"))
    try:
        start = time.perf_counter()
        subprocess.run(["git", "clone", "-q", str(ROOT), str(tmp / "lmcourse")], check=True)
        cloned = time.perf_counter() - start
        start = time.perf_counter()
        # anything Jupyter would write outside the clone goes to a throw-away folder, not ~/.local
        env = {**os.environ, "JUPYTER_DATA_DIR": str(tmp / "jupyter")}
        proc = subprocess.run(["make", "setup", f"PYTHON={python}"], cwd=tmp / "lmcourse",
                              capture_output=True, text=True, env=env)
        seconds = time.perf_counter() - start
        if proc.returncode != 0:
            raise RuntimeError(f"make setup failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
        venv = tmp / "lmcourse" / ".venv"
        size = sum(f.stat().st_size for f in venv.rglob("*") if f.is_file()) / 1e9
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return Result(
        summary=f"`git clone` then `make setup` (venv, CPU torch, pinned dependencies, "
                f"kernel): {seconds:.0f} s; the environment takes {size:.1f} GB.",
        rows=[{"step": "git clone", "seconds": round(cloned, 1)},
              {"step": "make setup", "seconds": round(seconds, 1)},
              {"step": ".venv size (GB)", "seconds": round(size, 2)}],
        ours_s=seconds,
        notes="pip's download cache was as this machine had it (a first install on a new "
              "machine also downloads about 1 GB).")

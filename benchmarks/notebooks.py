"""Per-notebook execution time on this machine, and setup time from a fresh clone."""

from __future__ import annotations

import datetime as dt
import os
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
    rows = []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        try:
            seconds = nbtools.execute(nb, path.parent)
            status = "ok" if seconds <= budget else f"over the {budget:.0f} s budget"
        except Exception as err:  # noqa: BLE001 - report and go on with the next notebook
            seconds, status = float("nan"), f"failed: {type(err).__name__}"
        rows.append({"notebook": path.relative_to(ROOT).as_posix(), "seconds": round(seconds, 1),
                     "status": status, "load": round(os.getloadavg()[0], 2),
                     "measured_at": dt.datetime.now().isoformat(timespec="seconds")})
        print(f"  {rows[-1]['notebook']}: {seconds:.1f} s ({status})", flush=True)
    total = sum(r["seconds"] for r in rows if r["seconds"] == r["seconds"])
    return Result(
        summary=f"Wall time of each notebook executed in a fresh kernel by nbclient (as "
                f"`make test` does), CPU budget {budget:.0f} s each. `load` is the 1-minute "
                "load average when it finished: on a shared machine times grow with it.",
        rows=rows, ours_s=total)


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
        # the kernel `make setup` registers goes to a throw-away Jupyter folder, not ~/.local
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

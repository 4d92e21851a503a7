"""How fast is this machine? A short calibration, so notebook timings compare across machines.

Machines of one kind differ in speed by 1.5x: the same commit's notebooks ran 78-96 s on
one and 121-144 s on another. A wall time alone is therefore a benchmark, never a pass/fail
test. :func:`calibrate` times a fixed, single-thread workload shaped like a notebook's
training step (small matrix products forward and backward, an optimiser step, Python
overhead between them); a notebook's *normalised* time is its wall time scaled by
``reference / calibration``, i.e. what it would have taken on the reference machine, whose
calibration ``benchmarks/calibration.json`` records (``python -m tools.runcards
--set-reference`` measures it). The course's aims (median <= 60 s, none over 90 s, ``make
test`` <= 20 min) are set on that machine's times.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path

import torch

__all__ = ["CALIBRATION_JSON", "calibrate", "cpu_model", "normalised", "reference_calibration"]

RESULTS_JSON = Path(__file__).resolve().parents[2] / "benchmarks" / "results.json"
CALIBRATION_JSON = RESULTS_JSON.with_name("calibration.json")


def cpu_model() -> str:
    """The processor's model name (``/proc/cpuinfo``'s, else what ``platform`` knows)."""
    import platform

    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _workload(steps: int = 600) -> None:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(64, 256, generator=generator)
    w1 = torch.randn(256, 256, generator=generator, requires_grad=True)
    w2 = torch.randn(256, 64, generator=generator, requires_grad=True)
    opt = torch.optim.SGD([w1, w2], lr=1e-4)
    for _ in range(steps):
        loss = (torch.tanh(x @ w1) @ w2).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


def calibrate(repeats: int = 5) -> float:
    """Median seconds of the fixed workload on one torch thread (after one warm-up run).

    One thread, because ``make test`` gives each of its two kernels one core; the median,
    because a single run can be hit by another process."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        _workload(20)
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            _workload()
            times.append(time.perf_counter() - start)
    finally:
        torch.set_num_threads(threads)
    return statistics.median(times)


def reference_calibration(results: Path = RESULTS_JSON,
                          recorded: Path = CALIBRATION_JSON) -> float | None:
    """The reference machine's calibration: ``benchmarks/calibration.json``'s, else the one
    ``make bench`` recorded with its notebook timings (``$LMCOURSE_CALIBRATION_REFERENCE_S``
    overrides both; None if there is none)."""
    if os.environ.get("LMCOURSE_CALIBRATION_REFERENCE_S"):
        return float(os.environ["LMCOURSE_CALIBRATION_REFERENCE_S"])
    try:
        return float(json.loads(recorded.read_text())["calibration_s"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    try:
        records = json.loads(results.read_text())["benchmarks"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    seconds = next((r.get("calibration_s") for r in records if r.get("name") == "notebooks"),
                   None)
    return float(seconds) if seconds else None


def normalised(seconds: float, calibration: float, reference: float | None) -> float:
    """``seconds`` on this machine as seconds on the reference machine:
    ``seconds * reference / calibration`` (unchanged when there is no reference)."""
    if not reference or calibration <= 0:
        return seconds
    return seconds * reference / calibration

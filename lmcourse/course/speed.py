"""How fast is this machine? A short calibration, so notebook timings compare across machines.

Machines of one kind differ in speed by up to 3x, and one machine drifts by 10-50% from
hour to hour with its neighbours' load. A wall time alone is therefore a benchmark, never a
pass/fail test. :func:`calibrate` times the two kinds of work the notebooks do, on one
thread: many small training steps whose cost is Python and dispatch overhead (matrix
products of 64 x 256), and the forward and backward pass of a BERT-sized encoder whose cost
is large matrix products (the part where processors differ most: vector width, cache). It
keeps the fastest of its repeats, because a neighbour can only slow a run down.

A notebook's *normalised* time is its wall time scaled by ``reference / calibration``: what
it would have taken on the reference machine, whose calibration ``benchmarks/calibration.json``
records (``python -m tools.runcards --set-reference`` measures it on the machine you are on).
The course's aims (median <= 60 s, none over 90 s, ``make test`` <= 20 min) are set on that
machine's times.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import torch

__all__ = [
    "CALIBRATION_JSON", "calibrate", "calibration_parts", "cpu_model", "normalised",
    "reference_calibration",
]

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


def _small_steps(steps: int = 600) -> None:
    """Overhead-bound: 600 SGD steps of a 64 x 256 two-layer net."""
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


def _encoder_steps(steps: int = 2) -> None:
    """Compute-bound: AdamW steps of a 2-layer encoder (d = 256, 4 heads, FFN 1,024) with a
    2,000-piece output layer, on 16 sequences of 64 tokens."""
    generator = torch.Generator().manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, batch_first=True)
    encoder = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    head = torch.nn.Linear(256, 2000)
    opt = torch.optim.AdamW([*encoder.parameters(), *head.parameters()], lr=1e-4)
    x = torch.randn(16, 64, 256, generator=generator)
    for _ in range(steps):
        loss = head(encoder(x)).logsumexp(-1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


def calibration_parts(repeats: int = 5) -> dict[str, float]:
    """The fastest of ``repeats`` runs of each workload, in seconds, on one torch thread
    (after a warm-up run). One thread, because ``make test`` gives each of its two kernels
    one core; the fastest, because another process can only make a run slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    parts = {}
    try:
        for name, work, warm_up in (("small_steps", _small_steps, 20),
                                    ("encoder_steps", _encoder_steps, 1)):
            work(warm_up)
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                work()
                times.append(time.perf_counter() - start)
            parts[name] = min(times)
    finally:
        torch.set_num_threads(threads)
    return parts


def calibrate(repeats: int = 5) -> float:
    """Seconds for the calibration: the small-step part plus the encoder part, each the
    fastest of ``repeats`` (about 1 s on a 2-core cloud machine)."""
    return sum(calibration_parts(repeats).values())


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

"""The course's one timer: how long a piece of code takes, measured fairly.

Three habits make a wall-clock measurement worth printing:

* **warm up** first: the first calls pay for memory allocation, kernel selection and
  caches, which is not what we want to compare;
* **take the median** of several repeats: one slow call (the machine did something else)
  moves the mean, hardly the median;
* on a GPU, **synchronise** before reading the clock: CUDA kernels run asynchronously, so
  without ``torch.cuda.synchronize()`` we would time the launch, not the work.

Comparing two implementations, :func:`compare` also **alternates** them (A, B, A, B, ...)
so a change in the machine's load during the measurement hits both alike: read the
ratio, not the absolute times.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch

__all__ = ["compare", "cpu_has_bf16", "lm_training_step", "measure", "synchronize"]

BF16_FLAGS = ("amx_bf16", "avx512_bf16")  # /proc/cpuinfo flags of native bfloat16 units


def cpu_has_bf16(cpuinfo: str | None = None) -> bool | None:
    """Whether this CPU multiplies bfloat16 natively (Intel AMX or AVX-512 BF16, read from
    ``/proc/cpuinfo``'s flags, or from ``cpuinfo`` when given); ``None`` where the flags
    cannot be read (not Linux)."""
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo") as f:
                cpuinfo = f.read()
        except OSError:
            return None
    flags = {word for line in cpuinfo.splitlines() if line.startswith("flags")
             for word in line.split(":", 1)[1].split()}
    return any(flag in flags for flag in BF16_FLAGS)


def synchronize(device: torch.device | str | None = None) -> None:
    """Wait for the GPU's queued work to finish (a no-op on the CPU)."""
    if device is None:
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()
    elif torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def _once(fn: Callable[[], object], device: torch.device | str | None) -> float:
    start = time.perf_counter()
    fn()
    synchronize(device)
    return time.perf_counter() - start


def measure(fn: Callable[[], object], repeats: int = 5, warmup: int = 1,
            device: torch.device | str | None = None) -> float:
    """Median wall time of ``fn()`` in **seconds** over ``repeats`` calls, after ``warmup``
    untimed calls; the GPU is synchronised around every call."""
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    for _ in range(warmup):
        fn()
    synchronize(device)
    return statistics.median(_once(fn, device) for _ in range(repeats))


def compare(a: Callable[[], object], b: Callable[[], object], repeats: int = 5,
            warmup: int = 1, device: torch.device | str | None = None) -> tuple[float, float]:
    """Median wall times (seconds) of ``a()`` and ``b()``, timed in alternation after
    ``warmup`` untimed rounds; ``t_a / t_b`` is the ratio to report."""
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    for _ in range(warmup):
        a()
        b()
    synchronize(device)
    times_a, times_b = [], []
    for _ in range(repeats):
        times_a.append(_once(a, device))
        times_b.append(_once(b, device))
    return statistics.median(times_a), statistics.median(times_b)


def lm_training_step(model: torch.nn.Module, batch_size: int, seq_len: int, vocab_size: int,
                     seed: int = 0) -> Callable[[], None]:
    """One training step of a language model ``logits, state = model(x)`` on fixed random
    ids (forward, next-token cross-entropy, backward, an Adam update), as a function to time
    with :func:`measure` or :func:`compare`: ``batch_size * seq_len / seconds`` is its
    training throughput in tokens per second."""
    device = next(model.parameters()).device
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(vocab_size, (batch_size, seq_len + 1), generator=g).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)

    def step() -> None:
        logits, _ = model(ids[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab_size),
                                                 ids[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()

    return step

"""``make teacher`` two at a time: each artifact computed in a child process of
``python -m lmcourse.course.artifacts NAME`` with its share of the cores, longest estimate
first (:func:`build_in_processes`)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Protocol


class Artifact(Protocol):
    """What scheduling reads of :class:`lmcourse.course.artifacts.Artifact`."""

    name: str
    estimate: str


def _estimated_seconds(artifact: Artifact) -> float:
    """The seconds an artifact's estimate names ("about 30 s per seed": three seeds), so
    the longest start first; 0 when it names none."""
    found = re.search(r"(\d+) s( per seed)?", artifact.estimate)
    return float(found[1]) * (3 if found[2] else 1) if found else 0.0


def _child_command(artifact: Artifact, check: bool) -> list[str]:
    return [sys.executable, "-m", "lmcourse.course.artifacts", *(["--check"] if check else []),
            artifact.name]


def build_in_processes(chosen: Sequence[Artifact], jobs: int, check: bool,
                        command: Callable[[Artifact, bool], list[str]] = _child_command) -> None:
    """Compute the artifacts ``jobs`` at a time, each in a child process of this module
    with its share of the cores (small models gain less from a second thread than from a
    second process); each child's lines are printed whole when it ends. The cache's writes
    are atomic, so two children never leave a half-written entry."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    threads = max(1, (cores or 1) // jobs)
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    waiting, running, failed = sorted(chosen, key=_estimated_seconds, reverse=True), {}, []
    while waiting or running:
        while waiting and len(running) < jobs:
            a = waiting.pop(0)
            log = tempfile.TemporaryFile(mode="w+")  # not a pipe: a long log cannot block it
            running[a.name] = (subprocess.Popen(command(a, check), env=env, stdout=log,
                                                stderr=subprocess.STDOUT, text=True), log)
        time.sleep(0.2)
        for name, (child, log) in list(running.items()):
            if child.poll() is None:
                continue
            del running[name]
            log.seek(0)
            lines = [line for line in log.read().splitlines() if "artifacts ready in" not in line]
            log.close()
            print("\n".join(lines), flush=True)
            if child.returncode:
                failed.append(name)
    if failed:
        raise SystemExit(f"artifacts that failed: {failed} (their output is above; "
                         "`python -m lmcourse.course.artifacts NAME` computes one alone)")

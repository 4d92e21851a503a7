"""What a reference run leaves behind, read and written in one place: :class:`ReferenceResult`.

``reference/<name>/result.json`` holds a run's recipe, the device and torch version it ran on,
its seeds, every seed's held-out curve (``[step, training seconds, metric]`` points), every
step's training loss, the final metrics by name, the baselines' figures on the same split,
and, from this version on, a hash of the code that produced it and when it was made. In the
file, seeds are JSON keys (``"0"``); in a :class:`ReferenceResult` they are ``int``. Files
written before ``code_hash`` and ``created`` existed load with both ``None``.

This module is the only reader of ``result.json`` (a test checks): notebooks, benchmarks and
tests call :func:`load` and read attributes, so a renamed field fails where it is read.
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

__all__ = ["ReferenceResult", "committed", "load", "load_weights", "reference_dir", "result_path",
           "run_of", "write_atomic"]

ROOT = Path(__file__).resolve().parents[3]
Curve = list[list[float]]  # [step, training seconds, held-out metric]


def reference_dir() -> Path:
    """``reference/`` at the top of the course (``$LMCOURSE_REFERENCE_DIR`` moves it)."""
    return Path(os.environ.get("LMCOURSE_REFERENCE_DIR") or ROOT / "reference")


def result_path(name: str) -> Path:
    return reference_dir() / name / "result.json"


def committed(root: Path | None = None) -> list[ReferenceResult]:
    """Every committed reference run under ``root`` (default :func:`reference_dir`), by name."""
    root = reference_dir() if root is None else root
    return [ReferenceResult.from_json(json.loads(path.read_text()))
            for path in sorted(root.glob("*/result.json"))]


def run_of(path: str) -> str | None:
    """The run whose result file ``path`` is, given relative to the course as a run card
    records what a notebook read (``reference/<name>/result.json``); None for any other."""
    parts = Path(path).parts
    if len(parts) == 3 and parts[0] == "reference" and parts[2] == "result.json":
        return parts[1]
    return None


def write_atomic(path: Path, write: Callable[[str], None]) -> None:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then rename it into place:
    a reader never sees half a file and an interrupted run leaves the old one intact."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


@dataclass
class ReferenceResult:
    """One committed reference run (see the module's docstring for the fields)."""

    name: str
    title: str
    recipe: dict[str, Any]
    device: str
    torch: str
    wall_s: float
    seeds: list[int]
    curves: dict[int, Curve]
    train_loss: dict[int, list[float]]
    metrics: dict[int, dict[str, Any]]
    baselines: dict[str, float]
    first_steps: int
    tolerance: float
    notes: list[str] = field(default_factory=list)
    command: str = ""
    code_hash: str | None = None
    created: str | None = None
    #: where seed 0 trained off the CPU (a GPU draws other dropout masks): its first
    #: ``first_steps`` losses replayed on a CPU when the result was assembled, which the
    #: replay checks compare with instead (``{"device": ..., "train_loss": [...]}``)
    cpu_replay: dict[str, Any] | None = None

    def first_losses(self) -> list[float]:
        """Seed 0's first ``first_steps`` training losses as a CPU repeats them: the run's
        own, or its CPU replay where seed 0 trained on a GPU."""
        losses = self.cpu_replay["train_loss"] if self.cpu_replay else self.train_loss[0]
        return losses[:self.first_steps]

    def values(self, metric: str) -> list[Any]:
        """``metric`` of every seed, in seed order (``KeyError`` naming the run if a seed
        lacks it)."""
        try:
            return [self.metrics[s][metric] for s in self.seeds]
        except KeyError:
            known = sorted(self.metrics[self.seeds[0]])
            raise KeyError(f"reference {self.name} has no metric {metric!r}; "
                           f"it has {known}") from None

    def mean(self, metric: str) -> float:
        return statistics.mean(self.values(metric))

    @property
    def minutes_per_seed(self) -> float:
        return self.wall_s / len(self.seeds) / 60

    @property
    def device_kind(self) -> str:
        """The kind of device it ran on, for a reader: ``"CPU"`` or ``"GPU <name>"`` (the
        processor's model, cores and threads stay in ``result.json``'s ``device``)."""
        kind, _, detail = self.device.split(",")[0].partition(":")
        return "CPU" if kind.strip() == "cpu" else f"GPU {detail.strip()}".strip()

    # -- the file ---------------------------------------------------------------------------
    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ReferenceResult:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"reference {data.get('name')!r}: result.json has fields this "
                             f"version does not know: {unknown}")
        by_seed = {"curves", "train_loss", "metrics"}
        return cls(**{k: ({int(s): v for s, v in value.items()} if k in by_seed else value)
                      for k, value in data.items()})

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        for k in ("curves", "train_loss", "metrics"):
            data[k] = {str(s): v for s, v in data[k].items()}
        for k in ("code_hash", "created", "cpu_replay"):  # older files stay byte-equal
            if data[k] is None:
                del data[k]
        return data

    def save(self, folder: Path | None = None) -> Path:
        """Write ``result.json`` atomically (into ``folder``, default the run's own)."""
        path = (folder or reference_dir() / self.name) / "result.json"
        text = json.dumps(self.to_json(), indent=1) + "\n"
        write_atomic(path, lambda tmp: Path(tmp).write_text(text))
        return path


def load(name: str) -> ReferenceResult:
    """The committed ``reference/<name>/result.json``; a clear error if it is missing."""
    path = result_path(name)
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: run `make reference NAME={name}` "
                                "(see README, 'Reference runs')")
    return ReferenceResult.from_json(json.loads(path.read_text()))


INT8_SCALE = ".int8_scale"  # the suffix of a matrix's per-row scales in a packed file


def pack_weights(state: dict[str, torch.Tensor], dtype: str = "float16"
                 ) -> dict[str, torch.Tensor]:
    """Weights as a reference stores them: ``"float16"``, or ``"int8"`` (chapter 13's
    absmax rule per row, for a file half the size): each matrix ``W`` of at least 4,096
    numbers becomes ``q = round(W / s)`` in [-127, 127] with ``s_i = max_j |W_ij| / 127``
    stored beside it in float32; vectors stay float16."""
    if dtype not in ("float16", "int8"):
        raise ValueError(f"weights are stored as 'float16' or 'int8', not {dtype!r}")
    out = {}
    for key, value in state.items():
        value = value.detach().cpu().float()
        if dtype == "int8" and value.dim() == 2 and value.numel() >= 4096:
            scale = value.abs().amax(1).clamp_min(1e-12) / 127
            out[key] = (value / scale[:, None]).round().clamp(-127, 127).to(torch.int8)
            out[key + INT8_SCALE] = scale
        else:
            out[key] = value.half()
    return {k: v.contiguous() for k, v in out.items()}


def unpack_weights(stored: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The float32 weights of a file :func:`pack_weights` wrote (either precision)."""
    return {key: value.float() * stored[key + INT8_SCALE].float()[:, None]
            if key + INT8_SCALE in stored else value.float()
            for key, value in stored.items() if not key.endswith(INT8_SCALE)}


def load_weights(name: str, seed: int = 0) -> dict[str, torch.Tensor]:
    """Seed ``seed``'s committed weights (fp16 or int8 on disk, returned as float32)."""
    from lmcourse.pretrained import read_safetensors

    path = reference_dir() / name / f"seed{seed}.safetensors"
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: run `make reference NAME={name}`")
    return unpack_weights(read_safetensors(path))

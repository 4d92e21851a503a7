"""What a reference run is: a recipe, a function that trains one seed, a function that scores
stored weights, and the baselines it is printed beside (:class:`Reference`).

A notebook's live run must fit a CPU minute; some effects need more (a network overtaking a
Kneser–Ney n-gram, pre-training beating a bag of words). Such a comparison is declared as a
:class:`Reference` in one of this package's modules and listed in
:mod:`lmcourse.course.reference.registry`; ``make reference NAME`` runs it to its real budget
over seeds 0, 1, 2 (consecutive, never picked) and writes ``reference/<name>/``. A run with
fewer seeds (one point of a trend, say) must say why in ``seeds_why``; no verdict that names
a winner may rest on it alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

__all__ = ["Reference", "SeedRun", "StaleReference", "no_weights"]


class StaleReference(AssertionError):
    """A committed reference no longer matches the code that produced it."""


# A run that fine-tunes a pre-trained encoder (MiniLM or a student cut from it: about half a
# second a step on the CPU) replays its first 10 steps in `make test`, not 25: enough to
# catch a changed model, data order, loss or optimizer, at less than half the cost.
ENCODER_FIRST_STEPS = 10


@dataclass
class SeedRun:
    """What one seed's run produced: the held-out curve, every step's training loss, the
    final metrics, and (optionally) the weights a notebook needs."""

    curve: list[list[float]]              # [step, training seconds, held-out metric]
    train_loss: list[float]
    metrics: dict[str, float]
    state: dict[str, torch.Tensor] | None = None


@dataclass
class Reference:
    """A reference run: ``train(recipe, seed, device, progress, stop_after)`` trains one seed
    (``stop_after`` steps only, for the first-steps check), ``evaluate(recipe, state)`` scores
    stored weights on the held-out split and returns ``(metric name, value)``."""

    name: str
    title: str
    recipe: dict
    train: Callable[..., SeedRun]
    evaluate: Callable[[dict, dict[str, torch.Tensor]], tuple[str, float]]
    baselines: Callable[[dict], dict[str, float]]
    seconds_per_seed: float          # on the 2-core CPU the course is budgeted for
    first_steps: int = 25
    tolerance: float = 2e-3          # relative, on the first steps' training losses
    seeds: tuple[int, ...] = (0, 1, 2)
    keep_weights: tuple[int, ...] = (0,)
    weights_dtype: str = "float16"   # or "int8": result.pack_weights
    notes: list[str] = field(default_factory=list)
    seeds_why: str = ""              # required when fewer than 3 seeds

    def __post_init__(self) -> None:
        if self.seeds != tuple(range(len(self.seeds))):
            raise ValueError(f"reference {self.name}: seeds must be 0, 1, ... (never picked); "
                             f"got {self.seeds}")
        if len(self.seeds) < 3 and not self.seeds_why:
            raise ValueError(f"reference {self.name}: {len(self.seeds)} seed(s) is fewer than "
                             "the 3 a verdict needs; declare seeds_why (what the run is for "
                             "and which run carries the verdict) or run 3 seeds")

    @property
    def command(self) -> str:
        return f"make reference NAME={self.name}"


def no_weights(name: str, why: str = "") -> Callable[[dict, dict], tuple[str, float]]:
    """The ``evaluate`` of a reference that keeps no weights (``keep_weights=()``): never
    called by ``verify``; if called anyway, it says so."""
    def evaluate(recipe: dict, state: dict) -> tuple[str, float]:
        raise NotImplementedError(f"{name} keeps no weights{why}")
    return evaluate

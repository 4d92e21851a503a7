"""Reference runs: a comparison run once, at the scale where the lesson shows, and committed.

A notebook's live run must fit a CPU minute; some effects need more (a network overtaking
a Kneser–Ney n-gram, pre-training beating a bag of words). Such a comparison is declared
here as a :class:`Reference`: a recipe (every setting), a function that trains one seed and
records its curve, and a function that evaluates stored weights. ``make reference NAME``
runs it to its real budget over seeds 0, 1, 2 (consecutive, never picked) and writes
``reference/<name>/``:

- ``result.json``: ``recipe``, ``device``, ``torch``, ``wall_s``, ``seeds``, ``curves``
  (per seed, a list of ``[step, seconds, metric]``), ``train_loss`` (per seed, the loss of
  every step), ``metrics`` (per seed, final held-out figures by name), ``baselines``;
- ``seed0.safetensors``: seed 0's weights in fp16 where a notebook needs the model.

``make test`` verifies each committed reference cheaply (:func:`verify`): the recipe in the
file equals the code's recipe; re-training the first steps reproduces the committed losses
within the stated tolerance; the committed weights give the committed metric. A stale
reference fails with the command that refreshes it.
"""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

__all__ = ["REFERENCES", "Reference", "SeedRun", "StaleReference", "compare", "crossing",
           "describe", "live_run", "load", "load_weights", "reference", "reference_dir", "run",
           "verify"]

ROOT = Path(__file__).resolve().parents[2]


def reference_dir() -> Path:
    """``reference/`` at the top of the course (``$LMCOURSE_REFERENCE_DIR`` moves it)."""
    return Path(os.environ.get("LMCOURSE_REFERENCE_DIR") or ROOT / "reference")


class StaleReference(AssertionError):
    """A committed reference no longer matches the code that produced it."""


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
    """A reference run: ``train(recipe, seed, stop_after, progress)`` trains one seed
    (``stop_after`` steps only, for the first-steps check), ``evaluate(recipe, state)``
    scores stored weights on the held-out split and returns ``(metric name, value)``."""

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
    notes: list[str] = field(default_factory=list)

    @property
    def command(self) -> str:
        return f"make reference NAME={self.name}"


REFERENCES: dict[str, Reference] = {}


def reference(ref: Reference) -> Reference:
    """Register ``ref`` under its name."""
    if ref.name in REFERENCES:
        raise ValueError(f"reference {ref.name!r} registered twice")
    REFERENCES[ref.name] = ref
    return ref


def _registered(name: str) -> Reference:
    from lmcourse.course import references  # noqa: F401  (registers the course's references)
    if name not in REFERENCES:
        raise KeyError(f"no reference run named {name!r}; known: {sorted(REFERENCES)}")
    return REFERENCES[name]


def _device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return f"cuda: {torch.cuda.get_device_name(device)}"
    from lmcourse.course.speed import cpu_model

    return f"cpu: {cpu_model()}, {os.cpu_count()} cores, {torch.get_num_threads()} torch threads"


def _write_atomic(path: Path, write: Callable[[str], None]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def run(name: str, seeds: tuple[int, ...] | None = None, progress: bool = True,
        device: torch.device | None = None) -> dict:
    """Run reference ``name`` to its full budget over its seeds and write its folder."""
    from safetensors.torch import save_file

    import lmcourse

    ref = _registered(name)
    seeds = ref.seeds if seeds is None else seeds
    device = lmcourse.device() if device is None else device
    estimate = ref.seconds_per_seed * len(seeds)
    print(f"== reference {name}: {ref.title}\n   {len(seeds)} seeds, about "
          f"{estimate / 60:.0f} min on a 2-core CPU (a GPU takes minutes); device {device}",
          flush=True)
    folder = reference_dir() / name
    start, runs = time.perf_counter(), {}
    for seed in seeds:
        tick = time.perf_counter()
        runs[seed] = ref.train(ref.recipe, seed=seed, device=device, progress=progress)
        print(f"   seed {seed}: {runs[seed].metrics} ({time.perf_counter() - tick:.0f} s)",
              flush=True)
    for seed in ref.keep_weights:
        if seed in runs and runs[seed].state is not None:
            state = {k: v.detach().cpu().half().contiguous() for k, v in runs[seed].state.items()}
            _write_atomic(folder / f"seed{seed}.safetensors",
                          lambda tmp, s=state: save_file(s, tmp, metadata={"reference": name}))
            metric, value = ref.evaluate(ref.recipe, state)
            runs[seed].metrics[f"{metric}_stored_weights"] = value
    result = {
        "name": name, "title": ref.title, "recipe": ref.recipe,
        "device": _device_name(device), "torch": torch.__version__,
        "wall_s": round(time.perf_counter() - start, 1), "seeds": list(seeds),
        "curves": {str(s): r.curve for s, r in runs.items()},
        "train_loss": {str(s): [round(x, 6) for x in r.train_loss] for s, r in runs.items()},
        "metrics": {str(s): r.metrics for s, r in runs.items()},
        "baselines": ref.baselines(ref.recipe),
        "first_steps": ref.first_steps, "tolerance": ref.tolerance, "notes": ref.notes,
        "command": ref.command,
    }
    _write_atomic(folder / "result.json",
                  lambda tmp: Path(tmp).write_text(json.dumps(result, indent=1) + "\n"))
    print(f"   wrote {folder} ({result['wall_s'] / 60:.1f} min)", flush=True)
    return result


def load(name: str) -> dict:
    """The committed ``reference/<name>/result.json``; a clear error if it is missing."""
    path = reference_dir() / name / "result.json"
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: run `make reference NAME={name}` "
                                "(see README, 'Reference runs')")
    return json.loads(path.read_text())


def no_weights(name: str, why: str = "") -> Callable[[dict, dict], tuple[str, float]]:
    """The ``evaluate`` of a reference that keeps no weights (``keep_weights=()``): never
    called by :func:`verify`; if called anyway, it says so."""
    def evaluate(recipe: dict, state: dict) -> tuple[str, float]:
        raise NotImplementedError(f"{name} keeps no weights{why}")
    return evaluate


def load_weights(name: str, seed: int = 0) -> dict[str, torch.Tensor]:
    """Seed ``seed``'s committed weights (fp16 on disk, returned as float32)."""
    from safetensors.torch import load_file
    path = reference_dir() / name / f"seed{seed}.safetensors"
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: run `make reference NAME={name}`")
    return {k: v.float() for k, v in load_file(path).items()}


def live_run(name: str, steps: int, device: torch.device | None = None) -> SeedRun:
    """A notebook's live part: train the first ``steps`` steps of reference ``name``'s seed 0
    here (on the recipe's full schedule), check that its first ``first_steps`` training
    losses repeat the committed ones, print one line, and return the run (its ``curve``
    holds the held-out points it reached). Raises :class:`StaleReference` when they differ
    beyond the reference's tolerance."""
    import lmcourse

    ref, result = _registered(name), load(name)
    device = lmcourse.device() if device is None else device
    start = time.perf_counter()
    run = ref.train(ref.recipe, seed=0, device=device, progress=False, stop_after=steps)
    seconds = run.metrics.get("train_seconds", time.perf_counter() - start)
    committed = result["train_loss"]["0"][:min(ref.first_steps, steps)]
    worst = max(abs(a - b) / abs(b) for a, b in zip(run.train_loss, committed, strict=False))
    total = ref.recipe.get("steps")
    of = f" of {total:,}" if isinstance(total, int) else ""
    print(f"live run of {name}: {len(run.train_loss)}{of} steps in "
          f"{seconds:.1f} s on {device}; its first "
          f"{len(committed)} losses vs the reference: largest relative difference {worst:.1e} "
          f"(tolerance {ref.tolerance:g}) -> "
          f"{'reproduced' if worst <= ref.tolerance else 'NOT reproduced'}")
    if not worst <= ref.tolerance:
        raise StaleReference(f"reference {name}: the first steps trained here differ from the "
                             f"committed ones by {worst:.1e}; refresh it with `{ref.command}`")
    return run


def crossing(curve: list[list[float]], level: float) -> tuple[int, float] | None:
    """The first ``(step, seconds)`` at which a held-out curve is below ``level`` (None if
    it never is)."""
    return next(((int(step), sec) for step, sec, value in curve if value < level), None)


def describe(name: str, metric: str = "held_out_ppl",
             baselines: dict[str, str] | None = None) -> str:
    """What a committed reference shows, in lines printed from its file: the final metric
    over the seeds (mean +- standard deviation) and, for each baseline, when each seed's
    held-out curve first went below it."""
    import statistics

    result = load(name)
    finals = [result["metrics"][str(s)][metric] for s in result["seeds"]]
    mean, spread = statistics.mean(finals), statistics.stdev(finals)
    minutes = result["wall_s"] / len(result["seeds"]) / 60
    lines = [f"reference {name} ({len(finals)} seeds x {minutes:.0f} min, "
             f"{result['device'].split(',')[0]}; `{result['command']}`): {metric} "
             f"{mean:.2f} +- {spread:.2f} (seeds: {', '.join(f'{v:.2f}' for v in finals)})"]
    lowest = [min(result["curves"][str(s)], key=lambda point: point[2]) for s in result["seeds"]]
    lines.append("  lowest point of each seed's held-out curve: " + ", ".join(
        f"{p[2]:.2f} at step {int(p[0])}" for p in lowest)
        + " (read from the held-out text itself: a description, not a stopping rule)")
    for key, label in (baselines or {}).items():
        level = result["baselines"][key]
        hits = [crossing(result["curves"][str(s)], level) for s in result["seeds"]]
        when = ("never, on any seed" if all(h is None for h in hits) else ", ".join(
            "never" if h is None else f"step {h[0]} ({h[1] / 60:.1f} min)" for h in hits))
        below = sum(v < level for v in finals)
        lines.append(f"  vs {label} ({level:.2f}): ends below it on {below} of {len(finals)} "
                     f"seeds; first below it: {when}")
    return "\n".join(lines)


def compare(names: dict[str, str], metric: str = "held_out_ppl",
            baselines: dict[str, str] | None = None) -> str:
    """One table of several committed references (``{label: name}``), printed from their
    files: parameters, training tokens/s, the final metric over the seeds (mean +- standard
    deviation) and, for each baseline, the mean training minutes at which the seeds first
    went below it (``-`` if some seed never did)."""
    import statistics

    results = {label: load(name) for label, name in names.items()}
    first = next(iter(results.values()))
    header = f"{'model':<12} {'parameters':>10} {'tokens/s':>9} {metric + ' (3 seeds)':>24}"
    header += "".join(f" {'below ' + label:>16}" for label in (baselines or {}).values())
    lines = [header]
    for label, result in results.items():
        seeds = [str(s) for s in result["seeds"]]
        finals = [result["metrics"][s][metric] for s in seeds]
        params = result["metrics"][seeds[0]].get("parameters", float("nan"))
        speed = statistics.mean(result["metrics"][s].get("tokens_per_s", math.nan)
                                for s in seeds)
        row = (f"{label:<12} {params:>10,} {speed:>9,.0f} "
               f"{f'{statistics.mean(finals):.3f} +- {statistics.stdev(finals):.3f}':>24}")
        for key in baselines or {}:
            hits = [crossing(result["curves"][s], first["baselines"][key]) for s in seeds]
            when = ("-" if None in hits
                    else f"{statistics.mean(h[1] for h in hits) / 60:.1f} min")
            row += f" {when:>16}"
        lines.append(row)
    for key, label in (baselines or {}).items():
        lines.append(f"{label:<12} {'':>10} {'':>9} {first['baselines'][key]:>24.3f}")
    return "\n".join(lines)


def _canonical(obj):
    return json.loads(json.dumps(obj))


def verify(name: str, first_steps: bool = True, metric: bool = True) -> list[str]:
    """Check committed reference ``name`` against the code; return what was checked, or
    raise :class:`StaleReference` naming the command that refreshes it."""
    ref, result = _registered(name), load(name)
    done = []
    if _canonical(ref.recipe) != result["recipe"]:
        changed = sorted(k for k in set(ref.recipe) | set(result["recipe"])
                         if _canonical(ref.recipe).get(k) != result["recipe"].get(k))
        raise StaleReference(f"reference {name}: the code's recipe differs from the committed "
                             f"one in {changed}; refresh it with `{ref.command}`")
    done.append("recipe matches")
    if len(result["seeds"]) < 3 or result["seeds"] != list(range(len(result["seeds"]))):
        raise StaleReference(f"reference {name}: seeds must be consecutive from 0, at least 3; "
                             f"got {result['seeds']}")
    if first_steps:
        run0 = ref.train(ref.recipe, seed=0, device=torch.device("cpu"), progress=False,
                         stop_after=ref.first_steps)
        committed = result["train_loss"]["0"][:ref.first_steps]
        worst = max(abs(a - b) / abs(b) for a, b in zip(run0.train_loss, committed, strict=False))
        if len(run0.train_loss) < len(committed) or not worst <= ref.tolerance:
            raise StaleReference(
                f"reference {name}: re-training the first {ref.first_steps} steps of seed 0 "
                f"gives losses up to {worst:.2e} (relative) away from the committed ones, "
                f"over the tolerance {ref.tolerance:g}; refresh it with `{ref.command}`")
        done.append(f"first {ref.first_steps} steps reproduced (worst relative difference "
                    f"{worst:.1e} <= {ref.tolerance:g})")
    if metric:
        for seed in ref.keep_weights:
            name_, value = ref.evaluate(ref.recipe, load_weights(name, seed))
            stored = result["metrics"][str(seed)][f"{name_}_stored_weights"]
            if not math.isclose(value, stored, rel_tol=1e-3):
                raise StaleReference(
                    f"reference {name}: seed {seed}'s committed weights give {name_} "
                    f"{value:.4f}, the file says {stored:.4f}; refresh it with `{ref.command}`")
            done.append(f"seed {seed}'s weights give {name_} {value:.4f} (file: {stored:.4f})")
    return done


if __name__ == "__main__":  # ``make reference``: the command line lives in reference_runs
    from lmcourse.course.reference_runs import main as _main
    sys.exit(_main())

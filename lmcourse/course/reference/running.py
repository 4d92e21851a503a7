"""Running a reference run to its budget, replaying its first steps live, and verifying it.

``make reference NAME`` calls :func:`run`: every seed of the recipe, then
``reference/<name>/result.json`` (a :class:`~lmcourse.course.reference.result.ReferenceResult`)
and ``seed0.safetensors`` (seed 0's weights in fp16) where a notebook needs the model.

``make test`` verifies each committed reference cheaply (:func:`verify`): the recipe in the
file equals the code's recipe; re-training the first steps reproduces the committed losses
within the stated tolerance; the committed weights give the committed metric. A stale
reference fails with the command that refreshes it. A notebook's live part is
:func:`live_run`: the first steps of seed 0 trained in front of the student, checked against
the committed ones.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import shutil
import time
from pathlib import Path

import torch

from lmcourse.course.keys import digest
from lmcourse.course.reference.recipe import Reference, SeedRun, StaleReference
from lmcourse.course.reference.registry import get
from lmcourse.course.reference.result import (
    ReferenceResult,
    load,
    load_weights,
    pack_weights,
    reference_dir,
    unpack_weights,
    write_atomic,
)

__all__ = ["code_hash", "live_run", "run", "verify"]


def _device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return f"cuda: {torch.cuda.get_device_name(device)}"
    from lmcourse.course.speed import cpu_model

    return f"cpu: {cpu_model()}, {os.cpu_count()} cores, {torch.get_num_threads()} torch threads"


def code_hash(ref: Reference) -> str:
    """A hash of the source of the module that declares ``ref``'s training function."""
    import inspect
    import sys

    return digest(inspect.getsource(sys.modules[ref.train.__module__]))[:16]


def run(name: str | Reference, seeds: tuple[int, ...] | None = None, progress: bool = True,
        device: torch.device | None = None) -> ReferenceResult:
    """Run reference ``name`` to its full budget over its seeds and write its folder (a
    :class:`Reference` not yet in the registry may be passed itself, while its runs land)."""
    from safetensors.torch import save_file

    import lmcourse

    ref = name if isinstance(name, Reference) else get(name)
    name = ref.name
    seeds = ref.seeds if seeds is None else seeds
    device = lmcourse.device() if device is None else device
    estimate = ref.seconds_per_seed * len(seeds)
    print(f"== reference {name}: {ref.title}\n   {len(seeds)} seeds, about "
          f"{estimate / 60:.0f} min on a 2-core CPU (a GPU takes minutes); device {device}",
          flush=True)
    folder = reference_dir() / name
    start, runs, devices, seed_devices = time.perf_counter(), {}, set(), {}
    done = _finished_seeds(ref, folder)
    for seed in seeds:
        if seed in done:
            runs[seed], seconds, where = done[seed]
            start -= seconds  # the wall time counts the earlier session's seconds too
            devices.add(where)
            seed_devices[seed] = where
            print(f"   seed {seed}: finished earlier ({folder / 'seeds'}), not trained again",
                  flush=True)
            continue
        tick = time.perf_counter()
        runs[seed] = ref.train(ref.recipe, seed=seed, device=device, progress=progress)
        devices.add(_device_name(device))
        seed_devices[seed] = _device_name(device)
        print(f"   seed {seed}: {runs[seed].metrics} ({time.perf_counter() - tick:.0f} s)",
              flush=True)
        if len(seeds) > 1:
            save_finished_seed(ref, seed, runs[seed], time.perf_counter() - tick, device)
    for seed in ref.keep_weights:
        if seed in runs and runs[seed].state is not None:
            packed = pack_weights(runs[seed].state, ref.weights_dtype)
            write_atomic(folder / f"seed{seed}.safetensors",
                         lambda tmp, s=packed: save_file(s, tmp, metadata={"reference": name}))
            metric, value = ref.evaluate(ref.recipe, unpack_weights(packed))
            runs[seed].metrics[f"{metric}_stored_weights"] = value
    replay = None
    if 0 in runs and not seed_devices.get(0, "cpu").startswith("cpu"):
        first = ref.train(ref.recipe, seed=0, device=torch.device("cpu"), progress=False,
                          stop_after=ref.first_steps)
        replay = {"device": _device_name(torch.device("cpu")),
                  "train_loss": [round(x, 6) for x in first.train_loss[:ref.first_steps]]}
    result = ReferenceResult(
        name=name, title=ref.title, recipe=ref.recipe, device="; ".join(sorted(devices)),
        torch=torch.__version__, wall_s=round(time.perf_counter() - start, 1),
        seeds=list(seeds), curves={s: r.curve for s, r in runs.items()},
        train_loss={s: [round(x, 6) for x in r.train_loss] for s, r in runs.items()},
        metrics={s: r.metrics for s, r in runs.items()}, baselines=ref.baselines(ref.recipe),
        first_steps=ref.first_steps, tolerance=ref.tolerance, notes=ref.notes,
        command=ref.command, code_hash=code_hash(ref),
        created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        cpu_replay=replay)
    result.save(folder)
    shutil.rmtree(folder / "seeds", ignore_errors=True)  # the result holds them now
    print(f"   wrote {folder} ({result.wall_s / 60:.1f} min)", flush=True)
    return result


def save_finished_seed(ref: Reference, seed: int, run_: SeedRun, seconds: float,
                       device: torch.device) -> None:
    """Keep one finished seed (``reference/<name>/seeds/seed<N>.json``, small enough to
    commit), with the device it ran on, and for a seed whose weights the reference keeps
    its weights in fp16 (``seed<N>.safetensors`` beside it, as the result will store them),
    so a run longer than one sitting, or trained seed by seed on other machines, resumes
    where it stopped."""
    from safetensors.torch import save_file

    folder = reference_dir() / ref.name / "seeds"
    if seed in ref.keep_weights and run_.state is not None:
        state = {k: v.detach().cpu().half().contiguous() for k, v in run_.state.items()}
        write_atomic(folder / f"seed{seed}.safetensors",
                     lambda tmp: save_file(state, tmp, metadata={"reference": ref.name}))
    record = {"recipe": _canonical(ref.recipe), "seconds": round(seconds, 1),
              "device": _device_name(device),
              "curve": run_.curve, "train_loss": [round(x, 6) for x in run_.train_loss],
              "metrics": run_.metrics}
    write_atomic(folder / f"seed{seed}.json",
                 lambda tmp: Path(tmp).write_text(json.dumps(record) + "\n"))


def _finished_seeds(ref: Reference, folder: Path) -> dict[int, tuple[SeedRun, float, str]]:
    """The seeds :func:`save_finished_seed` kept for this very recipe, with their seconds and
    device (a seed kept for another recipe is ignored, and trained again)."""
    from lmcourse.pretrained import read_safetensors

    out = {}
    for path in sorted((folder / "seeds").glob("seed*.json")):
        record = json.loads(path.read_text())
        seed, weights = int(path.stem[4:]), path.with_suffix(".safetensors")
        if record["recipe"] != _canonical(ref.recipe):
            continue
        if seed in ref.keep_weights and not weights.exists():
            continue  # the reference keeps this seed's weights: train it again
        state = (unpack_weights(read_safetensors(weights)) if seed in ref.keep_weights
                 else None)
        out[seed] = (SeedRun(record["curve"], record["train_loss"], record["metrics"], state),
                     record["seconds"], record.get("device", "cpu (not recorded)"))
    return out


def live_run(name: str, steps: int, device: torch.device | None = None) -> SeedRun:
    """A notebook's live part: train the first ``steps`` steps of reference ``name``'s seed 0
    here (on the recipe's full schedule), print one line for the student (what ran, how
    long), check that its first ``first_steps`` training losses repeat the committed ones
    (the comparison goes to the harness log, :func:`lmcourse.course.harness.note`, not to the
    lesson), and return the run (its ``curve`` holds the held-out points it reached). Raises
    :class:`StaleReference` when they differ beyond the reference's tolerance."""
    import lmcourse
    from lmcourse.course.harness import note

    ref, result = get(name), load(name)
    device = lmcourse.device() if device is None else device
    start = time.perf_counter()
    run = ref.train(ref.recipe, seed=0, device=device, progress=False, stop_after=steps)
    seconds = run.metrics.get("train_seconds", time.perf_counter() - start)
    committed = result.first_losses()[:min(ref.first_steps, steps)]
    worst = max(abs(a - b) / abs(b) for a, b in zip(run.train_loss, committed, strict=False))
    total = ref.recipe.get("steps")
    of = f" of {total:,}" if isinstance(total, int) else ""
    print(f"trained here: the opening of {name} (seed 0), {len(run.train_loss):,}{of} steps, "
          f"in {seconds:.1f} s")
    note(f"live run of {name} on {device}: its first {len(committed)} losses vs the committed "
         f"ones, largest relative difference {worst:.1e} (tolerance {ref.tolerance:g})")
    if not worst <= ref.tolerance:
        raise StaleReference(f"reference {name}: the first steps trained here differ from the "
                             f"committed ones by {worst:.1e}; refresh it with `{ref.command}`")
    return run


def _canonical(obj):
    return json.loads(json.dumps(obj))


def verify(name: str, first_steps: bool = True, metric: bool = True) -> list[str]:
    """Check committed reference ``name`` against the code; return what was checked, or
    raise :class:`StaleReference` naming the command that refreshes it."""
    ref, result = get(name), load(name)
    done = []
    if _canonical(ref.recipe) != result.recipe:
        changed = sorted(k for k in set(ref.recipe) | set(result.recipe)
                         if _canonical(ref.recipe).get(k) != result.recipe.get(k))
        raise StaleReference(f"reference {name}: the code's recipe differs from the committed "
                             f"one in {changed}; refresh it with `{ref.command}`")
    done.append("recipe matches")
    if result.seeds != list(ref.seeds):
        raise StaleReference(f"reference {name}: the committed seeds {result.seeds} are not "
                             f"the declared {list(ref.seeds)}; refresh it with `{ref.command}`")
    if first_steps:
        run0 = ref.train(ref.recipe, seed=0, device=torch.device("cpu"), progress=False,
                         stop_after=ref.first_steps)
        committed = result.first_losses()
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
            stored = result.metrics[seed][f"{name_}_stored_weights"]
            if not math.isclose(value, stored, rel_tol=1e-3):
                raise StaleReference(
                    f"reference {name}: seed {seed}'s committed weights give {name_} "
                    f"{value:.4f}, the file says {stored:.4f}; refresh it with `{ref.command}`")
            done.append(f"seed {seed}'s weights give {name_} {value:.4f} (file: {stored:.4f})")
    return done


def refresh_baselines(name: str) -> dict[str, float]:
    """Recompute committed run ``name``'s baselines with today's code and write them into
    its ``result.json`` (the networks' curves and metrics stay as trained): for when a
    baseline gets fairer, e.g. tuned, without re-training the networks beside it."""
    ref, result = get(name), load(name)
    result.baselines = dict(ref.baselines(ref.recipe))
    result.save()
    return result.baselines

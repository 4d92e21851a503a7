"""A finished seed of ``recall-converge-*`` given the rates its grid gained since it ran.

Each ``(pairs, rate)`` run of a seed depends on the seed alone (the model's initial weights
and the batches), so training only the new rates and choosing again gives what training
the whole grid gives; a test compares the two.
"""

from __future__ import annotations

import json
import time

import torch

from lmcourse.course.reference import recall_converge as rc
from lmcourse.course.reference.recipe import SeedRun
from lmcourse.course.reference.result import reference_dir
from lmcourse.course.reference.running import _canonical, save_finished_seed


def extend_seed(name: str, seed: int, device: torch.device | str = "cpu") -> list[float]:
    """Give a finished seed that was trained on a narrower grid (kept in
    ``reference/<name>/seeds/``) the rates the grid has gained since, and keep it again under
    today's recipe: each ``(pairs, rate)`` run is independent of the others, so training only
    the new rates and choosing again gives what the whole grid gives. Returns the rates
    trained."""
    ref, device = rc.CONVERGE_REFS[name], torch.device(device)
    record = json.loads((reference_dir() / name / "seeds" / f"seed{seed}.json").read_text())
    old, recipe = record["recipe"], ref.recipe
    new_rates = [lr for lr in recipe["lr_grid"] if lr not in old["lr_grid"]]
    if {**old, "lr_grid": None} != {**_canonical(recipe), "lr_grid": None} or any(
            lr not in recipe["lr_grid"] for lr in old["lr_grid"]):
        raise ValueError(f"{name} seed {seed} was trained on another recipe than a narrower "
                         "grid of today's: train it again instead")
    metrics, first_losses = dict(record["metrics"]), record["train_loss"]
    tick, kind, width = time.perf_counter(), ref.recipe["model"], ref.recipe["width"]
    for pairs in recipe["pairs"]:
        for lr in new_rates:
            run = rc.train_rate(kind, width, recipe, seed, device, pairs, lr, recipe["steps"])
            metrics.update(rc.rate_metrics(run, pairs, lr, recipe, device))
            if (pairs, lr) == (recipe["pairs"][0], recipe["lr_grid"][0]):
                first_losses = run.losses  # the replay trains the grid's first run
    curve = rc.choose_rates(metrics, recipe)
    seconds = record["seconds"] + time.perf_counter() - tick
    metrics["train_seconds"] = round(seconds, 1)
    save_finished_seed(ref, seed, SeedRun(curve, first_losses, metrics), seconds, device)
    return new_rates

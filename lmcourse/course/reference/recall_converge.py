"""References ``recall-converge-*``: associative recall's recurrent rivals trained to
convergence (issue 56, item 1). Declared here and trained seed by seed, on a GPU or a CPU
(``tools.gpu_runs plan issue56-recall``); a size is registered once its three seeds have
landed (:data:`LANDED`).

``recall-sweep`` gives a transformer, an LSTM and a GRU of the same size the same 1,000
steps: a claim about **sample efficiency**. This asks the other question, what each can
**learn**: the LSTM and the GRU, at the size-matched width and at twice it, train for ten
times the transformer's steps (10,000) at 4 and 8 pairs, and their held-out query accuracy
is read every 500 steps, so the curve shows where it stops improving. The transformer
trains the same 10,000 steps, for the figure that draws all three against steps, at the
rate recall-sweep chose for it (it learns the lookup within that sweep's 1,000 steps).

Each recurrent run's learning rate is chosen, per seed, model and size, from a five-point
grid by the accuracy on **validation** sequences drawn from their own generator, never on the test
sequences the verdicts read; a chosen rate at the grid's edge is recorded as such, and a
test of the committed runs refuses it unless a rate inside the grid scored as well within
sampling noise (:func:`interior_rate_as_good`: then the edge won by noise among equals and says
nothing about the grid's reach). The baseline is ``recall-sweep``'s lookup-free guess: a
value drawn from the ones shown in the sequence.
"""

from __future__ import annotations

import time

import torch

from lmcourse.course.reference.recall_sweep import baselines as shown_value_baselines
from lmcourse.course.reference.recipe import Reference, SeedRun, no_weights
from lmcourse.models.recall import (
    _logits,
    recall_accuracy,
    recall_batch,
    recall_model,
    train_recall,
)

LR_GRID = (3e-4, 1e-3, 3e-3, 1e-2, 3e-2)
#: (model, width): the size-matched widths of recall-sweep (about 120K parameters) and twice
#: them (about four times the parameters)
SIZES = {"lstm-80": ("lstm", 80), "lstm-160": ("lstm", 160), "gru-90": ("gru", 90),
         "gru-180": ("gru", 180), "transformer-64": ("transformer", 64)}
RECIPE = {
    "curve_x": "training steps (the curve: held-out query accuracy at 4 pairs, chosen rate)",
    "pairs": [4, 8], "steps": 10_000, "eval_every": 500, "batch": 64, "eval_size": 512,
    "validation_size": 512, "num_keys": 64, "num_values": 64, "max_len": 96, "layers": 2,
    "lr_grid": list(LR_GRID),
    "optimizer": "adam, gradient norm clipped at 1; the loss only at the query positions",
}
LABELS = {"lstm": "LSTM", "gru": "GRU", "transformer": "transformer"}
VALIDATION_SEED = 20_000  # + pairs: the validation sequences' generator (test: 10_000 + pairs)


def validation_accuracy(model: torch.nn.Module, pairs: int, recipe: dict,
                        device: torch.device | str = "cpu") -> float:
    """Query accuracy on ``recipe["validation_size"]`` sequences of the validation
    generator: what a learning rate is chosen by."""
    batch = recall_batch(recipe["validation_size"], pairs, num_keys=recipe["num_keys"],
                         num_values=recipe["num_values"],
                         generator=torch.Generator().manual_seed(VALIDATION_SEED + pairs))
    model.eval()
    with torch.no_grad():
        logits = _logits(model, batch.tokens.to(device))
    model.train()
    return recall_accuracy(logits.cpu(), batch.targets)


def train_rate(kind: str, width: int, recipe: dict, seed: int, device: torch.device,
                pairs: int, lr: float, steps: int):
    """One ``(pairs, rate)`` run of a seed: the model and the batches depend on the seed
    alone, so each run is independent of the grid's other rates."""
    model = recall_model(kind, width, recipe["num_keys"] + recipe["num_values"],
                         recipe["max_len"], layers=recipe["layers"], seed=seed)
    return train_recall(model, pairs, steps, seed, lr=lr, batch_size=recipe["batch"],
                        eval_every=min(recipe["eval_every"], steps),
                        eval_size=recipe["eval_size"], num_keys=recipe["num_keys"],
                        num_values=recipe["num_values"], device=device)


def rate_metrics(run, pairs: int, lr: float, recipe: dict, device: torch.device) -> dict:
    """What one ``(pairs, rate)`` run records: validation and test accuracy, the best test
    accuracy on its curve, the curve itself and the model's size."""
    key, steps = f"@{pairs}:lr{lr:g}", recipe["steps"]
    return {f"validation{key}": round(validation_accuracy(run.model, pairs, recipe, device), 4),
            f"test{key}": run.accuracy, f"best_test{key}": max(a for _, a in run.curve),
            # [step, training seconds (pro rata), held-out accuracy] every eval_every steps
            f"curve{key}": [[step, round(run.seconds * step / steps, 1), acc]
                            for step, acc in run.curve],
            "parameters": run.parameters}


def choose_rates(metrics: dict, recipe: dict) -> list[list[float]]:
    """Each pair count's rate by validation accuracy (``lr@P``, whether it is at the grid's
    edge, its test accuracy); returns the curve at the first pair count's chosen rate."""
    grid = recipe["lr_grid"]
    for pairs in recipe["pairs"]:
        chosen = max(grid, key=lambda lr, p=pairs: metrics[f"validation@{p}:lr{lr:g}"])
        metrics[f"lr@{pairs}"] = chosen
        metrics[f"chosen_at_edge@{pairs}"] = float(len(grid) > 1
                                                    and chosen in (grid[0], grid[-1]))
        metrics[f"accuracy@{pairs}"] = metrics[f"test@{pairs}:lr{chosen:g}"]
    return chosen_curve(metrics, recipe["pairs"][0])


def _train(kind: str, width: int, recipe: dict, seed: int, device: torch.device,
           progress: bool = True, stop_after: int | None = None) -> SeedRun:
    from lmcourse import progress_bar

    metrics: dict[str, float] = {}
    first_losses, start = [], time.perf_counter()
    jobs = [(p, lr) for p in recipe["pairs"] for lr in recipe["lr_grid"]]
    for pairs, lr in progress_bar(jobs, progress, desc=f"recall-converge {kind} seed {seed}"):
        run = train_rate(kind, width, recipe, seed, device, pairs, lr,
                          stop_after or recipe["steps"])
        if stop_after is not None:
            return SeedRun([], run.losses, {})
        first_losses = first_losses or run.losses
        metrics.update(rate_metrics(run, pairs, lr, recipe, device))
    curve = choose_rates(metrics, recipe)
    metrics["train_seconds"] = round(time.perf_counter() - start, 1)
    return SeedRun(curve, first_losses, metrics)


def chosen_curve(metrics: dict, pairs: int) -> list[list[float]]:
    """One seed's held-out curve at ``pairs`` pairs, ``[step, seconds, accuracy]`` every
    ``eval_every`` steps, at the learning rate its validation sequences chose."""
    return metrics[f"curve@{pairs}:lr{metrics[f'lr@{pairs}']:g}"]


def window_accuracy(curve: list[list[float]], first: int, last: int) -> float:
    """Mean held-out accuracy over the curve's points with ``first <= step <= last``: a
    level read over several evaluations rather than one noisy point."""
    points = [acc for step, _, acc in curve if first <= step <= last]
    if not points:
        raise ValueError(f"no evaluation between steps {first} and {last}")
    return sum(points) / len(points)


def interior_rate_as_good(metrics: dict, pairs: int, recipe: dict = RECIPE,
                          z: float = 2.0) -> bool:
    """Whether a rate inside the grid scored within ``z`` standard errors of the chosen one on
    the validation sequences, ``best - a_inner <= z * sqrt(a (1 - a) / n)`` with ``n`` the
    validation queries (trivially true when the chosen rate is inside): then a choice at the
    grid's edge is noise among equals, not a sign that a better rate lies beyond it."""
    grid = recipe["lr_grid"]
    if len(grid) < 3:
        return True  # a rate given, not searched: no edge to win
    chosen = metrics[f"validation@{pairs}:lr{metrics[f'lr@{pairs}']:g}"]
    inner = max(metrics[f"validation@{pairs}:lr{lr:g}"] for lr in grid[1:-1])
    queries = recipe["validation_size"] * pairs
    return chosen - inner <= z * (chosen * (1 - chosen) / queries) ** 0.5


def _recipe(kind: str, width: int) -> dict:
    """The run's recipe: the transformer, which learns the lookup within recall-sweep's 1,000
    steps, keeps the rate recall-sweep chose for it; the recurrent networks search the grid."""
    from lmcourse.course.reference.recall_sweep import RECIPE as SWEEP

    grid = {"lr_grid": [SWEEP[kind]["lr"]]} if kind == "transformer" else {}
    return {**RECIPE, "model": kind, "width": width, **grid}


def _reference(name: str) -> Reference:
    kind, width = SIZES[name]

    def train(recipe: dict, seed: int, device: torch.device, progress: bool = True,
              stop_after: int | None = None) -> SeedRun:
        return _train(kind, width, recipe, seed, device, progress, stop_after)

    return Reference(
        name=f"recall-converge-{name}",
        title=f"associative recall to convergence: {LABELS[kind]} of width {width}, 10,000 "
              + ("steps, at recall-sweep's learning rate" if kind == "transformer"
                 else "steps, learning rate chosen on validation sequences"),
        recipe=_recipe(kind, width), train=train,
        evaluate=no_weights(f"recall-converge-{name}"), baselines=shown_value_baselines,
        seconds_per_seed=1800.0, keep_weights=(), first_steps=10,
        notes=["the learning rate of every pair count is chosen per seed on 512 validation "
               "sequences of their own generator; the test sequences are recall-sweep's",
               "ten times the transformer's 1,000 steps of recall-sweep (issue 56, item 1)"])


#: declared; each is registered once its three seeds have landed (``python -m
#: tools.gpu_runs plan issue56-recall`` lists what is still to train, on a GPU or a CPU)
CONVERGE_REFS = {f"recall-converge-{name}": _reference(name) for name in SIZES}
#: the sizes whose three seeds have landed: registered, and read by chapter 07c
LANDED = ("lstm-80", "lstm-160", "gru-90", "gru-180", "transformer-64")

"""References ``lm-scale-*``: where do networks overtake counting?

On the Lee corpus (about 320K training characters) a Kneser–Ney model tuned on a tuning
split beats every character network the course trains. These references repeat the
comparison on the Wikipedia excerpt (:mod:`lmcourse.data.wiki`) at four training sizes,
from the Lee corpus's size to the whole training part (2.4M characters, the first
characters of the training articles):

- the networks, a 2-layer LSTM, a 2-layer GRU and a 4-layer causal transformer of the same
  parameter count (3.35M), see the same batches of 32 x 128 characters with Adam; every
  ``eval_every`` steps the tuning split is scored, the learning rate halves when it did not
  improve and training stops when it has not improved twice in a row (or at
  ``max_steps``). The weights with the best tuning perplexity are scored on the held-out
  articles.
- the baseline is Kneser–Ney with its order and discount chosen on the tuning split from a
  grid as wide as the networks' (:func:`~lmcourse.models.ngram_tuning.tune_ngram`), both the
  one-discount and the modified variant, counted on the same training characters.

Both sides are scored on **the same tokens with the same context**: the held-out text is
cut into 32 streams of equal length (the few characters left over are dropped on both
sides); a recurrent network carries its state along each stream, the transformer reads
each stream in overlapping windows of 128 (each character with at least 64 before it) and
the n-gram reads the history inside the stream, and none scores a stream's first character
(:func:`stream_perplexities`).
"""

from __future__ import annotations

import copy
import json
import statistics
import time
from functools import cache
from pathlib import Path

import numpy as np
import torch
from torch import nn

from lmcourse.course.reference.recipe import Reference, SeedRun, no_weights
from lmcourse.course.reference.result import ReferenceResult, write_atomic
from lmcourse.data import Vocab
from lmcourse.data.wiki import wiki_text
from lmcourse.models.gated import GatedLM
from lmcourse.models.ngram_tuning import (
    CHAR_ORDERS,
    NGramCounts,
    NGramSetting,
    tune_ngram,
    tuned_perplexities,
)
from lmcourse.models.transformer import TransformerLM
from lmcourse.train import lm_train_step, perplexity, windowed_nll

STREAMS = 32
SIZES = {"300k": 300_000, "600k": 600_000, "1200k": 1_200_000, "full": None}
SHARED = {
    "corpus": "wiki (gensim's excerpt, lowercased; characters seen < 10 times in training "
              "become one unknown symbol)",
    "batch": 32, "bptt": 128, "optimizer": "adam", "warmup_steps": 100, "clip": 1.0,
    "eval_every": 250, "patience": 2, "max_steps": 5000, "embed": 64, "layers": 2,
    "impl": "torch", "dropout": 0.1, "io_dropout": 0.1, "lr": 3e-3,
    "eval": f"{STREAMS} streams, state carried, each stream's first character unscored",
}
CELLS = {"lstm": {"cell": "lstm", "hidden": 512}, "gru": {"cell": "gru", "hidden": 592},
         # the same parameter count (3.35M); four pre-norm layers, lm-char-transformer's
         # dropout and learning rate (chosen there on the Lee tuning split)
         "transformer": {"cell": "transformer", "d_model": 256, "heads": 4, "layers": 4,
                         "feedforward": 1088, "positions": "sinusoidal", "lr": 2e-3}}
WINDOW_EVAL = (f"{STREAMS} streams, each read in windows of 128 characters moved 64 at a time "
               "(no state to carry), every character but a stream's first scored once")
RECURRENT_ONLY = ("embed", "impl", "io_dropout")


def recipe_for(cell: str, size: str) -> dict:
    shared = SHARED if cell != "transformer" else {
        **{k: v for k, v in SHARED.items() if k not in RECURRENT_ONLY}, "eval": WINDOW_EVAL}
    return {**shared, **CELLS[cell], "train_chars": SIZES[size] or "all"}


@cache
def wiki_chars() -> tuple[Vocab, dict[str, torch.Tensor]]:
    """The character vocabulary of the training part and each part's ids."""
    texts = {part: wiki_text(part) for part in ("train", "tuning", "held_out")}
    vocab = Vocab(list(texts["train"]), min_freq=10)
    ids = {part: torch.tensor(vocab.encode(list(t)), dtype=torch.long)
           for part, t in texts.items()}
    return vocab, ids


def training_ids(recipe: dict) -> torch.Tensor:
    ids = wiki_chars()[1]["train"]
    return ids if recipe["train_chars"] == "all" else ids[:recipe["train_chars"]]


def streams(ids: torch.Tensor, count: int = STREAMS) -> torch.Tensor:
    """``ids`` cut into ``count`` contiguous streams of equal length (``count x length``)."""
    length = len(ids) // count
    return ids[:count * length].view(count, length)


@torch.no_grad()
def network_stream_nll(model: nn.Module, rows: torch.Tensor, chunk: int = 256
                       ) -> tuple[float, int]:
    """Total negative log-likelihood (nats) and the number of characters scored: every
    character of every stream but the first, the state carried along the stream (for a
    transformer, which has none: windows of ``bptt`` moved half of it at a time,
    :func:`~lmcourse.train.windowed_nll`)."""
    if isinstance(model, TransformerLM):
        parts = [windowed_nll(model, row, model.max_len, model.max_len // 2) for row in rows]
        return sum(p[0] for p in parts), sum(p[1] for p in parts)
    model.eval()
    dev = next(model.parameters()).device
    total, count, state = 0.0, 0, None
    for start in range(0, rows.shape[1] - 1, chunk):
        x = rows[:, start:start + chunk].to(dev)
        y = rows[:, start + 1:start + chunk + 1].to(dev)
        x = x[:, :y.shape[1]]
        logits, state = model(x, state)
        total += float(nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                   y.reshape(-1), reduction="sum"))
        count += y.numel()
    model.train()
    return total, count


def ngram_stream_nll(counts: NGramCounts, setting: NGramSetting, rows: torch.Tensor
                     ) -> tuple[float, int]:
    """The same for an n-gram: each stream read alone, its first character unscored."""
    scorer = counts.rows_scorer(rows)
    return -scorer.log_prob(setting.order, setting.discount), scorer.scored


def stream_perplexities(model: nn.Module | None, counts: NGramCounts | None,
                        setting: NGramSetting | None, ids: torch.Tensor) -> dict[str, float]:
    """Perplexity of the network and/or the n-gram on the same streams of ``ids``, with the
    number of characters each scored (equal by construction; tested)."""
    rows, out = streams(ids), {}
    if model is not None:
        nll, n = network_stream_nll(model, rows)
        out |= {"network": perplexity(nll / n), "network_scored": n}
    if counts is not None and setting is not None:
        nll, n = ngram_stream_nll(counts, setting, rows)
        out |= {"ngram": perplexity(nll / n), "ngram_scored": n}
    return out


def build_model(recipe: dict) -> GatedLM | TransformerLM:
    if recipe["cell"] == "transformer":
        return TransformerLM(len(wiki_chars()[0]), recipe["d_model"], recipe["heads"],
                             recipe["layers"], recipe["feedforward"], max_len=recipe["bptt"],
                             positions=recipe["positions"], dropout=recipe["dropout"])
    return GatedLM(len(wiki_chars()[0]), recipe["hidden"], cell=recipe["cell"],
                   num_layers=recipe["layers"], embed=recipe["embed"], impl=recipe["impl"],
                   dropout=recipe["dropout"], io_dropout=recipe["io_dropout"])


def _batches(ids: torch.Tensor, recipe: dict, generator: torch.Generator):
    """Endless epochs of sequential minibatches, each epoch from a random offset."""
    b, t = recipe["batch"], recipe["bptt"]
    while True:
        offset = int(torch.randint(0, t, (1,), generator=generator))
        rows = streams(ids[offset:], b)
        for start in range(0, rows.shape[1] - t - 1, t):
            yield rows[:, start:start + t], rows[:, start + 1:start + t + 1], start == 0


def checkpoint_path(name: str, seed: int) -> Path:
    """Where a running seed keeps its latest checkpoint: the course cache (not committed:
    a run resumes from it when the next sitting is on the same machine)."""
    from lmcourse.course.cache import cache_dir

    return cache_dir() / "checkpoints" / f"{name}-seed{seed}.pt"


def _save_checkpoint(path: Path, recipe: dict, progress: dict) -> None:
    """Write ``progress`` (step, weights, optimiser, random states, curves) atomically,
    with the recipe it belongs to."""
    def write(tmp: str) -> None:
        torch.save({"recipe": json.dumps(recipe, sort_keys=True, default=str), **progress},
                   tmp)
    write_atomic(path, write)


def _load_checkpoint(path: Path, recipe: dict) -> dict | None:
    """The checkpoint at ``path`` if it exists and belongs to ``recipe`` (else ``None``,
    saying why); loaded with ``weights_only`` (tensors and plain values only)."""
    if not path.exists():
        return None
    try:
        saved = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 - a damaged checkpoint only costs a restart
        print(f"   checkpoint {path} unreadable ({type(err).__name__}): starting afresh")
        return None
    if saved.get("recipe") != json.dumps(recipe, sort_keys=True, default=str):
        print(f"   checkpoint {path} is for another recipe: starting afresh")
        return None
    return saved


def train(recipe: dict, seed: int, device: torch.device, progress: bool = True,
          stop_after: int | None = None, name: str = "lm-scale") -> SeedRun:
    """Train one seed until the tuning perplexity stops improving; score the best weights
    on the held-out streams. At every tuning evaluation the whole state of the run is
    checkpointed (:func:`checkpoint_path`); a run started again resumes from there and
    follows the same steps as one that was never stopped."""
    import lmcourse

    ids = wiki_chars()[1]
    limit = recipe["max_steps"] if stop_after is None else stop_after
    where = checkpoint_path(name, seed)
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(seed)
        model = build_model(recipe).to(device)
        opt = torch.optim.Adam(model.parameters(), lr=recipe["lr"])
        batch_gen = torch.Generator().manual_seed(seed)
        batches = _batches(training_ids(recipe), recipe, batch_gen)
        lr, best, best_state, misses = recipe["lr"], float("inf"), None, 0
        curve, losses, seconds, state, first = [], [], 0.0, None, 1
        saved = None if stop_after is not None else _load_checkpoint(where, recipe)
        if saved is not None:
            first = saved["step"] + 1
            for _ in range(saved["step"]):  # the same batches, in the same order
                next(batches)
            model.load_state_dict(saved["model"])
            opt.load_state_dict(saved["optimizer"])
            torch.set_rng_state(saved["torch_rng"])
            lr, best, misses = saved["lr"], saved["best"], saved["misses"]
            best_state = saved["best_state"]
            curve, losses, seconds = saved["curve"], saved["losses"], saved["seconds"]
            state = _detached(saved["state"], device)
            print(f"   {name} seed {seed}: resumed at step {saved['step']} from {where}",
                  flush=True)
        bar = lmcourse.progress_bar(range(limit), progress, desc=f"{name} seed {seed}",
                                    mininterval=10, initial=first - 1)
        step = first - 1
        for step in range(first, limit + 1):
            tick = time.perf_counter()
            x, y, fresh = next(batches)
            for group in opt.param_groups:
                group["lr"] = lr * min(1.0, step / recipe["warmup_steps"])
            loss, state = lm_train_step(model, opt, x.to(device), y.to(device),
                                        None if fresh else state, recipe["clip"])
            losses.append(loss)
            seconds += time.perf_counter() - tick
            bar.update(1)
            if stop_after is not None:  # the first-steps check needs the losses only
                continue
            if step % recipe["eval_every"] == 0 or step == limit:
                tuning = stream_perplexities(model, None, None, ids["tuning"])["network"]
                curve.append([step, round(seconds, 2), round(tuning, 4)])
                bar.set_postfix(tuning_ppl=f"{tuning:.3f}", lr=f"{lr:.1e}")
                if tuning < best:
                    best, misses = tuning, 0
                    best_state = copy.deepcopy(model.state_dict())
                else:
                    misses += 1
                    lr /= 2
                    if misses >= recipe["patience"]:
                        break
                _save_checkpoint(where, recipe, {
                    "step": step, "model": model.state_dict(), "optimizer": opt.state_dict(),
                    "torch_rng": torch.get_rng_state(), "lr": lr, "best": best,
                    "misses": misses, "best_state": best_state, "curve": curve,
                    "losses": losses, "seconds": seconds,
                    "state": _detached(state, torch.device("cpu"))})
        bar.close()
    if stop_after is not None:
        return SeedRun(curve=[], train_loss=losses, metrics={})
    if best_state is not None:
        model.load_state_dict(best_state)
    held_out = stream_perplexities(model, None, None, ids["held_out"])["network"]
    params = sum(p.numel() for p in model.parameters())
    tokens = step * recipe["batch"] * recipe["bptt"]
    metrics = {"held_out_ppl": round(held_out, 4), "tuning_ppl": round(best, 4),
               "best_step": curve[int(np.argmin([c[2] for c in curve]))][0] if curve else 0,
               "steps": step, "train_tokens": tokens, "parameters": params,
               "train_chars": len(training_ids(recipe)),
               "tokens_per_s": round(tokens / max(seconds, 1e-9))}
    where.unlink(missing_ok=True)  # finished: the result holds what the checkpoint did
    return SeedRun(curve=curve, train_loss=losses, metrics=metrics)


def _detached(state, device: torch.device):
    """A recurrent state (a tensor, a tuple of them, or None) without its graph, on
    ``device``."""
    if state is None:
        return None
    if isinstance(state, torch.Tensor):
        return state.detach().to(device)
    return tuple(_detached(s, device) for s in state)


@cache
def tuned_baselines(train_chars: int | str) -> dict[str, float]:
    """Both Kneser–Ney variants tuned on the tuning split, counted on ``train_chars``
    training characters, scored on the held-out streams; their chosen settings too."""
    vocab, ids = wiki_chars()
    train_ids = training_ids({"train_chars": train_chars}).numpy()
    tuned = tune_ngram(train_ids, ids["tuning"].numpy(), len(vocab), orders=CHAR_ORDERS)
    return tuned_perplexities(tuned, train_ids, streams(ids["held_out"]), len(vocab))


def baselines(recipe: dict) -> dict[str, float]:
    return dict(tuned_baselines(recipe["train_chars"]))


SHAPES = {"lstm": "LSTM (2 x 512)", "gru": "GRU (2 x 592)",
          "transformer": "transformer (4 x 256, feed-forward 1088)"}


def _scale_reference(cell: str, size: str, seconds: float, seeds: tuple[int, ...] = (0,),
                     converged: bool = False) -> Reference:
    name = f"lm-scale-{cell}-{size}" + ("-converged" if converged else "")
    recipe = {**recipe_for(cell, size), **(CONVERGED if converged else {})}

    def train_named(recipe, seed, device, progress=True, stop_after=None):
        return train(recipe, seed, device, progress, stop_after, name=name)

    return Reference(
        name=name, recipe=recipe, train=train_named,
        evaluate=no_weights(name, " (the figure needs its curves and metrics only)"),
        keep_weights=(),
        title=f"character {SHAPES[cell]} on {SIZES[size] or 'all'} Wikipedia training "
              f"characters{' trained to convergence' if converged else ''} vs tuned Kneser-Ney",
        baselines=baselines, seconds_per_seed=seconds, seeds=seeds, first_steps=5,
        seeds_why="" if len(seeds) >= 3 else (
            "the largest size without the CPU budget's step cap (minutes on a GPU, several "
            "sittings on one CPU thread): whether the "
            "capped runs' order holds at convergence; the verdicts rest on the capped "
            "three-seed runs" if converged else
            "one point of the data-scaling trend (chapter 03's figure); the verdict at the "
            "largest size rests on the three seeds of lm-scale-lstm-full and "
            "lm-scale-transformer-full"),
        tolerance=2e-3,
        notes=["the tuning split chooses the network's stopping step and the n-gram's order "
               "and discount; the held-out articles are read once, for the verdict",
               "both sides scored on the same characters of the same 32 held-out streams",
               "trained beside other work (other runs, on the 2-core CPU or sharing the GPU): "
               "the seconds and tokens/s are upper and lower bounds of what the recorded "
               "device does alone"])


# The largest size without the 5,000-step cap the CPU budget sets (the 1.2M-character LSTM
# was still improving at its cap), stopped by the tuning split alone. A GPU finishes both in
# minutes; one CPU thread runs the LSTM at about 1.1 steps/s and the transformer at about
# 0.95, so up to 5 and 6 hours, over several sittings that resume from the checkpoints.
# Measured: the LSTM stopped itself at step 10,500 (best 9,500) after 115 minutes on two
# threads of a 2-core CPU.
CONVERGED = {"max_steps": 20000, "eval_every": 500}

SCALE_REFS = {ref.name: ref for ref in [
    *(_scale_reference(cell, size, 900.0 * (i + 1)) for cell in CELLS
      for i, size in enumerate(SIZES) if size != "full"),
    _scale_reference("lstm", "full", 3600.0, seeds=(0, 1, 2)),
    _scale_reference("gru", "full", 3600.0),
    *(_scale_reference("transformer", size, 900.0 * (i + 1)) for i, size in enumerate(SIZES)
      if size != "full"),
    _scale_reference("transformer", "full", 3600.0, seeds=(0, 1, 2)),
    *(_scale_reference(cell, "full", 4 * 3600.0, converged=True)
      for cell in ("lstm", "transformer")),
]}


def is_converged(result: ReferenceResult) -> bool:
    """Whether ``result`` is a run without the CPU budget's step cap (``-converged``)."""
    return result.recipe["max_steps"] > SHARED["max_steps"]


def by_model(results: list[ReferenceResult],
             converged: bool = False) -> dict[str, list[ReferenceResult]]:
    """``{model label: its results, smallest training set first}`` (LSTM, GRU, transformer):
    the capped runs of the figure, or with ``converged`` the runs without the cap."""
    grouped: dict[str, list[ReferenceResult]] = {}
    for label, cell in (("LSTM", "lstm"), ("GRU", "gru"), ("transformer", "transformer")):
        mine = [r for r in results if r.recipe["cell"] == cell and is_converged(r) == converged]
        if mine:
            grouped[label] = sorted(mine, key=lambda r: r.values("train_chars")[0])
    return grouped


def converged_lines(capped: dict[str, list[ReferenceResult]],
                    uncapped: dict[str, list[ReferenceResult]]) -> list[str]:
    """One line per model run without the step cap: its held-out perplexity and best step
    beside the capped run of the same size (its seeds' mean, and the same seed's figure)
    and the tuned Kneser–Ney model there."""
    lines = []
    for label, (run,) in uncapped.items():
        same = [r for r in capped.get(label, []) if r.values("train_chars")[0] ==
                run.values("train_chars")[0]]
        beside = ""
        if same:
            capped_run, seed = same[0], run.seeds[0]
            seeds = len(capped_run.seeds)
            beside = f" against {capped_run.mean('held_out_ppl'):.3f} with the cap ({seeds} " \
                     f"seed{'s' if seeds > 1 else ''}"
            if seeds > 1 and seed in capped_run.seeds:
                beside += (f"; seed {seed} alone "
                           f"{capped_run.metrics[seed]['held_out_ppl']:.3f}")
            beside += ")"
        lines.append(f"{label} without the {SHARED['max_steps']:,}-step cap "
                     f"({run.device_kind}): held-out perplexity "
                     f"{run.mean('held_out_ppl'):.3f} at best step "
                     f"{int(run.mean('best_step')):,} of {int(run.mean('steps')):,}{beside}; "
                     f"tuned modified KN {run.baselines['modified_kn_tuned']:.3f}")
    return lines


def scale_table(runs: dict[str, list[ReferenceResult]]) -> str:
    """One row per model and training size: held-out perplexity (mean and seeds' range),
    the steps it trained (early stopping), and the tuned Kneser–Ney models beside it with
    the settings the tuning split chose."""
    head = (f"{'model':12s} {'train chars':>11s} {'seeds':>5s} {'held-out ppl':>17s} "
            f"{'steps (best)':>13s} {'tuned KN, modified':>27s} {'tuned KN, one D':>24s}")
    lines = [head, "-" * len(head)]
    for label, results in runs.items():
        for r in results:
            ppl = r.values("held_out_ppl")
            spread = f" ({min(ppl):.3f}-{max(ppl):.3f})" if len(ppl) > 1 else ""
            steps = f"{int(statistics.mean(r.values('steps')))} " \
                    f"({int(statistics.mean(r.values('best_step')))})"
            b = r.baselines
            mod = f"{b['modified_kn_tuned']:.3f} (order {b['modified_kn_tuned_order']})"
            one = f"{b['kn_tuned']:.3f} (order {b['kn_tuned_order']}, D {b['kn_tuned_discount']})"
            lines.append(f"{label:12s} {r.values('train_chars')[0]:>11,d} {len(ppl):>5d} "
                         f"{statistics.mean(ppl):>6.3f}{spread:>11s} {steps:>13s} {mod:>27s} "
                         f"{one:>24s}")
    return "\n".join(lines)

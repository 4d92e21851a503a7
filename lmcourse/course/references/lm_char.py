"""Reference ``lm-char-lstm``: a character LSTM trained until it passes the Kneser–Ney n-grams.

Chapters 02, 03 and 07 train character language models on the Lee corpus for a CPU minute,
which is not enough for a network to pass a 5- or 6-gram. This reference trains the same
kind of model (PyTorch's fused LSTM inside chapter 03's ``GatedLM``) on the same split (the
Lee corpus lowercased, one token per character, the last 10% held out) to a real budget:
two layers of 384 units, 2,000 steps of 32 x 128 characters (about 25 passes over the
text), Adam with a short warm-up and a cosine decay. The settings were fixed in advance from
probes of how far a CPU minute goes (``STACK.md``), not tuned on the held-out text.
"""

from __future__ import annotations

import math
import time
from functools import cache

import torch

from lmcourse.course.reference import Reference, SeedRun, reference
from lmcourse.data import Vocab, load_corpus
from lmcourse.data.batching import lm_batches
from lmcourse.models.gated import GatedLM
from lmcourse.models.ngram import NGramLM
from lmcourse.train import clip_gradients, detach_state, evaluate_lm, lm_loss

RECIPE = {
    "corpus": "lee", "lowercase": True, "held_out": "last 10% of characters",
    "cell": "lstm", "impl": "torch", "hidden": 384, "layers": 2, "embed": 64, "dropout": 0.2,
    "batch": 32, "bptt": 128, "optimizer": "adam", "lr": 3e-3, "warmup_steps": 50,
    "schedule": "linear warm-up, then cosine decay to 0.1 x lr", "clip": 1.0, "steps": 2000,
    "eval_batch": 32, "eval_bptt": 64, "eval_steps": "25, 50, then every 100",
}


@cache
def char_split() -> tuple[list[int], list[int], int]:
    """(training ids, held-out ids, vocabulary size): chapter 03's split of the Lee text."""
    text = "\n".join(load_corpus("lee")).lower()
    vocab = Vocab(list(text))
    ids = vocab.encode(list(text))
    cut = int(0.9 * len(ids))
    return ids[:cut], ids[cut:], len(vocab)


def _model(recipe: dict, vocab_size: int) -> GatedLM:
    return GatedLM(vocab_size, recipe["hidden"], cell=recipe["cell"], num_layers=recipe["layers"],
                   embed=recipe["embed"], impl=recipe["impl"], dropout=recipe["dropout"])


def _held_out_batches(recipe: dict) -> list:
    _, held_out, _ = char_split()
    return lm_batches(held_out, recipe["eval_batch"], recipe["eval_bptt"],
                      generator=torch.Generator().manual_seed(0))


def learning_rate(step: int, recipe: dict) -> float:
    """Linear warm-up to ``lr`` over ``warmup_steps``, then cosine decay to ``0.1 lr``."""
    lr, warmup, total = recipe["lr"], recipe["warmup_steps"], recipe["steps"]
    if step <= warmup:
        return lr * step / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def _is_eval_step(step: int, total: int) -> bool:
    return step in (25, 50) or step % 100 == 0 or step == total


def train(recipe: dict, seed: int, device: torch.device, progress: bool = True,
          stop_after: int | None = None) -> SeedRun:
    """Train one seed; ``stop_after`` steps only when checking the first steps."""
    import lmcourse

    train_ids, _, vocab_size = char_split()
    held_out = _held_out_batches(recipe)
    total = recipe["steps"] if stop_after is None else min(stop_after, recipe["steps"])
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(seed)  # initial weights and dropout masks
        model = _model(recipe, vocab_size).to(device)
        opt = torch.optim.Adam(model.parameters(), lr=recipe["lr"])
        data_gen = torch.Generator().manual_seed(seed)  # the minibatches' offsets
        curve, losses, seconds, step = [], [], 0.0, 0
        bar = lmcourse.progress_bar(range(total), progress, desc=f"lm-char-lstm seed {seed}",
                                     mininterval=10)
        while step < total:
            state = None
            for x, y in lm_batches(train_ids, recipe["batch"], recipe["bptt"], generator=data_gen):
                tick = time.perf_counter()
                step += 1
                for group in opt.param_groups:
                    group["lr"] = learning_rate(step, recipe)
                logits, state = model(x.to(device), detach_state(state))
                loss = lm_loss(logits, y.to(device))
                opt.zero_grad()
                loss.backward()
                clip_gradients(model.parameters(), recipe["clip"])
                opt.step()
                losses.append(loss.item())
                seconds += time.perf_counter() - tick
                bar.update(1)
                if _is_eval_step(step, recipe["steps"]) or step == total:
                    ppl = evaluate_lm(model, held_out)
                    curve.append([step, round(seconds, 2), round(ppl, 4)])
                    bar.set_postfix(held_out_ppl=f"{ppl:.2f}")
                if step >= total:
                    break
        bar.close()
    tokens = step * recipe["batch"] * recipe["bptt"]
    metrics = {"held_out_ppl": curve[-1][2], "train_tokens": tokens,
               "tokens_per_s": round(tokens / max(seconds, 1e-9))}
    return SeedRun(curve=curve, train_loss=losses, metrics=metrics,
                   state={k: v.detach().cpu() for k, v in model.state_dict().items()})


def evaluate(recipe: dict, state: dict[str, torch.Tensor]) -> tuple[str, float]:
    """Held-out perplexity of stored weights (on the CPU, in float32)."""
    _, _, vocab_size = char_split()
    model = _model(recipe, vocab_size)
    model.load_state_dict({k: v.float() for k, v in state.items()})
    return "held_out_ppl", round(evaluate_lm(model, _held_out_batches(recipe)), 4)


def baselines(recipe: dict) -> dict[str, float]:
    """Interpolated Kneser–Ney n-grams of orders 1-6 on the same split."""
    train_ids, held_out, vocab_size = char_split()
    return {f"kn{n}": round(NGramLM(n, vocab_size).fit(train_ids).perplexity(held_out), 4)
            for n in range(1, 7)}


LM_CHAR_LSTM = reference(Reference(
    name="lm-char-lstm",
    title="character LSTM (2 x 384) on the Lee corpus vs Kneser-Ney n-grams",
    recipe=RECIPE, train=train, evaluate=evaluate, baselines=baselines,
    seconds_per_seed=600.0, first_steps=25, tolerance=2e-3,
    notes=["settings fixed in advance, not tuned on the held-out text",
           "seconds are training time only (held-out evaluation excluded), on the device named"],
))

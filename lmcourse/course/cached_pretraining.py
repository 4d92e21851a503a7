"""Pre-training kept in the course cache (chapter 09's tiny BERT).

:func:`~lmcourse.models.pretraining.pretrain` on a CPU takes most of a notebook's budget, and
chapter 09 needs that budget for fine-tuning too. :func:`pretrain_cached` runs it once per
recipe and keeps the weights and the loss curves in the course cache
(:mod:`lmcourse.course.cache`). The cache key hashes everything the result depends on: the
model's initial weights (so its configuration and seed), the sentence pairs, every setting
of ``pretrain`` (defaults included), the device and the torch version.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence

import torch

from lmcourse.course.cache import cached_tensors, keeps_rng
from lmcourse.course.keys import digest
from lmcourse.models.pretraining import BertForPreTraining, PretrainingHistory, pretrain

__all__ = ["pretrain_cached"]

_CURVES = ("mlm", "nsp", "tokens", "seconds")
_SIGNATURE = inspect.signature(pretrain)  # its settings and their defaults, for the key


@keeps_rng
def pretrain_cached(model: BertForPreTraining,
                    pairs: Sequence[tuple[Sequence[int], Sequence[int], int]],
                    name: str = "pretrained", progress: bool = True, what: str | None = None,
                    estimate: str | None = None, **settings) -> PretrainingHistory:
    """``pretrain(model, pairs, **settings)``, computed once per recipe: a later call with
    the same initial weights, pairs and settings loads the trained weights into ``model``
    and returns the recorded history (losses per step, tokens, the seconds training took).
    Training runs with the global generator seeded by ``seed`` (dropout draws from it), so
    with dropout 0 it repeats ``pretrain`` step for step; the caller's generators are left
    as they were. ``what`` and ``estimate`` are printed on a cache miss."""
    if settings.get("masker") is not None:
        raise ValueError("a custom masker cannot be hashed into the cache key: call pretrain")
    if settings.get("stop_after") is not None:
        raise ValueError("stop_after is for checking the first steps: call pretrain")
    bound = _SIGNATURE.bind(model, pairs, **settings)
    bound.apply_defaults()
    chosen = {k: v for k, v in bound.arguments.items()
              if k not in ("model", "pairs", "masker", "progress", "stop_after")}
    device = next(model.parameters()).device
    recipe = {"recipe": "pretrain-v1", "init": digest(model.state_dict()),
              "pairs": digest([[list(a), list(b), int(y)] for a, b, y in pairs]), **chosen}

    def compute() -> dict[str, torch.Tensor]:
        # dropout draws from the global generator: seed it, so the recipe fixes the result
        torch.manual_seed(chosen["seed"])
        history = pretrain(model, pairs, progress=progress, **settings)
        state = {f"model.{k}": v.detach().clone() for k, v in model.state_dict().items()}
        return {**state, "mlm": torch.tensor(history.mlm, dtype=torch.float64),
                "nsp": torch.tensor(history.nsp, dtype=torch.float64),
                "tokens": torch.tensor([history.tokens]),
                "seconds": torch.tensor([history.seconds], dtype=torch.float64)}

    state = cached_tensors(name, recipe, compute, keys=set(_CURVES), what=what or name,
                           estimate=estimate, device=device)
    model.load_state_dict({k.removeprefix("model."): v for k, v in state.items()
                           if k.startswith("model.")})
    model.to(device).eval()
    return PretrainingHistory(mlm=state["mlm"].tolist(), nsp=state["nsp"].tolist(),
                              tokens=int(state["tokens"][0]), seconds=float(state["seconds"][0]))

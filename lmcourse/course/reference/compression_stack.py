"""Reference ``compression-stack``: compression that is really faster, each method with a
short recovery fine-tune, and the proposal's pipeline (distil → prune → quantize) stacked,
three seeds.

The spoiler teacher (MiniLM fine-tuned on the spoiler labels, :mod:`lmcourse.course.teacher`)
is compressed six ways; a seed changes the batches that score the heads and units, the
recovery batches and the student's initial draw:

- ``pruned``: structured pruning, half of the heads (36 of 72) and half of the feed-forward
  units (4,608 of 9,216) cut out of the matrices, the least important first by Michel et
  al.'s gate importance (8 batches of 32 training sentences); ``pruned_recovered``: then
  200 steps of distillation from the teacher's logits;
- ``low_rank``: every feed-forward matrix replaced by its rank-96 SVD factors;
  ``low_rank_recovered``: then the same recovery;
- ``student``: the half-depth student (:func:`lmcourse.models.distill.half_depth_student`,
  every other teacher layer) distilled for 400 steps; ``student_pruned``: the student
  structurally pruned the same way and recovered; ``student_pruned_int8``: that, with
  dynamic int8 Linear layers.

Recovery and distillation use the distillation loss ``α T² KL + β CE`` (``T = 2``,
:func:`lmcourse.models.distill.combined_loss`) on the distillation pool. Every model is
scored by ROC-AUC on all 2,300 distinct test sentences, with a paired bootstrap interval
of its difference from the teacher; latency depends only on the shapes, so each shape is
timed live on the reader's machine instead. The curve has one point per trained model:
[steps trained so far in the seed, seconds, its ROC-AUC].
"""

from __future__ import annotations

import time
from functools import cache

import torch

from lmcourse.course.reference.recipe import ENCODER_FIRST_STEPS, Reference, SeedRun, no_weights

RECIPE = {
    "teacher": "chapter 13's spoiler teacher (MiniLM fine-tuned by lab 06's recipe; the course "
               "artifact)",
    "importance": "gate importance |dL/dxi| on 8 balanced batches of 32 training sentences",
    "share_removed": 0.5, "min_per_layer": 1,
    "low_rank": 96,
    "loss": "0.5 T^2 KL(teacher || model at T) + 0.5 CE(labels), T = 2 (chapter 12)",
    "data": "chapter 12's distillation pool (every training spoiler, 1.5x as many others)",
    "recovery_steps": 200, "recovery_lr": 1e-4, "student_steps": 400, "student_lr": 2e-4,
    "batch": 16,
    "eval": "ROC-AUC on every distinct test sentence (2,300); paired bootstrap interval of "
            "the difference from the teacher, 500 resamples",
}
ARMS = ("pruned", "pruned_recovered", "low_rank", "low_rank_recovered", "student",
        "student_pruned", "student_pruned_int8")


def corpus_of(recipe: dict) -> str:
    """``"spoilers"`` (the generated sample, this run) or ``"rt"`` (the real snippets,
    ``rt-compression``)."""
    return recipe.get("corpus", "spoilers")


@cache
def _setup(corpus: str = "spoilers"):
    """``(data, teacher, pool, logits, test texts, test labels)``; ``data`` has the
    tokenizer and ``max_len``, ``pool`` is ``(ids, mask, labels)`` with the teacher's
    ``logits``."""
    if corpus == "rt":
        from lmcourse.course.reference.rt_teacher import rt_setup

        return rt_setup()
    from lmcourse.course.teacher import distillation_pool, spoiler_data, spoiler_teacher
    from lmcourse.data.goodreads import distinct_sentences

    data = spoiler_data()
    teacher = spoiler_teacher(data).cpu().eval()
    pool, logits = distillation_pool(data, teacher)
    texts, labels = distinct_sentences(data.test)
    return data, teacher, pool, logits, texts, labels


def _scores(model: torch.nn.Module, corpus: str = "spoilers") -> list[float]:
    from lmcourse import finetune

    data, *_, texts, _ = _setup(corpus)
    return finetune.predict_texts(model, data.tokenizer, texts, data.max_len)


@cache
def _teacher_scores(corpus: str = "spoilers") -> tuple[float, ...]:
    return tuple(_scores(_setup(corpus)[1], corpus))


def structured_prune(model: torch.nn.Module, recipe: dict, seed: int) -> torch.nn.Module:
    """Remove ``recipe``'s share of the heads and of the feed-forward units from ``model``,
    the least important first (gate importance on balanced training batches drawn with ``seed``)."""
    from lmcourse import finetune
    from lmcourse.models.compress import gate_importance
    from lmcourse.models.structured_pruning import (
        keep_most_important,
        prune_ffn_units,
        prune_heads,
    )

    data, _, pool, *_ = _setup(corpus_of(recipe))
    ids, mask, labels = pool
    device = next(model.parameters()).device

    def importance(of: str) -> torch.Tensor:
        batches = iter(finetune.balanced_batches(labels, 32, 8,
                                                 torch.Generator().manual_seed(seed)))

        def batch_loss(gated):
            rows = next(batches)
            b_ids, b_mask = finetune.trim(ids[rows], mask[rows])
            return torch.nn.functional.cross_entropy(gated(b_ids.to(device), b_mask.to(device)),
                                                     labels[rows].to(device))
        return gate_importance(model, batch_loss, batches=8, of=of)

    def keep(of: str) -> torch.Tensor:
        scores = importance(of)
        return keep_most_important(scores, round(recipe["share_removed"] * scores.numel()),
                                   recipe["min_per_layer"])

    heads, units = keep("heads"), keep("units")
    return prune_ffn_units(prune_heads(model, heads), units)


def _distil(model: torch.nn.Module, recipe: dict, seed: int, steps: int, lr: float,
            progress: bool, stop_after: int | None = None) -> list[float]:
    from lmcourse.models.distill import combined_loss, train_student

    _, _, pool, logits, *_ = _setup(corpus_of(recipe))

    def loss(m, ids, mask, labels, rows):
        return combined_loss(m(ids, mask), logits[rows].to(ids.device), labels, temperature=2.0)

    return train_student(model, pool, loss, steps=steps, batch_size=recipe["batch"], lr=lr,
                         seed=seed, progress=progress, stop_after=stop_after)


def train(recipe: dict, seed: int, device: torch.device, progress: bool = True,
          stop_after: int | None = None) -> SeedRun:
    """Seed ``seed`` of every arm; ``stop_after``: the first recovery steps of the pruned
    teacher only (the first-steps check)."""
    import copy

    from lmcourse.metrics import bootstrap_auc_difference, roc_auc
    from lmcourse.models.compress import (
        count_params,
        factorize_feed_forward,
        quantize_int8,
        serialized_bytes,
    )
    from lmcourse.models.distill import half_depth_student

    corpus = corpus_of(recipe)
    *_, labels = _setup(corpus)
    teacher = _setup(corpus)[1].to(device)
    start, metrics, losses, curve = time.perf_counter(), {}, [], []
    models: dict[str, torch.nn.Module] = {}

    def recovered(model, steps, lr):
        """``model`` after ``steps`` of distillation; the curve gets [all steps so far,
        seconds, ROC-AUC of the model just trained]."""
        model = copy.deepcopy(model).to(device)
        losses.extend(_distil(model, recipe, seed, steps, lr, progress, stop_after))
        model = model.cpu().eval()
        if stop_after is None:
            curve.append([len(losses), round(time.perf_counter() - start, 1),
                          round(roc_auc(labels, _scores(model, corpus)), 5)])
        return model

    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(seed)
        models["pruned"] = structured_prune(teacher, recipe, seed).cpu().eval()
        models["pruned_recovered"] = recovered(models["pruned"], recipe["recovery_steps"],
                                               recipe["recovery_lr"])
        if stop_after is not None:
            return SeedRun([], losses, {})
        models["low_rank"] = factorize_feed_forward(teacher, recipe["low_rank"]).cpu().eval()
        models["low_rank_recovered"] = recovered(models["low_rank"], recipe["recovery_steps"],
                                                 recipe["recovery_lr"])
        torch.manual_seed(seed)
        models["student"] = recovered(half_depth_student(teacher), recipe["student_steps"],
                                      recipe["student_lr"])
        models["student_pruned"] = recovered(
            structured_prune(models["student"].to(device), recipe, seed),
            recipe["recovery_steps"], recipe["recovery_lr"])
        models["student_pruned_int8"] = quantize_int8(models["student_pruned"])
    teacher_scores = _teacher_scores(corpus)
    for arm in ARMS:
        scores = _scores(models[arm], corpus)
        diff, low, high = bootstrap_auc_difference(labels, scores, teacher_scores)
        metrics[arm] = round(roc_auc(labels, scores), 5)
        metrics[f"{arm}_vs_teacher"] = [round(diff, 5), round(low, 5), round(high, 5)]
        metrics[f"{arm}_parameters"] = count_params(models[arm])  # int8 Linears: not counted
        metrics[f"{arm}_mb"] = round(serialized_bytes(models[arm]) / 1e6, 2)
    metrics["train_seconds"] = round(time.perf_counter() - start, 1)
    return SeedRun(curve, losses, metrics)


@cache
def baselines(corpus: str = "spoilers") -> dict[str, float]:
    """The teacher itself and the bag of words, on the same test sentences, the bag of words
    tuned on the validation split (the reviews' validation reviews, the real snippets'
    tuning split)."""
    from lmcourse.metrics import roc_auc

    data, *_, texts, labels = _setup(corpus)
    if corpus == "rt":
        from lmcourse.course.reference.rt_teacher import rt_bag_of_words

        bow = rt_bag_of_words()(texts)
    else:
        from lmcourse.models.baselines import tuned_bag_of_words_baseline

        bow = tuned_bag_of_words_baseline(data.train, data.validation)(texts)
    return {"teacher": round(roc_auc(labels, list(_teacher_scores(corpus))), 5),
            "bag_of_words": round(roc_auc(labels, bow.tolist()), 5)}


COMPRESSION_STACK = Reference(
    name="compression-stack",
    title="structured pruning, low rank and the distil-prune-quantize stack, each recovered "
          "by distillation",
    recipe=RECIPE, train=train, evaluate=no_weights("compression-stack"),
    baselines=lambda recipe: dict(baselines(corpus_of(recipe))), seconds_per_seed=180.0,
    keep_weights=(), first_steps=ENCODER_FIRST_STEPS)

"""Reference ``rt-distill``: distillation on real review snippets, where the teacher is worth
copying.

On the generated spoiler sample a bag of words reads the labels off template words, so a
fine-tuned teacher is hardly better than it and every compression verdict reads "no
difference". This run repeats ``distill-transfer``'s design (:mod:`.distill_transfer`) on
the Rotten Tomatoes snippets (:func:`lmcourse.course.reference.rt_curve.rt_task`), where
fine-tuned MiniLM is far ahead of a tuned bag of words at 256 labels. For each seed:

1. 256 labelled training snippets, drawn as ``rt-curve`` draws them (the same seed);
2. the **teacher**: MiniLM fine-tuned on those 256 by ``rt-curve``'s recipe (160 steps);
3. the **transfer set**: 2,048 other training snippets whose labels are never read; the
   teacher's logits stand in for them;
4. half-depth **students** (layers copied from every other teacher layer, DistilBERT's
   start, or random), for 120 and 300 steps of 16: *labels only* on the 256, and
   *distilled* on the 256 + 2,048 with ``alpha T^2 L_d + beta L_s`` (``T = 2``,
   ``alpha = beta = 0.5``);
5. the **bag of words, tuned** on the tuning split (36 settings,
   :func:`lmcourse.models.tuned_bag_of_words.tune_bag_of_words`) on the 256 labels, and the
   same search on the 256 + the teacher's labels for the 2,048.

Every model is scored by ROC-AUC on the 2,570 test snippets (films of their own).
"""

from __future__ import annotations

import time

import torch

from lmcourse.course.reference.distill_transfer import RECIPE as SPOILER_DISTILL
from lmcourse.course.reference.distill_transfer import distil_on_transfer_set, seed_run
from lmcourse.course.reference.recipe import ENCODER_FIRST_STEPS, Reference, SeedRun, no_weights
from lmcourse.course.reference.rt_curve import RT_RECIPE, fresh_share, rt_task

__all__ = ["RT_DISTILL", "RT_DISTILL_RECIPE", "train_rt_distill"]

RT_DISTILL_RECIPE = {
    **SPOILER_DISTILL,
    "task": "Rotten Tomatoes snippets, fresh (1) or rotten (0), rt-curve's split by film",
    "label_draw": "rt-curve's label_order, the same seed",
    "teacher": "MiniLM fine-tuned on the labelled snippets, rt-curve's recipe",
    "transfer_draw": "random training snippets outside the labelled ones; their labels are "
                     "never read",
    "bag_of_words": "tuned on the tuning split (ROC-AUC): n-grams, weighting, lambda",
    "bag_of_words_grid": RT_RECIPE["bag_of_words_grid"],
    "max_len": RT_RECIPE["max_len"], "finetune": RT_RECIPE["finetune"],
}
del RT_DISTILL_RECIPE["lambdas"]


def train_rt_distill(recipe: dict, seed: int, device: torch.device, progress: bool = True,
                     stop_after: int | None = None) -> SeedRun:
    """Teacher, students and bags of words of one seed; the curve is the distilled
    student's test ROC-AUC at each length."""
    from lmcourse.models.tuned_bag_of_words import WEIGHTINGS, tune_bag_of_words

    (task, tune_x, tune_y), start = rt_task(), time.perf_counter()
    run = distil_on_transfer_set(task, recipe, seed, device, stop_after)
    if stop_after is not None:
        return SeedRun([], run.teacher_losses, {})
    grid, chosen = recipe["bag_of_words_grid"], {}
    for arm, (x, y) in {"bag_of_words": (run.texts, run.labels),
                        "bag_of_words_transfer": (run.pool, run.hard)}.items():
        bow = tune_bag_of_words(x, y, tune_x, tune_y, grid["ngrams"], grid["weighting"],
                                grid["lambdas"])
        run.predictions[arm] = bow(task.test_texts)
        chosen.update({f"{arm}_ngrams": bow.settings.ngrams, f"{arm}_lambda": bow.settings.lam,
                       f"{arm}_weighting": WEIGHTINGS.index(bow.settings.weighting)})
    return seed_run(task, recipe, run, start, "fresh", chosen)


RT_DISTILL = Reference(
    name="rt-distill",
    title="distillation on real review snippets: a MiniLM teacher fine-tuned on 256 labels "
          "labels 2,048 more snippets for a half-depth student",
    recipe=RT_DISTILL_RECIPE,
    train=train_rt_distill,
    evaluate=no_weights("rt-distill", " (students are scored as they are trained)"),
    baselines=fresh_share,
    seconds_per_seed=600.0,
    keep_weights=(), first_steps=ENCODER_FIRST_STEPS,
    notes=["the bag of words' settings are chosen on the tuning split (films of their own), "
           "for the 256 labels and again for the 256 + the teacher's 2,048"],
)

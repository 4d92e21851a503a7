"""Reference ``distilbert-cosine``: DistilBERT's cosine loss, trained, against the same
student without it, three seeds.

DistilBERT's triple loss adds ``L_cos = 1 - cos(h^S, h^T)`` over the last hidden vectors
to the soft-target loss and the task loss. The half-depth student
(:func:`lmcourse.models.distill.half_depth_student`: every other teacher layer, the same
width, so no projection is needed) is distilled from the spoiler teacher twice per seed, on
the same batches:

- ``distillation``: ``α T² L_d + β L_s`` (``T = 2``, ``α = β = 0.5``), the distillation
  loss (:func:`lmcourse.models.distill.combined_loss`);
- ``distillation_cosine``: the same plus ``γ L_cos`` over the real tokens, ``γ = 0.25``
  (the released training command weighs the cosine half as much as the masked LM, whose
  place ``L_s`` takes here).

Scored like ``tinybert-stages`` (ROC-AUC on every test spoiler and 2,000 other test
sentences), beside the teacher and a bag of words on the same labels. The curve has one
point per student: [steps trained so far in the seed, seconds, its ROC-AUC].
"""

from __future__ import annotations

import time

import torch

from lmcourse.course.reference.recipe import Reference, SeedRun, no_weights
from lmcourse.course.reference.tinybert_stages import _setup, baselines

RECIPE = {
    "teacher": "chapter 12's spoiler teacher (the course artifact)",
    "student": "3 layers of width 384 copied from every other teacher layer, embeddings "
               "frozen (half_depth_student(teacher))",
    "data": "chapter 12's distillation pool (every training spoiler, 1.5x as many others) "
            "with the teacher's logits",
    "steps": 200, "batch": 16, "lr": 2e-4, "temperature": 2.0, "alpha": 0.5, "beta": 0.5,
    "gamma_cos": 0.25,
    "eval": "ROC-AUC on every test spoiler and 2,000 other test sentences",
}
ARMS = ("distillation", "distillation_cosine")


def _loss(recipe: dict, cosine: bool):
    from lmcourse.models.distill import combined_loss, cosine_embedding_loss

    _, teacher, _, logits, *_ = _setup()

    def loss(student, ids, mask, labels, rows):
        s_hidden = student.encoder(ids, attention_mask=mask).last_hidden_state
        s_logits = student.classifier(student.dropout(s_hidden[:, 0]))
        total = combined_loss(s_logits, logits[rows].to(ids.device), labels,
                              temperature=recipe["temperature"], alpha=recipe["alpha"],
                              beta=recipe["beta"])
        if cosine:
            with torch.no_grad():
                t_hidden = teacher.encoder(ids, attention_mask=mask).last_hidden_state
            total = total + recipe["gamma_cos"] * cosine_embedding_loss(s_hidden, t_hidden,
                                                                        mask)
        return total
    return loss


def train(recipe: dict, seed: int, device: torch.device, progress: bool = True,
          stop_after: int | None = None) -> SeedRun:
    """Seed ``seed`` of both students; ``stop_after``: the first steps of the cosine arm
    only (the first-steps check)."""
    from lmcourse.models.distill import half_depth_student, train_student

    data, teacher, pool, _, _, texts, labels = _setup()
    teacher.to(device)
    start, metrics, losses, curve = time.perf_counter(), {}, [], []
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        for arm in reversed(ARMS):  # the cosine arm first, for the first-steps check
            torch.manual_seed(seed)
            student = half_depth_student(teacher)
            arm_losses = train_student(student, pool, _loss(recipe, arm != "distillation"),
                                       steps=recipe["steps"], batch_size=recipe["batch"],
                                       lr=recipe["lr"], seed=seed, progress=progress,
                                       stop_after=stop_after)
            if stop_after is not None:
                return SeedRun([], arm_losses, {})
            losses += arm_losses  # the cosine arm's first
            metrics[arm] = round(data.roc_auc(student, texts, labels), 5)
            curve.append([len(losses), round(time.perf_counter() - start, 1), metrics[arm]])
    metrics["train_seconds"] = round(time.perf_counter() - start, 1)
    return SeedRun(curve, losses, metrics)



DISTILBERT_COSINE = Reference(
    name="distilbert-cosine",
    title="DistilBERT's cosine loss on the hidden vectors, with and without",
    recipe=RECIPE, train=train, evaluate=no_weights("distilbert-cosine"),
    baselines=lambda recipe: dict(baselines()), seconds_per_seed=60.0, keep_weights=())

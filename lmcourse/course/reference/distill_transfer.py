"""Reference ``distill-transfer``: distillation where it pays, a teacher labelling sentences
nobody labelled.

A teacher fine-tuned on every label (:mod:`lmcourse.course.teacher`), distilled into a
student trained on the same sentences, teaches it nothing the labels did not already say,
and a bag of words is as good as both. DistilBERT and TinyBERT distil on a **transfer set**:
text the teacher labels for the student, far more than the task's labelled data. This
reference builds that regime on the spoiler sample, for each seed:

1. 256 labelled training sentences, drawn as ``spoiler-curve`` draws them;
2. the **teacher**: MiniLM fine-tuned on those 256 by ``spoiler-curve``'s recipe (160 steps);
3. the **transfer set**: 2,048 other distinct training sentences whose labels are never
   read; the teacher's logits stand in for them;
4. **students** of the same shape (half the teacher's layers,
   :func:`lmcourse.models.distill.half_depth_student`, trained by
   :func:`~lmcourse.models.distill.train_student`), for the same number of steps of 16
   (120, a live run's CPU budget, and 300):
   *labels only* on the 256, and *distilled* on the 256 + 2,048 with
   ``alpha T^2 L_d + beta L_s`` (``T = 2``, ``alpha = beta = 0.5``; ``L_s`` against the
   true label where there is one, the teacher's choice elsewhere); each pair twice, with
   layers copied from every other teacher layer (DistilBERT's start) and with random
   layers (a student that does not already know what the teacher knows);
5. the **bag of words** on the 256 labels, and the same bag of words trained on the 256 +
   the teacher's labels for the 2,048 (distillation into the simplest student).

Every model is scored by ROC-AUC on the 2,300 distinct test sentences.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from lmcourse.course.reference.recipe import ENCODER_FIRST_STEPS, Reference, SeedRun, no_weights
from lmcourse.course.reference.transfer_curve import (
    SPOILER_RECIPE,
    finetune_minilm,
    label_order,
    majority_auc,
    minilm_files,
    spoiler_task,
)
from lmcourse.metrics import roc_auc
from lmcourse.models.logistic import LAMBDAS, bag_of_words_classifier

RECIPE = {
    "task": "spoiler-curve's task: distinct sentences, lab 03's review split",
    "labels": 256, "label_draw": "spoiler-curve's label_order, the same seed",
    "teacher": "MiniLM fine-tuned on the labelled sentences, spoiler-curve's recipe",
    "transfer": 2048, "transfer_draw": "random distinct training sentences outside the "
                                       "labelled ones; their labels are never read",
    "student": "half depth, classifier copied, embeddings frozen "
               "(lmcourse.course.teacher.half_depth_student)",
    "student_inits": ["every other", "random"],
    "student_steps": [120, 300], "student_batch": 16, "student_lr": 2e-4,
    "temperature": 2.0, "alpha": 0.5, "beta": 0.5,
    "hard_labels": "true label where labelled, the teacher's argmax elsewhere",
    "lambdas": list(LAMBDAS), "max_len": SPOILER_RECIPE["max_len"],
    "finetune": SPOILER_RECIPE["finetune"],
    "curve_x": "student steps (the distilled student's test ROC-AUC at each length)",
}

STUDENTS = ("student_labels_only", "student_distilled", "random_student_labels_only",
            "random_student_distilled")  # each at every length of recipe["student_steps"]
ARMS = ("teacher", "bag_of_words", "bag_of_words_transfer")


def transfer_split(labels: torch.Tensor, recipe: dict = RECIPE, seed: int = 0
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """Indices of the labelled training sentences (the first ``recipe["labels"]`` of
    ``spoiler-curve``'s order) and of the transfer set (``recipe["transfer"]`` of the rest,
    drawn at random): the same for the reference's seed ``seed`` and for a live run."""
    order = label_order(labels, seed)
    rest = order[recipe["labels"]:]
    g = torch.Generator().manual_seed(20_000 + seed)
    transfer = rest[torch.randperm(len(rest), generator=g)[:recipe["transfer"]]]
    return order[:recipe["labels"]], transfer


@torch.no_grad()
def _logits(model: torch.nn.Module, texts: list[str], max_len: int) -> torch.Tensor:
    from lmcourse import finetune

    tokenizer, _ = minilm_files()
    return finetune.predict_logits(model, *finetune.encode(tokenizer, texts, max_len), 128)


def _student(teacher, texts: list[str], hard: torch.Tensor, soft: torch.Tensor | None,
             recipe: dict, seed: int, device: torch.device, init: str = "every other",
             steps: int = 300):
    """A half-depth student trained on ``texts`` (distilled when ``soft`` logits are given)."""
    import torch.nn.functional as F

    from lmcourse import finetune
    from lmcourse.models.distill import combined_loss, half_depth_student, train_student

    tokenizer, _ = minilm_files()
    ids, mask = finetune.encode(tokenizer, texts, recipe["max_len"])

    def loss(student, ids, mask, labels, rows):
        logits = student(ids, mask)
        if soft is None:
            return F.cross_entropy(logits, labels)
        return combined_loss(logits, soft[rows].to(logits.device), labels,
                             temperature=recipe["temperature"], alpha=recipe["alpha"],
                             beta=recipe["beta"])

    with torch.random.fork_rng(devices=None if device.type == "cuda" else []):
        torch.manual_seed(seed)
        student = half_depth_student(teacher, init)
        losses = train_student(student, (ids, mask, hard), loss, steps=steps,
                               batch_size=recipe["student_batch"], lr=recipe["student_lr"],
                               seed=seed, progress=False)
    return student, losses


@dataclass
class Distilled:
    """One seed's steps 1-4: the labelled texts and labels, the pool (labelled + transfer
    texts) with its hard labels (true where labelled, the teacher's argmax elsewhere), the
    teacher's first losses, and the test scores of the teacher and of every student."""

    texts: list[str]
    labels: torch.Tensor
    transfer: torch.Tensor  # the transfer set's row indices in the training texts
    pool: list[str]
    hard: torch.Tensor
    teacher_losses: list[float]
    predictions: dict[str, torch.Tensor]


def distil_on_transfer_set(task, recipe: dict, seed: int, device: torch.device,
                           stop_after: int | None = None) -> Distilled:
    """Label draw, teacher, transfer set and students (steps 1-4 of the recipe) on ``task``'s
    training texts, every model scored on its test texts. ``stop_after``: only the
    teacher's first steps (``predictions`` is then empty)."""
    from lmcourse import finetune

    labelled, transfer = transfer_split(task.train_labels, recipe, seed)
    texts = [task.train_texts[i] for i in labelled]
    labels = task.train_labels[labelled]
    teacher, teacher_losses = finetune_minilm(texts, labels, recipe, seed, device, stop_after)
    if stop_after is not None:
        return Distilled(texts, labels, transfer, [], labels, teacher_losses, {})
    pool = texts + [task.train_texts[i] for i in transfer]
    soft = _logits(teacher, pool, recipe["max_len"])
    hard = torch.cat([labels, soft[len(texts):].argmax(-1)])
    tokenizer, _ = minilm_files()

    def scores(model):
        return finetune.predict_texts(model, tokenizer, task.test_texts, recipe["max_len"])

    predictions = {"teacher": scores(teacher)}
    for steps in recipe["student_steps"]:
        for init, prefix in zip(recipe["student_inits"], ("", "random_"), strict=True):
            only, _ = _student(teacher, texts, labels, None, recipe, seed, device, init, steps)
            predictions[f"{prefix}student_labels_only@{steps}"] = scores(only)
            distilled, _ = _student(teacher, pool, hard, soft, recipe, seed, device, init, steps)
            predictions[f"{prefix}student_distilled@{steps}"] = scores(distilled)
    return Distilled(texts, labels, transfer, pool, hard, teacher_losses, predictions)


def seed_run(task, recipe: dict, run: Distilled, start: float, positives: str,
             extra: dict | None = None) -> SeedRun:
    """Every model's test ROC-AUC, how many of the transfer set's texts are of class 1 by
    the teacher and by the truth (``transfer_<positives>_by_teacher`` / ``_true``),
    ``extra`` metrics and the seed's seconds; the curve is the distilled student's ROC-AUC
    at each length."""
    y = task.test_labels.tolist()
    metrics = {arm: round(roc_auc(y, p.float().tolist()), 5)
               for arm, p in run.predictions.items()}
    metrics.update(extra or {})
    metrics[f"transfer_{positives}_by_teacher"] = int(run.hard[len(run.texts):].sum())
    metrics[f"transfer_{positives}_true"] = int(task.train_labels[run.transfer].sum())
    metrics["train_seconds"] = round(time.perf_counter() - start, 1)
    curve = [[steps, metrics["train_seconds"], metrics[f"student_distilled@{steps}"]]
             for steps in recipe["student_steps"]]
    return SeedRun(curve, run.teacher_losses, metrics)


def train(recipe: dict, seed: int, device: torch.device, progress: bool = True,
          stop_after: int | None = None) -> SeedRun:
    task, start = spoiler_task(), time.perf_counter()
    run = distil_on_transfer_set(task, recipe, seed, device, stop_after)
    if stop_after is not None:
        return SeedRun([], run.teacher_losses, {})
    run.predictions["bag_of_words"] = bag_of_words_classifier(
        run.texts, run.labels, recipe["lambdas"], seed=seed)(task.test_texts)
    run.predictions["bag_of_words_transfer"] = bag_of_words_classifier(
        run.pool, run.hard, recipe["lambdas"], seed=seed)(task.test_texts)
    return seed_run(task, recipe, run, start, "spoilers")


DISTILL_TRANSFER = Reference(
    name="distill-transfer",
    title="distillation on a transfer set: a MiniLM teacher fine-tuned on 256 labels "
          "labels 2,048 more sentences for a half-depth student",
    recipe=RECIPE,
    train=train,
    evaluate=no_weights("distill-transfer"),
    baselines=lambda recipe: majority_auc(spoiler_task()),
    seconds_per_seed=160.0,
    keep_weights=(), first_steps=ENCODER_FIRST_STEPS,
)

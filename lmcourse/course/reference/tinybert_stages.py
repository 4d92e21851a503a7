"""Reference ``tinybert-stages``: TinyBERT's two stages against one, three seeds.

TinyBERT (Jiao et al., 2020) trains its student twice. **General distillation**: on
unlabelled text, a *pre-trained* (not fine-tuned) teacher's embeddings, hidden states and
attention maps are imitated layer by layer (:func:`lmcourse.models.distill.layer_map`).
**Task-specific distillation**: the *fine-tuned* teacher's layers and its predictions on
the task's data. The reference trains the half-depth student (3 layers of MiniLM's width,
fresh random layers, the teacher's embeddings frozen, as ``half_depth_student(...,
"random")``) four ways, each seed:

- ``two_stage``: general distillation from all-MiniLM-L6-v2 on the training sentences
  (labels unused), then task distillation from the spoiler teacher
  (:mod:`lmcourse.course.teacher`);
- ``one_stage``: task distillation only, the same steps as the second stage;
- ``labels_only``: cross-entropy on the labels, the same steps;
- ``every_other``: a stand-in for general distillation (DistilBERT's start), every other
  teacher layer copied, then the same task distillation.

Task distillation is the paper's: layer losses plus the prediction loss, no hard labels.
Scored by ROC-AUC on the spoiler evaluation sample (every test spoiler and 2,000 other
test sentences, :meth:`lmcourse.course.teacher.SpoilerData.evaluation_sample`), beside a
bag of words trained on the same labelled pool.
"""

from __future__ import annotations

import time
from functools import cache

import torch
import torch.nn.functional as F

from lmcourse.course.reference.recipe import ENCODER_FIRST_STEPS, Reference, SeedRun, no_weights

RECIPE = {
    "task_teacher": "chapter 12's spoiler teacher (MiniLM fine-tuned by lab 06's recipe on "
                    "every label; the course artifact)",
    "general_teacher": "all-MiniLM-L6-v2 as pre-trained",
    "student": "3 layers of width 384, random layers, the teacher's embeddings frozen, its "
               "classifier copied (half_depth_student(teacher, 'random'))",
    "general_text": "the training split's sentences, labels unused",
    "general_steps": 400, "general_batch": 32, "general_lr": 5e-4,
    "task_data": "chapter 12's distillation pool (every training spoiler, 1.5x as many "
                 "others) with the teacher's logits",
    "task_steps": 200, "task_batch": 16, "task_lr": 2e-4,
    "losses": {"general": "embedding + hidden + attention MSE, layer map 3 -> 6",
               "task": "the same layer losses + the prediction loss (soft cross-entropy, "
                       "t = 1); no hard labels",
               "labels_only": "cross-entropy on the labels"},
    "eval": "ROC-AUC on chapter 12's evaluation sample (test spoilers + 2,000 others)",
    "eval_others": 2000,
}
ARMS = ("two_stage", "one_stage", "labels_only", "every_other")
#: ``rt-tinybert-stages``: the same design on the real snippets, where the teacher is
#: clearly above a tuned bag of words
RT_RECIPE = {
    **{k: v for k, v in RECIPE.items() if k != "eval_others"},
    "corpus": "rt",
    "task_teacher": "rt-teacher: MiniLM fine-tuned on 256 labelled Rotten Tomatoes snippets "
                    "(rt-distill's seed-0 teacher; the course artifact)",
    "general_text": "the training snippets, labels unused",
    "task_data": "rt-distill's pool: the 256 labelled snippets and 2,048 transfer snippets, "
                 "with the teacher's logits",
    "eval": "ROC-AUC on the 2,570 test snippets (films no training snippet is about)",
    "bag_of_words": "tuned on the tuning split, on the teacher's 256 labels (rt_bag_of_words)",
}


def _corpus(recipe: dict) -> str:
    return recipe.get("corpus", "spoilers")


@cache
def _setup(corpus: str = "spoilers"):
    """``(data, teacher, pool, logits, general, test texts, test labels)``; ``data`` has the
    tokenizer, ``max_len`` and ``roc_auc(model, texts, labels)``."""
    if corpus == "rt":
        return _rt_setup()
    from lmcourse.course.teacher import distillation_pool, spoiler_data, spoiler_teacher

    data = spoiler_data()
    teacher = spoiler_teacher(data).eval()
    pool, logits = distillation_pool(data, teacher)
    ids, mask, _ = data.encode(data.train)
    general = (ids, mask, torch.zeros(len(ids), dtype=torch.long))
    texts, labels = data.evaluation_sample(others=RECIPE["eval_others"])
    return data, teacher, pool, logits, general, texts, labels


def _rt_setup():
    from types import SimpleNamespace

    from lmcourse import finetune
    from lmcourse.course.reference.rt_curve import rt_task
    from lmcourse.course.reference.rt_teacher import rt_setup
    from lmcourse.metrics import roc_auc

    shared, teacher, pool, logits, texts, labels = rt_setup()
    tokenizer, max_len = shared.tokenizer, shared.max_len
    ids, mask = finetune.encode(tokenizer, rt_task()[0].train_texts, max_len)

    def auc(model, texts, labels) -> float:
        return roc_auc(labels, finetune.predict_texts(model, tokenizer, texts, max_len).tolist())

    data = SimpleNamespace(tokenizer=tokenizer, max_len=max_len, roc_auc=auc)
    general = (ids, mask, torch.zeros(len(ids), dtype=torch.long))
    return data, teacher, pool, logits, general, texts, labels


@cache
def _general_teacher():
    from lmcourse.models.bert import BertModel
    from lmcourse.pretrained import minilm_path

    return BertModel.from_pretrained(minilm_path()).eval()


def _layer_losses(s_out, t_out) -> torch.Tensor:
    from lmcourse.models.distill import attention_loss, hidden_loss, layer_map

    mapping = layer_map(len(s_out.attentions), len(t_out.attentions))
    loss = sum(hidden_loss(s_out.hidden_states[m], t_out.hidden_states[g])
               for m, g in enumerate(mapping))  # m = 0: the embedding loss
    return loss + sum(attention_loss(s_out.attentions[m - 1], t_out.attentions[g - 1])
                      for m, g in enumerate(mapping) if m > 0)


def _general_loss(student, ids, mask, labels, rows):
    with torch.no_grad():
        t_out = _general_teacher().to(ids.device)(ids, attention_mask=mask)
    return _layer_losses(student.encoder(ids, attention_mask=mask), t_out)


def _task_loss(teacher: torch.nn.Module, logits: torch.Tensor):
    from lmcourse.models.distill import prediction_loss

    def loss(student, ids, mask, labels, rows):
        with torch.no_grad():
            t_out = teacher.encoder(ids, attention_mask=mask)
        s_out = student.encoder(ids, attention_mask=mask)
        s_logits = student.classifier(student.dropout(s_out.last_hidden_state[:, 0]))
        return (_layer_losses(s_out, t_out)
                + prediction_loss(s_logits, logits[rows].to(s_logits.device)))
    return loss


def _labels_loss(student, ids, mask, labels, rows):
    return F.cross_entropy(student(ids, mask), labels)


def train(recipe: dict, seed: int, device: torch.device, progress: bool = True,
          stop_after: int | None = None) -> SeedRun:
    """Seed ``seed`` of the four students; ``stop_after``: the first general-distillation
    steps only (the first-steps check)."""
    from lmcourse.models.distill import half_depth_student, train_student

    data, teacher, pool, logits, general, texts, labels = _setup(_corpus(recipe))
    teacher.to(device)
    _general_teacher().to(device)
    start, metrics, curve = time.perf_counter(), {}, []

    def student(init: str):
        torch.manual_seed(seed)
        return half_depth_student(teacher, init)

    def task(model, loss):
        return train_student(model, pool, loss, steps=recipe["task_steps"],
                             batch_size=recipe["task_batch"], lr=recipe["task_lr"], seed=seed,
                             progress=progress)

    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        two = student("random")
        general_losses = train_student(
            two, general, _general_loss, steps=recipe["general_steps"],
            batch_size=recipe["general_batch"], lr=recipe["general_lr"], seed=seed,
            progress=progress, stop_after=stop_after)
        if stop_after is not None:
            return SeedRun([], general_losses, {})
        metrics["after_general"] = round(data.roc_auc(two, texts, labels), 5)
        curve.append([recipe["general_steps"], round(time.perf_counter() - start, 1),
                      metrics["after_general"]])
        task_losses = task(two, _task_loss(teacher, logits))
        metrics["two_stage"] = round(data.roc_auc(two, texts, labels), 5)
        curve.append([recipe["general_steps"] + recipe["task_steps"],
                      round(time.perf_counter() - start, 1), metrics["two_stage"]])
        for arm, init, loss in (("one_stage", "random", _task_loss(teacher, logits)),
                                ("labels_only", "random", _labels_loss),
                                ("every_other", "every other", _task_loss(teacher, logits))):
            model = student(init)
            task(model, loss)
            metrics[arm] = round(data.roc_auc(model, texts, labels), 5)
    metrics["train_seconds"] = round(time.perf_counter() - start, 1)
    return SeedRun(curve, general_losses + task_losses, metrics)


@cache
def baselines(corpus: str = "spoilers") -> dict[str, float]:
    """The teacher's ROC-AUC and a bag of words: on the spoilers trained on the pool's
    labels, on the real snippets tuned on the teacher's 256 labels."""
    from lmcourse.metrics import roc_auc
    from lmcourse.models.logistic import bag_of_words_classifier

    data, teacher, pool, _, _, texts, labels = _setup(corpus)
    if corpus == "rt":
        from lmcourse.course.reference.rt_teacher import rt_bag_of_words

        bow = rt_bag_of_words()(texts)
        return {"teacher": round(data.roc_auc(teacher, texts, labels), 5),
                "bag_of_words": round(roc_auc(labels, bow.float().tolist()), 5)}
    pool_texts = data.tokenizer.batch_decode(pool[0], skip_special_tokens=True)
    bow = bag_of_words_classifier(pool_texts, pool[2], seed=0)(texts)
    return {"teacher": round(data.roc_auc(teacher, texts, labels), 5),
            "bag_of_words": round(roc_auc(labels, bow.float().tolist()), 5)}



TINYBERT_STAGES = Reference(
    name="tinybert-stages",
    title="TinyBERT's general + task distillation vs task distillation alone, labels alone "
          "and every-other-layer initialisation",
    recipe=RECIPE, train=train, evaluate=no_weights("tinybert-stages"),
    baselines=lambda recipe: dict(baselines()), seconds_per_seed=240.0, keep_weights=(),
    first_steps=ENCODER_FIRST_STEPS)

RT_TINYBERT_STAGES = Reference(
    name="rt-tinybert-stages",
    title="TinyBERT's two stages on real snippets: general + task distillation vs task "
          "distillation alone, labels alone and every-other-layer initialisation",
    recipe=RT_RECIPE, train=train, evaluate=no_weights("rt-tinybert-stages"),
    baselines=lambda recipe: dict(baselines("rt")), seconds_per_seed=600.0, keep_weights=(),
    first_steps=ENCODER_FIRST_STEPS,
    notes=["the teacher is rt-distill's seed-0 teacher (0.819 test ROC-AUC), the student "
           "learns from its 2,304-snippet pool; the labels-only student from the 256 labels "
           "and the teacher's choice on the transfer snippets, as the pool holds them"])

"""The teacher of distillation and compression on real snippets: MiniLM fine-tuned on 256
labelled Rotten Tomatoes snippets, the labels ``rt-curve``'s and ``rt-distill``'s seed 0
draw, by their recipe (160 steps). It is ``rt-distill``'s seed-0 teacher (0.819 test
ROC-AUC, where the bag of words tuned on the same 256 labels scores 0.660), so what it
knows is clearly more than a bag of words can read off the labels.

Its students learn from the **pool**: those 256 snippets with their labels and the 2,048
snippets of ``rt-distill``'s transfer set with the teacher's choice, the teacher's logits
for all 2,304 (the labels of the 2,048 are never read).
"""

from __future__ import annotations

from functools import cache
from types import SimpleNamespace

import torch

from lmcourse.course.reference.rt_curve import RT_RECIPE, rt_task
from lmcourse.course.reference.transfer_curve import finetune_minilm, minilm_files

__all__ = ["RT_TEACHER_ESTIMATE", "RT_TEACHER_WHAT", "rt_bag_of_words", "rt_labelled",
           "rt_setup", "rt_teacher"]

RT_TEACHER_WHAT = ("MiniLM fine-tuned on 256 labelled Rotten Tomatoes snippets (rt-distill's "
                   "seed-0 teacher: lab 07's, chapters 12-13's on real snippets)")
RT_TEACHER_ESTIMATE = "about 80 s on a 2-core CPU"
OUTPUTS = ("losses", "pool_logits", "test_fresh")


@cache
def rt_labelled() -> tuple[list[str], torch.Tensor, list[str]]:
    """``(labelled texts, their labels, transfer texts)``: the 256 training snippets the
    teacher learns from (rt-distill's seed-0 draw) and the 2,048 others of its transfer set,
    whose labels are never read."""
    from lmcourse.course.reference.distill_transfer import transfer_split
    from lmcourse.course.reference.rt_distill import RT_DISTILL_RECIPE

    task, _, _ = rt_task()
    labelled, transfer = transfer_split(task.train_labels, RT_DISTILL_RECIPE, seed=0)
    return ([task.train_texts[i] for i in labelled], task.train_labels[labelled],
            [task.train_texts[i] for i in transfer])


def _teacher_recipe(steps: int | None) -> dict:
    """rt-distill's recipe, its fine-tuning cut to ``steps`` if given (the unit tests)."""
    from lmcourse.course.reference.rt_distill import RT_DISTILL_RECIPE

    if steps is None:
        return RT_DISTILL_RECIPE
    return {**RT_DISTILL_RECIPE, "finetune": {**RT_DISTILL_RECIPE["finetune"],
                                              "min_steps": steps, "max_steps": steps}}


def rt_teacher(steps: int | None = None) -> torch.nn.Module:
    """The few-label real-snippet teacher, in eval mode on the CPU, cached (``make teacher``
    computes it beforehand), the caller's random generators left as they were. It is
    always trained on the CPU, so that the references that start from it replay their first
    steps on any machine. ``steps`` shortens the fine-tuning and keeps outputs for 64
    snippets only (the unit tests). Kept with it (:data:`OUTPUTS`): its per-step training
    losses ``model.losses``, its logits on the pool (the 256 labelled snippets, then the
    2,048 of the transfer set) ``model.pool_logits`` and its P(fresh) for each test snippet
    ``model.test_fresh``, so that a notebook need not run it over thousands of snippets."""
    from lmcourse.course.cache import keeps_rng

    with keeps_rng():
        return _rt_teacher(steps)


def _rt_teacher(steps: int | None) -> torch.nn.Module:
    from lmcourse import finetune
    from lmcourse.course.cache import cached_tensors
    from lmcourse.course.keys import digest
    from lmcourse.models.bert import BertModel
    from lmcourse.pretrained import minilm_path

    texts, labels, transfer = rt_labelled()
    recipe = _teacher_recipe(steps)
    weights = minilm_path() / "model.safetensors"
    key = {"recipe": "rt-teacher-v2", "max_len": recipe["max_len"],
           "finetune": recipe["finetune"], "texts": digest(texts), "labels": digest(labels),
           "minilm": digest(weights if weights.exists() else minilm_path())}

    def train() -> dict[str, torch.Tensor]:
        model, losses = finetune_minilm(texts, labels, recipe, 0, torch.device("cpu"))
        model = model.cpu().eval()
        tokenizer, _ = minilm_files()
        keep = None if steps is None else 64  # the unit tests' short teacher: a few outputs
        ids, mask = finetune.encode(tokenizer, [*texts, *transfer][:keep], recipe["max_len"])
        test_texts = rt_task()[0].test_texts[:keep]
        return {**model.state_dict(), "losses": torch.tensor(losses, dtype=torch.float64),
                "pool_logits": finetune.predict_logits(model, ids, mask, 128),
                "test_fresh": finetune.predict_texts(model, tokenizer, test_texts,
                                                     recipe["max_len"])}

    state = cached_tensors("rt-teacher", key, train, keys=set(OUTPUTS),
                           what=RT_TEACHER_WHAT, estimate=RT_TEACHER_ESTIMATE, device="cpu")
    model = finetune.SequenceClassifier(BertModel.from_pretrained(minilm_path()))
    model.freeze_embeddings()
    model.load_state_dict({k: v for k, v in state.items() if k not in OUTPUTS})
    model.losses = state["losses"].tolist()
    model.pool_logits, model.test_fresh = state["pool_logits"], state["test_fresh"]
    return model.eval()


def rt_teacher_first_steps(model: torch.nn.Module, steps: int | None = None
                           ) -> tuple[list[float], list[float], str]:
    """The teacher's first (up to 10) fine-tuning steps trained again here, beside the cached
    ones (the artifact's first-steps check)."""
    texts, labels, _ = rt_labelled()
    first = min(10, len(model.losses))
    _, live = finetune_minilm(texts, labels, _teacher_recipe(steps), 0, torch.device("cpu"),
                              stop_after=first)
    return live, model.losses, "real-snippet teacher"


@cache
def rt_setup():
    """``(data, teacher, pool, logits, test texts, test labels)`` in the layout of
    :func:`lmcourse.course.reference.compression_stack._setup`: ``data`` holds the tokenizer
    and ``max_len``; ``pool`` is ``(ids, mask, labels)`` of the 2,304 pool snippets, and
    ``logits`` the teacher's on them."""
    from lmcourse import finetune

    task, _, _ = rt_task()
    labelled_texts, labelled_y, transfer_texts = rt_labelled()
    texts = [*labelled_texts, *transfer_texts]
    teacher = rt_teacher()
    tokenizer, _ = minilm_files()
    ids, mask = finetune.encode(tokenizer, texts, RT_RECIPE["max_len"])
    logits = teacher.pool_logits
    hard = torch.cat([labelled_y, logits[len(labelled_texts):].argmax(-1)])
    data = SimpleNamespace(tokenizer=tokenizer, max_len=RT_RECIPE["max_len"])
    return data, teacher, (ids, mask, hard), logits, task.test_texts, task.test_labels.tolist()


@cache
def rt_bag_of_words():
    """The bag of words on the teacher's 256 labels, its settings chosen on the tuning
    split."""
    from lmcourse.models.tuned_bag_of_words import tune_bag_of_words

    _, tune_x, tune_y = rt_task()
    texts, labels, _ = rt_labelled()
    return tune_bag_of_words(texts, labels, tune_x, tune_y)

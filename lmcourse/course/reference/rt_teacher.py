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

__all__ = ["rt_bag_of_words", "rt_setup"]


@cache
def rt_setup():
    """``(data, teacher, pool, logits, test texts, test labels)`` in the layout of
    :func:`lmcourse.course.reference.compression_stack._setup`: ``data`` holds the tokenizer
    and ``max_len``; ``pool`` is ``(ids, mask, labels)`` of the 2,304 pool snippets, and
    ``logits`` the teacher's on them."""
    from lmcourse import finetune
    from lmcourse.course.reference.distill_transfer import transfer_split
    from lmcourse.course.reference.rt_distill import RT_DISTILL_RECIPE

    task, _, _ = rt_task()
    labelled, transfer = transfer_split(task.train_labels, RT_DISTILL_RECIPE, seed=0)
    texts = [task.train_texts[i] for i in [*labelled.tolist(), *transfer.tolist()]]
    teacher, _ = finetune_minilm(texts[:len(labelled)], task.train_labels[labelled],
                                 RT_DISTILL_RECIPE, 0, torch.device("cpu"))
    teacher = teacher.cpu().eval()
    tokenizer, _ = minilm_files()
    ids, mask = finetune.encode(tokenizer, texts, RT_RECIPE["max_len"])
    logits = finetune.predict_logits(teacher, ids, mask, 128)
    hard = torch.cat([task.train_labels[labelled], logits[len(labelled):].argmax(-1)])
    data = SimpleNamespace(tokenizer=tokenizer, max_len=RT_RECIPE["max_len"])
    return data, teacher, (ids, mask, hard), logits, task.test_texts, task.test_labels.tolist()


@cache
def rt_bag_of_words():
    """The bag of words on the teacher's 256 labels, its settings chosen on the tuning
    split."""
    from lmcourse.course.reference.distill_transfer import transfer_split
    from lmcourse.course.reference.rt_distill import RT_DISTILL_RECIPE
    from lmcourse.models.tuned_bag_of_words import tune_bag_of_words

    task, tune_x, tune_y = rt_task()
    labelled, _ = transfer_split(task.train_labels, RT_DISTILL_RECIPE, seed=0)
    return tune_bag_of_words([task.train_texts[i] for i in labelled],
                             task.train_labels[labelled], tune_x, tune_y)

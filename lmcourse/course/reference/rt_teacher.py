"""The teacher of compression on real snippets: MiniLM fine-tuned on every Rotten Tomatoes
training snippet by ``rt-curve``'s recipe (600 steps, seed 0; ``rt-curve``'s fine-tuned
models on all labels score 0.911-0.916 test ROC-AUC), its logits on those snippets, and the
bag of words tuned on the tuning split with the same labels: what ``rt-compression``
compresses, and what it must stay above.
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
    and ``max_len``; ``pool`` is every training snippet encoded, ``(ids, mask, labels)``,
    and ``logits`` the teacher's on them."""
    from lmcourse import finetune

    task, _, _ = rt_task()
    teacher, _ = finetune_minilm(task.train_texts, task.train_labels, RT_RECIPE, 0,
                                 torch.device("cpu"))
    teacher = teacher.cpu().eval()
    tokenizer, _ = minilm_files()
    ids, mask = finetune.encode(tokenizer, task.train_texts, RT_RECIPE["max_len"])
    logits = finetune.predict_logits(teacher, ids, mask, 128)
    data = SimpleNamespace(tokenizer=tokenizer, max_len=RT_RECIPE["max_len"])
    return (data, teacher, (ids, mask, task.train_labels), logits, task.test_texts,
            task.test_labels.tolist())


@cache
def rt_bag_of_words():
    """The bag of words on every training label, its settings chosen on the tuning split."""
    from lmcourse.models.tuned_bag_of_words import tune_bag_of_words

    task, tune_x, tune_y = rt_task()
    return tune_bag_of_words(task.train_texts, task.train_labels, tune_x, tune_y)

"""References ``tiny-bert`` and ``bench-*``: pre-training run long enough to learn context.

Chapters 09-11 pre-train tiny BERTs on the course's Goodreads sample. Given a CPU minute they
learn word frequencies and little else, and a two-sided bigram guesses masked words better;
run for a few thousand steps instead of a few hundred, the same models pass the n-gram
baselines. This module is the one name the chapters import; the code lives in four parts:

- ``pretraining_corpus``: the corpus, the fixed held-out masks and the spoiler probe;
- ``tiny_bert``: chapter 09's model and recipe, 3,000 steps (reference ``tiny-bert``);
- ``bench_arms``: chapters 10-11's bench and its arms, one change each (``bench-*``), with
  ``bench_masking``'s static masks;
- ``bench_results``: reading the committed runs into the chapters' tables.
"""

from __future__ import annotations

from lmcourse.course.references.bench_arms import (
    ALBERT_TUNING,
    ARMS,
    BATCH_TUNING,
    BENCH,
    BENCH_REFS,
    KEEP_WEIGHTS,
    LARGE_BATCH_WARMUP,
    LR_TUNING,
    SMALL_PAIRS,
    StaticMasker,
    bench_baselines,
    bench_config,
    build_model,
    deberta_intermediate,
    dev_scores,
    electra_steps,
    load_arm,
    step_flops,
    train_pairs,
)
from lmcourse.course.references.bench_results import bench_table, last_train_loss, seed_values
from lmcourse.course.references.pretraining_corpus import (
    CORPUS,
    PROBE_SENTENCES,
    bench,
    n_params,
    probe_auc,
    reviews,
)
from lmcourse.course.references.tiny_bert import (
    TINY_BERT,
    TINY_BERT_REF,
    load_tiny_bert,
    tiny_bert_baselines,
    tiny_bert_eval_batch,
    train_tiny_bert,
)

__all__ = [
    "ALBERT_TUNING", "ARMS", "BATCH_TUNING", "BENCH", "BENCH_REFS", "CORPUS", "KEEP_WEIGHTS",
    "LARGE_BATCH_WARMUP", "LR_TUNING", "PROBE_SENTENCES", "SMALL_PAIRS", "TINY_BERT",
    "TINY_BERT_REF",
    "StaticMasker", "bench", "bench_baselines", "bench_config", "bench_table", "build_model",
    "deberta_intermediate", "dev_scores", "electra_steps",
    "last_train_loss", "load_arm", "load_tiny_bert", "n_params", "probe_auc", "reviews",
    "seed_values", "step_flops", "tiny_bert_baselines", "tiny_bert_eval_batch",
    "train_pairs", "train_tiny_bert",
]

"""Every reference run the course has, in one list a reader can see.

A new reference is declared as a :class:`~lmcourse.course.reference.recipe.Reference` in a
module of this package and added to :data:`REFERENCES` here; nothing registers itself by
being imported. ``make reference LIST=1`` prints them with their measured times.
"""

from __future__ import annotations

from lmcourse.course.reference import (
    bench_arms,
    bert_heads,
    bilm_lee,
    compression_stack,
    distilbert_cosine,
    distill_transfer,
    lm_char,
    lm_scale,
    prose_scale,
    recall_converge,
    recall_sweep,
    reversal_sweep,
    rt_compression,
    rt_curve,
    rt_distill,
    rt_tiny_bert,
    tiny_bert,
    tinybert_stages,
    transfer_curve,
)
from lmcourse.course.reference.recipe import Reference

__all__ = ["REFERENCES", "get"]

WIKI_LANDED = ["wiki-bench-mlm"]

PROSE_LANDED = ["prose-bench-mlm", "prose-bench-span", "prose-bench-span-sbo",
                "prose-bench-deberta", "prose-bench-deberta-no-emd",
                "prose-bench-deberta-no-c2p", "prose-bench-deberta-no-p2c", "prose-bench-nsp",
                "prose-bench-sop", "prose-bench-electra", "prose-bench-albert",
                "prose-bench-dynamic-40", "prose-bench-static-40", "prose-bench-static10-40"]

_ALL: list[Reference] = [
    # character language models against Kneser–Ney n-grams
    lm_char.LM_CHAR_RNN, lm_char.LM_CHAR_LSTM, lm_char.LM_CHAR_GRU, lm_char.LM_CHAR_TRANSFORMER,
    # ... and on up to 8 times more text (Wikipedia): each run as it lands; the rest are in
    # lm_scale.SCALE_REFS (`python -m lmcourse.course.reference.scale_runs` runs them)
    *(lm_scale.SCALE_REFS[name] for name in [
        "lm-scale-lstm-300k", "lm-scale-lstm-600k", "lm-scale-lstm-1200k",
        "lm-scale-lstm-full", "lm-scale-gru-300k", "lm-scale-gru-600k", "lm-scale-gru-1200k",
        "lm-scale-gru-full", "lm-scale-transformer-300k", "lm-scale-transformer-600k",
        "lm-scale-transformer-1200k", "lm-scale-transformer-full",
        "lm-scale-lstm-full-converged"]),
    # the transformer's case: associative recall at equal size
    recall_sweep.RECALL_SWEEP,
    # ... and the LSTM trained ten times as long (each size as its seeds land; the rest are
    # declared in recall_converge.CONVERGE_REFS)
    *(recall_converge.CONVERGE_REFS[f"recall-converge-{n}"] for n in recall_converge.LANDED),
    # ... and the encoder-decoders on digit reversal at equal size
    reversal_sweep.REVERSAL_SWEEP,
    # the biLM on the Lee words against word n-grams
    bilm_lee.BILM_LEE,
    # pre-training: the tiny BERT, then the bench's arms (one change each)
    tiny_bert.TINY_BERT_REF, *bench_arms.BENCH_REFS.values(),
    # ... and the same arms on Wikipedia prose, each as it lands (the rest are declared in
    # bench_arms.WIKI_BENCH_REFS)
    *(bench_arms.WIKI_BENCH_REFS[name] for name in WIKI_LANDED),
    # ... and in the pre-training vocabulary (issue 55), each as it lands (the rest are
    # declared in bench_arms.PROSE_BENCH_REFS)
    *(bench_arms.PROSE_BENCH_REFS[name] for name in PROSE_LANDED),
    # ... and our BERT at a GPU's size in the pre-training vocabulary (issue 55)
    *prose_scale.SCALE_REFS.values(),
    # fine-tuning: learning curves and BERT's task heads
    transfer_curve.SPOILER_CURVE, transfer_curve.POLARITY_CURVE, rt_curve.RT_CURVE,
    rt_tiny_bert.RT_TINY_BERT, rt_tiny_bert.RT_PROSE_BERT, rt_tiny_bert.RT_PROSE_TINY_BERT,
    *bert_heads.HEAD_REFS.values(),
    # distillation and compression
    distill_transfer.DISTILL_TRANSFER, rt_distill.RT_DISTILL, distilbert_cosine.DISTILBERT_COSINE,
    tinybert_stages.TINYBERT_STAGES, tinybert_stages.RT_TINYBERT_STAGES,
    compression_stack.COMPRESSION_STACK,
    rt_compression.RT_COMPRESSION,
]


def _by_name(references: list[Reference]) -> dict[str, Reference]:
    names = [r.name for r in references]
    doubled = sorted({n for n in names if names.count(n) > 1})
    if doubled:
        raise ValueError(f"references listed twice: {doubled}")
    return {r.name: r for r in references}


REFERENCES: dict[str, Reference] = _by_name(_ALL)


def get(name: str) -> Reference:
    """The reference called ``name``; a ``KeyError`` listing the known ones otherwise."""
    if name not in REFERENCES:
        raise KeyError(f"no reference run named {name!r}; known: {sorted(REFERENCES)}")
    return REFERENCES[name]

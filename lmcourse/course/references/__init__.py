"""The course's reference runs; importing this package registers them."""

from lmcourse.course.references import (  # noqa: F401
    bert_heads,
    bilm_lee,
    compression_stack,
    distilbert_cosine,
    distill_transfer,
    lm_char,
    pretraining_bench,
    tinybert_stages,
    transfer_curve,
)

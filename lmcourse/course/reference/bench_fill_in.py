"""The pre-training bench's strongest count-based rival: the fill-in n-gram
(:mod:`lmcourse.models.fill_in_ngram`), tuned once per set of training sentences on the
development masks and scored on every kind of held-out blank: single pieces
(:func:`fill_in_ngram`), whole words and spans (:func:`fill_in_on_blanks`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import cache

import torch

from lmcourse.course.reference.pretraining_eval import (
    BLANK_KINDS,
    _data,
    bench,
    dev_batch,
    held_out_blanks,
)

Masks = tuple[tuple[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


def bench_masks(corpus: str) -> Masks:
    """The bench's ``(development, held-out)`` single-piece masks, each ``(ids, labels)``:
    :func:`dev_batch` chooses a setting, the held-out pairs score it."""
    _, dev_ids, dev_labels = dev_batch(corpus)
    b = bench(corpus)
    return (dev_ids, dev_labels), (b.eval_ids, b.eval_labels)


def _masks(corpus: str, masks: Callable[[], Masks] | None) -> Masks:
    return masks() if masks is not None else bench_masks(corpus)


@cache
@cache
def _tuned_fill_in(sentences: tuple[tuple[int, ...], ...], corpus: str,
                   masks: Callable[[], Masks] | None = None):
    """The fill-in n-gram fitted on ``sentences``, its order and discount chosen on the
    development masks (single pieces, as the networks' settings were; ``masks()`` gives
    another model's own, default the bench's): ``(model, tried)``."""
    from lmcourse.models.fill_in_ngram import tune_fill_in

    c = _data(corpus).corpus
    (dev_ids, dev_labels), _ = _masks(corpus, masks)
    return tune_fill_in(sentences, (dev_ids, dev_labels), vocab_size=len(c),
                        special_ids=c.special_ids, sep_id=c.sep_id, pad_id=c.pad_id,
                        workers=os.cpu_count() or 1)


@cache
def fill_in_on_blanks(sentences: tuple[tuple[int, ...], ...], corpus: str = "wiki"
                      ) -> dict[str, float]:
    """The same tuned fill-in n-gram on each kind of held-out blank (whole words, spans:
    :data:`BLANK_KINDS`); a masked neighbour is unknown to it, so a span's inner pieces
    are guessed from the span's edges alone, as a network must."""
    model, _ = _tuned_fill_in(sentences, corpus)
    return {f"fill_in_ngram_{kind}": round(model.accuracy(*held_out_blanks(corpus, kind)), 4)
            for kind in BLANK_KINDS}


@cache
def fill_in_ngram(sentences: tuple[tuple[int, ...], ...], corpus: str = "wiki",
                  masks: Callable[[], Masks] | None = None) -> dict[str, float]:
    """The bench's strongest count-based rival: a Kneser-Ney model that fills each
    blank from both sides (:mod:`lmcourse.models.fill_in_ngram`), its order and discount
    chosen on the development masks (:func:`dev_batch`: held-out pairs the scores never
    read, or the tuning articles), scored on the held-out ones; ``masks`` gives another
    model's development and held-out masks instead (:func:`bench_masks`' shape)."""
    from lmcourse.models.fill_in_ngram import DISCOUNTS

    model, tried = _tuned_fill_in(sentences, corpus, masks)
    _, held_out = _masks(corpus, masks)
    return {"fill_in_ngram": round(model.accuracy(*held_out), 4),
            "fill_in_ngram_order": model.order,
            "fill_in_ngram_discount": DISCOUNTS.index(model.discount),
            **{f"fill_in_ngram_dev@{o}/{d}": round(acc, 4) for o, d, acc in tried}}


def fill_in_label(baselines: dict[str, float], name: str = "tuned fill-in n-gram") -> str:
    """The fill-in n-gram's name for a table or a verdict, with the settings its
    development masks chose (as :func:`fill_in_ngram` records them)."""
    from lmcourse.models.fill_in_ngram import DISCOUNTS

    discount = DISCOUNTS[int(baselines["fill_in_ngram_discount"])]
    setting = "modified Kneser-Ney" if discount == "modified" else f"D = {discount:g}"
    return f"{name} (order {int(baselines['fill_in_ngram_order'])}, {setting})"


#: the blank kinds a bench table shows -> the fill-in n-gram's figure on each
FILL_IN_KEYS = {"masked_accuracy": "fill_in_ngram", "whole_word_accuracy":
                "fill_in_ngram_whole_word", "span_accuracy": "fill_in_ngram_span"}


def fill_in_row(baselines: dict[str, float]) -> dict[str, float]:
    """The fill-in n-gram's figure on each kind of blank, keyed as a bench table's columns
    (:func:`~lmcourse.course.reference.report.bench_table`'s ``rivals``)."""
    return {kind: baselines[key] for kind, key in FILL_IN_KEYS.items() if key in baselines}

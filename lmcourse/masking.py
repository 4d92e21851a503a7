"""Masked-language-model masking: which tokens BERT hides, and what it puts in their place.

BERT (Devlin et al., 2019) selects each non-special token independently with probability
``prob = 0.15``; the model must predict the original token at every selected position.
Of the selected tokens

    80 % become [MASK],   10 % become a random token,   10 % stay unchanged,

so the model cannot learn that only ``[MASK]`` positions matter (there is no ``[MASK]`` at
fine-tuning time). Labels hold the original id where a token was selected and ``-100``
elsewhere (the ``ignore_index`` of :func:`torch.nn.functional.cross_entropy`).

Three ways to choose the positions: one token at a time (:func:`mask_tokens`), whole
words (:func:`mask_whole_words`, all WordPiece pieces of a word together) and contiguous
spans (:func:`mask_spans`, SpanBERT). Masks drawn once and reused every epoch are *static*
(BERT's data pipeline; RoBERTa's copy-the-data-k-times variant); a fresh draw for every
batch is *dynamic* (RoBERTa): :class:`StaticMasking` and :class:`DynamicMasking`.

Choices of this module: random replacements are drawn uniformly from the vocabulary
*without* the special ids (BERT's and Hugging Face's code draw from all of it; with 30K
ids and five specials the difference is invisible, but a random ``[SEP]`` never appears);
``mask_id`` always counts as a special id.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

import numpy as np
import torch

__all__ = ["IGNORE_INDEX", "KEPT", "KIND_NAMES", "MASKED", "NOT_SELECTED", "RANDOM",
           "DynamicMasking", "StaticMasking", "choose_spans", "continuation_flags",
           "mask_spans", "mask_tokens", "mask_whole_words", "masking_kinds", "masking_rates",
           "replace_80_10_10", "sample_span_lengths", "span_length_pmf", "static_masks"]

IGNORE_INDEX = -100  # label of positions the loss ignores
NOT_SELECTED, MASKED, RANDOM, KEPT = 0, 1, 2, 3  # what happened to each token
KIND_NAMES = ("not selected", "[MASK]", "random token", "kept")


# ----------------------------------------------------------------------------- checks

def _check_ids(input_ids, vocab_size: int, mask_id: int, special_ids) -> torch.Tensor:
    """Validate the arguments every masker shares; return the special ids as a tensor."""
    if not isinstance(input_ids, torch.Tensor):
        raise TypeError(f"input_ids must be a torch tensor of token ids, got "
                        f"{type(input_ids).__name__}; wrap it with torch.tensor(ids)")
    if input_ids.dtype == torch.bool or input_ids.is_floating_point() or input_ids.is_complex():
        raise TypeError(f"input_ids must hold integer token ids (torch.long), got "
                        f"{input_ids.dtype}; convert with input_ids.long()")
    if input_ids.dim() not in (1, 2):
        raise ValueError(f"input_ids must be one sequence (1-D) or a batch (2-D), got shape "
                         f"{tuple(input_ids.shape)}; reshape it to batch x length")
    if int(vocab_size) < 1:
        raise ValueError(f"vocab_size must be a positive number of ids, got {vocab_size}")
    specials = torch.as_tensor(sorted({int(i) for i in special_ids} | {int(mask_id)}),
                               dtype=torch.long, device=input_ids.device)
    bad = specials[(specials < 0) | (specials >= vocab_size)]
    if len(bad):
        raise ValueError(f"mask_id and special_ids must be ids in [0, {vocab_size}), got "
                         f"{bad.tolist()}; check vocab_size")
    if input_ids.numel() and (int(input_ids.min()) < 0 or int(input_ids.max()) >= vocab_size):
        raise ValueError(f"input_ids must lie in [0, vocab_size={vocab_size}), got values "
                         f"from {int(input_ids.min())} to {int(input_ids.max())}")
    return specials


def _check_rates(prob: float, mask_frac: float, random_frac: float) -> None:
    for name, value in (("prob", prob), ("mask_frac", mask_frac), ("random_frac", random_frac)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} is a probability and must lie in [0, 1], got {value}")
    if mask_frac + random_frac > 1.0 + 1e-9:
        raise ValueError(f"mask_frac + random_frac = {mask_frac + random_frac:g} > 1: of the "
                         "selected tokens they are the shares replaced by [MASK] and by a "
                         "random token (the rest stays unchanged); lower one of them")


def _rand(shape, generator: torch.Generator | None, device) -> torch.Tensor:
    """Uniform [0, 1) numbers drawn with ``generator`` (on its device), moved to ``device``."""
    gen_device = generator.device if generator is not None else device
    return torch.rand(shape, generator=generator, device=gen_device).to(device)


# ------------------------------------------------------------------- 80 / 10 / 10

def replace_80_10_10(input_ids: torch.Tensor, selected: torch.Tensor, mask_id: int,
                     vocab_size: int, special_ids: Iterable[int], *,
                     unit: torch.Tensor | None = None, mask_frac: float = 0.8,
                     random_frac: float = 0.1, generator: torch.Generator | None = None
                     ) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's replacement of the ``selected`` positions: 80% [MASK], 10% random, 10% kept.

    With one ``u ~ U(0, 1)`` per position (or per ``unit``: a word or span decides once)::

        x'_i = [MASK]                        if u_i < mask_frac
               r_i ~ U(non-special ids)      if mask_frac <= u_i < mask_frac + random_frac
               x_i                           otherwise

    for every selected ``i``; the rest is unchanged. ``unit`` gives each position the flat
    index of the unit it belongs to. Returns ``(masked_ids, labels)`` with ``labels = x``
    where selected and ``-100`` elsewhere.
    """
    specials = _check_ids(input_ids, vocab_size, mask_id, special_ids)
    _check_rates(0.0, mask_frac, random_frac)
    selected = torch.as_tensor(selected, device=input_ids.device)
    if selected.shape != input_ids.shape or selected.dtype != torch.bool:
        raise ValueError(f"selected must be a bool tensor shaped like input_ids "
                         f"{tuple(input_ids.shape)}, got {selected.dtype} "
                         f"{tuple(selected.shape)}")
    u = _rand(input_ids.shape, generator, input_ids.device)
    if unit is not None:
        u = u.flatten()[unit.flatten()].view_as(u)
    to_mask = selected & (u < mask_frac)
    to_random = selected & ~to_mask & (u < mask_frac + random_frac)
    masked = input_ids.clone()
    masked[to_mask] = mask_id
    n_random = int(to_random.sum())
    if n_random:
        allowed = torch.ones(vocab_size, dtype=torch.bool, device=input_ids.device)
        allowed[specials] = False
        pool = allowed.nonzero().squeeze(1)  # not empty: it holds the selected tokens' ids
        pick = (_rand(n_random, generator, input_ids.device) * len(pool)).long()
        masked[to_random] = pool[pick.clamp_max(len(pool) - 1)].to(masked.dtype)
    labels = torch.where(selected, input_ids.long(), torch.full_like(input_ids.long(),
                                                                    IGNORE_INDEX))
    return masked, labels


# ---------------------------------------------------------------- token masking

def mask_tokens(input_ids: torch.Tensor, mask_id: int, vocab_size: int,
                special_ids: Iterable[int], prob: float = 0.15,
                generator: torch.Generator | None = None, *, mask_frac: float = 0.8,
                random_frac: float = 0.1) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's masking: select each non-special token with probability ``prob``, then 80/10/10.

    ``selected_i ~ Bernoulli(prob)`` (never for an id in ``special_ids``); per selected token
    ``[MASK]`` with probability ``mask_frac``, a random non-special id with ``random_frac``,
    unchanged otherwise. Returns ``(masked_ids, labels)``, ``labels = input_ids`` where
    selected and ``-100`` elsewhere; ``input_ids`` (1-D or 2-D) is not modified. Every call
    draws new masks (dynamic masking); pass a seeded ``generator`` to repeat a draw.
    """
    specials = _check_ids(input_ids, vocab_size, mask_id, special_ids)
    _check_rates(prob, mask_frac, random_frac)
    special = torch.isin(input_ids, specials)
    selected = (_rand(input_ids.shape, generator, input_ids.device) < prob) & ~special
    return replace_80_10_10(input_ids, selected, mask_id, vocab_size, specials,
                            mask_frac=mask_frac, random_frac=random_frac, generator=generator)


# ----------------------------------------------------------- whole-word masking

def continuation_flags(tokens: Sequence[str] | Sequence[Sequence[str]],
                       prefix: str = "##") -> torch.Tensor:
    """True for WordPiece continuation pieces (``##ing``), for one sequence or a batch."""
    if tokens and not isinstance(tokens[0], str):
        return torch.tensor([[t.startswith(prefix) for t in row] for row in tokens],
                            dtype=torch.bool)
    return torch.tensor([t.startswith(prefix) for t in tokens], dtype=torch.bool)


def _word_index(is_continuation: torch.Tensor, special: torch.Tensor) -> torch.Tensor:
    """Flat index of the first piece of each position's word (a word never spans rows)."""
    starts = ~is_continuation | special
    if starts.numel():
        starts[..., 0] = True
    flat = starts.flatten()
    first = torch.arange(len(flat), device=flat.device)
    first = torch.where(flat, first, torch.zeros_like(first)).cummax(0).values
    return first.view_as(starts)


def mask_whole_words(input_ids: torch.Tensor, is_continuation: torch.Tensor, mask_id: int,
                     vocab_size: int, special_ids: Iterable[int], prob: float = 0.15,
                     generator: torch.Generator | None = None, *, mask_frac: float = 0.8,
                     random_frac: float = 0.1) -> tuple[torch.Tensor, torch.Tensor]:
    """Whole-word masking: a word (a piece plus its ``##`` continuations) is selected as one.

    ``selected_w ~ Bernoulli(prob)`` per word, every piece of a selected word is selected,
    and the 80/10/10 choice is made once per word (each piece of a "random" word gets its
    own random id). On average a fraction ``prob`` of the non-special tokens is selected.
    ``is_continuation`` is a bool tensor shaped like ``input_ids`` (:func:`continuation_flags`).
    """
    specials = _check_ids(input_ids, vocab_size, mask_id, special_ids)
    _check_rates(prob, mask_frac, random_frac)
    is_continuation = torch.as_tensor(is_continuation, device=input_ids.device)
    if is_continuation.shape != input_ids.shape or is_continuation.dtype != torch.bool:
        raise ValueError(f"is_continuation must be a bool tensor of shape "
                         f"{tuple(input_ids.shape)} (True for ## pieces), got "
                         f"{is_continuation.dtype} {tuple(is_continuation.shape)}; build it "
                         "with continuation_flags(tokens)")
    special = torch.isin(input_ids, specials)
    word = _word_index(is_continuation, special)
    draw = _rand(input_ids.shape, generator, input_ids.device).flatten()
    selected = (draw[word.flatten()].view_as(word) < prob) & ~special
    return replace_80_10_10(input_ids, selected, mask_id, vocab_size, specials, unit=word,
                            mask_frac=mask_frac, random_frac=random_frac, generator=generator)


# ------------------------------------------------------------ span masking (SpanBERT)

def span_length_pmf(p: float = 0.2, max_span: int = 10, mode: str = "truncate") -> torch.Tensor:
    """``P(len = k)`` for ``k = 1..max_span`` (entry ``k - 1``), from ``Geometric(p)``.

    ``"truncate"`` (SpanBERT's code): ``P(k) = p(1-p)^(k-1) / sum_j p(1-p)^(j-1)``, the
    geometric renormalised on ``1..max_span`` -- the paper's mean of 3.8 for ``p = 0.2``.
    ``"clip"``: ``len = min(Geometric(p), max_span)``, all the tail mass on ``max_span``.
    """
    if not 0.0 < p <= 1.0:
        raise ValueError(f"p is the geometric distribution's success probability and must "
                         f"lie in (0, 1], got {p}")
    if int(max_span) != max_span or max_span < 1:
        raise ValueError(f"max_span must be a whole number of tokens >= 1, got {max_span}")
    k = torch.arange(1, int(max_span) + 1, dtype=torch.float64)
    pmf = p * (1 - p) ** (k - 1)
    if mode == "truncate":
        return pmf / pmf.sum()
    if mode == "clip":
        pmf[-1] = (1 - p) ** (max_span - 1)  # P(Geometric >= max_span)
        return pmf
    raise ValueError(f"mode must be 'truncate' or 'clip', got {mode!r}")


def sample_span_lengths(n: int, p: float = 0.2, max_span: int = 10,
                        generator: torch.Generator | None = None, *,
                        mode: str = "truncate") -> torch.Tensor:
    """``n`` span lengths drawn from :func:`span_length_pmf` (a LongTensor of values >= 1)."""
    pmf = span_length_pmf(p, max_span, mode)
    if n == 0:
        return torch.zeros(0, dtype=torch.long)
    if generator is not None and generator.device.type != "cpu":
        pmf = pmf.to(generator.device)
    return torch.multinomial(pmf, n, replacement=True, generator=generator).cpu() + 1


def choose_spans(special: torch.Tensor, prob: float = 0.15, p: float = 0.2, max_span: int = 10,
                 generator: torch.Generator | None = None, *, mode: str = "truncate",
                 is_continuation: torch.Tensor | None = None) -> list[tuple[int, int]]:
    """SpanBERT's span selection for one sequence; ``special`` is True at special tokens.

    Budget ``B = floor(prob * n + u)`` with ``u ~ U(0, 1)`` (``n`` = non-special tokens), so
    ``E[B] = prob * n`` exactly. Until ``B`` tokens are chosen: draw a length from
    :func:`span_length_pmf`, cut it to the budget still left (the last span is shortened,
    never overshooting), and start it uniformly among the positions where it fits on free
    tokens (not special, not yet chosen: spans never cross a special token nor overlap, but
    may touch). If no free run is that long, the span shrinks until one is. Returns
    ``(start, length)`` pairs in the order drawn.

    With ``is_continuation`` (True at word pieces that continue a word, ``##...``) spans are
    SpanBERT's: lengths count *whole words*, and a span starts and ends at word boundaries;
    the budget still counts tokens, so a span whose pieces would overshoot it loses words
    from its end (never below one word: the last word may overshoot by its extra pieces).
    """
    _check_rates(prob, 0.0, 0.0)
    if is_continuation is None:  # every piece is a word of its own
        is_continuation = torch.zeros_like(special, dtype=torch.bool)
    return _choose_word_spans(special, is_continuation, prob, p, max_span, generator, mode)


def _words(special: torch.Tensor, is_continuation: torch.Tensor) -> tuple[list[int], list[int]]:
    """The units span masking places in word mode: each word (a piece that does not continue
    a word, with the continuations after it) and each special token. ``(starts, sizes)``."""
    if is_continuation.shape != special.shape:
        raise ValueError(f"is_continuation has shape {tuple(is_continuation.shape)}, the "
                         f"tokens {tuple(special.shape)}: one flag per token")
    special = special.detach().cpu().tolist()
    cont = is_continuation.detach().cpu().bool().tolist()
    starts: list[int] = []
    for i, (sp, c) in enumerate(zip(special, cont, strict=True)):
        if sp or not c or i == 0 or special[i - 1]:
            starts.append(i)
    ends = [*starts[1:], len(special)] if starts else []
    sizes = [b - a for a, b in zip(starts, ends, strict=True)]
    return starts, sizes


def _choose_word_spans(special, is_continuation, prob, p, max_span, generator, mode):
    starts, sizes = _words(special, is_continuation)
    is_word = np.array([not bool(special[i]) for i in starts])
    n_free = int(sum(n for n, w in zip(sizes, is_word, strict=True) if w))
    budget = min(math.floor(prob * n_free + float(_rand(1, generator, "cpu"))), n_free)
    lengths = sample_span_lengths(budget, p, max_span, generator, mode=mode).tolist()
    anchors = _rand(budget, generator, "cpu").tolist()
    free, size = is_word.copy(), np.array(sizes)
    spans, chosen = [], 0
    for length, anchor in zip(lengths, anchors, strict=True):
        if chosen >= budget:
            break
        length = min(length, budget - chosen)  # in words; each word has >= 1 piece
        while True:
            runs = np.concatenate(([0], np.cumsum(free)))
            fits = np.flatnonzero(runs[length:] - runs[:-length] == length)
            if len(fits):
                break
            length -= 1
        first = int(fits[int(anchor * len(fits))])
        while length > 1 and size[first:first + length].sum() > budget - chosen:
            length -= 1
        free[first:first + length] = False
        n_tokens = int(size[first:first + length].sum())
        spans.append((starts[first], n_tokens))
        chosen += n_tokens
    return spans


def mask_spans(input_ids: torch.Tensor, mask_id: int, vocab_size: int,
               special_ids: Iterable[int], prob: float = 0.15, p: float = 0.2,
               max_span: int = 10, generator: torch.Generator | None = None, *,
               mask_frac: float = 0.8, random_frac: float = 0.1, mode: str = "truncate",
               is_continuation: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """SpanBERT's masking: contiguous spans until about ``prob`` of the tokens are selected.

    Span lengths follow ``Geometric(p)`` limited to ``max_span`` (:func:`span_length_pmf`),
    spans are placed by :func:`choose_spans` row by row (never across a special token), and
    80/10/10 is decided once per span. With ``is_continuation`` (same shape as
    ``input_ids``: True at ``##`` pieces) lengths count whole words and spans never cut a
    word, as in SpanBERT; without it every piece counts as a word. Returns
    ``(masked_ids, labels)`` like :func:`mask_tokens`.
    """
    specials = _check_ids(input_ids, vocab_size, mask_id, special_ids)
    _check_rates(prob, mask_frac, random_frac)
    special = torch.isin(input_ids, specials)
    rows = special if special.dim() == 2 else special[None]
    length = rows.shape[-1]
    selected = torch.zeros(rows.shape, dtype=torch.bool)
    unit = torch.arange(rows.numel()).view(rows.shape)  # flat index of each span's start
    words = None
    if is_continuation is not None:
        if is_continuation.shape != input_ids.shape:
            raise ValueError(f"is_continuation has shape {tuple(is_continuation.shape)}, "
                             f"input_ids {tuple(input_ids.shape)}: one flag per token")
        words = is_continuation.view(rows.shape)
    for r in range(rows.shape[0]):
        for start, n in choose_spans(rows[r], prob, p, max_span, generator, mode=mode,
                                     is_continuation=None if words is None else words[r]):
            selected[r, start:start + n] = True
            unit[r, start:start + n] = r * length + start
    device = input_ids.device
    return replace_80_10_10(input_ids, selected.view_as(special).to(device), mask_id,
                            vocab_size, specials, unit=unit.view_as(special).to(device),
                            mask_frac=mask_frac, random_frac=random_frac, generator=generator)


# ---------------------------------------------------------------- what happened where

def masking_kinds(masked_ids: torch.Tensor, labels: torch.Tensor, mask_id: int) -> torch.Tensor:
    """Per position: ``NOT_SELECTED``, ``MASKED``, ``RANDOM`` or ``KEPT`` (0, 1, 2, 3).

    A random draw that happens to equal the original token reads as ``KEPT``: the model
    sees exactly what a kept token shows it (probability ``1 / vocabulary`` per draw).
    """
    kinds = torch.full(labels.shape, NOT_SELECTED, dtype=torch.long, device=labels.device)
    selected = labels != IGNORE_INDEX
    kinds[selected & (masked_ids == mask_id)] = MASKED
    kinds[selected & (masked_ids != mask_id) & (masked_ids != labels)] = RANDOM
    kinds[selected & (masked_ids == labels)] = KEPT
    return kinds


def masking_rates(masked_ids: torch.Tensor, labels: torch.Tensor, mask_id: int,
                  special_ids: Iterable[int]) -> dict[str, float]:
    """Measured rates: ``selected`` (of the non-special tokens), then ``mask``, ``random``
    and ``kept`` (of the selected tokens), with the counts ``tokens`` and ``n_selected``."""
    original = torch.where(labels != IGNORE_INDEX, labels, masked_ids.long())
    specials = torch.as_tensor(sorted({int(i) for i in special_ids} | {int(mask_id)}),
                               device=original.device)
    n_tokens = int((~torch.isin(original, specials)).sum())
    kinds = masking_kinds(masked_ids, labels, mask_id)
    n_sel = int((kinds != NOT_SELECTED).sum())
    share = {name: int((kinds == k).sum()) / max(n_sel, 1)
             for name, k in (("mask", MASKED), ("random", RANDOM), ("kept", KEPT))}
    return {"selected": n_sel / max(n_tokens, 1), **share, "tokens": n_tokens,
            "n_selected": n_sel}


# --------------------------------------------------------- static vs dynamic masking

def static_masks(input_ids: torch.Tensor, copies: int = 1, *,
                 masker: Callable[..., tuple[torch.Tensor, torch.Tensor]] = mask_tokens,
                 **kwargs) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Masks decided once, before training: ``copies`` independent ``(masked_ids, labels)``.

    ``copies=1`` is BERT's static masking (every epoch sees the same mask); RoBERTa's
    baseline duplicated the data ``copies=10`` times, so over 40 epochs each sequence was
    seen with each of its 10 masks 4 times. Epoch ``e`` uses copy ``e % copies``.
    ``kwargs`` go to ``masker`` (``mask_id``, ``vocab_size``, ``special_ids``, ...).
    """
    if int(copies) != copies or copies < 1:
        raise ValueError(f"copies must be a whole number >= 1, got {copies}")
    return [masker(input_ids, **kwargs) for _ in range(int(copies))]


class StaticMasking:
    """``masking(epoch, rows)`` -> the masks stored for ``rows`` in ``epoch`` (same every time).

    ``StaticMasking(data, copies, mask_id=..., vocab_size=..., special_ids=...)``; swap it
    for :class:`DynamicMasking` with the same arguments (less ``copies``) to compare.
    When batches are drawn at random rather than epoch by epoch, :meth:`by_visit` counts each
    row's own passes instead: the ``v``-th time row ``r`` is drawn it gets copy ``v % copies``.
    """

    def __init__(self, input_ids: torch.Tensor, copies: int = 1, **kwargs):
        self.masks = static_masks(input_ids, copies, **kwargs)
        self.visits: Counter[int] = Counter()

    def __call__(self, epoch: int, rows=slice(None)) -> tuple[torch.Tensor, torch.Tensor]:
        masked_ids, labels = self.masks[epoch % len(self.masks)]
        return masked_ids[rows], labels[rows]

    def by_visit(self, rows: Sequence[int], input_ids: torch.Tensor
                 ) -> tuple[torch.Tensor, torch.Tensor]:
        """The masks of a batch of ``rows`` (as ``pretrain``'s ``masker`` takes them), each
        row at its own visit count, cut to the batch's width ``input_ids.shape[1]``."""
        masked, labels = [], []
        for r in rows:
            ids, lab = self(self.visits[r], [r])
            self.visits[r] += 1
            masked.append(ids)
            labels.append(lab)
        width = input_ids.shape[1]
        return torch.cat(masked)[:, :width], torch.cat(labels)[:, :width]


class DynamicMasking:
    """``masking(epoch, rows)`` -> a fresh draw for ``rows`` each call; ``epoch`` is unused.

    Dynamic masking (RoBERTa) is nothing more than calling the masker whenever a batch is
    drawn, so no two passes over the data see the same masks.
    """

    def __init__(self, input_ids: torch.Tensor, *,
                 masker: Callable[..., tuple[torch.Tensor, torch.Tensor]] = mask_tokens,
                 **kwargs):
        self.input_ids, self.masker, self.kwargs = input_ids, masker, kwargs

    def __call__(self, epoch: int, rows=slice(None)) -> tuple[torch.Tensor, torch.Tensor]:
        return self.masker(self.input_ids[rows], **self.kwargs)

"""Synthetic sequence-to-sequence tasks whose alignment is known: reversing digit strings.

A source is a string of ``L`` digits, ``x_0 .. x_{L-1}``; its target is the same digits
reversed, ``y_i = x_{L-1-i}``, then an end-of-sequence token. So output position ``i``
needs exactly one source position, ``L-1-i``: the true alignment is the anti-diagonal of an
``L x L`` matrix, and a model's attention can be compared with it.

Token ids: ``PAD = 0``, ``BOS = 1`` (begin-of-sequence, the decoder's first input),
``EOS = 2`` (end-of-sequence, the decoder's last output), digit ``d`` is ``d + 3``; so
``VOCAB_SIZE = 13`` for sources and targets alike. Masks follow the course's convention:
boolean, ``True`` at real tokens.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

__all__ = [
    "BOS",
    "EOS",
    "NUM_DIGITS",
    "PAD",
    "VOCAB_SIZE",
    "Seq2SeqBatch",
    "decode_digits",
    "encode_digits",
    "reversal_batch",
    "reverse_pairs",
    "true_alignment",
]

PAD, BOS, EOS = 0, 1, 2
NUM_DIGITS = 10
FIRST_DIGIT = 3  # id of the digit 0
VOCAB_SIZE = FIRST_DIGIT + NUM_DIGITS


class Seq2SeqBatch(NamedTuple):
    """A padded batch of (source, target) pairs.

    - ``src`` ``B x S`` source ids, padded with ``PAD`` after each source;
    - ``src_mask`` ``B x S`` boolean, ``True`` at real source tokens;
    - ``tgt_in`` ``B x T`` decoder inputs: ``BOS`` then the target (teacher forcing);
    - ``tgt_out`` ``B x T`` what the decoder must predict: the target then ``EOS``,
      padded with ``PAD`` (ignored by the loss);
    - ``lengths`` ``B`` source lengths (each target has the same length plus ``EOS``).
    """

    src: torch.Tensor
    src_mask: torch.Tensor
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor
    lengths: torch.Tensor

    def to(self, device: torch.device | str) -> Seq2SeqBatch:
        return Seq2SeqBatch(*(t.to(device) for t in self))


def encode_digits(text: str) -> list[int]:
    """``"307"`` -> ``[6, 3, 10]`` (digit ``d`` has id ``d + 3``)."""
    if not text.isdigit():
        raise ValueError(f"expected a string of digits 0-9, got {text!r}")
    return [int(c) + FIRST_DIGIT for c in text]


def decode_digits(ids) -> str:
    """Digit ids back to a string; stops at the first ``EOS``, skips ``PAD`` and ``BOS``."""
    out = []
    for i in torch.as_tensor(ids).tolist():
        if i == EOS:
            break
        if i >= FIRST_DIGIT:
            out.append(str(i - FIRST_DIGIT))
    return "".join(out)


def _reversed_batch(digits: torch.Tensor, lengths: torch.Tensor) -> Seq2SeqBatch:
    """The batch for ``B x S`` ids whose row ``b`` is real up to ``lengths[b]`` (rest ignored)."""
    B, S = digits.shape
    positions = torch.arange(S)
    src_mask = positions[None, :] < lengths[:, None]
    src = digits.masked_fill(~src_mask, PAD)
    back = (lengths[:, None] - 1 - positions[None, :]).clamp(min=0)  # y_i = x_{L-1-i}
    reversed_ids = digits.gather(1, back).masked_fill(~src_mask, PAD)
    tgt_out = torch.cat([reversed_ids, torch.full((B, 1), PAD)], dim=1)
    tgt_out[torch.arange(B), lengths] = EOS
    tgt_in = torch.cat([torch.full((B, 1), BOS), reversed_ids], dim=1)
    return Seq2SeqBatch(src, src_mask, tgt_in, tgt_out, lengths)


def reverse_pairs(sources: list[list[int]]) -> Seq2SeqBatch:
    """Pad a list of digit-id sources into a :class:`Seq2SeqBatch` whose targets reverse them."""
    if not sources or any(len(s) == 0 for s in sources):
        raise ValueError("reverse_pairs needs at least one source, none of them empty")
    bad = [i for s in sources for i in s if not FIRST_DIGIT <= i < VOCAB_SIZE]
    if bad:
        raise ValueError(f"sources must hold digit ids {FIRST_DIGIT}..{VOCAB_SIZE - 1} "
                         f"(use encode_digits), got {bad[0]}")
    lengths = torch.tensor([len(s) for s in sources])
    digits = torch.full((len(sources), int(lengths.max())), PAD, dtype=torch.long)
    for b, s in enumerate(sources):
        digits[b, :len(s)] = torch.as_tensor(s, dtype=torch.long)
    return _reversed_batch(digits, lengths)


def reversal_batch(batch_size: int, min_len: int, max_len: int,
                   generator: torch.Generator | None = None) -> Seq2SeqBatch:
    """``batch_size`` random digit strings, lengths uniform in ``min_len .. max_len``
    (inclusive), each paired with its reverse; padded to the longest one drawn. The same
    generator state gives the same batch."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    if not 1 <= min_len <= max_len:
        raise ValueError(f"need 1 <= min_len <= max_len, got min_len={min_len}, "
                         f"max_len={max_len}")
    lengths = torch.randint(min_len, max_len + 1, (batch_size,), generator=generator)
    digits = torch.randint(NUM_DIGITS, (batch_size, max_len), generator=generator) + FIRST_DIGIT
    return _reversed_batch(digits[:, :int(lengths.max())], lengths)


def true_alignment(length: int) -> torch.Tensor:
    """``L x L`` matrix with a 1 where output ``i`` should look: source ``L-1-i``."""
    if length < 1:
        raise ValueError(f"length must be at least 1, got {length}")
    return torch.eye(length).flip(1)

"""Inverted dropout, the regulariser the course's models use.

During training each unit is kept with probability ``1 - p`` and zeroed otherwise; the
survivors are scaled by ``1 / (1 - p)`` so that the expected activation is unchanged:

    y_i = m_i * x_i / (1 - p),   m_i ~ Bernoulli(1 - p),   E[y_i] = x_i

At test time dropout is the identity. This is what ``torch.nn.functional.dropout``
computes; given the same random numbers it draws the same mask.
"""

from __future__ import annotations

import torch


def dropout_mask(shape: torch.Size | tuple[int, ...], p: float, *,
                 dtype: torch.dtype = torch.float32, device: torch.device | str | None = None,
                 generator: torch.Generator | None = None) -> torch.Tensor:
    """A tensor of 0s and 1s: each entry is 1 (kept) with probability ``1 - p``."""
    _check_p(p)
    keep = torch.empty(shape, dtype=dtype, device=device)
    return keep.bernoulli_(1.0 - p, generator=generator)


def dropout(x: torch.Tensor, p: float = 0.5, training: bool = True,
            generator: torch.Generator | None = None) -> torch.Tensor:
    """Inverted dropout: zero each entry with probability ``p``, scale the rest by 1/(1-p).

    ``training=False`` returns ``x`` unchanged (dropout is the identity at test time).
    ``p = 1`` drops everything and returns zeros, as PyTorch does.
    """
    _check_p(p)
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    mask = dropout_mask(x.shape, p, dtype=x.dtype, device=x.device, generator=generator)
    return x * (mask / (1.0 - p))


def _check_p(p: float) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability p must be between 0 and 1, got {p}")

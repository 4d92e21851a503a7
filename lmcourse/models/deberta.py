"""DeBERTa's disentangled attention (He et al. 2021): content and relative position apart.

Each token has a content vector ``H_i`` and, relative to token ``j``, a position vector
``P_{δ(i,j)}`` taken from a table ``P`` of ``2k`` learned relative position embeddings.
The relative distance from ``i`` to ``j`` is clipped to ``2k`` buckets:

    δ(i,j) = 0            if i - j <= -k
             2k - 1       if i - j >= k
             i - j + k    otherwise

With content projections ``Q^c = H W_q``, ``K^c = H W_k``, ``V^c = H W_v`` and position
projections ``Q^r = P W_qr``, ``K^r = P W_kr`` (row convention, one row per vector),

    Ã_ij = Q^c_i K^c_j^T            content-to-content
         + Q^c_i K^r_δ(i,j)^T       content-to-position
         + K^c_j Q^r_δ(j,i)^T       position-to-content
    H_o  = softmax(Ã / sqrt(3d)) V^c

with ``d`` the head dimension: three terms of variance ~``d`` each, hence ``3d``. The
position-to-position term is dropped (relative positions carry no content).

**Ablations** (the paper's "-C2P", "-P2C"): ``terms``, a subset of ``("c2c", "c2p",
"p2c")`` that keeps ``"c2c"``, sums only the terms it names, and scales by
``1/sqrt(len(terms) d)``; a term left out is not computed at all. ``terms=("c2c",)`` is
ordinary scaled dot-product attention, ``softmax(Q^c K^c^T / sqrt(d)) V^c``, without
any position.

Computing it pair by pair would build ``P_{δ(i,j)}`` for every pair, an ``N x N x d``
tensor. Instead we project the ``2k`` table once (``Q^r``, ``K^r``: ``2k x d``), form
all ``N x 2k`` products ``Q^c K^r^T`` and ``K^c Q^r^T``, and *gather* column ``δ(i,j)``
from them: relative-position memory ``O(k d)``, independent of ``N``
(:func:`position_memory_bytes`). :func:`naive_disentangled_scores` is the equation
as a plain loop over ``(i, j)``, to check the vectorised version against.

Masks are boolean, ``True`` = allowed, as in :mod:`lmcourse.models.attention`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import nn

from lmcourse.models.attention import masked_softmax, merge_heads, split_heads

__all__ = [
    "ATTENTION_TERMS",
    "DisentangledSelfAttention",
    "PositionMemory",
    "disentangled_attention",
    "disentangled_attention_scores",
    "naive_disentangled_scores",
    "position_memory_bytes",
    "relative_positions",
    "relative_projections",
]


#: The three terms of ``Ã``, in the order they are summed.
ATTENTION_TERMS: tuple[str, ...] = ("c2c", "c2p", "p2c")


def _check_terms(terms: tuple[str, ...]) -> tuple[str, ...]:
    """``terms`` checked (a subset of :data:`ATTENTION_TERMS` with ``"c2c"``, no repeats)
    and put in the canonical order ``c2c, c2p, p2c``."""
    allowed = (f"terms must be a tuple of distinct names from {ATTENTION_TERMS} that includes "
               "'c2c', e.g. ('c2c',), ('c2c', 'p2c') or all three")
    if isinstance(terms, str):
        raise ValueError(f"{allowed}; got the string {terms!r}")
    try:
        terms = tuple(terms)
    except TypeError:
        raise ValueError(f"{allowed}; got {terms!r}") from None
    unknown = [t for t in terms if t not in ATTENTION_TERMS]
    if unknown or "c2c" not in terms or len(set(terms)) != len(terms):
        raise ValueError(f"{allowed}; got {terms!r}")
    return tuple(t for t in ATTENTION_TERMS if t in terms)


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k (the maximum relative distance) must be an integer >= 1, got {k!r}")


def relative_positions(n: int, k: int, device: torch.device | str | None = None
                       ) -> torch.Tensor:
    """``n x n`` LongTensor of ``δ(i,j)`` (row ``i`` = query, column ``j`` = key), in
    ``[0, 2k)``: ``0`` if ``i-j <= -k``, ``2k-1`` if ``i-j >= k``, else ``i-j+k``."""
    _check_k(k)
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n (the sequence length) must be an integer >= 0, got {n!r}")
    pos = torch.arange(n, device=device)
    diff = pos[:, None] - pos[None, :]  # i - j
    delta = diff + k
    delta = torch.where(diff <= -k, torch.zeros_like(delta), delta)
    return torch.where(diff >= k, torch.full_like(delta, 2 * k - 1), delta)


def _check_shapes(h: torch.Tensor, p: torch.Tensor, k: int, num_heads: int) -> None:
    _check_k(k)
    if num_heads < 1 or h.shape[-1] % num_heads:
        raise ValueError(f"hidden size {h.shape[-1]} is not divisible by num_heads {num_heads}")
    if p.dim() != 2 or p.shape[0] != 2 * k:
        raise ValueError(f"p must be the 2k x d table of relative position embeddings "
                         f"(2k = {2 * k} rows), got shape {tuple(p.shape)}")


def relative_projections(p: torch.Tensor, W_qr: torch.Tensor, W_kr: torch.Tensor,
                         num_heads: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """``Q^r = P W_qr`` and ``K^r = P W_kr``, split into heads: each ``heads x 2k x d``.

    These are the only relative-position tensors the vectorised attention keeps.
    """
    return _project_table(p, W_qr, num_heads), _project_table(p, W_kr, num_heads)


def _project_table(p: torch.Tensor, W: torch.Tensor, num_heads: int) -> torch.Tensor:
    """``P W`` split into heads: ``heads x 2k x d``."""
    two_k, D = p.shape
    return (p @ W).view(two_k, num_heads, D // num_heads).transpose(0, 1)


def disentangled_attention_scores(h: torch.Tensor, p: torch.Tensor, W_q: torch.Tensor,
                                  W_k: torch.Tensor, W_qr: torch.Tensor, W_kr: torch.Tensor,
                                  k: int, num_heads: int = 1, scale: float | None = None,
                                  terms: tuple[str, ...] = ATTENTION_TERMS) -> torch.Tensor:
    """Scaled scores ``Ã / sqrt(len(terms) d)``, shape ``B x heads x N x N``
    (``heads x N x N`` for an unbatched ``N x D`` input), where ``Ã`` sums only ``terms``:

        Ã_ij = [Q^c_i K^c_j^T] + [Q^c_i K^r_δ(i,j)^T  if "c2p"] + [K^c_j Q^r_δ(j,i)^T  if "p2c"]

    ``h`` is ``B x N x D`` (or ``N x D``), ``p`` the ``2k x D`` relative position table,
    each ``W`` a ``D x D`` matrix applied as ``x @ W``; ``d = D / num_heads``.
    ``scale`` defaults to ``1/sqrt(len(terms) d)``: ``1/sqrt(3d)`` for all three terms,
    ``1/sqrt(d)`` for ``("c2c",)`` (``scale=1.0`` gives the raw ``Ã``). A term left out
    is not computed, nor is its position projection: without ``"c2p"`` no ``K^r`` (``W_kr``
    gets no gradient), without ``"p2c"`` no ``Q^r``. ``terms`` must include ``"c2c"``.
    """
    terms = _check_terms(terms)
    _check_shapes(h, p, k, num_heads)
    unbatched = h.dim() == 2
    if unbatched:
        h = h.unsqueeze(0)
    B, N, D = h.shape
    d = D // num_heads
    q_c, k_c = split_heads(h @ W_q, num_heads), split_heads(h @ W_k, num_heads)  # B x H x N x d
    delta = (relative_positions(N, k, device=h.device).expand(B, num_heads, N, N)
             if len(terms) > 1 else None)  # δ(i,j), only for the position terms
    scores = q_c @ k_c.transpose(-2, -1)  # content-to-content
    if "c2p" in terms:
        # content-to-position: (Q^c K^r^T)[i, δ(i,j)], K^r = P W_kr: H x 2k x d
        k_r = _project_table(p, W_kr, num_heads)
        scores = scores + torch.gather(q_c @ k_r.transpose(-2, -1), -1, delta)
    if "p2c" in terms:
        # position-to-content: (K^c Q^r^T)[j, δ(j,i)], gathered as [j, i] then transposed
        q_r = _project_table(p, W_qr, num_heads)
        scores = scores + torch.gather(k_c @ q_r.transpose(-2, -1), -1, delta).transpose(-2, -1)
    scale = 1.0 / math.sqrt(len(terms) * d) if scale is None else scale
    scores = scores * scale
    return scores.squeeze(0) if unbatched else scores


def naive_disentangled_scores(h: torch.Tensor, p: torch.Tensor, W_q: torch.Tensor,
                              W_k: torch.Tensor, W_qr: torch.Tensor, W_kr: torch.Tensor,
                              k: int, num_heads: int = 1,
                              terms: tuple[str, ...] = ATTENTION_TERMS) -> torch.Tensor:
    """The paper's equation, one ``(i, j)`` at a time in float64: slow, for checking.

    Same arguments (``scale`` aside) and output shape as
    :func:`disentangled_attention_scores`.
    """
    terms = _check_terms(terms)
    _check_shapes(h, p, k, num_heads)
    h, p = h.double(), p.double()
    W_q, W_k, W_qr, W_kr = (W.double() for W in (W_q, W_k, W_qr, W_kr))
    unbatched = h.dim() == 2
    if unbatched:
        h = h.unsqueeze(0)
    B, N, D = h.shape
    d = D // num_heads

    def delta(i: int, j: int) -> int:
        if i - j <= -k:
            return 0
        if i - j >= k:
            return 2 * k - 1
        return i - j + k

    scores = torch.zeros(B, num_heads, N, N, dtype=torch.float64)
    for b in range(B):
        for head in range(num_heads):
            cols = slice(head * d, (head + 1) * d)
            Qc, Kc = h[b] @ W_q[:, cols], h[b] @ W_k[:, cols]
            Qr, Kr = p @ W_qr[:, cols], p @ W_kr[:, cols]
            for i in range(N):
                for j in range(N):
                    a = Qc[i] @ Kc[j]                    # content-to-content
                    if "c2p" in terms:
                        a = a + Qc[i] @ Kr[delta(i, j)]  # content-to-position
                    if "p2c" in terms:
                        a = a + Kc[j] @ Qr[delta(j, i)]  # position-to-content
                    scores[b, head, i, j] = a / math.sqrt(len(terms) * d)
    return scores.squeeze(0) if unbatched else scores


def disentangled_attention(h: torch.Tensor, p: torch.Tensor, W_q: torch.Tensor,
                           W_k: torch.Tensor, W_v: torch.Tensor, W_qr: torch.Tensor,
                           W_kr: torch.Tensor, k: int, num_heads: int = 1,
                           mask: torch.Tensor | None = None,
                           terms: tuple[str, ...] = ATTENTION_TERMS
                           ) -> tuple[torch.Tensor, torch.Tensor]:
    """``softmax(Ã / sqrt(len(terms) d)) V^c`` with heads merged, and the weights.

    ``h`` is ``B x N x D``; ``mask`` is boolean (``True`` = allowed), broadcastable to
    ``B x heads x N x N``; ``terms`` as in :func:`disentangled_attention_scores`.
    Returns ``(output B x N x D, weights B x heads x N x N)``.
    """
    scores = disentangled_attention_scores(h, p, W_q, W_k, W_qr, W_kr, k, num_heads,
                                           terms=terms)
    weights = masked_softmax(scores, mask)
    return merge_heads(weights @ split_heads(h @ W_v, num_heads)), weights


class DisentangledSelfAttention(nn.Module):
    """Multi-head disentangled self-attention: ``D x D`` matrices ``W_q, W_k, W_v`` (content)
    and ``W_qr, W_kr`` (position), and a ``2k x D`` table ``rel_embeddings`` shared by all
    positions. ``forward(h, mask=None)`` returns ``(output B x N x D, weights)``.
    ``terms`` picks the terms of ``Ã`` (:func:`disentangled_attention_scores`); the
    parameters are the same whatever it is, an unused one simply gets no gradient.

    A full DeBERTa layer adds an output projection, residual, LayerNorm and feed-forward
    block, as in BERT.
    """

    def __init__(self, hidden: int, heads: int, k: int,
                 terms: tuple[str, ...] = ATTENTION_TERMS):
        super().__init__()
        _check_k(k)
        if heads < 1 or hidden % heads:
            raise ValueError(f"hidden {hidden} is not divisible by heads {heads}")
        self.hidden, self.heads, self.k, self.terms = hidden, heads, k, _check_terms(terms)
        for name in ("W_q", "W_k", "W_v", "W_qr", "W_kr"):
            self.register_parameter(name, nn.Parameter(torch.empty(hidden, hidden)))
            nn.init.xavier_uniform_(getattr(self, name))
        self.rel_embeddings = nn.Parameter(torch.randn(2 * k, hidden) * 0.02)

    def forward(self, h: torch.Tensor, mask: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        return disentangled_attention(h, self.rel_embeddings, self.W_q, self.W_k, self.W_v,
                                      self.W_qr, self.W_kr, self.k, self.heads, mask,
                                      terms=self.terms)


class PositionMemory(NamedTuple):
    """Bytes of relative-position tensors: ours (``Q^r``, ``K^r``) and per-pair."""

    disentangled: int
    per_pair: int


def position_memory_bytes(n: int, k: int, d: int, dtype: torch.dtype = torch.float32
                          ) -> PositionMemory:
    """Bytes of the relative-position tensors for sequence length ``n`` and size ``d``.

    ``disentangled``: ``Q^r`` and ``K^r``, ``2 x 2k x d`` numbers, ``O(k d)`` whatever
    ``n``. ``per_pair``: ``K^r_δ(i,j)`` and ``Q^r_δ(j,i)`` materialised for every pair,
    ``2 x n x n x d``, ``O(n^2 d)``. Both leave out the ``n x n`` index ``δ`` and scores,
    which every attention of this kind needs.
    """
    _check_k(k)
    if n < 0 or d < 1:
        raise ValueError(f"need n >= 0 and d >= 1, got n={n}, d={d}")
    size = torch.empty((), dtype=dtype).element_size()
    return PositionMemory(2 * (2 * k) * d * size, 2 * n * n * d * size)

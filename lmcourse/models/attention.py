"""Attention: a weighted average of values, weighted by how well each key matches a query.

For queries ``Q`` (``T x d``), keys ``K`` (``S x d``) and values ``V`` (``S x d_v``), one
row per vector (the row convention of PyTorch),

    scores  = Q K^T / sqrt(d)                       (T x S)
    weights = softmax(scores) along the keys        (each row sums to 1)
    output  = weights V                             (T x d_v)

A boolean ``mask`` says which (query, key) pairs may interact: ``True`` = allowed, the
convention of ``torch.nn.functional.scaled_dot_product_attention`` and of Hugging Face's
``attention_mask``. Disallowed scores become ``-inf`` before the softmax, so they get
weight exactly 0. A query with *no* allowed key gets weights 0 and output 0 (PyTorch's
``scaled_dot_product_attention`` does the same since version 2.5; older versions, and
``nn.MultiheadAttention`` when it returns weights, give NaN there).

Multi-head attention projects the inputs, splits the features into ``num_heads``
groups, attends in each group separately and merges the results. :class:`MultiHeadAttention`
has the parameters of ``torch.nn.MultiheadAttention`` (``in_proj_weight``,
``in_proj_bias``, ``out_proj.weight``, ``out_proj.bias``), so its weights load as is.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "AdditiveAttention",
    "AttentionLM",
    "MultiHeadAttention",
    "attention_scores",
    "causal_mask",
    "mask_from_torch",
    "masked_softmax",
    "merge_heads",
    "padding_mask",
    "scaled_dot_product_attention",
    "softmax_jacobian",
    "split_heads",
]


# ---- masks --------------------------------------------------------------------------------

def padding_mask(lengths: torch.Tensor | list[int], max_len: int | None = None) -> torch.Tensor:
    """``B x max_len`` boolean mask, ``True`` at the real tokens of each sequence.

    Row ``b`` is ``True`` at positions ``0 .. lengths[b] - 1`` and ``False`` on the
    padding after them. As a mask over the *keys* it broadcasts like
    ``padding_mask(...)[:, None, :]`` (one head: ``B x 1 x S``) or
    ``padding_mask(...)[:, None, None, :]`` (``B x 1 x 1 x S``, for all heads and queries).
    """
    lengths = torch.as_tensor(lengths)
    max_len = int(lengths.max()) if max_len is None else max_len
    positions = torch.arange(max_len, device=lengths.device)
    return positions[None, :] < lengths[:, None]


def causal_mask(size: int, key_size: int | None = None,
                device: torch.device | str | None = None) -> torch.Tensor:
    """``T x S`` boolean mask, ``True`` where key ``j`` is not in the future of query ``i``.

    Lower triangular (``j <= i``), aligned at the top left like PyTorch's
    ``is_causal=True``. A language model uses it so position ``i`` cannot peek at the
    tokens it has to predict.
    """
    key_size = size if key_size is None else key_size
    return torch.ones(size, key_size, dtype=torch.bool, device=device).tril()


def mask_from_torch(key_padding_mask: torch.Tensor | None = None,
                    attn_mask: torch.Tensor | None = None,
                    num_heads: int = 1) -> torch.Tensor | None:
    """Turn ``nn.MultiheadAttention``'s boolean masks into one of ours (``True`` = allowed).

    ``nn.MultiheadAttention`` uses the *opposite* polarity (``True`` = do not attend):
    ``key_padding_mask`` is ``B x S``, ``attn_mask`` is ``T x S`` or ``(B*heads) x T x S``.
    The result broadcasts to ``B x heads x T x S``.
    """
    allowed = None
    if key_padding_mask is not None:
        allowed = ~key_padding_mask.bool()[:, None, None, :]  # B x 1 x 1 x S
    if attn_mask is not None:
        attn = ~attn_mask.bool()
        if attn.dim() == 3:  # (B*H) x T x S -> B x H x T x S
            attn = attn.view(-1, num_heads, *attn.shape[1:])
        allowed = attn if allowed is None else allowed & attn
    return allowed


# ---- scaled dot-product attention ---------------------------------------------------------

def attention_scores(q: torch.Tensor, k: torch.Tensor, scale: float | None = None
                     ) -> torch.Tensor:
    """``Q K^T * scale`` with ``scale = 1/sqrt(d)`` by default: one score per (query, key)."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    return (q @ k.transpose(-2, -1)) * scale


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax over the keys (last axis), with weight 0 wherever ``mask`` is ``False``.

    Disallowed scores are set to ``-inf`` so ``exp`` makes them exactly 0. A row with
    no allowed key at all would be ``0/0``; it gets weights 0 instead of NaN.
    """
    if mask is None:
        return scores.softmax(dim=-1)
    if mask.dtype != torch.bool:
        raise TypeError(f"mask must be boolean (True = attend), got {mask.dtype}; "
                        "for a 0/1 mask use mask.bool()")
    scores = scores.masked_fill(~mask, float("-inf"))
    empty = ~mask.any(dim=-1, keepdim=True)  # queries with nothing to attend to
    scores = scores.masked_fill(empty, 0.0)  # any finite value: avoids exp(-inf)/0 = NaN
    return scores.softmax(dim=-1).masked_fill(empty, 0.0)


def scaled_dot_product_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                 mask: torch.Tensor | None = None, *,
                                 scale: float | None = None, dropout_p: float = 0.0
                                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """``softmax(Q K^T / sqrt(d)) V`` and the attention weights.

    ``q`` is ``... x T x d``, ``k`` is ``... x S x d``, ``v`` is ``... x S x d_v``; the
    leading axes (batch, heads) broadcast. ``mask`` is boolean, ``True`` = allowed,
    broadcastable to ``... x T x S``. Returns ``(output ... x T x d_v, weights ... x T x S)``;
    the weights are those before dropout (``dropout_p`` > 0 drops some during training).
    """
    weights = masked_softmax(attention_scores(q, k, scale), mask)
    dropped = F.dropout(weights, dropout_p) if dropout_p > 0 else weights
    return dropped @ v, weights


def softmax_jacobian(logits: torch.Tensor) -> torch.Tensor:
    """``d softmax(z) / dz = diag(p) - p p^T`` for a vector of logits ``z`` (``p = softmax(z)``).

    When one ``p_i`` is near 1 and the rest near 0 (a saturated softmax), every entry
    is near 0: almost no gradient reaches the logits.
    """
    p = logits.softmax(dim=-1)
    return torch.diag_embed(p) - p[..., :, None] * p[..., None, :]


# ---- additive (Bahdanau) attention --------------------------------------------------------

class AdditiveAttention(nn.Module):
    """Additive attention (Bahdanau et al. 2015): ``score(q, k) = w^T tanh(W_q q + W_k k)``.

    Queries and keys may have different sizes; a one-hidden-layer network with
    ``hidden_size`` units scores every pair, so it builds a ``T x S x hidden_size``
    tensor where dot-product attention needs only ``T x S``.
    """

    def __init__(self, query_size: int, key_size: int, hidden_size: int):
        super().__init__()
        self.W_q = nn.Linear(query_size, hidden_size, bias=False)
        self.W_k = nn.Linear(key_size, hidden_size, bias=False)
        self.w = nn.Linear(hidden_size, 1, bias=False)

    def scores(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        """``... x T x S`` scores from ``q`` (``... x T x d_q``) and ``k`` (``... x S x d_k``)."""
        features = self.W_q(q)[..., :, None, :] + self.W_k(k)[..., None, :, :]  # T x S x h
        return self.w(torch.tanh(features)).squeeze(-1)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        weights = masked_softmax(self.scores(q, k), mask)
        return weights @ v, weights


# ---- multi-head attention -----------------------------------------------------------------

def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """``B x T x E`` -> ``B x heads x T x E/heads``: head ``h`` gets features
    ``h*E/heads .. (h+1)*E/heads - 1``."""
    B, T, E = x.shape
    return x.view(B, T, num_heads, E // num_heads).transpose(1, 2)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """``B x heads x T x D`` -> ``B x T x heads*D``, the inverse of :func:`split_heads`."""
    B, H, T, D = x.shape
    return x.transpose(1, 2).reshape(B, T, H * D)


class MultiHeadAttention(nn.Module):
    """Multi-head attention with the arguments and parameters of ``nn.MultiheadAttention``.

    For each head ``h``, ``head_h = Attention(Q W_h^Q, K W_h^K, V W_h^V)`` with
    ``E/heads``-dimensional projections, and ``output = [head_1, ..., head_H] W^O``.
    The three input projections are stacked in ``in_proj_weight`` (``3E x E``: queries,
    keys, values), ``out_proj`` is ``W^O``.

    ``forward(query, key, value, mask=None)`` takes ``T x B x E`` inputs
    (``B x T x E`` with ``batch_first``, or unbatched ``T x E``) and a boolean ``mask``
    with **our** polarity, ``True`` = allowed, broadcastable to ``B x heads x T x S``
    (convert ``nn.MultiheadAttention``'s masks with :func:`mask_from_torch`). It returns
    ``(output, weights)`` like ``nn.MultiheadAttention``: weights averaged over heads
    (``B x T x S``), per head (``B x heads x T x S``) with ``average_attn_weights=False``,
    or ``None`` with ``need_weights=False``.
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0,
                 bias: bool = True, batch_first: bool = False,
                 device: torch.device | str | None = None, dtype: torch.dtype | None = None):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim {embed_dim} is not divisible by num_heads {num_heads}")
        factory = {"device": device, "dtype": dtype}
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.dropout, self.batch_first = dropout, batch_first
        self.in_proj_weight = nn.Parameter(torch.empty(3 * embed_dim, embed_dim, **factory))
        if bias:
            self.in_proj_bias = nn.Parameter(torch.empty(3 * embed_dim, **factory))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias, **factory)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's initialisation: Xavier-uniform projections, zero biases."""
        nn.init.xavier_uniform_(self.in_proj_weight)
        if self.in_proj_bias is not None:
            nn.init.zeros_(self.in_proj_bias)
            nn.init.zeros_(self.out_proj.bias)

    def load_from_torch(self, mha: nn.MultiheadAttention) -> MultiHeadAttention:
        """Copy the weights of a ``torch.nn.MultiheadAttention`` of the same size."""
        if (mha.embed_dim, mha.num_heads) != (self.embed_dim, self.num_heads):
            raise ValueError(f"size mismatch: torch has embed_dim={mha.embed_dim}, "
                             f"num_heads={mha.num_heads}; ours {self.embed_dim}, "
                             f"{self.num_heads}")
        if not mha._qkv_same_embed_dim or mha.bias_k is not None or mha.add_zero_attn:
            raise ValueError("only the plain configuration is supported (kdim = vdim = "
                             "embed_dim, no add_bias_kv, no add_zero_attn)")
        self.load_state_dict(mha.state_dict())
        return self

    def project(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``Q W^Q + b^Q``, ``K W^K + b^K``, ``V W^V + b^V`` (each ``B x length x E``)."""
        weights = self.in_proj_weight.chunk(3)
        biases = (None,) * 3 if self.in_proj_bias is None else self.in_proj_bias.chunk(3)
        return tuple(F.linear(x, w, b)
                     for x, w, b in zip((query, key, value), weights, biases, strict=True))

    def forward(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                mask: torch.Tensor | None = None, need_weights: bool = True,
                average_attn_weights: bool = True
                ) -> tuple[torch.Tensor, torch.Tensor | None]:
        unbatched = query.dim() == 2
        if unbatched:  # T x E: a batch of one
            query, key, value = (x.unsqueeze(0) for x in (query, key, value))
        elif not self.batch_first:  # T x B x E -> B x T x E
            query, key, value = (x.transpose(0, 1) for x in (query, key, value))
        q, k, v = (split_heads(x, self.num_heads) for x in self.project(query, key, value))
        heads, weights = scaled_dot_product_attention(
            q, k, v, mask, dropout_p=self.dropout if self.training else 0.0)
        output = self.out_proj(merge_heads(heads))
        if unbatched:
            output, weights = output.squeeze(0), weights.squeeze(0)
        elif not self.batch_first:
            output = output.transpose(0, 1)
        if not need_weights:
            return output, None
        return output, weights.mean(dim=-3) if average_attn_weights else weights


# ---- a one-layer attention language model --------------------------------------------------

class AttentionLM(nn.Module):
    """The smallest language model that uses attention: one causal self-attention layer.

    ``x_t = E[token_t] + P[t]`` (token and learned position embeddings),
    ``h = x + MultiHeadAttention(x, x, x, causal mask)``, ``logits = h W_out^T + b``.
    No feed-forward block, no LayerNorm: chapter 07 adds those to make a transformer.
    It follows the course's LM contract ``logits, state = model(x, state)`` (no state:
    ``None`` in and out), so ``lmcourse.train.fit_lm`` trains it.
    """

    def __init__(self, vocab_size: int, embed_dim: int, num_heads: int, max_len: int):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_dim)
        self.position = nn.Embedding(max_len, embed_dim)
        self.attention = MultiHeadAttention(embed_dim, num_heads, batch_first=True)
        self.head = nn.Linear(embed_dim, vocab_size)

    def hidden(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(h, weights)``: the hidden states ``B x T x E`` and per-head weights
        ``B x heads x T x T``."""
        T = x.shape[1]
        h = self.embed(x) + self.position(torch.arange(T, device=x.device))
        mask = causal_mask(T, device=x.device)
        attended, weights = self.attention(h, h, h, mask, average_attn_weights=False)
        return h + attended, weights

    def forward(self, x: torch.Tensor, state: None = None) -> tuple[torch.Tensor, None]:
        return self.head(self.hidden(x)[0]), None

    @torch.no_grad()
    def attentions(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """One ``B x heads x T x T`` tensor per layer (here one), like Hugging Face's
        ``output_attentions``."""
        return (self.hidden(x)[1],)

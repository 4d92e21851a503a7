"""Multi-head attention with one knob per typical mistake, for lab 05's check
(:func:`lmcourse.checks.attention.multi_head_attention`): a float64
``nn.MultiheadAttention`` with random weights and biases is the reference, and
:func:`mha_variant` recomputes it the right way or with one mistake, so the check can name
the mistake whose output the student's matches."""

from __future__ import annotations

import math

import torch
from torch import nn

from lmcourse.models import attention as reference

__all__ = ["MHA_MISTAKES", "mha_variant", "torch_mha"]


def torch_mha(E: int, H: int, seed: int) -> nn.MultiheadAttention:
    """``nn.MultiheadAttention`` (float64, batch_first) with random weights AND biases."""
    g = torch.Generator().manual_seed(seed)
    ref = nn.MultiheadAttention(E, H, batch_first=True).double()
    with torch.no_grad():
        for p in ref.parameters():
            p.copy_(0.4 * torch.randn(p.shape, generator=g, dtype=torch.float64))
    return ref.eval()


def mha_variant(ref: nn.MultiheadAttention, query: torch.Tensor, key: torch.Tensor,
                 value: torch.Tensor, mask: torch.Tensor | None, *, scale_dim: str = "head",
                 out_proj: bool = True, transpose_w: bool = True, split: str = "right",
                 bias: bool = True, qkv_order: str = "qkv") -> tuple[torch.Tensor, torch.Tensor]:
    """Multi-head attention with one knob per typical mistake (defaults: the right one)."""
    E, H = ref.embed_dim, ref.num_heads
    W = dict(zip("qkv", ref.in_proj_weight.detach().chunk(3), strict=True))
    b = dict(zip("qkv", ref.in_proj_bias.detach().chunk(3), strict=True))
    names = dict(zip("qkv", qkv_order, strict=True))

    def project(x: torch.Tensor, which: str) -> torch.Tensor:
        w = W[names[which]]
        y = x @ (w.T if transpose_w else w)
        return y + b[names[which]] if bias else y

    def split_(x: torch.Tensor) -> torch.Tensor:
        B_, T_, _ = x.shape
        if split == "view":
            return x.reshape(B_, H, T_, E // H)
        return reference.split_heads(x, H)

    q, k, v = split_(project(query, "q")), split_(project(key, "k")), split_(project(value, "v"))
    scale = 1 / math.sqrt(E if scale_dim == "embed" else E // H)
    heads_out, weights = reference.scaled_dot_product_attention(q, k, v, mask, scale=scale)
    merged = reference.merge_heads(heads_out)
    if out_proj:
        merged = ref.out_proj(merged)
    return merged, weights


MHA_MISTAKES = (
    (dict(scale_dim="embed"), "each head's scores must be scaled by 1/√(E/heads) (the size of "
                              "ONE head's vectors), not 1/√E."),
    (dict(out_proj=False), "the output projection is missing: apply self.out_proj to the "
                           "merged heads."),
    (dict(transpose_w=False), "the projections multiply x by W as stored; PyTorch stores a "
                              "linear layer's weight as (out, in), so the projection is "
                              "x Wᵀ + b (what F.linear computes)."),
    (dict(split="view"), "the heads were split with a reshape to (B, heads, T, E/heads) "
                         "without the transpose: use your split_heads."),
    (dict(bias=False), "the biases of the input projections (in_proj_bias) are missing."),
    (dict(qkv_order="kqv"), "in_proj_weight stacks the projections in the order queries, "
                            "keys, values: its first E rows are W^Q, the next E W^K, the "
                            "last E W^V (and in_proj_bias likewise)."),
    (dict(qkv_order="qqq"), "queries, keys and values each need their own projection "
                            "(W_q for the query, W_k for the key, W_v for the value)."),
)

"""Structured pruning: cut whole heads and feed-forward units out of the weight
matrices, so that the model gets smaller *and* faster.

In one BERT layer with ``A`` heads of width ``d``:

* head ``h`` owns rows ``h·d .. (h+1)·d - 1`` of ``W_q``, ``W_k``, ``W_v`` (and of their
  biases) and the same columns of the attention output matrix ``W_o``, since
  ``MultiHead(x) = Σ_h Att_h(x) W_o[:, h]``; removing the head deletes those rows and
  columns, and the layer computes the same sum without the term;
* feed-forward unit ``i`` owns row ``i`` of ``W_1`` (and ``b_1[i]``) and column ``i`` of
  ``W_2``, since ``FFN(x) = Σ_i W_2[:, i] · GELU(W_1[i] x + b_1[i]) + b_2``; removing it
  deletes that row and column.

Which to remove: Michel et al.'s gate importance, ``I = E_x |∂L(x)/∂ξ|`` at ``ξ = 1``, for a
gate ``ξ`` on each head's output and on each unit's activation
(:func:`lmcourse.models.compress.gate_importance`). The pruned model equals the masked one
(the same heads or units zeroed) to rounding; only its matrices are smaller.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

__all__ = ["bert_layers", "keep_most_important", "prune_ffn_units", "prune_heads"]


def bert_layers(model: nn.Module) -> list[nn.Module]:
    """Every BERT encoder layer in ``model`` (modules with ``attention.self``,
    ``attention.output``, ``intermediate`` and ``output``), in order."""
    found = [m for m in model.modules() if hasattr(m, "intermediate") and hasattr(m, "output")
             and hasattr(getattr(m, "attention", None), "self")]
    if not found:
        raise ValueError("no BERT layer (attention.self, intermediate, output) found; "
                         "structured pruning needs lmcourse's BertModel or a model built on it")
    return found


def keep_most_important(importance: torch.Tensor, remove: int, min_per_row: int = 1
                        ) -> torch.Tensor:
    """A boolean ``keep`` mask shaped like ``importance`` (``layers × items``) that drops
    the ``remove`` least important items over all layers, but never leaves a layer with
    fewer than ``min_per_row``."""
    most = importance.numel() - min_per_row * importance.shape[0]
    if not 0 <= remove <= most:
        raise ValueError(f"can remove between 0 and {most} items keeping {min_per_row} per "
                         f"layer, got {remove}")
    keep = torch.ones_like(importance, dtype=torch.bool)
    left = keep.sum(dim=1)
    removed = 0
    for flat in importance.flatten().argsort().tolist():
        if removed == remove:
            break
        row, col = divmod(flat, importance.shape[1])
        if left[row] > min_per_row:
            keep[row, col] = False
            left[row] -= 1
            removed += 1
    return keep


@torch.no_grad()
def _take(linear: nn.Linear, index: torch.Tensor, dim: int) -> nn.Linear:
    """A new Linear with only the output rows (``dim=0``) or input columns (``dim=1``) of
    ``linear`` listed in ``index``; the bias follows the rows and stays whole for columns."""
    weight = linear.weight.index_select(dim, index)
    out = nn.Linear(weight.shape[1], weight.shape[0], bias=linear.bias is not None,
                    device=weight.device, dtype=weight.dtype)
    out.weight.copy_(weight)
    if linear.bias is not None:
        out.bias.copy_(linear.bias if dim == 1 else linear.bias[index])
    return out


def _check_keep(keep: torch.Tensor, shape: tuple[int, int], what: str) -> None:
    if tuple(keep.shape) != shape:
        raise ValueError(f"keep must be layers x {what} = {shape[0]} x {shape[1]}, got "
                         f"{tuple(keep.shape)}")
    if not keep.bool().any(dim=1).all():
        raise ValueError(f"every layer must keep at least one of its {what}; use "
                         "keep_most_important(..., min_per_row=1) to choose them")


def prune_heads(model: nn.Module, keep: torch.Tensor) -> nn.Module:
    """A copy of ``model`` whose layers keep only the heads where ``keep`` (``layers ×
    heads``, boolean) is True: their rows of ``W_q, W_k, W_v`` and columns of ``W_o`` are
    cut out, so each matrix shrinks from ``H`` to ``kept · d`` rows or columns."""
    pruned = copy.deepcopy(model)
    layers = bert_layers(pruned)
    heads = layers[0].attention.self.num_heads
    _check_keep(keep, (len(layers), heads), "heads")
    for layer, kept in zip(layers, keep.bool(), strict=True):
        attention = layer.attention.self
        d_head = attention.query.out_features // attention.num_heads
        index = (kept.nonzero().flatten()[:, None] * d_head + torch.arange(d_head)).flatten()
        index = index.to(attention.query.weight.device)
        for name in ("query", "key", "value"):
            setattr(attention, name, _take(getattr(attention, name), index, dim=0))
        layer.attention.output.dense = _take(layer.attention.output.dense, index, dim=1)
        attention.num_heads = int(kept.sum())
    return pruned


def prune_ffn_units(model: nn.Module, keep: torch.Tensor) -> nn.Module:
    """A copy of ``model`` whose feed-forward blocks keep only the units where ``keep``
    (``layers × intermediate size``, boolean) is True: rows of ``W_1`` and columns of
    ``W_2`` are cut out."""
    pruned = copy.deepcopy(model)
    layers = bert_layers(pruned)
    _check_keep(keep, (len(layers), layers[0].intermediate.dense.out_features), "units")
    for layer, kept in zip(layers, keep.bool(), strict=True):
        index = kept.nonzero().flatten().to(layer.intermediate.dense.weight.device)
        layer.intermediate.dense = _take(layer.intermediate.dense, index, dim=0)
        layer.output.dense = _take(layer.output.dense, index, dim=1)
    return pruned

"""Making a trained model smaller and faster.

Four families, each a function that returns a *new* model and leaves its input untouched:

* **Magnitude pruning** (unstructured): in every Linear weight matrix ``W`` of the encoder,
  zero the fraction ``s`` of entries with the smallest ``|W_ij|``:
  ``W' = W * 1[|W| > q_s(|W|)]`` with ``q_s`` the ``s``-quantile of that matrix.
* **Head pruning** (Michel et al. 2019): a gate ``ξ_h`` multiplies each head's output;
  the importance of head ``h`` is ``I_h = E_x |∂L(x)/∂ξ_h|`` at ``ξ = 1``, and the least
  important heads are removed first. The same gate on each feed-forward unit's activation
  scores units (:func:`gate_importance`); ``structured_pruning`` cuts the least important
  heads and units out of the matrices.
* **Dynamic int8 quantization**: each Linear weight is stored as int8 with one scale per
  matrix, ``W ≈ scale · W_int8``; activations are quantized on the fly at run time.
* **Half precision**: every weight stored (and multiplied) in 16 bits, bfloat16 or float16.
* **Low rank**: ``W (out × in) ≈ U_r Σ_r V_r^T``, the truncated SVD, stored as two Linear
  layers ``in → r → out``: ``r (in + out)`` numbers instead of ``in · out``.

Cross-layer sharing (ALBERT) is the fifth: ``BertConfig(share_layers=True)``.
"""

from __future__ import annotations

import copy
import io
import statistics
import time
import warnings
from collections.abc import Callable, Iterable

import torch
from torch import nn

__all__ = ["count_params", "factorize_feed_forward", "gate_importance", "half_precision",
           "head_importance", "latency_seconds", "linear_weight_bytes", "low_rank_linear",
           "magnitude_prune", "mask_heads", "quantize_int8", "serialized_bytes",
           "weight_sparsity"]


def count_params(model: nn.Module, trainable_only: bool = False) -> int:
    """Number of parameters, each shared tensor counted once (ALBERT's layers are one set)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad or not trainable_only)


# ---- measuring -----------------------------------------------------------------------------

def serialized_bytes(model: nn.Module) -> int:
    """Bytes of ``torch.save(model.state_dict())``: what a checkpoint of the model weighs,
    int8 weights included (their packed form is in the state dict)."""
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    return buffer.getbuffer().nbytes


def _linear_modules(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """Linear layers, fp32 or dynamically quantized."""
    kinds = (nn.Linear, torch.ao.nn.quantized.dynamic.Linear)
    return [(n, m) for n, m in model.named_modules() if isinstance(m, kinds)]


def linear_weight_bytes(model: nn.Module) -> int:
    """Bytes held by the weight matrices of the model's Linear layers (fp32: 4 per entry;
    dynamic int8: 1 per entry plus its scale and zero point)."""
    total = 0
    for _, module in _linear_modules(model):
        if isinstance(module, nn.Linear):
            total += module.weight.numel() * module.weight.element_size()
        else:
            weight = module.weight()
            total += weight.numel() * weight.element_size() + 8
    return total


def weight_sparsity(model: nn.Module) -> float:
    """Share of exact zeros among the entries of the Linear weight matrices."""
    zeros = total = 0
    for _, module in _linear_modules(model):
        if isinstance(module, nn.Linear):
            zeros += int((module.weight == 0).sum())
            total += module.weight.numel()
    return zeros / max(total, 1)


@torch.no_grad()
def latency_seconds(fn: Callable[[], object], repeats: int = 10, warmup: int = 2) -> float:
    """Median wall time of ``fn()`` over ``repeats`` calls after ``warmup`` untimed ones
    (the median ignores the odd slow call of a busy machine), under
    ``torch.inference_mode()``: the latency of serving the model, with no graph kept for a
    backward pass."""
    if repeats < 1 or warmup < 0:
        raise ValueError(f"repeats must be >= 1 and warmup >= 0, got {repeats} and {warmup}")
    times = []
    with torch.inference_mode():
        for _ in range(warmup):
            fn()
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
    return statistics.median(times)


# ---- pruning -------------------------------------------------------------------------------

def _encoder_linears(model: nn.Module, skip: Iterable[str]) -> list[tuple[str, nn.Linear]]:
    skip = tuple(skip)
    return [(n, m) for n, m in model.named_modules()
            if isinstance(m, nn.Linear) and not any(s in n for s in skip)]


@torch.no_grad()
def magnitude_prune(model: nn.Module, sparsity: float, skip: Iterable[str] = ("classifier",)
                    ) -> nn.Module:
    """A copy of ``model`` whose Linear weights (except modules whose name contains a string
    of ``skip``) each have the fraction ``sparsity`` of their smallest-magnitude entries set
    to zero. The matrices keep their dense shape: no kernel runs faster for it."""
    if not 0.0 <= sparsity < 1.0:
        raise ValueError(f"sparsity is the share of weights removed, in [0, 1); got {sparsity}")
    pruned = copy.deepcopy(model)
    for _, linear in _encoder_linears(pruned, skip):
        w = linear.weight
        k = int(sparsity * w.numel())
        if k == 0:
            continue
        threshold = w.abs().flatten().kthvalue(k).values
        w.mul_(w.abs() > threshold)
    return pruned


def _self_attentions(model: nn.Module) -> list[nn.Module]:
    found = [m for m in model.modules() if hasattr(m, "query") and hasattr(m, "num_heads")]
    if not found:
        raise ValueError("no self-attention module with query/key/value and num_heads found; "
                         "head pruning needs lmcourse's BertModel (or a model built from it)")
    return found


class _InputGate(nn.Module):
    """``linear(x ⊙ ξ)`` with one gate per group of input features: a head's ``d`` features
    in front of the attention output matrix (its output ``Att_h(x)`` scaled by ``ξ_h``), or
    one feed-forward unit's activation in front of ``W_2``."""

    def __init__(self, linear: nn.Linear, gates: torch.Tensor):
        super().__init__()
        self.linear, self.gates = linear, gates

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        groups = self.gates.numel()
        return self.linear((x.unflatten(-1, (groups, -1)) * self.gates[:, None]).flatten(-2))


def gate_importance(model: nn.Module, loss_fn: Callable[[nn.Module], torch.Tensor],
                    batches: int = 1, of: str = "heads") -> torch.Tensor:
    """Michel et al.'s ``I = E_x |∂L/∂ξ|`` at ``ξ = 1`` for a gate on every head's output
    (``of="heads"``) or every feed-forward unit's activation (``of="units"``), as a
    ``layers × heads`` (or ``layers × units``) tensor. ``loss_fn(model)`` computes the loss
    of one batch (called ``batches`` times, e.g. drawing a new batch each call); the gates
    go into a copy of the model, so the model itself is never changed."""
    from lmcourse.models.structured_pruning import bert_layers

    if of not in ("heads", "units"):
        raise ValueError(f"of must be 'heads' or 'units', got {of!r}")
    gated = copy.deepcopy(model).eval()
    for p in gated.parameters():
        p.requires_grad_(False)
    layers = bert_layers(gated)
    blocks = ([layer.attention.output for layer in layers] if of == "heads"
              else [layer.output for layer in layers])
    width = (layers[0].attention.self.num_heads if of == "heads"
             else layers[0].intermediate.dense.out_features)
    gates = torch.ones(len(layers), width, requires_grad=True)
    for block, layer_gates in zip(blocks, gates, strict=True):
        block.dense = _InputGate(block.dense, layer_gates)
    total = torch.zeros_like(gates)
    for _ in range(batches):
        (grad,) = torch.autograd.grad(loss_fn(gated), gates)
        total += grad.abs()
    return total / batches


def head_importance(model: nn.Module, loss_fn: Callable[[nn.Module], torch.Tensor],
                    batches: int = 1) -> torch.Tensor:
    """Michel et al.'s ``I_h = E_x |∂L/∂ξ_h|`` for every head, as a ``layers × heads``
    tensor: :func:`gate_importance` with a gate ``ξ_h`` on each head's output
    ``Att_h(x)``."""
    return gate_importance(model, loss_fn, batches, of="heads")


def mask_heads(model: nn.Module, keep: torch.Tensor) -> nn.Module:
    """A copy of ``model`` with the heads where ``keep`` (``layers × heads``, boolean) is
    False removed: their value rows are zeroed, so they add nothing to the output."""
    masked = copy.deepcopy(model)
    attentions = _self_attentions(masked)
    if tuple(keep.shape) != (len(attentions), attentions[0].num_heads):
        raise ValueError(f"keep must be layers x heads = {len(attentions)} x "
                         f"{attentions[0].num_heads}, got {tuple(keep.shape)}")
    with torch.no_grad():
        for layer, attention in enumerate(attentions):
            value = attention.value
            d_head = value.out_features // attention.num_heads
            rows = (~keep[layer].bool()).repeat_interleave(d_head)
            value.weight[rows] = 0.0
            value.bias[rows] = 0.0
    return masked


# ---- quantization and low rank ---------------------------------------------------------------

def quantize_int8(model: nn.Module) -> nn.Module:
    """PyTorch's dynamic int8 quantization of every ``nn.Linear`` (a copy, in eval mode;
    CPU only). Embeddings and LayerNorms stay fp32."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.ao.quantization is deprecated for torchao
        return torch.ao.quantization.quantize_dynamic(copy.deepcopy(model).cpu().eval(),
                                                      {nn.Linear}, dtype=torch.qint8)


def half_precision(model: nn.Module, dtype: torch.dtype = torch.bfloat16) -> nn.Module:
    """A copy of ``model`` with every parameter and buffer in 16 bits: ``bfloat16`` keeps
    float32's 8 exponent bits and 7 of its 23 mantissa bits (relative rounding error at most
    ``2^-8``, the same range); ``float16`` has 5 and 10 (at most ``2^-11`` between ``2^-14`` and
    65,504, the largest float16; smaller numbers keep fewer bits). The arithmetic runs in
    that type too, so speed depends on the hardware."""
    if dtype not in (torch.bfloat16, torch.float16):
        raise ValueError(f"dtype must be torch.bfloat16 or torch.float16, got {dtype}")
    return copy.deepcopy(model).to(dtype).eval()


@torch.no_grad()
def low_rank_linear(linear: nn.Linear, rank: int) -> nn.Sequential:
    """``W ≈ (U_r Σ_r)(V_r^T)``: the best rank-``r`` approximation of ``W`` (Eckart-Young),
    as ``Linear(in, r, bias=False)`` then ``Linear(r, out)`` keeping the bias."""
    out_features, in_features = linear.weight.shape
    if not 0 < rank <= min(out_features, in_features):
        raise ValueError(f"rank must be between 1 and {min(out_features, in_features)} for a "
                         f"{out_features} x {in_features} weight, got {rank}")
    U, S, Vh = torch.linalg.svd(linear.weight.double(), full_matrices=False)
    first = nn.Linear(in_features, rank, bias=False)
    second = nn.Linear(rank, out_features, bias=linear.bias is not None)
    first.weight.copy_(Vh[:rank])
    second.weight.copy_(U[:, :rank] * S[:rank])
    if linear.bias is not None:
        second.bias.copy_(linear.bias)
    return nn.Sequential(first, second).to(linear.weight.dtype)


def factorize_feed_forward(model: nn.Module, rank: int) -> nn.Module:
    """A copy of a BERT-style ``model`` whose feed-forward matrices (``intermediate.dense``
    and ``output.dense`` of every layer) are replaced by rank-``rank`` factors."""
    factored = copy.deepcopy(model)
    names = [n for n, m in factored.named_modules() if isinstance(m, nn.Linear)
             and (n.endswith("intermediate.dense")
                  or (n.endswith("output.dense") and ".attention." not in n))]
    if not names:
        raise ValueError("no feed-forward layers (intermediate.dense / output.dense) found")
    for name in names:
        parent_name, _, child = name.rpartition(".")
        parent = factored.get_submodule(parent_name)
        setattr(parent, child, low_rank_linear(getattr(parent, child), rank))
    return factored

r"""Vaswani et al.'s (2017) Table 1, measured: what a self-attention layer and a recurrent
layer cost, how many steps must run one after another, and how far a gradient travels.

For a sequence of $n$ vectors of width $d$:

| layer | operations per layer | sequential operations | maximum path length |
|---|---|---|---|
| self-attention | $O(n^2 d)$ | $O(1)$ | $O(1)$ |
| recurrent | $O(n d^2)$ | $O(n)$ | $O(n)$ |

Attention does more arithmetic once $n > d$, but all of it at once; a recurrent layer does
less, in $n$ steps that wait for each other. And between position $t - k$ and position $t$
a gradient crosses one attention layer, but $k$ recurrent steps.
"""

from __future__ import annotations

import torch
from torch import nn

from lmcourse.models.attention import MultiHeadAttention, causal_mask
from lmcourse.timing import measure

__all__ = ["CausalSelfAttention", "gradient_reach", "layer", "layer_seconds",
           "sequential_steps"]


class CausalSelfAttention(nn.Module):
    """One multi-head self-attention layer over ``B x n x d`` inputs, position ``t`` reading
    positions ``<= t`` (the course's :class:`MultiHeadAttention`)."""

    def __init__(self, d: int, heads: int = 4):
        super().__init__()
        self.attention = MultiHeadAttention(d, heads, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mask = causal_mask(x.shape[1], device=x.device)
        return self.attention(x, x, x, mask=mask, need_weights=False)[0]


class _Recurrent(nn.Module):
    """A recurrent layer that returns only its outputs ``B x n x d``."""

    def __init__(self, cell: str, d: int):
        super().__init__()
        self.rnn = {"rnn": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}[cell](d, d, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.rnn(x)[0]


def layer(kind: str, d: int, seed: int = 0) -> nn.Module:
    """A freshly initialised ``"attention"`` layer or recurrent ``"rnn"`` / ``"lstm"`` /
    ``"gru"`` layer of width ``d`` (PyTorch's default initialisation)."""
    torch.manual_seed(seed)
    if kind == "attention":
        return CausalSelfAttention(d)
    if kind in ("rnn", "lstm", "gru"):
        return _Recurrent(kind, d)
    raise ValueError(f"kind is 'attention', 'rnn', 'lstm' or 'gru', got {kind!r}")


def sequential_steps(kind: str, n: int) -> int:
    """Operations that must wait for the previous one: 1 for attention (every position at
    once), ``n`` for a recurrent layer (``h_t`` needs ``h_{t-1}``)."""
    return 1 if kind == "attention" else n


def layer_seconds(kind: str, n: int, d: int, batch: int = 8, repeats: int = 5,
                  device: torch.device | str = "cpu") -> float:
    """Median wall time of one forward and backward pass of a ``kind`` layer of width ``d``
    over ``batch`` sequences of ``n`` positions (:func:`lmcourse.timing.measure`)."""
    module = layer(kind, d).to(device)
    x = torch.randn(batch, n, d, device=device, requires_grad=True)

    def step():
        module(x).sum().backward()

    return measure(step, repeats=repeats, device=device)


def gradient_reach(kind: str, n: int, d: int, seed: int = 0) -> torch.Tensor:
    r"""$\lVert \partial y_{n-1} / \partial x_{n-1-k} \rVert$ for $k = 0 .. n-1$: how much
    the last output depends on the input $k$ positions back, for a fresh ``kind`` layer
    (the Jacobian's norm estimated with one random direction $u$: the gradient of
    $u \cdot y_{n-1}$, averaged over 8 directions)."""
    module = layer(kind, d, seed).double()
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(1, n, d, dtype=torch.float64, generator=gen, requires_grad=True)
    y = module(x)[0, -1]
    norms = torch.zeros(n, dtype=torch.float64)
    for _ in range(8):
        u = torch.randn(d, dtype=torch.float64, generator=gen)
        (grad,) = torch.autograd.grad(y @ u, x, retain_graph=True)
        norms += grad[0].norm(dim=1) ** 2
    return (norms / 8).sqrt().flip(0)  # index k: k positions back from the last

"""Training a language model: cross-entropy, perplexity, gradient clipping, truncated BPTT.

Perplexity is the exponential of the mean negative log-likelihood per token,

    PPL = exp( -1/N * sum_t log p(x_t | x_<t) ),

the effective number of equally likely choices the model hesitates between.
Gradient clipping rescales the whole gradient when its norm exceeds theta,

    g <- min(1, theta / ||g||) * g,

which keeps the direction and bounds the step.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import torch
from torch import nn
from tqdm.auto import tqdm

State = torch.Tensor | tuple[torch.Tensor, ...] | None


def perplexity(mean_nll: float) -> float:
    """``exp`` of the mean negative log-likelihood (in nats) per token."""
    return math.exp(min(mean_nll, 700.0))  # beyond e^700 a float overflows


def grad_norm(parameters: Iterable[nn.Parameter]) -> float:
    """The L2 norm of all gradients taken together, ``||g||``."""
    grads = [p.grad.detach().flatten() for p in parameters if p.grad is not None]
    return float(torch.cat(grads).norm()) if grads else 0.0


def clip_gradients(parameters: Iterable[nn.Parameter], theta: float) -> float:
    """Rescale gradients in place so that ``||g|| <= theta``; returns the norm before."""
    params = [p for p in parameters if p.grad is not None]
    norm = grad_norm(params)
    if norm > theta:
        for p in params:
            p.grad.mul_(theta / norm)
    return norm


def detach_state(state: State) -> State:
    """Cut the graph behind a hidden state (truncated BPTT between minibatches)."""
    if state is None:
        return None
    if isinstance(state, tuple):
        return tuple(s.detach() for s in state)
    return state.detach()


@dataclass
class History:
    """What happened during training, for printing and plotting."""

    step_loss: list[float] = field(default_factory=list)
    step_grad_norm: list[float] = field(default_factory=list)
    epoch_perplexity: list[float] = field(default_factory=list)
    val_perplexity: list[float] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def final_perplexity(self) -> float:
        return self.epoch_perplexity[-1] if self.epoch_perplexity else float("nan")


def lm_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over every position of a ``B x T x V`` batch of logits."""
    return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


@torch.no_grad()
def evaluate_lm(model: nn.Module, batches: Sequence[tuple[torch.Tensor, torch.Tensor]],
                carry_state: bool = True) -> float:
    """Perplexity of ``model`` on ``batches`` (no gradient, no parameter change)."""
    model.eval()
    dev = next(model.parameters()).device
    state, total, count = None, 0.0, 0
    for x, y in batches:
        logits, new_state = model(x.to(dev), state if carry_state else None)
        state = new_state
        total += float(lm_loss(logits, y.to(dev))) * y.numel()
        count += y.numel()
    model.train()
    return perplexity(total / max(count, 1))


def fit_lm(model: nn.Module,
           make_batches: Callable[[int], Sequence[tuple[torch.Tensor, torch.Tensor]]],
           epochs: int, lr: float, *, clip: float | None = 1.0, carry_state: bool = True,
           optimizer: str = "adam", val_batches: Sequence | None = None,
           progress: bool = True, desc: str = "training") -> History:
    """Train a language model ``logits, state = model(x, state)`` on next-token prediction.

    ``make_batches(epoch)`` returns that epoch's ``(X, Y)`` minibatches. With
    ``carry_state`` the hidden state flows from one minibatch to the next (sequential
    partitioning) and is detached in between: regular truncated BPTT.
    """
    dev = next(model.parameters()).device
    opt_cls = {"adam": torch.optim.Adam, "sgd": torch.optim.SGD}.get(optimizer)
    if opt_cls is None:
        raise ValueError(f"optimizer must be 'adam' or 'sgd', got {optimizer!r}")
    opt = opt_cls(model.parameters(), lr=lr)
    history, start = History(), time.perf_counter()
    model.train()
    # honour TQDM_DISABLE=1 here: tqdm's notebook bar ignores it
    quiet = not progress or os.environ.get("TQDM_DISABLE", "").lower() in ("1", "true")
    bar = tqdm(range(epochs), desc=desc, disable=quiet)
    for epoch in bar:
        state, total, count = None, 0.0, 0
        for x, y in make_batches(epoch):
            x, y = x.to(dev), y.to(dev)
            logits, state = model(x, detach_state(state) if carry_state else None)
            loss = lm_loss(logits, y)
            opt.zero_grad()
            loss.backward()
            norm = clip_gradients(model.parameters(), clip) if clip else grad_norm(
                model.parameters())
            opt.step()
            history.step_loss.append(loss.item())
            history.step_grad_norm.append(norm)
            total += loss.item() * y.numel()
            count += y.numel()
        history.epoch_perplexity.append(perplexity(total / max(count, 1)))
        if val_batches is not None:
            history.val_perplexity.append(evaluate_lm(model, val_batches, carry_state))
        bar.set_postfix(ppl=f"{history.epoch_perplexity[-1]:.2f}")
    history.seconds = time.perf_counter() - start
    return history

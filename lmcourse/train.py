"""Training a language model: cross-entropy, perplexity, gradient clipping, truncated BPTT.

Perplexity is the exponential of the mean negative log-likelihood per token,

    PPL = exp( -1/N * sum_t log p(x_t | x_<t) ),

the effective number of equally likely choices the model hesitates between.
Gradient clipping rescales the whole gradient when its norm exceeds theta,

    g <- min(1, theta / ||g||) * g,

which keeps the direction and bounds the step. The transformer's learning-rate schedule
(Vaswani et al. 2017) warms up linearly, then decays as the inverse square root of the step,

    lr(s) = factor * d^-0.5 * min(s^-0.5, s * warmup^-1.5),

peaking at ``s = warmup``; :func:`transformer_lr` computes it and ``fit_lm(lr_schedule=...)``
uses it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

from lmcourse import progress_bar

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
    # when each validation perplexity was measured: optimizer steps so far, and seconds of
    # training so far (evaluation time left out), for equal-steps and equal-time plots
    val_steps: list[int] = field(default_factory=list)
    val_seconds: list[float] = field(default_factory=list)
    tokens: int = 0            # training tokens (targets) seen
    train_seconds: float = 0.0  # time spent in training steps, evaluation left out

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / max(self.train_seconds, 1e-9)

    @property
    def final_perplexity(self) -> float:
        return self.epoch_perplexity[-1] if self.epoch_perplexity else float("nan")


def transformer_lr(step: int, d_model: int, warmup: int, factor: float = 1.0) -> float:
    """The paper's schedule, ``factor * d^-0.5 * min(step^-0.5, step * warmup^-1.5)``:
    a linear rise for ``warmup`` steps to ``factor / sqrt(d * warmup)``, then ``1/sqrt(step)``.
    Steps count from 1."""
    if step < 1 or warmup < 1:
        raise ValueError(f"step and warmup count from 1, got step={step}, warmup={warmup}")
    return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def warmup_cosine(step: int, total: int, lr: float, warmup: int, floor: float) -> float:
    """Linear warm-up to ``lr`` over ``warmup`` steps, then a cosine decay that reaches
    ``floor * lr`` at step ``total`` (and stays there):
    ``lr (floor + (1 - floor) (1 + cos(pi p)) / 2)`` with ``p`` the fraction of the decay done.
    Steps count from 1."""
    if step <= warmup:
        return lr * step / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return lr * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress)))


def lm_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over every position of a ``B x T x V`` batch of logits."""
    return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def lm_train_step(model: nn.Module, optimizer: torch.optim.Optimizer, x: torch.Tensor,
                  y: torch.Tensor, state: State, clip: float) -> tuple[float, State]:
    """One update of truncated BPTT: run ``x`` from the carried state (detached, so the
    gradient stops at the minibatch's start), next-token loss against ``y``, backward,
    clip the gradient norm at ``clip``, step. Returns the loss and the state to carry."""
    logits, state = model(x, detach_state(state))
    loss = lm_loss(logits, y)
    optimizer.zero_grad()
    loss.backward()
    clip_gradients(model.parameters(), clip)
    optimizer.step()
    return loss.item(), state


@torch.no_grad()
def windowed_nll(model: nn.Module, ids: Sequence[int] | torch.Tensor, context: int, stride: int,
                 batch: int = 64) -> tuple[float, int]:
    """Total negative log-likelihood (nats) and number of targets of a stateless model on
    ``ids``, read in sliding windows of ``context`` tokens moved ``stride`` at a time: the
    first window scores all its targets, later ones only their last ``stride`` (each token
    after the first scored once, with at least ``context - stride`` tokens before it)."""
    if not 0 < stride <= context:
        raise ValueError(f"need 0 < stride <= context, got stride={stride}, context={context}")
    model.eval()
    dev = next(model.parameters()).device
    data = torch.as_tensor(ids, dtype=torch.long)
    starts = list(range(0, len(data) - context, stride))
    total, count = 0.0, 0
    for i in range(0, len(starts), batch):
        chunk = starts[i:i + batch]
        idx = torch.tensor(chunk)[:, None] + torch.arange(context + 1)
        windows = data[idx].to(dev)
        logits, _ = model(windows[:, :-1])
        nll = nn.functional.cross_entropy(logits.transpose(1, 2), windows[:, 1:],
                                          reduction="none")
        keep = torch.zeros_like(nll, dtype=torch.bool)
        keep[:, context - stride:] = True
        if chunk[0] == 0:
            keep[0] = True
        total += float(nll[keep].sum())
        count += int(keep.sum())
    last = starts[-1] + context  # targets after the last full window
    if last < len(data) - 1:
        tail = data[len(data) - 1 - context:].to(dev)[None]
        logits, _ = model(tail[:, :-1])
        nll = nn.functional.cross_entropy(logits.transpose(1, 2), tail[:, 1:], reduction="none")
        extra = len(data) - 1 - last
        total += float(nll[0, -extra:].sum())
        count += extra
    model.train()
    return total, count


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
           progress: bool = True, desc: str = "training",
           lr_schedule: Callable[[int], float] | None = None) -> History:
    """Train a language model ``logits, state = model(x, state)`` on next-token prediction.

    ``make_batches(epoch)`` returns that epoch's ``(X, Y)`` minibatches. With
    ``carry_state`` the hidden state flows from one minibatch to the next (sequential
    partitioning) and is detached in between: regular truncated BPTT. ``lr_schedule(s)``,
    if given, sets the learning rate of step ``s = 1, 2, ...`` (e.g. a
    :func:`transformer_lr` with its arguments bound), in place of the constant ``lr``.
    Validation (after every epoch) is not counted in ``history.train_seconds``.
    """
    dev = next(model.parameters()).device
    opt_cls = {"adam": torch.optim.Adam, "sgd": torch.optim.SGD}.get(optimizer)
    if opt_cls is None:
        raise ValueError(f"optimizer must be 'adam' or 'sgd', got {optimizer!r}")
    opt = opt_cls(model.parameters(), lr=lr)
    history, start = History(), time.perf_counter()
    step = 0
    model.train()
    bar = progress_bar(range(epochs), progress, desc=desc)
    for epoch in bar:
        state, total, count = None, 0.0, 0
        tick = time.perf_counter()
        for x, y in make_batches(epoch):
            x, y = x.to(dev), y.to(dev)
            step += 1
            if lr_schedule is not None:
                for group in opt.param_groups:
                    group["lr"] = lr_schedule(step)
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
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        history.train_seconds += time.perf_counter() - tick
        history.tokens += count
        history.epoch_perplexity.append(perplexity(total / max(count, 1)))
        if val_batches is not None:
            history.val_perplexity.append(evaluate_lm(model, val_batches, carry_state))
            history.val_steps.append(step)
            history.val_seconds.append(history.train_seconds)
        bar.set_postfix(ppl=f"{history.epoch_perplexity[-1]:.2f}")
    history.seconds = time.perf_counter() - start
    return history

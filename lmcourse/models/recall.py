"""Multi-query associative recall: a lookup that attention does in one step.

A sequence shows ``P`` key–value pairs, then asks for ``Q`` of the keys again; the answer
to each query is the value that followed that key earlier (Ba et al. 2016; Arora et al.
2023, "Zoology", whose multi-query form this is)::

    k_1 v_1 k_2 v_2 ... k_P v_P | q_1 q_2 ... q_Q        target at q_j: the value of key q_j

Keys are drawn without replacement from ``num_keys`` symbols, values with replacement from
``num_values``; ids ``0 .. num_keys - 1`` are keys and ``num_keys ..`` values, so one
vocabulary of ``num_keys + num_values`` serves a language model. Only the query positions
have a target (``IGNORE`` elsewhere): the answer cannot be guessed from frequencies,
only looked up. A recurrent network must squeeze all ``P`` pairs into its state before the
first query; attention compares the query with every earlier key directly.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import torch
from torch import nn

from lmcourse import progress_bar

__all__ = ["IGNORE", "RecallBatch", "RecallRun", "lookup_attention",
           "previous_token_attention", "query_loss", "recall_accuracy", "recall_batch",
           "recall_model", "train_recall"]

IGNORE = -100  # cross_entropy's ignore_index: positions that are not queries


class RecallBatch(NamedTuple):
    """``tokens`` (``B x (2P + Q)`` ids) and ``targets`` (the value id at each query
    position, ``IGNORE`` elsewhere); ``key_positions[b, j]`` is where query ``j``'s key was
    shown (its value sits one position later)."""

    tokens: torch.Tensor
    targets: torch.Tensor
    key_positions: torch.Tensor


def recall_batch(batch_size: int, pairs: int, queries: int | None = None, num_keys: int = 64,
                 num_values: int = 64, generator: torch.Generator | None = None
                 ) -> RecallBatch:
    """A batch of recall sequences with ``pairs`` key–value pairs and ``queries`` queries
    (default: every key once, in a random order)."""
    queries = pairs if queries is None else queries
    if not 0 < pairs <= num_keys:
        raise ValueError(f"pairs must be between 1 and num_keys={num_keys}, got {pairs}")
    if not 0 < queries <= pairs:
        raise ValueError(f"queries must be between 1 and pairs={pairs}, got {queries}")
    keys = torch.rand(batch_size, num_keys, generator=generator).argsort(dim=1)[:, :pairs]
    values = num_keys + torch.randint(0, num_values, (batch_size, pairs), generator=generator)
    asked = torch.rand(batch_size, pairs, generator=generator).argsort(dim=1)[:, :queries]
    context = torch.stack([keys, values], dim=2).reshape(batch_size, 2 * pairs)
    tokens = torch.cat([context, keys.gather(1, asked)], dim=1)
    targets = torch.full_like(tokens, IGNORE)
    targets[:, 2 * pairs:] = values.gather(1, asked)
    return RecallBatch(tokens, targets, 2 * asked)


def query_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over the query positions only,
    ``-(1/|Q|) sum_{t in Q} log p(target_t | tokens <= t)``; ``IGNORE`` targets add nothing."""
    return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                       targets.reshape(-1), ignore_index=IGNORE)


def _logits(model: nn.Module, tokens: torch.Tensor) -> torch.Tensor:
    """A model's logits, whether it returns them alone or as ``(logits, state)``."""
    out = model(tokens)
    return out[0] if isinstance(out, tuple) else out


@torch.no_grad()
def recall_accuracy(logits: torch.Tensor, targets: torch.Tensor) -> float:
    """Share of query positions whose most likely token is the right value."""
    asked = targets != IGNORE
    return float((logits.argmax(-1)[asked] == targets[asked]).float().mean())


def recall_model(kind: str, width: int, vocab_size: int, max_len: int, layers: int = 2,
                 seed: int | None = None) -> nn.Module:
    """A causal language model over the recall vocabulary: ``"transformer"`` (``layers``
    pre-norm layers of ``width``, 4 heads, feed-forward ``4 width``, learned positions) or a
    recurrent ``"lstm"`` / ``"gru"`` (``layers`` layers of ``width`` units, embeddings of
    ``width``). Every one maps ``B x T`` ids to ``B x T x vocab`` logits, reading left to
    right. ``seed`` fixes the initial weights."""
    from lmcourse.models.gated import GatedLM
    from lmcourse.models.transformer import TransformerLM

    if seed is not None:
        torch.manual_seed(seed)
    if kind == "transformer":
        return TransformerLM(vocab_size, width, 4, layers, 4 * width, max_len=max_len,
                             positions="learned")
    if kind in ("lstm", "gru"):
        return GatedLM(vocab_size, width, cell=kind, num_layers=layers, embed=width,
                       impl="torch")
    raise ValueError(f"kind is 'transformer', 'lstm' or 'gru', got {kind!r}")


@dataclass
class RecallRun:
    """What :func:`train_recall` measured: held-out query accuracy every ``eval_every``
    steps (``curve``: ``[step, accuracy]``), the final one, the parameter count, the
    training seconds and every step's training loss."""

    accuracy: float
    parameters: int
    seconds: float
    curve: list[list[float]] = field(default_factory=list)
    losses: list[float] = field(default_factory=list, repr=False)
    model: nn.Module | None = field(default=None, repr=False)


def train_recall(model: nn.Module, pairs: int, steps: int, seed: int, *, lr: float = 1e-3,
                 batch_size: int = 64, eval_every: int = 100, eval_size: int = 512,
                 num_keys: int = 64, num_values: int = 64,
                 device: torch.device | str = "cpu",
                 loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = query_loss,
                 progress: bool = False) -> RecallRun:
    """Train ``model`` on fresh recall batches (Adam, gradient norm clipped at 1; the loss,
    ``loss_fn(logits, targets)``, is the cross-entropy at the query positions only) and
    measure its accuracy on ``eval_size`` held-out sequences drawn from another generator.
    ``model(tokens)`` may return the logits or ``(logits, state)``; ``progress`` shows a
    bar."""
    torch.manual_seed(seed)
    data = torch.Generator().manual_seed(seed)
    held_out = recall_batch(eval_size, pairs, num_keys=num_keys, num_values=num_values,
                            generator=torch.Generator().manual_seed(10_000 + pairs))
    model = model.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    curve, losses, seconds = [], [], 0.0

    def evaluate() -> float:
        model.eval()
        with torch.no_grad():
            logits = _logits(model, held_out.tokens.to(device))
        model.train()
        return recall_accuracy(logits.cpu(), held_out.targets)

    for step in progress_bar(range(1, steps + 1), progress, desc=f"recall, {pairs} pairs",
                             leave=False):
        tick = time.perf_counter()
        batch = recall_batch(batch_size, pairs, num_keys=num_keys, num_values=num_values,
                             generator=data)
        loss = loss_fn(_logits(model, batch.tokens.to(device)), batch.targets.to(device))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        seconds += time.perf_counter() - tick
        losses.append(loss.item())
        if step % eval_every == 0 or step == steps:
            curve.append([step, round(evaluate(), 4)])
    return RecallRun(curve[-1][1], sum(p.numel() for p in model.parameters()), seconds,
                     curve, losses, model)


@torch.no_grad()
def lookup_attention(model: nn.Module, batch: RecallBatch) -> torch.Tensor:
    """For a transformer (``model.attentions``), the attention each head of each layer puts,
    at the query positions, on the key being asked for and on the value after it, averaged
    over the queries of ``batch``: a ``layers x heads x 2`` tensor (key, value)."""
    first_query = batch.tokens.shape[1] - batch.key_positions.shape[1]
    attentions = model.eval().attentions(batch.tokens)  # per layer: B x heads x T x T
    rows = torch.arange(batch.tokens.shape[0])[:, None]
    queries = first_query + torch.arange(batch.key_positions.shape[1])[None, :]
    out = []
    for weights in attentions:
        at_queries = weights[rows, :, queries]  # B x Q x heads x T
        on_key = at_queries.gather(3, batch.key_positions[:, :, None, None].expand(
            -1, -1, weights.shape[1], 1)).squeeze(3)
        on_value = at_queries.gather(3, (batch.key_positions + 1)[:, :, None, None].expand(
            -1, -1, weights.shape[1], 1)).squeeze(3)
        out.append(torch.stack([on_key.mean((0, 1)), on_value.mean((0, 1))], dim=1))
    return torch.stack(out)


@torch.no_grad()
def previous_token_attention(model: nn.Module, batch: RecallBatch) -> torch.Tensor:
    """For a transformer, the attention each head of each layer puts, at every value
    position, on the position just before it (the value's key), averaged over ``batch``:
    a ``layers x heads`` tensor. A head high here copies each key forward into its value's
    position, the first step of the lookup."""
    pairs = (batch.tokens.shape[1] - batch.key_positions.shape[1]) // 2
    values = torch.arange(1, 2 * pairs, 2)
    return torch.stack([weights[:, :, values, values - 1].mean((0, 2))
                        for weights in model.eval().attentions(batch.tokens)])

"""Encoder–decoder models for sequence-to-sequence tasks, and one loop to train and test them.

Every model here has the same call: ``model(src, src_mask, tgt_in)`` returns logits
``B x T x V`` for the next target token at each position (teacher forcing: the decoder
reads the true previous token), and ``model.greedy_decode(src, src_mask, max_len)`` writes
its own output, feeding back each argmax, and returns ``(ids B x max_len, attention)``.

- :class:`GRUSeq2Seq` (Cho et al. 2014; Bahdanau et al. 2015): a GRU encoder, a GRU
  decoder and, optionally, additive attention. Without attention the decoder sees the
  source only through one vector, the encoder's last state ``c``:
  ``s_t = GRU(s_{t-1}, [E y_{t-1}; c])``. With attention it gets a fresh context
  every step, ``c_t = sum_j a_tj h_j`` with
  ``a_t = softmax_j(w^T tanh(W_s s_{t-1} + W_h h_j))`` over the real source positions.
- :class:`TransformerSeq2Seq` (Vaswani et al. 2017): the course's encoder and decoder
  layers, causal self-attention in the decoder, cross-attention over the encoder's output.

:func:`train_seq2seq`, :func:`evaluate_seq2seq` and :func:`accuracy_by_length` work for
any module with that call.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from lmcourse import progress_bar
from lmcourse.data.tasks import BOS, EOS, PAD, Seq2SeqBatch
from lmcourse.models.attention import AdditiveAttention, causal_mask, masked_softmax
from lmcourse.models.transformer import (
    TransformerDecoderLayer,
    TransformerEncoderLayer,
    sinusoidal_positions,
)
from lmcourse.train import clip_gradients

__all__ = [
    "GRUSeq2Seq",
    "Seq2SeqHistory",
    "TransformerSeq2Seq",
    "accuracy_by_length",
    "alignment_agreement",
    "copy_rule",
    "evaluate_seq2seq",
    "sequence_accuracy",
    "sequence_loss",
    "token_accuracy",
    "train_seq2seq",
]


def _check_source(src: torch.Tensor, src_mask: torch.Tensor) -> None:
    if src.dim() != 2 or src_mask.shape != src.shape:
        raise ValueError(f"src and src_mask must both be B x S, got {tuple(src.shape)} and "
                         f"{tuple(src_mask.shape)}")
    if src_mask.dtype != torch.bool:
        raise TypeError(f"src_mask must be boolean (True = real token), got {src_mask.dtype}")
    if not src_mask[:, 0].all():
        raise ValueError("every source needs at least one real token, at position 0 "
                         "(pad after the tokens, not before)")


# ---- the GRU encoder–decoder, with or without attention ---------------------------------

class GRUSeq2Seq(nn.Module):
    """GRU encoder–decoder; ``attention=True`` adds Bahdanau's additive attention.

    The encoder is a (bidirectional by default) ``nn.GRU`` over the embedded source; its
    states ``h_j`` are the memory, and its final states (both directions) form ``c``. The
    decoder starts from ``s_0 = tanh(W_init c)`` and at step ``t`` computes

        context  c_t = c                                  (no attention: the bottleneck)
                 c_t = sum_j a_tj h_j, a_t = softmax_j(w^T tanh(W_s s_{t-1} + W_h h_j))
        state    s_t = GRUCell([E y_{t-1}; c_t], s_{t-1})
        logits   o_t = W_out [s_t; c_t] + b

    Padded source positions get attention weight exactly 0.
    """

    def __init__(self, vocab_size: int, embed_dim: int = 32, hidden_size: int = 64, *,
                 attention: bool = True, attention_size: int | None = None,
                 bidirectional: bool = True, bos_id: int = BOS):
        super().__init__()
        self.bos_id = bos_id
        directions = 2 if bidirectional else 1
        memory_size = directions * hidden_size
        self.embed = nn.Embedding(vocab_size, embed_dim)
        self.encoder = nn.GRU(embed_dim, hidden_size, batch_first=True,
                              bidirectional=bidirectional)
        self.init_state = nn.Linear(memory_size, hidden_size)
        self.attention = (AdditiveAttention(hidden_size, memory_size,
                                            attention_size or hidden_size)
                          if attention else None)
        self.cell = nn.GRUCell(embed_dim + memory_size, hidden_size)
        self.out = nn.Linear(hidden_size + memory_size, vocab_size)

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor]:
        """Memory ``h`` (``B x S x memory``, zeros on padding), summary ``c`` (``B x memory``)."""
        _check_source(src, src_mask)
        lengths = src_mask.sum(1).cpu()
        packed = pack_padded_sequence(self.embed(src), lengths, batch_first=True,
                                      enforce_sorted=False)  # the GRU never reads padding
        out, h_n = self.encoder(packed)
        memory, _ = pad_packed_sequence(out, batch_first=True, total_length=src.shape[1])
        return memory, torch.cat(list(h_n), dim=-1)  # last state of each direction

    def _step(self, y_prev, s, memory, keys, summary, src_mask):
        """One decoder step: ``(logits, new state, attention weights or None)``. ``keys``
        are the projected memory ``W_h h_j``, computed once per source (as Bahdanau et al.
        note), so a step only adds ``W_s s_{t-1}`` to them."""
        weights = None
        if self.attention is None:
            context = summary
        else:
            a = self.attention
            scores = a.w(torch.tanh(a.W_q(s)[:, None] + keys)).squeeze(-1)  # B x S
            weights = masked_softmax(scores, src_mask)
            context = (weights[:, :, None] * memory).sum(1)
        s = self.cell(torch.cat([self.embed(y_prev), context], dim=-1), s)
        return self.out(torch.cat([s, context], dim=-1)), s, weights

    def forward(self, src: torch.Tensor, src_mask: torch.Tensor, tgt_in: torch.Tensor,
                return_attention: bool = False):
        """Teacher-forced logits ``B x T x V`` (and ``B x T x S`` weights if asked)."""
        memory, summary = self.encode(src, src_mask)
        keys = None if self.attention is None else self.attention.W_k(memory)
        s = torch.tanh(self.init_state(summary))
        logits, weights = [], []
        for t in range(tgt_in.shape[1]):
            step_logits, s, w = self._step(tgt_in[:, t], s, memory, keys, summary, src_mask)
            logits.append(step_logits)
            weights.append(w)
        logits = torch.stack(logits, dim=1)
        if not return_attention:
            return logits
        return logits, None if self.attention is None else torch.stack(weights, dim=1)

    @torch.no_grad()
    def greedy_decode(self, src: torch.Tensor, src_mask: torch.Tensor, max_len: int
                      ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Write ``max_len`` tokens, each the argmax given the model's own previous ones.
        Returns the ids ``B x max_len`` and the attention ``B x max_len x S`` (``None``
        without attention)."""
        memory, summary = self.encode(src, src_mask)
        keys = None if self.attention is None else self.attention.W_k(memory)
        s = torch.tanh(self.init_state(summary))
        y = torch.full((src.shape[0],), self.bos_id, dtype=torch.long, device=src.device)
        ids, weights = [], []
        for _ in range(max_len):
            logits, s, w = self._step(y, s, memory, keys, summary, src_mask)
            y = logits.argmax(-1)
            ids.append(y)
            weights.append(w)
        ids = torch.stack(ids, dim=1)
        return ids, None if self.attention is None else torch.stack(weights, dim=1)


# ---- the transformer encoder–decoder ------------------------------------------------------

class TransformerSeq2Seq(nn.Module):
    """Encoder–decoder transformer from the course's layers (pre-norm by default).

    ``x = sqrt(d) E[src] + PE``; ``num_encoder_layers`` encoder layers (self-attention over
    the real source tokens) give the memory ``m``. The decoder embeds ``tgt_in`` the same
    way (one shared embedding table) and runs ``num_decoder_layers`` decoder layers:
    causal self-attention (target position ``t`` sees ``<= t``), then cross-attention over
    ``m`` under the source padding mask. A linear head gives the logits.
    """

    def __init__(self, vocab_size: int, d_model: int = 64, nhead: int = 4,
                 num_encoder_layers: int = 2, num_decoder_layers: int = 2,
                 dim_feedforward: int = 128, dropout: float = 0.0, max_len: int = 64,
                 norm_first: bool = True, bos_id: int = BOS):
        super().__init__()
        self.bos_id, self.max_len, self.scale = bos_id, max_len, math.sqrt(d_model)
        self.embed = nn.Embedding(vocab_size, d_model)
        nn.init.normal_(self.embed.weight, std=d_model ** -0.5)
        self.register_buffer("pe", sinusoidal_positions(max_len, d_model), persistent=False)
        layer_args = dict(d_model=d_model, nhead=nhead, dim_feedforward=dim_feedforward,
                          dropout=dropout, batch_first=True, norm_first=norm_first)
        self.encoder_layers = nn.ModuleList(TransformerEncoderLayer(**layer_args)
                                            for _ in range(num_encoder_layers))
        self.decoder_layers = nn.ModuleList(TransformerDecoderLayer(**layer_args)
                                            for _ in range(num_decoder_layers))
        self.encoder_norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()
        self.decoder_norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()
        self.head = nn.Linear(d_model, vocab_size)

    def _embed(self, ids: torch.Tensor) -> torch.Tensor:
        T = ids.shape[1]
        if T > self.max_len:
            raise ValueError(f"sequence of {T} tokens is longer than max_len={self.max_len}; "
                             "build the model with a larger max_len")
        return self.embed(ids) * self.scale + self.pe[:T]

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        """The memory ``B x S x d``."""
        _check_source(src, src_mask)
        x, keys = self._embed(src), src_mask[:, None, None, :]  # B x 1 x 1 x S
        for layer in self.encoder_layers:
            x = layer(x, keys)
        return self.encoder_norm(x)

    def decode(self, tgt_in: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor
               ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Decoder output ``B x T x d`` and each layer's cross-attention ``B x heads x T x S``."""
        y = self._embed(tgt_in)
        self_mask = causal_mask(tgt_in.shape[1], device=tgt_in.device)
        cross_mask = src_mask[:, None, None, :]
        cross = []
        for layer in self.decoder_layers:
            y, _, weights = layer(y, memory, self_mask, cross_mask, return_attention=True)
            cross.append(weights)
        return self.decoder_norm(y), cross

    def forward(self, src: torch.Tensor, src_mask: torch.Tensor, tgt_in: torch.Tensor
                ) -> torch.Tensor:
        return self.head(self.decode(tgt_in, self.encode(src, src_mask), src_mask)[0])

    @torch.no_grad()
    def greedy_decode(self, src: torch.Tensor, src_mask: torch.Tensor, max_len: int
                      ) -> tuple[torch.Tensor, torch.Tensor]:
        """``max_len`` argmax tokens ``B x max_len``, and the last decoder layer's
        cross-attention averaged over heads, ``B x max_len x S``."""
        memory = self.encode(src, src_mask)
        ys = torch.full((src.shape[0], 1), self.bos_id, dtype=torch.long, device=src.device)
        for _ in range(max_len):
            h, _ = self.decode(ys, memory, src_mask)
            ys = torch.cat([ys, self.head(h[:, -1]).argmax(-1, keepdim=True)], dim=1)
        _, cross = self.decode(ys[:, :-1], memory, src_mask)  # causal: same as step by step
        return ys[:, 1:], cross[-1].mean(dim=1)


# ---- loss, metrics, training ---------------------------------------------------------------

def sequence_loss(logits: torch.Tensor, tgt_out: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over the real target positions (``PAD`` positions ignored)."""
    return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                       tgt_out.reshape(-1), ignore_index=PAD)


def _scored(predicted: torch.Tensor, tgt_out: torch.Tensor):
    if predicted.shape != tgt_out.shape:
        raise ValueError(f"predicted ids {tuple(predicted.shape)} and targets "
                         f"{tuple(tgt_out.shape)} must have the same shape")
    real = tgt_out != PAD
    return (predicted == tgt_out) | ~real, real


def sequence_accuracy(predicted: torch.Tensor, tgt_out: torch.Tensor) -> torch.Tensor:
    """Per example (``B``): 1.0 where every real target token, ``EOS`` included, is right."""
    right, _ = _scored(predicted, tgt_out)
    return right.all(dim=1).float()


def token_accuracy(predicted: torch.Tensor, tgt_out: torch.Tensor) -> torch.Tensor:
    """Per example (``B``): the fraction of its real target tokens that are right."""
    right, real = _scored(predicted, tgt_out)
    return (right & real).sum(1).float() / real.sum(1).clamp(min=1)


@torch.no_grad()
def evaluate_seq2seq(model: nn.Module, batch: Seq2SeqBatch) -> dict[str, float]:
    """Greedy-decode ``batch`` and return its mean sequence and token accuracy."""
    was_training = model.training
    model.eval()
    dev = next(model.parameters()).device
    batch = batch.to(dev)
    predicted, _ = model.greedy_decode(batch.src, batch.src_mask, batch.tgt_out.shape[1])
    model.train(was_training)
    return {"sequence_accuracy": sequence_accuracy(predicted, batch.tgt_out).mean().item(),
            "token_accuracy": token_accuracy(predicted, batch.tgt_out).mean().item()}


def accuracy_by_length(model: nn.Module, make_batch: Callable[[int], Seq2SeqBatch],
                       lengths: Sequence[int]) -> dict[int, dict[str, float]]:
    """:func:`evaluate_seq2seq` on ``make_batch(L)`` (sources of length ``L``) for each ``L``."""
    return {L: evaluate_seq2seq(model, make_batch(L)) for L in lengths}


def copy_rule(src: torch.Tensor) -> torch.Tensor:
    """The baseline that learns nothing: output each source unchanged, then ``EOS`` (right
    only for palindromes). ``src`` holds sources of one length, no padding; compare the
    result with ``tgt_out`` by :func:`sequence_accuracy` or :func:`token_accuracy`."""
    return torch.cat([src, torch.full((len(src), 1), EOS, dtype=src.dtype,
                                      device=src.device)], dim=1)


def alignment_agreement(weights: torch.Tensor, true: torch.Tensor) -> float:
    """Fraction of output rows whose largest attention weight sits where ``true`` has its 1
    (both ``T x S``; extra rows of ``weights``, e.g. the ``EOS`` step, are left out)."""
    T = true.shape[0]
    if weights.dim() != 2 or weights.shape[0] < T or weights.shape[1] != true.shape[1]:
        raise ValueError(f"weights {tuple(weights.shape)} do not cover the true alignment "
                         f"{tuple(true.shape)}")
    return (weights[:T].argmax(-1) == true.argmax(-1)).float().mean().item()


@dataclass
class Seq2SeqHistory:
    """Loss per step, and how much was trained in how long."""

    losses: list[float] = field(default_factory=list)
    seconds: float = 0.0
    examples: int = 0
    tokens: int = 0  # real target tokens predicted

    @property
    def examples_per_second(self) -> float:
        return self.examples / max(self.seconds, 1e-9)

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / max(self.seconds, 1e-9)


def train_seq2seq(model: nn.Module, draw_batch: Callable[[], Seq2SeqBatch], steps: int,
                  lr: float = 3e-3, *, clip: float | None = 1.0,
                  lr_schedule: Callable[[int], float] | None = None,
                  progress: bool = False, desc: str = "training",
                  after_step: Callable[[int], None] | None = None) -> Seq2SeqHistory:
    """Adam on :func:`sequence_loss` with teacher forcing, one fresh batch per step.

    ``draw_batch()`` returns a :class:`Seq2SeqBatch` (moved to the model's device here).
    ``lr_schedule(step)`` (steps count from 1), if given, replaces the constant ``lr``;
    gradients are clipped to norm ``clip``. ``after_step(step)``, if given, runs after each
    update (to measure the model along the way; its time is not counted).
    """
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    dev = next(model.parameters()).device
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    history = Seq2SeqHistory()
    model.train()
    start = time.perf_counter()
    for step in progress_bar(range(1, steps + 1), progress, desc=desc):
        src, src_mask, tgt_in, tgt_out, _ = (t.to(dev) for t in draw_batch())
        if lr_schedule is not None:
            for group in opt.param_groups:
                group["lr"] = lr_schedule(step)
        loss = sequence_loss(model(src, src_mask, tgt_in), tgt_out)
        opt.zero_grad()
        loss.backward()
        if clip:
            clip_gradients(model.parameters(), clip)
        opt.step()
        history.losses.append(loss.item())
        history.examples += src.shape[0]
        history.tokens += int((tgt_out != PAD).sum())
        if after_step is not None:
            paused = time.perf_counter()
            after_step(step)
            model.train()
            start += time.perf_counter() - paused
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    history.seconds = time.perf_counter() - start
    return history

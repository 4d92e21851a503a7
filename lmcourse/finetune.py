"""Fine-tuning a pre-trained BERT encoder for sentence classification.

Devlin et al. (2019) classify a sentence with one linear layer on the final hidden vector
of its first token, ``[CLS]``, ``h = h_[CLS]`` in ``R^H``:

    z = W dropout(h) + b,          W in R^{K x H}, b in R^K,
    P(y = k | x) = softmax(z)_k = exp(z_k) / sum_j exp(z_j),

and train everything, the encoder included, on the (class-weighted) cross-entropy

    L = - sum_i w_{y_i} log P(y_i | x_i) / sum_i w_{y_i}

(``w_k = 1`` without weights; with 3% positives, ``w_1 = n_0 / n_1`` makes both classes weigh
the same in total). The optimiser is AdamW (Loshchilov & Hutter 2019), whose weight decay
shrinks the weights directly instead of being added to the gradient,

    theta <- theta - eta_t (m_hat / (sqrt(v_hat) + eps) + lambda theta),

with BERT's learning-rate schedule: a linear warm-up over the first ``W`` steps, then a
linear decay to 0 at step ``T``,

    eta_t = eta t / W                  (t < W),
    eta_t = eta (T - t) / (T - W)      (W <= t <= T),

and the gradient clipped to norm ``c`` (``c = 1``): ``g <- g min(1, c / ||g||)``.
A small peak rate (2e-5 to 1e-4) keeps the pre-trained weights close to where they were.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn
from torch.optim.lr_scheduler import LambdaLR

from lmcourse import progress_bar

__all__ = ["FitResult", "SequenceClassifier", "balanced_batches", "class_weights", "encode",
           "fit", "make_optimizer", "parameter_counts", "predict_logits", "predict_proba",
           "predict_texts",
           "shuffled_batches", "train_step", "trim", "warmup_linear", "warmup_linear_factor"]

Batch = tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # input_ids, attention_mask, labels


# ---- the model ----------------------------------------------------------------------------

class SequenceClassifier(nn.Module):
    """A linear classifier on a BERT encoder: ``logits = W dropout(h) + b``.

    ``h`` is the last hidden state of ``[CLS]`` (``pooling="cls"``), the mean of the last
    hidden states over the real tokens (``pooling="mean"``, Sentence-BERT's choice: a
    model pre-trained on masked tokens alone never trained its ``[CLS]``), or the pooler's
    ``tanh(W_p h_[CLS] + b_p)`` (``pooling="pooler"``, the vector next-sentence prediction
    was trained on). ``encoder`` is a :class:`lmcourse.models.bert.BertModel`.
    """

    def __init__(self, encoder: nn.Module, num_labels: int = 2, dropout: float = 0.1,
                 pooling: str = "cls", freeze_embeddings: bool = False):
        super().__init__()
        if pooling not in ("cls", "mean", "pooler"):
            raise ValueError(f"pooling must be 'cls', 'mean' or 'pooler', got {pooling!r}")
        if pooling == "pooler" and getattr(encoder, "pooler", None) is None:
            raise ValueError("this encoder has no pooler; use pooling='cls'")
        self.encoder, self.pooling = encoder, pooling
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(encoder.config.hidden_size, num_labels)
        nn.init.normal_(self.classifier.weight, std=0.02)  # BERT's initialisation
        nn.init.zeros_(self.classifier.bias)
        if freeze_embeddings:
            self.freeze_embeddings()

    def freeze_embeddings(self, frozen: bool = True) -> int:
        """Stop (or restart) training the embedding tables; returns how many parameters that
        is. MiniLM's 30522-word table holds more than half of its weights, and a few hundred
        steps on one task would only move the rows of the words it happens to see."""
        params = list(self.encoder.embeddings.parameters())
        for p in params:
            p.requires_grad_(not frozen)
        return sum(p.numel() for p in params)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        """``B x num_labels`` logits; padding (``attention_mask == 0``) is never attended to."""
        out = self.encoder(input_ids, attention_mask=attention_mask,
                           token_type_ids=token_type_ids)
        if self.pooling == "mean":
            w = (torch.ones_like(input_ids) if attention_mask is None
                 else attention_mask)[..., None].to(out.last_hidden_state.dtype)
            h = (out.last_hidden_state * w).sum(1) / w.sum(1).clamp(min=1)
        else:
            h = out.last_hidden_state[:, 0] if self.pooling == "cls" else out.pooler_output
        return self.classifier(self.dropout(h))


def parameter_counts(model: nn.Module) -> tuple[int, int]:
    """``(total, trainable)`` numbers of parameters."""
    params = list(model.parameters())
    return sum(p.numel() for p in params), sum(p.numel() for p in params if p.requires_grad)


# ---- inputs -------------------------------------------------------------------------------

def encode(tokenizer, texts: Sequence[str], max_len: int = 32, pad_to_max: bool = False
           ) -> tuple[torch.Tensor, torch.Tensor]:
    """``(input_ids, attention_mask)``, ``N x T`` LongTensors: WordPiece ids with ``[CLS]`` and
    ``[SEP]``, cut to ``max_len`` tokens, padded on the right to the longest text (or to
    ``max_len``); the mask is 1 at real tokens, 0 at padding."""
    enc = tokenizer(list(texts), padding="max_length" if pad_to_max else "longest",
                    truncation=True, max_length=max_len, return_tensors="pt")
    return enc["input_ids"], enc["attention_mask"]


def trim(input_ids: torch.Tensor, attention_mask: torch.Tensor
         ) -> tuple[torch.Tensor, torch.Tensor]:
    """Drop the trailing columns that are padding in every row. With right padding and a
    masked encoder the outputs do not change, and a batch of short sentences costs less."""
    T = max(int(attention_mask.sum(1).max()), 1)
    return input_ids[:, :T], attention_mask[:, :T]


# ---- optimiser and schedule ---------------------------------------------------------------

def make_optimizer(model: nn.Module, lr: float = 5e-5, weight_decay: float = 0.01
                   ) -> torch.optim.AdamW:
    """AdamW over the trainable parameters; like BERT, no weight decay on biases and
    LayerNorm gains (the 1-d parameters)."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr)


def warmup_linear_factor(step: int, warmup_steps: int, total_steps: int) -> float:
    """``eta_t / eta``: ``t / W`` during the warm-up, then ``(T - t) / (T - W)``, 0 from ``T``."""
    if step < warmup_steps:
        return step / warmup_steps
    return max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps))


def warmup_linear(optimizer: torch.optim.Optimizer, warmup_steps: int, total_steps: int
                  ) -> LambdaLR:
    """BERT's schedule: linear warm-up from 0 to the optimiser's ``lr`` over ``warmup_steps``,
    then linear decay to 0 at ``total_steps``. Call ``.step()`` after each optimiser step."""
    return LambdaLR(optimizer, partial(warmup_linear_factor, warmup_steps=warmup_steps,
                                       total_steps=total_steps))


# ---- training -----------------------------------------------------------------------------

def train_step(model: nn.Module, batch: Batch, optimizer: torch.optim.Optimizer,
               scheduler: torch.optim.lr_scheduler.LRScheduler | None = None, clip: float = 1.0,
               class_weight: torch.Tensor | None = None) -> float:
    """One update on ``batch = (input_ids, attention_mask, labels)`` (labels: class indices,
    a LongTensor); returns the minibatch loss. Dropout on, old gradients cleared, weighted
    cross-entropy, gradient clipped to norm ``clip``, then the optimiser and the schedule
    each take one step."""
    input_ids, attention_mask, labels = batch
    model.train()
    optimizer.zero_grad()
    loss = F.cross_entropy(model(input_ids, attention_mask), labels, weight=class_weight)
    loss.backward()
    if clip:
        nn.utils.clip_grad_norm_([p for p in model.parameters() if p.grad is not None], clip)
    optimizer.step()
    if scheduler is not None:
        scheduler.step()
    return loss.item()


def class_weights(labels: torch.Tensor, num_labels: int = 2) -> torch.Tensor:
    """``w_k = n / (K n_k)``: every class weighs the same in total (``w_1 / w_0 = n_0 / n_1``)."""
    counts = torch.bincount(labels, minlength=num_labels).float()
    if (counts == 0).any():
        raise ValueError(f"class counts {counts.tolist()}: every class needs an example")
    return len(labels) / (num_labels * counts)


def _cycle(indices: torch.Tensor, generator: torch.Generator | None) -> Iterator[int]:
    """The indices in a fresh random order, pass after pass."""
    while True:
        yield from indices[torch.randperm(len(indices), generator=generator)].tolist()


def balanced_batches(labels: torch.Tensor, batch_size: int, steps: int,
                     generator: torch.Generator | None = None) -> Iterator[torch.Tensor]:
    """``steps`` index batches with the same number of examples of each class (the rare
    class is seen again, in a new order, each time all of it has been used)."""
    classes = torch.unique(labels)
    streams = [_cycle(torch.nonzero(labels == c).flatten(), generator) for c in classes]
    sizes = [batch_size // len(classes) + (i < batch_size % len(classes))
             for i in range(len(classes))]
    for _ in range(steps):
        yield torch.tensor([next(s) for s, n in zip(streams, sizes, strict=True)
                            for _ in range(n)])


def shuffled_batches(n: int, batch_size: int, steps: int,
                     generator: torch.Generator | None = None) -> Iterator[torch.Tensor]:
    """``steps`` index batches from passes over ``range(n)`` in random order."""
    stream = _cycle(torch.arange(n), generator)
    for _ in range(steps):
        yield torch.tensor([next(stream) for _ in range(batch_size)])


class FitResult(NamedTuple):
    losses: list[float]  # one per step
    seconds: float  # wall time of the training loop


def fit(model: nn.Module, data: Batch, steps: int, batch_size: int = 16, lr: float = 5e-5,
        warmup: float = 0.1, weight_decay: float = 0.01, clip: float = 1.0,
        sampling: str = "balanced", generator: torch.Generator | None = None,
        progress: bool = True, optimizer: torch.optim.Optimizer | None = None,
        scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
        step_fn: Callable[..., float] = train_step) -> FitResult:
    """Fine-tune ``model`` for ``steps`` minibatches of ``data = (input_ids, attention_mask,
    labels)`` (on the CPU; each batch is trimmed and moved to the model's device).

    ``sampling="balanced"``: each batch holds as many examples of each class, plain
    cross-entropy; ``"weighted"``: uniform batches, cross-entropy with
    :func:`class_weights`. The optimiser (AdamW, :func:`make_optimizer`) and schedule
    (:func:`warmup_linear`, ``warmup`` = share of the steps) are built unless given;
    ``step_fn`` takes one step (:func:`train_step`'s signature).
    """
    input_ids, attention_mask, labels = data
    device = next(model.parameters()).device
    if optimizer is None:
        optimizer = make_optimizer(model, lr, weight_decay)
    if scheduler is None:
        scheduler = warmup_linear(optimizer, round(warmup * steps), steps)
    if sampling == "balanced":
        weight, batches = None, balanced_batches(labels, batch_size, steps, generator)
    elif sampling == "weighted":
        weight = class_weights(labels, int(labels.max()) + 1).to(device)
        batches = shuffled_batches(len(labels), batch_size, steps, generator)
    else:
        raise ValueError(f"sampling must be 'balanced' or 'weighted', got {sampling!r}")
    losses, start = [], time.perf_counter()
    for idx in progress_bar(batches, progress, total=steps, desc="fine-tuning"):
        ids, mask = trim(input_ids[idx], attention_mask[idx])
        batch = (ids.to(device), mask.to(device), labels[idx].to(device))
        losses.append(step_fn(model, batch, optimizer, scheduler, clip=clip,
                              class_weight=weight))
    return FitResult(losses, time.perf_counter() - start)


# ---- prediction ---------------------------------------------------------------------------

@torch.no_grad()
def predict_logits(model: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                   batch_size: int = 64) -> torch.Tensor:
    """The ``N x K`` logits ``z`` of each row, float32 on the CPU: evaluation mode (no
    dropout), no graph kept, batches of similar lengths, each trimmed of its padding; the
    model's training mode is restored afterwards."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    order = torch.argsort(attention_mask.sum(1), descending=True, stable=True)
    out: torch.Tensor | None = None
    for chunk in order.split(batch_size):
        ids, mask = trim(input_ids[chunk], attention_mask[chunk])
        logits = model(ids.to(device), mask.to(device)).float().cpu()
        if out is None:
            out = torch.empty(len(input_ids), logits.shape[-1])
        out[chunk] = logits
    model.train(was_training)
    return torch.empty(0, 0) if out is None else out


def predict_proba(model: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                  batch_size: int = 64) -> torch.Tensor:
    """``P(y = 1 | x) = softmax(z)_1`` for each row (:func:`predict_logits`)."""
    return torch.softmax(predict_logits(model, input_ids, attention_mask, batch_size),
                         dim=-1)[:, 1]


def predict_texts(model: nn.Module, tokenizer, texts: Sequence[str], max_len: int = 32,
                  batch_size: int = 64, predict_fn: Callable[..., torch.Tensor] = predict_proba
                  ) -> torch.Tensor:
    """``P(y = 1)`` for each text with ``predict_fn(model, input_ids, attention_mask,
    batch_size)``. Each distinct text is scored once (a deterministic model in evaluation
    mode gives equal texts equal scores), in batches of texts of similar length."""
    device = next(model.parameters()).device
    unique = sorted(set(texts), key=lambda t: (len(t), t))
    scores: dict[str, float] = {}
    for start in range(0, len(unique), batch_size):
        chunk = unique[start:start + batch_size]
        ids, mask = encode(tokenizer, chunk, max_len)
        probs = predict_fn(model, ids.to(device), mask.to(device), batch_size)
        scores.update(zip(chunk, torch.as_tensor(probs).detach().cpu().tolist(), strict=True))
    return torch.tensor([scores[t] for t in texts])

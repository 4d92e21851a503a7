"""BERT's pre-training (chapter 09): the two heads, the sentence-pair inputs, the loss.

**Inputs.** A pair of sentences becomes one sequence
``[CLS] A [SEP] B [SEP]`` with segment ids ``0 ... 0 1 ... 1`` (the ``[CLS]`` and the
first ``[SEP]`` belong to A). For next-sentence prediction (NSP), B is the sentence that
really follows A half of the time (``IsNext``, label 1) and a random sentence from another
document otherwise (``NotNext``, label 0).

**Heads.** The masked-LM head maps each final hidden vector ``h_i`` back to the vocabulary
through the (tied) input embedding matrix ``E``:

    logits_i = LayerNorm(GELU(W h_i + b)) E^T + b_out

and the NSP head is a linear layer on the pooled ``[CLS]`` vector, ``softmax(W_nsp C)``.

**Loss.** The sum of the mean masked-LM cross-entropy over the selected positions
(labels ``-100`` elsewhere) and the mean NSP cross-entropy over the batch.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from lmcourse import progress_bar
from lmcourse.masking import mask_tokens
from lmcourse.models.bert import BertConfig, BertModel

__all__ = ["BertForPreTraining", "MaskedLMHead", "PretrainingHistory",
           "load_tiny_bert", "tiny_bert",
           "collate_pairs", "evaluate_pretraining", "mlm_predictor",
           "nsp_pairs", "pair_batches", "pair_inputs", "pretrain", "pretraining_loss",
           "sop_pairs", "warmup_then_decay"]


class MaskedLMHead(nn.Module):
    """``LayerNorm(GELU(W h + b)) E^T + b_out`` with ``E`` the model's word embeddings
    (``V x H``; with ALBERT's factorised embeddings ``V x E``, and ``W`` maps ``H`` to
    ``E``)."""

    def __init__(self, config: BertConfig, word_embeddings: nn.Embedding):
        super().__init__()
        dim = word_embeddings.embedding_dim
        self.dense = nn.Linear(config.hidden_size, dim)
        self.LayerNorm = nn.LayerNorm(dim, eps=config.layer_norm_eps)
        self.word_embeddings = word_embeddings  # tied: the decoder *is* the embedding matrix
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        h = self.LayerNorm(F.gelu(self.dense(hidden)))
        return h @ self.word_embeddings.weight.T + self.bias


class BertForPreTraining(nn.Module):
    """A :class:`BertModel` with the masked-LM head on every position and the NSP head on
    the pooled ``[CLS]`` vector; returns ``(mlm_logits B x T x V, nsp_logits B x 2)``."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.bert = BertModel(config)
        self.mlm = MaskedLMHead(config, self.bert.embeddings.word_embeddings)
        self.nsp = nn.Linear(config.hidden_size, 2)
        self.mlm.apply(BertModel._init_weights)
        self.nsp.apply(BertModel._init_weights)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None,
                attention_mask: torch.Tensor | None = None, predict: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """With ``predict`` (a ``B x T`` boolean mask, e.g. ``labels != -100``) the MLM
        logits are computed only there (``N x V``, in the order of ``labels[predict]``):
        the vocabulary projection is the costliest layer of a small model."""
        out = self.bert(input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
        hidden = out.last_hidden_state if predict is None else out.last_hidden_state[predict]
        return self.mlm(hidden), self.nsp(out.pooler_output)


def mlm_predictor(model: nn.Module, device: torch.device | str | None = None
                  ) -> Callable[[torch.Tensor], torch.Tensor]:
    """``ids (B x T) -> MLM logits (B x T x V)`` for one-segment, unpadded inputs of any of
    the course's pre-training models (``BertForPreTraining`` and the bench's variants),
    without gradients: what ``lmcourse.viz.masking_widget(predict=...)`` asks for."""
    device = torch.device(device) if device is not None else next(model.parameters()).device

    @torch.no_grad()
    def predict(ids: torch.Tensor) -> torch.Tensor:
        ids = ids.to(device)
        logits = model(ids, torch.zeros_like(ids), torch.ones_like(ids))
        return logits[0] if isinstance(logits, tuple) else logits

    return predict


def pretraining_loss(mlm_logits: torch.Tensor, mlm_labels: torch.Tensor,
                     nsp_logits: torch.Tensor | None = None,
                     is_next: torch.Tensor | None = None
                     ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(total, mlm, nsp)``: mean cross-entropy over the masked positions (label ``-100``
    is ignored; or logits and labels already gathered at those positions) plus mean NSP
    cross-entropy; without NSP inputs the NSP term is 0."""
    mlm = F.cross_entropy(mlm_logits.reshape(-1, mlm_logits.shape[-1]), mlm_labels.reshape(-1),
                          ignore_index=-100)
    nsp = (F.cross_entropy(nsp_logits, is_next) if nsp_logits is not None
           else mlm.new_zeros(()))
    return mlm + nsp, mlm, nsp


# ---- sentence pairs ---------------------------------------------------------------------------

def nsp_pairs(documents: Sequence[Sequence[Sequence[int]]], seed: int = 0
              ) -> list[tuple[list[int], list[int], int]]:
    """``(A, B, is_next)`` for every two consecutive sentences of a document: B is kept
    (``is_next=1``) with probability 1/2, otherwise replaced by a random sentence of another
    document (``is_next=0``). ``documents`` are lists of sentences of token ids."""
    rng = random.Random(seed)
    pool = [(d, s) for d, doc in enumerate(documents) for s in doc]
    if len(documents) < 2:
        raise ValueError("NSP needs at least two documents to draw NotNext sentences from")
    pairs = []
    for d, doc in enumerate(documents):
        for a, b in zip(doc[:-1], doc[1:], strict=True):
            if rng.random() < 0.5:
                pairs.append((list(a), list(b), 1))
                continue
            while True:
                other, sentence = pool[rng.randrange(len(pool))]
                if other != d:
                    break
            pairs.append((list(a), list(sentence), 0))
    return pairs


def sop_pairs(documents: Sequence[Sequence[Sequence[int]]], seed: int = 0
              ) -> list[tuple[list[int], list[int], int]]:
    """ALBERT's sentence-order prediction: ``(A, B, 1)`` for two consecutive sentences of a
    document in their order, or, with probability 1/2, ``(B, A, 0)``, the same two sentences
    swapped. Both sentences always come from the same document, so the topic gives nothing
    away; only their order does."""
    rng = random.Random(seed)
    pairs = []
    for doc in documents:
        for a, b in zip(doc[:-1], doc[1:], strict=True):
            pairs.append((list(a), list(b), 1) if rng.random() < 0.5 else (list(b), list(a), 0))
    if not pairs:
        raise ValueError("SOP needs documents of at least two sentences")
    return pairs


def pair_inputs(a: Sequence[int], b: Sequence[int], cls_id: int, sep_id: int,
                max_len: int) -> tuple[list[int], list[int]]:
    """``[CLS] A [SEP] B [SEP]`` and its segment ids, the longer sentence trimmed first
    until the whole fits ``max_len``."""
    a, b = list(a), list(b)
    while len(a) + len(b) + 3 > max_len:
        (a if len(a) > len(b) else b).pop()
    ids = [cls_id, *a, sep_id, *b, sep_id]
    return ids, [0] * (len(a) + 2) + [1] * (len(b) + 1)


def collate_pairs(pairs: Sequence[tuple[Sequence[int], Sequence[int], int]], cls_id: int,
                  sep_id: int, pad_id: int, max_len: int) -> dict[str, torch.Tensor]:
    """A padded batch: ``input_ids``, ``token_type_ids``, ``attention_mask``, ``is_next``."""
    rows = [pair_inputs(a, b, cls_id, sep_id, max_len) for a, b, _ in pairs]
    T = max(len(ids) for ids, _ in rows)
    input_ids = torch.full((len(rows), T), pad_id, dtype=torch.long)
    segments = torch.zeros((len(rows), T), dtype=torch.long)
    for i, (ids, seg) in enumerate(rows):
        input_ids[i, :len(ids)] = torch.tensor(ids)
        segments[i, :len(seg)] = torch.tensor(seg)
    return {"input_ids": input_ids, "token_type_ids": segments,
            "attention_mask": (input_ids != pad_id).long(),
            "is_next": torch.tensor([label for _, _, label in pairs])}


# ---- the training loop ---------------------------------------------------------------------

@dataclass
class PretrainingHistory:
    """Per-step MLM, NSP (and auxiliary) losses, tokens seen and the training wall time."""

    mlm: list[float] = field(default_factory=list)
    nsp: list[float] = field(default_factory=list)
    auxiliary: list[float] = field(default_factory=list)
    tokens: int = 0
    seconds: float = 0.0

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / max(self.seconds, 1e-9)


def warmup_then_decay(optimizer: torch.optim.Optimizer, steps: int, warmup: float = 0.1
                      ) -> torch.optim.lr_scheduler.LambdaLR:
    """BERT's schedule: the learning rate rises linearly over the first ``warmup`` of the
    steps, then falls linearly to 0 at ``steps``."""
    warm = max(1, int(warmup * steps))
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / max(1, steps - warm))))


def pair_batches(pairs: Sequence[tuple[Sequence[int], Sequence[int], int]], *, steps: int,
                 batch_size: int, cls_id: int, sep_id: int, pad_id: int, max_len: int = 64,
                 seed: int = 0) -> Iterator[tuple[list[int], dict[str, torch.Tensor]]]:
    """``steps`` batches ``(indices, collated batch)`` drawn without replacement from
    shuffled passes over ``pairs`` (a new pass starts when one runs out)."""
    if batch_size > len(pairs):
        raise ValueError(f"batch_size {batch_size} is larger than the {len(pairs)} pairs")
    rng = random.Random(seed)
    order: list[int] = []
    for _ in range(steps):
        if len(order) < batch_size:  # a new shuffled pass over the pairs
            order = rng.sample(range(len(pairs)), len(pairs)) + order
        chosen = [order.pop() for _ in range(batch_size)]
        yield chosen, collate_pairs([pairs[i] for i in chosen], cls_id, sep_id, pad_id, max_len)


def pretrain(model: BertForPreTraining, pairs: Sequence[tuple[Sequence[int], Sequence[int], int]],
             *, steps: int, batch_size: int, special_ids: Sequence[int], cls_id: int,
             sep_id: int, pad_id: int, mask_id: int, max_len: int = 64, lr: float = 1e-3,
             warmup: float = 0.1, weight_decay: float = 0.01, nsp: bool = True,
             masker: Callable[..., tuple[torch.Tensor, torch.Tensor]] | None = None,
             seed: int = 0, progress: bool = True, stop_after: int | None = None,
             callback: Callable[[int, PretrainingHistory], bool | None] | None = None
             ) -> PretrainingHistory:
    """BERT's recipe at toy scale: AdamW, linear warm-up over ``warmup`` of the steps then
    linear decay to 0, gradient clipping at 1, and a *fresh* mask for every batch (dynamic
    masking; pass ``masker(batch_indices, input_ids) -> (masked, labels)`` to change that).
    ``nsp=False`` trains on the MLM loss alone (RoBERTa). A model with an
    ``auxiliary_loss(labels)`` method (SpanBERT's boundary objective) adds that loss to the
    sum; it is recorded in ``history.auxiliary``. ``stop_after`` ends the run early on the
    schedule of ``steps`` (the first steps of a longer run, exactly); ``callback(step,
    history)`` runs after every step (held-out curves; it may call ``model.eval()``, the
    loop puts the model back in training mode) and ends the run by returning ``True``
    (early stopping on a development loss)."""
    device = next(model.parameters()).device
    vocab_size = model.mlm.bias.numel()
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    schedule = warmup_then_decay(optimizer, steps, warmup)
    history, start, paused = PretrainingHistory(), time.perf_counter(), 0.0
    model.train()
    stop = False
    batches = pair_batches(pairs, steps=steps, batch_size=batch_size, cls_id=cls_id,
                           sep_id=sep_id, pad_id=pad_id, max_len=max_len, seed=seed)
    for chosen, batch in progress_bar(batches, progress, total=steps, desc="pre-training"):
        if masker is None:
            ids, labels = mask_tokens(batch["input_ids"], mask_id, vocab_size, special_ids,
                                      generator=generator)
        else:
            ids, labels = masker(chosen, batch["input_ids"])
        batch = {k: v.to(device) for k, v in batch.items()}
        ids, labels = ids.to(device), labels.to(device)
        predict = labels != -100
        mlm_logits, nsp_logits = model(ids, batch["token_type_ids"], batch["attention_mask"],
                                       predict=predict)
        loss, mlm_loss, nsp_loss = pretraining_loss(
            mlm_logits, labels[predict], nsp_logits if nsp else None,
            batch["is_next"] if nsp else None)
        auxiliary = getattr(model, "auxiliary_loss", None)
        if auxiliary is not None:
            extra = auxiliary(labels)
            loss = loss + extra
            history.auxiliary.append(extra.item())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        history.mlm.append(mlm_loss.item())
        history.nsp.append(nsp_loss.item())
        history.tokens += int(batch["attention_mask"].sum())
        history.seconds = time.perf_counter() - start - paused
        if callback is not None:  # its time is not training time
            stop = callback(len(history.mlm), history) is True
            model.train()
            paused = time.perf_counter() - start - history.seconds
        if stop or (stop_after is not None and len(history.mlm) >= stop_after):
            break
    history.seconds = time.perf_counter() - start - paused
    model.eval()
    return history


@torch.no_grad()
def evaluate_pretraining(model: BertForPreTraining, batch: dict[str, torch.Tensor],
                         masked_ids: torch.Tensor, labels: torch.Tensor,
                         chunk: int = 256) -> dict[str, float]:
    """Masked-token accuracy, MLM loss (mean cross-entropy at the masked positions) and
    NSP accuracy on a fixed, already masked evaluation batch."""
    model.eval()
    device = next(model.parameters()).device
    hits = total = 0
    loss_sum = 0.0
    nsp_hits = 0
    for s in range(0, len(masked_ids), chunk):
        part = slice(s, s + chunk)
        lab = labels[part].to(device)
        predict = lab != -100
        mlm_logits, nsp_logits = model(masked_ids[part].to(device),
                                       batch["token_type_ids"][part].to(device),
                                       batch["attention_mask"][part].to(device), predict=predict)
        target = lab[predict]
        hits += int((mlm_logits.argmax(-1) == target).sum())
        loss_sum += float(F.cross_entropy(mlm_logits, target, reduction="sum"))
        total += len(target)
        nsp_hits += int((nsp_logits.argmax(-1).cpu() == batch["is_next"][part]).sum())
    return {"masked accuracy": hits / max(total, 1), "MLM loss": loss_sum / max(total, 1),
            "NSP accuracy": nsp_hits / len(masked_ids)}


# ---- the tiny BERT ---------------------------------------------------------------------------

def tiny_bert(vocab_size: int, hidden_size: int = 128, num_hidden_layers: int = 2,
              num_attention_heads: int = 4, intermediate_size: int = 512, max_len: int = 64
              ) -> BertForPreTraining:
    """A BERT small enough to pre-train on a CPU: two layers of width 128, four heads, pairs
    of up to 64 pieces, no dropout; randomly initialised, with the MLM and NSP heads."""
    return BertForPreTraining(BertConfig(
        vocab_size=vocab_size, hidden_size=hidden_size, num_hidden_layers=num_hidden_layers,
        num_attention_heads=num_attention_heads, intermediate_size=intermediate_size,
        max_position_embeddings=max_len, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0))


def load_tiny_bert(state: dict[str, torch.Tensor], num_attention_heads: int = 4
                   ) -> BertForPreTraining:
    """A :func:`tiny_bert` holding stored weights, in evaluation mode (float32, CPU). The
    sizes are read off the weights' shapes; the number of heads cannot be, so it is an
    argument."""
    rows, width = state["bert.embeddings.word_embeddings.weight"].shape
    layers = len({k.split(".")[3] for k in state if k.startswith("bert.encoder.layer.")})
    model = tiny_bert(rows, width, layers, num_attention_heads,
                      state["bert.encoder.layer.0.intermediate.dense.weight"].shape[0],
                      max_len=state["bert.embeddings.position_embeddings.weight"].shape[0])
    model.load_state_dict({k: v.float() for k, v in state.items()})
    return model.eval()

"""Knowledge distillation: soft targets, DistilBERT's triple loss, TinyBERT's layer-wise losses.

Hinton et al. (2015). A teacher's logits ``t`` and a student's logits ``s`` over the same
``C`` classes, softened by a temperature ``T``:

    q_i = softmax(t / T)_i,    p_i = softmax(s / T)_i

The distillation loss is the cross-entropy of the student's soft distribution against the
teacher's, averaged over the batch:

    L_d = -(1/B) sum_b sum_i q_i log p_i

It differs from ``KL(q || p)`` by the teacher's entropy, a constant for the student, so both
have the same gradient ``dL_d/ds_i = (p_i - q_i) / (T B)``. For large ``T`` that gradient
shrinks like ``1/T^2`` (``p_i - q_i ~ (s_i - t_i) / (C T)``), hence Hinton's ``T^2`` in

    L = alpha T^2 L_d + beta L_s,    L_s = cross-entropy(s, labels) at T = 1

DistilBERT (Sanh et al. 2019) adds a cosine loss between hidden states and keeps half the
teacher's layers; TinyBERT (Jiao et al. 2020) matches embeddings, hidden states and attention
matrices layer by layer (:func:`layer_map`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from lmcourse import progress_bar
from lmcourse.finetune import SequenceClassifier
from lmcourse.models.bert import BertModel

__all__ = [
    "DistilBertLoss", "attention_loss", "combined_loss", "cosine_embedding_loss",
    "distilbert_loss", "distillation_loss", "embedding_loss", "hidden_loss",
    "half_depth_student", "init_student_from_teacher", "layer_map", "prediction_loss",
    "soft_target_grad_norms",
    "softmax_t", "train_student",
]


def softmax_t(logits: torch.Tensor, T: float = 1.0) -> torch.Tensor:
    """Temperature softmax ``p_i = exp(z_i / T) / sum_j exp(z_j / T)`` over the last axis.

    ``T = 1`` is the ordinary softmax; ``T -> inf`` tends to uniform, ``T -> 0`` to one-hot.
    """
    if T <= 0:
        raise ValueError(f"the temperature must be positive, got {T}")
    return torch.softmax(logits / T, dim=-1)


def distillation_loss(student_logits: torch.Tensor, teacher_logits: torch.Tensor,
                      temperature: float = 1.0) -> torch.Tensor:
    """``L_d = mean_b [ -sum_i softmax(t/T)_i log softmax(s/T)_i ]``.

    Logits are ``... x C``; every leading axis counts as batch. ``log softmax`` is computed
    as ``log_softmax`` (never the log of a softmax, which underflows to ``-inf``). The
    teacher's distribution is a target: no gradient flows into ``teacher_logits``.
    """
    if student_logits.shape != teacher_logits.shape:
        raise ValueError(f"student logits {tuple(student_logits.shape)} and teacher logits "
                         f"{tuple(teacher_logits.shape)} must have the same shape")
    q = softmax_t(teacher_logits.detach(), temperature)
    log_p = F.log_softmax(student_logits / temperature, dim=-1)
    return -(q * log_p).sum(-1).mean()


def combined_loss(student_logits: torch.Tensor, teacher_logits: torch.Tensor,
                  labels: torch.Tensor, temperature: float = 2.0, alpha: float = 0.5,
                  beta: float = 0.5) -> torch.Tensor:
    """Hinton et al. (2015): ``L = alpha T^2 L_d + beta L_s``.

    ``L_s`` is the cross-entropy of the student at ``T = 1`` against the hard ``labels``.
    The ``T^2`` keeps the soft targets' gradient of comparable size whatever ``T`` is (the
    gradient of ``L_d`` falls like ``1/T^2``), so ``alpha`` and ``beta`` need not be retuned
    when ``T`` changes.
    """
    soft = distillation_loss(student_logits, teacher_logits, temperature)
    hard = F.cross_entropy(student_logits.reshape(-1, student_logits.shape[-1]),
                           labels.reshape(-1))
    return alpha * temperature**2 * soft + beta * hard


def soft_target_grad_norms(student_logits: torch.Tensor, teacher_logits: torch.Tensor,
                           temperatures: Sequence[float], scale_t2: bool = True) -> list[float]:
    """``|| d (T^2 L_d) / d s ||`` (or of ``L_d`` when ``scale_t2`` is false) for each ``T``.

    With the ``T^2`` the norms level off to ``||(s - t) - mean(s - t)|| / (C B)`` as ``T``
    grows; without it they fall like ``1/T^2``.
    """
    norms = []
    for T in temperatures:
        s = student_logits.detach().clone().requires_grad_(True)
        loss = distillation_loss(s, teacher_logits, T) * (T**2 if scale_t2 else 1.0)
        (grad,) = torch.autograd.grad(loss, s)
        norms.append(grad.norm().item())
    return norms


def cosine_embedding_loss(student_hidden: torch.Tensor, teacher_hidden: torch.Tensor,
                          mask: torch.Tensor | None = None) -> torch.Tensor:
    """``L_cos = mean over real tokens of 1 - cos(h^S, h^T)``: align the hidden vectors'
    directions (DistilBERT). Hidden states are ``B x T x H``; ``mask`` is ``B x T`` with 1
    at real tokens (padding is left out), all tokens when ``None``."""
    cos = F.cosine_similarity(student_hidden, teacher_hidden.detach(), dim=-1)  # B x T
    if mask is None:
        return (1 - cos).mean()
    mask = mask.bool()
    return (1 - cos[mask]).mean()


class DistilBertLoss(NamedTuple):
    """The total and its three (unweighted) parts."""

    total: torch.Tensor
    distill: torch.Tensor
    mlm: torch.Tensor
    cos: torch.Tensor


def distilbert_loss(student_logits: torch.Tensor, teacher_logits: torch.Tensor,
                    labels: torch.Tensor, student_hidden: torch.Tensor,
                    teacher_hidden: torch.Tensor, mask: torch.Tensor | None = None,
                    temperature: float = 2.0, alpha_distill: float = 5.0,
                    alpha_mlm: float = 2.0, alpha_cos: float = 1.0) -> DistilBertLoss:
    """DistilBERT's triple loss ``L = a_d T^2 L_d + a_mlm L_mlm + a_cos L_cos``.

    * ``L_d``: :func:`distillation_loss` over the vocabulary at every real token
      (``mask``); the released code uses ``KL(q || p)``, which has the same gradient, and
      multiplies it by ``T^2`` as Hinton does.
    * ``L_mlm``: cross-entropy of the student's logits at the masked positions (``labels``
      is ``-100`` elsewhere, the Hugging Face convention).
    * ``L_cos``: :func:`cosine_embedding_loss` between the last hidden states.

    The defaults ``a_d = 5.0, a_mlm = 2.0, a_cos = 1.0, T = 2.0`` are the choice of the
    released training command (Hugging Face's ``examples/research_projects/distillation``),
    not numbers the paper states. Logits are ``B x T x V``, hidden states ``B x T x H``.
    """
    keep = (torch.ones(student_logits.shape[:-1], dtype=torch.bool,
                       device=student_logits.device) if mask is None else mask.bool())
    distill = distillation_loss(student_logits[keep], teacher_logits[keep], temperature)
    mlm = F.cross_entropy(student_logits.reshape(-1, student_logits.shape[-1]),
                          labels.reshape(-1), ignore_index=-100)
    cos = cosine_embedding_loss(student_hidden, teacher_hidden, mask)
    total = alpha_distill * temperature**2 * distill + alpha_mlm * mlm + alpha_cos * cos
    return DistilBertLoss(total, distill, mlm, cos)


def init_student_from_teacher(teacher: BertModel, num_layers: int | None = None,
                              layers: Sequence[int] | None = None) -> BertModel:
    """A DistilBERT-style student: ``num_layers`` (default half) of the teacher's layers, no
    token-type embeddings, no pooler; word and position embeddings and their LayerNorm copied.

    Student layer ``j`` is a copy of teacher layer ``layers[j]``, by default every other
    layer, ``0, 2, 4, ...`` (the paper: "taking one layer out of two"). The released
    extraction script picks ``[0, 2, 4, 7, 9, 11]`` for BERT-base instead, keeping the last
    layer; pass ``layers`` for that. Without token types a BERT input loses ``E_seg[0]``,
    which every teacher input with ``token_type_ids = 0`` carried; the student learns it back
    (DistilBERT does not fold it into the positions either).
    """
    config = teacher.config
    if config.share_layers:
        raise ValueError("the teacher shares one layer across depth (ALBERT): nothing to pick")
    L = config.num_hidden_layers
    if layers is None:
        n = num_layers if num_layers is not None else L // 2
        if not 0 < n <= (L + 1) // 2:
            raise ValueError(f"every other layer of {L} gives 1 to {(L + 1) // 2} layers, "
                             f"not {n}; pass layers=[...] to choose them")
        layers = list(range(0, 2 * n, 2))
    layers = list(layers)
    if num_layers is not None and num_layers != len(layers):
        raise ValueError(f"num_layers={num_layers} but {len(layers)} layers given")
    if not layers or any(not 0 <= i < L for i in layers):
        raise ValueError(f"teacher layer indices must lie in 0..{L - 1}, got {layers}")
    student_config = replace(config, num_hidden_layers=len(layers), type_vocab_size=0,
                                  pooler=False)
    student = BertModel(student_config).to(next(teacher.parameters()).dtype)
    emb, t_emb = student.embeddings, teacher.embeddings
    for name in ("word_embeddings", "position_embeddings", "LayerNorm"):
        getattr(emb, name).load_state_dict(getattr(t_emb, name).state_dict())
    if teacher.embedding_projection is not None:
        student.embedding_projection.load_state_dict(teacher.embedding_projection.state_dict())
    for j, i in enumerate(layers):
        student.encoder.layer[j].load_state_dict(teacher.encoder.layer[i].state_dict())
    return student.train(teacher.training)


# --- TinyBERT (Jiao et al. 2020) -------------------------------------------------------------

def _project(x: torch.Tensor, projection: nn.Module | torch.Tensor | None) -> torch.Tensor:
    if projection is None:
        return x
    if isinstance(projection, torch.Tensor):
        return x @ projection
    return projection(x)


def embedding_loss(student_emb: torch.Tensor, teacher_emb: torch.Tensor,
                   projection: nn.Module | torch.Tensor | None = None) -> torch.Tensor:
    """``L_embd = MSE(E^S W_e, E^T)``: ``W_e`` (``d' x d``, learned) lifts the student's
    embeddings to the teacher's width; ``None`` when the widths are equal."""
    return F.mse_loss(_project(student_emb, projection), teacher_emb.detach())


def hidden_loss(student_h: torch.Tensor, teacher_h: torch.Tensor,
                projection: nn.Module | torch.Tensor | None = None) -> torch.Tensor:
    """``L_hidn = MSE(H^S W_h, H^T)`` for one student layer and its teacher layer ``g(m)``;
    ``W_h`` (``d' x d``, learned with the student, e.g. ``nn.Linear(d', d)``) maps the
    student width ``d'`` to the teacher width ``d``."""
    return F.mse_loss(_project(student_h, projection), teacher_h.detach())


def attention_loss(student_att: torch.Tensor, teacher_att: torch.Tensor) -> torch.Tensor:
    """``L_attn = (1/h) sum_heads MSE(A_i^S, A_i^T)`` between ``B x h x T x T`` attention
    matrices (same number of heads ``h``). The mean over all entries equals the mean over
    heads of each head's MSE. TinyBERT's code compares the scores before the softmax (with
    padded entries set to 0); here the matrices are the attention weights themselves."""
    if student_att.shape != teacher_att.shape:
        raise ValueError(f"attention shapes differ: {tuple(student_att.shape)} vs "
                         f"{tuple(teacher_att.shape)}; TinyBERT's student keeps the heads")
    return F.mse_loss(student_att, teacher_att.detach())


def prediction_loss(student_logits: torch.Tensor, teacher_logits: torch.Tensor,
                    temperature: float = 1.0) -> torch.Tensor:
    """``L_pred = -softmax(z^T / t) . log_softmax(z^S / t)``, batch mean: the soft
    cross-entropy of :func:`distillation_loss` (TinyBERT uses ``t = 1``)."""
    return distillation_loss(student_logits, teacher_logits, temperature)


def layer_map(student_layers: int, teacher_layers: int) -> list[int]:
    """TinyBERT's uniform mapping ``g(m) = m N / M`` for ``m = 0..M``: student layer ``m``
    learns from teacher layer ``g(m)``; ``m = 0`` is the embedding layer (``g(0) = 0``), so
    the list indexes ``hidden_states`` (embeddings first) of both models directly.
    ``layer_map(4, 12) == [0, 3, 6, 9, 12]``."""
    M, N = student_layers, teacher_layers
    if not 0 < M <= N:
        raise ValueError(f"need 0 < student layers <= teacher layers, got {M} and {N}")
    return [m * N // M for m in range(M + 1)]


# --- a training loop for students ------------------------------------------------------------

StudentLoss = Callable[[nn.Module, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor],
                       torch.Tensor]


def train_student(student: nn.Module, data: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
                  loss_fn: StudentLoss, *, steps: int, batch_size: int = 16, lr: float = 1e-4,
                  warmup: float = 0.1, clip: float = 1.0, seed: int = 0,
                  progress: bool = True, stop_after: int | None = None) -> list[float]:
    """Train ``student`` for ``steps`` balanced batches of ``data = (input_ids,
    attention_mask, labels)`` (lab 06's recipe: AdamW, linear warm-up then decay, gradient
    clipping). ``loss_fn(student, ids, mask, labels, rows)`` returns the batch's loss;
    ``rows`` index ``data``, so the loss can look up per-example targets such as the
    teacher's logits. ``stop_after``: only the first steps of that schedule. Returns the loss
    of every step."""

    from lmcourse import finetune

    input_ids, attention_mask, labels = data
    device = next(student.parameters()).device
    optimizer = finetune.make_optimizer(student, lr)
    schedule = finetune.warmup_linear(optimizer, round(warmup * steps), steps)
    batches = finetune.balanced_batches(labels, batch_size, stop_after or steps,
                                        torch.Generator().manual_seed(seed))
    student.train()
    losses = []
    for rows in progress_bar(batches, progress, total=stop_after or steps, desc="distilling"):
        ids, mask = finetune.trim(input_ids[rows], attention_mask[rows])
        loss = loss_fn(student, ids.to(device), mask.to(device), labels[rows].to(device), rows)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(student.parameters(), clip)
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
    student.eval()
    return losses


# ---- DistilBERT's student of a fine-tuned classifier --------------------------------------

def half_depth_student(teacher: SequenceClassifier, init: str = "every other"
                       ) -> SequenceClassifier:
    """A student with half the teacher's layers (DistilBERT's shape): layers copied from
    every other teacher layer (``init="every other"``) or drawn at random (``"random"``);
    word and position embeddings and the classifier copied from the teacher, embeddings
    frozen; no token types, no pooler."""
    if init not in ("every other", "random"):
        raise ValueError(f"init must be 'every other' or 'random', got {init!r}")
    encoder = init_student_from_teacher(teacher.encoder)
    if init == "random":
        encoder.encoder.load_state_dict(BertModel(encoder.config).encoder.state_dict())
    student = SequenceClassifier(encoder)
    student.classifier.load_state_dict(teacher.classifier.state_dict())
    student.freeze_embeddings()
    return student.to(next(teacher.parameters()).device)

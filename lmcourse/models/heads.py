"""BERT's fine-tuning heads: one encoder, four ways to read its output (Devlin et al. 2019,
figure 4 (a)-(d)).

With ``h_t`` the encoder's last hidden state at token ``t`` and ``p = tanh(W_p h_[CLS] + b_p)``
the pooler's sentence vector:

- (a) a sentence pair or (b) one sentence, classified:   ``logits = W dropout(p) + b``;
- (c) extractive question answering, question and passage as one pair: every token gets a
  start and an end score, ``[s_t, e_t] = W h_t + b``; the answer is the span
  ``argmax_{i <= j < i + L} s_i + e_j`` inside the passage (:func:`best_span`);
- (d) token tagging:                                       ``logits_t = W dropout(h_t) + b``.

The classes carry Hugging Face's names, parameter names and shapes (``bert.*``,
``classifier.*``, ``qa_outputs.*``), so ``load_state_dict(hf_model.state_dict())`` works
both ways and the outputs agree in evaluation mode.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from lmcourse.models.bert import BertConfig, BertModel, BertOutput

__all__ = ["BertClassifierHead", "BertForQuestionAnswering", "BertForSequenceClassification",
           "BertForTokenClassification", "QuestionAnsweringOutput", "SequenceClassifierOutput",
           "best_span"]

IGNORE_INDEX = -100  # a token tag that the loss skips (padding, [CLS], continuation pieces)


@dataclass
class SequenceClassifierOutput:
    logits: torch.Tensor  # B x num_labels (sequences) or B x T x num_labels (tokens)
    loss: torch.Tensor | None = None


@dataclass
class QuestionAnsweringOutput:
    start_logits: torch.Tensor  # B x T
    end_logits: torch.Tensor  # B x T
    loss: torch.Tensor | None = None


class _Head(nn.Module):
    """An encoder ``bert`` and a linear read-out, initialised as BERT's: N(0, 0.02), zero
    bias (the caller seeds torch)."""

    pooler = False

    def __init__(self, config: BertConfig, num_labels: int):
        super().__init__()
        if num_labels < 1:
            raise ValueError(f"num_labels must be at least 1, got {num_labels}")
        self.config, self.num_labels = config, num_labels
        self.bert = BertModel(replace(config, pooler=self.pooler))

    def _linear(self, out_features: int) -> nn.Linear:
        layer = nn.Linear(self.config.hidden_size, out_features)
        nn.init.normal_(layer.weight, std=0.02)
        nn.init.zeros_(layer.bias)
        return layer

    @classmethod
    def from_pretrained(cls, path: str | Path, num_labels: int = 2):
        """The head on a local BERT checkpoint's encoder (:meth:`BertModel.from_pretrained`);
        the read-out layer is new, drawn from torch's current random state. Training mode."""
        encoder = BertModel.from_pretrained(path)
        model = cls(encoder.config, num_labels)
        state = {k: v for k, v in encoder.state_dict().items()
                 if cls.pooler or not k.startswith("pooler.")}
        model.bert.load_state_dict(state)
        return model.train()


class BertClassifierHead(_Head):
    """A linear classifier on the encoder's read-out (``features``): ``logits = W dropout(f) +
    b``; with ``labels`` (``-100`` where there is nothing to predict), the mean
    cross-entropy as ``.loss``. Subclasses choose ``f``."""

    def __init__(self, config: BertConfig, num_labels: int = 2):
        super().__init__(config, num_labels)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.classifier = self._linear(num_labels)

    @staticmethod
    def features(out: BertOutput) -> torch.Tensor:
        raise NotImplementedError

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None,
                labels: torch.Tensor | None = None) -> SequenceClassifierOutput:
        out = self.bert(input_ids, attention_mask, token_type_ids)
        logits = self.classifier(self.dropout(self.features(out)))
        loss = None
        if labels is not None:
            if labels.shape != logits.shape[:-1]:
                raise ValueError(f"labels have shape {tuple(labels.shape)}, the logits "
                                 f"{tuple(logits.shape)}: one label per sequence, or one tag "
                                 "per token (-100: none)")
            loss = F.cross_entropy(logits.flatten(0, -2), labels.flatten(),
                                   ignore_index=IGNORE_INDEX)
        return SequenceClassifierOutput(logits=logits, loss=loss)


class BertForSequenceClassification(BertClassifierHead):
    """(a) and (b): ``f = tanh(W_p h_[CLS] + b_p)``, the pooler's sentence vector."""

    pooler = True

    @staticmethod
    def features(out: BertOutput) -> torch.Tensor:
        return out.pooler_output


class BertForTokenClassification(BertClassifierHead):
    """(d): ``f = h_t``, every token's last hidden state, so one label per token."""

    @staticmethod
    def features(out: BertOutput) -> torch.Tensor:
        return out.last_hidden_state


class BertForQuestionAnswering(_Head):
    """(c): ``[s_t, e_t] = W h_t + b``; with ``start_positions`` and ``end_positions`` (token
    indices of the answer's first and last piece), ``.loss`` is the mean of the two
    cross-entropies over the tokens, as in the paper."""

    def __init__(self, config: BertConfig, num_labels: int = 2):
        if num_labels != 2:
            raise ValueError(f"question answering scores a start and an end per token: "
                             f"num_labels must be 2, got {num_labels}")
        super().__init__(config, num_labels)
        self.qa_outputs = self._linear(2)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None,
                start_positions: torch.Tensor | None = None,
                end_positions: torch.Tensor | None = None) -> QuestionAnsweringOutput:
        hidden = self.bert(input_ids, attention_mask, token_type_ids).last_hidden_state
        start, end = self.qa_outputs(hidden).unbind(-1)
        loss = None
        if (start_positions is None) != (end_positions is None):
            raise ValueError("give both start_positions and end_positions, or neither")
        if start_positions is not None:
            loss = (F.cross_entropy(start, start_positions)
                    + F.cross_entropy(end, end_positions)) / 2
        return QuestionAnsweringOutput(start_logits=start.contiguous(),
                                       end_logits=end.contiguous(), loss=loss)


def best_span(start_logits: torch.Tensor, end_logits: torch.Tensor,
              allowed: torch.Tensor | None = None, max_length: int = 30
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """The highest-scoring answer span of each example: ``argmax_{i <= j < i + max_length}
    s_i + e_j`` with both ends at ``allowed`` tokens (``B x T`` booleans: the passage's
    pieces; default every token). Returns ``(start, end)`` token indices, ``B`` each."""
    if start_logits.shape != end_logits.shape or start_logits.dim() != 2:
        raise ValueError(f"start and end logits must both be B x T, got "
                         f"{tuple(start_logits.shape)} and {tuple(end_logits.shape)}")
    T = start_logits.shape[1]
    scores = start_logits[:, :, None] + end_logits[:, None, :]  # B x T(start) x T(end)
    i = torch.arange(T, device=scores.device)
    ok = (i[None, :] >= i[:, None]) & (i[None, :] < i[:, None] + max_length)
    ok = ok[None].expand_as(scores)
    if allowed is not None:
        allowed = allowed.bool()
        if not allowed.any(1).all():
            raise ValueError("an example has no allowed token to answer from")
        ok = ok & allowed[:, :, None] & allowed[:, None, :]
    flat = scores.masked_fill(~ok, float("-inf")).flatten(1).argmax(1)
    return flat // T, flat % T

"""SpanBERT's span-boundary objective (SBO).

Span masking (``lmcourse.masking.mask_spans``) hides whole spans ``x_s .. x_e``. The SBO
asks the model to rebuild each hidden token from the two tokens *just outside* its span
and its position inside it (Joshi et al., 2020, eq. 1-2):

    h_0 = [x_{s-1}; x_{e+1}; p_{i-s+1}]
    h_1 = LayerNorm(GELU(W_1 h_0))
    y_i = LayerNorm(GELU(W_2 h_1))
    L_SBO(x_i) = -log P(x_i | y_i)        (through the tied output embeddings)

so the boundary tokens' vectors must summarise what lies between them. The total loss is
``L_MLM + L_SBO``, summed over the masked tokens (we average each over them).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from lmcourse.masking import IGNORE_INDEX
from lmcourse.models.bert import BertConfig, BertModel
from lmcourse.models.pretraining import BertForPreTraining

__all__ = ["SpanBertForPreTraining", "SpanBoundaryHead", "span_boundaries"]


def span_boundaries(labels: torch.Tensor, max_offset: int | None = None
                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor,
                               torch.Tensor]:
    """Every masked position of ``labels`` (``B x T``, ``-100`` where not masked) with its
    span's boundaries: ``(rows, positions, left, right, offsets)``, one entry per masked
    token in row-major order (the order of ``labels[labels != -100]``). A span is a maximal
    run of masked positions; ``left = s - 1``, ``right = e + 1`` and ``offset = i - s``
    (clipped to ``max_offset - 1``). A span touching either end of the row has no outside
    token there: it raises, since BERT's inputs begin with ``[CLS]`` and end with ``[SEP]``,
    which are never masked."""
    selected = labels != IGNORE_INDEX
    B, T = selected.shape
    if selected[:, 0].any() or selected[:, -1].any():
        raise ValueError("a masked span touches the first or last position of a row: the "
                         "boundary objective needs an unmasked token on each side ([CLS] "
                         "and [SEP] are never masked; check the masker's special ids)")
    positions = torch.arange(T, device=labels.device).expand(B, T)
    # start of the current run: the last unmasked position to the left, plus one
    unmasked_at = torch.where(selected, torch.zeros_like(positions), positions)
    left_all = torch.cummax(unmasked_at, dim=1).values
    # end of the current run: the first unmasked position to the right, minus one
    unmasked_rev = torch.where(selected, torch.full_like(positions, T - 1), positions)
    right_all = torch.cummin(unmasked_rev.flip(1), dim=1).values.flip(1)
    rows, cols = selected.nonzero(as_tuple=True)
    left, right = left_all[rows, cols], right_all[rows, cols]
    offsets = cols - left - 1
    if max_offset is not None:
        offsets = offsets.clamp(max=max_offset - 1)
    return rows, cols, left, right, offsets


class SpanBoundaryHead(nn.Module):
    """``y_i = LN(GELU(W_2 LN(GELU(W_1 [x_{s-1}; x_{e+1}; p_{i-s+1}]))))``, then logits
    ``y_i E^T + b`` through the model's word embeddings ``E``."""

    def __init__(self, config: BertConfig, word_embeddings: nn.Embedding, max_offset: int):
        super().__init__()
        H, dim = config.hidden_size, word_embeddings.embedding_dim
        self.offsets = nn.Embedding(max_offset, H)
        self.layer1 = nn.Linear(3 * H, H)
        self.norm1 = nn.LayerNorm(H, eps=config.layer_norm_eps)
        self.layer2 = nn.Linear(H, dim)
        self.norm2 = nn.LayerNorm(dim, eps=config.layer_norm_eps)
        self.word_embeddings = word_embeddings  # tied, as the MLM head's
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, hidden: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Logits (``N x V``) for the masked positions of ``labels``, in the order of
        ``labels[labels != -100]``."""
        rows, _, left, right, offsets = span_boundaries(labels, self.offsets.num_embeddings)
        h0 = torch.cat([hidden[rows, left], hidden[rows, right], self.offsets(offsets)], -1)
        h1 = self.norm1(F.gelu(self.layer1(h0)))
        y = self.norm2(F.gelu(self.layer2(h1)))
        return y @ self.word_embeddings.weight.T + self.bias


class SpanBertForPreTraining(BertForPreTraining):
    """A :class:`BertForPreTraining` with the boundary head. ``forward`` is the parent's
    (so ``pretrain`` and ``evaluate_pretraining`` take it unchanged) and keeps the last
    hidden states; ``auxiliary_loss(labels)``, which ``pretrain`` adds to the MLM loss, is
    the mean SBO cross-entropy over the masked tokens of that same batch."""

    def __init__(self, config: BertConfig, max_offset: int | None = None):
        super().__init__(config)
        self.sbo = SpanBoundaryHead(config, self.bert.embeddings.word_embeddings,
                                    max_offset or config.max_position_embeddings)
        self.sbo.apply(BertModel._init_weights)
        self._hidden: torch.Tensor | None = None

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None,
                attention_mask: torch.Tensor | None = None, predict: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.bert(input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
        self._hidden = out.last_hidden_state
        hidden = out.last_hidden_state if predict is None else out.last_hidden_state[predict]
        return self.mlm(hidden), self.nsp(out.pooler_output)

    def auxiliary_loss(self, labels: torch.Tensor) -> torch.Tensor:
        if self._hidden is None or self._hidden.shape[:2] != labels.shape:
            raise RuntimeError("auxiliary_loss needs the hidden states of the same batch: "
                               "call the model on it first")
        logits = self.sbo(self._hidden, labels)
        return F.cross_entropy(logits, labels[labels != IGNORE_INDEX])

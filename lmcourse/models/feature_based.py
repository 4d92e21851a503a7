"""The feature-based use of BERT: frozen layers as features for a small model.

Instead of fine-tuning every weight, Devlin et al. (2019, section 5.3) also *extract*
BERT's hidden states and train only a task model on top: their best choice for named
entity recognition concatenates the last four layers of each token,

    x_t = [h_t^(L-3); h_t^(L-2); h_t^(L-1); h_t^(L)]      (4H numbers per token),

and feeds them to a randomly initialised two-layer BiLSTM before the classifier. The
encoder is run once, under ``torch.no_grad``; the features can be cached and the small
model trains fast. :class:`BiLSTMClassifier` is that small model; given a vocabulary size
instead of features it learns its own word embeddings from scratch (the baseline without
any pre-training).
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["BiLSTMClassifier", "concat_last_layers", "extract_features", "sentence_vectors"]


def concat_last_layers(hidden_states: tuple[torch.Tensor, ...], k: int = 4) -> torch.Tensor:
    """``[h^(L-k+1); ...; h^(L)]`` along the feature axis: ``B x T x kH``."""
    if not 1 <= k < len(hidden_states):
        raise ValueError(f"k must be between 1 and {len(hidden_states) - 1} (the number of "
                         f"layers), got {k}")
    return torch.cat(hidden_states[-k:], dim=-1)


@torch.no_grad()
def extract_features(encoder: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                     k: int = 4, batch_size: int = 64) -> torch.Tensor:
    """The concatenated last ``k`` layers of a frozen encoder for every token, computed once
    (evaluation mode, no graph): ``N x T x kH`` on the CPU, zeros at padding. Sentences
    are run in batches of similar length, each cut to its longest sentence."""
    encoder.eval()
    device = next(encoder.parameters()).device
    lengths = attention_mask.sum(1)
    out: torch.Tensor | None = None
    for chunk in torch.argsort(lengths, descending=True).split(batch_size):
        T = max(int(lengths[chunk].max()), 1)
        ids, mask = input_ids[chunk, :T].to(device), attention_mask[chunk, :T].to(device)
        features = concat_last_layers(encoder(ids, attention_mask=mask).hidden_states, k)
        if out is None:
            out = torch.zeros(*input_ids.shape, features.shape[-1])
        out[chunk, :T] = features.cpu() * mask[..., None].cpu()
    return out


@torch.no_grad()
def sentence_vectors(encoder: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                     batch_size: int = 64) -> torch.Tensor:
    """One frozen vector per sentence, the mean of its last-layer token vectors over the
    real tokens, ``s = sum_t m_t h_t^(L) / sum_t m_t`` (``N x H`` on the CPU): the pooling
    all-MiniLM-L6-v2 was trained with (Reimers & Gurevych 2019, Sentence-BERT), so a linear
    classifier on ``s`` is the cheapest use of its pre-training."""
    encoder.eval()
    device = next(encoder.parameters()).device
    lengths = attention_mask.sum(1)
    out = torch.zeros(len(input_ids), encoder.config.hidden_size)
    for chunk in torch.argsort(lengths, descending=True).split(batch_size):
        T = max(int(lengths[chunk].max()), 1)
        ids, mask = input_ids[chunk, :T].to(device), attention_mask[chunk, :T].to(device)
        h = encoder(ids, attention_mask=mask).last_hidden_state.float()
        m = mask[..., None].float()
        out[chunk] = ((h * m).sum(1) / m.sum(1).clamp(min=1)).cpu()
    return out


class BiLSTMClassifier(nn.Module):
    """A BiLSTM over token vectors, then a linear layer on the last forward state and the
    first backward state: ``z = W [h_fwd_T; h_bwd_1] + b``.

    ``input_dim`` tokens come in as vectors (frozen BERT features), or, with
    ``vocab_size``, as ids whose embeddings (``input_dim`` wide) are learned from scratch.
    Padding (``attention_mask == 0``) is packed away, so it never changes the output.
    """

    def __init__(self, input_dim: int, hidden_size: int = 64, num_layers: int = 2,
                 num_labels: int = 2, vocab_size: int | None = None, dropout: float = 0.1):
        super().__init__()
        self.embedding = (nn.Embedding(vocab_size, input_dim, padding_idx=0)
                          if vocab_size else None)
        self.lstm = nn.LSTM(input_dim, hidden_size, num_layers, batch_first=True,
                            bidirectional=True, dropout=dropout if num_layers > 1 else 0.0)
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(2 * hidden_size, num_labels)

    def forward(self, inputs: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        x = self.embedding(inputs) if self.embedding is not None else inputs
        lengths = attention_mask.sum(1).clamp(min=1).cpu()
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True,
                                                   enforce_sorted=False)
        _, (h_n, _) = self.lstm(packed)
        last = torch.cat([h_n[-2], h_n[-1]], dim=-1)  # top layer: forward, backward
        return self.head(self.dropout(last))

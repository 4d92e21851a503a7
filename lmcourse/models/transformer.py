"""The transformer: attention plus positions, residual connections, LayerNorm and an MLP.

One encoder layer (Vaswani et al. 2017) maps ``x`` (``T x d``) to ``x'`` of the same shape:

    post-norm (the paper):   h = LN(x + MHA(x)),        x' = LN(h + FFN(h))
    pre-norm  (GPT-2 on):    h = x + MHA(LN(x)),        x' = h + FFN(LN(h))

with ``FFN(h) = W_2 act(W_1 h + b_1) + b_2``. A decoder layer
(:class:`TransformerDecoderLayer`) adds a second attention block between the two, whose
queries come from the target and whose keys and values come from the encoder's output
(the "memory"). Attention has no notion of order, so the inputs get a position vector
added: fixed sinusoids or a learned table.

:class:`TransformerEncoderLayer` has the parameters (names and shapes) of
``torch.nn.TransformerEncoderLayer``, so ``load_state_dict`` copies its weights as is.
:class:`TransformerDecoderLayer` likewise matches ``torch.nn.TransformerDecoderLayer``.
Masks use the course's polarity: boolean, ``True`` = allowed.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from lmcourse.models.attention import MultiHeadAttention, causal_mask

__all__ = [
    "LearnedPositions",
    "TransformerDecoderLayer",
    "TransformerEncoderLayer",
    "TransformerLM",
    "decoder_layer_parameters",
    "encoder_layer_parameters",
    "sinusoidal_positions",
]


def sinusoidal_positions(T: int, d: int) -> torch.Tensor:
    """``T x d`` table: ``PE[pos, 2i] = sin(pos / 10000^(2i/d))``, ``PE[pos, 2i+1] = cos(...)``.

    Each pair of columns is a clock turning at its own speed, from one turn every
    ``2*pi`` positions (``i = 0``) down to one every ``2*pi*10000`` positions.
    """
    pos = torch.arange(T, dtype=torch.float64)[:, None]
    freq = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # 1/10000^(2i/d)
    pe = torch.zeros(T, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos * freq)
    pe[:, 1::2] = torch.cos(pos * freq[: d // 2])
    return pe.to(torch.get_default_dtype())


class LearnedPositions(nn.Module):
    """A learned vector per position, ``P[t]`` (``max_len x d``), as in BERT and GPT."""

    def __init__(self, max_len: int, d_model: int):
        super().__init__()
        self.table = nn.Embedding(max_len, d_model)
        nn.init.normal_(self.table.weight, std=0.02)

    def forward(self, T: int) -> torch.Tensor:
        return self.table(torch.arange(T, device=self.table.weight.device))


def _activation(name: str):
    acts = {"relu": F.relu, "gelu": F.gelu}
    if name not in acts:
        raise ValueError(f"activation must be 'relu' or 'gelu', got {name!r}")
    return acts[name]


class _TransformerLayer(nn.Module):
    """What the encoder and the decoder layer share: self-attention over their own input
    (``self_attn``, with ``dropout1`` on its branch) and the position-wise feed-forward
    network (``linear1``, ``activation``, ``dropout``, ``linear2``), and the LayerNorms
    ``norm1`` and ``norm2`` of their first two residual connections."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int, dropout: float,
                 activation: str, batch_first: bool, norm_first: bool, layer_norm_eps: float,
                 cross_attention: bool = False):
        super().__init__()
        self.batch_first, self.norm_first = batch_first, norm_first
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout=dropout, batch_first=True)
        if cross_attention:  # created here to keep PyTorch's order of parameters
            self.multihead_attn = MultiHeadAttention(d_model, nhead, dropout=dropout,
                                                     batch_first=True)
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.dropout = nn.Dropout(dropout)   # inside the feed-forward block
        self.dropout1 = nn.Dropout(dropout)  # on the self-attention branch
        self.activation = _activation(activation)

    def _sa_block(self, x: torch.Tensor, mask: torch.Tensor | None
                  ) -> tuple[torch.Tensor, torch.Tensor]:
        """Self-attention: queries, keys and values all from the layer's input."""
        out, weights = self.self_attn(x, x, x, mask, average_attn_weights=False)
        return self.dropout1(out), weights

    def _feed_forward(self, x: torch.Tensor) -> torch.Tensor:
        """``FFN(x) = W_2 act(W_1 x + b_1) + b_2``, applied to every position separately
        (``linear1`` widens to ``dim_feedforward``, 4 x d in the paper), with dropout on the
        hidden layer as in PyTorch's layers."""
        return self.linear2(self.dropout(self.activation(self.linear1(x))))


class TransformerEncoderLayer(_TransformerLayer):
    """Self-attention and feed-forward blocks, each wrapped in a residual connection + LayerNorm.

    Post-norm (``norm_first=False``, the paper): ``h = LN_1(x + MHA(x))``,
    ``out = LN_2(h + FFN(h))``. Pre-norm (``norm_first=True``): ``h = x + MHA(LN_1(x))``,
    ``out = h + FFN(LN_2(h))``. Parameter names are those of
    ``torch.nn.TransformerEncoderLayer`` (``self_attn``, ``linear1``, ``linear2``, ``norm1``,
    ``norm2``). ``mask`` is boolean, ``True`` = allowed, broadcastable to
    ``B x heads x T x T``.
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.0, activation: str = "relu", batch_first: bool = False,
                 norm_first: bool = False, layer_norm_eps: float = 1e-5):
        super().__init__(d_model, nhead, dim_feedforward, dropout, activation, batch_first,
                         norm_first, layer_norm_eps)
        self.dropout2 = nn.Dropout(dropout)  # on the feed-forward branch

    def _ff_block(self, x: torch.Tensor) -> torch.Tensor:
        """The feed-forward branch: :meth:`_feed_forward`, then dropout (as in PyTorch)."""
        return self.dropout2(self._feed_forward(x))

    def forward(self, src: torch.Tensor, mask: torch.Tensor | None = None,
                return_attention: bool = False):
        """``T x B x d`` (``B x T x d`` with ``batch_first``) -> same shape; with
        ``return_attention`` also the ``B x heads x T x T`` weights."""
        x = src if self.batch_first or src.dim() == 2 else src.transpose(0, 1)
        if self.norm_first:  # pre-norm: normalise the input of each branch
            attended, weights = self._sa_block(self.norm1(x), mask)
            x = x + attended
            x = x + self._ff_block(self.norm2(x))
        else:  # post-norm: normalise after each residual sum
            attended, weights = self._sa_block(x, mask)
            x = self.norm1(x + attended)
            x = self.norm2(x + self._ff_block(x))
        out = x if self.batch_first or src.dim() == 2 else x.transpose(0, 1)
        return (out, weights) if return_attention else out


class TransformerDecoderLayer(_TransformerLayer):
    """Masked self-attention, cross-attention over the encoder's memory, and feed-forward,
    each wrapped in a residual connection + LayerNorm.

    For a target ``y`` (``T x d``) and the encoder's output ``m`` (``S x d``):

        post-norm (the paper):  h1 = LN_1(y  + SelfAttn(y)),
                                h2 = LN_2(h1 + CrossAttn(h1, m)),
                                out = LN_3(h2 + FFN(h2))
        pre-norm:               h1 = y  + SelfAttn(LN_1(y)),
                                h2 = h1 + CrossAttn(LN_2(h1), m),
                                out = h2 + FFN(LN_3(h2))

    where ``SelfAttn(x) = MHA(Q=x, K=x, V=x)`` under ``tgt_mask`` (usually causal, so
    target position ``i`` sees only ``<= i``) and ``CrossAttn(x, m) = MHA(Q=x, K=m, V=m)``
    under ``memory_mask`` (usually the source padding). Parameter names are those of
    ``torch.nn.TransformerDecoderLayer`` (``self_attn``, ``multihead_attn``, ``linear1``,
    ``linear2``, ``norm1``..``norm3``). Both masks are boolean, ``True`` = allowed:
    ``tgt_mask`` broadcastable to ``B x heads x T x T`` (e.g. ``causal_mask(T)``),
    ``memory_mask`` to ``B x heads x T x S`` (a source padding mask ``B x S`` as
    ``padding_mask(lengths)[:, None, None, :]``).
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.0, activation: str = "relu", batch_first: bool = False,
                 norm_first: bool = False, layer_norm_eps: float = 1e-5):
        super().__init__(d_model, nhead, dim_feedforward, dropout, activation, batch_first,
                         norm_first, layer_norm_eps, cross_attention=True)
        self.norm3 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.dropout2 = nn.Dropout(dropout)  # on the cross-attention branch
        self.dropout3 = nn.Dropout(dropout)  # on the feed-forward branch

    def _mha_block(self, x: torch.Tensor, memory: torch.Tensor, mask: torch.Tensor | None
                   ) -> tuple[torch.Tensor, torch.Tensor]:
        """Cross-attention: queries from the target, keys and values from the memory."""
        out, weights = self.multihead_attn(x, memory, memory, mask, average_attn_weights=False)
        return self.dropout2(out), weights

    def _ff_block(self, x: torch.Tensor) -> torch.Tensor:
        """The feed-forward branch: :meth:`_feed_forward`, then dropout (as in PyTorch)."""
        return self.dropout3(self._feed_forward(x))

    def forward(self, tgt: torch.Tensor, memory: torch.Tensor,
                tgt_mask: torch.Tensor | None = None, memory_mask: torch.Tensor | None = None,
                return_attention: bool = False):
        """``tgt`` ``T x B x d`` and ``memory`` ``S x B x d`` (batch first with
        ``batch_first``; unbatched ``T x d``, ``S x d`` too) -> same shape as ``tgt``. With
        ``return_attention`` also the self- and cross-attention weights,
        ``B x heads x T x T`` and ``B x heads x T x S``."""
        keep = self.batch_first or tgt.dim() == 2
        x = tgt if keep else tgt.transpose(0, 1)
        m = memory if keep else memory.transpose(0, 1)
        if self.norm_first:  # pre-norm: normalise the input of each branch
            attended, self_weights = self._sa_block(self.norm1(x), tgt_mask)
            x = x + attended
            attended, cross_weights = self._mha_block(self.norm2(x), m, memory_mask)
            x = x + attended
            x = x + self._ff_block(self.norm3(x))
        else:  # post-norm: normalise after each residual sum
            attended, self_weights = self._sa_block(x, tgt_mask)
            x = self.norm1(x + attended)
            attended, cross_weights = self._mha_block(x, m, memory_mask)
            x = self.norm2(x + attended)
            x = self.norm3(x + self._ff_block(x))
        out = x if keep else x.transpose(0, 1)
        return (out, self_weights, cross_weights) if return_attention else out


def encoder_layer_parameters(d_model: int, dim_feedforward: int) -> int:
    """Parameters of one encoder layer by formula:
    ``4 d^2 + 4 d`` (attention) ``+ 2 d d_ff + d_ff + d`` (FFN) ``+ 4 d`` (two LayerNorms)."""
    d, f = d_model, dim_feedforward
    return (4 * d * d + 4 * d) + (2 * d * f + f + d) + 4 * d


def decoder_layer_parameters(d_model: int, dim_feedforward: int) -> int:
    """Parameters of one decoder layer: an encoder layer's, plus the cross-attention
    (``4 d^2 + 4 d``) and a third LayerNorm (``2 d``)."""
    d = d_model
    return encoder_layer_parameters(d_model, dim_feedforward) + (4 * d * d + 4 * d) + 2 * d


class TransformerLM(nn.Module):
    """A causal (decoder-only) transformer language model, GPT-style, with pre-norm layers.

    ``x_t = E[token_t] + P[t]``; ``num_layers`` encoder layers with a causal mask
    (position ``t`` sees tokens ``<= t`` only); a final LayerNorm; a linear head to the
    vocabulary. Follows the course contract ``logits, state = model(x, state)`` with
    batch-first ``x`` (``B x T`` ids); it has no state (``None`` in and out), so train it
    with ``fit_lm(..., carry_state=False)``.

    ``tie_weights=True`` shares the embedding matrix ``E`` (``V x d``) with the output layer,
    ``logits_t = E h_t + b`` (Press & Wolf 2017; Vaswani et al. 2017), which saves ``V d``
    parameters; as in the paper the embeddings are then multiplied by ``sqrt(d)`` on the way
    in, with ``E`` initialised ``N(0, 1/d)`` so that both uses see unit-scale vectors.
    ``embed_dropout`` is the paper's dropout on the sums ``E[token_t] + P[t]``.
    """

    def __init__(self, vocab_size: int, d_model: int, nhead: int, num_layers: int,
                 dim_feedforward: int, max_len: int, positions: str = "sinusoidal",
                 dropout: float = 0.0, norm_first: bool = True, tie_weights: bool = False,
                 embed_dropout: float = 0.0):
        super().__init__()
        if positions not in ("sinusoidal", "learned"):
            raise ValueError(f"positions must be 'sinusoidal' or 'learned', got {positions!r}")
        if not 0.0 <= embed_dropout < 1.0:
            raise ValueError(f"embed_dropout is a probability in [0, 1), got {embed_dropout!r}")
        self.max_len = max_len
        self.embed = nn.Embedding(vocab_size, d_model)
        if positions == "learned":
            self.positions = LearnedPositions(max_len, d_model)
        else:
            self.positions = None
            self.register_buffer("pe", sinusoidal_positions(max_len, d_model), persistent=False)
        self.embed_dropout = nn.Dropout(embed_dropout)
        self.layers = nn.ModuleList(
            TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout,
                                    batch_first=True, norm_first=norm_first)
            for _ in range(num_layers))
        self.norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()
        self.head = nn.Linear(d_model, vocab_size)
        self.embed_scale = 1.0
        if tie_weights:
            self.tie_weights()

    def tie_weights(self) -> None:
        """Share ``E`` between input and output: ``head.weight`` *is* ``embed.weight``."""
        d = self.embed.embedding_dim
        nn.init.normal_(self.embed.weight, std=d ** -0.5)
        self.head.weight = self.embed.weight  # one Parameter, used twice
        self.embed_scale = d ** 0.5

    def hidden(self, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Final hidden states ``B x T x d`` and the attention weights of every layer."""
        T = x.shape[1]
        if T > self.max_len:
            raise ValueError(f"sequence of {T} tokens is longer than max_len={self.max_len}")
        pos = self.pe[:T] if self.positions is None else self.positions(T)
        h = self.embed_dropout(self.embed(x) * self.embed_scale + pos)
        mask = causal_mask(T, device=x.device)
        attentions = []
        for layer in self.layers:
            h, weights = layer(h, mask, return_attention=True)
            attentions.append(weights)
        return self.norm(h), attentions

    def forward(self, x: torch.Tensor, state: None = None) -> tuple[torch.Tensor, None]:
        return self.head(self.hidden(x)[0]), None

    @torch.no_grad()
    def attentions(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """One ``B x heads x T x T`` tensor per layer, for ``lmcourse.viz.attention_widget``."""
        return tuple(self.hidden(x)[1])

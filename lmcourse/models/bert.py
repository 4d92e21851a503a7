"""BERT: a stack of transformer encoder layers over token + segment + position embeddings.

Devlin et al. (2019). The input of token ``t`` at position ``i`` in segment ``s`` is

    x_i = LayerNorm(E_tok[t] + E_pos[i] + E_seg[s])

then ``L`` post-norm transformer encoder layers with GELU feed-forward blocks; the pooler
is ``tanh(W h_[CLS] + b)``. Parameter names are those of Hugging Face's ``BertModel``, so
a local checkpoint loads as is (:meth:`BertModel.from_pretrained`).

Options of the config cover two of BERT's descendants: ALBERT's
factorised embeddings (``embedding_size`` < ``hidden_size``, then one ``E x H``
projection) and cross-layer sharing (``share_layers``: one layer applied ``L`` times), and
DistilBERT's missing segment embeddings (``type_vocab_size=0``) and pooler (``pooler=False``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from lmcourse.models.attention import merge_heads, scaled_dot_product_attention, split_heads
from lmcourse.models.transformer import TransformerEncoderLayer
from lmcourse.pretrained import load_state_dict_file, read_config

__all__ = ["BertConfig", "BertModel", "BertOutput", "as_encoder_layer"]


@dataclass
class BertConfig:
    """The shapes of a BERT model; defaults are BERT-base (uncased)."""

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0
    embedding_size: int | None = None  # ALBERT: E < H, factorised embeddings
    share_layers: bool = False  # ALBERT: one set of layer weights used L times
    pooler: bool = True  # DistilBERT has none

    def __post_init__(self) -> None:
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(f"hidden_size {self.hidden_size} is not a multiple of "
                             f"num_attention_heads {self.num_attention_heads}")

    @classmethod
    def from_dict(cls, values: dict) -> BertConfig:
        """From a Hugging Face ``config.json``; keys this model does not use are ignored."""
        if values.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"only hidden_act='gelu' is implemented, got {values['hidden_act']!r}")
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in names})


@dataclass
class BertOutput:
    """What a forward pass returns (the fields of Hugging Face's output of the same name)."""

    last_hidden_state: torch.Tensor  # B x T x H
    hidden_states: tuple[torch.Tensor, ...]  # embeddings, then one per layer: L + 1
    attentions: tuple[torch.Tensor, ...]  # one B x heads x T x T tensor per layer
    pooler_output: torch.Tensor | None = None  # B x H, from [CLS]


class BertEmbeddings(nn.Module):
    """``LayerNorm(E_tok[t] + E_pos[i] + E_seg[s])`` (then dropout)."""

    def __init__(self, config: BertConfig):
        super().__init__()
        dim = config.embedding_size or config.hidden_size
        self.word_embeddings = nn.Embedding(config.vocab_size, dim,
                                            padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, dim)
        self.token_type_embeddings = (nn.Embedding(config.type_vocab_size, dim)
                                      if config.type_vocab_size else None)
        self.LayerNorm = nn.LayerNorm(dim, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None
                ) -> torch.Tensor:
        T = input_ids.shape[1]
        if T > self.position_embeddings.num_embeddings:
            raise ValueError(f"a sequence of {T} tokens is longer than the "
                             f"{self.position_embeddings.num_embeddings} positions this model "
                             "has; truncate it (tokenizer(..., truncation=True))")
        positions = torch.arange(T, device=input_ids.device)
        x = self.word_embeddings(input_ids) + self.position_embeddings(positions)[None]
        if self.token_type_embeddings is not None:
            if token_type_ids is None:
                token_type_ids = torch.zeros_like(input_ids)
            x = x + self.token_type_embeddings(token_type_ids)
        return self.dropout(self.LayerNorm(x))


class BertSelfAttention(nn.Module):
    """Multi-head ``softmax(Q K^T / sqrt(d_head)) V`` with Q, K, V = x W_q, x W_k, x W_v."""

    def __init__(self, config: BertConfig):
        super().__init__()
        H = config.hidden_size
        self.num_heads = config.num_attention_heads
        self.query, self.key, self.value = nn.Linear(H, H), nn.Linear(H, H), nn.Linear(H, H)
        self.dropout_p = config.attention_probs_dropout_prob

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        q, k, v = (split_heads(f(x), self.num_heads) for f in (self.query, self.key, self.value))
        out, weights = scaled_dot_product_attention(
            q, k, v, mask, dropout_p=self.dropout_p if self.training else 0.0)
        return merge_heads(out), weights


class BertSublayerOutput(nn.Module):
    """Post-norm residual: ``LayerNorm(residual + dropout(W h + b))``."""

    def __init__(self, in_features: int, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(in_features, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, h: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(residual + self.dropout(self.dense(h)))


class BertAttention(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.self = BertSelfAttention(config)
        self.output = BertSublayerOutput(config.hidden_size, config)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        h, weights = self.self(x, mask)
        return self.output(h, x), weights


class BertIntermediate(nn.Module):
    """The feed-forward block's first half, ``GELU(W_1 x + b_1)``, ``H -> intermediate_size``."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.dense(x))


class BertLayer(nn.Module):
    """One encoder layer: self-attention, then the feed-forward block, each post-norm."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertSublayerOutput(config.intermediate_size, config)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        h, weights = self.attention(x, mask)
        return self.output(self.intermediate(h), h), weights


class BertEncoder(nn.Module):
    """``L`` layers; with ``share_layers`` (ALBERT) the same layer is applied ``L`` times."""

    def __init__(self, config: BertConfig):
        super().__init__()
        distinct = 1 if config.share_layers else config.num_hidden_layers
        self.layer = nn.ModuleList(BertLayer(config) for _ in range(distinct))
        self.num_hidden_layers = config.num_hidden_layers

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None
                ) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        hidden, attentions = [x], []
        for i in range(self.num_hidden_layers):
            x, weights = self.layer[i % len(self.layer)](x, mask)
            hidden.append(x)
            attentions.append(weights)
        return hidden, attentions


class BertPooler(nn.Module):
    """``tanh(W h_[CLS] + b)``: the sentence vector next-sentence prediction was trained on."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.dense(hidden[:, 0]))


class BertModel(nn.Module):
    """The BERT encoder: ``model(input_ids, attention_mask, token_type_ids)`` -> BertOutput.

    ``attention_mask`` is ``B x T`` with 1 (or ``True``) at real tokens and 0 at padding;
    padding is never attended to. ``token_type_ids`` are the segment ids (0 for sentence A,
    1 for sentence B), zeros when not given.
    """

    def __init__(self, config: BertConfig | None = None):
        super().__init__()
        self.config = config = config or BertConfig()
        self.embeddings = BertEmbeddings(config)
        dim = config.embedding_size or config.hidden_size
        # ALBERT's factorisation: embeddings of size E, projected once to H
        self.embedding_projection = (nn.Linear(dim, config.hidden_size)
                                     if dim != config.hidden_size else None)
        self.encoder = BertEncoder(config)
        self.pooler = BertPooler(config) if config.pooler else None
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        """BERT's initialisation: N(0, 0.02) weights, zero biases, LayerNorm at identity."""
        if isinstance(module, nn.Linear | nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)
        if isinstance(module, nn.Embedding) and module.padding_idx is not None:
            with torch.no_grad():
                module.weight[module.padding_idx].zero_()

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None) -> BertOutput:
        if input_ids.dim() != 2:
            raise ValueError("input_ids must be batch x tokens, got shape "
                             f"{tuple(input_ids.shape)}; add a batch axis with input_ids[None]")
        x = self.embeddings(input_ids, token_type_ids)
        if self.embedding_projection is not None:
            x = self.embedding_projection(x)
        mask = None
        if attention_mask is not None:
            if attention_mask.shape != input_ids.shape:
                raise ValueError(f"attention_mask has shape {tuple(attention_mask.shape)}, "
                                 f"input_ids {tuple(input_ids.shape)}: they must match")
            mask = attention_mask.bool()[:, None, None, :]  # B x 1 x 1 x S: keys only
        hidden, attentions = self.encoder(x, mask)
        pooled = self.pooler(hidden[-1]) if self.pooler is not None else None
        return BertOutput(last_hidden_state=hidden[-1], hidden_states=tuple(hidden),
                          attentions=tuple(attentions), pooler_output=pooled)

    @classmethod
    def from_pretrained(cls, path: str | Path) -> BertModel:
        """Load a local Hugging Face BERT checkpoint: ``config.json`` plus
        ``model.safetensors`` (preferred) or ``pytorch_model.bin`` (read with
        ``weights_only=True``). Nothing is downloaded."""
        path = Path(path).expanduser()
        values = read_config(path)
        if values.get("model_type", "bert") != "bert":
            raise ValueError(f"{path} holds a {values['model_type']!r} model, not BERT")
        model = cls(BertConfig.from_dict(values))
        state = load_state_dict_file(path)
        state = {k.removeprefix("bert."): v for k, v in state.items()
                 if not k.endswith("position_ids") and not k.startswith("cls.")}
        missing, unexpected = model.load_state_dict(state, strict=False)
        if missing or unexpected:
            raise ValueError(f"{path}: the weights do not fit a BertModel: missing "
                             f"{missing[:5]}{' ...' if len(missing) > 5 else ''}, unexpected "
                             f"{unexpected[:5]}{' ...' if len(unexpected) > 5 else ''}")
        return model.eval()


def as_encoder_layer(layer: BertLayer, config: BertConfig) -> TransformerEncoderLayer:
    """Chapter 07's post-norm :class:`TransformerEncoderLayer` (GELU) holding the weights of
    one BERT layer: BERT's encoder *is* the transformer encoder, under other names.

    ``query``/``key``/``value`` stack into ``self_attn.in_proj_*``, ``attention.output``
    becomes ``self_attn.out_proj`` and ``norm1``, ``intermediate``/``output`` become the
    feed-forward block ``linear1``/``linear2`` and ``norm2``.
    """
    H = config.hidden_size
    out = TransformerEncoderLayer(H, config.num_attention_heads, config.intermediate_size,
                                  activation="gelu", batch_first=True,
                                  layer_norm_eps=config.layer_norm_eps)
    attn = layer.attention
    qkv = (attn.self.query, attn.self.key, attn.self.value)
    state = {
        "self_attn.in_proj_weight": torch.cat([m.weight for m in qkv]),
        "self_attn.in_proj_bias": torch.cat([m.bias for m in qkv]),
        "self_attn.out_proj.weight": attn.output.dense.weight,
        "self_attn.out_proj.bias": attn.output.dense.bias,
        "norm1.weight": attn.output.LayerNorm.weight, "norm1.bias": attn.output.LayerNorm.bias,
        "linear1.weight": layer.intermediate.dense.weight,
        "linear1.bias": layer.intermediate.dense.bias,
        "linear2.weight": layer.output.dense.weight, "linear2.bias": layer.output.dense.bias,
        "norm2.weight": layer.output.LayerNorm.weight, "norm2.bias": layer.output.LayerNorm.bias,
    }
    out.load_state_dict({k: v.detach().clone() for k, v in state.items()})
    return out.to(layer.output.dense.weight.dtype).eval()

"""A small DeBERTa (He et al. 2021): BERT with disentangled attention, an enhanced mask
decoder, and SiFT for fine-tuning.

**Encoder.** No absolute positions in the input: ``x_i = LayerNorm(E_tok[t_i] + E_seg[s_i])``.
Every layer ``l`` attends with :func:`lmcourse.models.deberta.disentangled_attention`,

    Ã_ij = Q^c_i K^c_j^T + Q^c_i K^r_δ(i,j)^T + K^c_j Q^r_δ(j,i)^T,
    A    = softmax(Ã / sqrt(3d)) V^c,
    Q^c, K^c, V^c = x W_q^l, x W_k^l, x W_v^l,     Q^r, K^r = P W_qr^l, P W_kr^l,

with ONE table ``P = LayerNorm(E_rel)`` of ``2k`` relative-position vectors shared by all
layers (each layer has its own projections ``W_qr^l, W_kr^l``), then BERT's post-norm
output projection, residual and feed-forward block. Projections have no biases.

**Enhanced mask decoder (EMD).** Absolute positions enter once, just before the MLM head:
``h = Layer(H_L + E_pos)``, one more disentangled layer. (The paper's EMD takes queries
from ``H + E_pos`` but keys and values from ``H``; here the layer sees ``H + E_pos``
everywhere.) By default the EMD has a layer of its own; ``share_emd_layer=True`` reuses
the last encoder layer, as the official code does, so the EMD adds only ``E_pos``.

**Ablations** (the paper's "-C2P", "-P2C", "-EMD"): ``terms`` (every layer, the EMD's
included, sums only those terms of ``Ã``, see :mod:`lmcourse.models.deberta`) and
``enhanced_mask_decoder=False``.

**SiFT** (scale-invariant fine-tuning): virtual adversarial training on layer-normalised
embeddings ``ê = (e - mean(e)) / std(e)`` (no learned gain or bias), see :func:`sift_loss`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from lmcourse.models.bert import (
    BertConfig,
    BertIntermediate,
    BertModel,
    BertOutput,
    BertPooler,
    BertSublayerOutput,
)
from lmcourse.models.deberta import (
    ATTENTION_TERMS,
    _check_k,
    _check_terms,
    disentangled_attention,
)
from lmcourse.models.pretraining import MaskedLMHead

__all__ = ["DebertaEmbeddings", "DebertaForPreTraining", "DebertaLayer", "DebertaModel",
           "EnhancedMaskDecoder", "embeddings_forward", "parameter_budget_report", "sift_loss"]


class DebertaLayer(nn.Module):
    """Disentangled self-attention, then output projection + residual + LayerNorm and the
    feed-forward block (post-norm, as :class:`lmcourse.models.bert.BertLayer`).

    ``forward(x, p, mask)``: ``x`` is ``B x T x H``, ``p`` the shared ``2k x H`` table,
    ``mask`` boolean (``True`` = allowed) broadcastable to ``B x heads x T x T``; returns
    ``(x, weights B x heads x T x T)``. ``terms``: the terms of ``Ã`` summed (an ablation);
    the parameters do not depend on it, an unused projection just gets no gradient.
    """

    def __init__(self, config: BertConfig, k: int, terms: tuple[str, ...] = ATTENTION_TERMS):
        super().__init__()
        _check_k(k)
        H = config.hidden_size
        self.k, self.num_heads, self.terms = k, config.num_attention_heads, _check_terms(terms)
        # content (query, key, value) and position (pos_query, pos_key) projections
        self.query, self.key, self.value, self.pos_query, self.pos_key = (
            nn.Linear(H, H, bias=False) for _ in range(5))
        self.attention_output = BertSublayerOutput(H, config)
        self.intermediate = BertIntermediate(config)
        self.output = BertSublayerOutput(config.intermediate_size, config)

    def attention(self, x: torch.Tensor, p: torch.Tensor, mask: torch.Tensor | None = None
                  ) -> tuple[torch.Tensor, torch.Tensor]:
        """``softmax(Ã / sqrt(len(terms) d)) V^c`` (heads merged) and the weights, before the
        output projection. ``nn.Linear`` computes ``x W^T``, so ``W = weight.T``."""
        W = [m.weight.T for m in (self.query, self.key, self.value, self.pos_query, self.pos_key)]
        return disentangled_attention(x, p, *W, k=self.k, num_heads=self.num_heads, mask=mask,
                                      terms=self.terms)

    def forward(self, x: torch.Tensor, p: torch.Tensor, mask: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        a, weights = self.attention(x, p, mask)
        h = self.attention_output(a, x)
        return self.output(self.intermediate(h), h), weights


class DebertaEmbeddings(nn.Module):
    """``LayerNorm(E_tok[t] + E_seg[s])`` (then dropout): no position embeddings."""

    def __init__(self, config: BertConfig):
        super().__init__()
        H = config.hidden_size
        self.word_embeddings = nn.Embedding(config.vocab_size, H, padding_idx=config.pad_token_id)
        self.token_type_embeddings = (nn.Embedding(config.type_vocab_size, H)
                                      if config.type_vocab_size else None)
        self.LayerNorm = nn.LayerNorm(H, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None
                ) -> torch.Tensor:
        x = self.word_embeddings(input_ids)
        if self.token_type_embeddings is not None:
            if token_type_ids is None:
                token_type_ids = torch.zeros_like(input_ids)
            x = x + self.token_type_embeddings(token_type_ids)
        return self.dropout(self.LayerNorm(x))


class DebertaModel(nn.Module):
    """The DeBERTa encoder: ``model(input_ids, attention_mask, token_type_ids)`` -> BertOutput.

    Positions enter only through the relative table ``rel_embeddings`` (``2k x H``, one for
    all layers, layer-normalised before use): the model takes sequences of any length.
    ``terms`` (passed to every layer) keeps only some terms of ``Ã``; with ``("c2c",)``
    nothing encodes position (the table is then unused).
    """

    def __init__(self, config: BertConfig | None = None, k: int = 8,
                 terms: tuple[str, ...] = ATTENTION_TERMS):
        super().__init__()
        self.config = config = config or BertConfig()
        _check_k(k)
        self.terms = terms = _check_terms(terms)
        if config.embedding_size not in (None, config.hidden_size) or config.share_layers:
            raise ValueError("DebertaModel implements neither ALBERT's factorised embeddings "
                             "(embedding_size) nor its layer sharing (share_layers)")
        self.k = k
        self.embeddings = DebertaEmbeddings(config)
        self.rel_embeddings = nn.Embedding(2 * k, config.hidden_size)
        self.rel_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.layer = nn.ModuleList(DebertaLayer(config, k, terms)
                                   for _ in range(config.num_hidden_layers))
        self.pooler = BertPooler(config) if config.pooler else None
        self.apply(BertModel._init_weights)

    def relative_embeddings(self) -> torch.Tensor:
        """The shared table ``P = LayerNorm(E_rel)``, ``2k x H``."""
        return self.rel_norm(self.rel_embeddings.weight)

    @staticmethod
    def key_mask(x: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor | None:
        """``B x 1 x 1 x T`` boolean mask over the keys from a ``B x T`` 0/1 mask."""
        if attention_mask is None:
            return None
        if attention_mask.shape != x.shape[:2]:
            raise ValueError(f"attention_mask has shape {tuple(attention_mask.shape)}, "
                             f"input_ids {tuple(x.shape[:2])}: they must match")
        return attention_mask.bool()[:, None, None, :]

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None) -> BertOutput:
        if input_ids.dim() != 2:
            raise ValueError("input_ids must be batch x tokens, got shape "
                             f"{tuple(input_ids.shape)}; add a batch axis with input_ids[None]")
        return self.encode(self.embeddings(input_ids, token_type_ids), attention_mask)

    def encode(self, x: torch.Tensor, attention_mask: torch.Tensor | None = None
               ) -> BertOutput:
        """The layers (and pooler) on embeddings ``x`` (``B x T x H``)."""
        mask, p = self.key_mask(x, attention_mask), self.relative_embeddings()
        hidden, attentions = [x], []
        for layer in self.layer:
            x, weights = layer(x, p, mask)
            hidden.append(x)
            attentions.append(weights)
        pooled = self.pooler(x) if self.pooler is not None else None
        return BertOutput(last_hidden_state=x, hidden_states=tuple(hidden),
                          attentions=tuple(attentions), pooler_output=pooled)


class EnhancedMaskDecoder(nn.Module):
    """``Layer(H + E_pos)``: absolute positions, added to the encoder's output just before
    the MLM head, then one more :class:`DebertaLayer` (simplified: queries, keys and values
    all come from ``H + E_pos``; the paper takes keys and values from ``H``).

    ``layer=None`` builds a layer of its own (with ``terms``, default all three);
    ``layer=encoder.layer[-1]`` reuses that one (the paper's EMD: the only new parameters
    are ``E_pos``), and ``terms`` must then be ``None`` or the layer's.
    """

    def __init__(self, config: BertConfig, k: int, layer: DebertaLayer | None = None,
                 terms: tuple[str, ...] | None = None):
        super().__init__()
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        if layer is None:
            self.layer = DebertaLayer(config, k, ATTENTION_TERMS if terms is None else terms)
        else:
            if layer.k != k:
                raise ValueError(f"the shared layer has k={layer.k}, the EMD k={k}")
            if terms is not None and _check_terms(terms) != layer.terms:
                raise ValueError(f"terms {terms!r} differ from the shared layer's {layer.terms}")
            self.layer = layer

    def forward(self, hidden: torch.Tensor, p: torch.Tensor, mask: torch.Tensor | None = None
                ) -> torch.Tensor:
        T, n = hidden.shape[1], self.position_embeddings.num_embeddings
        if T > n:
            raise ValueError(f"a sequence of {T} tokens is longer than the {n} positions "
                             "this model has; truncate it (tokenizer(..., truncation=True))")
        positions = torch.arange(T, device=hidden.device)
        return self.layer(hidden + self.position_embeddings(positions)[None], p, mask)[0]


class DebertaForPreTraining(nn.Module):
    """A :class:`DebertaModel` with the (tied) masked-LM head, after the EMD unless
    ``enhanced_mask_decoder=False`` (then no absolute position anywhere), and the NSP head
    on the pooled ``[CLS]``: a drop-in for ``BertForPreTraining`` in ``pretrain`` and
    ``evaluate_pretraining``. Returns ``(mlm_logits, nsp_logits)``.

    ``terms`` goes to every layer (:class:`DebertaModel`). ``share_emd_layer=True``: the EMD
    runs the encoder's last layer again (``emd.layer is deberta.layer[-1]``) and adds only
    its ``max_position_embeddings x H`` table."""

    def __init__(self, config: BertConfig, k: int = 8, enhanced_mask_decoder: bool = True,
                 terms: tuple[str, ...] = ATTENTION_TERMS, share_emd_layer: bool = False):
        super().__init__()
        if not config.pooler:
            raise ValueError("the NSP head needs the pooler: config.pooler must be True")
        if share_emd_layer and not enhanced_mask_decoder:
            raise ValueError("share_emd_layer=True needs the EMD (enhanced_mask_decoder=True)")
        self.deberta = DebertaModel(config, k, terms)
        shared = self.deberta.layer[-1] if share_emd_layer else None
        self.emd = (EnhancedMaskDecoder(config, k, shared, terms) if enhanced_mask_decoder
                    else None)
        self.mlm = MaskedLMHead(config, self.deberta.embeddings.word_embeddings)
        self.nsp = nn.Linear(config.hidden_size, 2)
        # initialise what is new here, not the shared layer a second time
        emd = self.emd.position_embeddings if share_emd_layer else self.emd
        for module in [m for m in (emd, self.mlm, self.nsp) if m is not None]:
            module.apply(BertModel._init_weights)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None,
                attention_mask: torch.Tensor | None = None, predict: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """As ``BertForPreTraining``: with ``predict`` (``B x T`` boolean) the MLM logits
        are ``N x V``, at ``labels[predict]``; the EMD still attends over every token."""
        out = self.deberta(input_ids, attention_mask, token_type_ids)
        hidden = out.last_hidden_state
        if self.emd is not None:
            hidden = self.emd(hidden, self.deberta.relative_embeddings(),
                              self.deberta.key_mask(hidden, attention_mask))
        hidden = hidden if predict is None else hidden[predict]
        return self.mlm(hidden), self.nsp(out.pooler_output)


def parameter_budget_report(bert_model: nn.Module, deberta_model: nn.Module) -> dict[str, int]:
    """Numbers of parameters (tied ones once): in all, and those that encode positions
    (names with ``position`` or ``rel_``)."""
    def count(model: nn.Module, positional: bool = False) -> int:
        return sum(p.numel() for name, p in model.named_parameters()
                   if not positional or "position" in name or "rel_" in name)

    return {"bert": count(bert_model), "deberta": count(deberta_model),
            "bert positional": count(bert_model, True),
            "deberta positional": count(deberta_model, True),
            "difference": count(deberta_model) - count(bert_model)}


# ---- SiFT ---------------------------------------------------------------------------------

def _symmetric_kl(p_logits: torch.Tensor, q_logits: torch.Tensor) -> torch.Tensor:
    """``KL(p||q) + KL(q||p) = sum_c (p_c - q_c)(log p_c - log q_c)``, mean over the rest."""
    log_p, log_q = F.log_softmax(p_logits, -1), F.log_softmax(q_logits, -1)
    return ((log_p.exp() - log_q.exp()) * (log_p - log_q)).sum(-1).mean()


def _project(delta: torch.Tensor, epsilon: float) -> torch.Tensor:
    """Each token's vector (last axis) scaled into the L2 ball ``||δ_i||_2 <= epsilon``."""
    norm = delta.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    return delta * (epsilon / norm).clamp(max=1.0)


def sift_loss(forward_from_embeddings: Callable[[torch.Tensor], torch.Tensor],
              embeddings: torch.Tensor, logits: torch.Tensor, epsilon: float = 1e-2,
              step_size: float = 1e-3, generator: torch.Generator | None = None,
              return_delta: bool = False) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """SiFT's adversarial term: perturb the *normalised* embeddings where the output moves most.

    With ``ê = LayerNorm(e)`` (no learned parameters), ``f = forward_from_embeddings``,
    ``p = softmax(logits)`` (detached) and ``KL_s(p, q) = KL(p||q) + KL(q||p)``:

        δ_0 ~ N(0, ε²/H I), projected                 (random start, ||δ_0,i|| ~ ε)
        g   = ∇_δ KL_s(p, softmax(f(ê + δ_0)))
        δ*  = Π_ε(δ_0 + η g_i / ||g_i||_2)           (one normalised ascent step)
        L   = KL_s(p, softmax(f(ê + δ*)))

    ``Π_ε`` projects every token's vector onto the L2 ball of radius ``ε``. ``L`` is
    differentiable w.r.t. the model (``δ*`` is a constant). ``logits`` must be the clean
    output on the same normalised input, ``f(F.layer_norm(e, e.shape[-1:]))``; KL_s is
    summed over the classes (last axis) and averaged over the rest. In training mode
    dropout adds its own noise to every pass. ``return_delta=True`` also returns ``δ*``.
    """
    normed = F.layer_norm(embeddings, embeddings.shape[-1:])
    target = logits.detach()
    device = generator.device if generator is not None else embeddings.device
    noise = torch.randn(embeddings.shape, generator=generator, device=device,
                        dtype=embeddings.dtype).to(embeddings.device)
    delta = _project(noise * epsilon / math.sqrt(embeddings.shape[-1]), epsilon)
    delta.requires_grad_(True)
    with torch.enable_grad():
        inner = _symmetric_kl(target, forward_from_embeddings(normed.detach() + delta))
        (grad,) = torch.autograd.grad(inner, delta)
    step = grad / grad.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    delta = _project(delta.detach() + step_size * step, epsilon)
    loss = _symmetric_kl(target, forward_from_embeddings(normed + delta))
    return (loss, delta) if return_delta else loss


def embeddings_forward(classifier: nn.Module, input_ids: torch.Tensor,
                       attention_mask: torch.Tensor | None = None,
                       token_type_ids: torch.Tensor | None = None
                       ) -> tuple[torch.Tensor, Callable[[torch.Tensor], torch.Tensor]]:
    """``(e, f)`` for :func:`sift_loss` from a :class:`lmcourse.finetune.SequenceClassifier`
    over a ``BertModel`` or ``DebertaModel``: ``e = encoder.embeddings(...)`` (``B x T x H``)
    and ``f(e) = classifier logits``, so ``f(e)`` equals ``classifier(input_ids, ...)``."""
    encoder = classifier.encoder
    emb = encoder.embeddings(input_ids, token_type_ids)

    def forward(e: torch.Tensor) -> torch.Tensor:
        if isinstance(encoder, DebertaModel):
            out = encoder.encode(e, attention_mask)
        else:  # BertModel: the tail of BertModel.forward
            if encoder.embedding_projection is not None:
                e = encoder.embedding_projection(e)
            mask = None if attention_mask is None else attention_mask.bool()[:, None, None, :]
            hidden, _ = encoder.encoder(e, mask)
            pooled = encoder.pooler(hidden[-1]) if encoder.pooler is not None else None
            out = BertOutput(hidden[-1], tuple(hidden), (), pooled)
        h = out.last_hidden_state[:, 0] if classifier.pooling == "cls" else out.pooler_output
        return classifier.classifier(classifier.dropout(h))

    return emb, forward

"""The pre-training bench's models: the tiny BERT of each arm, DeBERTa matched to its size,
ELECTRA's generator, and the training FLOPs of a step (:mod:`bench_recipes` says what each
arm changes)."""

from __future__ import annotations

import math
from functools import cache

import torch

from lmcourse.course.reference.bench_recipes import BENCH, PREFIXES, _settings, corpus_of
from lmcourse.course.reference.pretraining_eval import MAX_LEN, _data
from lmcourse.models.compress import count_params


def _prefix(corpus: str) -> str:
    return PREFIXES[corpus]


def bench_config(corpus: str = "reviews", **changes):
    """The bench BERT's configuration for ``corpus``'s vocabulary; ``changes`` override
    single fields."""
    from lmcourse.models.bert import BertConfig

    base = _settings(_prefix(corpus) + "bench-mlm")
    settings = dict(vocab_size=len(_data(corpus).corpus), hidden_size=base["hidden_size"],
                    num_hidden_layers=base["num_hidden_layers"],
                    num_attention_heads=base["num_attention_heads"],
                    intermediate_size=base["intermediate_size"],
                    max_position_embeddings=MAX_LEN[corpus], hidden_dropout_prob=0.0,
                    attention_probs_dropout_prob=0.0)
    return BertConfig(**{**settings, **changes})



def _deberta(intermediate: int, terms, emd: str, corpus: str = "reviews", **shape):
    from lmcourse.models.deberta_model import DebertaForPreTraining

    return DebertaForPreTraining(bench_config(corpus, intermediate_size=intermediate, **shape),
                                 k=8,
                                 enhanced_mask_decoder=emd != "none", terms=tuple(terms),
                                 share_emd_layer=emd == "shares the last layer")


@cache
def deberta_intermediate(corpus: str = "reviews", shape: tuple[tuple[str, int], ...] = ()
                         ) -> int:
    """The feed-forward width that brings the full DeBERTa closest to the bench BERT's
    parameter count (its position projections cost two D x D matrices per layer);
    ``shape`` (``(field, value)`` pairs) sizes the BERT it matches, e.g. 4 layers of 256."""
    from lmcourse.models.pretraining import BertForPreTraining

    bert_shape = dict(shape)
    own_shape = {k: v for k, v in bert_shape.items() if k != "intermediate_size"}

    def count(config_or_width) -> int:
        with torch.device("meta"):  # sizes only: no weights drawn, the RNG is untouched
            if isinstance(config_or_width, int):
                return count_params(_deberta(config_or_width, ["c2c", "c2p", "p2c"],
                                             "shares the last layer", corpus, **own_shape))
            return count_params(BertForPreTraining(config_or_width))

    config = bench_config(corpus, **bert_shape)
    target = count(config)
    low, high = config.intermediate_size // 4, config.intermediate_size
    # the count is affine in the width, count(i) = base + per_unit * i (each layer's
    # feed-forward holds 2 D i + i + D), so the closest width is the solution rounded;
    # checked at the far end, and the scan of every width stands in if it ever is not
    base, per_unit = count(low), count(low + 1) - count(low)
    if per_unit <= 0 or count(high) != base + per_unit * (high - low):
        return min(range(low, high + 1), key=lambda i: abs(count(i) - target))
    best = low + (target - base) / per_unit
    candidates = sorted({min(max(w, low), high) for w in (math.floor(best), math.ceil(best))})
    return min(candidates, key=lambda i: abs(count(i) - target))  # a tie: the narrower


def build_model(name: str, recipe: dict | None = None) -> torch.nn.Module:
    """The arm's model with fresh weights (the caller seeds torch); ``recipe`` (default:
    the arm's own) may change its shape, as a development run that tries a width does."""
    from lmcourse.models.pretraining import BertForPreTraining
    from lmcourse.models.spanbert import SpanBertForPreTraining

    s, corpus = recipe or _settings(name), corpus_of(name)
    if s["model"] == "DebertaForPreTraining":
        shape = {k: s[k] for k in ("hidden_size", "num_hidden_layers", "num_attention_heads")
                 if k in s}
        matched = {**shape, **({"intermediate_size": s["matched_intermediate_size"]}
                               if "matched_intermediate_size" in s else {})}
        return _deberta(deberta_intermediate(corpus, tuple(sorted(matched.items()))),
                        s["terms"], s["emd"], corpus, **shape)
    changes = {k: s[k] for k in ("embedding_size", "share_layers", "hidden_size",
                                 "intermediate_size", "num_hidden_layers",
                                 "num_attention_heads") if k in s}
    if s["objective"] == "MLM + SBO":
        return SpanBertForPreTraining(bench_config(corpus, **changes), max_offset=10)
    return BertForPreTraining(bench_config(corpus, **changes))


def _generator_config(corpus: str = "reviews"):
    """ELECTRA's generator: ``generator_hidden`` wide, one head per 64 dimensions; where it
    shares the discriminator's embeddings, they keep the discriminator's width (``E = H_D``,
    projected to ``H_G`` as ALBERT's factorised embeddings are)."""
    s = _settings(_prefix(corpus) + "bench-electra")
    h = s["generator_hidden"]
    shared = s.get("embeddings", "").startswith("shared")
    return bench_config(corpus, hidden_size=h, intermediate_size=4 * h,
                        num_attention_heads=max(1, h // 64),
                        **({"embedding_size": bench_config(corpus).hidden_size} if shared
                           else {}))


def step_flops(name: str, recipe: dict | None = None) -> float:
    """Training FLOPs of one step, by the 6 x (multiply-adds) rule: every token passes the
    encoder's matrices; the masked 15% also pass the MLM head (H x H, then H x V); ELECTRA's
    discriminator head (H x H, H x 1) sees every token. Embedding lookups are free, and a
    shared layer costs its compute at every depth. ``recipe`` (default: the arm's own) may
    change the batch or the shape, as a scaled run does."""
    from lmcourse.models.bert import BertModel

    def encoder(config) -> int:
        with torch.device("meta"):
            return sum(p.numel() for p in BertModel(config).encoder.parameters())

    s, corpus = recipe or _settings(name), corpus_of(name)
    tokens = s["batch"] * s["max_len"]  # an upper bound: pairs are cut to max_len
    masked, V = 0.15 * tokens, len(_data(corpus).corpus)

    def mlm_model(config) -> float:
        H, E = config.hidden_size, config.embedding_size or config.hidden_size
        projection = E * H * tokens if E != H else 0  # factorised embeddings' E x H
        return 6 * (encoder(config) * tokens + projection + (H * E + E * V) * masked)

    if s["objective"] == "ELECTRA":
        H = bench_config(corpus).hidden_size
        return (mlm_model(_generator_config(corpus))
                + 6 * (encoder(bench_config(corpus)) + H * H + H) * tokens)
    shape = ("hidden_size", "intermediate_size", "num_hidden_layers")
    return mlm_model(bench_config(corpus, **{k: s[k] for k in shape
                                             if isinstance(s.get(k), int)}))


def electra_steps(corpus: str = "reviews") -> int:
    """ELECTRA's steps at bench-mlm's training FLOPs."""
    prefix = _prefix(corpus)
    return round(BENCH["steps"] * step_flops(f"{prefix}bench-mlm")
                 / step_flops(f"{prefix}bench-electra"))

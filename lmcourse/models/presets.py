"""Named model configurations, built with random weights and without any download.

The shapes are those of the released checkpoints (their Hugging Face ``config.json``
files): enough to count parameters, time a forward pass or start a distillation, not to
get their predictions. :func:`build` returns our :class:`~lmcourse.models.bert.BertModel`.
"""

from __future__ import annotations

from lmcourse.models.bert import BertConfig, BertModel

__all__ = ["PRESETS", "build"]

#: name -> the configuration of the released model (random weights here).
PRESETS: dict[str, BertConfig] = {
    # Devlin et al. (2019): L=12, H=768, A=12 and L=24, H=1024, A=16
    "bert-base-uncased": BertConfig(),
    "bert-large-uncased": BertConfig(hidden_size=1024, num_hidden_layers=24,
                                     num_attention_heads=16, intermediate_size=4096),
    # Sanh et al. (2019): half the layers, no token types, no pooler
    "distilbert-base-uncased": BertConfig(num_hidden_layers=6, type_vocab_size=0, pooler=False),
    # Lan et al. (2020): E=128 factorised embeddings, one layer shared 12 times, 30K vocabulary
    # (the release uses the tanh approximation of GELU; the shapes are what matter here)
    "albert-base-v2": BertConfig(vocab_size=30000, embedding_size=128, share_layers=True,
                                 hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0),
    # Liu et al. (2019): BERT-base with a 50K byte-level BPE vocabulary, one segment,
    # positions offset by the padding index (514 = 512 + 2)
    "roberta-base": BertConfig(vocab_size=50265, max_position_embeddings=514,
                               type_vocab_size=1, layer_norm_eps=1e-5, pad_token_id=1),
    # Jiao et al. (2020): TinyBERT, 4 layers of width 312
    "tinybert-4l-312d": BertConfig(hidden_size=312, num_hidden_layers=4,
                                   intermediate_size=1200),
}


def build(name: str) -> BertModel:
    """A randomly initialised model of the named configuration (see :data:`PRESETS`)."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
    return BertModel(PRESETS[name])

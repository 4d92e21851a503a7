"""Tokenizers from scratch: BPE, WordPiece, byte-level BPE, SentencePiece's ▁ idea and its
unigram language model."""

from lmcourse.tokenizers.bpe import (
    BPEStep,
    BPETokenizer,
    apply_bpe,
    count_words,
    pair_frequencies,
    train_bpe,
    train_bpe_steps,
)
from lmcourse.tokenizers.bytelevel import ByteLevelBPE, byte_decode, byte_encode, bytes_to_unicode
from lmcourse.tokenizers.metaspace import SPACE, detokenize, metaspace_words
from lmcourse.tokenizers.unigram import UnigramLM, train_unigram, viterbi
from lmcourse.tokenizers.wordpiece import WordPiece, likelihood_scores, train_wordpiece

__all__ = [
    "SPACE",
    "BPEStep",
    "BPETokenizer",
    "ByteLevelBPE",
    "UnigramLM",
    "WordPiece",
    "apply_bpe",
    "byte_decode",
    "byte_encode",
    "bytes_to_unicode",
    "count_words",
    "detokenize",
    "likelihood_scores",
    "metaspace_words",
    "pair_frequencies",
    "train_bpe",
    "train_bpe_steps",
    "train_unigram",
    "train_wordpiece",
    "viterbi",
]

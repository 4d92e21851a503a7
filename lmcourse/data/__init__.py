"""Data the course ships or finds in its dependencies: corpora, vocabularies, LM batches."""

from lmcourse.data.batching import lm_batches, random_partition, sequential_partition
from lmcourse.data.corpora import (
    CORPORA,
    corpus_path,
    document_split,
    load_corpus,
    load_polarity,
    tokenize,
)
from lmcourse.data.vocab import Vocab
from lmcourse.data.words import WordCorpus

__all__ = [
    "CORPORA",
    "Vocab",
    "WordCorpus",
    "corpus_path",
    "document_split",
    "lm_batches",
    "load_corpus",
    "load_polarity",
    "random_partition",
    "sequential_partition",
    "tokenize",
]

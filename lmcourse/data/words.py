"""A corpus as arrays of word ids, the input of every word-embedding method."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["WordCorpus"]

@dataclass
class WordCorpus:
    """Documents as arrays of word ids; words seen fewer than ``min_count`` times are dropped.

    ``words[i]`` is the word with id ``i`` (most frequent first, ties alphabetical) and
    ``counts[i]`` how often it occurs. Dropping rare words *before* windowing, rather than
    mapping them to an unknown token, is what word2vec and gensim do.
    """

    words: list[str]
    counts: np.ndarray
    docs: list[np.ndarray]
    index: dict[str, int] = field(repr=False)

    @classmethod
    def from_documents(cls, documents: Iterable[Sequence[str]], min_count: int = 1
                       ) -> WordCorpus:
        documents = [list(d) for d in documents]
        counts = Counter(w for d in documents for w in d)
        kept = sorted((w for w, c in counts.items() if c >= min_count),
                      key=lambda w: (-counts[w], w))
        index = {w: i for i, w in enumerate(kept)}
        docs = [np.array([index[w] for w in d if w in index], dtype=np.int64)
                for d in documents]
        return cls(kept, np.array([counts[w] for w in kept], dtype=np.int64), docs, index)

    def __len__(self) -> int:
        return len(self.words)

    @property
    def num_tokens(self) -> int:
        return int(sum(len(d) for d in self.docs))


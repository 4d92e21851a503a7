"""Documents as sentences of WordPiece ids: the input of BERT's pre-training (chapter 09).

Next-sentence prediction needs real consecutive sentences, so each document of a corpus
is split into sentences (at ``.``, ``!`` or ``?`` followed by a space) and each sentence
is tokenized with a BERT tokenizer. A real BERT vocabulary has 30,522 pieces, most of
which never occur in a small corpus; a tiny model trained from scratch gets a *compact*
vocabulary instead: the special tokens, then every piece the corpus uses, renumbered
from 0. ``decode`` maps compact ids back to the pieces.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lmcourse.data.goodreads import Review, load_reviews, sample_path, split_reviews

__all__ = ["SPECIALS", "CompactTokenizer", "ReviewSentences", "SentenceCorpus",
           "review_sentences", "split_sentences"]

#: The special pieces, in the order of their compact ids 0..4.
SPECIALS = ("[PAD]", "[CLS]", "[SEP]", "[MASK]", "[UNK]")

_BOUNDARY = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def split_sentences(text: str, min_words: int = 3) -> list[str]:
    """Sentences of ``text``: split after ``.``, ``!`` or ``?`` when a space and a capital
    letter (or a digit or quote) follow; fragments of fewer than ``min_words`` words are
    dropped."""
    return [s.strip() for s in _BOUNDARY.split(text) if len(s.split()) >= min_words]


@dataclass
class SentenceCorpus:
    """``documents[d][s]`` is sentence ``s`` of document ``d`` as compact ids;
    ``pieces[i]`` is the WordPiece of compact id ``i`` (the :data:`SPECIALS` first)."""

    documents: list[list[list[int]]]
    pieces: list[str]

    @classmethod
    def from_texts(cls, texts: Sequence[str], tokenize: Callable[[str], list[str]],
                   min_words: int = 3) -> SentenceCorpus:
        """Split every text into sentences (:func:`split_sentences`) and tokenize them."""
        return cls.from_sentences([split_sentences(t, min_words) for t in texts], tokenize)

    @classmethod
    def from_sentences(cls, documents: Sequence[Sequence[str]],
                       tokenize: Callable[[str], list[str]]) -> SentenceCorpus:
        """Tokenize documents already split into sentences with ``tokenize`` (e.g.
        ``lmcourse.tokenizers.wordpiece.WordPiece(vocab).tokenize`` or a Hugging Face
        tokenizer's ``tokenize``); pieces get compact ids in order of first use."""
        index = {p: i for i, p in enumerate(SPECIALS)}
        pieces = list(SPECIALS)
        out = []
        for sentences in documents:
            doc = []
            for sentence in sentences:
                ids = []
                for piece in tokenize(sentence):
                    if piece not in index:
                        index[piece] = len(pieces)
                        pieces.append(piece)
                    ids.append(index[piece])
                if ids:
                    doc.append(ids)
            if doc:
                out.append(doc)
        if not out:
            raise ValueError("no sentence found: are the texts empty, or all shorter than "
                             "the minimum number of words?")
        return cls(out, pieces)

    def __len__(self) -> int:
        return len(self.pieces)

    @property
    def pad_id(self) -> int:
        return SPECIALS.index("[PAD]")

    @property
    def cls_id(self) -> int:
        return SPECIALS.index("[CLS]")

    @property
    def sep_id(self) -> int:
        return SPECIALS.index("[SEP]")

    @property
    def mask_id(self) -> int:
        return SPECIALS.index("[MASK]")

    @property
    def special_ids(self) -> list[int]:
        return list(range(len(SPECIALS)))

    def split(self, fraction: float = 0.9) -> tuple[SentenceCorpus, SentenceCorpus]:
        """The first ``fraction`` of the documents and the rest (same vocabulary)."""
        n = max(1, min(len(self.documents) - 1, round(fraction * len(self.documents))))
        return (SentenceCorpus(self.documents[:n], self.pieces),
                SentenceCorpus(self.documents[n:], self.pieces))

    def sentences(self) -> list[list[int]]:
        return [s for doc in self.documents for s in doc]

    def num_tokens(self) -> int:
        return sum(len(s) for s in self.sentences())

    def decode(self, ids: Sequence[int]) -> list[str]:
        return [self.pieces[int(i)] for i in ids]

    def tokenizer(self, tokenize: Callable[[str], list[str]]) -> CompactTokenizer:
        """``tokenize`` (the WordPiece the corpus was built with) in this compact vocabulary,
        for tools that take a tokenizer (``lmcourse.viz.masking_widget``)."""
        return CompactTokenizer(tokenize, self.pieces)


class CompactTokenizer:
    """Pieces from ``tokenize``, any piece outside the compact vocabulary ``pieces`` read as
    ``[UNK]`` (a model trained on the corpus has no row for it); ``vocab`` maps each piece
    to its compact id."""

    def __init__(self, tokenize: Callable[[str], list[str]], pieces: Sequence[str]):
        self._tokenize, self.pieces = tokenize, list(pieces)
        self.vocab = {piece: i for i, piece in enumerate(self.pieces)}

    def tokenize(self, text: str) -> list[str]:
        return [p if p in self.vocab else "[UNK]" for p in self._tokenize(text)]


@dataclass
class ReviewSentences:
    """The course's pre-training corpus (chapters 09-11): every Goodreads review a document
    of its sentences; ``train`` and ``test`` share ``corpus``'s compact vocabulary."""

    corpus: SentenceCorpus
    train: SentenceCorpus
    test: SentenceCorpus
    train_reviews: list[Review]
    test_reviews: list[Review]


def review_sentences(tokenize: Callable[[str], list[str]],
                     path: str | os.PathLike | None = None) -> ReviewSentences:
    """Load the reviews at ``path`` (default: the course sample), split them by review id
    (``split_reviews``) and tokenize the train and test reviews' sentences with ``tokenize``
    into one compact vocabulary. The validation reviews are left out, as in lab 03."""
    split = split_reviews(load_reviews(sample_path() if path is None else path),
                          by="review_id")
    def has_text(review: Review) -> bool:
        return any(text.strip() for _, text in review.sentences)

    train_reviews = [r for r in split.train if has_text(r)]
    test_reviews = [r for r in split.test if has_text(r)]
    if not train_reviews or not test_reviews:
        raise ValueError(f"{path}: too few reviews to hold out a test split; pass the course "
                         "sample (lmcourse.data.goodreads.sample_path()) or a larger file")
    corpus = SentenceCorpus.from_sentences(
        [[text for _, text in r.sentences] for r in [*train_reviews, *test_reviews]], tokenize)
    n_train = len(train_reviews)
    if len(corpus.documents) != n_train + len(test_reviews):
        raise ValueError("a review tokenized to no pieces at all; check that `tokenize` "
                         "returns word pieces for ordinary English text")
    return ReviewSentences(corpus, SentenceCorpus(corpus.documents[:n_train], corpus.pieces),
                           SentenceCorpus(corpus.documents[n_train:], corpus.pieces),
                           train_reviews, test_reviews)


@functools.cache
def minilm_review_corpus() -> ReviewSentences:
    """The course sample's review sentences as all-MiniLM-L6-v2's WordPiece pieces, in one
    compact vocabulary, split into training and test reviews by review id: the corpus the
    tiny BERTs are pre-trained and scored on. Built once per process."""
    from lmcourse.pretrained import load_hf_tokenizer

    return review_sentences(load_hf_tokenizer().tokenize)

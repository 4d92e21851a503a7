"""The Wikipedia excerpt in a WordPiece vocabulary learned from it, as documents of
consecutive sentences: real prose to pre-train on.

Chapter 09's corpus is generated: its consecutive sentences are drawn independently, so
next-sentence and sentence-order prediction have nothing to learn from it. Here every
article of the excerpt (:mod:`lmcourse.data.wiki`, split by article into train / tuning /
held-out) is a document, and each line of its cleaned text is split into sentences
(:func:`lmcourse.data.sentences.split_sentences`, at least ``MIN_WORDS`` words, so
headings and caption fragments drop out) in the article's order: two consecutive sentences
really follow each other.

The vocabulary is learned from the training articles alone
(:func:`lmcourse.tokenizers.wordpiece.train_wordpiece`, uncased, ``VOCAB_SIZE`` pieces
including the specials), then compacted as chapter 09's is (the pieces the corpus uses,
renumbered after :data:`lmcourse.data.sentences.SPECIALS`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import cache

from lmcourse.data.sentences import SentenceCorpus, split_sentences
from lmcourse.data.wiki import PARTS, wiki_articles, wiki_split
from lmcourse.tokenizers.wordpiece import WordPiece, train_wordpiece

__all__ = ["MIN_WORDS", "VOCAB_SIZE", "ArticleSentences", "article_sentences", "wiki_sentences",
           "wiki_wordpiece"]

VOCAB_SIZE = 2000
MIN_WORDS = 4


def article_sentences(part: str) -> list[list[str]]:
    """The sentences of each article of one part (``"train"``, ``"tuning"``,
    ``"held_out"``), in the dump's order, each article's in its own order."""
    if part not in PARTS:
        raise ValueError(f"part must be one of {PARTS}, got {part!r}")
    titles = set(wiki_split()[part])
    return [[s for line in text.splitlines() for s in split_sentences(line, MIN_WORDS)]
            for title, text in wiki_articles() if title in titles]


def word_counts(documents: list[list[str]]) -> Counter:
    """How often each word occurs, after WordPiece's normalisation and pre-tokenisation."""
    reader = WordPiece(["[UNK]"])
    return Counter(word for doc in documents for sentence in doc
                   for word in reader.pre_tokenize(reader.normalize(sentence)))


@cache
def wiki_wordpiece(vocab_size: int = VOCAB_SIZE) -> WordPiece:
    """A WordPiece tokenizer whose vocabulary is learned from the training articles."""
    return WordPiece(train_wordpiece(word_counts(article_sentences("train")), vocab_size))


@dataclass
class ArticleSentences:
    """The excerpt's sentences as compact WordPiece ids: ``corpus`` holds every part's
    articles (train, then tuning, then held-out); ``train``, ``tuning`` and ``test`` (the
    held-out articles) share its vocabulary. ``tokenizer`` is the learned WordPiece."""

    corpus: SentenceCorpus
    train: SentenceCorpus
    tuning: SentenceCorpus
    test: SentenceCorpus
    tokenizer: WordPiece


@cache
def wiki_sentences(vocab_size: int = VOCAB_SIZE) -> ArticleSentences:
    """The excerpt's articles as documents of consecutive sentences, tokenized with the
    WordPiece learned from the training articles. Built once per process."""
    tokenizer = wiki_wordpiece(vocab_size)
    parts = {part: article_sentences(part) for part in PARTS}
    corpus = SentenceCorpus.from_sentences([doc for part in PARTS for doc in parts[part]],
                                           tokenizer.tokenize)
    sizes = [len([d for d in parts[part] if d]) for part in PARTS]
    if sum(sizes) != len(corpus.documents):
        raise ValueError("an article tokenized to no pieces at all: is the WordPiece "
                         "vocabulary missing the excerpt's characters?")
    cuts = [0, sizes[0], sizes[0] + sizes[1], sum(sizes)]
    train, tuning, test = (SentenceCorpus(corpus.documents[a:b], corpus.pieces)
                           for a, b in zip(cuts[:-1], cuts[1:], strict=True))
    return ArticleSentences(corpus, train, tuning, test, tokenizer)

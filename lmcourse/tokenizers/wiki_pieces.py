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
(:func:`lmcourse.tokenizers.wordpiece.train_wordpiece`, uncased), then compacted as chapter
09's is (the pieces the corpus uses, renumbered after
:data:`lmcourse.data.sentences.SPECIALS`). Two vocabularies are learned:

- ``"likelihood"``: chapter 08's score f(a, b) / (f(a) f(b)), ``VOCAB_SIZE`` = 2,000 pieces.
  On this small corpus it spends its budget on pairs whose parts are rare together (the
  letters of Armenian and Greek names, digits of years) and never learns "the": held-out
  prose takes about 4.9 pieces per word. The first wiki bench pre-trained on it.
- ``"frequency"``: the most frequent pair first, f(a, b), which is how the vocabularies
  released with BERT behave. Its size is chosen on the tuning articles and Rotten Tomatoes'
  tuning films (:func:`choose_pretraining_size`): the smallest of ``PRETRAINING_SIZES``
  whose worse tuning figure is at most ``PIECES_PER_WORD_AIM - TUNING_MARGIN``. The
  vocabulary it learns is committed (``data/wiki_wordpiece_8000.txt``; a test re-learns it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from lmcourse.data.sentences import SentenceCorpus, split_sentences
from lmcourse.data.wiki import PARTS, wiki_articles, wiki_split
from lmcourse.tokenizers.wordpiece import WordPiece, train_wordpiece

__all__ = ["MIN_WORDS", "PIECES_PER_WORD_AIM", "PRETRAINING_SIZES", "PRETRAINING_VOCAB",
           "TUNING_MARGIN", "VOCABULARIES", "VOCAB_SIZE", "ArticleSentences",
           "article_sentences", "choose_pretraining_size",
           "pieces_per_word", "pretraining_wordpiece", "wiki_sentences", "wiki_wordpiece"]

VOCAB_SIZE = 2000
MIN_WORDS = 4
VOCABULARIES = ("likelihood", "frequency")
PRETRAINING_SIZES = (2000, 4000, 6000, 8000)
PIECES_PER_WORD_AIM = 1.8  # BERT's own vocabulary (MiniLM's) needs about 1.4 on this text
TUNING_MARGIN = 0.1  # held-out articles may need this much more than the tuning ones
PRETRAINING_VOCAB = Path(__file__).resolve().parents[2] / "data" / "wiki_wordpiece_8000.txt"


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
def wiki_wordpiece(vocab_size: int = VOCAB_SIZE, score: str = "likelihood") -> WordPiece:
    """A WordPiece tokenizer whose vocabulary is learned from the training articles with
    ``score`` (``"likelihood"``, f(a, b) / (f(a) f(b)), or ``"frequency"``, f(a, b); about
    25 s for 8,000 frequency pieces: :func:`pretraining_wordpiece` reads the committed one)."""
    return WordPiece(train_wordpiece(word_counts(article_sentences("train")), vocab_size,
                                     score=score))


def pieces_per_word(tokenizer: WordPiece, texts: Iterable[str]) -> float:
    """Pieces per word: WordPiece pieces over whitespace-separated words (a word with its
    punctuation attached counts once), summed over ``texts``."""
    pieces = words = 0
    for text in texts:
        pieces += len(tokenizer.tokenize(text))
        words += len(text.split())
    if not words:
        raise ValueError("no words to measure: texts are empty")
    return pieces / words


def unknown_pieces(tokenizer: WordPiece, texts: Iterable[str]) -> tuple[int, int]:
    """``(unknown, pieces)``: how many of the pieces of ``texts`` are the unknown token (a
    word with a character the vocabulary never saw becomes one whole ``[UNK]``)."""
    pieces = [piece for text in texts for piece in tokenizer.tokenize(text)]
    return sum(piece == tokenizer.unk_token for piece in pieces), len(pieces)


def _tuning_texts() -> dict[str, list[str]]:
    from lmcourse.data.rotten_tomatoes import load_rotten_tomatoes

    return {"wiki tuning articles": [s for doc in article_sentences("tuning") for s in doc],
            "Rotten Tomatoes tuning films": [r.text for r in load_rotten_tomatoes("tuning")]}


def choose_pretraining_size(sizes: Iterable[int] = PRETRAINING_SIZES
                            ) -> tuple[int | None, dict[int, dict[str, float]]]:
    """The pre-training vocabulary's size, chosen on tuning text only: for each size, the
    pieces per word of the frequency vocabulary on the tuning articles and on Rotten
    Tomatoes' tuning films; the smallest size whose worse figure is at most
    ``PIECES_PER_WORD_AIM - TUNING_MARGIN`` (None if none is). Trains every size (~1 min)."""
    texts = _tuning_texts()
    figures = {size: {name: pieces_per_word(wiki_wordpiece(size, "frequency"), t)
                      for name, t in texts.items()} for size in sorted(sizes)}
    fits = [size for size, f in figures.items()
            if max(f.values()) <= PIECES_PER_WORD_AIM - TUNING_MARGIN]
    return (fits[0] if fits else None), figures


@cache
def pretraining_wordpiece() -> WordPiece:
    """The pre-training vocabulary: frequency merges, 8,000 pieces, learned from the
    training articles (``data/wiki_wordpiece_8000.txt``, one piece per line)."""
    try:
        pieces = PRETRAINING_VOCAB.read_text(encoding="utf-8").split("\n")
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{PRETRAINING_VOCAB} is missing: it is committed with the course; restore it "
            "with `git checkout data/wiki_wordpiece_8000.txt`, or re-learn it with "
            "`python -m tools.pretraining_vocab`") from None
    return WordPiece([p for p in pieces if p])


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
def wiki_sentences(vocabulary: str = "likelihood") -> ArticleSentences:
    """The excerpt's articles as documents of consecutive sentences, tokenized with a
    WordPiece learned from the training articles: ``"likelihood"`` (2,000 pieces, the
    first bench's) or ``"frequency"`` (the pre-training vocabulary). Built once per process."""
    if vocabulary not in VOCABULARIES:
        raise ValueError(f"vocabulary must be one of {VOCABULARIES}, got {vocabulary!r}")
    tokenizer = wiki_wordpiece() if vocabulary == "likelihood" else pretraining_wordpiece()
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

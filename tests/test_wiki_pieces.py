"""The Wikipedia excerpt as documents of consecutive sentences in a learned WordPiece
vocabulary (lmcourse.tokenizers.wiki_pieces): the real-text pre-training corpus."""

from __future__ import annotations

import pytest

from lmcourse.data.sentences import SPECIALS
from lmcourse.data.wiki import wiki_articles, wiki_split
from lmcourse.tokenizers import wiki_pieces as ws


@pytest.fixture(scope="module")
def data():
    return ws.wiki_sentences()


def test_articles_stay_whole_and_in_their_part(data):
    sizes = {part: len(ws.article_sentences(part)) for part in ("train", "tuning", "held_out")}
    assert sizes == {part: len(wiki_split()[part]) for part in sizes}
    assert (len(data.train.documents), len(data.tuning.documents), len(data.test.documents)) \
        == (sizes["train"], sizes["tuning"], sizes["held_out"])
    assert data.train.pieces is data.corpus.pieces is data.test.pieces


def test_consecutive_sentences_follow_each_other_in_the_article():
    title = wiki_split()["train"][0]
    text = dict(wiki_articles())[title]
    first = ws.article_sentences("train")[
        [t for t, _ in wiki_articles() if t in set(wiki_split()["train"])].index(title)]
    assert len(first) > 10 and all(len(s.split()) >= ws.MIN_WORDS for s in first)
    at = 0
    for sentence in first:  # each found after the one before it: the article's order
        at = text.index(sentence, at) + len(sentence)


def test_the_vocabulary_is_learned_from_the_training_articles_alone(data):
    assert len(data.tokenizer.vocab) == ws.VOCAB_SIZE
    assert data.corpus.pieces[:len(SPECIALS)] == list(SPECIALS)
    train_words = ws.word_counts(ws.article_sentences("train"))
    held_out_only = set(ws.word_counts(ws.article_sentences("held_out"))) - set(train_words)
    assert held_out_only  # words the vocabulary was not learned from ...
    unk = data.corpus.pieces.index("[UNK]")
    train_ids = [i for s in data.train.sentences() for i in s]
    assert train_ids.count(unk) == 0  # ... while every training word is covered


def test_the_corpus_is_big_enough_to_pre_train_on(data):
    assert len(data.train.sentences()) > 15_000
    assert data.train.num_tokens() > 400_000

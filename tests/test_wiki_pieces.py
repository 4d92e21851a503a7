"""The Wikipedia excerpt as documents of consecutive sentences in a learned WordPiece
vocabulary (lmcourse.tokenizers.wiki_pieces): the real-text pre-training corpus."""

from __future__ import annotations

import pytest

from lmcourse.data.sentences import SPECIALS
from lmcourse.data.wiki import wiki_articles, wiki_split
from lmcourse.tokenizers import wiki_pieces as ws
from lmcourse.tokenizers.wordpiece import WordPiece


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


def _held_out_texts():
    from lmcourse.data.rotten_tomatoes import load_rotten_tomatoes

    return {"wiki held-out articles": [s for d in ws.article_sentences("held_out") for s in d],
            "Rotten Tomatoes test films": [r.text for r in load_rotten_tomatoes("test")]}


def test_the_pretraining_vocabulary_splits_held_out_prose_into_few_pieces():
    frequency, likelihood = ws.pretraining_wordpiece(), ws.wiki_wordpiece()
    for name, texts in _held_out_texts().items():
        ours = ws.pieces_per_word(frequency, texts)
        assert ours <= ws.PIECES_PER_WORD_AIM, f"{name}: {ours:.2f} pieces per word"
        assert ws.pieces_per_word(likelihood, texts) > 2 * ours  # the 2,000-piece score's
    assert {"the", "and", "was", "which", "film"} <= set(frequency.vocab)
    assert not {"the", "and", "was"} & set(likelihood.vocab)
    assert ws.wiki_sentences("frequency").tokenizer is frequency


def test_the_frequency_trainer_agrees_with_the_tokenizers_library():
    """The same frequency merges as Hugging Face's WordPieceTrainer (BPE with ## pieces):
    the trainers break ties differently, so the vocabularies agree almost, not exactly."""
    from tokenizers import Tokenizer, models, trainers

    counts = ws.word_counts(ws.article_sentences("train"))
    hf = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    ours = ws.wiki_wordpiece(2000, "frequency")
    hf.train_from_iterator(([w] * c for w, c in counts.items()), trainer=trainers.WordPieceTrainer(
        vocab_size=2000, min_frequency=2, special_tokens=list(ours.vocab)[:5],
        limit_alphabet=10**6, show_progress=False))
    theirs = WordPiece(sorted(hf.get_vocab(), key=hf.get_vocab().get))
    assert len(set(ours.vocab) & set(theirs.vocab)) > 0.95 * 2000
    tuning = [s for d in ws.article_sentences("tuning") for s in d]
    assert ws.pieces_per_word(ours, tuning) == pytest.approx(
        ws.pieces_per_word(theirs, tuning), abs=0.03)


@pytest.mark.slow
def test_the_committed_vocabulary_is_the_size_the_tuning_text_chooses():
    chosen, figures = ws.choose_pretraining_size()
    assert chosen is not None and f"_{chosen}." in ws.PRETRAINING_VOCAB.name
    assert max(figures[chosen].values()) <= ws.PIECES_PER_WORD_AIM - ws.TUNING_MARGIN
    smaller = [s for s in figures if s < chosen]
    assert all(max(figures[s].values()) > ws.PIECES_PER_WORD_AIM - ws.TUNING_MARGIN
               for s in smaller)
    learned = ws.wiki_wordpiece(chosen, "frequency")
    assert list(learned.vocab) == list(ws.pretraining_wordpiece().vocab)


def test_a_missing_vocabulary_file_says_how_to_restore_it(monkeypatch, tmp_path):
    monkeypatch.setattr(ws, "PRETRAINING_VOCAB", tmp_path / "wiki_wordpiece_8000.txt")
    ws.pretraining_wordpiece.cache_clear()
    try:
        with pytest.raises(FileNotFoundError, match="git checkout"):
            ws.pretraining_wordpiece()
    finally:
        ws.pretraining_wordpiece.cache_clear()
    with pytest.raises(ValueError, match="vocabulary must be one of"):
        ws.wiki_sentences("bpe")


def test_unknown_pieces_counts_the_words_the_vocabulary_cannot_spell():
    wp = WordPiece(["[UNK]", "a", "b", "##b"])
    assert ws.unknown_pieces(wp, ["ab b", "c ab"]) == (1, 6)  # "c" is one whole [UNK]
    assert ws.unknown_pieces(wp, ["ab"]) == (0, 2)

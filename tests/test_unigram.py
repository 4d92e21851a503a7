"""The unigram language-model tokenizer: Viterbi and forward-backward against brute force,
EM, pruning, unknown characters, SentencePiece's own segmentation, bad input."""

from __future__ import annotations

import io
import itertools
import math
import random

import pytest

from lmcourse.data import load_corpus
from lmcourse.tokenizers import count_words, detokenize, metaspace_words
from lmcourse.tokenizers.unigram import (
    UnigramLM,
    corpus_log_likelihood,
    em_step,
    forward_backward,
    pruning_losses,
    seed_vocabulary,
    train_unigram,
    viterbi,
)

SPACE = "\u2581"


def segmentations(word):
    """Every way to cut ``word`` into consecutive pieces (2^(n-1) of them)."""
    for cuts in itertools.product((False, True), repeat=len(word) - 1):
        pieces, start = [], 0
        for k, cut in enumerate(cuts, 1):
            if cut:
                pieces.append(word[start:k])
                start = k
        yield pieces + [word[start:]]


def random_vocab(rng, alphabet="ab▁c", n_pieces=12, max_len=4):
    pieces = set(alphabet)
    while len(pieces) < len(alphabet) + n_pieces:
        pieces.add("".join(rng.choice(alphabet) for _ in range(rng.randint(2, max_len))))
    return {p: -rng.uniform(0.5, 6.0) for p in pieces}


def score(pieces, log_probs):
    return sum(log_probs[p] for p in pieces)


def test_viterbi_is_the_best_of_all_segmentations():
    rng = random.Random(0)
    for _ in range(200):
        log_probs = random_vocab(rng)
        word = "".join(rng.choice("ab▁c") for _ in range(rng.randint(1, 9)))
        ranked = sorted((score(s, log_probs), s) for s in segmentations(word)
                        if all(p in log_probs for p in s))
        best_score, best = ranked[-1]
        ours = viterbi(word, log_probs)
        assert "".join(ours) == word
        assert score(ours, log_probs) == pytest.approx(best_score, abs=1e-12)
        if len(ranked) == 1 or best_score - ranked[-2][0] > 1e-9:
            assert ours == best


def test_viterbi_ties_go_to_the_longest_last_piece():
    assert viterbi("ab", {"a": -1.0, "b": -1.0, "ab": -2.0}) == ["ab"]
    assert viterbi("abc", {"a": -1.0, "b": -1.0, "c": -1.0, "bc": -2.0}) == ["a", "bc"]


def test_forward_backward_equals_brute_force():
    rng = random.Random(1)
    for _ in range(100):
        log_probs = random_vocab(rng)
        word = "".join(rng.choice("ab▁c") for _ in range(rng.randint(1, 8)))
        probs = {tuple(s): math.exp(score(s, log_probs)) for s in segmentations(word)
                 if all(p in log_probs for p in s)}
        z = sum(probs.values())
        expected = {}
        for s, p in probs.items():
            for piece in s:
                expected[piece] = expected.get(piece, 0.0) + p / z
        log_z, counts = forward_backward(word, log_probs)
        assert log_z == pytest.approx(math.log(z), rel=1e-12)
        assert {k: v for k, v in counts.items()} == pytest.approx(expected, rel=1e-9)


def test_every_string_segments_even_with_unknown_characters():
    model = UnigramLM({"▁the": -2.0, "▁": -3.0, "t": -4.0, "h": -4.0, "e": -4.0, "he": -3.5})
    for text in ["the", "thé 東京 🙂", "  the  ", "ẞ", "the\tend"]:
        pieces = model.tokenize(text)
        assert detokenize(pieces) == text
        assert all(p in model.log_probs or len(p) == 1 for p in pieces)
    assert model.segment("▁x") == ["▁", "x"]
    assert model.unk == -4.0 - 10.0  # SentencePiece's rule: min log p - 10


@pytest.fixture(scope="module")
def small_counts():
    return count_words(load_corpus("lee")[:12], metaspace_words)


def test_em_increases_the_corpus_likelihood(small_counts):
    log_probs = seed_vocabulary(small_counts, max_len=8)
    assert set("".join(small_counts)) <= set(log_probs)
    assert sum(map(math.exp, log_probs.values())) == pytest.approx(1.0)
    likelihoods = []
    for _ in range(4):
        log_probs, loglik, expected = em_step(small_counts, log_probs)
        likelihoods.append(loglik)
        assert sum(map(math.exp, log_probs.values())) == pytest.approx(1.0)
    likelihoods.append(corpus_log_likelihood(small_counts, log_probs))
    assert all(b > a for a, b in itertools.pairwise(likelihoods)), likelihoods
    # expected counts add up to the expected number of pieces, at least one per word
    assert sum(expected.values()) >= sum(small_counts.values())


def test_pruning_reaches_the_target_and_keeps_every_character(small_counts):
    chars = set("".join(small_counts))
    target = len(chars) + 150
    log_probs, history = train_unigram(small_counts, target, max_len=8)
    assert len(log_probs) == target
    assert chars <= set(log_probs)
    assert sum(map(math.exp, log_probs.values())) == pytest.approx(1.0)
    sizes = [size for size, _ in history]
    assert sizes == sorted(sizes, reverse=True) and sizes[0] > 2 * target
    # a trained vocabulary compresses better than characters: fewer pieces per word
    model = UnigramLM(log_probs)
    n_pieces = sum(len(model.segment(w)) * c for w, c in small_counts.items())
    assert n_pieces < 0.6 * sum(len(w) * c for w, c in small_counts.items())


def test_pruning_loss_is_the_price_of_the_best_alternative():
    log_probs = {"a": math.log(0.2), "b": math.log(0.2), "ab": math.log(0.5),
                 "ba": math.log(0.01), "abb": math.log(0.09)}
    losses = pruning_losses(log_probs, {"ab": 10.0, "ba": 3.0, "abb": 2.0})
    assert set(losses) == {"ab", "ba", "abb"}  # single characters are never candidates
    assert losses["ab"] == pytest.approx(10 * (math.log(0.5) - 2 * math.log(0.2)))
    assert losses["ba"] < 0  # b + a is more probable than ba: removing ba gains
    assert losses["abb"] == pytest.approx(2 * (math.log(0.09) - math.log(0.5 * 0.2)))


def fuse_unknowns(pieces, vocab):
    """SentencePiece writes a run of unknown characters as one piece; we keep them apart."""
    out = []
    for p in pieces:
        if out and p not in vocab and out[-1] not in vocab:
            out[-1] += p
        else:
            out.append(p)
    return out


def test_our_viterbi_with_sentencepiece_scores_reproduces_sentencepiece():
    spm = pytest.importorskip("sentencepiece")
    docs = load_corpus("lee")
    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(docs[:60]), model_writer=buffer, vocab_size=600,
        model_type="unigram", minloglevel=2, bos_id=-1, eos_id=-1, character_coverage=1.0,
        normalization_rule_name="identity", max_sentence_length=1 << 16, num_threads=1)
    sp = spm.SentencePieceProcessor(model_proto=buffer.getvalue())
    scores = {sp.id_to_piece(i): sp.get_score(i) for i in range(sp.get_piece_size())
              if not sp.is_unknown(i)}
    model = UnigramLM(scores)
    words = sorted({w for d in docs[200:] for w in d.split()}) + ["naïve", "東京x", "Zürich"]
    for word in words:
        theirs = sp.encode(word, out_type=str)
        assert fuse_unknowns(model.segment(SPACE + word), scores) == theirs, word


def test_bad_input_is_rejected_with_a_clear_error():
    vocab = {"a": -1.0, "b": -1.0}
    with pytest.raises(ValueError, match="non-empty string"):
        viterbi("", vocab)
    with pytest.raises(ValueError, match="non-empty string"):
        viterbi(None, vocab)
    with pytest.raises(ValueError, match="vocabulary is empty"):
        viterbi("ab", {})
    with pytest.raises(ValueError, match="log_probs"):
        UnigramLM({})
    with pytest.raises(ValueError, match="finite"):
        UnigramLM({"a": float("nan")})
    with pytest.raises(TypeError, match="str"):
        UnigramLM(vocab).tokenize(["a", "b"])
    with pytest.raises(ValueError, match="characters"):
        forward_backward("abc", vocab)
    with pytest.raises(ValueError, match=">= the 3 characters"):
        train_unigram({"▁ab": 2}, 2)
    with pytest.raises(ValueError, match="positive int"):
        train_unigram({"▁ab": 0}, 10)
    with pytest.raises(ValueError, match="non-empty dict"):
        train_unigram(["▁ab"], 10)
    with pytest.raises(ValueError, match="shrink"):
        train_unigram({"▁ab": 2}, 10, shrink=1.5)

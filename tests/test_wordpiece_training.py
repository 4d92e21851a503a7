"""Training a WordPiece vocabulary: the likelihood and frequency criteria, the ## rule, the
vocabulary's layout, the incremental counts against a brute-force trainer, and the input checks."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from lmcourse.data import load_corpus
from lmcourse.tokenizers import WordPiece, pair_frequencies, train_wordpiece
from lmcourse.tokenizers.wordpiece import _SPECIALS, _WordPieceCounts

# the Hugging Face course's example: "hug" is frequent, "hugs" is rare
HUGS = {"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5}
HUGS_ALPHABET = ["##g", "##n", "##s", "##u", "b", "h", "p"]


def reference_wordpiece(word_counts, vocab_size, min_frequency=2, specials=_SPECIALS,
                        score="likelihood"):
    """Brute force, written independently: recount every symbol and pair from scratch at
    each step; best score (f(a, b) / (f(a) f(b)), or f(a, b) for ``score="frequency"``),
    then larger f(a, b), then the pair met first in a scan of the words in order, each left
    to right."""
    segs = [[[w[0]] + ["##" + ch for ch in w[1:]], c] for w, c in word_counts.items()]
    vocab = list(specials) + sorted({s for symbols, _ in segs for s in symbols})
    while len(vocab) < vocab_size:
        sym_f, pair_f, order = Counter(), Counter(), []
        for symbols, c in segs:
            for s in symbols:
                sym_f[s] += c
            for p in zip(symbols[:-1], symbols[1:], strict=True):
                if p not in pair_f:
                    order.append(p)
                pair_f[p] += c
        candidates = [p for p in order if pair_f[p] >= min_frequency]
        if not candidates:
            break
        scores = {p: pair_f[p] if score == "frequency"
                  else pair_f[p] / (sym_f[p[0]] * sym_f[p[1]]) for p in candidates}
        a, b = max(candidates, key=lambda p: (scores[p], pair_f[p], -order.index(p)))
        new = a + b[2:] if b.startswith("##") else a + b
        if new not in vocab:
            vocab.append(new)
        for entry in segs:
            symbols, out, i = entry[0], [], 0
            while i < len(symbols):
                if symbols[i:i + 2] == [a, b]:
                    out.append(new)
                    i += 2
                else:
                    out.append(symbols[i])
                    i += 1
            entry[0] = out
    return vocab


def random_words(seed, n=300):
    rng = random.Random(seed)
    counts = {}
    for _ in range(n):
        word = "".join(rng.choice("aabbcdeé") for _ in range(rng.randint(1, 7)))
        counts[word] = counts.get(word, 0) + rng.randint(1, 6)
    return counts


def test_first_merge_is_the_best_score_not_the_most_frequent_pair():
    initial = {tuple([w[0]] + ["##" + ch for ch in w[1:]]): c for w, c in HUGS.items()}
    freqs = pair_frequencies(initial)
    assert freqs.most_common(1) == [(("##u", "##g"), 20)]  # BPE would merge u g first
    # f(##g, ##s) / (f(##g) f(##s)) = 5 / (20 * 5) = 1/20, every other pair scores 1/36
    # (u is in every word: f(##u) = 36, and f(x, ##u) = f(x), f(##u, y) = f(y))
    vocab = train_wordpiece(HUGS, len(_SPECIALS) + len(HUGS_ALPHABET) + 1)
    assert vocab[-1] == "##gs"  # ##g + ##s: the second ## is dropped


def test_the_frequency_score_merges_the_most_frequent_pair_first():
    # BPE's choice, written as WordPiece: u g (f = 20) first, then ##ug + ... by frequency
    vocab = train_wordpiece(HUGS, len(_SPECIALS) + len(HUGS_ALPHABET) + 1, score="frequency")
    assert vocab[-1] == "##ug"
    assert vocab != train_wordpiece(HUGS, len(vocab))
    with pytest.raises(ValueError, match="score must be one of"):
        train_wordpiece(HUGS, 20, score="bpe")


def test_ties_go_to_the_larger_pair_frequency_then_to_the_pair_seen_first():
    # after ##gs all six pairs score 1/36; (p, ##u) has the largest f = 17: "pu".
    # Then h ##u, b ##u and ##u ##gs score 1/19 and h ##u is the most frequent: "hu"
    vocab = train_wordpiece(HUGS, len(_SPECIALS) + len(HUGS_ALPHABET) + 3)
    assert vocab[-3:] == ["##gs", "pu", "hu"]
    # same score and same f: the word that comes first in the dict wins
    assert train_wordpiece({"ab": 3, "cd": 3}, 10)[-1] == "ab"
    assert train_wordpiece({"cd": 3, "ab": 3}, 10)[-1] == "cd"


def test_vocabulary_is_specials_then_sorted_alphabet_then_merges():
    size = len(_SPECIALS) + len(HUGS_ALPHABET) + 4
    vocab = train_wordpiece(HUGS, size)
    assert len(vocab) == size == len(set(vocab))
    assert vocab[:len(_SPECIALS)] == list(_SPECIALS)
    assert vocab[len(_SPECIALS):len(_SPECIALS) + len(HUGS_ALPHABET)] == HUGS_ALPHABET
    assert train_wordpiece(HUGS, 11, specials=["[UNK]", "[CLS]", "[SEP]", "[MASK]"])[:5] == \
        ["[UNK]", "[CLS]", "[SEP]", "[MASK]", "##g"]
    corpus = random_words(0)
    assert len(train_wordpiece(corpus, 120)) == 120


def test_stops_when_no_pair_is_frequent_enough():
    assert train_wordpiece({"ab": 1, "cd": 1}, 50) == [*_SPECIALS, "##b", "##d", "a", "c"]
    assert train_wordpiece({"ab": 1, "cd": 1}, 50, min_frequency=1)[-2:] == ["ab", "cd"]
    # everything merged into whole words: nothing left to merge, the vocabulary stays short
    vocab = train_wordpiece(HUGS, 1000)
    assert {"hug", "pug", "pun", "bun", "hugs"} <= set(vocab) and len(vocab) < 1000
    assert vocab == reference_wordpiece(HUGS, 1000)


@pytest.mark.parametrize("score", ["likelihood", "frequency"])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("min_frequency", [1, 2, 5])
def test_matches_a_brute_force_trainer(seed, min_frequency, score):
    corpus = random_words(seed)
    for size in (40, 80, 200, 10_000):  # the last one runs until no pair is left
        assert train_wordpiece(corpus, size, min_frequency=min_frequency, score=score) == \
            reference_wordpiece(corpus, size, min_frequency=min_frequency, score=score), size


def test_incremental_counts_equal_a_recount_after_merges():
    corpus = random_words(3)
    state = _WordPieceCounts(corpus)
    rng = random.Random(3)
    for _ in range(40):
        a, b = rng.choice(sorted(state.pair_f))
        state.merge(a, b)
        sym_f, pair_f, where = Counter(), Counter(), {}
        for k, (symbols, c) in enumerate(zip(state.words, corpus.values(), strict=True)):
            for s in symbols:
                sym_f[s] += c
            for p in zip(symbols[:-1], symbols[1:], strict=True):
                pair_f[p] += c
                where.setdefault(p, set()).add(k)
        assert state.sym_f == dict(sym_f)
        assert state.pair_f == dict(pair_f)
        assert state.where == where
        for s, pairs in state.sym_pairs.items():
            assert pairs == {p for p in pair_f if s in p}
    assert any(len(w) < len(word) for w, word in zip(state.words, corpus, strict=True))


def test_trained_vocabulary_covers_every_training_word():
    wp = WordPiece(["[UNK]"])
    text = " ".join(load_corpus("lee")[:100])
    counts = dict(Counter(wp.pre_tokenize(wp.normalize(text))))
    vocab = train_wordpiece(counts, 600)
    assert len(vocab) == 600
    tokenizer = WordPiece(vocab)
    pieces = tokenizer.tokenize(" ".join(counts))
    assert "[UNK]" not in pieces and set(pieces) <= set(vocab)
    for word in counts:
        assert "".join(p.removeprefix("##") for p in tokenizer.split_word(word)) == word
    assert any(len(tokenizer.split_word(w)) == 1 and len(w) > 3 for w in counts)  # merges used


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"word_counts": {}}, "non-empty"),
    ({"word_counts": {"ab": 0}}, "positive int"),
    ({"word_counts": {"ab": -2}}, "positive int"),
    ({"word_counts": {"ab": 1.5}}, "positive int"),
    ({"word_counts": {"": 1}}, "non-empty string"),
    ({"vocab_size": 8}, "vocab_size >= 9"),  # 5 specials + a, ##b, c, ##d
    ({"min_frequency": 0}, "min_frequency"),
    ({"specials": ["[UNK]", "[UNK]"]}, "distinct"),
])
def test_bad_input_is_explained(kwargs, message):
    args = {"word_counts": {"ab": 2, "cd": 1}, "vocab_size": 20, **kwargs}
    with pytest.raises(ValueError, match=message):
        train_wordpiece(**args)

"""BPE from scratch: the slides' example, ties, segmentation of new words, validation."""

from __future__ import annotations

import json
import random

import pytest

from lmcourse.data import load_corpus
from lmcourse.tokenizers import (
    BPETokenizer,
    ByteLevelBPE,
    apply_bpe,
    byte_decode,
    byte_encode,
    bytes_to_unicode,
    count_words,
    detokenize,
    metaspace_words,
    train_bpe,
    train_bpe_steps,
)
from lmcourse.tokenizers.bytelevel import pre_tokenize

SLIDES = {"low": 5, "lower": 2, "newest": 6, "widest": 3}


def reference_bpe(word_counts, num_merges):
    """Brute force, written independently: recount every pair from scratch at each step,
    scanning words in insertion order and each word left to right; the first pair to
    reach the maximum count in that scan order wins ties."""
    segs = [[list(w), c] for w, c in word_counts.items()]
    merges = []
    for _ in range(num_merges):
        totals, order = {}, []
        for symbols, c in segs:
            for i in range(len(symbols) - 1):
                p = (symbols[i], symbols[i + 1])
                if p not in totals:
                    order.append(p)
                totals[p] = totals.get(p, 0) + c
        if not totals:
            break
        top = max(totals.values())
        best = next(p for p in order if totals[p] == top)
        merges.append(best)
        for entry in segs:
            symbols, out, i = entry[0], [], 0
            while i < len(symbols):
                if symbols[i:i + 2] == list(best):
                    out.append(best[0] + best[1])
                    i += 2
                else:
                    out.append(symbols[i])
                    i += 1
            entry[0] = out
    return merges


def replay(word, merges):
    """Segment by applying every merge in training order (the definition of BPE)."""
    symbols = list(word)
    for a, b in merges:
        out, i = [], 0
        while i < len(symbols):
            if i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b:
                out.append(a + b)
                i += 2
            else:
                out.append(symbols[i])
                i += 1
        symbols = out
    return symbols


def test_slides_example_matches_brute_force():
    ours = train_bpe(SLIDES, 30)
    assert ours == reference_bpe(SLIDES, 30)
    # the three merges the slides show, in their order
    assert ours[:3] == [("e", "s"), ("es", "t"), ("l", "o")]
    steps = train_bpe_steps(SLIDES, 3)
    ref_freqs = []
    for k, (a, b) in enumerate(ours[:3]):  # count each pair in the replayed segmentation
        segs = {w: replay(w, ours[:k]) for w in SLIDES}
        ref_freqs.append(sum(c * sum(segs[w][i:i + 2] == [a, b] for i in range(len(segs[w])))
                             for w, c in SLIDES.items()))
    assert [s.freq for s in steps] == ref_freqs
    assert steps[0].vocab == tuple("lowernstid") + ("es",)
    assert steps[-1].vocab[-3:] == ("es", "est", "lo")
    assert steps[0].ties == (("s", "t"),)
    assert [s.symbol for s in steps] == ["es", "est", "lo"]


@pytest.mark.parametrize("seed", range(10))
def test_merged_counts_the_tokens_each_step_removes(seed):
    rng = random.Random(seed)
    words = {"".join(rng.choice("ab") for _ in range(rng.randint(1, 8))): rng.randint(1, 3)
             for _ in range(12)}
    steps = train_bpe_steps(words, 10)
    merges = [s.pair for s in steps]
    for k, step in enumerate(steps):
        before = sum(len(replay(w, merges[:k])) * c for w, c in words.items())
        after = sum(len(replay(w, merges[:k + 1])) * c for w, c in words.items())
        assert step.merged == before - after <= step.freq
    (step,) = train_bpe_steps({"000": 1}, 1)
    assert (step.pair, step.freq, step.merged) == (("0", "0"), 2, 1)


def test_training_stops_when_every_word_is_one_symbol():
    merges = train_bpe(SLIDES, 1000)
    assert merges == reference_bpe(SLIDES, 1000)
    assert all(len(apply_bpe(w, merges)) == 1 for w in SLIDES)


@pytest.mark.parametrize("seed", range(25))
def test_random_dictionaries_match_brute_force(seed):
    rng = random.Random(seed)
    words = {"".join(rng.choice("abcd") for _ in range(rng.randint(1, 9))): rng.randint(1, 4)
             for _ in range(rng.randint(1, 30))}
    assert train_bpe(words, 40) == reference_bpe(words, 40)


def test_ties_go_to_the_pair_seen_first():
    # (x, y) and (a, b) both have frequency 2; the dict's order decides
    assert train_bpe({"xy": 2, "ab": 2}, 1) == [("x", "y")]
    assert train_bpe({"ab": 2, "xy": 2}, 1) == [("a", "b")]
    # within a word, left to right: (b, c) comes before (c, d) in "bcd"
    assert train_bpe({"bcd": 1}, 1) == [("b", "c")]
    # a later word with the pair earlier in it does not win over an earlier word
    assert train_bpe({"qqzz": 1, "zzqq": 1}, 1) == [("q", "q")]
    # the rule of HF tokenizers instead: smallest ids (code points) first
    assert train_bpe({"xy": 2, "ab": 2}, 1, tie_break="ids") == [("a", "b")]


def test_repeated_symbols_merge_left_to_right():
    assert train_bpe({"aaa": 1}, 2) == reference_bpe({"aaa": 1}, 2) == [("a", "a"), ("aa", "a")]
    assert apply_bpe("aaaaa", [("a", "a")]) == ["aa", "aa", "a"]


def test_apply_bpe_replays_training_and_segments_unseen_words():
    words = count_words(load_corpus("lee")[:60])
    merges = train_bpe(words, 300)
    for w in list(words)[:300] + ["lowest", "unseenable", "zzz", "naïve"]:
        assert apply_bpe(w, merges) == replay(w, merges)
        assert "".join(apply_bpe(w, merges)) == w
    small = train_bpe(SLIDES, 10)
    assert apply_bpe("lowest", small) == ["low", "est"]
    assert apply_bpe("", small) == []


def test_tokenizer_marks_unknown_characters():
    text = " ".join(w for w, c in SLIDES.items() for _ in range(c))
    tok = BPETokenizer.train([text], 10, pre_tokenize=str.split)
    assert tok.tokenize("lowest wider") == ["low", "est", "wid", "e", "r"]
    assert tok.tokenize("lowé") == ["low", "<unk>"]
    assert tok.vocab[:3] == ["l", "o", "w"] and "est" in tok.vocab


@pytest.mark.parametrize("bad, match", [
    ([("low", 5)], "dict"),
    ({"low": 0}, "positive int"),
    ({"low": 2.5}, "positive int"),
    ({"low": True}, "positive int"),
    ({"": 3}, "non-empty string"),
    ({3: 3}, "non-empty string"),
])
def test_invalid_word_counts_are_rejected(bad, match):
    with pytest.raises((TypeError, ValueError), match=match):
        train_bpe(bad, 3)


def test_invalid_arguments_are_rejected():
    with pytest.raises(ValueError, match="num_merges"):
        train_bpe(SLIDES, -1)
    with pytest.raises(ValueError, match="tie_break"):
        train_bpe(SLIDES, 1, tie_break="random")
    assert train_bpe(SLIDES, 0) == []


def test_bytes_to_unicode_is_a_printable_bijection():
    table = bytes_to_unicode()
    assert sorted(table) == list(range(256))
    assert len(set(table.values())) == 256
    assert all(ch.isprintable() and not ch.isspace() for ch in table.values())
    assert table[ord(" ")] == "Ġ" and table[ord("\n")] == "Ċ" and table[ord("A")] == "A"
    text = "naïve café 東京 🙂\n"
    assert byte_decode(byte_encode(text)) == text
    assert len(byte_encode(text)) == len(text.encode("utf-8"))


def test_byte_level_bpe_matches_hf_tokenizers():
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    docs = load_corpus("lee")
    train, held = docs[:100], docs[280:]
    n = 300
    lib = Tokenizer(models.BPE())
    lib.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    lib.train_from_iterator(train, trainers.BpeTrainer(
        vocab_size=256 + n, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    lib_merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m)
                  for m in json.loads(lib.to_str())["model"]["merges"]]
    assert [[w for w, _ in lib.pre_tokenizer.pre_tokenize_str(d)] for d in docs[:50]] == \
        [pre_tokenize(d) for d in docs[:50]]
    ours = ByteLevelBPE.train(train, n, tie_break="ids")
    assert ours.merges == lib_merges
    for doc in held + ["naïve café 東京 🙂"]:
        assert ours.tokenize(doc) == lib.encode(doc).tokens
        assert ours.decode(ours.tokenize(doc)) == doc
    # with the default tie rule the merges are the same set up to ties, not the same list
    first = ByteLevelBPE.train(train, n)
    assert len(set(first.merges) & set(lib_merges)) > 0.9 * n


def test_metaspace_words_match_hf_and_round_trip():
    from tokenizers import pre_tokenizers

    lib = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    for text in ["Hello world", "two  spaces", "trailing ", "a,b. c", "x", *load_corpus()[:20]]:
        ours = metaspace_words(text)
        assert ours == [w for w, _ in lib.pre_tokenize_str(text)], text
        assert detokenize(ours) == text
    # HF adds no ▁ in front of a text that starts with a space; we always do (lossless)
    assert metaspace_words(" leading") == ["▁", "▁leading"]
    assert detokenize(metaspace_words(" leading")) == " leading"

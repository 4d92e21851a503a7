"""WordPiece from scratch against the real BERT tokenizer of the shipped MiniLM checkpoint."""

from __future__ import annotations

import pytest

from lmcourse.data import load_corpus
from lmcourse.pretrained import load_hf_tokenizer, minilm_path
from lmcourse.tokenizers import WordPiece, likelihood_scores
from lmcourse.tokenizers.wordpiece import is_punctuation


@pytest.fixture(scope="module")
def pair():
    return WordPiece.from_file(minilm_path() / "vocab.txt"), load_hf_tokenizer()


def sentences(n):
    docs = load_corpus("lee")
    out = [s.strip() for d in docs for s in d.split(". ") if s.strip()]
    return out[:n]


def test_agrees_with_hf_on_corpus_sentences(pair):
    ours, hf = pair
    sents = sentences(400)
    assert len(sents) == 400
    for s in sents:
        assert ours.tokenize(s) == hf.tokenize(s), s
        assert ours.encode(s) == hf(s)["input_ids"], s


TRICKY = [
    "Hypatia of Alexandria",  # the slides' example: h ##yp ##ati ##a
    "Café, naïve, Ångström, résumé; São Paulo & Zürich!",  # accents stripped
    "ΟΔΟΣ Σίσυφος İstanbul Straße",  # Greek sigma, dotted I, sharp s
    "東京タワー and 北京 (CJK ideographs split one per char; kana are not)",
    "emoji 🙂🚀 and ⚗ symbols",  # not in the vocabulary -> [UNK]
    "$5+3=8 ^_^ ~|` <html> a/b\\c @user #tag 50%",  # ASCII symbols count as punctuation
    "tabs\tnew\nlines\r\nzero\u200bwidth nb\u00a0sp line\u2028sep ctrl\x0bchar",
    "x" * 100 + " " + "y" * 101,  # max_input_chars_per_word = 100
    "antidisestablishmentarianism supercalifragilisticexpialidocious",
    "He said \u201chello\u201d \u2014 it\u2019s 1990s-era…",
    "[CLS] my [MASK] dog is cute [SEP] he likes play##ing [SEP]",  # special tokens kept
    "e\u0301 vs \u00e9, \ufb01ne ligature, \uff28\uff45\uff4c\uff4c\uff4f fullwidth",
    "한국어 텍스트 and ไทย",
    "",
    "   ",
]


@pytest.mark.parametrize("text", TRICKY)
def test_agrees_with_hf_on_tricky_strings(pair, text):
    ours, hf = pair
    assert ours.tokenize(text) == hf.tokenize(text)
    assert ours.encode(text) == hf(text)["input_ids"]


def test_slides_example_and_unknowns(pair):
    ours, _ = pair
    assert ours.tokenize("Hypatia") == ["h", "##yp", "##ati", "##a"]
    assert ours.tokenize("🙂") == ["[UNK]"]
    assert ours.tokenize("y" * 101) == ["[UNK]"]
    assert ours.tokenize("[MASK]") == ["[MASK]"]


def test_greedy_longest_match_on_a_toy_vocabulary():
    wp = WordPiece(["[UNK]", "un", "##aff", "##able", "##a", "##ff", "aff", "##ble"])
    assert wp.tokenize("unaffable") == ["un", "##aff", "##able"]  # longest first, not "##a"
    assert wp.tokenize("affable") == ["aff", "##able"]
    assert wp.tokenize("unx") == ["[UNK]"]  # one uncoverable suffix -> the whole word
    assert wp.tokenize("un, aff") == ["un", "[UNK]", "aff"]  # "," is a word of its own
    assert wp.decode(wp.encode("unaffable")) == "unaffable"
    with pytest.raises(ValueError, match="not in the vocabulary"):
        WordPiece(["a", "b"])


def test_cased_vocabulary_keeps_case_and_accents():
    wp = WordPiece(["[UNK]", "Café", "café", "cafe"], lowercase=False)
    assert wp.tokenize("Café café") == ["Café", "café"]
    assert WordPiece(["[UNK]", "cafe"]).tokenize("Café") == ["cafe"]


def test_punctuation_classes():
    assert all(is_punctuation(c) for c in "!$+<=>^`|~-_.,;:'\"()[]{}\u2014\u201c¿")
    assert not any(is_punctuation(c) for c in "aZ09 \t€🙂")


def test_likelihood_scores_by_brute_force():
    words = {"low": 5, "lower": 2, "newest": 6, "widest": 3}
    scores = likelihood_scores(words)
    text = "".join(w * c for w, c in words.items())
    count = {ch: sum(w.count(ch) * c for w, c in words.items()) for ch in set(text)}
    f_es = sum(c * sum(w[i:i + 2] == "es" for i in range(len(w))) for w, c in words.items())
    assert scores[("e", "s")] == pytest.approx(f_es / (count["e"] * count["s"]))
    best = max(scores, key=scores.get)
    assert best == ("i", "d")  # i and d always occur together: 3 / (3 * 3)

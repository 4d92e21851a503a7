"""The fine-tuning heads' tasks: exact answers, tags and labels; unseen names in the test
half; the encodings that turn answers and tags into piece positions; one training loop."""

from __future__ import annotations

import torch

from lmcourse import finetune_heads as fh
from lmcourse.data import plot_tasks as pt
from lmcourse.data.review_templates import FEMALE, MALE, PLACES
from lmcourse.models import heads
from lmcourse.models.bert import BertConfig
from lmcourse.pretrained import load_hf_tokenizer

NAMES = set(FEMALE) | set(MALE)


def _names(texts):
    return {w for t in texts for w in pt.split_words(t) if w in NAMES}


def test_questions_point_at_their_answer_and_test_names_are_unseen():
    train, test = pt.fact_questions(300, 0, "train"), pt.fact_questions(300, 0, "test")
    for e in train + test:
        assert e.context[e.answer_start:e.answer_start + len(e.answer)] == e.answer
        assert e.answer in NAMES
    assert not _names(e.context for e in train) & _names(e.context for e in test)
    assert pt.fact_questions(5, 1, "train") == pt.fact_questions(5, 1, "train")
    assert pt.fact_questions(5, 1, "train") != pt.fact_questions(5, 2, "train")


def test_tags_mark_exactly_the_names_and_places():
    place_words = {w for p in PLACES for w in p.split()}
    for s in pt.tagged_sentences(300, 0, "test"):
        assert len(s.words) == len(s.tags)
        for w, t in zip(s.words, s.tags, strict=True):
            if t == "PER":
                assert w[:1].isupper()
            if t == "LOC":
                assert w in place_words


def test_pairs_share_the_fact_exactly_when_labelled_so():
    pairs = pt.fact_pairs(400, 0, "train")
    assert sum(label for _, _, label in pairs) == 200
    for a, b, label in pairs:
        if label:  # two phrasings of one fact: the key person appears in both
            assert _names([a]) & _names([b])
    # the name rule is right on positives and on "someone else" negatives, wrong on
    # "same person, other fact" ones: well below perfect, well above chance
    accuracy = sum(pt.name_overlap_pairs(a, b) == label for a, b, label in pairs) / len(pairs)
    assert 0.5 < accuracy < 0.8


def test_metrics():
    assert pt.exact_match("Wren.", "wren") == 1.0 and pt.exact_match("Wren Vance", "Wren") == 0
    assert abs(pt.token_f1("Wren Vance", "Wren") - 2 / 3) < 1e-12
    assert pt.tag_f1([["PER", "O", "LOC"]], [["PER", "O", "PER"]]) == 0.5
    tag = pt.lexicon_tagger([pt.TaggedSentence(["Wren", "dies"], ["PER", "O"])], capitals=True)
    assert tag(["Wren", "Mira", "dies", "at"]) == ["PER", "PER", "O", "O"]


def test_encodings_map_answers_and_tags_to_pieces():
    tok = load_hf_tokenizer()
    qa = pt.fact_questions(40, 0, "test")
    enc = fh.encode_questions(tok, qa)
    for i, e in enumerate(qa):
        s, t = enc["start_positions"][i], enc["end_positions"][i]
        assert enc["passage"][i, s] and enc["passage"][i, t]
        a, b = enc["offsets"][i, s, 0], enc["offsets"][i, t, 1]
        assert e.context[a:b] == e.answer
    tags = pt.tagged_sentences(40, 0, "test")
    enc = fh.encode_tags(tok, tags)
    for i, s in enumerate(tags):
        assert int(enc["first_piece"][i].sum()) == len(s.words)
        assert [pt.TAGS[t] for t in enc["labels"][i][enc["first_piece"][i]].tolist()] == s.tags


def test_train_head_lowers_the_loss_and_predicts_spans_in_the_passage():
    torch.manual_seed(0)
    tok = load_hf_tokenizer()
    qa = pt.fact_questions(32, 0, "train")
    enc = fh.encode_questions(tok, qa)
    config = BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=64, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0)
    model = heads.BertForQuestionAnswering(config)
    losses, seconds = fh.train_head(model, enc, steps=60, batch_size=8, lr=3e-3,
                                    progress=False)
    assert len(losses) == 60 and seconds > 0
    assert sum(losses[-10:]) < 0.7 * sum(losses[:10])
    answers = fh.predict_answers(model, enc, qa)
    assert all(a and a in e.context for a, e in zip(answers, qa, strict=True))

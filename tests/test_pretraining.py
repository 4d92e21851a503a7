"""BERT's pre-training pieces: sentence pairs, heads, loss, baselines, and the encoder as
chapter 07's layer."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from lmcourse.data.sentences import SPECIALS, SentenceCorpus, split_sentences
from lmcourse.models.bert import BertConfig, BertModel, as_encoder_layer
from lmcourse.models.feature_based import BiLSTMClassifier, concat_last_layers, extract_features
from lmcourse.models.masked_lm_bench import choose_smoothing, masked_token_baselines
from lmcourse.models.pretraining import (
    BertForPreTraining,
    collate_pairs,
    evaluate_pretraining,
    nsp_pairs,
    pair_inputs,
    pretrain,
    pretraining_loss,
)

TINY = BertConfig(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=32, max_position_embeddings=32)


def test_split_sentences_keeps_abbreviations_together():
    text = "He left at 5 p.m. yesterday. She stayed! Did it work? yes it did."
    assert split_sentences(text) == ["He left at 5 p.m. yesterday.", "Did it work? yes it did."]
    assert split_sentences(text, min_words=1)[1] == "She stayed!"


def test_sentence_corpus_compacts_the_vocabulary():
    corpus = SentenceCorpus.from_sentences([["a b c", "b c d"], ["d e"]], str.split)
    assert corpus.pieces[:len(SPECIALS)] == list(SPECIALS)
    assert corpus.documents[0][1] == [6, 7, 8] and len(corpus) == len(SPECIALS) + 5
    assert corpus.decode(corpus.documents[1][0]) == ["d", "e"]
    train, test = corpus.split(0.5)
    assert len(train.documents) == 1 and test.pieces is corpus.pieces
    with pytest.raises(ValueError, match="no sentence"):
        SentenceCorpus.from_texts(["too short"], str.split)


def test_nsp_pairs_are_half_next_and_never_from_the_same_document():
    docs = [[[d * 100 + s] for s in range(30)] for d in range(20)]
    pairs = nsp_pairs(docs, seed=0)
    assert len(pairs) == 20 * 29
    share = sum(label for _, _, label in pairs) / len(pairs)
    assert abs(share - 0.5) < 4 * (0.25 / len(pairs)) ** 0.5
    for a, b, label in pairs:
        same_doc = a[0] // 100 == b[0] // 100
        assert (label == 1) == (same_doc and b[0] == a[0] + 1)
        assert label == 1 or not same_doc
    with pytest.raises(ValueError, match="two documents"):
        nsp_pairs([docs[0]])


def test_pair_inputs_and_collate():
    ids, seg = pair_inputs([5, 6, 7, 8], [9], cls_id=1, sep_id=2, max_len=6)
    assert ids == [1, 5, 6, 2, 9, 2] and seg == [0, 0, 0, 0, 1, 1]  # the longer side trimmed
    batch = collate_pairs([([5], [6], 1), ([5, 6, 7], [8], 0)], 1, 2, 0, 16)
    assert batch["input_ids"].tolist() == [[1, 5, 2, 6, 2, 0, 0], [1, 5, 6, 7, 2, 8, 2]]
    assert batch["attention_mask"][0].tolist() == [1] * 5 + [0] * 2
    assert batch["is_next"].tolist() == [1, 0]


def test_heads_are_tied_and_predict_only_where_asked():
    torch.manual_seed(0)
    model = BertForPreTraining(TINY).eval()
    assert model.mlm.word_embeddings.weight is model.bert.embeddings.word_embeddings.weight
    ids = torch.randint(5, 40, (3, 9))
    full, nsp = model(ids)
    assert full.shape == (3, 9, 40) and nsp.shape == (3, 2)
    where = torch.zeros(3, 9, dtype=torch.bool)
    where[0, 2] = where[2, 5] = True
    part, _ = model(ids, predict=where)
    assert torch.allclose(part, full[where], atol=1e-6)


def test_loss_ignores_unselected_positions_and_adds_nsp():
    logits = torch.randn(2, 4, 7)
    labels = torch.full((2, 4), -100)
    labels[0, 1], labels[1, 3] = 3, 5
    nsp_logits, is_next = torch.randn(2, 2), torch.tensor([1, 0])
    total, mlm, nsp = pretraining_loss(logits, labels, nsp_logits, is_next)
    want = F.cross_entropy(torch.stack([logits[0, 1], logits[1, 3]]), torch.tensor([3, 5]))
    assert torch.isclose(mlm, want) and torch.isclose(nsp, F.cross_entropy(nsp_logits, is_next))
    assert torch.isclose(total, mlm + nsp)
    assert pretraining_loss(logits, labels)[2] == 0


def test_pretraining_learns_a_repeated_pattern():
    docs = [[[5 + (d + s) % 7 for _ in range(1)] + [12, 13, 14] for s in range(6)]
            for d in range(12)]
    pairs = nsp_pairs(docs, seed=0)
    torch.manual_seed(0)
    model = BertForPreTraining(TINY)
    kw = dict(special_ids=[0, 1, 2, 3, 4], cls_id=1, sep_id=2, pad_id=0, mask_id=3)
    history = pretrain(model, pairs, steps=150, batch_size=16, lr=3e-3, progress=False, **kw)
    assert history.tokens > 0 and len(history.mlm) == 150
    assert sum(history.mlm[-10:]) / 10 < 0.6 * sum(history.mlm[:10]) / 10
    batch = collate_pairs(pairs, 1, 2, 0, 32)
    labels = torch.full_like(batch["input_ids"], -100)
    where = batch["input_ids"] == 13
    labels[where] = 13
    masked = batch["input_ids"].masked_fill(where, 3)
    assert evaluate_pretraining(model, batch, masked, labels)["masked accuracy"] > 0.9


def test_stop_after_gives_the_first_steps_of_the_longer_run():
    import copy

    docs = [[[5 + (d + s) % 7, 12, 13, 14] for s in range(6)] for d in range(12)]
    pairs = nsp_pairs(docs, seed=0)
    no_dropout = BertConfig(**{**TINY.__dict__, "hidden_dropout_prob": 0.0,
                               "attention_probs_dropout_prob": 0.0})
    torch.manual_seed(0)
    model = BertForPreTraining(no_dropout)
    kw = dict(steps=12, batch_size=8, lr=3e-3, special_ids=[0, 1, 2, 3, 4], cls_id=1, sep_id=2,
              pad_id=0, mask_id=3)
    first = pretrain(copy.deepcopy(model), pairs, stop_after=5, progress=False, **kw)
    history = pretrain(model, pairs, progress=False, **kw)
    assert len(first.mlm) == 5 and len(history.mlm) == 12
    assert first.mlm == history.mlm[:5]  # same schedule, same masks, same steps
    other = pretrain(copy.deepcopy(model), pairs, stop_after=5, progress=False,
                     **{**kw, "steps": 40})
    assert other.mlm[1:] != history.mlm[1:5]  # another schedule (warm-up), other losses


def test_masked_token_baselines_on_a_known_text():
    # after 5 comes 8 three times and 6 twice; 6 is always followed by 7, 8 by 11
    train = [[5, 6, 7]] * 2 + [[5, 8, 11]] * 3
    inputs = torch.tensor([[5, 3, 7, 0, 5, 3, 11]])
    labels = torch.full_like(inputs, -100)
    labels[0, 1], labels[0, 5] = 6, 8
    acc = masked_token_baselines(train, inputs, labels, special_ids=[0, 1, 2, 3], smoothing=0.1)
    assert acc["unigram"] == 0.0  # always 5, the most frequent token
    assert acc["bigram (left)"] == 0.5  # 8 after 5: right only in "5 ? 11"
    assert acc["bigram (both sides)"] == 1.0  # the right neighbour settles "5 ? 7" as 6


def test_the_bigram_smoothing_is_chosen_on_held_out_training_text():
    # counts: after 5 comes 8 ten times and 6 twice; held out: "5 6 7" only. Heavy
    # smoothing flattens P(7 | w) and the left count picks 8; light smoothing lets the
    # right neighbour pick 6, which the held-out text rewards
    fit = [[5, 6, 7]] * 2 + [[5, 8, 11]] * 10
    held = [[5, 6, 7]] * 12
    train = [seq for pair in zip(held, fit, strict=True) for seq in pair]  # held: even places
    k, tried = choose_smoothing(train, special_ids=[0, 1, 2, 3], grid=(0.01, 100.0), every=2)
    assert k == 0.01 and tried[0.01] > tried[100.0]
    inputs = torch.tensor([[5, 3, 7]])
    labels = torch.tensor([[-100, 6, -100]])
    assert masked_token_baselines(fit, inputs, labels, [0, 1, 2, 3], smoothing=100.0)[
        "bigram (both sides)"] == 0.0
    assert masked_token_baselines(fit, inputs, labels, [0, 1, 2, 3], smoothing=0.01)[
        "bigram (both sides)"] == 1.0
    with pytest.raises(ValueError, match="too few training sequences"):
        choose_smoothing([[5, 6]], special_ids=[0])


def test_bert_layers_are_transformer_encoder_layers():
    torch.manual_seed(0)
    model = BertModel(TINY).double().eval()
    out = model(torch.randint(5, 40, (2, 7)))
    for i, layer in enumerate(model.encoder.layer):
        mine = as_encoder_layer(layer, model.config)(out.hidden_states[i])
        assert (mine - out.hidden_states[i + 1]).abs().max() < 1e-12


def test_feature_based_pieces():
    torch.manual_seed(0)
    model = BertModel(TINY)
    ids = torch.randint(5, 40, (5, 6))
    mask = torch.ones_like(ids)
    mask[0, 4:] = 0
    feats = extract_features(model, ids, mask, k=2, batch_size=2)
    assert feats.shape == (5, 6, 32)
    out = model.eval()(ids, attention_mask=mask)
    want = concat_last_layers(out.hidden_states, 2) * mask[..., None]  # zeros at padding
    assert torch.allclose(feats, want, atol=1e-6)
    with pytest.raises(ValueError, match="k must be"):
        concat_last_layers(out.hidden_states, 3)
    clf = BiLSTMClassifier(32, hidden_size=8).eval()
    padded = torch.cat([feats, torch.randn(5, 3, 32)], dim=1)
    mask_long = torch.cat([mask, torch.zeros(5, 3, dtype=mask.dtype)], dim=1)
    assert torch.allclose(clf(feats, mask), clf(padded, mask_long), atol=1e-6)


@pytest.fixture(scope="module")
def review_bench():
    from lmcourse.data.sentences import review_sentences
    from lmcourse.models.masked_lm_bench import MaskedLMBench
    data = review_sentences(str.split)  # whitespace pieces: fast, and no tokenizer needed
    return MaskedLMBench.build(data, max_len=24, n_eval=200)


def test_review_sentences_hold_out_whole_reviews(review_bench):
    data = review_bench.data
    train_ids = {r.review_id for r in data.train_reviews}
    assert train_ids.isdisjoint(r.review_id for r in data.test_reviews)
    assert len(data.train.documents) == len(data.train_reviews)
    first = data.test_reviews[0].sentences[0][1]
    assert data.corpus.decode(data.test.documents[0][0]) == first.split()


def test_masked_lm_bench_scores_the_same_positions_every_time(review_bench):
    bench = review_bench
    selected = bench.eval_labels != -100
    real = bench.eval_batch["attention_mask"].bool() & (bench.eval_batch["input_ids"] > 2)
    assert 0.10 < selected.sum() / real.sum() < 0.20  # BERT's 15%, counted
    again = type(bench).build(bench.data, max_len=24, n_eval=200)
    assert torch.equal(again.eval_ids, bench.eval_ids)
    torch.manual_seed(0)
    model = BertForPreTraining(bench.config(hidden_size=16, intermediate_size=32))
    before = bench.score(model)
    history, after = bench.train_and_score(model, seed=0, steps=30, batch_size=16, nsp=False)
    assert len(history.mlm) == 30 and after["MLM loss"] < before["MLM loss"]
    assert set(bench.baselines()) == {"unigram", "bigram (left)", "bigram (both sides)"}


def test_bench_encodes_single_sentences_in_its_vocabulary(review_bench):
    corpus = review_bench.data.corpus
    ids, mask = review_bench.encode_sentences(["the the zzzunseen", "a"], str.split)
    first = corpus.decode(ids[0][mask[0].bool()])
    assert first[0] == "[CLS]" and first[-1] == "[SEP]" and "[UNK]" in first
    # a pair with an empty second segment, as the pre-training inputs are built
    assert corpus.decode(ids[1][mask[1].bool()]) == ["[CLS]", "a", "[SEP]", "[SEP]"]


def _toy_pairs():
    docs = [[[5 + (d + s) % 7, 12, 13, 14] for s in range(6)] for d in range(12)]
    return nsp_pairs(docs, seed=0), dict(special_ids=[0, 1, 2, 3, 4], cls_id=1, sep_id=2,
                                         pad_id=0, mask_id=3)


def test_the_callback_sees_every_step_and_its_time_is_not_training_time():
    import time

    pairs, kw = _toy_pairs()
    torch.manual_seed(0)
    plain = pretrain(BertForPreTraining(TINY), pairs, steps=6, batch_size=8, progress=False,
                     **kw)
    seen, modes = [], []

    def slow(step, history):
        seen.append((step, len(history.mlm)))
        modes.append(model.training)
        model.eval()  # the loop must put it back in training mode
        time.sleep(0.05)

    torch.manual_seed(0)
    model = BertForPreTraining(TINY)
    history = pretrain(model, pairs, steps=6, batch_size=8, progress=False, callback=slow, **kw)
    assert seen == [(s, s) for s in range(1, 7)] and all(modes)
    assert history.mlm == plain.mlm  # the callback changes nothing in the run itself
    assert history.seconds < 6 * 0.05, "the callback's sleep was counted as training time"


def test_a_callback_that_returns_true_ends_the_run_there():
    pairs, kw = _toy_pairs()
    model = BertForPreTraining(TINY)
    history = pretrain(model, pairs, steps=10, batch_size=8, progress=False,
                       callback=lambda step, history: step == 4, **kw)
    assert len(history.mlm) == 4
    # only True stops it: a callback's incidental return value (a count, a list) does not
    history = pretrain(model, pairs, steps=5, batch_size=8, progress=False,
                       callback=lambda step, history: 1, **kw)
    assert len(history.mlm) == 5


def test_factorised_embeddings_get_a_tied_mlm_head_of_width_e():
    config = BertConfig(**{**TINY.__dict__, "embedding_size": 8})
    model = BertForPreTraining(config)
    assert model.mlm.word_embeddings.weight.shape == (40, 8)
    assert model.mlm.word_embeddings is model.bert.embeddings.word_embeddings
    logits, _ = model(torch.tensor([[1, 5, 6, 2]]))
    assert logits.shape == (1, 4, 40)
    pairs, kw = _toy_pairs()
    history = pretrain(model, pairs, steps=3, batch_size=8, progress=False, **kw)
    assert len(history.mlm) == 3

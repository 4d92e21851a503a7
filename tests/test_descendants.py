"""Chapter 10's building blocks: SOP pairs, ELECTRA's replaced-token detection, K-BERT's tree."""

from __future__ import annotations

import pytest
import torch

from lmcourse.models.bert import BertConfig
from lmcourse.models.electra import (
    ElectraDiscriminator,
    electra_loss,
    pretrain_electra,
    replace_masked,
    share_embeddings,
)
from lmcourse.models.kbert import sentence_tree
from lmcourse.models.pretraining import BertForPreTraining, nsp_pairs, pair_batches, sop_pairs

DOCS = [[[10 + d * 10 + s, 5 + s] for s in range(4)] for d in range(6)]  # 6 docs x 4 sentences


def test_sop_pairs_keep_the_document_and_swap_half():
    pairs = sop_pairs(DOCS * 20, seed=0)
    consecutive = {(tuple(a), tuple(b))
                   for doc in DOCS for a, b in zip(doc[:-1], doc[1:], strict=True)}
    for a, b, in_order in pairs:
        assert ((tuple(a), tuple(b)) if in_order else (tuple(b), tuple(a))) in consecutive
    share = sum(p[2] for p in pairs) / len(pairs)
    assert 0.4 < share < 0.6
    with pytest.raises(ValueError, match="two sentences"):
        sop_pairs([[[1, 2]]])


def test_nsp_negatives_come_from_other_documents_but_sop_never_does():
    doc_of = {tuple(s): d for d, doc in enumerate(DOCS) for s in doc}
    nsp = nsp_pairs(DOCS, seed=1)
    assert any(doc_of[tuple(a)] != doc_of[tuple(b)] for a, b, label in nsp if label == 0)
    assert all(doc_of[tuple(a)] == doc_of[tuple(b)] for a, b, _ in sop_pairs(DOCS, seed=1))


def test_pair_batches_cover_every_pair_once_per_pass():
    pairs = nsp_pairs(DOCS, seed=0)
    seen = [i for chosen, _ in pair_batches(pairs, steps=3, batch_size=6, cls_id=1, sep_id=2,
                                            pad_id=0, seed=0) for i in chosen]
    assert sorted(seen) == list(range(18)) and len(pairs) == 18
    with pytest.raises(ValueError, match="larger"):
        next(pair_batches(pairs, steps=1, batch_size=99, cls_id=1, sep_id=2, pad_id=0))


def test_replace_masked_marks_only_real_changes():
    ids = torch.tensor([[1, 7, 8, 9, 2]])
    labels = torch.tensor([[-100, 7, -100, 9, -100]])
    logits = torch.full((2, 12), -1e4)
    logits[0, 7] = 0.0  # the generator is sure of the original at the first position
    logits[1, 4] = 0.0  # and sure of a wrong token at the second
    corrupted, replaced = replace_masked(ids, labels, logits)
    assert corrupted.tolist() == [[1, 7, 8, 4, 2]]
    assert replaced.tolist() == [[False, False, False, True, False]]
    with pytest.raises(ValueError, match="must match"):
        replace_masked(ids, labels, logits[:1])


def test_electra_loss_weights_the_discriminator_over_real_tokens():
    gen = torch.randn(3, 5)
    targets = torch.tensor([0, 1, 2])
    disc = torch.tensor([[5.0, -5.0, 0.0]])
    replaced = torch.tensor([[True, False, True]])
    attention = torch.tensor([[1, 1, 0]])
    total, mlm, d = electra_loss(gen, targets, disc, replaced, attention, weight=50.0)
    expected = torch.nn.functional.softplus(torch.tensor(-5.0))  # two confident right answers
    assert torch.isclose(d, expected, atol=1e-6)
    assert torch.isclose(total, mlm + 50 * d)


def test_electra_trains_and_the_discriminator_learns():
    torch.manual_seed(0)
    vocab = 40
    docs = [[[5 + (d + s) % 30, 6 + (d * s) % 30, 7 + s] for s in range(5)] for d in range(30)]
    pairs = nsp_pairs(docs, seed=0)
    small = dict(vocab_size=vocab, num_attention_heads=2, max_position_embeddings=16,
                 hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    gen = BertForPreTraining(BertConfig(hidden_size=16, num_hidden_layers=1,
                                        intermediate_size=32, **small))
    disc = ElectraDiscriminator(BertConfig(hidden_size=32, num_hidden_layers=1,
                                           intermediate_size=64, **small))
    history = pretrain_electra(gen, disc, pairs, steps=60, batch_size=16, special_ids=[0, 1, 2, 3],
                               cls_id=1, sep_id=2, pad_id=0, mask_id=3, max_len=16, lr=3e-3,
                               progress=False)
    assert len(history.disc) == 60 and history.tokens > 0
    assert all(0.0 <= r <= 0.2 for r in history.replaced)
    first, last = sum(history.disc[:10]) / 10, sum(history.disc[-10:]) / 10
    assert last < first


def test_shared_embeddings_are_one_set_trained_by_both_networks():
    small = dict(vocab_size=40, num_attention_heads=1, max_position_embeddings=16,
                 hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    disc = ElectraDiscriminator(BertConfig(hidden_size=32, num_hidden_layers=1,
                                           intermediate_size=64, **small))
    narrow = BertForPreTraining(BertConfig(hidden_size=16, num_hidden_layers=1,
                                           intermediate_size=32, **small))
    with pytest.raises(ValueError, match="embedding_size=32"):
        share_embeddings(narrow, disc)
    gen = BertForPreTraining(BertConfig(hidden_size=16, num_hidden_layers=1, embedding_size=32,
                                        intermediate_size=32, **small))
    share_embeddings(gen, disc)
    table = disc.electra.embeddings.word_embeddings.weight
    assert gen.bert.embeddings.word_embeddings.weight is table
    assert gen.mlm.word_embeddings.weight is table  # the generator scores through it too
    ids = torch.tensor([[1, 5, 6, 2]])
    logits, _ = gen(ids)
    logits.sum().backward()
    from_generator = table.grad.clone()
    disc(ids).sum().backward()
    assert from_generator.abs().sum() > 0 and not torch.equal(table.grad, from_generator)


def test_kbert_tree_soft_positions_and_visibility():
    tree = sentence_tree(["[CLS]", "Tim", "Cook", "is", "visiting", "Beijing", "now"],
                         {"Cook": [("CEO", "Apple")],
                          "Beijing": [("capital", "China"), ("is_a", "City")]})
    assert tree.tokens == ["[CLS]", "Tim", "Cook", "CEO", "Apple", "is", "visiting", "Beijing",
                           "capital", "China", "is_a", "City", "now"]
    # K-BERT's figure: the trunk keeps its positions, a branch counts on from its entity
    assert tree.soft_positions.tolist() == [0, 1, 2, 3, 4, 3, 4, 5, 6, 7, 6, 7, 6]
    v, idx = tree.visible, {t: i for i, t in enumerate(tree.tokens)}
    assert torch.equal(v, v.T) and bool(v.diagonal().all())
    assert v[idx["Tim"], idx["now"]] and not v[idx["Tim"], idx["Apple"]]
    assert v[idx["Cook"], idx["Apple"]] and v[idx["CEO"], idx["Apple"]]
    assert not v[idx["China"], idx["City"]]  # two branches of one entity do not see each other
    assert v[idx["China"], idx["Beijing"]] and v[idx["City"], idx["Beijing"]]
    assert tree.is_knowledge.sum() == 6
    with pytest.raises(ValueError, match="relation, object"):
        sentence_tree(["a"], {"a": [("only-one",)]})


def test_kbert_mask_hides_knowledge_from_the_trunk_in_one_layer():
    from lmcourse.models.attention import scaled_dot_product_attention
    tree = sentence_tree(["A", "B", "C"], {"B": [("r", "o")]})
    x = torch.randn(len(tree.tokens), 8, dtype=torch.float64)
    out, _ = scaled_dot_product_attention(x, x, x, tree.visible)
    x2 = x.clone()
    x2[tree.is_knowledge] += 1.0
    out2, _ = scaled_dot_product_attention(x2, x2, x2, tree.visible)
    changed = (out - out2).abs().amax(-1) > 1e-12
    assert changed.tolist() == [False, True, True, True, False]  # B (the entity) and its branch


def test_bag_of_words_pair_classifier_sees_topics_but_not_order():
    from lmcourse.models.baselines import bag_of_words_pair_accuracy
    g = torch.Generator().manual_seed(0)

    def sentence(topic):  # topic 0 uses pieces 0..19, topic 1 pieces 20..39
        return (torch.randint(20, (6,), generator=g) + 20 * topic).tolist()

    def topic_pairs(n):  # label 1: same topic, 0: different topics
        rows = []
        for i in range(n):
            t = i % 2
            same = bool(torch.rand((), generator=g) < 0.5)
            rows.append((sentence(t), sentence(t if same else 1 - t), int(same)))
        return rows

    def order_pairs(n):  # label 1: (A, B) in order, 0: swapped; A and B share the topic
        rows = []
        for i in range(n):
            a, b = sentence(i % 2), sentence(i % 2)
            rows.append((a, b, 1) if torch.rand((), generator=g) < 0.5 else (b, a, 0))
        return rows

    assert bag_of_words_pair_accuracy(topic_pairs(2000), topic_pairs(500), 40) > 0.95
    assert bag_of_words_pair_accuracy(order_pairs(2000), order_pairs(500), 40) < 0.6


def test_probe_scores_are_probabilities_for_the_held_out_rows():
    from lmcourse.models.elmo import linear_probe, probe_scores
    g = torch.Generator().manual_seed(0)
    labels = torch.randint(2, (300,), generator=g)
    features = torch.randn(300, 4, generator=g) + 2.0 * labels[:, None]
    train = torch.arange(300) < 200
    p = probe_scores(features, labels, train)
    assert p.shape == (100, 2) and torch.allclose(p.sum(1), torch.ones(100))
    accuracy = float((p.argmax(1) == labels[~train]).float().mean())
    assert accuracy > 0.9 and accuracy == linear_probe(features, labels, train)

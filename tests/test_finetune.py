"""lmcourse.finetune: the classifier head, inputs, schedule, training step and predictions."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from lmcourse import finetune
from lmcourse.checks.finetune import tiny_bert
from lmcourse.models.bert import BertModel


def padded(lengths, T=None, seed=0):
    g = torch.Generator().manual_seed(seed)
    T = T or max(lengths)
    ids = torch.zeros(len(lengths), T, dtype=torch.long)
    for i, n in enumerate(lengths):
        ids[i, :n] = torch.randint(5, 50, (n,), generator=g)
    mask = (torch.arange(T)[None] < torch.tensor(lengths)[:, None]).long()
    return ids, mask


@pytest.fixture
def model():
    return finetune.SequenceClassifier(tiny_bert(), num_labels=2).eval()


def test_classifier_shape_and_cls_head(model):
    ids, mask = padded([5, 3, 7])
    logits = model(ids, mask)
    assert logits.shape == (3, 2)
    h = model.encoder(ids, attention_mask=mask).last_hidden_state[:, 0]
    assert torch.allclose(logits, model.classifier(h), atol=1e-6)
    three = finetune.SequenceClassifier(tiny_bert(), num_labels=3).eval()
    assert three(ids, mask).shape == (3, 3)


def test_pooler_option():
    model = finetune.SequenceClassifier(tiny_bert(), pooling="pooler").eval()
    ids, mask = padded([4, 6])
    out = model.encoder(ids, attention_mask=mask)
    assert torch.allclose(model(ids, mask), model.classifier(out.pooler_output), atol=1e-6)
    with pytest.raises(ValueError, match="pooling"):
        finetune.SequenceClassifier(tiny_bert(), pooling="max")


def test_mean_pooling_averages_the_real_tokens_only():
    model = finetune.SequenceClassifier(tiny_bert(), pooling="mean").eval()
    ids, mask = padded([4, 6])
    h = model.encoder(ids, attention_mask=mask).last_hidden_state
    first = h[0, :4].mean(0)  # the first row has 4 real tokens, then padding
    assert torch.allclose(model(ids, mask)[0], model.classifier(first), atol=1e-5)
    more_ids, more_mask = padded([4, 6], T=12)
    assert torch.allclose(model(ids, mask), model(more_ids, more_mask), atol=1e-5)


def test_padding_does_not_change_the_cls_logits(model):
    ids, mask = padded([4, 6, 2])
    more_ids, more_mask = padded([4, 6, 2], T=12)
    assert torch.equal(more_ids[:, :6], ids)
    a, b = model(ids, mask), model(more_ids, more_mask)
    assert torch.allclose(a, b, atol=1e-5)
    # without the mask the padding is attended to, and the logits move
    assert not torch.allclose(model(more_ids), b, atol=1e-4)
    # trimming the padding columns is exact
    t_ids, t_mask = finetune.trim(more_ids, more_mask)
    assert t_ids.shape == (3, 6) and torch.allclose(model(t_ids, t_mask), b, atol=1e-5)


def test_frozen_embeddings_parameter_counts():
    model = finetune.SequenceClassifier(tiny_bert())
    total, trainable = finetune.parameter_counts(model)
    assert total == trainable
    n_emb = sum(p.numel() for p in model.encoder.embeddings.parameters())
    assert model.freeze_embeddings() == n_emb
    assert finetune.parameter_counts(model) == (total, total - n_emb)
    assert all(not p.requires_grad for p in model.encoder.embeddings.parameters())
    optimizer = finetune.make_optimizer(model)
    in_opt = sum(p.numel() for g in optimizer.param_groups for p in g["params"])
    assert in_opt == total - n_emb
    model.freeze_embeddings(False)
    assert finetune.parameter_counts(model) == (total, total)
    frozen = finetune.SequenceClassifier(tiny_bert(), freeze_embeddings=True)
    assert finetune.parameter_counts(frozen)[1] == total - n_emb


def test_minilm_embeddings_are_most_of_its_weights():
    from lmcourse.pretrained import minilm_path

    model = finetune.SequenceClassifier(BertModel.from_pretrained(minilm_path()),
                                        freeze_embeddings=True)
    total, trainable = finetune.parameter_counts(model)
    assert total == 22_713_216 + 384 * 2 + 2  # MiniLM plus the head
    assert total - trainable == 11_918_592  # 30522 x 384 words, 512 positions, 2 types, LN


def test_no_decay_on_biases_and_layernorm(model):
    optimizer = finetune.make_optimizer(model, lr=3e-5, weight_decay=0.01)
    assert isinstance(optimizer, torch.optim.AdamW)
    decay, no_decay = optimizer.param_groups
    assert decay["weight_decay"] == 0.01 and no_decay["weight_decay"] == 0.0
    assert all(p.dim() >= 2 for p in decay["params"])
    assert all(p.dim() == 1 for p in no_decay["params"])
    assert optimizer.defaults["lr"] == 3e-5


def test_schedule_warms_up_then_decays_to_zero():
    T, W, lr = 50, 10, 2e-5
    optimizer = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=lr)
    scheduler = finetune.warmup_linear(optimizer, W, T)
    lrs = []
    for _ in range(T + 5):
        lrs.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    assert lrs[0] == 0.0
    assert lrs[W] == pytest.approx(lr)
    assert max(lrs) == pytest.approx(lr) and lrs.index(max(lrs)) == W
    steps_up = [b - a for a, b in zip(lrs[:W], lrs[1:W + 1], strict=True)]
    steps_down = [a - b for a, b in zip(lrs[W:T], lrs[W + 1:T + 1], strict=True)]
    assert all(s == pytest.approx(lr / W) for s in steps_up)  # linear up
    assert all(s == pytest.approx(lr / (T - W)) for s in steps_down)  # linear down
    assert lrs[T] == 0.0 and all(x == 0.0 for x in lrs[T:])
    assert finetune.warmup_linear_factor(0, 0, 10) == 1.0  # no warm-up: start at the peak


def test_encode_pads_and_truncates():
    from lmcourse.pretrained import load_hf_tokenizer

    tok = load_hf_tokenizer()
    ids, mask = finetune.encode(tok, ["Wren dies.", "a " * 100], max_len=16)
    assert ids.shape == mask.shape == (2, 16)
    assert ids[0, 0] == tok.cls_token_id and mask[0].sum() < 16
    assert ids[0, int(mask[0].sum()) - 1] == tok.sep_token_id
    assert (ids[0][mask[0] == 0] == tok.pad_token_id).all()
    assert mask[1].all() and ids[1, -1] == tok.sep_token_id  # truncated, [SEP] kept
    short, _ = finetune.encode(tok, ["Wren dies."], max_len=16)
    assert short.shape[1] < 16
    fixed, _ = finetune.encode(tok, ["Wren dies."], max_len=16, pad_to_max=True)
    assert fixed.shape == (1, 16)


def test_train_step_clears_clips_and_steps():
    torch.manual_seed(0)
    model = finetune.SequenceClassifier(tiny_bert(), dropout=0.0)
    ids, mask = padded([5, 3, 7, 4])
    labels = torch.tensor([1, 0, 0, 1])
    weight = torch.tensor([1.0, 3.0])
    optimizer = finetune.make_optimizer(model, lr=1e-3)
    scheduler = finetune.warmup_linear(optimizer, 0, 10)
    for p in model.parameters():
        p.grad = torch.ones_like(p)  # stale gradients must not leak in
    model.eval()
    want = F.cross_entropy(model(ids, mask), labels, weight=weight).item()
    loss = finetune.train_step(model, (ids, mask, labels), optimizer, scheduler, clip=0.01,
                               class_weight=weight)
    assert isinstance(loss, float) and loss == pytest.approx(want, rel=1e-5)
    assert model.training
    norm = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None]).norm()
    assert float(norm) <= 0.01 + 1e-6
    assert optimizer.param_groups[0]["lr"] == pytest.approx(1e-3 * 9 / 10)


def test_fit_lowers_the_loss_and_is_deterministic():
    def run():
        torch.manual_seed(0)
        model = finetune.SequenceClassifier(tiny_bert(dropout=0.1))
        ids, mask = padded([3 + i % 6 for i in range(40)], seed=3)
        labels = (ids[:, 1] % 2 == 0).long()  # learnable from the first word
        ids[:, 0] = 2
        result = finetune.fit(model, (ids, mask, labels), steps=60, batch_size=8, lr=1e-3,
                              generator=torch.Generator().manual_seed(0), progress=False)
        return model, result, (ids, mask, labels)

    model, result, (ids, mask, labels) = run()
    _, again, _ = run()
    assert result.losses == again.losses  # same seeds, same run
    assert len(result.losses) == 60 and result.seconds > 0
    assert sum(result.losses[-10:]) < sum(result.losses[:10])
    probs = finetune.predict_proba(model, ids, mask)
    assert ((probs > 0.5).long() == labels).float().mean() > 0.8


def test_balanced_batches():
    labels = torch.tensor([1] * 3 + [0] * 30)
    batches = list(finetune.balanced_batches(labels, 8, steps=6,
                                             generator=torch.Generator().manual_seed(0)))
    assert len(batches) == 6 and all(len(b) == 8 for b in batches)
    assert all(int(labels[b].sum()) == 4 for b in batches)
    firsts = torch.cat([b[labels[b] == 1] for b in batches])[:3]
    assert sorted(firsts.tolist()) == [0, 1, 2]  # every positive once before any repeats
    w = finetune.class_weights(labels)
    assert float(w[1] / w[0]) == pytest.approx(10.0)
    shuffled = list(finetune.shuffled_batches(33, 11, 3, torch.Generator().manual_seed(0)))
    assert sorted(torch.cat(shuffled).tolist()) == list(range(33))


def test_predict_proba_is_eval_mode_and_batch_free():
    torch.manual_seed(0)
    model = finetune.SequenceClassifier(tiny_bert(dropout=0.3), dropout=0.3).train()
    ids, mask = padded([7, 3, 5, 2, 6, 4, 8], T=10)
    a = finetune.predict_proba(model, ids, mask, batch_size=3)
    b = finetune.predict_proba(model, ids, mask, batch_size=64)
    assert model.training  # the mode it had is restored
    assert a.shape == (7,) and not a.requires_grad
    assert torch.allclose(a, b, atol=1e-6)
    model.eval()
    with torch.no_grad():
        want = torch.softmax(model(ids, mask), -1)[:, 1]
    assert torch.allclose(a, want, atol=1e-6)


def test_predict_texts_scores_each_distinct_text_once():
    from lmcourse.pretrained import load_hf_tokenizer

    tok = load_hf_tokenizer()
    calls = []

    def spy(model, ids, mask, batch_size):
        calls.append(len(ids))
        return finetune.predict_proba(model, ids, mask, batch_size)

    model = finetune.SequenceClassifier(tiny_bert()).eval()
    model.encoder.embeddings.word_embeddings = torch.nn.Embedding(30522, 32)  # real ids
    texts = ["Wren dies.", "I loved it.", "Wren dies.", "The ending was rushed."]
    probs = finetune.predict_texts(model, tok, texts, batch_size=2, predict_fn=spy)
    assert sum(calls) == 3 and probs.shape == (4,) and probs[0] == probs[2]
    ids, mask = finetune.encode(tok, texts)
    assert torch.allclose(probs, finetune.predict_proba(model, ids, mask), atol=1e-5)

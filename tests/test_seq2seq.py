"""The digit-reversal task and the encoder–decoders that learn it (chapters 06 and 07)."""

from __future__ import annotations

from functools import partial

import pytest
import torch

from lmcourse.data.tasks import (
    BOS,
    EOS,
    PAD,
    VOCAB_SIZE,
    decode_digits,
    encode_digits,
    reversal_batch,
    reverse_pairs,
    true_alignment,
)
from lmcourse.models.seq2seq import (
    GRUSeq2Seq,
    TransformerSeq2Seq,
    accuracy_by_length,
    alignment_agreement,
    copy_rule,
    evaluate_seq2seq,
    sequence_accuracy,
    sequence_loss,
    token_accuracy,
    train_seq2seq,
)


def _models(seed=0):
    torch.manual_seed(seed)
    return {"gru+attention": GRUSeq2Seq(VOCAB_SIZE, 8, 16, attention=True),
            "gru": GRUSeq2Seq(VOCAB_SIZE, 8, 16, attention=False),
            "gru+attention, one direction": GRUSeq2Seq(VOCAB_SIZE, 8, 16, bidirectional=False),
            "transformer": TransformerSeq2Seq(VOCAB_SIZE, d_model=16, nhead=2,
                                              dim_feedforward=32, max_len=16)}


MODELS = list(_models())


# ---- the task ------------------------------------------------------------------------------

def test_batch_shapes_masks_and_reversal():
    g = torch.Generator().manual_seed(0)
    b = reversal_batch(64, 2, 9, g)
    B, S = b.src.shape
    assert B == 64 and S == int(b.lengths.max()) and 2 <= int(b.lengths.min())
    assert b.tgt_in.shape == b.tgt_out.shape == (B, S + 1)
    assert b.src_mask.dtype == torch.bool
    assert torch.equal(b.src_mask.sum(1), b.lengths)
    for i in range(B):
        L = int(b.lengths[i])
        src = b.src[i, :L]
        assert src.min() >= 3 and torch.all(b.src[i, L:] == PAD)
        assert b.src_mask[i, :L].all() and not b.src_mask[i, L:].any()
        assert torch.equal(b.tgt_out[i, :L], src.flip(0))
        assert b.tgt_out[i, L] == EOS and torch.all(b.tgt_out[i, L + 1:] == PAD)
        assert b.tgt_in[i, 0] == BOS and torch.equal(b.tgt_in[i, 1:L + 1], src.flip(0))
        assert decode_digits(b.tgt_out[i]) == decode_digits(src)[::-1]
    assert set(b.lengths.tolist()) == set(range(2, 10))  # every length drawn in 64 tries


def test_batches_are_reproducible_and_errors_are_clear():
    a = reversal_batch(8, 3, 6, torch.Generator().manual_seed(5))
    b = reversal_batch(8, 3, 6, torch.Generator().manual_seed(5))
    c = reversal_batch(8, 3, 6, torch.Generator().manual_seed(6))
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
    assert not torch.equal(a.src, c.src) or not torch.equal(a.lengths, c.lengths)
    fixed = reversal_batch(5, 4, 4)
    assert fixed.src_mask.all() and fixed.src.shape == (5, 4)
    with pytest.raises(ValueError, match="min_len <= max_len"):
        reversal_batch(4, 5, 3)
    with pytest.raises(ValueError, match="min_len"):
        reversal_batch(4, 0, 3)
    with pytest.raises(ValueError, match="batch_size"):
        reversal_batch(0, 1, 3)
    with pytest.raises(ValueError, match="digits"):
        encode_digits("12a")
    with pytest.raises(ValueError, match="digit ids"):
        reverse_pairs([[3, 4], [1]])
    with pytest.raises(ValueError, match="empty"):
        reverse_pairs([[3], []])


def test_encode_and_pairs_by_hand():
    b = reverse_pairs([encode_digits("307"), encode_digits("5")])
    assert decode_digits(b.tgt_out[0]) == "703" and decode_digits(b.tgt_out[1]) == "5"
    assert b.tgt_out[1].tolist() == [8, EOS, PAD, PAD]
    assert b.src_mask.tolist() == [[True] * 3, [True, False, False]]


def test_true_alignment_is_the_anti_diagonal():
    A = true_alignment(4)
    assert A.shape == (4, 4) and torch.equal(A.sum(0), torch.ones(4))
    assert [int(A[i].argmax()) for i in range(4)] == [3, 2, 1, 0]
    assert torch.equal(true_alignment(1), torch.ones(1, 1))
    with pytest.raises(ValueError, match="length"):
        true_alignment(0)


# ---- the models ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", MODELS)
def test_shapes_and_padding_invariance(name):
    model = _models()[name].eval()
    b = reversal_batch(6, 2, 7, torch.Generator().manual_seed(1))
    logits = model(b.src, b.src_mask, b.tgt_in)
    assert logits.shape == (*b.tgt_in.shape, VOCAB_SIZE)
    changed = b.src.masked_fill(~b.src_mask, 7)  # a digit where the padding was
    assert not torch.equal(changed, b.src)
    torch.testing.assert_close(model(changed, b.src_mask, b.tgt_in), logits,
                               rtol=0, atol=1e-6)
    # ... but a real source token does matter
    other = b.src.clone()
    other[:, 0] = torch.where(other[:, 0] == 3, 4, 3)
    assert (model(other, b.src_mask, b.tgt_in) - logits).abs().max() > 1e-4


def test_additive_attention_weights_sum_to_one_and_skip_padding():
    model = _models()["gru+attention"].eval()
    b = reversal_batch(6, 2, 7, torch.Generator().manual_seed(2))
    _, weights = model(b.src, b.src_mask, b.tgt_in, return_attention=True)
    assert weights.shape == (*b.tgt_in.shape, b.src.shape[1])
    torch.testing.assert_close(weights.sum(-1), torch.ones(b.tgt_in.shape))
    assert torch.all(weights.masked_select(~b.src_mask[:, None, :]) == 0)
    _, none = _models()["gru"](b.src, b.src_mask, b.tgt_in, return_attention=True)
    assert none is None


@pytest.mark.parametrize("name", MODELS)
def test_greedy_decode_agrees_with_teacher_forcing_on_its_own_output(name):
    model = _models(seed=3)[name].eval()
    b = reversal_batch(5, 2, 6, torch.Generator().manual_seed(3))
    T = b.tgt_out.shape[1]
    ids, weights = model.greedy_decode(b.src, b.src_mask, T)
    assert ids.shape == (5, T)
    fed = torch.cat([torch.full((5, 1), BOS), ids[:, :-1]], dim=1)
    assert torch.equal(model(b.src, b.src_mask, fed).argmax(-1), ids)
    if weights is not None:
        assert weights.shape == (5, T, b.src.shape[1])
        torch.testing.assert_close(weights.sum(-1), torch.ones(5, T))
        assert torch.all(weights.masked_select(~b.src_mask[:, None, :]) == 0)


def test_transformer_decoder_is_causal():
    model = _models()["transformer"].eval()
    b = reversal_batch(4, 5, 5, torch.Generator().manual_seed(4))
    logits = model(b.src, b.src_mask, b.tgt_in)
    t = 3
    changed = b.tgt_in.clone()
    changed[:, t] = torch.where(changed[:, t] == 5, 6, 5)
    new = model(b.src, b.src_mask, changed)
    torch.testing.assert_close(new[:, :t], logits[:, :t], rtol=0, atol=1e-6)
    assert (new[:, t:] - logits[:, t:]).abs().max() > 1e-4  # and it does read token t


def test_bad_inputs_get_clear_errors():
    models = _models()
    b = reversal_batch(3, 2, 4, torch.Generator().manual_seed(0))
    for model in models.values():
        with pytest.raises(TypeError, match="boolean"):
            model(b.src, b.src_mask.long(), b.tgt_in)
        with pytest.raises(ValueError, match="B x S"):
            model(b.src, b.src_mask[:, :-1], b.tgt_in)
        with pytest.raises(ValueError, match="at least one real token"):
            model(b.src, b.src_mask.flip(1), b.tgt_in)
    long = reversal_batch(2, 20, 20)
    with pytest.raises(ValueError, match="max_len"):
        models["transformer"](long.src, long.src_mask, long.tgt_in)
    with pytest.raises(ValueError, match="same shape"):
        sequence_accuracy(b.tgt_out[:, :-1], b.tgt_out)
    with pytest.raises(ValueError, match="steps"):
        train_seq2seq(models["gru"], lambda: b, 0)
    with pytest.raises(ValueError, match="true alignment"):
        alignment_agreement(torch.ones(2, 3), true_alignment(4))


# ---- metrics and training ------------------------------------------------------------------

def test_accuracies_by_hand():
    tgt = torch.tensor([[5, 6, EOS, PAD], [7, EOS, PAD, PAD]])
    pred = torch.tensor([[5, 6, EOS, 9], [8, EOS, 3, 3]])  # after EOS anything goes
    assert sequence_accuracy(pred, tgt).tolist() == [1.0, 0.0]
    assert token_accuracy(pred, tgt).tolist() == [1.0, 0.5]
    weights = torch.tensor([[0.1, 0.9], [0.6, 0.4], [0.5, 0.5]])  # 3rd row: the EOS step
    assert alignment_agreement(weights, true_alignment(2)) == 1.0
    assert alignment_agreement(weights.flip(1), true_alignment(2)) == 0.0


def test_loss_ignores_padding():
    tgt = torch.tensor([[5, EOS, PAD]])
    logits = torch.randn(1, 3, VOCAB_SIZE)
    other = logits.clone()
    other[0, 2] += 100 * torch.randn(VOCAB_SIZE)
    assert sequence_loss(logits, tgt) == sequence_loss(other, tgt)


@pytest.mark.parametrize("attention", [True, False])
def test_training_learns_short_reversals(attention):
    """A few hundred steps on lengths 2-4 must take the loss down and get most strings right;
    an untrained model gets almost none."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    model = GRUSeq2Seq(VOCAB_SIZE, 16, 32, attention=attention)
    test = reversal_batch(200, 2, 4, torch.Generator().manual_seed(99))
    before = evaluate_seq2seq(model, test)["sequence_accuracy"]
    history = train_seq2seq(model, lambda: reversal_batch(64, 2, 4, g), 250, lr=1e-2)
    after = evaluate_seq2seq(model, test)
    assert before < 0.05
    assert sum(history.losses[-10:]) / 10 < 0.2 * sum(history.losses[:10]) / 10
    assert after["sequence_accuracy"] > 0.9 and after["token_accuracy"] > 0.95
    assert history.examples == 250 * 64 and history.tokens > history.examples * 3
    assert history.examples_per_second > 0 and model.training


def test_the_loop_trains_the_transformer_too():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    model = _models()["transformer"]
    history = train_seq2seq(model, lambda: reversal_batch(32, 2, 5, g), 30, lr=3e-3,
                            lr_schedule=lambda step: 3e-3 * min(1.0, step / 10))
    assert len(history.losses) == 30 and history.losses[-1] < history.losses[0]
    table = accuracy_by_length(model, lambda L: reversal_batch(16, L, L), [2, 5])
    assert set(table) == {2, 5}
    assert all(0 <= r["sequence_accuracy"] <= r["token_accuracy"] <= 1 for r in table.values())


def test_copy_rule_is_right_for_palindromes_only():
    batch = reverse_pairs([encode_digits("12321"), encode_digits("12345")])
    copied = copy_rule(batch.src)
    assert copied.shape == batch.tgt_out.shape
    assert sequence_accuracy(copied, batch.tgt_out).tolist() == [1.0, 0.0]
    assert copied[1, -1].item() == EOS


def test_after_step_sees_every_step_and_its_time_is_not_counted():
    import time

    model = GRUSeq2Seq(VOCAB_SIZE, embed_dim=8, hidden_size=8, attention=True)
    draw = partial(reversal_batch, 4, 3, 5, torch.Generator().manual_seed(0))
    seen = []

    def slow(step):
        seen.append(step)
        time.sleep(0.05)

    history = train_seq2seq(model, draw, 5, after_step=slow)
    assert seen == [1, 2, 3, 4, 5]
    assert history.seconds < 0.25  # the 5 x 0.05 s of after_step are left out


def test_reversal_sweep_compares_models_of_equal_size_with_their_schedules():
    from lmcourse.course.reference import reversal_sweep as rs

    sizes = {kind: sum(p.numel() for p in rs.build(kind).parameters()) for kind in rs.MODELS}
    assert abs(sizes["gru"] - sizes["transformer"]) / sizes["gru"] < 0.02, sizes
    warm = rs.RECIPE["warmup_steps"]
    assert rs.learning_rate("gru", warm // 2) == pytest.approx(rs.RECIPE["gru"]["lr"] / 2)
    assert rs.learning_rate("gru", 10 * warm) == rs.RECIPE["gru"]["lr"]
    peak = rs.learning_rate("transformer", warm)
    assert rs.learning_rate("transformer", 4 * warm) == pytest.approx(peak / 2)  # 1/sqrt(step)
    with pytest.raises(ValueError, match="gru"):
        rs.build("lstm")

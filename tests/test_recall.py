"""Associative recall (lmcourse.models.recall) and Table 1's measurements
(lmcourse.models.layer_costs)."""

from __future__ import annotations

import pytest
import torch

from lmcourse.models import layer_costs as lc
from lmcourse.models.recall import IGNORE, recall_accuracy, recall_batch, recall_model


def test_each_query_is_answered_by_the_value_after_its_key():
    b = recall_batch(16, pairs=8, queries=5, generator=torch.Generator().manual_seed(0))
    assert b.tokens.shape == b.targets.shape == (16, 2 * 8 + 5)
    assert (b.targets[:, :16] == IGNORE).all() and (b.targets[:, 16:] >= 64).all()
    for row, targets, where in zip(b.tokens, b.targets, b.key_positions, strict=True):
        keys = row[0:16:2]
        assert len(set(keys.tolist())) == 8 and (keys < 64).all()  # distinct keys
        for j, at in enumerate(where.tolist()):
            assert row[16 + j] == row[at]  # query j repeats the key shown at `at`
            assert targets[16 + j] == row[at + 1]  # and its answer is the value after it


def test_a_lookup_scores_one_and_a_guess_scores_chance():
    b = recall_batch(64, pairs=16, generator=torch.Generator().manual_seed(1))
    logits = torch.zeros(*b.tokens.shape, 128)
    assert recall_accuracy(logits, b.targets) < 0.1  # argmax of a flat guess: one id
    for i, row in enumerate(b.tokens):
        for t in range(32, row.numel()):
            shown = (row[:32:2] == row[t]).nonzero().item() * 2
            logits[i, t, row[shown + 1]] = 1.0
    assert recall_accuracy(logits, b.targets) == 1.0


def test_bad_sizes_say_what_is_wrong():
    with pytest.raises(ValueError, match="pairs must be between 1 and num_keys=8"):
        recall_batch(2, pairs=9, num_keys=8)
    with pytest.raises(ValueError, match="queries must be between 1 and pairs=4"):
        recall_batch(2, pairs=4, queries=5)
    with pytest.raises(ValueError, match="kind is"):
        recall_model("mamba", 32, 128, 48)


@pytest.mark.parametrize("kind", ["transformer", "lstm", "gru"])
def test_every_recall_model_reads_left_to_right(kind):
    """Changing a later token never changes an earlier output: no model sees the answer."""
    model = recall_model(kind, 32, 128, max_len=48).eval()
    x = recall_batch(2, pairs=8, generator=torch.Generator().manual_seed(2)).tokens
    y = x.clone()
    y[:, 20] = (y[:, 20] + 1) % 64
    with torch.no_grad():
        a, b = model(x)[0], model(y)[0]
    assert torch.allclose(a[:, :20], b[:, :20], atol=1e-6) and not torch.allclose(a, b)


def test_table_one_sequential_steps_and_gradient_paths():
    assert lc.sequential_steps("attention", 512) == 1 and lc.sequential_steps("lstm", 512) == 512
    reach = {k: lc.gradient_reach(k, 48, 16) for k in ("attention", "rnn", "lstm")}
    far = {k: float(r[40:].mean()) for k, r in reach.items()}
    near = {k: float(r[:2].mean()) for k, r in reach.items()}
    # one attention layer reaches 40+ positions back about as well as a few; recurrence fades
    assert far["attention"] > 0.05 * near["attention"]
    assert far["rnn"] < 1e-6 * near["rnn"] and far["lstm"] < 1e-3 * near["lstm"]
    assert far["attention"] > 1e3 * max(far["rnn"], far["lstm"])
    with pytest.raises(ValueError, match="kind is"):
        lc.layer("conv", 8)


def test_layer_seconds_times_forward_and_backward():
    assert lc.layer_seconds("attention", 16, 8, batch=2, repeats=1) > 0


def test_lookup_measures_read_the_right_positions():
    """With every weight on one chosen position, the measures return exactly 1 where that
    position is the key (value, previous token) and 0 otherwise."""
    from lmcourse.models.recall import lookup_attention, previous_token_attention

    b = recall_batch(4, pairs=6, generator=torch.Generator().manual_seed(3))
    T, first_query = b.tokens.shape[1], 12

    class Pointer(torch.nn.Module):  # layer 0 reads t - 1, layer 1 reads the asked value
        def attentions(self, tokens):
            prev = torch.zeros(4, 2, T, T)
            prev[:, :, torch.arange(1, T), torch.arange(T - 1)] = 1.0
            look = torch.zeros(4, 2, T, T)
            for i in range(4):
                for j, at in enumerate(b.key_positions[i].tolist()):
                    look[i, :, first_query + j, at + 1] = 1.0
            return prev, look

        def eval(self):
            return self

    mass = lookup_attention(Pointer(), b)
    assert mass.shape == (2, 2, 2)
    assert torch.equal(mass[1, :, 1], torch.ones(2)) and torch.equal(mass[1, :, 0], torch.zeros(2))
    copy = previous_token_attention(Pointer(), b)
    assert torch.equal(copy[0], torch.ones(2)) and torch.equal(copy[1], torch.zeros(2))


def test_a_seed_fixes_the_initial_weights():
    a = recall_model("lstm", 16, 128, 48, seed=3)
    torch.randn(5)  # whatever ran before
    b = recall_model("lstm", 16, 128, 48, seed=3)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))

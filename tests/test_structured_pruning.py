"""lmcourse.models.structured_pruning: a pruned model equals the masked one, with smaller
matrices; the unit gates are the loss's gradient."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from lmcourse.models.compress import count_params, gate_importance, mask_heads
from lmcourse.models.structured_pruning import (
    keep_most_important,
    prune_ffn_units,
    prune_heads,
)


@pytest.fixture
def classifier(tiny_classifier):
    return tiny_classifier.double()


def _batch(seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, 50, (8, 12), generator=g)
    mask = torch.ones_like(ids)
    mask[:3, 9:] = 0  # some padding, so the mask path is exercised too
    return ids, mask, torch.randint(0, 2, (8,), generator=g)


def test_pruning_heads_equals_masking_them_with_smaller_matrices(classifier):
    ids, mask, _ = _batch()
    keep = torch.tensor([[True, False, True, False], [False, False, False, True]])
    pruned = prune_heads(classifier, keep)
    torch.testing.assert_close(pruned(ids, mask), mask_heads(classifier, keep)(ids, mask),
                               rtol=0, atol=1e-12)
    layer = pruned.encoder.encoder.layer[1]
    assert layer.attention.self.num_heads == 1
    assert layer.attention.self.query.weight.shape == (8, 32)  # one head of width 8
    assert layer.attention.output.dense.weight.shape == (32, 8)
    # each removed head takes 3 x (8 x 32 + 8) + 32 x 8 parameters with it
    assert count_params(classifier) - count_params(pruned) == 5 * (3 * (8 * 32 + 8) + 32 * 8)
    assert classifier.encoder.encoder.layer[1].attention.self.num_heads == 4  # input untouched


def test_pruning_feed_forward_units_equals_zeroing_their_output_columns(classifier):
    ids, mask, _ = _batch()
    keep = torch.rand(2, 64, generator=torch.Generator().manual_seed(1)) > 0.5
    pruned = prune_ffn_units(classifier, keep)
    zeroed = prune_ffn_units(classifier, torch.ones(2, 64, dtype=torch.bool))
    with torch.no_grad():
        for layer, kept in zip(zeroed.encoder.encoder.layer, keep, strict=True):
            layer.output.dense.weight[:, ~kept] = 0.0
    torch.testing.assert_close(pruned(ids, mask), zeroed(ids, mask), rtol=0, atol=1e-12)
    for layer, kept in zip(pruned.encoder.encoder.layer, keep, strict=True):
        assert layer.intermediate.dense.out_features == int(kept.sum())
        assert layer.output.dense.in_features == int(kept.sum())


def test_unit_importance_is_the_gradient_of_the_loss_through_a_gate(classifier):
    ids, mask, y = _batch()

    def loss(model):
        return nn.functional.cross_entropy(model(ids, mask), y)

    importance = gate_importance(classifier, loss, of="units")
    assert importance.shape == (2, 64) and (importance >= 0).all()
    eps = 1e-6  # gate 1 + eps on unit i = column i of W_2 scaled by 1 + eps
    for layer, unit in [(0, 5), (1, 40)]:
        nudged = prune_ffn_units(classifier, torch.ones(2, 64, dtype=torch.bool))
        with torch.no_grad():
            nudged.encoder.encoder.layer[layer].output.dense.weight[:, unit] *= 1 + eps
            slope = (loss(nudged) - loss(classifier)) / eps
        assert abs(abs(float(slope)) - float(importance[layer, unit])) < 1e-5
    with pytest.raises(ValueError, match="heads' or 'units"):
        gate_importance(classifier, loss, of="layers")


def test_keep_most_important_drops_the_smallest_but_leaves_every_layer_one():
    importance = torch.tensor([[0.1, 0.2, 0.3], [5.0, 6.0, 7.0]])
    keep = keep_most_important(importance, remove=3)
    # the three smallest are all in layer 0; one of them must stay
    assert keep.tolist() == [[False, False, True], [False, True, True]]
    with pytest.raises(ValueError, match="can remove between 0 and 4"):
        keep_most_important(importance, remove=5)


def test_a_layer_without_heads_is_refused_with_a_hint(classifier):
    keep = torch.ones(2, 4, dtype=torch.bool)
    keep[0] = False
    with pytest.raises(ValueError, match="at least one of its heads"):
        prune_heads(classifier, keep)
    with pytest.raises(ValueError, match="layers x heads = 2 x 4"):
        prune_heads(classifier, torch.ones(3, 4, dtype=torch.bool))

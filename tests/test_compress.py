"""lmcourse.models.compress: each method against its definition, on a tiny random BERT."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from lmcourse.models.compress import (
    count_params,
    factorize_feed_forward,
    half_precision,
    head_importance,
    latency_seconds,
    linear_weight_bytes,
    low_rank_linear,
    magnitude_prune,
    mask_heads,
    quantize_int8,
    serialized_bytes,
    weight_sparsity,
)


@pytest.fixture
def classifier(tiny_classifier):
    return tiny_classifier


def _batch(seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, 50, (8, 12), generator=g)
    return ids, torch.ones_like(ids), torch.randint(0, 2, (8,), generator=g)


def test_magnitude_prune_zeroes_the_smallest_weights_of_each_matrix(classifier):
    pruned = magnitude_prune(classifier, 0.5)
    assert weight_sparsity(classifier) == 0.0  # the input is untouched
    for (name, before), after in zip(classifier.named_modules(), pruned.modules(), strict=True):
        if not isinstance(before, nn.Linear) or "classifier" in name:
            continue
        kept = after.weight != 0
        assert abs(kept.float().mean() - 0.5) < 0.01, name
        # every kept weight is at least as large as every removed one
        assert before.weight.abs()[kept].min() >= before.weight.abs()[~kept].max()
    assert 0.45 < weight_sparsity(pruned) < 0.5
    with pytest.raises(ValueError, match="sparsity"):
        magnitude_prune(classifier, 1.0)


def test_head_importance_is_the_gradient_of_the_loss_through_a_gate(classifier):
    ids, mask, y = _batch()

    def loss(model):
        return nn.functional.cross_entropy(model(ids, mask), y)

    importance = head_importance(classifier, loss)
    assert importance.shape == (2, 4) and (importance >= 0).all()
    # finite differences: scaling head (l, h)'s value rows by (1 + eps) is the gate xi = 1 + eps
    eps = 1e-3
    for layer, head in [(0, 1), (1, 3)]:
        nudged = mask_heads(classifier, torch.ones(2, 4, dtype=torch.bool))
        value = nudged.encoder.encoder.layer[layer].attention.self.value
        rows = slice(head * 8, head * 8 + 8)
        with torch.no_grad():
            value.weight[rows] *= 1 + eps
            value.bias[rows] *= 1 + eps
            slope = (loss(nudged) - loss(classifier)) / eps
        assert abs(abs(float(slope)) - float(importance[layer, head])) < 1e-3


def test_masking_every_head_of_a_layer_leaves_only_the_residual(classifier):
    ids, mask, _ = _batch()
    keep = torch.ones(2, 4, dtype=torch.bool)
    keep[0] = False
    masked = mask_heads(classifier, keep)
    attention = masked.encoder.encoder.layer[0].attention
    x = torch.randn(1, 5, 32)
    out, _ = attention.self(x, None)
    assert torch.all(out == 0)
    with pytest.raises(ValueError, match="layers x heads"):
        mask_heads(classifier, torch.ones(3, 4, dtype=torch.bool))


def test_low_rank_is_the_truncated_svd():
    torch.manual_seed(0)
    linear = nn.Linear(20, 12)
    full = low_rank_linear(linear, 12)
    x = torch.randn(4, 20)
    assert torch.allclose(full(x), linear(x), atol=1e-5)  # full rank: the same map
    r3 = low_rank_linear(linear, 3)
    approx = r3[1].weight @ r3[0].weight
    singular = torch.linalg.svdvals(linear.weight)
    # Eckart-Young: the spectral error of the best rank-3 approximation is sigma_4
    assert torch.isclose(torch.linalg.matrix_norm(linear.weight - approx, 2), singular[3],
                         atol=1e-5)
    assert sum(p.numel() for p in r3.parameters()) == 3 * (20 + 12) + 12
    with pytest.raises(ValueError, match="rank"):
        low_rank_linear(linear, 13)


def test_factorize_feed_forward_replaces_only_the_feed_forward(classifier):
    factored = factorize_feed_forward(classifier, 4)
    replaced = [n for n, m in factored.named_modules() if isinstance(m, nn.Sequential)]
    assert len(replaced) == 4 and all(".attention." not in n for n in replaced)
    assert count_params(factored) < count_params(classifier)
    ids, mask, _ = _batch()
    full = factorize_feed_forward(classifier, 32)
    assert torch.allclose(full(ids, mask), classifier(ids, mask), atol=1e-4)


def test_int8_quantization_shrinks_the_linear_weights_and_keeps_the_output(classifier):
    quantized = quantize_int8(classifier)
    ratio = linear_weight_bytes(quantized) / linear_weight_bytes(classifier)
    assert 0.25 <= ratio < 0.3  # one byte instead of four, plus a scale per matrix
    assert serialized_bytes(quantized) < serialized_bytes(classifier)
    ids, mask, _ = _batch()
    with torch.no_grad():
        assert torch.allclose(quantized(ids, mask), classifier(ids, mask), atol=0.05)


def test_latency_is_the_median_of_the_timed_calls():
    calls = []
    seconds = latency_seconds(lambda: calls.append(torch.is_inference_mode_enabled()),
                              repeats=5, warmup=2)
    assert len(calls) == 7 and 0 <= seconds < 0.01
    assert all(calls), "latency is timed as inference: no autograd graph is recorded"
    with pytest.raises(ValueError, match="repeats must be >= 1"):
        latency_seconds(lambda: None, repeats=0)


def test_half_precision_rounds_every_weight_within_its_format(classifier):
    # relative error 2^-8 (bfloat16) / 2^-11 (float16); float16's subnormals, below 2^-14,
    # are spaced 2^-24 apart, so there the error is up to half of that instead
    for dtype, bits, floor in ((torch.bfloat16, 8, 0.0), (torch.float16, 11, 2.0 ** -25)):
        half = half_precision(classifier, dtype)
        for before, after in zip(classifier.parameters(), half.parameters(), strict=True):
            assert after.dtype == dtype
            error = (after.double() - before.double()).abs()
            bound = torch.maximum(before.double().abs() * 2.0 ** -bits,
                                  torch.full_like(error, floor))
            assert (error <= bound).all()
        assert serialized_bytes(half) < 0.6 * serialized_bytes(classifier)
        ids, mask, _ = _batch()
        assert half(ids, mask).dtype == dtype
    assert next(classifier.parameters()).dtype == torch.float32  # the input is untouched
    with pytest.raises(ValueError, match="bfloat16 or torch.float16"):
        half_precision(classifier, torch.int8)

"""Probes of chapter 05: frequency classes, the majority floor, a ScalarMix fitted on a probe."""

import pytest
import torch

from lmcourse.models.probes import fit_scalar_mix_probe, frequency_classes, majority_accuracy


def test_frequency_classes():
    ids = torch.tensor([0, 9, 10, 99, 100, 999, 1000, 5000])
    assert frequency_classes(ids).tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert frequency_classes(ids, bounds=(5,)).tolist() == [0, 1, 1, 1, 1, 1, 1, 1]
    with pytest.raises(ValueError, match="bounds must increase"):
        frequency_classes(ids, bounds=(100, 10))


def test_majority_accuracy_uses_the_training_majority():
    labels = torch.tensor([1, 1, 1, 0, 0, 0, 0, 1])
    train = torch.tensor([True, True, True, True, False, False, False, False])
    assert majority_accuracy(labels, train) == 0.25  # train says 1; held out has one 1


def test_scalar_mix_probe_weights_the_informative_layer():
    g = torch.Generator().manual_seed(0)
    n, d = 600, 6
    labels = torch.randint(0, 3, (n,), generator=g)
    noise = torch.randn(3, n, d, generator=g)
    layers = noise.clone()
    layers[1, :, :3] += 3 * torch.nn.functional.one_hot(labels, 3)  # only layer 1 knows
    train = torch.arange(n) < 400
    mix, acc = fit_scalar_mix_probe(layers, labels, train)
    w = mix.weights.detach()
    assert acc > 0.9 > majority_accuracy(labels, train) + 0.3
    assert int(w.argmax()) == 1 and w[1] > 0.5
    _, acc_noise = fit_scalar_mix_probe(noise, labels, train)
    assert acc_noise < 0.5
    with pytest.raises(ValueError, match="layers must be"):
        fit_scalar_mix_probe(layers[:, :10], labels, train)

"""Probing a frozen biLM: which layer, and which direction, knows what?

A **probe** is a small classifier fitted on frozen representations; if a linear probe
predicts a property well above the **majority-class** floor, the property can be read off
the vectors linearly. The properties here are chosen so that they *need context* and tell
the two reading directions apart: the class of the **previous** word and the class of the
**next** word. The forward LM's state at position k has read ``t_1..t_k`` (it has seen the
previous word), the backward LM's has read ``t_k..t_N`` (it has seen the next one).

Word classes are frequency buckets of the vocabulary (ids are numbered by frequency):
very frequent function words, frequent words, mid-frequency words, rare words.

:func:`fit_scalar_mix_probe` trains ELMo's task-specific layer weights on a probe,

    ELMo_k = gamma * sum_j softmax(s)_j h_{k,j},   P(y | k) = softmax(W ELMo_k + b),

with the biLM frozen, so the learned ``softmax(s)`` says which layers the task uses.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from lmcourse.models.elmo import ScalarMix

__all__ = ["frequency_classes", "majority_accuracy", "fit_scalar_mix_probe"]


def frequency_classes(ids: torch.Tensor, bounds: Sequence[int] = (10, 100, 1000)
                      ) -> torch.Tensor:
    """Bucket of each id when ids are frequency ranks: 0 for ``id < bounds[0]``, 1 for
    ``id < bounds[1]``, ..., ``len(bounds)`` for the rest."""
    if list(bounds) != sorted(bounds):
        raise ValueError(f"bounds must increase, got {list(bounds)}")
    return torch.bucketize(ids, torch.tensor(list(bounds)), right=True)


def majority_accuracy(labels: torch.Tensor, train: torch.Tensor) -> float:
    """Accuracy on ``labels[~train]`` of always answering the most frequent training label:
    the floor every probe must be compared with."""
    majority = torch.mode(labels[train]).values
    return float((labels[~train] == majority).float().mean())


def fit_scalar_mix_probe(layers: torch.Tensor, labels: torch.Tensor, train: torch.Tensor,
                         steps: int = 300, lr: float = 0.05, weight_decay: float = 1e-3,
                         seed: int = 0) -> tuple[ScalarMix, float]:
    """Train ``ScalarMix`` + a linear classifier on ``layers`` (``(L+1) x N x D``, frozen)
    to predict ``labels`` (``N``) on the ``train`` rows; full-batch Adam on the
    cross-entropy (+ ``weight_decay`` times the squared classifier weights).

    Each layer is standardised with its training statistics first, so the weights compare
    layers on the same scale. Returns the trained mix and the held-out accuracy.
    """
    if layers.dim() != 3 or layers.shape[1] != len(labels):
        raise ValueError(f"layers must be (L+1) x N x D with N = len(labels) = {len(labels)}, "
                         f"got shape {tuple(layers.shape)}")
    mu = layers[:, train].mean(1, keepdim=True)
    sd = layers[:, train].std(1, keepdim=True) + 1e-6
    z = ((layers - mu) / sd).detach()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        mix = ScalarMix(layers.shape[0])
        head = nn.Linear(layers.shape[2], int(labels.max()) + 1)
    opt = torch.optim.Adam([*mix.parameters(), *head.parameters()], lr=lr)
    for _ in range(steps):
        loss = nn.functional.cross_entropy(head(mix(z[:, train])), labels[train])
        loss = loss + weight_decay * head.weight.pow(2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        accuracy = float((head(mix(z[:, ~train])).argmax(-1) == labels[~train]).float().mean())
    return mix, accuracy

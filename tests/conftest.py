"""Shared fixtures for the unit tests.

The repository root is importable through pytest's ``pythonpath`` setting
(pyproject.toml), so tests import ``tools`` and ``benchmarks`` as ordinary packages.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib
import pytest

from tools.nbtools import ROOT

matplotlib.use("Agg")  # tests draw figures without a display


@pytest.fixture(scope="session")
def root() -> Path:
    """The repository root."""
    return ROOT


@pytest.fixture
def tiny_classifier():
    """A random 2-layer BERT of width 32 with 4 heads and a classifier on ``[CLS]``, no
    dropout, in evaluation mode (the compression tests prune and quantize it)."""
    import torch

    from lmcourse.finetune import SequenceClassifier
    from lmcourse.models.bert import BertConfig, BertModel

    config = BertConfig(vocab_size=50, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=64, max_position_embeddings=16,
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    torch.manual_seed(0)
    return SequenceClassifier(BertModel(config), dropout=0.0).eval()

"""Measuring and shrinking models: parameter counts (more tools come with chapter 13)."""

from __future__ import annotations

from torch import nn

__all__ = ["count_params"]


def count_params(model: nn.Module, trainable_only: bool = False) -> int:
    """Number of parameters, each shared tensor counted once (ALBERT's layers are one set)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad or not trainable_only)

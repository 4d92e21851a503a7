"""Benchmarks that run for real (``make test`` collects this file): the GRU comparison
end to end, through the registry, as ``make bench`` runs it."""

from __future__ import annotations

import pytest

from benchmarks import registry
from benchmarks import suite as _suite  # noqa: F401  (registers the gru benchmark)
from benchmarks.registry import OK, run_one


def test_gru_benchmark_end_to_end():
    record = run_one(registry.REGISTRY["gru"])
    assert record["status"] == OK, record.get("message")
    row = record["rows"][0]
    assert row["max_diff"] < 1e-5, "ours and torch.nn.GRU disagree"
    assert record["ratio"] == pytest.approx(record["ours_s"] / record["reference_s"])

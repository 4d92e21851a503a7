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


def test_printed_rates_finds_rate_lines_and_rate_tables():
    import nbformat

    from benchmarks.notebooks import printed_rates

    def stream(text):
        return nbformat.v4.new_output("stream", name="stdout", text=text)

    cell = nbformat.v4.new_code_cell("...")
    cell.outputs = [
        stream("loading\n3 epochs in 2.0 s: 43,305 tokens/s\nvalidation 5.06\n"),
        stream("model  ppl  tokens/s\nRNN   7.5  148,931\nLSTM  7.6  160,526\n\nafter the table\n"),
        stream("a rate in prose: 12 s per run, no unit per second\n"),
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("1,000 tokens/s"), cell])
    assert printed_rates(nb) == ["3 epochs in 2.0 s: 43,305 tokens/s", "model  ppl  tokens/s",
                                 "RNN   7.5  148,931", "LSTM  7.6  160,526"]

"""The GPU side of chapter 07's Table 1 (``reference/gpu-costs.json``)."""

import pytest
import torch

from lmcourse.course.reference import gpu_costs


def test_the_committed_measurement_was_made_on_a_gpu_and_is_complete():
    table = gpu_costs.load()
    assert table["device"] != "cpu" and "+cu" in table["torch"]  # a CUDA build of torch
    assert table["lengths"] == list(gpu_costs.LENGTHS)
    assert set(table["layer_ms"]) == {f"{k}@{d}" for d in gpu_costs.WIDTHS
                                      for k in gpu_costs.KINDS}
    for times in table["layer_ms"].values():
        assert len(times) == len(gpu_costs.LENGTHS) and min(times) > 0
    assert set(table["train_tokens_per_s"]) == {f"{c}@{t}" for c in ("lstm", "transformer")
                                                for t in gpu_costs.TRAIN_LENGTHS}


def test_measure_runs_on_the_cpu_with_the_same_fields(monkeypatch):
    monkeypatch.setattr(gpu_costs, "LENGTHS", (8, 16))
    monkeypatch.setattr(gpu_costs, "WIDTHS", (16,))
    monkeypatch.setattr(gpu_costs, "TRAIN_LENGTHS", (16,))
    table = gpu_costs.measure(torch.device("cpu"))
    assert table["device"] == "cpu" and table["lengths"] == [8, 16]
    assert set(table["layer_ms"]) == {f"{k}@16" for k in gpu_costs.KINDS}
    assert all(v > 0 for v in table["train_tokens_per_s"].values())


def test_a_missing_measurement_names_the_command(monkeypatch, tmp_path):
    monkeypatch.setenv("LMCOURSE_REFERENCE_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="python -m lmcourse.course.reference.gpu_costs"):
        gpu_costs.load()

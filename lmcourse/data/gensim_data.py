"""Files of gensim's test data, the course's source of real text (nothing is downloaded)."""

from __future__ import annotations

from pathlib import Path


def gensim_file(filename: str) -> Path:
    """A file of gensim's test data, checked to be there."""
    try:
        from gensim.test.utils import datapath
    except ImportError as err:
        raise ImportError(
            "the course corpora come with gensim's test data, but gensim is not installed. "
            "Run `make lab` (or `pip install -e .`) to install the course dependencies."
        ) from err
    path = Path(datapath(filename))
    if not path.is_file():
        raise FileNotFoundError(
            f"gensim is installed but its test file {path} is missing; reinstall it with "
            "`pip install --force-reinstall --no-deps gensim`."
        )
    return path

"""The course cache: results a notebook only reads, computed once per recipe.

Some runs are too slow to repeat inside a notebook's one-minute budget but cheap to keep:
lab 06's fine-tuned teacher, its BiLSTM baselines, chapter 04's GloVe trained until its
loss is flat. Each is stored under ``_build/cache/`` (``$LMCOURSE_CACHE`` moves it) as a
safetensors file (tensors only, nothing executable) named ``<name>-<hash of the recipe>``,
so a changed recipe, changed data or changed code version never reads a stale result.
Writes are atomic (a temporary file renamed into place), a lock stops two notebooks run in
parallel from computing the same thing twice, and a damaged file is computed again.
``make teacher`` fills the cache before the notebooks run.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import torch

__all__ = ["CACHE_ENV", "cache_dir", "cache_path", "cached_tensors", "cached_weights",
           "file_digest", "locked", "save_tensors"]

CACHE_ENV = "LMCOURSE_CACHE"


def cache_dir() -> Path:
    """``$LMCOURSE_CACHE``, else ``_build/cache`` at the top of the course."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    return Path(__file__).resolve().parents[1] / "_build" / "cache"


def file_digest(path: Path) -> str:
    """SHA-256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cache_path(name: str, recipe: dict) -> Path:
    """``<cache>/<name>-<first 16 hex digits of SHA-256 of the recipe as JSON>.safetensors``."""
    key = hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]
    return cache_dir() / f"{name}-{key}.safetensors"


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (a ``.lock`` file beside it) while inside."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def save_tensors(tensors: dict[str, torch.Tensor], path: Path, recipe: dict) -> None:
    """Write ``tensors`` as safetensors with the recipe as metadata, atomically: readers
    see the old file or the whole new one, never half of it."""
    from safetensors.torch import save_file
    state = {k: v.detach().cpu().contiguous() for k, v in tensors.items()}
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    os.close(fd)
    try:
        save_file(state, tmp, metadata={k: str(v) for k, v in recipe.items()})
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def cached_tensors(name: str, recipe: dict, compute: Callable[[], dict[str, torch.Tensor]],
                   keys: set[str] | None = None, refresh: bool = False
                   ) -> dict[str, torch.Tensor]:
    """``compute()``'s tensors, computed once per ``recipe`` and then read from the cache.
    A file that cannot be read, or lacks any of ``keys``, is computed again, loudly;
    ``refresh=True`` computes again regardless. Recipe entries named ``rows`` (training
    data, hashed into the name) are not copied into the file's metadata."""
    path = cache_path(name, recipe)
    with locked(path):
        if path.exists() and not refresh:
            from safetensors.torch import load_file
            try:
                state = load_file(path)
            except Exception as err:  # a truncated or foreign file: compute again
                print(f"{path} could not be read ({err}); computing {name} again")
            else:
                if keys is None or keys <= state.keys():
                    return state
                print(f"{path.name} lacks {sorted(keys - state.keys())}; computing {name} again")
        state = {k: v.detach().cpu() for k, v in compute().items()}
        save_tensors(state, path, {k: v for k, v in recipe.items() if k != "rows"})
        return state


def cached_weights(name: str, recipe: dict, train: Callable[[], torch.nn.Module]
                   ) -> dict[str, torch.Tensor]:
    """The state dict of the model ``train()`` returns, trained once per ``recipe``: for
    baselines a notebook only compares against, such as lab 06's three BiLSTMs."""
    return cached_tensors(name, recipe, lambda: train().state_dict())

"""The course cache: results a notebook only reads, computed once per recipe.

Some runs are too slow to repeat inside a notebook's budget but cheap to keep: MiniLM
fine-tuned as a spoiler teacher, its BiLSTM baselines, GloVe on text8 trained until its loss
is flat, the tiny BERT (:mod:`lmcourse.course.artifacts` lists them). Each is a safetensors
file (tensors only, nothing executable) named ``<name>-<key>.safetensors``, where the key
(:func:`lmcourse.course.keys.recipe_key`) hashes the data, the initial weights, every
setting, the torch version and the device: a changed recipe is another file, never a stale
result. The files live in the user's cache folder (``platformdirs``:
``~/.cache/lmcourse`` on Linux), or in ``$LMCOURSE_CACHE``.

* writes are atomic (a temporary file renamed into place);
* a lock (``filelock``: the package also runs where ``fcntl`` does not) stops two notebooks
  run side by side from computing the same thing twice; the one that waits says so;
* a miss says what it computes, about how long that takes, and that ``make teacher``
  computes it beforehand; a damaged file is computed again, loudly;
* computing leaves the caller's random number generators as they were (:func:`keeps_rng`),
  so a notebook draws the same numbers after a cold call as after a warm one.
"""

from __future__ import annotations

import contextlib
import functools
import os
import random
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import numpy as np
import torch

from lmcourse.course.keys import recipe_key

__all__ = ["CACHE_ENV", "cache_dir", "cache_path", "cached_tensors", "keeps_rng", "locked",
           "save_tensors"]

CACHE_ENV = "LMCOURSE_CACHE"
WAIT_NOTICE_S = 2.0  # how long a lock is tried quietly before saying that we wait


def cache_dir() -> Path:
    """``$LMCOURSE_CACHE`` if set, else the user's cache folder for ``lmcourse``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser().resolve()
    from platformdirs import user_cache_dir
    return Path(user_cache_dir("lmcourse"))


def cache_path(name: str, recipe: Mapping[str, object],
               device: torch.device | str | None = None) -> Path:
    """``<cache>/<name>-<recipe_key(name, recipe, device)>.safetensors``."""
    return cache_dir() / f"{name}-{recipe_key(name, recipe, device)}.safetensors"


@contextlib.contextmanager
def locked(path: Path, what: str | None = None) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (a ``.lock`` file beside it) while inside. When
    another process holds it, print once that we wait for it, then wait."""
    from filelock import FileLock, Timeout

    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(path.with_suffix(".lock")))
    try:
        lock.acquire(timeout=WAIT_NOTICE_S)
    except Timeout:
        print(f"waiting for another notebook computing {what or path.name} ... "
              f"(lock {lock.lock_file})", flush=True)
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


@contextlib.contextmanager
def _rng_kept() -> Iterator[None]:
    py, np_state = random.getstate(), np.random.get_state()
    cuda = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    try:
        with torch.random.fork_rng(devices=cuda):
            yield
    finally:
        random.setstate(py)
        np.random.set_state(np_state)


def keeps_rng(fn: Callable | None = None):
    """Leave Python's, NumPy's and torch's (CPU and CUDA) global random generators exactly
    as they were: ``with keeps_rng(): ...`` or ``@keeps_rng`` on a function."""
    if fn is None:
        return _rng_kept()

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with _rng_kept():
            return fn(*args, **kwargs)

    return wrapper


def save_tensors(tensors: Mapping[str, torch.Tensor], path: Path,
                 metadata: Mapping[str, object] | None = None) -> None:
    """Write ``tensors`` as safetensors (``metadata`` as strings), atomically: readers see
    the old file or the whole new one, never half of it."""
    from safetensors.torch import save_file
    state = {k: v.detach().cpu().contiguous() for k, v in tensors.items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    os.close(fd)
    try:
        save_file(state, tmp, metadata={k: str(v) for k, v in (metadata or {}).items()})
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _metadata(recipe: Mapping[str, object]) -> dict[str, str]:
    """What a reader of the file can check: the short settings, not the data."""
    return {k: str(v) for k, v in recipe.items()
            if isinstance(v, (str, int, float, bool, type(None))) and len(str(v)) <= 200}


def cached_tensors(name: str, recipe: Mapping[str, object],
                   compute: Callable[[], Mapping[str, torch.Tensor]], *,
                   keys: set[str] | None = None, refresh: bool = False,
                   what: str | None = None, estimate: str | None = None,
                   device: torch.device | str | None = None,
                   beforehand: str = "`make teacher`") -> dict[str, torch.Tensor]:
    """``compute()``'s tensors, computed once per ``recipe`` (and ``device``, default the
    course device) and then read from the cache.

    A miss prints what it computes (``what``), about how long it takes (``estimate``, e.g.
    ``"about 45 s on a 2-core CPU"``) and the command that computes it beforehand
    (``beforehand``). A file that cannot be read, or lacks any of ``keys``, is computed
    again, loudly; ``refresh=True`` computes again regardless.
    ``compute`` runs with the caller's random generators saved and restored."""
    path = cache_path(name, recipe, device)
    what = what or name
    with locked(path, what):
        if path.exists() and not refresh:
            from lmcourse.pretrained import read_safetensors
            try:
                state = read_safetensors(path)
            except Exception as err:  # a truncated or foreign file: compute again
                print(f"{path} could not be read ({err}); computing {what} again")
            else:
                if keys is None or keys <= state.keys():
                    return state
                print(f"{path.name} lacks {sorted(keys - state.keys())}; computing {what} again")
        elif not refresh:
            print(f"{what}: not in the course cache ({path.parent}), computing it now"
                  + (f", {estimate}" if estimate else "")
                  + f"; {beforehand} computes it beforehand", flush=True)
        with keeps_rng():
            state = {k: v.detach().cpu() for k, v in compute().items()}
        save_tensors(state, path, _metadata(recipe))
        return state

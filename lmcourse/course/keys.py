"""Keys of the course cache: one digest of data, one key of a recipe.

A cached result is valid for exactly the inputs it was computed from, so its name hashes
all of them: the data, the initial weights, every setting, the torch version and the device.
Two helpers do all the hashing of the course (the cache, the artifacts, the reference runs):

* :func:`digest` ``(obj) -> str``: the SHA-256 (hex) of a *canonical* encoding of ``obj``:
  numbers, strings, ``None``; lists and tuples (alike) and dicts with string or int keys,
  nested;
  tensors (dtype, shape, bytes; the device does not count); a module (its state dict:
  names, then tensors); numpy arrays (dtype, shape, bytes); scipy sparse matrices (the
  canonical CSR form, whatever format they came in); dataclasses (class name, fields); files
  and folders as :class:`pathlib.Path` (by content, a folder file by file). Anything else is
  a ``TypeError``: a ``repr`` may hold a memory address, so it is never hashed.
* :func:`recipe_key` ``(name, recipe, device=None) -> str``: 16 hex digits of the digest of
  the name, the recipe (a dict of the above), the torch version and the device type.

Each value is written with a type tag and a length, so ``[1, 2]`` and ``["1", "2"]``, or
``1`` and ``1.0``, never collide; a list of ints is packed as int64 so that the ids of a
corpus hash in milliseconds.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import torch

__all__ = ["digest", "recipe_key", "torch_version"]


def torch_version() -> str:
    """torch's version without the build suffix (``2.5.1+cpu`` -> ``2.5.1``): the device
    type already tells CUDA and CPU builds apart."""
    return torch.__version__.split("+")[0]


def digest(obj: object) -> str:
    """SHA-256 (hex) of ``obj``'s canonical encoding (see the module's docstring)."""
    h = hashlib.sha256()
    _feed(h, obj)
    return h.hexdigest()


def recipe_key(name: str, recipe: Mapping[str, object],
               device: torch.device | str | None = None) -> str:
    """16 hex digits naming ``name`` computed from ``recipe`` on ``device`` (default: the
    course device) with this torch version: any change of any of them is another key."""
    if device is None:
        from lmcourse import device as course_device
        device = course_device()
    return digest({"name": name, "recipe": dict(recipe), "torch": torch_version(),
                   "device": torch.device(device).type})[:16]


# ---- the canonical encoding ------------------------------------------------------------------

def _put(h, tag: bytes, payload: bytes = b"") -> None:
    h.update(tag + len(payload).to_bytes(8, "little") + payload)


def _feed(h, obj: object) -> None:
    if obj is None or isinstance(obj, (bool, np.bool_)):
        _put(h, b"b", repr(None if obj is None else bool(obj)).encode())
    elif isinstance(obj, (int, np.integer)):
        _put(h, b"i", str(int(obj)).encode())
    elif isinstance(obj, (float, np.floating)):
        _put(h, b"f", float(obj).hex().encode())
    elif isinstance(obj, str):
        _put(h, b"s", obj.encode())
    elif isinstance(obj, bytes):
        _put(h, b"y", obj)
    elif isinstance(obj, torch.Tensor):
        _tensor(h, obj)
    elif isinstance(obj, np.ndarray):
        _array(h, obj, b"a")
    elif _is_sparse(obj):
        _sparse(h, obj)
    elif isinstance(obj, torch.nn.Module):
        _put(h, b"M")
        _feed(h, obj.state_dict())
    elif isinstance(obj, Mapping):
        items = []
        for key, value in obj.items():
            if not isinstance(key, (str, int)) or isinstance(key, bool):
                raise TypeError(f"digest: dict keys must be strings or ints, "
                                f"got {type(key).__name__}")
            items.append((key, value))
        _put(h, b"d", str(len(items)).encode())
        for key, value in sorted(items, key=lambda kv: (isinstance(kv[0], str), kv[0])):
            _feed(h, key)
            _feed(h, value)
    elif isinstance(obj, (list, tuple)):
        if obj and all(type(x) is int for x in obj) and -(2**63) <= min(obj) <= max(obj) < 2**63:
            _array(h, np.asarray(obj, dtype=np.int64), b"I")
            return
        _put(h, b"l", str(len(obj)).encode())
        for x in obj:
            _feed(h, x)
    elif isinstance(obj, (set, frozenset)):
        _put(h, b"S", "".join(sorted(digest(x) for x in obj)).encode())
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        _put(h, b"D", type(obj).__qualname__.encode())
        _feed(h, {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)})
    elif isinstance(obj, Path):
        _path(h, obj)
    elif isinstance(obj, torch.dtype | torch.device):
        _put(h, b"t", str(obj).encode())
    else:
        raise TypeError(f"digest: cannot hash a {type(obj).__module__}.{type(obj).__qualname__} "
                        f"(give its data: tensors, arrays, numbers, strings, lists, dicts)")


def _tensor(h, t: torch.Tensor) -> None:
    t = t.detach()
    if t.is_sparse:
        t = t.coalesce()
        _put(h, b"T", f"sparse:{tuple(t.shape)}".encode())
        _tensor(h, t.indices())
        _tensor(h, t.values())
        return
    t = t.cpu().contiguous()
    _put(h, b"T", f"{t.dtype}:{tuple(t.shape)}".encode())
    _put(h, b"x", t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")


def _array(h, a: np.ndarray, tag: bytes) -> None:
    if a.dtype == object:
        raise TypeError("digest: cannot hash a numpy array of Python objects")
    a = np.ascontiguousarray(a)
    _put(h, tag, f"{a.dtype.str}:{a.shape}".encode())
    _put(h, b"x", a.tobytes())


def _is_sparse(obj: object) -> bool:
    module = type(obj).__module__
    if not module.startswith("scipy.sparse"):
        return False
    import scipy.sparse as sp
    return sp.issparse(obj)


def _sparse(h, X) -> None:
    import scipy.sparse as sp
    X = sp.csr_matrix(X, copy=True)
    X.sum_duplicates()
    X.sort_indices()
    _put(h, b"C", f"{X.dtype.str}:{X.shape}".encode())
    for part in (X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data):
        _put(h, b"x", np.ascontiguousarray(part).tobytes())


def _path(h, path: Path) -> None:
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file())
        _put(h, b"P", str(len(files)).encode())
        for p in files:
            _put(h, b"k", p.relative_to(path).as_posix().encode())
            _path(h, p)
        return
    file_hash = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            file_hash.update(block)
    _put(h, b"F", file_hash.digest() + os.fsencode(str(path.stat().st_size)))

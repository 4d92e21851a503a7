"""Auto-checks for the labs: each check passes quietly with the measured figure, or
fails with a hint that says what is wrong and where to look.

A check function runs the student's code on cases whose answer it computes itself
(usually with PyTorch), and raises :class:`CheckFailed` on the first mismatch. Code
that still raises ``NotImplementedError`` fails with a reminder, not a traceback.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


class CheckFailed(AssertionError):
    """A lab check did not pass; the message is the hint for the student."""


def passed(name: str, detail: str = "") -> None:
    """Report a passed check (with the measured figure beside the reference)."""
    print(f"✅ {name}: passed" + (f" ({detail})" if detail else ""))


def fail(name: str, hint: str) -> None:
    """Raise :class:`CheckFailed` for ``name`` with a specific ``hint``."""
    raise CheckFailed(f"❌ {name}: {hint}")


def expect(condition: bool, name: str, hint: str) -> None:
    """Fail with ``hint`` unless ``condition`` holds."""
    if not condition:
        fail(name, hint)


def attempt(name: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call student code; turn a missing implementation or a crash into a clear failure."""
    try:
        return fn(*args, **kwargs)
    except CheckFailed:
        raise
    except NotImplementedError:
        fail(name, "not implemented yet: replace the `raise NotImplementedError` line "
                   "with your code, run that cell, then this one again.")
    except Exception as err:  # noqa: BLE001 - any crash in student code is a failed check
        fail(name, f"your code raised {type(err).__name__}: {err}")
    return None  # unreachable; keeps type checkers calm


def close(a: float, b: float, tol: float = 1e-6) -> bool:
    """``|a - b| <= tol * max(1, |b|)``: relative for large numbers, absolute near 0."""
    return abs(a - b) <= tol * max(1.0, abs(b))


def same(a: Any, b: Any, tol: float = 1e-8) -> bool:
    """``a`` is a tensor of ``b``'s shape and equal to it within ``tol`` (in float64)."""
    return (isinstance(a, torch.Tensor) and a.shape == b.shape
            and bool(torch.allclose(a.double(), b.double(), atol=tol, rtol=tol)))


def run_student(name: str, fn: Callable[..., Any], *args: Any, shape_hint: str = "") -> Any:
    """Run student code without autograd; shape errors get ``shape_hint``, other problems the
    usual message."""
    try:
        with torch.no_grad():  # the checks compare values; no graph needed
            return fn(*args)
    except (CheckFailed, NotImplementedError):
        return attempt(name, fn, *args)
    except RuntimeError as err:
        text = str(err)
        if "view size is not compatible" in text:
            fail(name, "`.view` failed: after a transpose the tensor is not contiguous in "
                       "memory, so .view cannot regroup its axes. Use .reshape(...) (or "
                       ".contiguous().view(...)).")
        if shape_hint and any(w in text for w in ("shape", "size", "dimension", "match")):
            fail(name, f"a shape error ({text.splitlines()[0]}). {shape_hint}")
        fail(name, f"your code raised RuntimeError: {text.splitlines()[0]}")
    except Exception as err:  # noqa: BLE001 - any crash in student code is a failed check
        fail(name, f"your code raised {type(err).__name__}: {err}")
    return None  # unreachable


def as_float_tensor(x: Any) -> torch.Tensor | None:
    """Student output as a float CPU tensor (from a tensor, array or list), or None."""
    try:
        return torch.as_tensor(x.detach() if isinstance(x, torch.Tensor) else x).float().cpu()
    except (TypeError, ValueError, RuntimeError):
        return None

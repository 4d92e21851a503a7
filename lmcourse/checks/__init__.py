"""Auto-checks for the labs: each check passes quietly with the measured figure, or
fails with a hint that says what is wrong and where to look.

A check function runs the student's code on cases whose answer it computes itself
(usually with PyTorch), and raises :class:`CheckFailed` on the first mismatch. Code
that still raises ``NotImplementedError`` fails with a reminder naming the function to
write, not a traceback; in Jupyter a failed check shows as two lines, what failed and the
hint.

A check whose code runs an earlier exercise's function first runs that exercise's check,
quietly (:func:`requires`); if it fails, the student is told to pass that exercise first
instead of being given advice about the wrong function. :func:`earlier` finds the function
the student's code calls, in the namespace it was defined in (the notebook's).
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import sys
import sysconfig
import traceback
from collections.abc import Callable
from pathlib import Path
from types import CodeType, FunctionType, TracebackType
from typing import Any, NoReturn

import numpy as np
import torch

#: bold red in a notebook's error output (IPython renders ANSI colours there)
_RED, _RESET = "\x1b[1;31m", "\x1b[0m"


class CheckFailed(AssertionError):
    """A lab check did not pass; ``hint`` says what is wrong and where to look.

    ``str(err)`` is ``"❌ <check>: <hint>"``. In IPython and Jupyter the error shows as that,
    on two lines, and nothing else (:meth:`_render_traceback_`): the traceback would only
    walk through the check's own code, and through PyTorch's when the student's code
    crashed inside a training loop. Nor does a plain traceback print the exception that led
    to it (``__suppress_context__``); it stays in ``__context__`` for whoever debugs a check.
    """

    def __init__(self, check: str, hint: str = "", exercise: int | str | None = None):
        super().__init__(f"❌ {check}: {hint}" if hint else check)
        self.check, self.hint = check, hint
        self.exercise = exercise  # an earlier exercise to pass first, when that is the cause
        self.__suppress_context__ = True

    def _render_traceback_(self) -> list[str]:
        """What IPython shows instead of the traceback: one line per string."""
        if not self.hint:
            return [f"{_RED}✗ check failed{_RESET}: {self.check}"]
        return [f"{_RED}✗ check failed: {self.check}{_RESET}", self.hint]


def passed(name: str, detail: str = "") -> None:
    """Report a passed check (with the measured figure beside the reference)."""
    print(f"✅ {name}: passed" + (f" ({detail})" if detail else ""))


def fail(name: str, hint: str, exercise: int | str | None = None) -> NoReturn:
    """Raise :class:`CheckFailed` for ``name`` with a specific ``hint`` (``exercise``: the
    earlier exercise to pass first, when the hint sends the student back to it)."""
    raise CheckFailed(name, hint, exercise)


def expect(condition: bool, name: str, hint: str, exercise: int | str | None = None) -> None:
    """Fail with ``hint`` unless ``condition`` holds."""
    if not condition:
        fail(name, hint, exercise)


#: where library code lives (the course package, PyTorch, the standard library, everything
#: installed): a frame outside these is the student's (a notebook cell, a lab's own file)
_LIBRARY_DIRS = tuple(sorted({str(Path(p).resolve()) for p in (
    Path(__file__).resolve().parents[1], sysconfig.get_paths()["stdlib"],
    sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], sys.prefix,
    sys.base_prefix)}))


def _is_library(filename: str) -> bool:
    if filename.startswith("<frozen "):
        return True
    try:
        path = str(Path(filename).resolve())
    except (OSError, ValueError):
        return False
    return any(path == d or path.startswith(d + os.sep) for d in _LIBRARY_DIRS)


def student_frame(tb: TracebackType | None) -> traceback.FrameSummary | None:
    """The innermost frame of a traceback that runs the student's code, not a library's,
    with its function's qualified name (``ReviewClassifier.forward``) as ``name``."""
    found = None
    while tb is not None:
        code = tb.tb_frame.f_code
        if not _is_library(code.co_filename):
            found = traceback.FrameSummary(code.co_filename, tb.tb_lineno,
                                           getattr(code, "co_qualname", code.co_name))
        tb = tb.tb_next
    return found


def problem(err: BaseException) -> str:
    """The hint for student code that raised ``err``: which function is not written yet,
    or what crashed and on which line."""
    frame = student_frame(err.__traceback__)
    where = frame.name if frame and frame.name != "<module>" else None
    if isinstance(err, NotImplementedError):
        if where:
            return (f"not implemented yet: fill in `{where}` (it still raises "
                    "NotImplementedError), run its cell, then this check again.")
        return ("not implemented yet: replace the `raise NotImplementedError` line with your "
                "code, run that cell, then this check again.")
    text = str(err).strip().splitlines()
    hint = f"your code raised {type(err).__name__}" + (f": {text[0]}" if text else "")
    if frame and frame.line:
        hint += f" (in `{where or 'your cell'}`, line {frame.lineno}: `{frame.line.strip()}`)"
    return hint


def attempt(name: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call student code; turn a missing implementation or a crash into a clear failure
    that names the student's function (:func:`problem`), without the traceback."""
    try:
        return fn(*args, **kwargs)
    except CheckFailed:
        raise
    except Exception as err:  # noqa: BLE001 - any crash in student code is a failed check
        hint = problem(err)
    raise CheckFailed(name, hint) from None


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
    except CheckFailed:
        raise
    except RuntimeError as err:
        text = str(err)
        if "view size is not compatible" in text:
            hint = ("`.view` failed: after a transpose the tensor is not contiguous in "
                    "memory, so .view cannot regroup its axes. Use .reshape(...) (or "
                    ".contiguous().view(...)).")
        elif shape_hint and any(w in text for w in ("shape", "size", "dimension", "match")):
            hint = f"a shape error ({text.splitlines()[0]}). {shape_hint}"
        else:
            hint = problem(err)
    except Exception as err:  # noqa: BLE001 - any crash in student code is a failed check
        hint = problem(err)
    raise CheckFailed(name, hint) from None


def as_float_tensor(x: Any) -> torch.Tensor | None:
    """Student output as a float CPU tensor (from a tensor, array or list), or None."""
    try:
        return torch.as_tensor(x.detach() if isinstance(x, torch.Tensor) else x).float().cpu()
    except (TypeError, ValueError, RuntimeError):
        return None


# ---- earlier exercises ------------------------------------------------------------------

def as_floats(x: Any) -> np.ndarray | None:
    """``x`` as a 1-d float array, or None if it cannot be read as one."""
    try:
        if isinstance(x, torch.Tensor):
            x = x.detach().cpu().numpy()
        return np.asarray(x, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        return None


def as_number(name: str, got: Any) -> float:
    """``got`` as one float, or a failed check ``name`` that says what came back."""
    try:
        return float(got)
    except (TypeError, ValueError):
        fail(name, f"return one number (a float), got {type(got).__name__}: {got!r:.60}")
    return 0.0  # unreachable


def _functions(code: Any) -> list[FunctionType]:
    """The Python functions of ``code``: itself, a class's methods, a module's class's."""
    if isinstance(code, FunctionType):
        return [code]
    cls = code if isinstance(code, type) else type(code)
    return [f for c in cls.__mro__ if not c.__module__.startswith(("builtins", "torch."))
            for f in vars(c).values() if isinstance(f, FunctionType)]


def _global_names(fn: FunctionType) -> set[str]:
    """The global names a function's code (nested functions included) reads."""
    codes, names = [fn.__code__], set()
    while codes:
        code = codes.pop()
        names |= set(code.co_names)  # globals and attributes: a superset, narrowed below
        codes += [c for c in code.co_consts if isinstance(c, CodeType)]
    return {n for n in names if n in fn.__globals__}


def calls(code: Any, name: str) -> bool:
    """Whether the student's ``code`` uses the global ``name`` when it runs: directly, or
    through the notebook's own functions and classes it uses (the call graph, not the whole
    notebook: a wrong helper the graded code never calls is no cause of its failure)."""
    seen: set[int] = set()
    todo = [code]
    while todo:
        item = todo.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        for fn in _functions(item):
            if _is_library(fn.__code__.co_filename):
                continue
            used = _global_names(fn)
            if name in used:
                return True
            todo += [fn.__globals__[n] for n in used
                     if isinstance(fn.__globals__[n], FunctionType | type)]
    return False


def earlier(code: Any, name: str) -> Any:
    """What ``name`` means to the student's ``code`` (a function, a class or a module) when
    it runs: the object of that name where the code was defined (in a lab, the notebook),
    or None if the code never uses it (:func:`calls`), sees none, or is library code."""
    for fn in _functions(code):
        if not _is_library(fn.__code__.co_filename) and fn.__globals__.get(name) is not None:
            return fn.__globals__[name] if calls(code, name) else None
    return None


@contextlib.contextmanager
def _quiet() -> Any:
    """No printing, and every random state (Python's, NumPy's, torch's CPU) as it was."""
    py, np_state = random.getstate(), np.random.get_state()
    with contextlib.redirect_stdout(io.StringIO()), torch.random.fork_rng(devices=[]):
        try:
            yield
        finally:
            random.setstate(py)
            np.random.set_state(np_state)


#: while :func:`required_exercises` collects them: the exercises whose checks ran first
_required: list[set[int | str]] = []


@contextlib.contextmanager
def required_exercises() -> Any:
    """Collect the earlier exercises whose checks :func:`requires` runs inside the block
    (the grader states each check's chain from what a correct solution makes it run)."""
    found: set[int | str] = set()
    _required.append(found)
    try:
        yield found
    finally:
        _required.remove(found)


def requires(name: str, exercise: int | str, check: Callable[..., Any], *args: Any,
             **kwargs: Any) -> None:
    """Run exercise ``exercise``'s ``check`` on ``args`` quietly; if it fails, fail ``name``
    with "pass exercise N first" and that check's hint (N: the earliest failing exercise,
    when that check itself depends on another)."""
    for found in _required:
        found.add(exercise)
    try:
        with _quiet():
            check(*args, **kwargs)
    except CheckFailed as err:
        if err.exercise is not None:
            raise CheckFailed(name, err.hint, err.exercise) from None
        why = f"{err.check}: {err.hint}"
    except Exception as err:  # noqa: BLE001 - a crash in that check is a failure there too
        why = problem(err)
    else:
        return
    hint = (f"pass exercise {exercise} first: this check runs your code from exercise "
            f"{exercise}, and that exercise's check fails ({why})")
    raise CheckFailed(name, hint, exercise) from None


def requires_earlier(name: str, code: Any,
                     *exercises: tuple[str, int | str, Callable[..., Any]]) -> None:
    """For each ``(function name, exercise, its check)``: :func:`requires` on the function of
    that name that the student's ``code`` calls, when it sees one (:func:`earlier`)."""
    for function, exercise, check in exercises:
        fn = earlier(code, function)
        if callable(fn):
            requires(name, exercise, check, fn)

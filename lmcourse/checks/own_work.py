"""Graded work is the student's own code.

The autograder (``make grader``) runs a lab's checks on a submitted notebook. Before a check
grades a function or a class, :func:`require_own_work` makes sure it was written in that
notebook: not imported from the course's implementation (``lmcourse.models`` holds an
answer to most exercises, ``lmcourse.tokenizers`` and the checks themselves hold others),
not a subclass of it, and not a thin wrapper that calls it. What the lab itself imports in
its given cells (helpers such as ``clip_gradients``) stays allowed: those are the lab's,
not the answer; a course *module* does not, since any answer is one attribute away.

The rule catches the easy routes, not every obfuscation: a grader is one witness among
several, and the course's hand-in still shows the code.
"""

from __future__ import annotations

import dis
import functools
import types
from collections.abc import Iterable, Mapping
from typing import Any

from lmcourse.checks import CheckFailed

COURSE = "lmcourse"
#: the instructions that read a global name (``self.encoder`` reads an attribute: not one)
_GLOBAL_LOADS = {"LOAD_GLOBAL", "LOAD_NAME"}


def _is_code(value: Any) -> bool:
    """A function, a class, a module or a partial: what can carry someone else's answer."""
    return isinstance(value, types.FunctionType | types.BuiltinFunctionType | type
                      | types.ModuleType | functools.partial)


def _from_course(obj: Any) -> str | None:
    """The course module ``obj`` comes from (or is), or None."""
    if isinstance(obj, types.ModuleType):
        name = obj.__name__
    else:
        name = getattr(obj, "__module__", None) or ""
    return name if isinstance(name, str) and (name == COURSE or name.startswith(COURSE + ".")) \
        else None


def _code_objects(code: types.CodeType) -> Iterable[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)


def _contents(cell: types.CellType) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # a closure variable not yet assigned
        return None


def _functions(obj: Any) -> Iterable[types.FunctionType]:
    """``obj`` if it is a function, else the functions a class defines itself."""
    if isinstance(obj, types.FunctionType):
        yield obj
    elif isinstance(obj, type):
        for value in vars(obj).values():
            value = getattr(value, "__func__", value)  # staticmethod / classmethod
            if isinstance(value, property):
                value = value.fget
            if isinstance(value, types.FunctionType):
                yield value


def borrowed(obj: Any, allowed: Iterable[str] = ()) -> str | None:
    """What in ``obj`` comes from the course's code, or None when it is all the notebook's
    own: ``obj`` itself, a base class, or a global name its code uses (a function or class
    named in ``allowed`` is one the lab's given cells import, so it does not count; a
    course module always does)."""
    allowed = set(allowed)
    source = _from_course(obj) or _from_course(getattr(obj, "func", None))  # or a partial
    if source:
        return f"it is imported from `{source}`"
    if isinstance(obj, type):
        for base in obj.__mro__[1:]:
            if _from_course(base):
                return f"it subclasses `{base.__module__}.{base.__qualname__}`"
    for function in _functions(obj):
        names = {i.argval for c in _code_objects(function.__code__)
                 for i in dis.get_instructions(c) if i.opname in _GLOBAL_LOADS}
        values = {n: function.__globals__.get(n) for n in names}
        values.update(zip(function.__code__.co_freevars,  # and what it closes over
                          map(_contents, function.__closure__ or ()), strict=True))
        for name, value in sorted(values.items(), key=lambda item: item[0]):
            if not _is_code(value):
                continue  # data the lab made, such as a course model's instance
            source = _from_course(value)
            if name in allowed and not isinstance(value, types.ModuleType):
                continue
            if source:
                return f"`{function.__qualname__}` calls `{name}` from `{source}`"
    return None


def require_own_work(env: Mapping[str, Any], names: Iterable[str],
                     allowed: Iterable[str] = ()) -> None:
    """Raise :class:`CheckFailed` unless every one of ``names`` in the notebook's namespace
    ``env`` is defined there and is the student's own code (:func:`borrowed`)."""
    for name in names:
        if name not in env:
            raise CheckFailed(f"`{name}` is not defined",
                              f"run the cell that defines `{name}` before you hand in")
        if not callable(env[name]):
            continue  # data the check is given, not code to grade
        reason = borrowed(env[name], allowed)
        if reason:
            raise CheckFailed(
                f"`{name}` is not your own code",
                f"{reason}. The grader grades what you write in this notebook: write "
                f"`{name}` yourself, as the exercise asks.")


def grade(env: dict[str, Any], cell: str, graded: Iterable[str] = (),
          given: Iterable[str] = ()) -> None:
    """Run a lab's check ``cell`` on a submitted notebook's namespace ``env``, once the
    functions and classes it grades are known to be the student's own: the autograder's
    test. A failure raises the check's own :class:`CheckFailed`, whose message is the
    student's feedback."""
    require_own_work(env, graded, given)
    exec(compile(cell, "<check cell>", "exec"), env)  # noqa: S102 - the lab's own cell

"""Graded work is the student's own code.

The autograder (``make grader``) runs a lab's checks on a submitted notebook. Before a check
grades a function or a class, :func:`require_own_work` makes sure it was written in that
notebook, judged on what it really uses (:func:`borrowed`): its code, its defaults and
keyword defaults, its closure, its class's bases and attributes, and the notebook's own
helpers it uses, followed through. Nothing of the course's implementation may turn up there
(``lmcourse.models`` holds an answer to most exercises; ``lmcourse.tokenizers``,
``lmcourse.autograd`` and the checks themselves hold others). What the lab itself imports in
its given cells (helpers such as ``clip_gradients``) stays allowed: those are the lab's, not
the answer; a course *module* does not, since any answer is one attribute away. A function
that another check grades (``elsewhere``) is left to that check: a borrowed helper costs the
checks that grade it, and only those.

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
            if isinstance(value, types.FunctionType) and not _from_course(value):
                yield value  # (a course function as an attribute: judged as one)


def _is_notebooks(obj: Any) -> bool:
    """``obj`` is a function or class written in the notebook (not a library's)."""
    from lmcourse.checks import _is_library

    if isinstance(obj, types.FunctionType):
        return not _is_library(obj.__code__.co_filename)
    if isinstance(obj, type):
        return any(not _is_library(f.__code__.co_filename) for f in _functions(obj))
    return False


#: the instructions that read an attribute (``module.name``) or a method to call
_ATTRIBUTE_LOADS = {"LOAD_ATTR", "LOAD_METHOD"}
#: the instructions that read a name a module may be bound to: a global, or a closure's
_NAME_LOADS = _GLOBAL_LOADS | {"LOAD_DEREF", "LOAD_CLASSDEREF"}


def _through_modules(function: types.FunctionType, modules: dict[str, types.ModuleType]
                     ) -> dict[str, Any]:
    """What the code reads through the modules it uses by name (``lmcourse.device``,
    ``attn.scaled_dot_product_attention``), each resolved; a module the code only passes
    around, reading nothing from it, stands for itself."""
    found: dict[str, Any] = {}
    for code in _code_objects(function.__code__):
        steps = list(dis.get_instructions(code))
        for i, step in enumerate(steps):
            if step.opname not in _NAME_LOADS or step.argval not in modules:
                continue
            path, value = [step.argval], modules[step.argval]
            for later in steps[i + 1:]:
                if not isinstance(value, types.ModuleType) or later.opname not in _ATTRIBUTE_LOADS:
                    break
                path.append(later.argval)
                value = getattr(value, later.argval, None)
            found[".".join(path)] = value
    return found


def _imports(function: types.FunctionType) -> dict[str, Any]:
    """The course modules the code imports when it runs (``import``/``from ... import``
    inside a function), and what it takes from them."""
    import importlib

    found: dict[str, Any] = {}
    for code in _code_objects(function.__code__):
        module = None
        for step in dis.get_instructions(code):
            if step.opname == "IMPORT_NAME":
                module = step.argval if str(step.argval).startswith(COURSE) else None
                if module:
                    found[module] = importlib.import_module(module)
            elif step.opname == "IMPORT_FROM" and module:
                found[f"{module}.{step.argval}"] = getattr(found[module], step.argval, None)
                found.pop(module, None)  # what it takes, not the module, is what it uses
    return found


def _uses(function: types.FunctionType) -> dict[str, Any]:
    """What a function really uses, by name: the globals its code (nested code included)
    reads, and what it reads through a module (``m.f``), what it imports as it runs, what it
    closes over, and its defaults and keyword defaults (``_impl=...``)."""
    names = {i.argval for c in _code_objects(function.__code__)
             for i in dis.get_instructions(c) if i.opname in _GLOBAL_LOADS}
    values = {n: function.__globals__.get(n) for n in names}
    values.update(zip(function.__code__.co_freevars,  # and what it closes over
                      map(_contents, function.__closure__ or ()), strict=True))
    modules = {n: v for n, v in values.items() if isinstance(v, types.ModuleType)}
    values = {n: v for n, v in values.items() if n not in modules}
    values.update(_through_modules(function, modules))
    values.update(_imports(function))
    for i, value in enumerate(function.__defaults__ or ()):
        values[f"default #{i + 1} of `{function.__qualname__}`"] = value
    for key, value in (function.__kwdefaults__ or {}).items():
        values[f"keyword default `{key}` of `{function.__qualname__}`"] = value
    return values


def _class_attributes(cls: type) -> dict[str, Any]:
    """A class's own attributes that are not its methods (``impl = course_function``), and
    the course functions wrapped as its static or class methods."""
    found = {}
    for key, value in vars(cls).items():
        inner = getattr(value, "__func__", value)
        if isinstance(inner, types.FunctionType) and not _from_course(inner):
            continue  # a method of its own: walked as code
        found[f"class attribute `{cls.__name__}.{key}`"] = inner
    return found


def borrowed(obj: Any, allowed: Iterable[str] = (), elsewhere: Iterable[str] = ()
             ) -> str | None:
    """What in ``obj`` comes from the course's code, or None when it is all the notebook's
    own: ``obj`` itself, a base class, a class attribute, or anything its code uses (the
    globals it reads, its closure, its defaults), followed through the notebook's own
    helpers. A function or class named in ``allowed`` is one the lab's given cells import,
    so it does not count (a course module always does); one named in ``elsewhere`` is graded
    by another check, which alone loses its point when it is borrowed."""
    allowed, elsewhere = set(allowed), set(elsewhere)
    source = _from_course(obj) or _from_course(getattr(obj, "func", None))  # or a partial
    if source:
        return f"it is imported from `{source}`"
    seen: set[int] = set()
    todo: list[Any] = [obj]
    while todo:
        item = todo.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        uses: list[tuple[str, Any, str]] = []
        if isinstance(item, type):
            for base in item.__mro__[1:]:
                if _from_course(base):
                    return (f"`{item.__qualname__}` subclasses "
                            f"`{base.__module__}.{base.__qualname__}`")
            uses += [(n, v, item.__qualname__) for n, v in _class_attributes(item).items()]
        for function in _functions(item):
            uses += [(n, v, function.__qualname__) for n, v in _uses(function).items()]
        for name, value, where in sorted(uses, key=lambda use: (use[2], use[0])):
            reason = _judge(name, value, allowed, elsewhere, where)
            if reason:
                return reason
            if name not in elsewhere and _is_notebooks(value):
                todo.append(value)  # a helper of the notebook's: what it uses counts too
    return None


def _judge(name: str, value: Any, allowed: set[str], elsewhere: set[str], where: str
           ) -> str | None:
    """Why ``value`` (used by ``where`` under ``name``) is a borrowing, or None. The course's
    top-level helpers (``lmcourse.device``, ``lmcourse.budget``, ...) answer no exercise."""
    value = value.__func__ if isinstance(value, types.MethodType) else value
    if not _is_code(value) or name in elsewhere or name.split(".")[-1] in elsewhere:
        return None  # data the lab made (a course model's instance), or graded elsewhere
    if name.split(".")[-1] in allowed and not isinstance(value, types.ModuleType):
        return None  # a helper the lab's own cells import, however it is reached
    source = _from_course(value) or _from_course(getattr(value, "func", None))
    if not source or (source == COURSE and not isinstance(value, types.ModuleType)):
        return None
    what = getattr(value, "__name__", name)
    if name.startswith(("default", "keyword default", "class attribute")):
        return f"its {name} is `{what}`, the course's own (from `{source}`)"
    if "." in name:
        return f"`{where}` uses `{name}`, the course's own (from `{source}`)"
    return f"`{where}` calls `{name}`, the course's own (from `{source}`)"


def require_own_work(env: Mapping[str, Any], names: Iterable[str],
                     allowed: Iterable[str] = (), elsewhere: Iterable[str] = ()) -> None:
    """Raise :class:`CheckFailed` unless every one of ``names`` in the notebook's namespace
    ``env`` is defined there and is the student's own code (:func:`borrowed`; ``elsewhere``:
    the functions other checks grade, which only those checks hold against the student)."""
    for name in names:
        if name not in env:
            raise CheckFailed(f"`{name}` is not defined",
                              f"run the cell that defines `{name}` before you hand in")
        if not callable(env[name]):
            continue  # data the check is given, not code to grade
        reason = borrowed(env[name], allowed, set(elsewhere) - {name})
        if reason:
            raise CheckFailed(
                f"`{name}` is not your own code",
                f"{reason}. The grader grades what you write in this notebook, and graded "
                f"code may not hand its work to the course's: replace that with code of your "
                f"own (the helpers the lab's own cells import stay yours to use).")

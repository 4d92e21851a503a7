"""lmcourse: the helper package every notebook of the course imports.

It holds the few things every chapter needs: which device to run on, how to make a
run repeatable, how much compute a notebook may spend, and how to show the source
of a function right after the equation it implements.
"""

from __future__ import annotations

import inspect
import os
import random
from pathlib import Path

import numpy as np
import torch

__all__ = ["ShownSource", "add_to_class", "budget", "device", "on_gpu", "progress_bar",
           "seed_everything", "show", "where"]
#: the course's release (CHANGELOG.md): pyproject.toml reads it from here, and myst.yml's
#: site option ``version`` repeats it for the site (tests/test_release.py holds them equal)
__version__ = "0.3.0"


def device() -> torch.device:
    """The device notebooks train on: CUDA when a GPU is visible, otherwise the CPU.

    Set ``LMCOURSE_DEVICE=cpu`` to force the CPU on a GPU machine.
    """
    wanted = os.environ.get("LMCOURSE_DEVICE", "").strip().lower()
    if wanted:
        return torch.device(wanted)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def on_gpu() -> bool:
    """True when :func:`device` is a GPU, i.e. when notebooks may train longer."""
    return device().type == "cuda"


def budget(cpu: int | float, gpu: int | float | None = None) -> int | float:
    """Pick a training size for the machine: ``cpu`` on a laptop, ``gpu`` on a GPU.

    Every notebook is budgeted for about two minutes on a 2-core CPU; on a GPU the
    same cell may do more (more steps, a larger model). ``gpu`` defaults to ``cpu``.
    """
    if gpu is None or not on_gpu():
        return cpu
    return gpu


def seed_everything(seed: int = 0) -> torch.Generator:
    """Seed Python, NumPy and PyTorch (CPU and CUDA) so a notebook reruns identically.

    Returns a fresh ``torch.Generator`` seeded the same way, for code that wants its
    own stream of random numbers.
    """
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)
    return torch.Generator().manual_seed(seed)


def add_to_class(cls: type):
    """Decorator: attach the function below to ``cls`` as a method of the same name, so a
    class can be written one method per notebook cell (d2l's ``add_to_class``).

    >>> class A: ...
    >>> @add_to_class(A)
    ... def twice(self, x): return 2 * x
    >>> A().twice(3)
    6
    """
    if not isinstance(cls, type):
        raise TypeError(f"add_to_class needs a class, got {cls!r}: write @add_to_class(Value)")

    def attach(function):
        setattr(cls, function.__name__, function)
        return function

    return attach


class ShownSource(str):
    """The source :func:`show` displayed; as a cell's last value it adds nothing more."""

    def _ipython_display_(self) -> None:
        pass


def where(obj: object) -> str:
    """``path:line`` of ``obj``'s definition, the path relative to the course's top folder
    (``lmcourse/models/heads.py:86``) when it lives there."""
    target = inspect.unwrap(obj)
    path = Path(inspect.getsourcefile(target) or inspect.getfile(target)).resolve()
    line = inspect.getsourcelines(target)[1]
    root = Path(__file__).resolve().parents[1]
    shown = path.relative_to(root) if path.is_relative_to(root) else path.name
    return f"{Path(shown).as_posix()}:{line}"


def show(obj: object) -> str:
    """Display where ``obj`` is defined (``path:line``) and its highlighted source, in a
    notebook; every call in a cell shows, not only the last. Returns the source (plain text
    outside Jupyter).

    The chapters call this right after an equation so the student reads the code that
    implements it, and can open the file it comes from.
    """
    source = inspect.getsource(obj)
    try:
        from IPython import get_ipython
        from IPython.display import Code, Markdown, display
    except ImportError:  # pragma: no cover - IPython is a dependency of the course
        return source
    if get_ipython() is None:
        return source
    display(Markdown(f"`{where(obj)}`"), Code(source, language="python"))
    return ShownSource(source)


def progress_bar(iterable, progress: bool = True, **kwargs):
    """``tqdm(iterable, **kwargs)`` (a widget in Jupyter, text elsewhere) for every training
    loop of the course: off with ``progress=False``, and off when ``TQDM_DISABLE=1`` is set
    (as ``make test`` does), which tqdm's notebook bar would otherwise ignore."""
    from tqdm.auto import tqdm

    quiet = not progress or os.environ.get("TQDM_DISABLE", "").lower() in ("1", "true")
    return tqdm(iterable, disable=quiet, **kwargs)

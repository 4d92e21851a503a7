"""Words for how a student's answer differs from the right one, without giving it away.

A failure message may show what the student's code returned, where it differs (which
element, which position) and how (too high or too low, by how much relative to the right
value, the wrong sign); it never prints the right value itself, which is the answer the
exercise asks for. These helpers phrase those comparisons for the check modules.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["first_difference", "how_far", "which_differ"]


def how_far(got: float, want: float, tol: float = 1e-9) -> str:
    """How ``got`` differs from ``want`` in words: ``"is right"``, ``"has the wrong sign"``,
    ``"is too high by about 10%"``, ``"is too low"`` (no share when ``want`` is 0). The share is
    rounded to one significant figure, so that it and ``got`` together do not give ``want``."""
    scale = max(abs(want), 1e-300)
    if abs(got - want) <= tol * max(1.0, abs(want)):
        return "is right"
    if want != 0 and abs(got + want) <= tol * max(1.0, abs(want)):
        return "has the wrong sign"
    direction = "too high" if got > want else "too low"
    if want == 0:
        return f"is {direction}"
    share = abs(got - want) / scale
    if share < 0.01:
        return f"is {direction} by less than 1%"
    if share >= 1:
        return f"is {direction} by a factor of about {float(f'{1 + share:.1g}'):g}" \
            if got > want else f"is {direction} by about 100%"
    return f"is {direction} by about {float(f'{share:.1g}'):.0%}"


def which_differ(labels: Sequence[str], got: Sequence[float], want: Sequence[float],
                 tol: float = 1e-9) -> str:
    """``"x.grad is too high by 12%, y.grad is right"``: each label with :func:`how_far`, the
    wrong ones first."""
    parts = [(label, how_far(g, w, tol)) for label, g, w in zip(labels, got, want, strict=True)]
    parts.sort(key=lambda p: p[1] == "is right")
    return ", ".join(f"{label} {words}" for label, words in parts)


def first_difference(got: Sequence[Any], want: Sequence[Any]) -> int | None:
    """The first position where ``got`` and ``want`` differ (the shorter one's length when
    one is a prefix of the other), or None when they are equal."""
    for i, (g, w) in enumerate(zip(got, want, strict=False)):
        if g != w:
            return i
    return None if len(got) == len(want) else min(len(got), len(want))

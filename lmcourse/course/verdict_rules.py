"""How a claim's verdict is decided and named: the outcome of per-seed figures under a
rule (every seed, spreads, paired seeds), and the word that names it for a paper's claim or
the course's own (:mod:`lmcourse.course.claims` explains the words and the rules, and prints
and records the verdicts)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["AHEAD", "BEHIND", "LEVEL", "NO_VERDICT", "NO_VERDICT_RULES", "OUTCOMES",
           "OWN_VERDICTS", "PAPER_VERDICTS", "RULES", "SEED_RULES", "VERDICTS", "decide",
           "format_number", "verdict_word"]

#: the three outcomes of a comparison: ours ahead, behind, or neither (what decide returns)
AHEAD, BEHIND, LEVEL = "ahead", "behind", "level"
OUTCOMES = (AHEAD, BEHIND, LEVEL)
#: the verdicts on a claim a paper made, one per outcome
REPRODUCED, NOT_REPRODUCED, NO_DIFFERENCE = "reproduced", "not reproduced", "no difference"
PAPER_VERDICTS = (REPRODUCED, NOT_REPRODUCED, NO_DIFFERENCE)
#: the verdicts on a claim of the course's own, one per outcome
SUPPORTED, CONTRADICTED, INCONCLUSIVE = "supported", "contradicted", "inconclusive"
OWN_VERDICTS = (SUPPORTED, CONTRADICTED, INCONCLUSIVE)
#: one run or a live demonstration: the figure is printed, no verdict is drawn
NO_VERDICT = "no verdict"
VERDICTS = (*PAPER_VERDICTS, *OWN_VERDICTS, NO_VERDICT)
#: how a verdict is decided from the numbers (``"stated"``: given by the notebook)
RULES = ("every seed", "spreads", "paired seeds", "paired bootstrap")
#: the rules :func:`decide` applies to per-seed figures
SEED_RULES = RULES[:3]
#: the "rules" of a claim with no verdict: one run of ours, or a live demonstration
NO_VERDICT_RULES = ("one run", "live run")


# ---- checking the inputs ----------------------------------------------------------------

def _number(x: Any, what: str) -> float:
    if hasattr(x, "item") and callable(x.item):  # a NumPy or torch scalar
        x = x.item()
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{what} must be a number, got {type(x).__name__} {x!r}")
    x = float(x)
    if math.isnan(x) or math.isinf(x):
        raise ValueError(f"{what} is {x}: a verdict needs finite numbers (did a run diverge, "
                         "or a metric divide by zero?)")
    return x


def _values(x: Any, what: str) -> list[float]:
    """One number, or one per seed (a list, a tuple, a NumPy array, a torch tensor)."""
    if hasattr(x, "tolist") and callable(x.tolist):  # arrays and tensors, 0-d included
        x = x.tolist()
    if isinstance(x, (str, bytes)):
        raise TypeError(f"{what} must be a number or one number per seed, got {x!r}")
    if isinstance(x, Iterable):
        values = [_number(v, f"{what}[{i}]") for i, v in enumerate(x)]
        if not values:
            raise ValueError(f"{what} is empty: give one value per seed (at least one)")
        return values
    return [_number(x, what)]


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _half_range(values: Sequence[float]) -> float:
    return (max(values) - min(values)) / 2


def _round(x: float) -> float:
    """Six significant digits: the record stays readable and its diffs stable."""
    return float(f"{x:.6g}")


# ---- the decision -----------------------------------------------------------------------

def decide(ours: Any, baseline: Any, *, higher_is_better: bool,
           rule: str = "every seed") -> str:
    """The outcome of "ours beats the baseline" from per-seed values: ``"ahead"``,
    ``"behind"`` or ``"level"`` (see the module's docstring for the rules; :func:`verdict_word`
    names it). ``ours`` and ``baseline`` are a number or one per seed."""
    if rule not in SEED_RULES:
        raise ValueError(f"unknown rule {rule!r}: use one of {SEED_RULES} (a paired bootstrap "
                         "is decided by bootstrap_verdict)")
    if not isinstance(higher_is_better, bool):
        raise TypeError("higher_is_better must be True or False (is a larger figure better?)")
    sign = 1.0 if higher_is_better else -1.0
    a = [sign * v for v in _values(ours, "ours")]  # larger is better from here on
    b = [sign * v for v in _values(baseline, "the baseline's figure")]
    if rule == "paired seeds":
        if len(a) != len(b) or len(a) < 2:
            raise ValueError(f"the paired-seeds rule compares seed i with seed i: give both "
                             f"sides the same seeds, 2 or more (got {len(a)} and {len(b)})")
        differences = [x - y for x, y in zip(a, b, strict=True)]
        if all(d > 0 for d in differences):
            return AHEAD
        if all(d < 0 for d in differences):
            return BEHIND
        return LEVEL
    if rule == "every seed":
        if min(a) > max(b):
            return AHEAD
        if max(a) < min(b):
            return BEHIND
        return LEVEL
    gap, noise = _mean(a) - _mean(b), _half_range(a) + _half_range(b)
    if gap > noise:
        return AHEAD
    if gap < -noise:
        return BEHIND
    return LEVEL


def verdict_word(outcome: str, paper: object) -> str:
    """The verdict that names ``outcome`` (``decide``'s): a paper's words when the claim has
    a published figure or source (``paper`` not None), the course's own words otherwise."""
    if outcome not in OUTCOMES:
        raise ValueError(f"unknown outcome {outcome!r}: one of {OUTCOMES}")
    words = OWN_VERDICTS if paper is None else PAPER_VERDICTS
    return words[OUTCOMES.index(outcome)]


def _outcome(word: str) -> str:
    """The outcome a stated verdict names, in either family of words (or the outcome)."""
    for words in (OUTCOMES, PAPER_VERDICTS, OWN_VERDICTS):
        if word in words:
            return OUTCOMES[words.index(word)]
    raise ValueError(f"unknown verdict {word!r}: use one of {PAPER_VERDICTS} for a paper's "
                     f"claim or {OWN_VERDICTS} for the course's own (or an outcome, {OUTCOMES})")


def _reason(rule: str, outcome: str, ours: list[float], base: list[float] | None,
            digits: int) -> str:
    """Why the numbers gave this verdict, in a few words."""
    if rule == "one run":
        return "one run: no spread to judge the gap against"
    if rule == "live run":
        return ("this notebook's minute of training, a demonstration: the full runs over "
                "seeds give the verdict")
    if rule in ("stated", "paired bootstrap") or base is None:
        return ""
    if rule == "paired seeds":
        gaps = ", ".join(f"{x - y:+.{digits}f}" for x, y in zip(ours, base, strict=True))
        how = {AHEAD: "every paired difference favours ours",
               BEHIND: "every paired difference favours the baseline",
               LEVEL: "the paired differences disagree in sign"}[outcome]
        return f"{how} (ours − baseline, seed by seed: {gaps})"
    if rule == "spreads":
        gap = abs(_mean(ours) - _mean(base))
        noise = _half_range(ours) + _half_range(base)
        return (f"the gap {format_number(gap, digits)} is "
                f"{'within' if outcome == LEVEL else 'larger than'} the spreads added "
                f"({format_number(noise, digits)})")
    one = len(base) == 1
    who = "ours is" if len(ours) == 1 else "every seed is"
    if outcome == AHEAD:
        return f"{who} ahead" + (" of it" if one else " of every baseline seed")
    if outcome == BEHIND:
        return f"{who} behind" + (" it" if one else " every baseline seed")
    if len(ours) == 1 and one:
        return "the two figures tie"
    return "the seeds straddle it" if one else "the seeds overlap"


def format_number(x: float, digits: int) -> str:
    """``digits`` decimals; a huge figure (a diverged perplexity) in scientific notation."""
    return f"{x:.{digits}f}" if abs(x) < 1e5 else f"{x:.{max(digits, 1) + 1}g}"


def _figure(values: list[float], digits: int) -> str:
    if len(values) == 1:
        return f"{format_number(values[0], digits)} (1 seed)"
    mean, spread = format_number(_mean(values), digits), format_number(_half_range(values), digits)
    return f"{mean} ± {spread} (half range of {len(values)} seeds)"


def _baseline_figure(values: list[float], digits: int) -> str:
    if len(values) == 1:
        return format_number(values[0], digits)
    return _figure(values, digits)

"""A figure from training is checked against the spread its run really has.

The same short training run prints different last digits on different processors and
thread counts (0.325 on one CPU, 0.336 on another), and a different seed moves it further.
So a figure quoted from training is never compared with a tolerance guessed once for all:
its run is repeated over seeds and thread counts, and the figure is checked against the
interval those repeats span,

    mean ± 3 s,    s = sqrt( Σ (x_i − mean)² / (n − 1) ),

widened, where the repeats agree to every printed digit, to one unit of the last digit
printed (a rounding the next processor may flip). :class:`Interval` holds it, says where it
came from, and says how far a figure outside it lies; worked answers
(``tests/test_worked_answers.py``) and lab checks use the same words.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["COVERAGE", "Interval", "last_digit_unit"]

#: half-width of the interval in standard deviations of the repeats
COVERAGE = 3.0


def last_digit_unit(figure: str) -> float:
    """One unit of the last printed digit: ``"0.935"`` -> 0.001, ``"12.5"`` -> 0.1."""
    decimals = figure.split(".", 1)[1] if "." in figure else ""
    return 10.0 ** -len(decimals)


@dataclass(frozen=True)
class Interval:
    """The interval a repeated figure spans: ``mean ± COVERAGE · s`` over ``values``,
    at least one unit of the last printed digit wide on each side. ``source`` says which
    repeats produced it (e.g. "seeds 0-2 x 1 and 2 threads, AMD EPYC, 2026-11-27")."""

    values: tuple[float, ...]
    unit: float
    source: str = ""

    @classmethod
    def of(cls, values: Sequence[float], unit: float, source: str = "") -> Interval:
        if len(values) < 2:
            raise ValueError(f"an interval needs at least two repeats, got {len(values)}: "
                             "run the figure over several seeds (and thread counts)")
        if not all(math.isfinite(v) for v in values):
            raise ValueError(f"a repeat printed a non-finite figure: {list(values)}")
        return cls(tuple(float(v) for v in values), float(unit), source)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values)

    @property
    def sd(self) -> float:
        return statistics.stdev(self.values)

    @property
    def half_width(self) -> float:
        return max(COVERAGE * self.sd, self.unit)

    @property
    def low(self) -> float:
        return self.mean - self.half_width

    @property
    def high(self) -> float:
        return self.mean + self.half_width

    def __contains__(self, figure: float) -> bool:
        return self.low <= figure <= self.high

    def distance(self, figure: float) -> float:
        """How far ``figure`` lies outside the interval (0 inside, signed: < 0 below)."""
        if figure < self.low:
            return figure - self.low
        if figure > self.high:
            return figure - self.high
        return 0.0

    def place(self, figure: float) -> str:
        """Where ``figure`` lies: ``"inside"``, or ``"0.012 below"`` / ``"0.004 above"``."""
        gap = self.distance(figure)
        return "inside" if gap == 0 else f"{abs(gap):.3f} {'below' if gap < 0 else 'above'}"

    def outside(self, figure: float, what: str = "your figure") -> str:
        """``""`` when ``figure`` lies inside, else the :meth:`miss` sentence."""
        return "" if figure in self else self.miss(figure, what)

    def describe(self) -> str:
        """``"0.907 to 0.962 (mean 0.935 ± 3 s.d. over 6 repeats: seeds ...)"``."""
        digits = max(0, round(-math.log10(self.unit))) + 1 if self.unit < 1 else 1
        fmt = f"{{:.{digits}f}}"
        where = f": {self.source}" if self.source else ""
        return (f"{fmt.format(self.low)} to {fmt.format(self.high)} (mean "
                f"{fmt.format(self.mean)} ± {COVERAGE:g} s.d. over {len(self.values)} "
                f"repeats{where})")

    def miss(self, figure: float, what: str = "your figure") -> str:
        """A sentence for a figure outside the interval: how far, and the reference spread."""
        gap = self.distance(figure)
        side = "below" if gap < 0 else "above"
        return (f"{what} {figure:g} is {abs(gap):.3g} {side} the reference interval "
                f"{self.describe()}")

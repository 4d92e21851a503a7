"""Reading committed reference runs into the lines and tables the notebooks print.

:func:`describe` says what one run shows (final metric over the seeds, when each seed's curve
first went below each baseline); :func:`compare` puts several runs in one table; the
pre-training bench's tables come from :func:`bench_table`. Everything is read through
:func:`~lmcourse.course.reference.result.load`.
"""

from __future__ import annotations

import math
import statistics

from lmcourse.course.reference.result import load
from lmcourse.metrics import SPREAD, mean_spread

__all__ = ["bench_table", "compare", "crossing", "describe", "last_train_loss", "prose_arm",
           "seed_values"]


def crossing(curve: list[list[float]], level: float) -> tuple[int, float] | None:
    """The first ``(step, seconds)`` at which a held-out curve is below ``level`` (None if
    it never is)."""
    return next(((int(step), sec) for step, sec, value in curve if value < level), None)


def describe(name: str, metric: str = "held_out_ppl",
             baselines: dict[str, str] | None = None) -> str:
    """What a committed reference shows, in lines printed from its file: the final metric
    over the seeds (mean ± half range, the course's one spread) and, for each baseline,
    when each seed's held-out curve first went below it."""
    result = load(name)
    finals = result.values(metric)
    lines = [f"{name} ({len(finals)} seeds x {result.minutes_per_seed:.0f} min, "
             f"{result.device_kind}): {metric} "
             f"{mean_spread(finals, 2)} ({SPREAD}; seeds: "
             f"{', '.join(f'{v:.2f}' for v in finals)})"]
    lowest = [min(result.curves[s], key=lambda point: point[2]) for s in result.seeds]
    lines.append("  lowest point of each seed's held-out curve: " + ", ".join(
        f"{p[2]:.2f} at step {int(p[0])}" for p in lowest)
        + " (read from the held-out text itself: a description, not a stopping rule)")
    for key, label in (baselines or {}).items():
        level = result.baselines[key]
        hits = [crossing(result.curves[s], level) for s in result.seeds]
        when = ("never, on any seed" if all(h is None for h in hits) else ", ".join(
            "never" if h is None else f"step {h[0]} ({h[1] / 60:.1f} min)" for h in hits))
        below = sum(v < level for v in finals)
        lines.append(f"  vs {label} ({level:.2f}): ends below it on {below} of {len(finals)} "
                     f"seeds; first below it: {when}")
    return "\n".join(lines)


def compare(names: dict[str, str], metric: str = "held_out_ppl",
            baselines: dict[str, str] | None = None) -> str:
    """One table of several committed references (``{label: name}``), printed from their
    files: parameters, training tokens/s, the final metric over the seeds (mean ± half
    range, named in the header) and, for each baseline, the mean training minutes at which
    the seeds first went below it (``-`` if some seed never did)."""
    results = {label: load(name) for label, name in names.items()}
    first = next(iter(results.values()))
    header = f"{'model':<12} {'parameters':>10} {'tokens/s':>9} {metric + ' (3 seeds)':>24}"
    header += "".join(f" {'below ' + label:>16}" for label in (baselines or {}).values())
    lines = [f"({len(first.seeds)} seeds: {SPREAD})", header]
    for label, result in results.items():
        seeds = result.seeds
        finals = result.values(metric)
        params = result.metrics[seeds[0]].get("parameters", float("nan"))
        speed = statistics.mean(result.metrics[s].get("tokens_per_s", math.nan) for s in seeds)
        row = (f"{label:<12} {params:>10,} {speed:>9,.0f} "
               f"{mean_spread(finals):>24}")
        for key in baselines or {}:
            hits = [crossing(result.curves[s], first.baselines[key]) for s in seeds]
            when = ("-" if None in hits
                    else f"{statistics.mean(h[1] for h in hits) / 60:.1f} min")
            row += f" {when:>16}"
        lines.append(row)
    for key, label in (baselines or {}).items():
        lines.append(f"{label:<12} {'':>10} {'':>9} {first.baselines[key]:>24.3f}")
    return "\n".join(lines)


def seed_values(name: str, metric: str) -> list[float]:
    """``metric`` of every seed of committed reference ``name``, in seed order."""
    return load(name).values(metric)


def prose_arm(arm: str, metric: str) -> list[float]:
    """``metric`` of every seed of the real-prose bench arm ``prose-bench-<arm>``."""
    return seed_values(f"prose-bench-{arm}", metric)


def last_train_loss(name: str, steps: int = 100) -> list[float]:
    """Each seed's mean training loss over its last ``steps`` steps."""
    result = load(name)
    return [sum(result.train_loss[s][-steps:]) / steps for s in result.seeds]


COLUMN = 17  # the width of one metric's column in :func:`bench_table`


def bench_table(arms: dict[str, str], metrics: dict[str, str], width: int = 40,
                rivals: dict[str, dict[str, float]] | None = None) -> str:
    """One row per arm (``{label: reference name}``), one column per metric (``{key:
    heading}``): mean ± half range over the seeds (counts: the mean), named in the header,
    ``-`` where an arm has no such metric. Each of ``rivals`` (``{label: {metric key:
    value}}``: a baseline's single figures, no seeds) adds a row below the arms, its value
    under its metric's column, blank elsewhere. The label column widens to the longest label."""
    rivals = rivals or {}
    width = max(width, *(len(label) + 1 for label in [*arms, *rivals]))
    lines = [f"{'(3 seeds: ' + SPREAD + ')':<{width}}"
             + "".join(f" {heading:>{COLUMN}}" for heading in metrics.values())]
    for label, name in arms.items():
        row = f"{label:<{width}}"
        for key in metrics:
            try:
                values = seed_values(name, key)
            except KeyError:
                row += f" {'-':>{COLUMN}}"
                continue
            mean, half = sum(values) / len(values), (max(values) - min(values)) / 2
            shown = (f"{round(mean):,}" if key in ("parameters", "steps")
                     else f"{mean:,.0f} ± {half:,.0f}" if key == "tokens_per_s"
                     else mean_spread(values, digits=1) if key == "train_seconds"
                     else mean_spread(values))
            row += f" {shown:>{COLUMN}}"
        lines.append(row)
    for label, figures in rivals.items():
        unknown = sorted(set(figures) - set(metrics))
        if unknown:
            raise KeyError(f"rival {label!r} has figures for {unknown}, which are not columns "
                           f"of this table ({list(metrics)})")
        lines.append(f"{label:<{width}}" + "".join(
            f" {figures[key]:>{COLUMN}.3f}" if key in figures else f" {'':>{COLUMN}}"
            for key in metrics).rstrip())
    return "\n".join(lines)

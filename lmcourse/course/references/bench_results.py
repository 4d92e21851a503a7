"""Reading the committed ``bench-*`` runs, as chapters 10-11 print them."""

from __future__ import annotations


def seed_values(name: str, metric: str) -> list[float]:
    """``metric`` of every seed of committed reference ``name``, in seed order."""
    from lmcourse.course.reference import load

    result = load(name)
    return [result["metrics"][str(s)][metric] for s in result["seeds"]]


def last_train_loss(name: str, steps: int = 100) -> list[float]:
    """Each seed's mean training loss over its last ``steps`` steps."""
    from lmcourse.course.reference import load

    result = load(name)
    return [sum(result["train_loss"][str(s)][-steps:]) / steps for s in result["seeds"]]


def bench_table(arms: dict[str, str], metrics: dict[str, str], width: int = 40) -> str:
    """One row per arm (``{label: reference name}``), one column per metric (``{key:
    heading}``): mean +- spread (half the range) over the seeds (counts: the mean), ``-``
    where an arm has no such metric."""
    from lmcourse.metrics import mean_spread

    lines = [f"{'(reference runs, 3 seeds)':<{width}}"
             + "".join(f" {heading:>17}" for heading in metrics.values())]
    for label, name in arms.items():
        row = f"{label:<{width}}"
        for key in metrics:
            try:
                values = seed_values(name, key)
            except KeyError:
                row += f" {'-':>17}"
                continue
            mean, half = sum(values) / len(values), (max(values) - min(values)) / 2
            shown = (f"{round(mean):,}" if key in ("parameters", "steps")
                     else f"{mean:,.0f} ± {half:,.0f}" if key == "tokens_per_s"
                     else mean_spread(values, digits=1) if key == "train_seconds"
                     else mean_spread(values))
            row += f" {shown:>17}"
        lines.append(row)
    return "\n".join(lines)

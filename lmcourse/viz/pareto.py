"""Model compression: size and latency against quality, with the Pareto front.

A model is on the **Pareto front** of cost against quality when no other model is both
cheaper and better: sorted by cost, it is better than every cheaper model.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import matplotlib.pyplot as plt

__all__ = ["pareto_figure", "pareto_front"]


def pareto_front(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The ``(cost, quality)`` points that no other point beats on both: in order of cost,
    each one better than every cheaper one."""
    front, best = [], float("-inf")
    for cost, quality in sorted(points, key=lambda p: (p[0], -p[1])):
        if quality > best:
            front.append((cost, quality))
            best = quality
    return front


def pareto_figure(summary: dict[str, tuple[float, float, list[float]]], short: dict[str, str],
                  baseline: float, baseline_name: str = "bag of words",
                  floor: float | None = None) -> tuple[plt.Figure, list[str]]:
    """Two panels, checkpoint size (MB) and latency (ms) against ROC-AUC. ``summary`` maps a
    model's name to ``(MB, seconds per batch, ROC-AUC per seed)``: each point is the mean,
    its error bar the range over seeds; ``short`` gives the labels drawn. The baseline is a
    dotted line; points below ``floor`` (default: a little under the lowest of the
    baseline and 0.85) are left out and returned by name: ``(figure, left_out)``."""
    floor = min(0.85, baseline - 0.02) if floor is None else floor
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for ax, column, label in ((axes[0], 0, "checkpoint size (MB)"),
                              (axes[1], 1, "latency per batch of 64 (ms)")):
        scale = 1.0 if column == 0 else 1e3
        points = sorted((values[column] * scale, statistics.mean(values[2]), name)
                        for name, values in summary.items())
        for i, (x, y, name) in enumerate(points):
            if y < floor:
                continue
            aucs = summary[name][2]
            ax.errorbar(x, y, yerr=[[y - min(aucs)], [max(aucs) - y]], fmt="o", capsize=3,
                        zorder=3)
            ax.annotate(short[name], (x, y), fontsize=8, textcoords="offset points",
                        xytext=(4, 6 if i % 2 else -11))
        front = pareto_front([(x, y) for x, y, _ in points])
        ax.step(*zip(*front, strict=True), where="post", color="black", lw=1.2, alpha=0.6,
                label="Pareto front")
        ax.axhline(baseline, color="grey", ls=":", label=baseline_name)
        ax.set_ylim(floor, None)
        ax.set_xlabel(label)
    axes[0].set_ylabel("ROC-AUC (test sentences)")
    axes[0].legend(loc="lower right", fontsize=8)
    fig.suptitle("size and latency against quality (higher and further left is better)")
    fig.tight_layout()
    left_out = [name for name, values in summary.items()
                if statistics.mean(values[2]) < floor]
    return fig, left_out

"""A reference run drawn beside the notebook's live run, on the same axes.

A reference run (``reference/<name>/result.json``) holds, for each seed, a held-out curve
of ``[step, training seconds, metric]`` points. :func:`plot_reference` draws those curves
(one colour, one thin line per seed), the live run of the notebook on top of them, and the
baselines as horizontal lines, each labelled with where it came from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["plot_reference"]


def plot_reference(ax, result: Mapping, live: Sequence[Sequence[float]] | None = None,
                   live_label: str = "this run, on your machine",
                   baselines: Mapping[str, str] | None = None, x: str = "seconds",
                   metric: str = "held-out perplexity", color: str = "C0"):
    """Draw ``result``'s seed curves, ``live`` (``[step, seconds, metric]`` points) and
    ``baselines`` (``{key in result['baselines']: label}``) on ``ax``; ``x`` is ``"seconds"``
    (training time) or ``"step"``. Returns ``ax``."""
    if x not in ("seconds", "step"):
        raise ValueError(f"x must be 'seconds' or 'step', got {x!r}")
    col = 1 if x == "seconds" else 0
    seeds = result["seeds"]
    minutes = result["wall_s"] / len(seeds) / 60
    label = (f"reference: {len(seeds)} seeds x {minutes:.0f} min "
             f"({result['device'].split(',')[0]}), `{result['command']}`")
    for k, seed in enumerate(seeds):
        curve = result["curves"][str(seed)]
        ax.plot([p[col] for p in curve], [p[2] for p in curve], color=color, lw=1, alpha=0.8,
                label=label if k == 0 else None)
    if live:
        ax.plot([p[col] for p in live], [p[2] for p in live], "o-", color="C3", ms=5,
                label=live_label)
    styles = iter([":", "-.", "--", (0, (1, 3)), (0, (5, 2, 1, 2))])
    for key, name in (baselines or {}).items():
        ax.axhline(result["baselines"][key], color="0.4", lw=1, linestyle=next(styles),
                   label=f"{name} ({result['baselines'][key]:.2f})")
    ax.set_xscale("log")
    ax.set_xlabel("training seconds (log scale)" if x == "seconds" else "training step (log)")
    ax.set_ylabel(metric)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return ax

"""A reference run drawn beside the notebook's live run, on the same axes.

A reference run (``reference/<name>/result.json``) holds, for each seed, a held-out curve
of ``[step, training seconds, metric]`` points. :func:`plot_reference` draws those curves
(one colour, one thin line per seed), the live run of the notebook on top of them, and the
baselines as horizontal lines, each labelled with where it came from.
:func:`plot_crossover` draws several references on one set of axes against training time
or training compute (``C = 6 N D``: parameters times tokens seen, times 6) and marks where
each network's curve first goes below each baseline. :func:`plot_learning_curve` draws
quality against the number of labelled examples, one band per method, and
:func:`plot_data_scaling` held-out perplexity against the number of training tokens, one
line per model (networks and the tuned n-grams alike).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lmcourse.course.reference.result import ReferenceResult

__all__ = ["crossover_figure", "plot_crossover", "plot_data_scaling", "plot_learning_curve",
           "plot_reference", "x_values"]


X_LABELS = {"seconds": "training seconds (log scale)", "step": "training step (log)",
            "flops": "training compute, 6 x parameters x tokens (FLOPs, log)"}


def x_values(result: ReferenceResult, seed: int | str, x: str) -> list[float]:
    """The x coordinates of seed ``seed``'s curve: its steps, its training seconds, or its
    training compute ``6 N D`` with ``D = step x batch x bptt`` tokens."""
    if x not in X_LABELS:
        raise ValueError(f"x must be one of {sorted(X_LABELS)}, got {x!r}")
    curve = result.curves[int(seed)]
    if x == "flops":
        recipe, n = result.recipe, result.metrics[int(seed)].get("parameters")
        if n is None:
            raise ValueError(f"reference {result.name} has no parameter count: refresh it "
                             f"with `{result.command}`")
        return [6 * n * p[0] * recipe["batch"] * recipe["bptt"] for p in curve]
    return [p[1 if x == "seconds" else 0] for p in curve]


def _baseline_lines(ax, result: ReferenceResult, baselines: Mapping[str, str]) -> None:
    """One grey horizontal line per baseline (``{key in result.baselines: label}``)."""
    styles = iter([":", "-.", "--", (0, (1, 3)), (0, (5, 2, 1, 2))])
    for key, name in baselines.items():
        level = result.baselines[key]
        ax.axhline(level, color="0.4", lw=1, linestyle=next(styles), label=f"{name} ({level:.2f})")


def plot_reference(ax, result: ReferenceResult, live: Sequence[Sequence[float]] | None = None,
                   live_label: str = "this run, on your machine",
                   baselines: Mapping[str, str] | None = None, x: str = "seconds",
                   metric: str = "held-out perplexity", color: str = "C0",
                   label: str | None = None):
    """Draw ``result``'s seed curves, ``live`` (``[step, seconds, metric]`` points) and
    ``baselines`` (``{key in result.baselines: label}``) on ``ax``; ``x`` is ``"seconds"``
    (training time), ``"step"`` or ``"flops"`` (``6 N D``). Returns ``ax``."""
    seeds = result.seeds
    minutes = result.minutes_per_seed
    if label is None:
        label = (f"reference: {len(seeds)} seeds x {minutes:.0f} min "
                 f"({result.device_kind}), `{result.command}`")
    for k, seed in enumerate(seeds):
        curve = result.curves[int(seed)]
        ax.plot(x_values(result, seed, x), [p[2] for p in curve], color=color, lw=1,
                alpha=0.8, label=label if k == 0 else None)
    if live:
        if x == "flops":
            raise ValueError("a live run has no compute axis: draw it against seconds or steps")
        col = 1 if x == "seconds" else 0
        ax.plot([p[col] for p in live], [p[2] for p in live], "o-", color="C3", ms=5,
                label=live_label)
    _baseline_lines(ax, result, baselines or {})
    ax.set_xscale("log")
    ax.set_xlabel(X_LABELS[x])
    ax.set_ylabel(metric)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return ax


def plot_crossover(ax, results: Mapping[str, ReferenceResult], baselines: Mapping[str, str],
                   x: str = "seconds", metric: str = "held-out perplexity"):
    """Draw several references (``{label: result}``) and the ``baselines`` of the first on
    one set of axes, marking each seed's first point below each baseline with a dot: where
    each network crosses each n-gram. Returns ``ax``."""
    first = next(iter(results.values()))
    _baseline_lines(ax, first, baselines)
    for k, (label, result) in enumerate(results.items()):
        color = f"C{k}"
        for i, seed in enumerate(result.seeds):
            curve, xs = result.curves[int(seed)], x_values(result, seed, x)
            ax.plot(xs, [p[2] for p in curve], color=color, lw=1, alpha=0.8,
                    label=label if i == 0 else None)
            for key in baselines:
                level = first.baselines[key]
                hit = next((j for j, p in enumerate(curve) if p[2] < level), None)
                if hit is not None:
                    ax.plot(xs[hit], curve[hit][2], "o", color=color, ms=4)
    ax.set_xscale("log")
    ax.set_yscale("log")
    plain_log_ticks(ax.yaxis)
    ax.set_xlabel(X_LABELS[x])
    ax.set_ylabel(metric)
    ax.grid(alpha=0.3, which="both")
    return ax


def plot_learning_curve(ax, curves: Mapping[str, Mapping[int, Sequence[float]]],
                        metric: str = "test ROC-AUC", chance: float | None = 0.5):
    """One line per method (``{label: {n labels: [value of each seed]}}``): the mean over
    the seeds with a dot at each size, and a band from the lowest to the highest seed.
    Log x axis (labelled examples); ``chance`` draws a dotted line. Returns ``ax``."""
    for k, (label, curve) in enumerate(curves.items()):
        sizes = sorted(curve)
        values = [curve[n] for n in sizes]
        mean = [sum(v) / len(v) for v in values]
        ax.fill_between(sizes, [min(v) for v in values], [max(v) for v in values],
                        color=f"C{k}", alpha=0.15, lw=0)
        ax.plot(sizes, mean, "o-", color=f"C{k}", ms=4, lw=1.5,
                label=f"{label} ({len(values[0])} seeds)")
    if chance is not None:
        ax.axhline(chance, color="0.5", ls=":", lw=1, label="majority / chance")
    ax.set_xscale("log")
    plain_log_ticks(ax.xaxis)
    ax.set_xlabel("labelled training sentences (log scale)")
    ax.set_ylabel(metric)
    ax.grid(alpha=0.3, which="both")
    return ax


def show_learning_curves(curves: Mapping[str, Mapping[int, Sequence[float]]], title: str,
                         sizes: Sequence[int] | None = None, width: int = 44,
                         plot: bool = True, dpi: int = 80) -> None:
    """A learning-curve figure (:func:`plot_learning_curve`) titled ``title`` (``plot=False``:
    none), then a table of each method's mean over seeds at ``sizes`` (default: the first
    method's sizes)."""
    import matplotlib.pyplot as plt

    if plot:
        fig, ax = plt.subplots(figsize=(7.5, 3.8), dpi=dpi)
        plot_learning_curve(ax, curves)
        ax.legend(fontsize=7, loc="lower right")
        ax.set_title(title, fontsize=9)
        plt.show()
    sizes = list(sizes or next(iter(curves.values())))
    print(f"{'test ROC-AUC, mean over seeds':<{width}}" + "".join(f"{n:>7,}" for n in sizes))
    for label, values in curves.items():
        print(f"{label:<{width}}"
              + "".join(f"{sum(values[n]) / len(values[n]):>7.3f}" for n in sizes))


def plot_data_scaling(ax, runs: Mapping[str, Sequence[ReferenceResult]],
                      baselines: Mapping[str, str], metric: str = "held_out_ppl",
                      size: str = "train_chars"):
    """Held-out ``metric`` against the training set's ``size`` (log x): one line per network
    (``{label: its references, one per size}``; the mean over each reference's seeds, and
    the range of the seeds as an error bar where there are several), and one dashed line
    per baseline (``{key in the references' baselines: label}``, read at every size from
    a reference of that size: every network at a size has the same baselines). Returns
    ``ax``."""
    from matplotlib.ticker import NullFormatter

    for k, (label, results) in enumerate(runs.items()):
        results = sorted(results, key=lambda r: r.values(size)[0])
        xs = [r.values(size)[0] for r in results]
        values = [r.values(metric) for r in results]
        mean = [sum(v) / len(v) for v in values]
        err = [[m - min(v) for m, v in zip(mean, values, strict=True)],
               [max(v) - m for m, v in zip(mean, values, strict=True)]]
        seeds = "/".join(str(len(v)) for v in values)
        ax.errorbar(xs, mean, yerr=err, fmt="o-", color=f"C{k}", ms=4, lw=1.5, capsize=3,
                    label=f"{label} (seeds per size: {seeds})")
    at_size = {r.values(size)[0]: r for results in runs.values() for r in results}
    for j, (key, label) in enumerate(baselines.items()):
        xs = sorted(at_size)
        ax.plot(xs, [at_size[x].baselines[key] for x in xs],
                "s--", color="0.2" if j == 0 else "0.55", ms=4, lw=1.2, label=label)
    ax.set_xscale("log")
    sizes = sorted({r.values(size)[0] for results in runs.values() for r in results})
    ax.set_xticks(sizes, [_short_count(x) for x in sizes])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlim(sizes[0] / 1.6, sizes[-1] * 1.6)
    ax.set_xlabel("training characters (log scale)")
    ax.set_ylabel("held-out perplexity")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return ax


def _short_count(x: float) -> str:
    """300000 -> '300K', 2400000 -> '2.4M'."""
    return f"{x / 1e6:g}M" if x >= 1e6 else f"{x / 1e3:g}K" if x >= 1e3 else f"{x:g}"


def plain_log_ticks(axis) -> None:
    """Label a log-scaled axis with plain numbers (4, 6, 10, 20) instead of 4 x 10^0."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0)))
    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axis.set_minor_formatter(NullFormatter())


def crossover_figure(results: Mapping[str, ReferenceResult], baselines: Mapping[str, str],
                     title: str = "Where each network crosses each n-gram"):
    """Two panels of :func:`plot_crossover`: against training seconds (on the device the
    references name) and against training compute ``6 N D``. Returns the figure."""
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    plot_crossover(ax1, results, baselines, x="seconds")
    plot_crossover(ax2, results, baselines, x="flops")
    device = next(iter(results.values())).device_kind
    ax1.set_title(f"against training time ({device})", fontsize=9)
    ax2.set_title("against training compute", fontsize=9)
    ax2.set_ylabel("")
    ax1.legend(fontsize=7, loc="upper right")
    fig.suptitle(title + " (dots: each seed's first point below a line)", fontsize=10)
    fig.tight_layout()
    return fig

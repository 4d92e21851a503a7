"""Chapter 13's size / latency against quality picture (``lmcourse.viz.pareto``)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from lmcourse.viz.pareto import pareto_figure, pareto_front  # noqa: E402


def test_the_front_keeps_only_points_nothing_cheaper_beats():
    points = [(90.0, 0.96), (50.0, 0.95), (70.0, 0.97), (60.0, 0.94), (50.0, 0.90)]
    # (60, 0.94) is beaten by the cheaper (50, 0.95); (90, 0.96) by the cheaper (70, 0.97);
    # of two points at the same cost only the better one can be on the front
    assert pareto_front(points) == [(50.0, 0.95), (70.0, 0.97)]
    assert pareto_front([]) == []


def test_the_figure_draws_a_point_per_model_with_its_seed_range_and_lists_the_rest():
    summary = {"fp32": (90.0, 0.20, [0.97]), "int8": (60.0, 0.12, [0.96]),
               "student": (50.0, 0.10, [0.95, 0.96, 0.97]), "broken": (10.0, 0.01, [0.60])}
    short = {name: name for name in summary}
    fig, left_out = pareto_figure(summary, short, baseline=0.95)
    assert left_out == ["broken"]  # below the floor: listed, not drawn
    size_axes, latency_axes = fig.axes
    for ax in (size_axes, latency_axes):
        labels = {t.get_text() for t in ax.texts}
        assert labels == {"fp32", "int8", "student"}
        bars = [c for c in ax.containers if hasattr(c, "has_yerr") and c.has_yerr]
        assert len(bars) == 3
        student = next(c for c in bars if c.lines[0].get_xdata()[0] in (50.0, 100.0))
        low, high = student.lines[2][0].get_segments()[0][:, 1]  # the seed range
        assert (round(low, 3), round(high, 3)) == (0.95, 0.97)
    assert latency_axes.get_xlabel().startswith("latency") and "ms" in latency_axes.get_xlabel()
    plt.close(fig)

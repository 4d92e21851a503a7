"""lmcourse.viz.graph: computation-graph and DAG drawings (matplotlib, Agg backend)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.patches import FancyArrowPatch  # noqa: E402

from lmcourse.autograd import Value, topological_order  # noqa: E402
from lmcourse.viz import draw_dag, draw_graph  # noqa: E402


def arrows(ax: Axes) -> list[FancyArrowPatch]:
    return [p for p in ax.patches if isinstance(p, FancyArrowPatch)]


def test_draw_graph_one_label_per_node_with_data_and_grad() -> None:
    x, y = Value(1.0, label="x"), Value(2.0, label="y")
    f = (x + y) * x * y**2
    f.backward()
    nodes = topological_order(f)
    ax = draw_graph(f)
    assert isinstance(ax, Axes)
    texts = [t.get_text() for t in ax.texts]
    assert len(texts) == len(nodes) == 6
    assert all("data" in t and "grad" in t for t in texts)
    x_label = next(t for t in texts if t.startswith("x"))
    assert f"grad {x.grad:.4g}" in x_label and f"data {x.data:.4g}" in x_label
    assert sorted(t.split("\n")[0] for t in texts) == ["*", "*", "**2", "+", "x", "y"]
    n_edges = sum(len(n._parents) for n in nodes)
    assert len(arrows(ax)) == n_edges
    ax.figure.canvas.draw()  # arrows are clipped to the boxes at draw time
    plt.close(ax.figure)


def test_draw_graph_arrows_point_right_and_grad_optional() -> None:
    x = Value(0.5)
    out = (x * x + x.tanh()).relu()
    ax = draw_graph(out, grad=False)
    pos = {t.get_text(): t.get_position() for t in ax.texts}
    assert len(pos) == len(topological_order(out))
    assert not any("grad" in t for t in pos)
    out_xy = next(xy for t, xy in pos.items() if t.startswith("relu"))
    assert all(out_xy[0] >= xy[0] for xy in pos.values())
    plt.close(ax.figure)


def test_draw_graph_into_given_axes_and_duck_typed_nodes() -> None:
    class Node:  # the lab's own Value: only data, grad, _parents, _op, label are needed
        def __init__(self, data, parents=(), op=""):
            self.data, self.grad, self._parents, self._op, self.label = data, 0.0, parents, op, ""

    a, b = Node(1.0), Node(2.0)
    c = Node(3.0, (a, b), "+")
    fig, ax = plt.subplots()
    assert draw_graph(c, ax=ax) is ax
    assert len(ax.texts) == 3
    fig.canvas.draw()
    plt.close(fig)


def test_draw_dag_six_node_example() -> None:
    arcs = [(1, 3), (1, 5), (2, 4), (3, 4), (4, 6), (5, 6)]
    ax = draw_dag(arcs, labels={6: "ω"})
    pos = {t.get_text(): t.get_position() for t in ax.texts}
    assert sorted(pos) == ["1", "2", "3", "4", "5", "ω"]
    name = {6: "ω"}
    for i, j in arcs:  # every arc points right: left-to-right is a topological order
        assert pos[name.get(i, str(i))][0] < pos[name.get(j, str(j))][0]
    assert len(arrows(ax)) == len(arcs)
    ax.figure.canvas.draw()
    plt.close(ax.figure)


def test_draw_dag_rejects_a_cycle() -> None:
    with pytest.raises(ValueError, match="cycle"):
        draw_dag([(1, 2), (2, 3), (3, 1)])


def test_draw_unrolled_rnn_has_every_node_and_arrow() -> None:
    from lmcourse.viz.graph import draw_unrolled_rnn

    steps = 3
    ax = draw_unrolled_rnn(steps, backward=False)
    boxes = [t.get_text() for t in ax.texts if t.get_bbox_patch() is not None]
    assert len(boxes) == 1 + 4 * steps  # h_0, then x_t, h_t, o_t, L_t per step
    assert {"$h_0$", "$x_{3}$", "$h_{3}$", "$o_{3}$", "$L_{3}$"} <= set(boxes)
    assert len(arrows(ax)) == 4 * steps  # h_{t-1}->h_t, x_t->h_t, h_t->o_t, o_t->L_t
    shared = [t.get_text() for t in ax.texts if t.get_text() == "$W_{hh}$"]
    assert len(shared) == steps  # the same recurrent matrix on every step
    with_backward = draw_unrolled_rnn(steps)
    assert len(arrows(with_backward)) == 4 * steps + 2 * steps  # plus BPTT's arrows
    plt.close("all")


def test_draw_unrolled_rnn_rejects_bad_steps() -> None:
    from lmcourse.viz.graph import draw_unrolled_rnn

    with pytest.raises(ValueError, match="steps"):
        draw_unrolled_rnn(0)

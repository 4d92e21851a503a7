"""Drawing computation graphs with matplotlib only.

Nodes are laid out in layers, left to right: a node with no parents sits in layer 0,
every other node one layer right of its deepest parent. So every arrow points right,
and reading the picture left to right is reading it in a topological order.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.patches import FancyArrowPatch

from lmcourse.autograd import topological_order

INPUT_COLOR, OP_COLOR, OUTPUT_COLOR = "#dbe9f6", "#fde8cf", "#d9f0d3"


class _Bend:
    """A waypoint where an arrow that skips layers crosses an intermediate layer."""


def layered_layout(order: Sequence[Hashable], parents: dict[Hashable, Sequence[Hashable]],
                   sweeps: int = 6) -> tuple[dict[Hashable, tuple[float, float]],
                                             dict[tuple[Hashable, Hashable], list]]:
    """Positions ``(layer, height)`` for nodes given in a topological ``order``.

    layer(i) = 0 if i has no parents, else 1 + max layer of its parents. An arrow that
    skips layers gets a waypoint in each layer it crosses, so it never runs through a
    box. Within a layer, nodes and waypoints are sorted by the mean height of their
    neighbours, sweeping right then left a few times, which keeps arrows short and
    crossings few. Returns the positions and, for each arc, the list of its waypoints.
    """
    layer: dict[Hashable, int] = {}
    for node in order:
        ps = parents.get(node, ())
        layer[node] = 1 + max(layer[p] for p in ps) if ps else 0
    layers: list[list[Hashable]] = [[] for _ in range(1 + max(layer.values(), default=0))]
    for node in order:
        layers[layer[node]].append(node)
    up: dict[Hashable, list[Hashable]] = {n: [] for n in order}
    down: dict[Hashable, list[Hashable]] = {n: [] for n in order}
    routes: dict[tuple[Hashable, Hashable], list] = {}
    for b in order:
        for a in dict.fromkeys(parents.get(b, ())):
            prev, chain = a, []
            for d in range(layer[a] + 1, layer[b]):
                bend = _Bend()
                layers[d].append(bend)
                up[bend], down[bend] = [prev], []
                down[prev].append(bend)
                chain.append(bend)
                prev = bend
            up[b].append(prev)
            down[prev].append(b)
            routes[(a, b)] = chain
    height: dict[Hashable, float] = {}

    def place(members: list[Hashable]) -> None:
        for rank, n in enumerate(members):
            height[n] = (len(members) - 1) / 2 - rank

    for members in layers:
        place(members)
    for sweep in range(sweeps):
        forward = sweep % 2 == 0
        nbrs = up if forward else down
        for d in (range(1, len(layers)) if forward else range(len(layers) - 2, -1, -1)):
            def barycentre(n: Hashable, nbrs: dict = nbrs) -> float:
                ns = nbrs[n]
                return sum(height[m] for m in ns) / len(ns) if ns else height[n]
            layers[d].sort(key=barycentre, reverse=True)  # stable: ties keep their order
            place(layers[d])
    pos = {n: (float(layer[n]), height[n]) for n in order}
    bends = {edge: [(float(layer[edge[0]] + 1 + i), height[b]) for i, b in enumerate(chain)]
             for edge, chain in routes.items()}
    return pos, bends


def _draw(pos: dict[Hashable, tuple[float, float]],
          bends: dict[tuple[Hashable, Hashable], list[tuple[float, float]]],
          edges: Iterable[tuple[Hashable, Hashable]],
          labels: dict[Hashable, str], colors: dict[Hashable, str], ax: Axes | None,
          fontsize: float, width_per_layer: float, height_per_node: float) -> Axes:
    """Boxes with text at ``pos``, arrows for ``edges`` (through their bends)."""
    points = [*pos.values(), *(p for route in bends.values() for p in route)]
    n_layers = 1 + int(max(x for x, _ in points))
    top, bottom = max(y for _, y in points), min(y for _, y in points)
    if ax is None:
        size = (min(13.0, max(4.0, width_per_layer * n_layers)),
                min(9.0, max(2.2, height_per_node * (top - bottom + 1))))
        _, ax = plt.subplots(figsize=size)
    boxes = {}
    for node, (x, y) in pos.items():
        text = ax.text(x, y, labels[node], ha="center", va="center", fontsize=fontsize,
                       zorder=3, bbox=dict(boxstyle="round,pad=0.35", fc=colors[node], ec="0.35"))
        boxes[node] = text.get_bbox_patch()
    seen: dict[tuple[Hashable, Hashable], int] = {}
    style = dict(color="0.3", lw=1.1)
    for a, b in edges:
        k = seen.get((a, b), 0)  # the same parent used twice (x * x): fan the arrows out
        seen[(a, b)] = k + 1
        route = bends.get((a, b), [])
        start = pos[a]
        if route:  # a line under the boxes through the waypoints, an arrow on the last leg
            xs, ys = zip(*[pos[a], *route], strict=True)
            ax.plot(xs, ys, zorder=2, solid_capstyle="round", **style)
            start = route[-1]
        rad = 0.25 * ((k + 1) // 2) * (-1) ** k
        ax.add_patch(FancyArrowPatch(start, pos[b], arrowstyle="-|>", mutation_scale=12,
                                     zorder=4, shrinkA=0 if route else 1, shrinkB=1,
                                     patchA=None if route else boxes[a], patchB=boxes[b],
                                     connectionstyle=f"arc3,rad={rad}", **style))
    ax.set_xlim(-0.6, n_layers - 0.4)
    ax.set_ylim(bottom - 0.6, top + 0.6)
    ax.axis("off")
    return ax


def draw_dag(edges: Iterable[tuple[Hashable, Hashable]], labels: dict[Hashable, str] | None = None,
             ax: Axes | None = None, nodes: Iterable[Hashable] = (),
             colors: dict[Hashable, str] | None = None, fontsize: float = 11) -> Axes:
    """Draw a directed acyclic graph given as arcs ``(i, j)`` (an arrow i -> j).

    Sources (no incoming arc) are coloured as inputs, sinks as outputs. A cycle raises
    ``ValueError`` since a graph with a cycle has no topological order.
    """
    edges = list(edges)
    all_nodes = list(dict.fromkeys([*nodes, *(v for e in edges for v in e)]))
    parents: dict[Hashable, list[Hashable]] = {v: [] for v in all_nodes}
    children: dict[Hashable, list[Hashable]] = {v: [] for v in all_nodes}
    for a, b in edges:
        parents[b].append(a)
        children[a].append(b)
    order, ready = [], [v for v in all_nodes if not parents[v]]
    missing = {v: len(parents[v]) for v in all_nodes}
    while ready:  # Kahn's algorithm
        v = ready.pop(0)
        order.append(v)
        for c in children[v]:
            missing[c] -= 1
            if missing[c] == 0:
                ready.append(c)
    if len(order) < len(all_nodes):
        raise ValueError("the graph has a cycle, so it has no topological order")
    default = {v: INPUT_COLOR if not parents[v] else
               OUTPUT_COLOR if not children[v] else OP_COLOR for v in all_nodes}
    colors = {**default, **(colors or {})}
    labels = {v: str(v) for v in all_nodes} | (labels or {})
    return _draw(*layered_layout(order, parents), edges, labels, colors, ax,
                 fontsize, width_per_layer=1.5, height_per_node=1.0)


def node_label(node: Any, grad: bool = True, fmt: str = ".4g") -> str:
    """The text of one node: its op (or name), its value and its gradient."""
    op, name = getattr(node, "_op", ""), getattr(node, "label", "")
    head = f"{op}  {name}" if op and name else (op or name or "input")
    lines = [head, f"data {node.data:{fmt}}"]
    if grad:
        lines.append(f"grad {node.grad:{fmt}}")
    return "\n".join(lines)


def draw_graph(root: Any, ax: Axes | None = None, grad: bool = True, fmt: str = ".4g",
               fontsize: float = 9) -> Axes:
    """Draw the computation graph of a scalar ``Value`` (anything with ``_parents``).

    One box per node, labelled with its operation (or label), ``data`` and ``grad``;
    one arrow from each parent to the node computed from it.
    """
    order = topological_order(root)
    parents = {node: list(node._parents) for node in order}
    edges = [(p, node) for node in order for p in node._parents]
    colors = {node: OUTPUT_COLOR if node is root else OP_COLOR if node._parents else INPUT_COLOR
              for node in order}
    labels = {node: node_label(node, grad, fmt) for node in order}
    return _draw(*layered_layout(order, parents), edges, labels, colors, ax,
                 fontsize, width_per_layer=1.7, height_per_node=1.15)


def draw_unrolled_rnn(steps: int = 4, ax: Axes | None = None, backward: bool = True,
                      fontsize: float = 10) -> Axes:
    """The RNN language model unrolled over ``steps`` time steps.

    Column ``t`` holds the input ``x_t`` (bottom), the state ``h_t``, the scores
    ``o_t`` and the loss ``L_t`` (top); ``h_{t-1} -> h_t`` is the recurrence through
    ``W_hh``, the same matrices at every step. With ``backward``, dashed red arrows show
    where BPTT sends gradients: down from each loss and right-to-left along the states.
    """
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive integer (the number of time steps to "
                         f"draw), got {steps!r}")
    rows = {"x": 0.0, "h": 1.0, "o": 2.0, "L": 3.0}
    colors = {"x": INPUT_COLOR, "h": OP_COLOR, "o": OP_COLOR, "L": OUTPUT_COLOR}
    pos = {("h", 0): (0.0, rows["h"])}
    labels = {("h", 0): "$h_0$"}
    edges = []
    for t in range(1, steps + 1):
        for row, y in rows.items():
            pos[(row, t)] = (1.4 * t, y)
            labels[(row, t)] = f"${row}_{{{t}}}$"
        edges += [(("h", t - 1), ("h", t)), (("x", t), ("h", t)), (("h", t), ("o", t)),
                  (("o", t), ("L", t))]
    fill = {node: colors[node[0]] for node in pos}
    if ax is None:
        _, ax = plt.subplots(figsize=(min(13.0, 1.6 + 1.5 * steps), 4.0))
    _draw(pos, {}, edges, labels, fill, ax, fontsize, 1.5, 1.0)
    for t in range(1, steps + 1):  # the shared matrices, written on their arrows
        x = 1.4 * t
        ax.text(x - 0.7, rows["h"] + 0.12, "$W_{hh}$", ha="center", fontsize=fontsize - 2)
        ax.text(x + 0.08, (rows["x"] + rows["h"]) / 2, "$W_{ih}$", fontsize=fontsize - 2)
        ax.text(x + 0.08, (rows["h"] + rows["o"]) / 2, "$W_{hq}$", fontsize=fontsize - 2)
        if backward:
            red = dict(arrowstyle="-|>", mutation_scale=10, color="#c62828", lw=1.2, ls="--",
                       zorder=5)
            ax.add_patch(FancyArrowPatch((x - 0.22, rows["L"] - 0.25),
                                         (x - 0.22, rows["h"] + 0.25), **red))
            ax.add_patch(FancyArrowPatch((x - 0.3, rows["h"] - 0.2),
                                         (x - 1.1, rows["h"] - 0.2), **red))
    ax.set_xlim(-0.6, 1.4 * steps + 0.7)
    ax.set_ylim(-0.6, rows["L"] + 0.6)
    if backward:
        ax.text(0.7 * steps + 0.35, -0.55, "dashed red: gradients of BPTT, "
                "each step back multiplies by $(\\partial h_t/\\partial h_{t-1})^\\top$",
                ha="center", color="#c62828", fontsize=fontsize - 2)
    return ax

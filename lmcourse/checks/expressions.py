"""Random expressions for checking an autograd engine against PyTorch.

An expression is a nested tuple over inputs x0..x{n-1}: :func:`random_expression` grows one,
:func:`evaluate` runs it on any scalars with the engine's operators (a student's ``Value``,
torch tensors), and :func:`random_case` picks inputs where its value and gradient are
moderate. Chapter 01 and lab 01's last check use them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

#: One node of a random expression: ("x", i) an input, ("const", c) a plain number,
#: (op, a, b) for op in + - * /, ("**", a, k), or (f, a) for f in tanh exp log relu.
Expr = tuple


def random_expression(rng: Any, n_inputs: int = 3, depth: int = 5) -> Expr:
    """A random expression over x0..x{n-1} with + - * / ** tanh exp log relu.

    Inputs are reused, and now and then a whole subexpression is reused, so the graph
    is a DAG, not a tree. Numbers appear on either side of an operator. Domains are
    safe by construction: log, fractional and negative powers and divisions by an
    expression only see ``u*u + c`` with ``c > 0``.
    """
    made: list[Expr] = []

    def positive(u: Expr) -> Expr:
        return ("+", ("*", u, u), ("const", rng.choice((0.5, 1.0, 2.0))))

    def grow(d: int) -> Expr:
        if d == 0 or (d < depth and rng.random() < 0.25):
            return ("x", rng.randrange(n_inputs))
        if made and rng.random() < 0.15:
            return rng.choice(made)  # a shared subexpression
        if rng.random() < 0.55:
            op = rng.choice(("+", "-", "*", "/"))
            a, b = grow(d - 1), grow(d - 1)
            if rng.random() < 0.3:  # a plain number on the left or on the right
                c = ("const", rng.choice((-2.0, -0.5, 0.5, 1.5, 3.0)))
                a, b = (c, b) if rng.random() < 0.5 else (a, c)
            if op == "/" and b[0] != "const":  # numbers are never 0; expressions might be
                b = positive(b)
            node = (op, a, b)
        else:
            f = rng.choice(("tanh", "exp", "log", "relu", "**"))
            a = grow(d - 1)
            if f == "**":
                k = rng.choice((2, 3, -1, 0.5, 1.5))
                node = ("**", a if k in (2, 3) else positive(a), k)
            else:
                node = (f, positive(a) if f == "log" else a)
        made.append(node)
        return node

    return grow(depth)


def evaluate(expr: Expr, inputs: Any) -> Any:
    """Evaluate ``expr`` with ``inputs[i]`` for x_i: ``Value`` nodes or torch tensors.

    A subexpression shared in the tree is computed once, so it is one node of the graph.
    """
    cache: dict[int, Any] = {}

    def ev(e: Expr) -> Any:
        if id(e) in cache:
            return cache[id(e)]
        tag = e[0]
        if tag == "x":
            r = inputs[e[1]]
        elif tag == "const":
            r = e[1]
        elif tag in ("+", "-", "*", "/"):
            a, b = ev(e[1]), ev(e[2])
            r = a + b if tag == "+" else a - b if tag == "-" else a * b if tag == "*" else a / b
        elif tag == "**":
            r = ev(e[1]) ** e[2]
        else:
            r = getattr(ev(e[1]), tag)()
        cache[id(e)] = r
        return r

    return ev(expr)


def expression_str(expr: Expr) -> str:
    """``expr`` as a formula, e.g. ``tanh(x0 * x1) + 0.5``."""
    tag = expr[0]
    if tag == "x":
        return f"x{expr[1]}"
    if tag == "const":
        return f"{expr[1]:g}"
    if tag in ("+", "-", "*", "/"):
        return f"({expression_str(expr[1])} {tag} {expression_str(expr[2])})"
    if tag == "**":
        return f"{expression_str(expr[1])}**{expr[2]:g}"
    return f"{tag}({expression_str(expr[1])})"


def torch_gradients(fn: Expr | Callable[..., Any], xs: list[float]) -> tuple[float, list[float]]:
    """Value and gradient of an expression (or a function of scalars) at ``xs``, by
    torch.autograd in float64."""

    ts = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in xs]
    out = evaluate(fn, ts) if isinstance(fn, tuple) else fn(*ts)
    out.backward()
    return out.item(), [0.0 if t.grad is None else t.grad.item() for t in ts]


def random_case(rng: Any, n_inputs: int = 3, depth: int = 5,
                bound: float = 1e6) -> tuple[Expr, list[float]]:
    """A random expression and inputs at which its value and gradient are moderate."""

    while True:
        expr = random_expression(rng, n_inputs, depth)
        xs = [round(rng.uniform(-2.0, 2.0), 3) for _ in range(n_inputs)]
        value, grads = torch_gradients(expr, xs)
        if all(math.isfinite(v) and abs(v) < bound for v in (value, *grads)):
            return expr, xs

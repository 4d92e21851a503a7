"""A scalar reverse-mode automatic differentiation engine.

Every ``Value`` is a node of a computation graph: it stores its number ``data``, the
nodes it was computed from (its parents) and a closure that, given the gradient of
the output with respect to this node, adds the chain-rule contributions to its
parents:

    z^i = sum_{j in ch(i)} z^j * d f^j / d x^i

``backward()`` visits the nodes in reverse topological order, so each node's ``grad``
is complete before it is pushed to its parents.
"""

from __future__ import annotations

import math
from collections.abc import Callable


class Value:
    """A scalar that remembers how it was computed so it can be differentiated."""

    def __init__(self, data: float, _parents: tuple[Value, ...] = (), _op: str = "",
                 label: str = ""):
        if isinstance(data, Value):
            raise TypeError("Value(data) takes a number; it was given a Value already")
        self.data = float(data)
        self.grad = 0.0
        self._parents = _parents
        self._op = _op
        self.label = label
        self._backward: Callable[[], None] = lambda: None

    def __repr__(self) -> str:
        name = f"{self.label}=" if self.label else ""
        return f"Value({name}{self.data:.6g}, grad={self.grad:.6g})"

    # ---- operations: each returns a new node and its local derivative rule ----

    def __add__(self, other: Value | float) -> Value:
        other = _as_value(other)
        out = Value(self.data + other.data, (self, other), "+")

        def _backward() -> None:  # d(a+b)/da = d(a+b)/db = 1
            self.grad += out.grad
            other.grad += out.grad

        out._backward = _backward
        return out

    def __mul__(self, other: Value | float) -> Value:
        other = _as_value(other)
        out = Value(self.data * other.data, (self, other), "*")

        def _backward() -> None:  # d(ab)/da = b, d(ab)/db = a
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad

        out._backward = _backward
        return out

    def __pow__(self, exponent: float) -> Value:
        if not isinstance(exponent, (int, float)):
            raise TypeError("Value ** k supports a plain number k only "
                            "(write exp(k * log(x)) for a Value exponent)")
        out = Value(self.data**exponent, (self,), f"**{exponent:g}")

        def _backward() -> None:  # d(a^k)/da = k a^(k-1)
            self.grad += exponent * self.data ** (exponent - 1) * out.grad

        out._backward = _backward
        return out

    def tanh(self) -> Value:
        t = math.tanh(self.data)
        out = Value(t, (self,), "tanh")

        def _backward() -> None:  # d tanh(a)/da = 1 - tanh(a)^2
            self.grad += (1.0 - t * t) * out.grad

        out._backward = _backward
        return out

    def exp(self) -> Value:
        out = Value(math.exp(self.data), (self,), "exp")

        def _backward() -> None:  # d e^a/da = e^a
            self.grad += out.data * out.grad

        out._backward = _backward
        return out

    def log(self) -> Value:
        if self.data <= 0:
            raise ValueError(f"log is only defined for positive numbers, got {self.data}")
        out = Value(math.log(self.data), (self,), "log")

        def _backward() -> None:  # d log(a)/da = 1/a
            self.grad += out.grad / self.data

        out._backward = _backward
        return out

    def relu(self) -> Value:
        out = Value(max(0.0, self.data), (self,), "relu")

        def _backward() -> None:  # 1 where a > 0, else 0
            self.grad += (self.data > 0) * out.grad

        out._backward = _backward
        return out

    # ---- everything else is built from the operations above ----

    def __neg__(self) -> Value:
        return self * -1

    def __sub__(self, other: Value | float) -> Value:
        return self + (-_as_value(other))

    def __truediv__(self, other: Value | float) -> Value:
        return self * _as_value(other) ** -1

    def __radd__(self, other: float) -> Value:
        return self + other

    def __rmul__(self, other: float) -> Value:
        return self * other

    def __rsub__(self, other: float) -> Value:
        return _as_value(other) - self

    def __rtruediv__(self, other: float) -> Value:
        return _as_value(other) / self

    # ---- backpropagation ----

    def backward(self) -> None:
        """Fill ``.grad`` of every node this one depends on with d(self)/d(node).

        Gradients are reset first, so calling it twice gives the same numbers.
        """
        order = topological_order(self)
        for node in order:
            node.grad = 0.0
        self.grad = 1.0  # base case: d x^omega / d x^omega = 1
        for node in reversed(order):
            node._backward()


def _as_value(x: Value | float) -> Value:
    if isinstance(x, Value):
        return x
    if isinstance(x, (int, float)):
        return Value(x)
    raise TypeError(f"cannot combine a Value with {type(x).__name__}; use a number or a Value")


def topological_order(root: Value) -> list[Value]:
    """All nodes ``root`` depends on, each listed after every one of its parents."""
    order: list[Value] = []
    visited: set[int] = set()
    stack: list[tuple[Value, bool]] = [(root, False)]
    while stack:  # iterative depth-first search: deep graphs don't hit the recursion limit
        node, parents_done = stack.pop()
        if parents_done:
            order.append(node)
            continue
        if id(node) in visited:
            continue
        visited.add(id(node))
        stack.append((node, True))
        stack.extend((p, False) for p in node._parents if id(p) not in visited)
    return order

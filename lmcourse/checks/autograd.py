"""Auto-checks for a scalar autograd engine, checked against PyTorch.

The lab's engine is any class with the micrograd-style contract of
``lmcourse.autograd.Value``. Each check passes with the measured figure or fails with a
hint naming the mistake (see :mod:`lmcourse.check` for the machinery).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from types import FunctionType
from typing import Any

from lmcourse.autograd import Value as _Course
from lmcourse.checks import attempt, close, earlier, expect, fail, passed, requires
from lmcourse.checks import autograd_training as _training
from lmcourse.checks.compare import which_differ
from lmcourse.checks.expressions import (  # noqa: F401 - chapter 01 imports them from here
    Expr,
    evaluate,
    expression_str,
    random_case,
    random_expression,
    torch_gradients,
)

# The lab's engine is any class with the micrograd-style contract of
# ``lmcourse.autograd.Value``: ``Value(data)`` has ``.data``, ``.grad``, ``._parents``
# and ``._backward`` (a closure that adds the node's contribution to its parents'
# grads), and ``.backward()`` fills every grad. References are computed here with
# PyTorch (float64) or by hand-derived formulas evaluated at the test point.

_UPSTREAM, _SEED_GRAD = 0.7, 0.25  # out.grad during a local check; grads already there


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(1.0, abs(b))


def _reference_order(root: Any) -> list[Any]:
    """Our own topological order (parents first), so checks don't trust the student's."""
    order, seen, stack = [], set(), [(root, False)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
        elif id(node) not in seen:
            seen.add(id(node))
            stack.append((node, True))
            stack.extend((p, False) for p in node._parents)
    return order


def _local_case(name: str, Value: Any, what: str, build: Callable[..., Any],
                data: list[float], forward: float, local: list[float],
                wrong: list[tuple[list[float], str]]) -> float:
    """Run one node's ``_backward`` and compare the grads it leaves with the chain rule.

    Parents start with grad ``_SEED_GRAD`` (as if another child had already pushed
    its share) and ``out.grad = _UPSTREAM``, so the correct result is
    ``_SEED_GRAD + _UPSTREAM * local``. ``wrong`` lists the local derivatives of
    typical mistakes with the hint for each. Returns the largest error.
    """
    xs = [Value(d) for d in data]
    out = attempt(name, build, *xs)
    expect(hasattr(out, "_backward") and hasattr(out, "data"), name,
           f"{what} should return a new Value, got {type(out).__name__}")
    expect(close(out.data, forward, 1e-12), name,
           f"the forward value of {what} is {out.data}, expected {forward:.6g}; "
           "the forward code was given, did it change?")
    for x in xs:
        x.grad = _SEED_GRAD
    out.grad = _UPSTREAM
    attempt(name, out._backward)
    got = [x.grad for x in xs]
    want = [_SEED_GRAD + _UPSTREAM * g for g in local]

    def same(values: list[float]) -> bool:
        return all(close(a, b, 1e-9) for a, b in zip(got, values, strict=True))

    if same(want):
        return max(_rel(a, b) for a, b in zip(got, want, strict=True))
    expect(not same([_SEED_GRAD] * len(xs)), name,
           f"{what}: calling out._backward() left the parents' grads unchanged; does the "
           "closure add to `self.grad`/`other.grad`, and is it stored in `out._backward`?")
    if same([_UPSTREAM * g for g in local]):
        fail(name, f"in {what}, the parents' grads were overwritten: use `+=`, not `=`. "
                   "A node can feed several children, and each child adds its share "
                   "z^j * df^j/dx^i to the parent's grad.")
    if same([_SEED_GRAD + g for g in local]):
        fail(name, f"in {what}, multiply the local derivative by `out.grad` (chain rule: "
                   "z^i += z^out * d out / d x^i); with out.grad = 1 you would not notice.")
    for w, hint in wrong:
        if same([_SEED_GRAD + _UPSTREAM * g for g in w]):
            fail(name, f"in {what}: {hint}")
    applied = [(g - _SEED_GRAD) / _UPSTREAM for g in got]  # the local derivatives it used
    parents = ["x"] if len(xs) == 1 else ["a (self)", "b (other)"]
    fail(name, f"in {what}, with out.grad = {_UPSTREAM} the parents' grads went from "
               f"{_SEED_GRAD} to {[round(g, 6) for g in got]}, so the local derivative(s) "
               f"your closure applied are {[round(g, 6) for g in applied]}: "
               + which_differ([f"the one for {p}" for p in parents], applied, local)
               + ". Evaluate the derivative in exercise 1's table at this node's numbers "
               "(self.data, other.data, out.data), times out.grad, added with +=.")
    return 0.0  # unreachable


#: the operations of exercise 1, in the order the lab lists them
OPS = ("+", "*", "**", "tanh", "exp")


def _op_of(case: str) -> str:
    """The operation a local case tests: ``"x ** 3"`` -> ``"**"``, ``"x.tanh()"`` ->
    ``"tanh"``."""
    if case.startswith("x."):
        return case[2:].removesuffix("()")
    return case.split()[1]


def _local_cases() -> list[tuple]:
    """Exercise 1's cases: (what, build, inputs, forward value, local derivatives, the
    typical mistakes' local derivatives with their hints)."""
    a, b, x, k = 2.0, -3.0, 0.8, 3
    t = math.tanh(x)
    cases = [
        ("a + b", lambda p, q: p + q, [a, b], a + b, [1.0, 1.0], []),
        ("x + x", lambda p: p + p, [x], 2 * x, [2.0],
         [([1.0 - _SEED_GRAD / _UPSTREAM], "x + x should give x.grad = 2 (times out.grad): the "
                                           "same parent appears twice, so use `+=`, not `=`.")]),
        ("a * b", lambda p, q: p * q, [a, b], a * b, [b, a],
         [([a, b], "the factors are swapped: d(a*b)/da = b (other.data) and d(a*b)/db = a "
                   "(self.data).")]),
        ("x * x", lambda p: p * p, [x], x * x, [2 * x],
         [([x - _SEED_GRAD / _UPSTREAM], "x * x should give x.grad = 2x (times out.grad): both "
                                         "factors are x, so use `+=`, not `=`.")]),
        (f"x ** {k}", lambda p: p**k, [x], x**k, [k * x ** (k - 1)],
         [([k * x**k], "the power rule is d(x**k)/dx = k * x**(k-1), not k * x**k."),
          ([x ** (k - 1)], "the power rule is d(x**k)/dx = k * x**(k-1): the factor k is "
                           "missing."),
          ([(k - 1) * x ** (k - 1)], "the power rule is d(x**k)/dx = k * x**(k-1), not "
                                     "(k-1) * x**(k-1).")]),
        ("x ** -1", lambda p: p**-1, [x], 1 / x, [-1 / x**2], []),
        ("x ** 0.5", lambda p: p**0.5, [x], x**0.5, [0.5 * x**-0.5], []),
        ("x.tanh()", lambda p: p.tanh(), [x], t, [1 - t * t],
         [([1 - x * x], "d tanh(x)/dx = 1 - tanh(x)², not 1 - x²: square the output "
                        "(the tanh value t), not the input."),
          ([1 - t], "d tanh(x)/dx = 1 - tanh(x)²: the square is missing."),
          ([t * (1 - t)], "t(1 - t) is the derivative of the sigmoid; for tanh it is 1 - t².")]),
        ("x.exp()", lambda p: p.exp(), [x], math.exp(x), [math.exp(x)],
         [([x], "d e^x/dx = e^x, which is the output `out.data`, not the input x."),
          ([1.0], "d e^x/dx = e^x (that is `out.data`), not 1.")]),
    ]
    return cases


def autograd_ops(Value: Any, ops: Sequence[str] = OPS) -> None:
    """Each operation's ``_backward`` applies its local derivative; ``ops`` (some of
    :data:`OPS`) restricts the check to those operations' cases, for a later check that
    uses only them."""

    name = "local derivatives"
    unknown = sorted(set(ops) - set(OPS))
    if unknown:
        raise ValueError(f"unknown operation(s) {unknown}; exercise 1 has {OPS}")
    cases = [case for case in _local_cases() if _op_of(case[0]) in ops]
    worst = max(_local_case(name, Value, *case) for case in cases)
    passed(name, f"{' '.join(op for op in OPS if op in ops)} on {len(cases)} cases, max "
                 f"relative error {worst:.1e} against the chain rule")


def autograd_topological_order(topological_order: Callable[[Any], Any], Value: Any) -> None:
    """Topological order: every node once, each after all of its parents."""
    name = "topological order"
    single = Value(3.0)
    got = attempt(name, topological_order, single)
    expect(isinstance(got, (list, tuple)) and len(got) == 1 and got[0] is single, name,
           "for a graph with a single node, return a list with just that node; got "
           f"{got!r}")
    a, b = Value(0.5), Value(-1.0)
    c = a * b
    d = c + a
    e = d.tanh()
    g = e * c
    f = g + b
    for node, label in zip((a, b, c, d, e, g, f), "abcdegf", strict=True):
        node.label = label
    nodes = [a, b, c, d, e, g, f]
    got = attempt(name, topological_order, f)
    expect(isinstance(got, (list, tuple)), name,
           f"return a list of nodes, got {type(got).__name__}")
    got = list(got)
    ids = [id(n) for n in got]
    expect(len(ids) == len(set(ids)), name,
           "a node appears more than once: keep a `visited` set and skip nodes you have "
           "already seen (here c is a parent of both d and g, a of both c and d).")
    missing = [n.label for n in nodes if id(n) not in set(ids)]
    expect(not missing, name,
           f"missing node(s) {missing}: visit every parent of every node, recursively, "
           "all the way to the inputs.")
    expect(len(got) == len(nodes), name,
           f"{len(got)} nodes returned but the graph has {len(nodes)}: return only nodes "
           "the output depends on.")
    where = {id(n): i for i, n in enumerate(got)}
    if got[0] is f:
        fail(name, "the output comes first: this lists each node before its parents. "
                   "Append a node only after all its parents are in the list (post-order).")
    for node in got:
        for p in node._parents:
            expect(where[id(p)] < where[id(node)], name,
                   f"node {node.label!r} is listed before its parent {p.label!r}: append a "
                   "node only after visiting all of its parents.")
    passed(name, f"{len(nodes)} nodes, each once, every one after its parents")


def autograd_training(train: Callable[..., Any], Value: Any, lr: float = 0.5,
                      steps: int = 40) -> None:
    """``train(params, loss_fn, lr, steps)`` is gradient descent
    (:func:`lmcourse.checks.autograd_training.autograd_training`).

    The loop is graded on its own: it runs on parameters of the course's engine
    (``lmcourse.autograd.Value``, whose operations and backward are right), so a mistake in
    exercises 1 to 3 does not fail it. Only a ``Value`` whose nodes do not have the course's
    attributes is trained with itself, once exercises 1 to 3 pass."""
    name = "training loop"
    if _same_contract(Value):
        _training.autograd_training(train, _Course, lr, steps)
        return
    requires(name, 1, autograd_ops, Value)
    requires(name, 3, autograd_backward, Value)
    _training.autograd_training(train, Value, lr, steps)


def _same_contract(Value: Any) -> bool:
    """Do the student's nodes have exactly the course's attributes (``data``, ``grad``,
    ``_parents``, ``_backward``, ...)? Then code written for one runs on the other."""
    try:
        mine = Value(1.0)
    except Exception:  # noqa: BLE001 - a class that cannot be built is not the course's
        return False
    return set(vars(mine)) == set(vars(_Course(1.0)))


def _graded_backward(name: str, Value: Any) -> tuple[Any, Callable[[Any], Any]]:
    """The class to build backward's test graph with, and how to run backward on its output.

    The student's ``backward`` function runs on the course's nodes, whose ``_backward``
    closures are right, so this check grades the traversal alone: a wrong local derivative
    (exercise 1) does not fail it. A ``Value`` whose nodes do not have the course's
    attributes is tested on its own nodes, once exercise 1 passes."""
    backward = getattr(Value, "backward", None)
    if isinstance(backward, FunctionType) and _same_contract(Value):
        return _Course, backward
    requires(name, 1, autograd_ops, Value)
    return Value, lambda node: node.backward()


def autograd_backward(Value: Any) -> None:
    """``backward`` = reset, z^ω = 1, then reverse topological order."""
    name = "backward"
    Node, backward = _graded_backward(name, Value)
    order = earlier(Value, "topological_order")
    if callable(order):
        requires(name, 2, autograd_topological_order, order, Value)
    xs0 = [0.5, -1.5]

    def build(x: Any, y: Any) -> Any:
        u = x * y + x
        return u.tanh() * y + x * x + (y * u).exp() + x

    _, ref = torch_gradients(build, xs0)  # the same code runs on torch tensors
    x, y = Node(xs0[0]), Node(xs0[1])
    out = build(x, y)
    attempt(name, backward, out)
    got, out_grad = [x.grad, y.grad], out.grad
    if all(g == 0 for g in got) and out_grad != 1.0:
        fail(name, "every grad is 0: set the output's grad to 1 (the base case "
                   "z^ω = dω/dω = 1) after resetting the grads, then call each node's "
                   "_backward.")
    if not all(close(g, r, 1e-9) for g, r in zip(got, ref, strict=True)):
        order = _reference_order(out)
        for node in order:
            node.grad = 0.0
        out.grad = 1.0
        for node in order:  # what visiting the nodes in forward order would give
            node._backward()
        forward = [x.grad, y.grad]
        if all(close(g, r, 1e-12) for g, r in zip(got, forward, strict=True)):
            fail(name, "the nodes were visited in forward order: call _backward in "
                       "REVERSE topological order, so a node's grad is complete before it "
                       "is passed on to its parents.")
        fail(name, f"x.grad, y.grad = {got[0]:.6g}, {got[1]:.6g}, but torch.autograd "
                   f"disagrees: {which_differ(['x.grad', 'y.grad'], got, ref)}. Reset all "
                   "grads to 0, set out.grad = 1, then call _backward on every node in "
                   "reverse topological order.")
    expect(close(out_grad, 1.0, 1e-12), name,
           f"after backward the output's grad is {out_grad}, it should be 1.")
    attempt(name, backward, out)
    again = [x.grad, y.grad]
    expect(all(close(g, r, 1e-9) for g, r in zip(again, ref, strict=True)), name,
           f"calling backward a second time changed the grads (x.grad {got[0]:.6g} -> "
           f"{again[0]:.6g}, y.grad {got[1]:.6g} -> {again[1]:.6g}): reset every node's grad "
           "to 0 at the start of backward; the closures accumulate with +=, so old grads "
           "would be added to.")
    worst = max(_rel(g, r) for g, r in zip(got, ref, strict=True))
    passed(name, f"grads match torch.autograd (max relative difference {worst:.1e}); "
                 "a second call gives the same grads")


def autograd_against_torch(Value: Any, n: int = 200, seed: int = 0,
                           tol: float = 1e-9) -> None:
    """Final check: ``n`` random expressions, values and grads vs torch.autograd."""

    name = "random expressions vs torch"
    requires(name, 1, autograd_ops, Value)  # the whole engine: every operation, and backward
    requires(name, 3, autograd_backward, Value)
    rng = random.Random(seed)
    worst, sizes = 0.0, []
    for i in range(n):
        expr, xs = random_case(rng)
        value, ref = torch_gradients(expr, xs)
        ins = [Value(v) for v in xs]
        out = attempt(name, evaluate, expr, ins)
        attempt(name, out.backward)
        sizes.append(len(_reference_order(out)))
        ours = [out.data] + [v.grad for v in ins]
        errs = [_rel(a, b) for a, b in zip(ours, [value, *ref], strict=True)]
        if max(errs) > tol:
            labels = ["f"] + [f"df/dx{j}" for j in range(len(xs))]
            fail(name, f"expression #{i}: f = {expression_str(expr)} at x = {xs}: yours gives "
                       f"f = {ours[0]:.10g}, grad = {[float(f'{g:.10g}') for g in ours[1:]]}; "
                       f"against torch.autograd, {which_differ(labels, ours, [value, *ref], tol)}"
                       ". Exercise 1 tested each operation alone; this expression combines "
                       "them, with a number now and then on either side. Rebuild it a node at a "
                       "time beside torch to find the first node whose value or grad differs: "
                       "a grad that is right alone and wrong here often means an `=` where "
                       "`+=` belongs, or a closure that reads a variable changed later.")
        worst = max(worst, *errs)
    passed(name, f"{n} random expressions ({min(sizes)}-{max(sizes)} nodes), max |ours - torch|"
                 f" / max(1, |torch|) = {worst:.1e} (tolerance {tol:.0e})")


def autograd_worked_example(Value: Any) -> None:
    """Sanity check: f(x, y) = (x + y) x y² at (1, 2), by hand and by torch."""
    name = "worked example"
    requires(name, 1, autograd_ops, Value, ops=("+", "*", "**"))  # all that f uses
    requires(name, 3, autograd_backward, Value)
    x0, y0 = 1.0, 2.0

    def f_of(x: Any, y: Any) -> Any:
        return (x + y) * x * y**2

    value, ref = torch_gradients(f_of, [x0, y0])
    by_hand = [y0**2 * (2 * x0 + y0), 2 * x0**2 * y0 + 3 * x0 * y0**2]
    x, y = Value(x0), Value(y0)
    f = attempt(name, f_of, x, y)
    attempt(name, f.backward)
    expect(close(f.data, value, 1e-12), name,
           f"f(1, 2) = {f.data}, should be (1 + 2) * 1 * 2² = {value:g}")
    expect(close(x.grad, ref[0], 1e-9) and close(y.grad, ref[1], 1e-9), name,
           f"(df/dx, df/dy) = ({x.grad:g}, {y.grad:g}): "
           f"{which_differ(['df/dx', 'df/dy'], [x.grad, y.grad], ref)} (torch.autograd and "
           "the formulas by hand, y²(2x + y) and 2x²y + 3xy² at (1, 2), agree). Draw the "
           "graph of f and follow each path from f back to x and to y.")
    passed(name, f"f(1, 2) = {f.data:g} (torch {value:g}); df/dx = {x.grad:g} (torch "
                 f"{ref[0]:g}, y²(2x + y) = {by_hand[0]:g}); df/dy = {y.grad:g} (torch "
                 f"{ref[1]:g}, 2x²y + 3xy² = {by_hand[1]:g})")

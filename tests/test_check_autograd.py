"""Lab 01 checks: the correct engine passes; typical wrong engines fail with specific hints.

Wrong engines are made by monkeypatching one method of ``lmcourse.autograd.Value`` (every
node is created as that class, so the broken method is used throughout the graph).
"""

from __future__ import annotations

import math

import pytest

from lmcourse.autograd import Value, topological_order
from lmcourse.checks import CheckFailed
from lmcourse.checks import autograd as check


def binary(forward, rule, op: str):
    """A ``Value`` method for a two-argument op whose backward is ``rule(a, b, out)``."""
    def method(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(forward(self.data, other.data), (self, other), op)
        out._backward = lambda: rule(self, other, out)
        return out
    return method


def unary(forward, rule, op: str):
    def method(self):
        out = Value(forward(self.data), (self,), op)
        out._backward = lambda: rule(self, out)
        return out
    return method


def power(rule):
    def method(self, k):
        out = Value(self.data**k, (self,), f"**{k}")
        out._backward = lambda: rule(self, k, out)
        return out
    return method


def fails_with(fn, *args, hint: str) -> str:
    with pytest.raises(CheckFailed) as info:
        fn(*args)
    assert hint in str(info.value), str(info.value)
    return str(info.value)


def _set(node, value):
    node.grad = value


# ---- the correct engine passes every check ------------------------------------------

def test_correct_engine_passes_all_checks(capsys) -> None:
    check.autograd_ops(Value)
    check.autograd_topological_order(topological_order, Value)
    check.autograd_backward(Value)
    check.autograd_against_torch(Value)
    check.autograd_worked_example(Value)
    check.autograd_training(good_train, Value)
    out = capsys.readouterr().out
    assert out.count("passed") == 6
    assert "200 random expressions" in out and "tolerance" in out


# ---- exercise 1: local derivatives ---------------------------------------------------

def add_assign(a, b, o):  # `=` instead of `+=`
    _set(a, o.grad)
    _set(b, o.grad)


def mul_swapped(a, b, o):
    a.grad += a.data * o.grad
    b.grad += b.data * o.grad


def mul_no_upstream(a, b, o):
    a.grad += b.data
    b.grad += a.data


def mul_assign(a, b, o):
    _set(a, b.data * o.grad)
    _set(b, a.data * o.grad)


OPS_BROKEN = {
    "add with =": ("__add__", binary(lambda a, b: a + b, add_assign, "+"), "use `+=`"),
    "mul with =": ("__mul__", binary(lambda a, b: a * b, mul_assign, "*"), "use `+=`"),
    "mul swapped": ("__mul__", binary(lambda a, b: a * b, mul_swapped, "*"), "swapped"),
    "mul without out.grad": ("__mul__", binary(lambda a, b: a * b, mul_no_upstream, "*"),
                             "multiply the local derivative by `out.grad`"),
    "tanh 1 - x^2": ("tanh", unary(math.tanh, lambda a, o: setattr(
        a, "grad", a.grad + (1 - a.data**2) * o.grad), "tanh"), "not 1 - x²"),
    "tanh sigmoid'": ("tanh", unary(math.tanh, lambda a, o: setattr(
        a, "grad", a.grad + o.data * (1 - o.data) * o.grad), "tanh"), "sigmoid"),
    "exp uses x": ("exp", unary(math.exp, lambda a, o: setattr(
        a, "grad", a.grad + a.data * o.grad), "exp"), "`out.data`, not the input"),
    "pow k x^k": ("__pow__", power(lambda a, k, o: setattr(
        a, "grad", a.grad + k * a.data**k * o.grad)), "not k * x**k"),
    "pow without k": ("__pow__", power(lambda a, k, o: setattr(
        a, "grad", a.grad + a.data ** (k - 1) * o.grad)), "the factor k is missing"),
    "closure not stored": ("exp", lambda self: Value(math.exp(self.data), (self,), "exp"),
                           "unchanged"),
}


@pytest.mark.parametrize("case", sorted(OPS_BROKEN))
def test_ops_check_rejects_typical_mistakes(monkeypatch, case: str) -> None:
    method, impl, hint = OPS_BROKEN[case]
    monkeypatch.setattr(Value, method, impl)
    fails_with(check.autograd_ops, Value, hint=hint)


def test_ops_check_not_implemented(monkeypatch) -> None:
    def todo(a, o):
        raise NotImplementedError

    monkeypatch.setattr(Value, "tanh", unary(math.tanh, todo, "tanh"))
    fails_with(check.autograd_ops, Value, hint="not implemented yet")


# ---- exercise 2: topological order ---------------------------------------------------

def preorder(root):  # appends a node before its parents
    order, seen = [], set()

    def visit(n):
        if id(n) in seen:
            return
        seen.add(id(n))
        order.append(n)
        for p in n._parents:
            visit(p)

    visit(root)
    return order


def no_visited_set(root):
    order = []

    def visit(n):
        for p in n._parents:
            visit(p)
        order.append(n)

    visit(root)
    return order


def first_parent_only(root):
    order, n = [], root
    while True:
        order.append(n)
        if not n._parents:
            return order[::-1]
        n = n._parents[0]


def reversed_bfs(root):
    order, queue, seen = [], [root], {id(root)}
    while queue:
        n = queue.pop(0)
        order.append(n)
        for p in n._parents:
            if id(p) not in seen:
                seen.add(id(p))
                queue.append(p)
    return order[::-1]


def not_implemented(root):
    raise NotImplementedError


@pytest.mark.parametrize("fn, hint", [
    (preorder, "the output comes first"),
    (no_visited_set, "more than once"),
    (first_parent_only, "missing node"),
    (reversed_bfs, "is listed before its parent"),
    (not_implemented, "not implemented yet"),
    (lambda root: {root}, "return a list"),
])
def test_topological_order_check_rejects_typical_mistakes(fn, hint: str) -> None:
    fails_with(check.autograd_topological_order, fn, Value, hint=hint)


# ---- exercise 3: backward --------------------------------------------------------------

def no_base_case(self):
    order = topological_order(self)
    for n in order:
        n.grad = 0.0
    for n in reversed(order):
        n._backward()


def base_case_then_reset(self):
    self.grad = 1.0
    order = topological_order(self)
    for n in order:
        n.grad = 0.0
    for n in reversed(order):
        n._backward()


def forward_order(self):
    order = topological_order(self)
    for n in order:
        n.grad = 0.0
    self.grad = 1.0
    for n in order:
        n._backward()


def no_reset(self):
    self.grad = 1.0
    for n in reversed(topological_order(self)):
        n._backward()


@pytest.mark.parametrize("fn, hint", [
    (no_base_case, "z^ω = dω/dω = 1"),
    (base_case_then_reset, "set the output's grad to 1"),
    (forward_order, "REVERSE topological order"),
    (no_reset, "reset every node's grad to 0"),
])
def test_backward_check_rejects_typical_mistakes(monkeypatch, fn, hint: str) -> None:
    monkeypatch.setattr(Value, "backward", fn)
    fails_with(check.autograd_backward, Value, hint=hint)


# ---- final checks: random expressions, worked example ------------------------------------

def relu_always_one(a, o):
    a.grad += o.grad


def log_wrong(a, o):
    a.grad += o.grad / a.data**2


@pytest.mark.parametrize("method, impl", [
    ("relu", unary(lambda v: max(0.0, v), relu_always_one, "relu")),
    ("log", unary(math.log, log_wrong, "log")),
])
def test_random_expression_check_rejects_wrong_engines(monkeypatch, method, impl) -> None:
    monkeypatch.setattr(Value, method, impl)
    msg = fails_with(check.autograd_against_torch, Value, hint="torch gives")
    assert "expression #" in msg


@pytest.mark.parametrize("method, impl, hint", [
    ("__mul__", binary(lambda a, b: a * b, mul_swapped, "*"), "pass exercise 1 first"),
    ("__pow__", power(lambda a, k, o: setattr(a, "grad", a.grad + a.data ** (k - 1) * o.grad)),
     "pass exercise 1 first"),
    ("__add__", binary(lambda a, b: a + b, add_assign, "+"), "pass exercise 1 first"),
    ("backward", no_base_case, "pass exercise 3 first"),
])
@pytest.mark.parametrize("final", [check.autograd_against_torch, check.autograd_worked_example])
def test_final_checks_send_a_broken_exercise_back_to_it(monkeypatch, final, method, impl,
                                                        hint) -> None:
    """The final checks run the exercises' code: a broken exercise is named, not blamed on
    the expressions."""
    monkeypatch.setattr(Value, method, impl)
    fails_with(final, Value, hint=hint)


# ---- exercise 4: the training loop ----------------------------------------------------

def good_train(params, loss_fn, lr, steps):
    losses = []
    for _ in range(steps):
        loss = loss_fn()
        loss.backward()
        for p in params:
            p.data -= lr * p.grad
        losses.append(loss.data)
    return losses


def uphill(params, loss_fn, lr, steps):
    return good_train(params, loss_fn, -lr, steps)


def stale_graph(params, loss_fn, lr, steps):  # the forward pass runs once, before the loop
    loss, losses = loss_fn(), []
    for _ in range(steps):
        loss.backward()
        for p in params:
            p.data -= lr * p.grad
        losses.append(loss.data)
    return losses


def rebinds(params, loss_fn, lr, steps):  # `p = p - lr * p.grad` leaves the parameter alone
    losses = []
    for _ in range(steps):
        loss = loss_fn()
        loss.backward()
        for p in params:
            p = p - lr * p.grad  # noqa: PLW2901
        losses.append(loss.data)
    return losses


def no_lr(params, loss_fn, lr, steps):
    return good_train(params, loss_fn, 1.0, steps)


def loss_after_update(params, loss_fn, lr, steps):
    good_train(params, loss_fn, lr, steps)
    return [loss_fn().data] * steps


def returns_nothing(params, loss_fn, lr, steps):
    good_train(params, loss_fn, lr, steps)


def returns_strings(params, loss_fn, lr, steps):
    return [f"{v:.3f}" for v in good_train(params, loss_fn, lr, steps)]


def train_todo(params, loss_fn, lr, steps):
    raise NotImplementedError


@pytest.mark.parametrize("fn, hint", [
    (uphill, "stepped *up* the gradient"),
    (stale_graph, "built once, before the loop"),
    (rebinds, "did not move"),
    (no_lr, "ignored the learning rate"),
    (loss_after_update, "losses are not"),
    (returns_nothing, "return the list"),
    (returns_strings, "one number `loss.data` per step"),
    (train_todo, "not implemented yet"),
])
def test_training_check_rejects_typical_mistakes(fn, hint: str) -> None:
    fails_with(check.autograd_training, fn, Value, hint=hint)


def test_training_check_reports_the_falling_loss(capsys) -> None:
    check.autograd_training(good_train, Value)
    out = capsys.readouterr().out
    assert "loss fell from" in out
    first, last = (float(v) for v in out.split("fell from ")[1].split(" in ")[0].split(" to "))
    assert last < 0.5 * first

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
    msg = fails_with(check.autograd_against_torch, Value, hint="against torch.autograd")
    assert "expression #" in msg and "df/dx" in msg


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


# ---- one early mistake costs only the checks that run it ----------------------------------

def _lab_add(self, other):
    other = other if isinstance(other, type(self)) else type(self)(other)
    out = type(self)(self.data + other.data, (self, other), "+")

    def _backward():
        self.grad += out.grad
        other.grad += out.grad

    out._backward = _backward
    return out


def _lab_mul(self, other, *, copy_paste=False):
    other = other if isinstance(other, type(self)) else type(self)(other)
    out = type(self)(self.data * other.data, (self, other), "*")

    def _backward():
        self.grad += other.data * out.grad
        other.grad += (other.data if copy_paste else self.data) * out.grad  # copied line

    out._backward = _backward
    return out


def _lab_pow(self, k):
    out = type(self)(self.data**k, (self,), f"**{k}")

    def _backward():
        self.grad += k * self.data ** (k - 1) * out.grad

    out._backward = _backward
    return out


def _lab_unary(forward, derivative, op):
    """A lab method ``op`` whose closure adds ``derivative(x, out) * out.grad``."""
    def method(self):
        out = type(self)(forward(self.data), (self,), op)

        def _backward():
            self.grad += derivative(self.data, out.data) * out.grad

        out._backward = _backward
        return out
    return method


def lab_topological_order(root):
    order, visited = [], set()

    def visit(node):
        if node in visited:
            return
        visited.add(node)
        for parent in node._parents:
            visit(parent)
        order.append(node)

    visit(root)
    return order


def lab_backward(self):
    order = lab_topological_order(self)
    for node in order:
        node.grad = 0.0
    self.grad = 1.0
    for node in reversed(order):
        node._backward()


def lab_engine(**replaced):
    """A fresh engine written as lab 01's solution writes it (a class of its own, not the
    course's ``lmcourse.autograd.Value``), with the methods in ``replaced`` swapped in."""
    class LabValue:
        def __init__(self, data, _parents=(), _op="", label=""):
            self.data = float(data)
            self.grad = 0.0
            self._parents = _parents
            self._op = _op
            self.label = label
            self._backward = lambda: None

    methods = {
        "__add__": _lab_add, "__mul__": _lab_mul, "__pow__": _lab_pow,
        "tanh": _lab_unary(math.tanh, lambda x, o: 1.0 - o**2, "tanh"),
        "exp": _lab_unary(math.exp, lambda x, o: o, "exp"),
        "relu": _lab_unary(lambda x: max(0.0, x), lambda x, o: float(x > 0), "relu"),
        "log": _lab_unary(math.log, lambda x, o: 1.0 / x, "log"),
        "__neg__": lambda self: self * -1,
        "__sub__": lambda self, other: self + (-other),
        "__truediv__": lambda self, other: self * other**-1,
        "__radd__": lambda self, other: self + other,
        "__rmul__": lambda self, other: self * other,
        "__rsub__": lambda self, other: type(self)(other) - self,
        "__rtruediv__": lambda self, other: type(self)(other) / self,
        "backward": lab_backward,
    }
    for key, method in {**methods, **replaced}.items():
        setattr(LabValue, key, method)
    return LabValue


LAB_CHECKS = {
    "q01 local derivatives": lambda V: check.autograd_ops(V),
    "q02 topological order": lambda V: check.autograd_topological_order(
        lab_topological_order, V),
    "q03 backward": lambda V: check.autograd_backward(V),
    "q04 random expressions": lambda V: check.autograd_against_torch(V),
    "q05 worked example": lambda V: check.autograd_worked_example(V),
    "q06 training loop": lambda V: check.autograd_training(good_train, V),
}


def failing_checks(V) -> dict[str, str]:
    """Each of lab 01's checks that fails on the engine ``V``, with its message."""
    failed = {}
    for label, run in LAB_CHECKS.items():
        try:
            run(V)
        except CheckFailed as err:
            failed[label] = str(err)
    return failed


def test_the_lab_engine_passes_every_check(capsys):
    assert failing_checks(lab_engine()) == {}
    assert capsys.readouterr().out.count("passed") == len(LAB_CHECKS)


@pytest.mark.parametrize("mistake, replaced, fails, says", [
    ("a sign error in tanh's derivative",
     dict(tanh=_lab_unary(math.tanh, lambda x, o: o**2 - 1.0, "tanh")),
     ["q01 local derivatives", "q04 random expressions"], "in x.tanh()"),
    ("a wrong derivative in *",
     dict(__mul__=lambda self, other: _lab_mul(self, other, copy_paste=True)),
     ["q01 local derivatives", "q04 random expressions", "q05 worked example"], "in a * b"),
])
def test_one_wrong_derivative_fails_only_the_checks_that_run_it(capsys, mistake, replaced,
                                                                fails, says):
    """Issue: a single mistake in exercise 1 used to fail 5 of lab 01's 6 checks with "pass
    exercise 1 first". backward and the training loop are graded on the course's nodes now;
    the worked example needs only +, * and **."""
    failed = failing_checks(lab_engine(**replaced))
    assert sorted(failed) == fails, f"{mistake}: {failed}"
    assert all(says in message for message in failed.values()), failed
    for label in fails[1:]:
        assert "pass exercise 1 first" in failed[label], failed[label]
    assert capsys.readouterr().out.count("passed") == len(LAB_CHECKS) - len(fails)


def test_backward_is_graded_on_the_course_nodes_but_still_names_its_mistakes():
    for fn, hint in [(no_base_case, "z^ω = dω/dω = 1"), (forward_order, "REVERSE"),
                     (no_reset, "reset every node's grad to 0")]:
        broken = lab_engine(backward=fn, tanh=_lab_unary(math.tanh, lambda x, o: 0.0, "tanh"))
        fails_with(check.autograd_backward, broken, hint=hint)


def test_an_engine_with_other_attribute_names_still_needs_exercise_1():
    """Only nodes with the course's attributes can run the course's closures: another
    engine is tested on its own nodes, once its local derivatives pass."""
    Renamed = lab_engine(tanh=_lab_unary(math.tanh, lambda x, o: o**2 - 1.0, "tanh"))
    init = Renamed.__init__

    def with_extra(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.children = ()

    Renamed.__init__ = with_extra
    fails_with(check.autograd_backward, Renamed, hint="pass exercise 1 first")
    fails_with(check.autograd_training, good_train, Renamed, hint="pass exercise 1 first")


def test_the_ops_check_can_check_a_subset(capsys):
    broken = lab_engine(tanh=_lab_unary(math.tanh, lambda x, o: o**2 - 1.0, "tanh"))
    check.autograd_ops(broken, ops=("+", "*", "**"))
    assert "+ * ** on 7 cases" in capsys.readouterr().out
    fails_with(check.autograd_ops, broken, hint="in x.tanh()")
    with pytest.raises(ValueError, match="unknown operation"):
        check.autograd_ops(broken, ops=("sigmoid",))

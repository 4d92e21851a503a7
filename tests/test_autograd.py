"""lmcourse.autograd.Value against torch.autograd, and lmcourse.dropout against PyTorch."""

from __future__ import annotations

import math
import random
import sys

import pytest
import torch
import torch.nn.functional as F

from lmcourse.autograd import Value, topological_order
from lmcourse.checks.autograd import evaluate, expression_str, random_case
from lmcourse.dropout import dropout, dropout_mask


def torch_grads(fn, xs: list[float]) -> tuple[float, list[float]]:
    ts = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in xs]
    out = fn(*ts)
    out.backward()
    return out.item(), [0.0 if t.grad is None else t.grad.item() for t in ts]


def ours_grads(fn, xs: list[float]) -> tuple[float, list[float]]:
    vs = [Value(x) for x in xs]
    out = fn(*vs)
    out.backward()
    return out.data, [v.grad for v in vs]


def assert_matches_torch(fn, xs: list[float], tol: float = 1e-12) -> None:
    (v, g), (tv, tg) = ours_grads(fn, xs), torch_grads(fn, xs)
    assert math.isclose(v, tv, rel_tol=tol, abs_tol=tol), (v, tv)
    for a, b in zip(g, tg, strict=True):
        assert math.isclose(a, b, rel_tol=tol, abs_tol=tol), (g, tg)


# ---- operations ---------------------------------------------------------------------

OPS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "neg": lambda a, b: -a + b,
    "pow2": lambda a, b: a**2 * b,
    "pow3": lambda a, b: a**3 + b,
    "pow-1": lambda a, b: a**-1 * b,
    "pow0.5": lambda a, b: (a * a + 1) ** 0.5 * b,
    "tanh": lambda a, b: a.tanh() * b,
    "exp": lambda a, b: a.exp() + b,
    "log": lambda a, b: (a * a).log() * b,
    "relu": lambda a, b: a.relu() + b.relu(),
}


@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("xs", [[0.7, -1.3], [-2.1, 0.4], [1.5, 2.5]])
def test_each_operation_matches_torch(name: str, xs: list[float]) -> None:
    assert_matches_torch(OPS[name], xs)


NUMBERS = {
    "n + x": lambda x: 2.5 + x, "x + n": lambda x: x + 2.5,
    "n - x": lambda x: 2.5 - x, "x - n": lambda x: x - 2.5,
    "n * x": lambda x: 2.5 * x, "x * n": lambda x: x * 2.5,
    "n / x": lambda x: 2.5 / x, "x / n": lambda x: x / 2.5,
    "int": lambda x: 3 * x**2 - 1,
}


@pytest.mark.parametrize("name", sorted(NUMBERS))
def test_numbers_on_either_side(name: str) -> None:
    assert_matches_torch(NUMBERS[name], [-0.8])
    out = NUMBERS[name](Value(-0.8))
    assert isinstance(out, Value)


def test_shared_nodes_accumulate() -> None:
    x = Value(3.0)
    (x + x).backward()
    assert x.grad == 2.0
    (x * x).backward()
    assert x.grad == 6.0
    y = x * x
    (y * y + y).backward()  # x^4 + x^2 -> 4x^3 + 2x
    assert x.grad == pytest.approx(4 * 27 + 6, rel=1e-14)


def test_worked_example() -> None:
    x, y = Value(1.0), Value(2.0)
    f = (x + y) * x * y**2
    f.backward()
    value, grads = torch_grads(lambda a, b: (a + b) * a * b**2, [1.0, 2.0])
    assert f.data == value
    assert [x.grad, y.grad] == grads
    assert x.grad == 2.0**2 * (2 * 1.0 + 2.0)  # y^2 (2x + y), evaluated


def test_backward_twice_gives_same_grads() -> None:
    x, y = Value(0.3), Value(-1.2)
    out = (x * y).tanh() + x.exp() * y
    out.backward()
    first = (x.grad, y.grad, out.grad)
    out.backward()
    assert (x.grad, y.grad, out.grad) == first
    _, ref = torch_grads(lambda a, b: (a * b).tanh() + a.exp() * b, [0.3, -1.2])
    assert list(first[:2]) == pytest.approx(ref, rel=1e-13)


def test_backward_on_intermediate_node() -> None:
    x = Value(0.5)
    h = x.tanh()
    out = h * 3.0
    out.backward()
    h.backward()  # a new output: out's contribution must not leak in
    assert h.grad == 1.0
    assert x.grad == pytest.approx(1 - math.tanh(0.5) ** 2, rel=1e-14)


def test_random_expressions_match_torch() -> None:
    rng = random.Random(1234)
    worst = 0.0
    for _ in range(500):
        expr, xs = random_case(rng)
        (v, g) = ours_grads(lambda *a, e=expr: evaluate(e, a), xs)
        (tv, tg) = torch_grads(lambda *a, e=expr: evaluate(e, a), xs)
        for a, b in zip([v, *g], [tv, *tg], strict=True):
            err = abs(a - b) / max(1.0, abs(b))
            assert err < 1e-9, f"{expression_str(expr)} at {xs}: {a} vs {b}"
            worst = max(worst, err)
    assert worst < 1e-12


def test_topological_order_parents_first_each_once() -> None:
    a, b = Value(1.0), Value(2.0)
    c = a * b
    d = c + a
    out = d.tanh() * c + b
    order = topological_order(out)
    ids = [id(n) for n in order]
    assert len(ids) == len(set(ids))
    pos = {id(n): i for i, n in enumerate(order)}
    for n in order:
        for p in n._parents:
            assert pos[id(p)] < pos[id(n)]
    assert order[-1] is out
    assert {id(a), id(b), id(c), id(d)} <= set(ids)


def test_deep_chain_does_not_hit_recursion_limit() -> None:
    depth = 3 * sys.getrecursionlimit() + 10_000
    x = Value(0.5)
    y = x
    for _ in range(depth):
        y = y.tanh()
    y.backward()
    expected, u = 1.0, 0.5  # the chain rule, one float at a time
    for _ in range(depth):
        u = math.tanh(u)
        expected *= 1 - u * u
    assert y.data == pytest.approx(u, rel=1e-12)
    assert x.grad == pytest.approx(expected, rel=1e-9)
    assert len(topological_order(y)) == depth + 1


def test_bad_inputs_give_clear_errors() -> None:
    with pytest.raises(TypeError, match="takes a number"):
        Value(Value(1.0))
    with pytest.raises(TypeError, match="cannot combine a Value with str"):
        Value(1.0) + "2"
    with pytest.raises(TypeError, match="plain number"):
        Value(2.0) ** Value(3.0)
    with pytest.raises(ValueError, match="positive"):
        Value(-1.0).log()
    with pytest.raises((TypeError, ValueError)):
        Value("abc")


# ---- dropout ------------------------------------------------------------------------

def test_dropout_eval_is_identity() -> None:
    x = torch.randn(50, 20)
    assert dropout(x, 0.5, training=False) is x
    assert torch.equal(dropout(x, 0.5, training=False), F.dropout(x, 0.5, training=False))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_dropout_same_mask_as_torch(p: float, dtype: torch.dtype) -> None:
    x = torch.randn(64, 100, dtype=dtype)
    torch.manual_seed(7)
    ours = dropout(x, p)
    torch.manual_seed(7)
    theirs = F.dropout(x, p, training=True)
    assert torch.equal(ours, theirs)


def test_dropout_edge_probabilities_match_torch() -> None:
    x = torch.randn(10, 10)
    assert torch.equal(dropout(x, 0.0), F.dropout(x, 0.0))
    assert torch.equal(dropout(x, 1.0), F.dropout(x, 1.0))
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError, match="between 0 and 1"):
            dropout(x, bad)


@pytest.mark.parametrize("p", [0.2, 0.5, 0.8])
def test_dropout_fraction_zeroed_is_p(p: float) -> None:
    n = 400_000
    y = dropout(torch.ones(n), p, generator=torch.Generator().manual_seed(0))
    frac = (y == 0).double().mean().item()
    assert abs(frac - p) < 5 * math.sqrt(p * (1 - p) / n)
    kept = y[y != 0]
    assert torch.allclose(kept, torch.full_like(kept, 1 / (1 - p)))


def test_dropout_preserves_expectation() -> None:
    p, n = 0.3, 50_000
    g = torch.Generator().manual_seed(1)
    x = torch.randn(16, generator=g, dtype=torch.float64)
    mean = dropout(x.expand(n, -1), p, generator=g).mean(0)
    sem = x.abs() * math.sqrt(p / (1 - p)) / math.sqrt(n)
    assert ((mean - x).abs() <= 5 * sem).all()
    unscaled = mean * (1 - p)  # without 1/(1-p) the mean would shrink: the test can fail
    assert ((unscaled - x).abs() > 5 * sem).any()


def test_dropout_gradient_is_mask_over_keep_prob() -> None:
    x = torch.randn(1000, dtype=torch.float64, requires_grad=True)
    y = dropout(x, 0.4, generator=torch.Generator().manual_seed(2))
    y.sum().backward()
    assert torch.equal(x.grad, (y != 0).double() / 0.6)


def test_dropout_generator_is_reproducible_and_mask_shape() -> None:
    x = torch.randn(5, 7)
    a = dropout(x, 0.5, generator=torch.Generator().manual_seed(3))
    b = dropout(x, 0.5, generator=torch.Generator().manual_seed(3))
    assert torch.equal(a, b)
    m = dropout_mask((5, 7), 0.5, generator=torch.Generator().manual_seed(3))
    assert m.shape == (5, 7) and set(m.unique().tolist()) <= {0.0, 1.0}

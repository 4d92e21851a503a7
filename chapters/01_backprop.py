# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown] slideshow={"slide_type": "slide"}
# # 01 · Backpropagation
#
# Every model in this course, from the RNN of chapter 02 to the distilled BERT of chapter 12,
# is trained the same way: write the loss as a program, let the computer differentiate the
# program, step downhill. This chapter opens the box that does the differentiating.
#
# By the end of it you will be able to
#
# - describe a computation as a **directed acyclic graph** (DAG), list its parents and
#   children, and find its **topological orders** (and say why we need one);
# - run the **forward pass** and the **backward pass** (backpropagation) by hand on a small
#   graph, using the recursion
#   $z^i = \sum_{j \in \mathrm{ch}(i)} z^j \, \partial f^j / \partial x^i$;
# - read a complete scalar **autograd engine** (`lmcourse.autograd.Value`, about a hundred
#   lines), check it against `torch.autograd` on hundreds of random expressions, train a
#   tiny network with it, and measure what the backward pass costs;
# - say what changes when values are vectors (Jacobians, vector-Jacobian products);
# - implement **inverted dropout**, and measure that it keeps activations unbiased in
#   training and is the identity at test time.
#
# In lab 01 you then write the engine's missing pieces yourself.

# %% [markdown] slideshow={"slide_type": "skip"} tags=["run-card"]
# <details><summary>Run card: 6.1 s on a CPU, 518.9 MB of memory; GPU: not measured yet</summary>
#
# - **Time on a CPU:** 6.1 s normalised to the reference machine: 9.4 s wall on Intel(R) Xeon(R)
#   Processor, one torch thread, calibration 0.739 s against 0.482 s.
# - **Time on a GPU:** not measured yet.
# - **Peak memory:** 518.9 MB (the kernel's resident set).
# - **Last passed:** 2026-11-29, commit `8de5aec` (nbval, as `make test` runs it).
# - **Files read (0):** none.
#
# Measured by the test run (`python -m tools.runcards`), not typed.
# </details>

# %% slideshow={"slide_type": "-"}
import itertools
import math
import random

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

import lmcourse
from lmcourse import show
from lmcourse.dropout import dropout
from lmcourse.viz import draw_dag, draw_graph

generator = lmcourse.seed_everything(0)
torch.set_default_dtype(torch.float64)  # gradient checks want float64 round-off

# %% [markdown] slideshow={"slide_type": "slide"}
# ## What backpropagation computes
#
# Training a network means minimising a **scalar** loss $J(\theta) \in \mathbb{R}$ over
# parameters $\theta$ (millions of numbers). Gradient descent needs, at the current value
# $\hat\theta$, the gradient $\nabla J(\hat\theta)$: one partial derivative per parameter.
#
# Backpropagation is an algorithm with a very plain contract:
#
# - **input**: a loss $J(\theta)$ written as a composition of simple differentiable pieces,
#   and a point $\hat\theta$;
# - **output**: $\nabla J(\hat\theta)$, exactly (up to floating-point round-off), for a small
#   constant multiple of the cost of evaluating $J$ once, however many parameters there are.
#
# It is not symbolic differentiation (no formula for $\nabla J$ is ever written down) and
# not numerical differentiation (no $\frac{J(\theta+\epsilon)-J(\theta)}{\epsilon}$, which
# would need one extra evaluation per parameter). It is the chain rule, applied to numbers,
# in a clever order.
#
# **Notation.** For $f:\mathbb{R}\to\mathbb{R}$, the derivative $\frac{\partial f(x)}{\partial x}$
# is itself a *function* of $x$; evaluated at $x=a$ it is a number, written
# $\left.\frac{\partial f(x)}{\partial x}\right|_{x=a}$.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The chain rule
#
# For differentiable $f, g: \mathbb{R}\to\mathbb{R}$,
#
# $$
# \frac{\partial\, g(f(x))}{\partial x}
#   = \frac{\partial\, g(f(x))}{\partial f(x)} \times \frac{\partial f(x)}{\partial x}.
# $$
#
# Why: near $a$, $f$ is a line, $f(x) \approx f(a) + f'(a)(x-a)$; near $f(a)$, $g$ is a line
# too. A line fed into a line is a line whose slope is the product of the slopes:
#
# $$
# g(f(x)) \approx g(f(a)) + \underbrace{g'(f(a))\, f'(a)}_{\text{the derivative at } a}\,(x-a).
# $$
#
# Each factor is *local*: $f'$ only needs $x$, $g'$ only needs $f(x)$. This is what makes the
# rule mechanical. Try the exercises below by hand first, then compare with the machine.
#
# At $x = 42$, what is the derivative of
# (a) $7$, (b) $2x$, (c) $2x + 99999$, (d) $x^3$, (e) $e^x$, (f) $e^{2x^3+10}$,
# (g) $\log e^{2x^3+10}$?

# %% [markdown] slideshow={"slide_type": "-"}
# Below, each function is written once as ordinary Python and run on a `Value` (our engine)
# and on a `torch` tensor (PyTorch's engine); the third column evaluates the derivative you
# get by hand with the chain rule. The constant is written $0\cdot x + 7$ so that the output
# is still a node of the graph: if $f$ does not use $x$ at all there is no path from $x$ to
# $f$, and the gradient is simply $0$.

# %% slideshow={"slide_type": "-"}
from lmcourse.autograd import Value


def autograd_both(f, x0: float) -> tuple[float, float]:
    """df/dx at x0 by our engine and by torch.autograd; inf/nan/overflow shown as is."""
    x = Value(x0)
    try:
        f(x).backward()
        ours = x.grad
    except OverflowError:
        ours = math.inf  # math.exp refuses to return a number that large
    t = torch.tensor(x0, requires_grad=True)
    f(t).backward()
    return ours, t.grad.item()


exercises = [  # (formula, f, derivative by hand)
    ("7", lambda x: 0 * x + 7, lambda x: 0.0),
    ("2x", lambda x: 2 * x, lambda x: 2.0),
    ("2x + 99999", lambda x: 2 * x + 99999, lambda x: 2.0),
    ("x^3", lambda x: x**3, lambda x: 3 * x**2),
    ("exp(x)", lambda x: x.exp(), lambda x: math.exp(x)),
]
print(f"{'f(x)':>12} | {'by hand':>12} | {'Value':>12} | {'torch':>12}   (at x = 42)")
for formula, f, df in exercises:
    ours, theirs = autograd_both(f, 42.0)
    print(f"{formula:>12} | {df(42.0):12.6g} | {ours:12.6g} | {theirs:12.6g}")
    assert math.isclose(ours, df(42.0), rel_tol=1e-12) and math.isclose(theirs, ours,
                                                                         rel_tol=1e-12)

# %% [markdown] slideshow={"slide_type": "-"}
# The last two exercises are where the chain rule earns its keep:
#
# $$
# \frac{\partial}{\partial x} e^{2x^3+10} = e^{2x^3+10}\cdot 6x^2, \qquad
# \frac{\partial}{\partial x} \log e^{2x^3+10}
#   = \frac{1}{e^{2x^3+10}}\cdot e^{2x^3+10}\cdot 6x^2 = 6x^2 .
# $$
#
# At $x=42$, $2x^3+10 = 148{,}186$, and $e^{148186}$ has tens of thousands of digits (counted
# below); the largest float64 is about $1.8\times10^{308}$. So the machine *cannot* give the
# first answer, and it stumbles on the second even though the answer, $6\cdot 42^2$, is modest:

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
for formula, f, df in [
    ("exp(2x^3+10)", lambda x: (2 * x**3 + 10).exp(), None),
    ("log exp(...)", lambda x: (2 * x**3 + 10).exp().log(), lambda x: 6 * x**2),
    ("2x^3 + 10", lambda x: 2 * x**3 + 10, lambda x: 6 * x**2),
]:
    ours, theirs = autograd_both(f, 42.0)
    hand = "too large" if df is None else f"{df(42.0):g}"
    print(f"{formula:>13} | by hand {hand:>9} | Value {ours:8g} | torch {theirs:8g}")
u = 2 * 42.0**3 + 10
log10_grad = u / math.log(10) + math.log10(6 * 42.0**2)
print(f"2x^3 + 10 = {u:g}; e^{u:g} has {math.floor(u / math.log(10)) + 1} digits; "
      f"log10 of the gradient = {log10_grad:.1f} (largest float64: 10^{math.log10(2**1024):.1f})")

# %% [markdown] slideshow={"slide_type": "-"}
# Our `Value.exp` calls `math.exp`, which raises `OverflowError` (shown as `inf`); torch
# returns `inf`, and then $\log$'s local derivative $1/\infty = 0$ meets
# $e^{\dots}$'s $\infty$, and $0\cdot\infty$ is `nan`. Autodiff differentiates the **program
# you wrote**, not the function you meant: simplify $\log e^{u} = u$ yourself (last row) and
# it is exact. This is why libraries ship fused, stable pieces like `log_softmax` and
# `logsumexp`: chapter 02's loss uses one.
#
# The chain rule itself is easy to confirm where the numbers fit, e.g. at $x = 0.5$:

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
x0 = 0.5
ours, theirs = autograd_both(lambda x: (2 * x**3 + 10).exp(), x0)
by_hand = math.exp(2 * x0**3 + 10) * 6 * x0**2
print(f"d/dx exp(2x^3+10) at 0.5: by hand {by_hand:.8g}, Value {ours:.8g}, torch {theirs:.8g}")
assert math.isclose(ours, by_hand, rel_tol=1e-12) and math.isclose(theirs, by_hand, rel_tol=1e-12)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Several paths: add them up
#
# If $x$ reaches the output through several intermediate functions
# $f_1(x), \dots, f_m(x)$ feeding $g:\mathbb{R}^m\to\mathbb{R}$, each path contributes its own
# product of local derivatives, and the contributions **add**:
#
# $$
# \frac{\partial\, g(f_1(x),\dots,f_m(x))}{\partial x}
#   = \sum_{i=1}^{m} \frac{\partial\, g(f_1(x),\dots,f_m(x))}{\partial f_i(x)}
#     \times \frac{\partial f_i(x)}{\partial x}.
# $$
#
# For $x + x^2 + yx$, the three paths give $1 + 2x + y$. The sum over paths is the single
# most important fact for what follows (and the first bug in most hand-written engines is to
# *overwrite* a gradient instead of adding to it).

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
x, y = Value(42.0), Value(-3.0)
(x + x**2 + y * x).backward()
tx, ty = torch.tensor(42.0, requires_grad=True), torch.tensor(-3.0, requires_grad=True)
(tx + tx**2 + ty * tx).backward()
by_hand = 1 + 2 * 42.0 + (-3.0)
print(f"d/dx (x + x^2 + yx) at (42, -3): by hand 1 + 2x + y = {by_hand:g}, "
      f"Value {x.grad:g}, torch {tx.grad.item():g}")
assert x.grad == by_hand == tx.grad.item()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Computation graphs are DAGs
#
# A **directed graph** $G = (V, A)$ is a set of nodes $V$ and arcs $A \subseteq V\times V$;
# the arc $(i, j)$ points from $i$ to $j$. It is a **directed acyclic graph** (DAG) when it
# has a **topological ordering**: a sequence $\pi$ of all of $V$ in which, for every arc
# $(i,j)\in A$, $i$ comes before $j$. (A graph with a cycle has none: something on the
# cycle would have to come before itself.)
#
# The running example has six nodes:
#
# $$
# V = \{1,\dots,6\},\quad A = \{(1,3), (1,5), (2,4), (3,4), (4,6), (5,6)\}.
# $$
#
# The **parents** of $i$ are the nodes with an arc into it, $\mathrm{pa}(i)$; its
# **children** $\mathrm{ch}(i)$ are the nodes it points to. Nodes without parents are the
# **inputs** $V_I$, the rest are the non-input nodes $V_N$. For backpropagation there are
# usually many inputs and a single output $\omega$ (the loss).

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
V = [1, 2, 3, 4, 5, 6]
A = [(1, 3), (1, 5), (2, 4), (3, 4), (4, 6), (5, 6)]
pa = {v: [i for i, j in A if j == v] for v in V}
ch = {v: [j for i, j in A if i == v] for v in V}
V_I = [v for v in V if not pa[v]]
V_N = [v for v in V if pa[v]]
print(f"pa(4) = {pa[4]}, ch(1) = {ch[1]}, V_I = {V_I}, V_N = {V_N}, "
      f"output = {[v for v in V if not ch[v]]}")

# %% slideshow={"slide_type": "-"}
ax = draw_dag(A)
ax.set_title("The six-node DAG: inputs (blue) on the left, the output (green) on the right")
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# `draw_dag` places each node one column right of its deepest parent, so every arrow points
# right, and reading the columns left to right already *is* a topological order. But there
# are usually many. The function below lists all of them: it builds an order one node at a
# time, and a node may be placed only once all of its parents are placed.

# %% slideshow={"slide_type": "-"}
def all_topological_orders(nodes: list, arcs: list[tuple]) -> list[tuple]:
    """Every order of `nodes` in which i comes before j for each arc (i, j)."""
    parents = {v: {i for i, j in arcs if j == v} for v in nodes}
    orders = []

    def extend(prefix: list, placed: frozenset) -> None:
        if len(prefix) == len(nodes):
            orders.append(tuple(prefix))
        for v in nodes:
            if v not in placed and parents[v] <= placed:
                extend(prefix + [v], placed | {v})

    extend([], frozenset())
    return orders


# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
orders = all_topological_orders(V, A)
brute_force = [p for p in itertools.permutations(V)
               if all(p.index(i) < p.index(j) for i, j in A)]  # check all 720 orders
print(f"{len(orders)} topological orders (brute force over 720 permutations: "
      f"{len(brute_force)})")
for order in orders:
    print(" ", order)
assert sorted(orders) == sorted(brute_force)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Two orders, or all of them?
#
# A common way to answer for this graph lists two orders,
# $\Pi_G = \{(1,2,3,4,5,6), (2,1,3,4,5,6)\}$. Both orders are valid, but with the arcs as
# listed they are not *all* the orders: node 5 only has to follow 1 and precede 6, and
# node 2 only has to precede 4, so both can move.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
listed = [(1, 2, 3, 4, 5, 6), (2, 1, 3, 4, 5, 6)]
print(f"{'':28} {'listed':>8} {'computed here':>14}")
print(f"{'number of topological orders':28} {len(listed):>8} {len(orders):>14}")
print(f"both listed orders are topological orders: {all(o in orders for o in listed)}")
for v in (2, 5):
    print(f"positions node {v} takes (1 = first): {sorted({o.index(v) + 1 for o in orders})}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Forward pass
#
# A **computation graph** is a DAG with a single output $\omega$ in which every node $i$ holds
# a value $x^i\in\mathbb{R}$:
#
# - an input node $i\in V_I$ is given its value, $x^i = a^i$;
# - a non-input node $i\in V_N$ has a differentiable function
#   $f^i:\mathbb{R}^{|\mathrm{pa}(i)|}\to\mathbb{R}$ and computes
#   $x^i = f^i\big((x^j)_{j\in\mathrm{pa}(i)}\big)$.
#
# The graph is therefore a function from the input values to the scalar $x^\omega$. The
# **forward pass** evaluates it: pick a topological order $\pi$; for $i$ in order, if
# $i \in V_N$, set $x^i \leftarrow f^i\big((x^j)_{j\in\mathrm{pa}(i)}\big)$.
#
# **Why a topological order?** Because $f^i$ needs the values of all of $i$'s parents, and a
# topological order is exactly an order in which every parent has been computed by the time
# its child is. Any topological order gives the same result; a non-topological one asks for a
# value that does not exist yet. Let us give the six nodes functions and try.

# %% slideshow={"slide_type": "-"}
functions = {  # x^i = f^i(parents' values, in the order of pa(i))
    3: lambda x1: 2 * x1,
    4: lambda x2, x3: x2 * x3,
    5: lambda x1: x1**2,
    6: lambda x4, x5: x4 + x5,
}


def forward_pass(order, inputs: dict) -> dict:
    """Fill x^i for every node, visiting the nodes in `order`."""
    x = dict(inputs)
    for i in order:
        if i in functions:
            missing = [j for j in pa[i] if j not in x]
            if missing:
                raise RuntimeError(f"node {i} needs x^{missing[0]}, which is not computed yet")
            x[i] = functions[i](*(x[j] for j in pa[i]))
    return x


# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
a = {1: 1.5, 2: -2.0}
outputs = {forward_pass(order, a)[6] for order in orders}
print(f"x^6 over all {len(orders)} topological orders: {outputs}")
try:
    forward_pass((1, 2, 4, 3, 5, 6), a)  # 4 before its parent 3
except RuntimeError as err:
    print(f"order (1, 2, 4, 3, 5, 6): RuntimeError: {err}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Backward pass: backpropagation
#
# For every node $i$ introduce a second slot, its **gradient**: the derivative of the output
# with respect to that node's value, at the input values $a_I$,
#
# $$
# z^i := \left.\frac{\partial x^\omega}{\partial x^i}\right|_{x_I = a_I}.
# $$
#
# The goal of backpropagation is to fill $z^i$ for every $i$. For the inputs $i\in V_I$ this
# *is* the gradient we want (with the parameters $\theta$ among the inputs), so once every
# $z^i$ is known we are done.
#
# The value $x^i$ influences $x^\omega$ only through its children, so by the chain rule with
# several paths,
#
# $$
# z^i = \sum_{j\in\mathrm{ch}(i)}
#   \left.\frac{\partial x^\omega}{\partial x^j}\right|_{x_I=a_I}
#   \times \left.\frac{\partial x^j}{\partial x^i}\right|_{x_I^j=a_I^j}
# = \sum_{j\in\mathrm{ch}(i)} z^j \times
#   \underbrace{\left.\frac{\partial f^j(x_I^j)}{\partial x^i}
#     \right|_{x_I^j=a_I^j}}_{\text{local: easy}}
# $$
#
# where $x_I^j$ are node $j$'s parental slots and $a_I^j$ their values. Each term needs
# $z^j$ of a *child*. So if we visit the nodes in **reverse topological order**, every
# $z^j$ we need is already computed. The recursion starts at the output with the base case
# $z^\omega = \partial x^\omega/\partial x^\omega = 1$.
#
# **Backpropagation.** Given a computation graph whose values $x^i = a^i$ are filled by a
# forward pass: (1) set $z^\omega \leftarrow 1$; (2) pick a topological order $\pi$;
# (3) for $i$ in reverse order of $\pi$, set
# $z^i \leftarrow \sum_{j\in\mathrm{ch}(i)} z^j \,\partial f^j/\partial x^i$.
#
# Here it is on the six-node graph, with the local derivatives of our four functions written
# out; the result is compared with our engine and with PyTorch on the same function,
# $x^6 = x^2\cdot 2x^1 + (x^1)^2$.

# %% slideshow={"slide_type": "-"}
local = {  # (j, i): d f^j / d x^i as a function of all values x
    (3, 1): lambda x: 2.0,
    (4, 2): lambda x: x[3],
    (4, 3): lambda x: x[2],
    (5, 1): lambda x: 2 * x[1],
    (6, 4): lambda x: 1.0,
    (6, 5): lambda x: 1.0,
}


def backward_pass(order, x: dict, omega: int = 6) -> dict:
    """z^i = sum over children j of z^j * df^j/dx^i, in reverse topological order."""
    z = {omega: 1.0}
    for i in reversed(order):
        if i != omega:
            z[i] = sum(z[j] * local[(j, i)](x) for j in ch[i])
    return z


# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
x = forward_pass(orders[0], a)
z = backward_pass(orders[0], x)
same = all(backward_pass(o, forward_pass(o, a)) == z for o in orders)
x1, x2 = Value(a[1]), Value(a[2])
out = x2 * (2 * x1) + x1**2
out.backward()
t1, t2 = torch.tensor(a[1], requires_grad=True), torch.tensor(a[2], requires_grad=True)
(t2 * (2 * t1) + t1**2).backward()
print("z by the recursion:", {i: round(v, 6) for i, v in sorted(z.items())})
print(f"same z for all {len(orders)} orders: {same}")
print(f"z^1: recursion {z[1]:g}, Value {x1.grad:g}, torch {t1.grad.item():g}")
print(f"z^2: recursion {z[2]:g}, Value {x2.grad:g}, torch {t2.grad.item():g}")
assert z[1] == x1.grad == t1.grad.item() and z[2] == x2.grad == t2.grad.item()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The worked exercise: $f(x, y) = (x+y)\,x\,y^2$ at $(1, 2)$
#
# **Graph.** Name the intermediate results: $a = x + y$, $b = a\cdot x$, $c = y^2$,
# $f = b\cdot c$. The inputs $x$ and $y$ each have two children ($x$ feeds $a$ and $b$; $y$
# feeds $a$ and $c$), which is where the sum over paths will matter.
#
# **Forward pass** (in the topological order $x, y, a, b, c, f$):
# $a = 3$, $b = 3$, $c = 4$, $f = 12$.
#
# **Backward pass** (reverse order, local derivatives of $+$ are $1$, of $u\cdot v$ are
# $v$ and $u$, of $y^2$ is $2y$):
#
# | node | children | $z$ = sum over children of $z^{\text{child}}\times$ local | value |
# |---|---|---|---|
# | $f$ | — | base case | $1$ |
# | $c$ | $f$ | $z^f\cdot b$ | $3$ |
# | $b$ | $f$ | $z^f\cdot c$ | $4$ |
# | $a$ | $b$ | $z^b\cdot x$ | $4$ |
# | $y$ | $a, c$ | $z^a\cdot 1 + z^c\cdot 2y$ | $4 + 12 = 16$ |
# | $x$ | $a, b$ | $z^a\cdot 1 + z^b\cdot a$ | $4 + 12 = 16$ |
#
# **Symbolically**, $f = x^2y^2 + xy^3$, so
#
# $$
# \frac{\partial f}{\partial x} = 2xy^2 + y^3 = y^2(2x+y) = 4\cdot 4 = 16, \qquad
# \frac{\partial f}{\partial y} = 2x^2y + 3xy^2 = 4 + 12 = 16 .
# $$
#
# Both inputs get 16, each as a sum of two paths. Now the engine.

# %% [markdown] slideshow={"slide_type": "-"}
# **Try it by hand first.** Draw the graph ($a = x + y$, $b = a \cdot x$, $c = y^2$,
# $f = b \cdot c$), fill in the forward values at $(x, y) = (1, 2)$, then go backward from
# $\partial f/\partial f = 1$. Why does $x$ receive a gradient along two paths, and what do
# you do with the two contributions? The cells below answer both.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## A scalar autograd engine
#
# `lmcourse.autograd.Value` turns the algorithm above into code, micrograd-style. Each
# `Value` is a node: it stores its number `data`, its `grad` ($z^i$), its parents, and a
# closure `_backward` that knows the local derivatives of the operation that made it.
# Calling an operation does the forward step *and* records the graph. Here is
# multiplication, $\partial(uv)/\partial u = v$, $\partial(uv)/\partial v = u$:

# %% slideshow={"slide_type": "-"}
show(Value.__mul__)

# %% [markdown] slideshow={"slide_type": "-"}
# The closure runs later, during the backward pass, when `out.grad` ($z^{\text{out}}$) is
# complete. It adds (`+=`, never `=`) its term $z^{\text{out}}\cdot\partial f/\partial x^i$ to
# each parent's `grad`: that is the sum over children in the recursion, one child at a time.
#
# A topological order is found by depth-first search: a node is appended only after all of
# its parents. It uses an explicit stack rather than recursion so that a graph 100,000 nodes
# deep (an RNN unrolled over a long text) does not hit Python's recursion limit:

# %% slideshow={"slide_type": "-"}
from lmcourse.autograd import topological_order

show(topological_order)

# %% [markdown] slideshow={"slide_type": "-"}
# And `backward` is the three steps of the algorithm: reset every `grad`, set the base case
# $z^\omega = 1$, visit the nodes in reverse topological order.

# %% slideshow={"slide_type": "-"}
show(Value.backward)

# %% [markdown] slideshow={"slide_type": "-"}
# The worked exercise three ways: the hand-derived formulas, our engine, PyTorch.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
def f(x, y):
    return (x + y) * x * y**2


x, y = Value(1.0, label="x"), Value(2.0, label="y")
out = f(x, y)
out.backward()
tx, ty = torch.tensor(1.0, requires_grad=True), torch.tensor(2.0, requires_grad=True)
t_out = f(tx, ty)
t_out.backward()
hand = {"f": (1 + 2) * 1 * 2**2, "df/dx": 2**2 * (2 * 1 + 2), "df/dy": 2 * 1**2 * 2 + 3 * 1 * 2**2}
ours = {"f": out.data, "df/dx": x.grad, "df/dy": y.grad}
torch_ = {"f": t_out.item(), "df/dx": tx.grad.item(), "df/dy": ty.grad.item()}
print(f"{'':6} {'by hand':>8} {'Value':>8} {'torch':>8}")
for k in hand:
    print(f"{k:6} {hand[k]:8g} {ours[k]:8g} {torch_[k]:8g}")
    assert hand[k] == ours[k] == torch_[k]

# %% [markdown] slideshow={"slide_type": "-"}
# The engine's graph for $f$, drawn from the `Value` itself (`draw_graph` walks the parents
# of the output): each box shows the operation, the value from the forward pass and the
# gradient from the backward pass. Check the table above against it: $z^c = 3$, $z^b = 4$,
# and 16 at both inputs.

# %% slideshow={"slide_type": "-"}
b, c = out._parents  # name the intermediate nodes as in the table above
a = b._parents[0]
for node, name in [(a, "a"), (b, "b"), (c, "c"), (out, "f")]:
    node.label = name
ax = draw_graph(out)
ax.set_title("f(x, y) = (x + y) · x · y² at (1, 2): data from the forward pass, grad from backward")
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# Two details of the contract are worth seeing once. A node used twice gets both
# contributions (this is why the closures use `+=`), and calling `backward` twice gives the
# same gradients, because `backward` resets them first (PyTorch instead *accumulates* into
# `.grad` across calls until you zero it, which is what `optimizer.zero_grad()` is for).

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
x = Value(3.0)
sq = x * x
sq.backward()
first = x.grad
sq.backward()
print(f"d(x*x)/dx at 3: {first:g} (2x = {2 * 3.0:g}); after a second backward: {x.grad:g}")
assert first == x.grad == 2 * 3.0

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Trust, but verify: random expressions against `torch.autograd`
#
# A handful of examples is not a test. The course's auto-checks (and lab 01) generate random
# expressions over three inputs using every operation the engine has,
# $+\ -\ \times\ \div$, powers, $\tanh$, $\exp$, $\log$, $\mathrm{relu}$, with plain numbers on
# either side and subexpressions reused, so the graphs are DAGs, not trees. Domains are safe
# by construction ($\log$ and divisions only see $u^2 + c$, $c>0$).

# %% slideshow={"slide_type": "-"}
from lmcourse.checks.autograd import random_expression

show(random_expression)

# %% [markdown] slideshow={"slide_type": "-"}
# The same expression is evaluated once with `Value` inputs and once with float64 tensors;
# the output values and all three gradients must agree to round-off. We measure the relative
# difference $|{\rm ours}-{\rm torch}| / \max(1, |{\rm torch}|)$.

# %% slideshow={"slide_type": "-"}
from lmcourse.checks.autograd import evaluate, expression_str, random_case

rng = random.Random(0)
worst, nodes = 0.0, []
for _ in range(200):
    expr, xs = random_case(rng)
    ins = [Value(v) for v in xs]
    out = evaluate(expr, ins)
    out.backward()
    ts = [torch.tensor(v, requires_grad=True) for v in xs]
    t_out = evaluate(expr, ts)
    t_out.backward()
    ours = [out.data] + [v.grad for v in ins]
    ref = [t_out.item()] + [0.0 if t.grad is None else t.grad.item() for t in ts]
    worst = max(worst, *(abs(p - q) / max(1.0, abs(q)) for p, q in zip(ours, ref, strict=True)))
    nodes.append(len(topological_order(out)))
    if nodes[-1] == 12:
        example = f"{expression_str(expr)} at x = {xs}"
print("an expression with 12 nodes:", example)
print(f"200 random expressions ({min(nodes)}-{max(nodes)} nodes): "
      f"max |ours - torch| / max(1, |torch|) = {worst:.1e}  (tolerance 1e-9)")
assert worst < 1e-9

# %% [markdown] slideshow={"slide_type": "-"}
# Deep graphs are no problem either: a chain of 20,000 multiplications (40,001 nodes,
# counting the constants) differentiates without touching the recursion limit, and
# $\frac{d}{dx}\,(1.0001^{20000}\,x) = 1.0001^{20000} \approx e^2$:

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
x = Value(1.0)
y = x
for _ in range(20_000):
    y = y * 1.0001
y.backward()
print(f"{len(topological_order(y))} nodes; grad {x.grad:.10f}, "
      f"closed form 1.0001**20000 = {1.0001**20000:.10f}")
assert math.isclose(x.grad, 1.0001**20000, rel_tol=1e-12)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## A gradient step: training with `Value`
#
# The gradient is only useful because of what we do with it. **Gradient descent** moves
# every parameter a small step *against* its gradient,
#
# $$\theta \leftarrow \theta - \eta\, \nabla_\theta J(\theta),$$
#
# with a learning rate $\eta > 0$: for small enough $\eta$ the loss goes down, since to first
# order $J(\theta - \eta g) \approx J(\theta) - \eta \lVert g\rVert^2$. One training step is
# therefore: a **forward pass** that builds the graph of the loss from the current
# parameters, a **backward pass** that fills every parameter's `grad`, and an **update**
# of each parameter's `data`. The graph is rebuilt at every step, because the numbers in it
# (the forward values) change with the parameters.
#
# Here is the smallest real network: a two-layer perceptron with one input, $H = 6$ tanh
# units and one output,
# $\hat y(x) = b_2 + \sum_{j=1}^{H} w^{(2)}_j \tanh\big(w^{(1)}_j x + b^{(1)}_j\big)$,
# fitted by the mean squared error $J = \frac1N\sum_i (\hat y(x_i) - y_i)^2$ to eight points
# of $y = \sin 3x$. Every weight is a `Value`; nothing else is needed.

# %% slideshow={"slide_type": "-"}
rng = random.Random(0)
points = [(-1 + 2 * i / 7, math.sin(3 * (-1 + 2 * i / 7))) for i in range(8)]
H = 6
w1 = [Value(rng.gauss(0, 1)) for _ in range(H)]
b1 = [Value(0.0) for _ in range(H)]
w2 = [Value(rng.gauss(0, 1 / math.sqrt(H))) for _ in range(H)]
b2 = Value(0.0)
params = [*w1, *b1, *w2, b2]


def predict(x: float) -> Value:
    return sum((w2[j] * (w1[j] * x + b1[j]).tanh() for j in range(H)), b2)


def mse() -> Value:
    """J = mean squared error over the points: a fresh graph from the current weights."""
    return sum(((predict(x) - y) ** 2 for x, y in points), Value(0.0)) * (1 / len(points))


# %% slideshow={"slide_type": "-"}
lr, losses = 0.3, []
for _ in range(150):
    loss = mse()              # forward: build the graph of J
    loss.backward()           # backward: fill p.grad = dJ/dp for every weight
    for p in params:
        p.data -= lr * p.grad  # the update: a small step downhill
    losses.append(loss.data)
print(f"{len(params)} parameters, {len(topological_order(loss))} nodes in the graph of J; "
      f"loss {losses[0]:.4f} at step 0, {losses[-1]:.4f} after {len(losses)} steps")
assert losses[-1] < 0.2 * losses[0]

# the simple baselines on the same points: the best constant (the mean) and the best line
xs, ys = [x for x, _ in points], [y for _, y in points]
x_bar, y_bar = sum(xs) / len(xs), sum(ys) / len(ys)
slope = (sum((x - x_bar) * (y - y_bar) for x, y in points)
         / sum((x - x_bar) ** 2 for x in xs))
baselines = {"best constant (mean of y)": [y_bar] * len(xs),
             "least-squares line": [y_bar + slope * (x - x_bar) for x in xs]}
for name, fitted in baselines.items():
    error = sum((f - y) ** 2 for f, y in zip(fitted, ys, strict=True)) / len(ys)
    print(f"{name:>27}: MSE {error:.4f}")
print(f"{'the MLP after 150 steps':>27}: MSE {losses[-1]:.4f} (the loss of its last step)")

# %% slideshow={"slide_type": "-"}
fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.2))
left.semilogy(losses)
left.set(xlabel="gradient step", ylabel="mean squared error (log scale)",
         title="The loss falls, step by step")
grid = [-1.1 + 2.2 * i / 100 for i in range(101)]
right.plot(grid, [math.sin(3 * x) for x in grid], ":", color="grey", label="sin 3x")
right.plot(grid, [predict(x).data for x in grid], color="C1", lw=2, label="the trained MLP")
right.scatter(*zip(*points, strict=True), color="k", zorder=3, label="training points")
right.set(xlabel="x", title="The fit after the last step")
right.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# In lab 01 you write this loop with your own engine, and the check there recognises the
# classic mistakes: stepping *up* the gradient, building the loss graph once outside the
# loop, or rebinding a parameter instead of updating its `data`.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### What does the backward pass cost?
#
# Backpropagation visits every node once and does a constant amount of work per incoming
# arc, so its cost is a **small constant times the cost of the forward pass**, whatever the
# number of parameters. That is the textbook statement (Baydin et al., 2018; Griewank &
# Walther's *cheap gradient principle*); for matrix products the constant is about 2, since
# the backward pass of $Y = XW$ needs two products of the same size, $\partial J/\partial W =
# X^\top \bar Y$ and $\partial J/\partial X = \bar Y W^\top$, where the forward pass needed one.
# Numerical differentiation would instead cost one extra forward pass *per parameter*.
#
# Measured with the course's timer (`lmcourse.timing.compare`: warm-up, alternating
# repeats, medians), on the MLP's loss above and on a two-layer network of matrix products
# in PyTorch (its input $X$ stands for the output of an earlier layer, so it needs a
# gradient too, as inside any deep network):

# %% slideshow={"slide_type": "-"}
from lmcourse.timing import compare

loss = mse()
t_fwd, t_bwd = compare(mse, loss.backward, repeats=15, warmup=2)
g = torch.Generator().manual_seed(0)
X = torch.randn(256, 512, generator=g, requires_grad=True)  # an earlier layer's output
W1 = torch.randn(512, 1024, generator=g, requires_grad=True)
W2 = torch.randn(1024, 10, generator=g, requires_grad=True)
t_loss = (torch.tanh(X @ W1) @ W2).square().mean()
t_fwd_torch, t_bwd_torch = compare(lambda: (torch.tanh(X @ W1) @ W2).square().mean(),
                                   lambda: t_loss.backward(retain_graph=True), repeats=15)
print(f"{'':34}{'forward':>10}{'backward':>10}{'backward / forward':>20}")
print(f"{'Value, MLP loss (scalar nodes)':34}{1e3 * t_fwd:8.2f}ms{1e3 * t_bwd:8.2f}ms"
      f"{t_bwd / t_fwd:19.2f}x  (measured)")
print(f"{'torch, 256x512 @ 512x1024 @ ...':34}{1e3 * t_fwd_torch:8.2f}ms{1e3 * t_bwd_torch:8.2f}ms"
      f"{t_bwd_torch / t_fwd_torch:19.2f}x  (measured)")
print(f"{'textbook expectation':34}{'':20}{'a small constant, ~2-3':>20}")
print(f"numerical differentiation of the MLP: {len(params) + 1} forward passes, "
      f"≈ {len(params) + 1:.0f}x one forward pass")
ratio = t_bwd / t_fwd
if ratio < 1:
    print(f"Value: backward is {1 / ratio:.1f}x *faster* than forward here: in pure Python the "
          "forward pays for a new object and closure per node, the backward only calls them.")
else:
    print(f"Value: backward costs {ratio:.1f}x the forward, within a small constant.")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Vectors: the same algorithm with Jacobians
#
# Real networks have vector (matrix, tensor) nodes: $x^i\in\mathbb{R}^{d^i}$. The output is
# still a scalar, and each gradient $z^i\in\mathbb{R}^{d^i}$ has the shape of its node. The
# recursion is unchanged except that the local derivative is now a **Jacobian** matrix:
#
# $$
# z^i = \sum_{j\in\mathrm{ch}(i)}
#   \underbrace{\left.\frac{\partial x^\omega}{\partial x^j}\right|_{x_I=a_I}}_{1\times d^j}
#   \times
#   \underbrace{\left.\frac{\partial x^j}{\partial x^i}\right|_{x_I^j=a_I^j}}_{d^j\times d^i}.
# $$
#
# Backpropagation only ever needs the *product* of a row vector with the Jacobian (a
# vector-Jacobian product), never the Jacobian itself; for $h = \tanh(Wx)$ that product is
# $\big(z^h \odot (1-h^2)\big)^{\!\top} W$, computed without forming the $d^h\times d^x$ matrix.
# Below, for $\omega = v^\top \tanh(Wx)$, we compare three things: `x.grad` from
# `torch.autograd`, $z^h$ times the explicit Jacobian, and our scalar engine run on the same
# computation written out one number at a time (a vector is just many scalar nodes).

# %% slideshow={"slide_type": "-"}
W, v = torch.randn(4, 3, generator=generator), torch.randn(4, generator=generator)
x = torch.randn(3, generator=generator, requires_grad=True)
(v @ torch.tanh(W @ x)).backward()
J = torch.autograd.functional.jacobian(lambda x: torch.tanh(W @ x), x)  # 4 x 3
vjp = v @ J  # z^h = v: (1 x 4) times (4 x 3)
xs = [Value(float(t)) for t in x.detach()]
hs = [sum((W[i, j].item() * xs[j] for j in range(3)), 0.0).tanh() for i in range(4)]
omega = sum((v[i].item() * hs[i] for i in range(4)), 0.0)
omega.backward()
ours = torch.tensor([t.grad for t in xs])
print(f"Jacobian shape {tuple(J.shape)}; max |x.grad - z^h J| = "
      f"{(x.grad - vjp).abs().max().item():.0e}, max |x.grad - scalar engine| = "
      f"{(x.grad - ours).abs().max().item():.0e}  (tolerance 1e-12)")
assert (x.grad - vjp).abs().max() < 1e-12 and (x.grad - ours).abs().max() < 1e-12

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Dropout: a regulariser that lives in the forward pass
#
# Big networks memorise. **Dropout** handicaps a network during training: each hidden unit
# is set to 0 with probability $p$, independently, with a fresh random mask at every step.
# No unit can rely on a particular partner being present, so units learn features that are
# useful on their own (Srivastava et al., 2014, found $p = 0.5$ for hidden units a good
# default; BERT uses a much smaller rate, read from its configuration below).
#
# Zeroing units shrinks the layer's output on average by a factor $1-p$. **Inverted
# dropout** compensates during training, so that nothing changes at test time:
#
# $$
# y_i = \frac{m_i}{1-p}\, x_i,\qquad m_i\sim\mathrm{Bernoulli}(1-p),\qquad
# \mathbb{E}[y_i] = \frac{(1-p)\,x_i}{1-p} = x_i ;
# $$
#
# and at test time $y = x$ (the identity). The original paper did the opposite (no scaling in
# training, multiply the weights by $1-p$ at test time); the two agree in expectation, and
# the inverted form is what PyTorch's `torch.nn.functional.dropout` computes.

# %% [markdown] slideshow={"slide_type": "-"}
# **Predict before you run:** a common saying is "at test time we multiply by $p$". Which
# factor does PyTorch apply, when, and to what? The histogram below answers it in one
# picture.

# %% slideshow={"slide_type": "-"}
show(dropout)

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
from transformers import BertConfig

bert = BertConfig()  # the defaults are BERT-base's published configuration
print(f"BERT-base dropout: hidden layers p = {bert.hidden_dropout_prob}, "
      f"attention weights p = {bert.attention_probs_dropout_prob} "
      "(Srivastava et al.'s default for hidden units: p = 0.5)")

# %% [markdown] slideshow={"slide_type": "-"}
# Checks against PyTorch: in evaluation mode it is the identity; with the same random state
# it draws the *same* mask as `F.dropout` (PyTorch also draws $m\sim$ Bernoulli$(1-p)$ and
# multiplies by $m/(1-p)$); and the fraction of zeros is $p$, measured on a million units
# and compared with a $5\sigma$ sampling band, $5\sqrt{p(1-p)/n}$.

# %% slideshow={"slide_type": "-"}
x = torch.randn(1000, 1000)
assert torch.equal(dropout(x, 0.5, training=False), x)
print("eval mode: identity (exactly equal)")
print(f"{'p':>4} | {'zeros: ours':>11} | {'torch':>7} | {'5 sigma':>7} | same mask as torch")
for p in (0.1, 0.5, 0.9):
    torch.manual_seed(1)
    ours = dropout(x, p)
    torch.manual_seed(1)
    theirs = F.dropout(x, p, training=True)
    frac, frac_torch = (ours == 0).double().mean().item(), (theirs == 0).double().mean().item()
    band = 5 * math.sqrt(p * (1 - p) / x.numel())
    print(f"{p:4.1f} | {frac:11.4f} | {frac_torch:7.4f} | {band:7.4f} | "
          f"max diff {(ours - theirs).abs().max().item():.0e}")
    assert abs(frac - p) < band and torch.equal(ours, theirs)

# %% [markdown] slideshow={"slide_type": "-"}
# **Expectation preserved, measured.** Take one fixed activation vector, draw 20,000 masks,
# and average the outputs: with inverted scaling the average converges to $x$; the
# sampling error of each unit's mean is $|x_i|\sqrt{p/(1-p)}/\sqrt{N}$ (the variance of
# $y_i$ is $x_i^2\,p/(1-p)$), and we allow five of those.

# %% slideshow={"slide_type": "-"}
p, N = 0.5, 20_000
x = torch.randn(8, generator=generator)
samples = dropout(x.expand(N, -1), p, generator=generator)
mean = samples.mean(0)
sem = x.abs() * math.sqrt(p / (1 - p)) / math.sqrt(N)
z_scores = ((mean - x).abs() / sem).max().item()
print(f"x           = {[round(v, 3) for v in x.tolist()]}")
print(f"mean of {N} = {[round(v, 3) for v in mean.tolist()]}")
print(f"largest deviation: {z_scores:.2f} standard errors (allowed 5)")
assert z_scores < 5

# %% [markdown] slideshow={"slide_type": "-"}
# The mask is part of the computation graph, so backpropagation handles dropout with no
# special case: the local derivative of $y_i$ is $m_i/(1-p)$, so gradients flow only through
# the units that were kept, scaled by the same factor.

# %% slideshow={"slide_type": "-"}
x = torch.randn(6, requires_grad=True, generator=generator)
y = dropout(x, 0.5, generator=torch.Generator().manual_seed(3))
y.sum().backward()
expected = (y != 0).double() / (1 - 0.5)
print(f"x.grad = {x.grad.tolist()}  (m / (1 - p) = {expected.tolist()})")
assert torch.equal(x.grad, expected)

# %% [markdown] slideshow={"slide_type": "-"}
# Left: one mask on a $16\times 32$ layer (dark = dropped). Right: the mean activation of that
# 512-unit layer under 5,000 random masks, with the inverted scaling and without it. With
# the scaling the distribution is centred on the true mean (no dropout); without, it is
# centred on $(1-p)$ times it, a shift the next layer would see at test time.

# %% slideshow={"slide_type": "-"}
def dropout_figure(p: float = 0.5, samples: int = 5000) -> None:
    g = torch.Generator().manual_seed(0)
    h = torch.rand(512, generator=g) + 0.5  # a fixed layer of positive activations
    ys = dropout(h.expand(samples, -1), p, generator=g)
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.2))
    left.imshow((ys[0] != 0).reshape(16, 32), cmap="Greys_r", vmin=0, vmax=1)
    left.set_title(f"one mask, p = {p:.1f}: {(ys[0] == 0).double().mean().item():.0%} dropped")
    left.set_xticks([])
    left.set_yticks([])
    right.hist(ys.mean(1), bins=50, alpha=0.7, label="inverted: m·x/(1-p)")
    right.hist(ys.mean(1) * (1 - p), bins=50, alpha=0.7, label="not scaled: m·x")
    right.axvline(h.mean().item(), color="k", ls="--", label="no dropout")
    right.set_xlabel("mean activation of the layer")
    right.legend(fontsize=8)
    plt.tight_layout()
    plt.show()


dropout_figure(0.5)

# %% [markdown] slideshow={"slide_type": "-"}
# The same picture for any $p$ (the slider works in a live notebook; the static figure
# above is what the site shows). Higher $p$ widens the spread of the mean, which is the
# noise the network is trained to be robust to.

# %% slideshow={"slide_type": "-"}
import ipywidgets as widgets

slider = widgets.FloatSlider(value=0.5, min=0.0, max=0.9, step=0.1, description="p")
_ = widgets.interact(dropout_figure, p=slider, samples=widgets.fixed(5000))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - A computation is a **DAG** of nodes $x^i = f^i\big((x^j)_{j\in\mathrm{pa}(i)}\big)$ with a
#   single scalar output. The forward pass evaluates it in any **topological order**
#   (our six-node example has 11); any other order asks for values not yet computed.
# - Backpropagation fills $z^i = \partial x^\omega/\partial x^i$ for every node with
#   $z^\omega = 1$ and $z^i = \sum_{j\in\mathrm{ch}(i)} z^j\,\partial f^j/\partial x^i$ in
#   **reverse** topological order. Contributions from several children **add**.
# - For $f(x,y) = (x+y)xy^2$ at $(1,2)$: $f = 12$ and both partial derivatives are 16, by
#   hand, by our `Value` engine and by PyTorch.
# - Our engine agrees with `torch.autograd` to round-off on 200 random expressions; a
#   deep chain of 40,001 nodes is no problem for its iterative topological sort.
# - **Gradient descent** with `Value`: forward (build the graph of the loss), backward,
#   update `p.data -= lr * p.grad`, repeat; a small MLP's loss falls (plotted). The
#   backward pass costs a small constant times the forward pass (measured above, beside
#   the textbook's ~2-3x for matrix products).
# - With vectors, local derivatives are Jacobians, and backprop only needs
#   vector-Jacobian products.
# - Autodiff differentiates the program, so its numerics matter: $\log e^{u}$ overflows
#   where $u$ would not.
# - **Inverted dropout** zeroes units with probability $p$ and scales the rest by
#   $1/(1-p)$, keeping the expectation (measured) and making test time the identity.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises
#
# 1. *(warm-up)* Draw the computation graph of $g(x, y) = \tanh(xy) + x$ with `draw_graph`,
#    predict every node's gradient at $(0.5, -1)$ by hand, then call `backward` and compare.
# 2. *(orders)* Add the arc $(5, 4)$ to the six-node DAG. How many topological orders are
#    left? Predict, then count with `all_topological_orders`. What happens with $(4, 1)$?
# 3. *(a new operation)* Add `sigmoid` to a copy of `Value`, with
#    $\sigma'(u) = \sigma(u)(1-\sigma(u))$ computed from the output, and extend the random
#    test to use it.
# 4. *(cost)* Time backward against forward (`lmcourse.timing.compare`) on the 20,000-step
#    chain, and on the torch network with a batch of 1 instead of 256. Does the ratio stay a
#    small constant? What dominates the time when the matrices are tiny?
# 5. *(dropout)* Implement the original, non-inverted dropout (no scaling during training,
#    multiply by $1-p$ at test time). Show that for a single linear layer followed by the
#    identity, its test-time output equals the training-time expectation, and explain why
#    this is only approximately true after a nonlinearity such as $\tanh$.
# 6. *(stability, harder)* Write `logsumexp` for `Value` lists that never overflows
#    (subtract the maximum), and check its gradient (the softmax) against PyTorch on inputs
#    around 1000, where the naive `log(sum(exp))` returns `inf`.

# %% [markdown] slideshow={"slide_type": "skip"}
# <details><summary>Worked answer to exercise 1</summary>
#
# ```python
# import math
#
# from lmcourse.autograd import Value
#
# x, y = Value(0.5), Value(-1.0)
# g = (x * y).tanh() + x
# g.backward()
# slope = 1 - math.tanh(0.5 * -1.0) ** 2        # tanh'(u) = 1 - tanh(u)^2 at u = xy
# assert math.isclose(x.grad, -1.0 * slope + 1)  # x reaches g twice: y tanh'(xy) + 1
# assert math.isclose(y.grad, 0.5 * slope)       # x tanh'(xy)
# print(f"dg/dx = {x.grad:.4f}, dg/dy = {y.grad:.4f}")
# ```
#
# By the chain rule $\partial g/\partial x = y\,(1 - \tanh^2 xy) + 1$ and
# $\partial g/\partial y = x\,(1 - \tanh^2 xy)$: the node $x$ feeds two children (the
# product and the sum), so its gradient is the sum of two paths, the `+=` of the engine.
# </details>

# %% [markdown] slideshow={"slide_type": "skip"}
# <details><summary>Worked answer to exercise 2</summary>
#
# ```python
# from itertools import permutations
#
# V = [1, 2, 3, 4, 5, 6]
# A = [(1, 3), (1, 5), (2, 4), (3, 4), (4, 6), (5, 6)]
#
#
# def count_orders(arcs):
#     """Orders of V in which every arc (i, j) has i before j (brute force: 720 orders)."""
#     return sum(all(order.index(i) < order.index(j) for i, j in arcs)
#                for order in permutations(V))
#
#
# assert count_orders(A) == 11                      # the chapter's count
# with_54 = count_orders(A + [(5, 4)])
# assert with_54 == 24 // 3                         # see below: 4! orders of 1, 2, 3, 5 / 3
# assert count_orders(A + [(4, 1)]) == 0            # 1 -> 3 -> 4 -> 1 is a cycle
# print(f"with (5, 4): {with_54} orders; with (4, 1): none")
# ```
#
# An arc can only remove orders: with $(5, 4)$ node 5 must now also come before 4, which
# leaves 8 of the 11. Node 4 now comes after 1, 2, 3 and 5, so 4 and 6 are the last two, and
# 1, 2, 3, 5 may go in any of their $4! = 24$ orders that put 1 before both 3 and 5, one in
# three: 8. The arc $(4, 1)$ closes the cycle
# $1 \to 3 \to 4 \to 1$: no order can put each of the three before the next, the graph is
# no longer a DAG, and backpropagation has no order to run in.
# </details>

# %% [markdown] slideshow={"slide_type": "skip"}
# <details><summary>Worked answer to exercise 3</summary>
#
# ```python
# import inspect
# import math
# import random
#
# import torch
#
# import lmcourse.autograd
# from lmcourse.checks.autograd import evaluate, random_case
#
# engine = {}  # a copy of the engine: every operation of the copy returns the copy's Value
# exec(inspect.getsource(lmcourse.autograd), engine)
# Value = engine["Value"]
#
#
# def sigmoid(self):
#     e = math.exp(-abs(self.data))  # never overflows: exp of a number <= 0
#     s = 1 / (1 + e) if self.data >= 0 else e / (1 + e)
#     out = Value(s, (self,), "sigmoid")
#
#     def _backward():  # sigma'(u) = sigma(u) (1 - sigma(u)), read from the output s
#         self.grad += s * (1 - s) * out.grad
#
#     out._backward = _backward
#     return out
#
#
# Value.sigmoid = sigmoid
# assert not hasattr(lmcourse.autograd.Value, "sigmoid")  # the course's engine is untouched
#
#
# def with_sigmoids(expr, rng, memo):
#     """The same expression with sigmoid wrapped around some of its nodes (shared ones once)."""
#     if id(expr) not in memo:
#         if expr[0] in ("x", "const"):
#             new = expr
#         elif expr[0] == "**":
#             new = ("**", with_sigmoids(expr[1], rng, memo), expr[2])
#         else:
#             new = (expr[0], *(with_sigmoids(e, rng, memo) for e in expr[1:]))
#         memo[id(expr)] = ("sigmoid", new) if expr[0] != "const" and rng.random() < 0.3 else new
#     return memo[id(expr)]
#
#
# rng, worst, tested = random.Random(0), 0.0, 0
# while tested < 200:
#     expr, xs = random_case(rng)
#     expr = ("sigmoid", with_sigmoids(expr, rng, {}))  # at least one sigmoid, at the top
#     ts = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in xs]
#     t_out = evaluate(expr, ts)  # torch tensors have .sigmoid() too
#     t_out.backward()
#     ref = [t_out.item()] + [0.0 if t.grad is None else t.grad.item() for t in ts]
#     if not all(math.isfinite(r) and abs(r) < 1e6 for r in ref):
#         continue  # the wrapping moved an input of exp or a power out of range: skip it
#     ins = [Value(v) for v in xs]
#     out = evaluate(expr, ins)
#     out.backward()
#     ours = [out.data] + [v.grad for v in ins]
#     worst = max(worst, *(abs(p - q) / max(1.0, abs(q)) for p, q in zip(ours, ref, strict=True)))
#     tested += 1
# assert worst < 1e-9
# far = [Value(-800.0).sigmoid(), Value(800.0).sigmoid()]  # math.exp(800) would overflow
# assert [v.data for v in far] == [0.0, 1.0]
# print(f"{tested} random expressions with sigmoid: max relative difference to torch {worst:.1e}")
# ```
#
# Executing the module's source (`inspect.getsource`) in a fresh namespace gives a second `Value`
# class whose operations all build nodes of the copy, so `sigmoid` can be added to it while the
# course's engine stays as it is (the first assert). As for `tanh`, the local derivative is read
# from the output: $\sigma'(u) = s(1-s)$ with $s$ the value stored in the forward pass, no second
# exponential. Written as $1/(1+e^{-u})$, the forward pass would overflow in `math.exp` for large
# negative $u$; $e^{-|u|}$ is never above 1, and $u = \pm 800$ give exactly 0 and 1. The random
# test wraps each node of the course's random expressions in a sigmoid with probability 0.3 (a
# shared subexpression stays one node), always adds one at the top, and compares the value and
# the three gradients with PyTorch's `sigmoid` on 200 expressions: the largest relative
# difference is at round-off (printed), against the chapter's tolerance of $10^{-9}$.
# </details>

# %% [markdown] slideshow={"slide_type": "skip"}
# <details><summary>Worked answer to exercise 4</summary>
#
# ```python
# import torch
#
# from lmcourse.autograd import Value
# from lmcourse.timing import compare
#
#
# def chain():
#     y = x
#     for _ in range(20_000):
#         y = y * 1.0001
#     return y
#
#
# x = Value(1.0)
# out = chain()
# times = {"Value, the 20,000-step chain": (compare(chain, out.backward, repeats=3), None)}
# g = torch.Generator().manual_seed(0)
# for batch, width in ((256, 512), (1, 512), (1, 8)):
#     X = torch.randn(batch, width, generator=g, requires_grad=True)
#     W1 = torch.randn(width, 2 * width, generator=g, requires_grad=True)
#     W2 = torch.randn(2 * width, 10, generator=g, requires_grad=True)
#
#     def forward(X=X, W1=W1, W2=W2):
#         return (torch.tanh(X @ W1) @ W2).square().mean()
#
#     loss = forward()
#     flops = 2 * batch * (width * 2 * width + 2 * width * 10)  # the two matrix products
#     times[f"torch, batch {batch}, {width} x {2 * width}"] = compare(
#         forward, lambda loss=loss: loss.backward(retain_graph=True), repeats=15, warmup=3), flops
# for name, ((fwd, bwd), flops) in times.items():
#     rate = "" if flops is None else f", {flops:>11,} FLOP: {flops / fwd / 1e9:6.2f} GFLOP/s"
#     print(f"{name:<30} backward / forward = {bwd / fwd:4.2f}{rate}")
#     assert 1 / 30 < bwd / fwd < 30  # a small constant, whatever the size
# (big, big_flops), (_, _), (tiny, tiny_flops) = list(times.values())[1:]
# assert tiny[0] / big[0] > 100 * tiny_flops / big_flops  # tiny: the time is not the arithmetic
# ```
#
# The ratio stays a small constant in all four cases (the printed ratios; the assert allows 1/30
# to 30, and the timings move a little from run to run). For the scalar chain the backward pass
# is even cheaper than the forward one: the forward pass creates two `Value` objects and a
# closure per multiplication (the constant 1.0001 is wrapped too), the backward pass only sorts
# the nodes and calls each closure once. For the torch network it stays of the order of the
# textbook's 2-3 at every size.
#
# When the matrices are tiny, the time is not the arithmetic. The 8 × 16 network at batch 1 does
# 576 floating-point operations against 273,678,336 at batch 256, yet the printed rates show its
# forward pass only about a hundred times faster, not half a million times (asserted: its time
# is more than 100 times what the operation count predicts). What is left is the fixed cost of
# each operation (the Python call, PyTorch's dispatcher, allocating the output, and in the
# backward pass recording and walking the autograd graph), the same for a 1 × 8 operand as for
# a 256 × 512 one. At batch 1 with the 512 × 1024 weights the products are matrix-vector
# products, limited by reading every weight once rather than by arithmetic (the middle line's
# rate). This is why training uses minibatches: the fixed costs are paid once per batch.
# </details>

# %% [markdown] slideshow={"slide_type": "skip"}
# <details><summary>Worked answer to exercise 5</summary>
#
# ```python
# import itertools
#
# import torch
#
# from lmcourse.dropout import dropout, dropout_mask
#
#
# def original_dropout(x, p, training=True, generator=None):
#     """Srivastava et al.'s form: keep with probability 1 - p, no scaling; at test, x (1 - p)."""
#     if not training:
#         return x * (1 - p)
#     return x * dropout_mask(x.shape, p, dtype=x.dtype, generator=generator)
#
#
# torch.manual_seed(0)
# p, n = 0.5, 10
# x = torch.randn(n, dtype=torch.float64)
# W, b = torch.randn(3, n, dtype=torch.float64), torch.randn(3, dtype=torch.float64)
# g1, g2 = torch.Generator().manual_seed(1), torch.Generator().manual_seed(1)
# assert torch.allclose(original_dropout(x, p, generator=g1) / (1 - p),
#                       dropout(x, p, generator=g2))  # same mask; the two forms differ by 1 - p
#
#
# def expected(f, x):
#     """The exact mean of f(m * x) over all 2^n masks m, each weighted by its probability."""
#     total = 0.0
#     for bits in itertools.product((0.0, 1.0), repeat=n):
#         m = torch.tensor(bits, dtype=torch.float64)
#         total = total + (1 - p) ** m.sum() * p ** (n - m.sum()) * f(m * x)
#     return total
#
#
# test = W @ original_dropout(x, p, training=False) + b
# gap_linear = (expected(lambda d: W @ d + b, x) - test).abs().max().item()
# assert gap_linear < 1e-12  # E[W (m * x) + b] = W (1 - p) x + b, exactly
# gaps = {}
# for scale in (1.0, 0.1):
#     z_test = W @ original_dropout(scale * x, p, training=False) + b
#     gaps[scale] = expected(lambda d: torch.tanh(W @ d + b), scale * x) - torch.tanh(z_test)
#     var_z = (W**2) @ (scale * x) ** 2 * p * (1 - p)  # Var of z = W (m * x) + b over masks
#     t = torch.tanh(z_test)
#     second_order = 0.5 * (-2 * t * (1 - t**2)) * var_z  # (1/2) tanh''(E z) Var z
# print(f"max |E_train - test|: linear {gap_linear:.1e}; tanh {gaps[1.0].abs().max():.3f}, "
#       f"with inputs scaled by 0.1 {gaps[0.1].abs().max():.4f} "
#       f"(second-order estimate {second_order.abs().max():.4f})")
# assert gaps[1.0].abs().max() > 0.01
# assert (gaps[0.1] - second_order).abs().max() < 0.1 * gaps[0.1].abs().max()
# ```
#
# With the original form a unit is kept, unscaled, with probability $1-p$, so after one linear
# layer the expectation over masks is $\mathbb{E}[W(m\odot x) + b] = W\big((1-p)x\big) + b$:
# exactly the test-time output, whatever $W$, $b$ and $x$. The code does not sample masks: it
# averages over all $2^{10}$ of them with their probabilities, so the linear case agrees to
# round-off (8.9e-16); with the same random numbers the two forms draw the same mask and differ
# only by the factor $1-p$ (the first assert). After a nonlinearity, test time computes
# $f(\mathbb{E}z)$ while training averages $\mathbb{E}f(z)$, and the two differ unless $f$ is
# linear: by Taylor, $\mathbb{E}f(z) \approx f(\mathbb{E}z) + \tfrac12 f''(\mathbb{E}z)\,
# \mathrm{Var}(z)$. For $\tanh$ with these weights the gap reaches 0.221; with inputs ten times
# smaller the dropout variance is a hundred times smaller and the gap 0.0054, where the
# second-order term predicts 0.0055. So weight scaling is exact into a linear layer and a good
# approximation where the dropout noise in the pre-activations is small; inverted dropout has
# the same property, it only moves the factor $1-p$ to training time.
# </details>

# %% [markdown] slideshow={"slide_type": "skip"}
# <details><summary>Worked answer to exercise 6</summary>
#
# ```python
# import torch
#
# from lmcourse.autograd import Value
#
#
# def logsumexp(values):
#     """log sum_i exp(v_i) = m + log sum_i exp(v_i - m), m = max_i v_i: every exp is <= 1."""
#     m = max(v.data for v in values)  # a plain number: the result does not depend on it
#     return m + sum((v - m).exp() for v in values).log()
#
#
# xs = [1000.0, 1001.5, 999.0, 1000.25]
# vs = [Value(x) for x in xs]
# out = logsumexp(vs)
# out.backward()
# t = torch.tensor(xs, dtype=torch.float64, requires_grad=True)
# t_out = torch.logsumexp(t, dim=0)
# t_out.backward()
# assert abs(out.data - t_out.item()) < 1e-12
# assert max(abs(v.grad - g) for v, g in zip(vs, t.grad.tolist(), strict=True)) < 1e-12
# assert torch.allclose(t.grad, torch.softmax(t.detach(), dim=0), atol=1e-15)  # the gradient
# naive = torch.tensor(xs, dtype=torch.float64).exp().sum().log()
# assert naive.item() == float("inf")
# try:
#     sum(Value(x).exp() for x in xs)
#     raise AssertionError("expected an overflow")
# except OverflowError:
#     pass  # math.exp(1000) is beyond float64, about 1.8e308
# print(f"logsumexp = {out.data:.6f} (torch {t_out.item():.6f}); naive torch: {naive.item()}")
# print("gradient (softmax):", [round(v.grad, 6) for v in vs])
# ```
#
# $\log\sum_i e^{v_i} = m + \log\sum_i e^{v_i - m}$ for any constant $m$; with $m = \max_i v_i$
# every exponent is at most 0 and the largest term is exactly 1, so the sum lies between 1 and
# $n$: nothing overflows, and the logarithm never sees 0. $m$ can stay a plain number rather
# than a node, because the result does not depend on it, so no gradient has to flow through it
# (and `max` has no derivative at ties). The engine then finds
# $\partial/\partial v_i = e^{v_i - m}/\sum_j e^{v_j - m} = \mathrm{softmax}(v)_i$ through `exp`,
# the sum and `log`; at inputs around 1000 value and gradient match `torch.logsumexp` and
# `torch.softmax` to $10^{-12}$, while the naive `log(sum(exp))` gives `inf` in PyTorch and an
# `OverflowError` in our engine.
# </details>

# %% [markdown] slideshow={"slide_type": "slide"}
# ## References
#
# - D. E. Rumelhart, G. E. Hinton, R. J. Williams. *Learning representations by
#   back-propagating errors.* Nature 323, 1986.
# - P. J. Werbos. *Backpropagation through time: what it does and how to do it.*
#   Proceedings of the IEEE 78(10), 1990.
# - N. Srivastava, G. Hinton, A. Krizhevsky, I. Sutskever, R. Salakhutdinov. *Dropout: a
#   simple way to prevent neural networks from overfitting.* JMLR 15, 2014.
# - A. G. Baydin, B. A. Pearlmutter, A. A. Radul, J. M. Siskind. *Automatic differentiation
#   in machine learning: a survey.* JMLR 18, 2018.
# - A. Griewank, A. Walther. *Evaluating derivatives: principles and techniques of
#   algorithmic differentiation*, 2nd ed. SIAM, 2008.
# - A. Karpathy. *micrograd* (software), 2020: the engine design `lmcourse.autograd`
#   follows.

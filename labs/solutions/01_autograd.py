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
# # Lab 01 · Build a scalar autograd engine
#
# In chapter 01 you read `lmcourse.autograd.Value`. Here you write its heart yourself:
#
# 1. the **local derivatives** of `+`, `*`, `**`, `tanh` and `exp` (each operation's
#    `_backward` closure);
# 2. a **topological order** of the computation graph;
# 3. **backward**, the backpropagation loop;
# 4. a **training loop**: gradient descent on a tiny model, with your engine only.
#
# **What to expect.** The final check runs your engine on 200 random expressions against
# `torch.autograd`: every value and every gradient must agree to $10^{-9}$ (relative); a
# correct engine differs by round-off only, about $10^{-15}$. The last check then runs your
# training loop and asks for the parameters of gradient descent to $10^{-9}$ (the loss of
# its neuron falls from about 0.25 to about 0.002). The whole lab runs in seconds; its run
# card (the folded line below) gives the time it measured.
#
# After each exercise, run the check cell below it. A check recomputes the right answer
# itself (with PyTorch or the chain rule) and, if yours differs, tells you what is wrong,
# often naming the exact mistake (`=` where `+=` belongs, a forgotten `out.grad`, a
# backward pass in forward order, ...). Each exercise has two hints, folded: open the
# first when you are stuck, the second if you still are.
#
# Fill in the places that say `raise NotImplementedError`, run the cell, run its check.

# %% [markdown] slideshow={"slide_type": "skip"} tags=["run-card"]
# <details><summary>Run card: 3.6 s on a CPU, 318.4 MB of memory; GPU: not measured yet</summary>
#
# - **Time on a CPU:** 3.6 s normalised to the reference machine: 5.2 s wall on Intel(R) Xeon(R)
#   Processor, one torch thread, calibration 0.691 s against 0.482 s.
# - **Time on a GPU:** not measured yet.
# - **Peak memory:** 318.4 MB (the kernel's resident set).
# - **Last passed:** 2026-11-29, commit `8de5aec-dirty` (nbval, as `make test` runs it).
# - **Files read (0):** none.
#
# Measured by the test run (`python -m tools.runcards`), not typed.
# </details>

# %% [markdown] slideshow={"slide_type": "skip"} tags=["grading"]
# ### How this lab is graded
#
# Each check cell below is a question of the autograder (8 points in all), and ends with its
# name and points (`# q01: 1 point`).
#
# | question | your code it grades | also needs exercise | points |
# |---|---|---|---|
# | q01 · exercise 1 | `Value` | – | 2 |
# | q02 · exercise 2 | `topological_order`, `Value` | – | 1 |
# | q03 · exercise 3 | `Value` | 2 | 2 |
# | q04 · exercise 3 | `Value` | 1, 2 | 1 |
# | q05 · exercise 3 | `Value` | 1, 2 | 1 |
# | q06 · exercise 4 | `train`, `Value` | – | 1 |
#
# - **A failed exercise costs the checks that need it.** When your code calls a function from
#   an earlier exercise, that exercise's check runs first; if it fails, this check fails too,
#   saying "pass exercise N first", and passes again once the earlier exercise does. The third
#   column lists those exercises for code that calls the earlier functions as the exercises
#   suggest. If your code does not call an earlier function, a mistake there does not cost
#   this check. An unfinished exercise fails its own check (and those that need it); the
#   others still count.
# - **Your own work.** Each graded function or class must be written in this notebook. One
#   taken from the course's package `lmcourse` (its own function or class, a subclass of one,
#   or code that hands its work to one by a call, an import, a default argument or a class
#   attribute) gets no points for the checks that grade it. The exceptions: what the lab's own
#   cells import, and the package's top-level helpers such as `lmcourse.device()`. Your
#   notebook's checks do not test this rule, only the grader does: a check that passes at home
#   can still score 0 if the code is not yours.
# - **Names.** The grader uses your functions, your classes and the lab's data as they stand
#   after the whole notebook has run, so do not reuse their names for scratch work. Other
#   scratch names, even `check`, are fine: the grader brings its own copy of the checks.

# %% slideshow={"slide_type": "-"}
import math

import matplotlib.pyplot as plt
import torch

from lmcourse import add_to_class, seed_everything
from lmcourse.checks import autograd as check
from lmcourse.viz import draw_graph

_ = seed_everything(0)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The engine's contract
#
# A `Value` is a node of the computation graph. It holds
#
# - `data`: the number computed in the forward pass, $x^i$;
# - `grad`: the derivative of the final output with respect to this node,
#   $z^i = \partial x^\omega / \partial x^i$, filled in by the backward pass;
# - `_parents`: the nodes it was computed from, and `_op`, the name of the operation;
# - `_backward`: a function (a closure) that, when called, **adds** this node's
#   contribution to each parent's `grad`.
#
# Backpropagation computes, in reverse topological order,
#
# $$
# z^i = \sum_{j \in \mathrm{ch}(i)} z^j \, \frac{\partial f^j}{\partial x^i}.
# $$
#
# Each operation `out = f(self, other)` handles one term of these sums for each of its
# parents: it adds to that parent's `grad` the product of `out.grad` ($z^{\text{out}}$) and
# the local derivative of $f$ with respect to that parent. Two things to keep in mind:
#
# - **`+=`, not `=`**: a parent may feed several children (think `x * x` or `x + x`), and
#   the sum over children is built one child at a time.
# - **multiply by `out.grad`**: the local derivative alone is only right when `out` is the
#   final output.
#
# `relu` and `log` below are complete: use them as worked examples.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 1: local derivatives
#
# Complete the `_backward` closures of `__add__`, `__mul__`, `__pow__`, `tanh` and `exp`.
# The forward computations are given. The derivatives you need:
#
# | operation | local derivatives |
# |---|---|
# | $o = a + b$ | $\partial o/\partial a = 1$, $\partial o/\partial b = 1$ |
# | $o = a \cdot b$ | $\partial o/\partial a = b$, $\partial o/\partial b = a$ |
# | $o = a^k$ ($k$ a number) | $\partial o/\partial a = k\,a^{k-1}$ |
# | $o = \tanh a$ | $\partial o/\partial a = 1 - \tanh^2 a = 1 - o^2$ |
# | $o = e^a$ | $\partial o/\partial a = e^a = o$ |
#
# Inside a closure, `self` and `other` are the parents and `out` the node being
# differentiated; `out.data` is available (the forward pass already ran). Subtraction,
# negation and division need no code of their own: they are built from `+`, `*` and `**`.
#
# <details><summary>Hint 1</summary>
#
# Each closure is one term of chapter 01's backpropagation sum,
# $z^i = \sum_{j} z^j\, \partial f^j/\partial x^i$: the child's gradient times the local
# derivative, **added** to what the parent already holds (other children add theirs).
# Chapter 01's section "Several paths: add them up" says why it must be a sum; the worked
# examples `relu` and `log` above have exactly the shape you need.
#
# </details>
#
# <details><summary>Hint 2</summary>
#
# One line per parent that receives a gradient: two for `+` and `*` (`self` and `other`),
# one for `**`, `tanh` and `exp` (only `self`; the exponent $k$ is a plain number, not a
# node). Each line increases the parent's `grad` by (the local derivative from the table,
# evaluated at the numbers of the forward pass) times `out.grad`. For `*` each factor's
# derivative is the *other* factor's `data`; for `tanh` and `exp` the local derivative is
# cheapest written with the output's value, which the closure can read from `out`.
#
# </details>

# %% slideshow={"slide_type": "-"}
class Value:
    """A scalar node of a computation graph (the lab's version of lmcourse.autograd.Value)."""

    def __init__(self, data, _parents=(), _op="", label=""):
        self.data = float(data)
        self.grad = 0.0
        self._parents = _parents
        self._op = _op
        self.label = label
        self._backward = lambda: None

    def __repr__(self):
        return f"Value(data={self.data:.6g}, grad={self.grad:.6g})"


# %% [markdown] slideshow={"slide_type": "-"}
# The class starts with its data; each operation is added in a cell of its own with
# `@add_to_class(Value)`, which attaches the function below it to the class as a method
# (`Value.relu`, `Value.__add__`, ...). Two worked examples, complete:

# %% slideshow={"slide_type": "-"}
@add_to_class(Value)
def relu(self):
    out = Value(max(0.0, self.data), (self,), "relu")

    def _backward():  # d relu(a)/da = 1 if a > 0 else 0
        self.grad += (1.0 if self.data > 0 else 0.0) * out.grad

    out._backward = _backward
    return out


@add_to_class(Value)
def log(self):
    out = Value(math.log(self.data), (self,), "log")

    def _backward():  # d log(a)/da = 1/a
        self.grad += (1.0 / self.data) * out.grad

    out._backward = _backward
    return out


# %% [markdown] slideshow={"slide_type": "-"}
# Your turn: complete each `_backward` below, one operation per cell.

# %% slideshow={"slide_type": "-"}
@add_to_class(Value)
def __add__(self, other):
    other = other if isinstance(other, Value) else Value(other)
    out = Value(self.data + other.data, (self, other), "+")

    def _backward():
        # BEGIN SOLUTION
        self.grad += out.grad
        other.grad += out.grad
        # END SOLUTION

    out._backward = _backward
    return out


# %% slideshow={"slide_type": "-"}
@add_to_class(Value)
def __mul__(self, other):
    other = other if isinstance(other, Value) else Value(other)
    out = Value(self.data * other.data, (self, other), "*")

    def _backward():
        # BEGIN SOLUTION
        self.grad += other.data * out.grad
        other.grad += self.data * out.grad
        # END SOLUTION

    out._backward = _backward
    return out


# %% slideshow={"slide_type": "-"}
@add_to_class(Value)
def __pow__(self, k):
    assert isinstance(k, (int, float)), "only a plain number as exponent"
    out = Value(self.data**k, (self,), f"**{k}")

    def _backward():
        # BEGIN SOLUTION
        self.grad += k * self.data ** (k - 1) * out.grad
        # END SOLUTION

    out._backward = _backward
    return out


# %% slideshow={"slide_type": "-"}
@add_to_class(Value)
def tanh(self):
    out = Value(math.tanh(self.data), (self,), "tanh")

    def _backward():
        # BEGIN SOLUTION
        self.grad += (1.0 - out.data**2) * out.grad
        # END SOLUTION

    out._backward = _backward
    return out


# %% slideshow={"slide_type": "-"}
@add_to_class(Value)
def exp(self):
    out = Value(math.exp(self.data), (self,), "exp")

    def _backward():
        # BEGIN SOLUTION
        self.grad += out.data * out.grad
        # END SOLUTION

    out._backward = _backward
    return out


# %% [markdown] slideshow={"slide_type": "-"}
# Given: everything else is built from the operations above.

# %% slideshow={"slide_type": "-"}
Value.__neg__ = lambda self: self * -1
Value.__sub__ = lambda self, other: self + (-other)
Value.__truediv__ = lambda self, other: self * other**-1
Value.__radd__ = lambda self, other: self + other
Value.__rmul__ = lambda self, other: self * other
Value.__rsub__ = lambda self, other: Value(other) - self
Value.__rtruediv__ = lambda self, other: Value(other) / self

# %% [markdown] slideshow={"slide_type": "-"}
# The check builds one node per operation, pretends the output's gradient is 0.7 and that
# each parent already holds 0.25 (from another child), calls the node's `_backward` once and
# compares the parents' new grads with the chain rule.

# %% slideshow={"slide_type": "-"} tags=["check"]
check.autograd_ops(Value)
# q01: 2 points

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 2: a topological order
#
# Write `topological_order(root)`: a list of every node `root` depends on (including `root`
# and the inputs), each node appearing **once** and **after all of its parents**.
#
# A recursive solution is the simplest to write. Python allows about 1,000 nested calls, so
# it fails on graphs deeper than that; the optional exercise at the end removes the limit.
#
# <details><summary>Hint 1</summary>
#
# This is a topological ordering of a DAG (chapter 01, "Computation graphs are DAGs"), and
# depth-first search in **post-order** gives one: a node goes into the list only once all
# of its parents are in it. Chapter 01's "A scalar autograd engine" section describes the
# same search. A node shared by two children (here `c` feeds both `d` and `g`) must still
# be listed once, so remember which nodes you have already seen.
#
# </details>
#
# <details><summary>Hint 2</summary>
#
# An empty list and an empty `set` of visited nodes (a `Value` can be put in a set; it is
# compared by identity), then an inner function that *visits* a node: if the node was
# visited before it returns at once; otherwise it marks the node, visits each of
# `node._parents`, and only then appends the node. Visit `root` once and return the list.
#
# </details>

# %% slideshow={"slide_type": "-"}
def topological_order(root):
    """All nodes `root` depends on, each listed once and after all of its parents."""
    # BEGIN SOLUTION
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
    # END SOLUTION


# %% slideshow={"slide_type": "-"} tags=["check"]
check.autograd_topological_order(topological_order, Value)
# q02: 1 point

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 3: backward
#
# Now the algorithm itself. `backward(self)` must
#
# 1. get a topological order of the graph that ends at `self`;
# 2. **reset** every node's `grad` to 0 (so that calling `backward` twice gives the same
#    result: the closures accumulate with `+=`);
# 3. set the base case $z^\omega = 1$ on the output, `self`;
# 4. call `_backward()` of every node in **reverse** topological order, so that a node's
#    grad is complete before it is passed on to its parents.
#
# <details><summary>Hint 1</summary>
#
# This is the **Backpropagation** algorithm of chapter 01's section "Backward pass:
# backpropagation": $z^\omega \leftarrow 1$, then $z^i$ for $i$ in reverse topological
# order. Reverse order matters because $z^i$ sums terms from all of $i$'s children, so
# every child must have finished before $i$ passes its own gradient on. Your closures do
# the summing; `backward` only decides the order.
#
# </details>
#
# <details><summary>Hint 2</summary>
#
# Three short steps, in this order: one call to your `topological_order`; a loop that sets
# every node's `grad` to 0.0; the output's `grad` set to 1.0 (after the reset, or the reset
# wipes it); then a loop over the same list read backwards (Python's `reversed`) that
# calls each node's `_backward`. It returns nothing: the result is in the `grad` fields.
#
# </details>

# %% slideshow={"slide_type": "-"}
def backward(self):
    """Fill .grad of every node `self` depends on with d(self)/d(node)."""
    # BEGIN SOLUTION
    order = topological_order(self)
    for node in order:
        node.grad = 0.0
    self.grad = 1.0
    for node in reversed(order):
        node._backward()
    # END SOLUTION


Value.backward = backward

# %% slideshow={"slide_type": "-"} tags=["check"]
check.autograd_backward(Value)
# q03: 2 points

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Final check: random expressions against PyTorch
#
# The check below draws 200 random expressions over three inputs, mixing every operation
# of your class (including `-`, `/`, `relu` and `log`, which are built on your code), with
# plain numbers on both sides of operators and shared subexpressions. Each is evaluated
# with your `Value` and with float64 `torch` tensors; the value and every gradient must agree
# to $10^{-9}$ (relative).

# %% slideshow={"slide_type": "-"} tags=["check"]
check.autograd_against_torch(Value)
# q04: 1 point

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Sanity check: the worked example
#
# $f(x, y) = (x + y)\,x\,y^2$ at $(1, 2)$. By hand: $f = 12$,
# $\partial f/\partial x = y^2(2x + y)$ and $\partial f/\partial y = 2x^2y + 3xy^2$. The check
# evaluates those formulas, asks PyTorch, and compares with your engine.

# %% slideshow={"slide_type": "-"} tags=["check"]
check.autograd_worked_example(Value)
# q05: 1 point

# %% [markdown] slideshow={"slide_type": "-"}
# And here is your engine's graph of $f$, with the values of the forward pass and the
# gradients of your backward pass:

# %% slideshow={"slide_type": "-"}
x, y = Value(1.0, label="x"), Value(2.0, label="y")
f = (x + y) * x * y**2
f.backward()
print(f"f = {f.data:g}, df/dx = {x.grad:g}, df/dy = {y.grad:g}")
t = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
((t[0] + t[1]) * t[0] * t[1] ** 2).backward()
print(f"torch: df/dx = {t.grad[0].item():g}, df/dy = {t.grad[1].item():g}")
ax = draw_graph(f)
ax.set_title("your engine on f(x, y) = (x + y) · x · y²")
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 4: a training loop
#
# An engine that computes gradients is only half of training. **Gradient descent** moves
# every parameter a small step against its gradient, $\theta \leftarrow \theta - \eta\,
# \partial J/\partial\theta$, and repeats. Write `train(params, loss_fn, lr, steps)`:
# `steps` times,
#
# 1. call `loss_fn()`: a **new forward pass**, which builds the graph of the loss $J$ from
#    the parameters' current values;
# 2. call `backward()` on it, which fills every parameter's `grad`;
# 3. move **every** parameter a step of size `lr` times its gradient, downhill, changing
#    its `data` in place;
#
# and return the list of the losses (`loss.data` of each step, before its update).
#
# Below, it fits one tanh neuron $\hat y = \tanh(wx + b)$ to five points by the mean
# squared error. The check runs your loop on a problem of its own and compares the
# parameters with gradient descent to $10^{-9}$.
#
# <details><summary>Hint 1</summary>
#
# Chapter 01's section "A gradient step: training with Value" is this loop: a forward pass
# that builds the graph from the **current** parameters, a backward pass, an update
# $\theta \leftarrow \theta - \eta\, \partial J/\partial\theta$. The graph must be rebuilt at
# every step, because its forward values change with the parameters. The update changes
# the number a parameter holds; the parameter object itself stays the same, since
# `loss_fn` builds the next graph from it.
#
# </details>
#
# <details><summary>Hint 2</summary>
#
# An empty list of losses, then `steps` times: a fresh loss from `loss_fn`, `backward` on
# it, a loop over `params` that decreases each one's `data` (an augmented assignment on the
# attribute: assigning a new `Value` to the loop variable changes nothing), and the float
# `loss.data` appended. Return the list: `steps` numbers.
#
# </details>

# %% slideshow={"slide_type": "-"}
def train(params, loss_fn, lr, steps):
    """Gradient descent: returns the loss of each of the `steps` steps."""
    # BEGIN SOLUTION
    losses = []
    for _ in range(steps):
        loss = loss_fn()
        loss.backward()
        for p in params:
            p.data -= lr * p.grad
        losses.append(loss.data)
    return losses
    # END SOLUTION


# %% slideshow={"slide_type": "-"} tags=["check"]
check.autograd_training(train, Value)
# q06: 1 point

# %% [markdown] slideshow={"slide_type": "-"}
# Your loop and your engine on a neuron of your own: the loss should fall steadily.

# %% slideshow={"slide_type": "-"}
points = [(-1.5, -0.9), (-0.5, -0.3), (0.0, 0.05), (0.7, 0.6), (1.5, 0.85)]
w, b = Value(-0.5), Value(0.3)


def mse():
    return sum((((w * x + b).tanh() - y) ** 2 for x, y in points), Value(0.0)) * (1 / len(points))


losses = train([w, b], mse, lr=0.5, steps=60)
print(f"loss {losses[0]:.4f} -> {losses[-1]:.4f}; w = {w.data:.3f}, b = {b.data:.3f}")
fig, ax = plt.subplots(figsize=(5, 3))
ax.semilogy(losses)
ax.set(xlabel="step", ylabel="mean squared error", title="Training a neuron with your engine")
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Going further (optional, not checked)
#
# 1. Make `topological_order` iterative (an explicit stack of `(node, parents_done)` pairs)
#    and differentiate a chain of 10,000 `tanh`s without hitting the recursion limit.
# 2. Add `sigmoid` with $\sigma'(a) = \sigma(a)\,(1 - \sigma(a))$, computed from `out.data`.
# 3. Give `train` momentum: keep a velocity per parameter, $v \leftarrow \beta v + g$,
#    $\theta \leftarrow \theta - \eta v$, and compare the loss curves for $\beta = 0$ and
#    $\beta = 0.9$ on the neuron above.

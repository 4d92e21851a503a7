"""Auto-checks for training with the autograd engine: gradient descent written with ``Value``.

The check trains a tanh neuron with the student's loop and with a reference loop and,
when they differ, replays the typical mistakes (stepping up the gradient, a loss graph
built once outside the loop, rebinding a parameter instead of updating ``.data``, an
ignored learning rate) to name the one made. The lab calls it as
``lmcourse.checks.autograd.autograd_training``, which runs the loop on the course's own
engine, so that the loop is graded apart from exercises 1 to 3.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lmcourse.checks import attempt, close, expect, fail, passed
from lmcourse.checks.compare import which_differ


def _neuron_problem(Value: Any) -> tuple[list[Any], Callable[[], Any]]:
    """A tanh neuron ``y = tanh(w x + b)`` and its mean squared error on five points."""
    points = [(-1.0, -0.6), (-0.5, -0.4), (0.0, 0.1), (0.5, 0.5), (1.0, 0.7)]
    w, b = Value(0.1), Value(-0.2)

    def loss_fn() -> Any:
        total = Value(0.0)
        for x, y in points:
            total = total + ((w * x + b).tanh() - y) ** 2
        return total * (1.0 / len(points))

    return [w, b], loss_fn


def _descend(Value: Any, lr: float, steps: int, *, stale: bool = False
             ) -> tuple[list[float], list[float]]:
    """Our own gradient descent on :func:`_neuron_problem`: (losses, final parameters).

    ``stale`` reproduces the mistake of building the loss graph once, before the loop.
    """
    params, loss_fn = _neuron_problem(Value)
    losses, loss = [], loss_fn()
    for _ in range(steps):
        loss = loss if stale else loss_fn()
        loss.backward()
        for p in params:
            p.data -= lr * p.grad
        losses.append(loss.data)
    return losses, [p.data for p in params]


def autograd_training(train: Callable[..., Any], Value: Any, lr: float = 0.5,
                      steps: int = 40) -> None:
    """``train(params, loss_fn, lr, steps)`` is gradient descent.

    Each step builds a fresh graph with ``loss_fn``, calls ``backward`` and moves every
    parameter's ``data``, in place, ``lr`` times its gradient downhill; it returns the loss
    of each step (measured before that step's update). Typical mistakes get their own hint.
    """
    name = "training loop"
    params, loss_fn = _neuron_problem(Value)
    losses = attempt(name, train, params, loss_fn, lr, steps)
    size = f" of length {len(losses)}" if isinstance(losses, (list, tuple)) else ""
    expect(isinstance(losses, (list, tuple)) and len(losses) == steps
           and all(isinstance(getattr(v, "data", v), (int, float)) for v in losses), name,
           f"return the list of the {steps} losses, one number `loss.data` per step; got "
           f"{type(losses).__name__}{size}")
    losses = [float(getattr(v, "data", v)) for v in losses]
    got = [p.data for p in params]
    ref_losses, ref = attempt(name, _descend, Value, lr, steps)

    def near(a: list[float], b: list[float]) -> bool:
        return all(close(x, y, 1e-9) for x, y in zip(a, b, strict=True))

    if not near(got, ref):
        start = [p.data for p in _neuron_problem(Value)[0]]
        if near(got, start):
            fail(name, "the parameters did not move. Change each parameter's `data` in "
                       "place; assigning a new node to the loop variable only rebinds that "
                       "name and leaves the parameter as it was.")
        if near(got, _descend(Value, -lr, steps)[1]):
            fail(name, "the loss went up: you stepped *up* the gradient. The gradient points "
                       "uphill, so gradient descent subtracts it (θ ← θ - η ∂J/∂θ).")
        if near(got, _descend(Value, lr, steps, stale=True)[1]):
            fail(name, "the gradient never changed: the loss graph was built once, before "
                       "the loop, so every backward saw the starting parameters. Call "
                       "`loss_fn()` inside the loop, at every step (a new forward pass).")
        if near(got, _descend(Value, 1.0, steps)[1]):
            fail(name, "the step ignored the learning rate: each parameter moves by lr "
                       "times its gradient, not by the gradient itself.")
        fail(name, f"after {steps} steps the parameters are {[round(g, 6) for g in got]}; "
                   "against gradient descent, "
                   f"{which_differ(['w', 'b'], got, ref)}. Each step: a "
                   "fresh forward pass with loss_fn, backward on that loss, then every "
                   "parameter's data moved lr times its gradient, downhill.")
    if not near(losses, ref_losses):
        fail(name, "the parameters are right but the losses are not: append `loss.data` of "
                   "each step's forward pass (before the update), one per step.")
    passed(name, f"the parameters match gradient descent to 1e-9; the loss fell from "
                 f"{losses[0]:.4f} to {losses[-1]:.4f} in {steps} steps")

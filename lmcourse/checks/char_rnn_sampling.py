"""Auto-check for exercise 3 of the character-RNN lab: sampling the next character at a
temperature, ``softmax(z / T)``. The sampler is called many times on fixed logits and its
frequencies compared with the right distribution; a typical mistake (T ignored, the logits
multiplied by T, always the argmax, a uniform draw) is named. ``lmcourse.checks.char_rnn``
re-exports :func:`sample_token`, so the lab calls it as ``check.sample_token``."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from lmcourse.checks import attempt, expect, fail, passed

__all__ = ["sample_token"]


def _frequencies(student: Callable, logits: torch.Tensor, temperature: float, n: int,
                 g: torch.Generator, name: str) -> torch.Tensor:
    counts = torch.zeros(len(logits), dtype=torch.float64)
    for _ in range(n):
        token = attempt(name, student, logits.clone(), temperature, g)
        if isinstance(token, torch.Tensor):
            expect(token.numel() == 1, name,
                   f"return one token id (an int), got a tensor of shape {tuple(token.shape)}")
        token = int(token)
        expect(0 <= token < len(logits), name,
               f"returned token {token}, outside 0..{len(logits) - 1}")
        counts[token] += 1
    return counts / n


def _expect_argmax(student: Callable, logits: torch.Tensor, temperature: float,
                   g: torch.Generator, name: str) -> None:
    """At (almost) zero temperature every draw must be the most likely token."""
    picks = set()
    for _ in range(20):
        try:
            picks.add(int(student(logits.clone(), temperature, g)))
        except NotImplementedError:
            attempt(name, student, logits.clone(), temperature, g)  # the usual reminder
        except Exception as err:  # noqa: BLE001
            fail(name, f"with T = {temperature:g} your code raised {type(err).__name__}: "
                       f"{err}. T = 0 means greedy decoding: return the argmax of the "
                       "logits without dividing by T.")
    expect(picks == {int(logits.argmax())}, name,
           f"with T = {temperature:g} every draw should be the most likely token, the argmax "
           f"of the logits; yours drew {sorted(picks)}: as T -> 0, softmax(logits / T) "
           "becomes one-hot.")


def sample_token(student: Callable[..., Any], n: int = 6000) -> None:
    """Exercise 3: ``sample_token(logits, temperature, generator)`` draws from
    ``softmax(logits / T)``; ``T = 0`` means the argmax."""
    name = "sample_token"
    logits = torch.tensor([2.0, 1.0, 0.5, -1.0, 0.0])
    g = torch.Generator().manual_seed(0)
    _expect_argmax(student, logits, 0.0, g, name)
    tol = 4.5 * math.sqrt(0.25 / n)  # 4.5 standard deviations of a frequency, at worst
    for temperature in (1.0, 0.5, 2.0):
        freq = _frequencies(student, logits, temperature, n, g, name)
        want = torch.softmax(logits.double() / temperature, dim=0)
        err = float((freq - want).abs().max())
        if err <= tol:
            continue

        def near(p: torch.Tensor, freq: torch.Tensor = freq) -> bool:
            return float((freq - p).abs().max()) <= tol

        if float(freq.max()) == 1.0 and int(freq.argmax()) == 0:
            fail(name, f"at T = {temperature:g} every draw was the argmax: for T > 0 draw "
                       "from the distribution softmax(logits / T) (torch.multinomial draws "
                       "from given probabilities).")
        if near(torch.softmax(logits.double(), dim=0)):
            fail(name, f"at T = {temperature:g} the draws follow softmax(logits), as if T "
                       "were 1: divide the LOGITS by T before the softmax. Dividing the "
                       "probabilities by T changes nothing once they are renormalised.")
        if near(torch.softmax(logits.double() * temperature, dim=0)):
            fail(name, f"at T = {temperature:g} the draws follow softmax(logits * T): "
                       "divide by the temperature, don't multiply.")
        if near(torch.full_like(want, 1 / len(want))):
            fail(name, f"at T = {temperature:g} every token is equally likely: sample from "
                       "softmax(logits / T), not uniformly.")
        worst = int((freq - want).abs().argmax())
        fail(name, f"at T = {temperature:g} your frequencies are "
                   f"{[round(v, 3) for v in freq.tolist()]}: token {worst} is drawn "
                   f"{'too often' if freq[worst] > want[worst] else 'too rarely'} for "
                   f"softmax(logits / T), by {err:.3f} (allowed {tol:.3f} for {n} draws).")
    _expect_argmax(student, logits, 1e-4, g, name)
    passed(name, f"T = 0 and T = 0.0001 give the argmax; at T = 1, 0.5, 2 the frequencies of "
                 f"{n} draws match softmax(logits / T) within {tol:.3f}")

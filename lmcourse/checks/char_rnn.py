"""Auto-checks for a character-level RNN trained with truncated BPTT.

The lab's RNN step uses PyTorch's layout (the one ``nn.RNN`` and
:func:`lmcourse.models.rnn.rnn_step` use), rows of a minibatch being examples,

    h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh),     o_t = h_t W_hq + b_q,

with parameters in a dict ``{"W_ih": H x I, "W_hh": H x H, "b_ih": H, "b_hh": H,
"W_hq": H x V, "b_q": V}``. Each check computes the right answer itself (the step with
the course's own :func:`~lmcourse.models.rnn.rnn_step`) and, when the student's answer
matches a typical mistake instead, says which one.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import torch

from lmcourse.checks import (
    CheckFailed,
    attempt,
    earlier,
    expect,
    fail,
    passed,
    requires,
    requires_earlier,
    same,
)
from lmcourse.checks.char_rnn_sampling import sample_token
from lmcourse.checks.compare import how_far
from lmcourse.course.claims import verdict as claim
from lmcourse.models.rnn import rnn_step as reference_rnn_step
from lmcourse.train import lm_loss

__all__ = ["beats_bigram", "model_perplexity", "ngram_perplexities", "rnn_step",
           "sample_token", "train_step"]

_STEP = "tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)"


# ---- exercise 1: one step of the RNN ------------------------------------------------------

def rnn_step(student: Callable[..., torch.Tensor]) -> None:
    """Exercise 1: ``rnn_step(x, h, W_ih, W_hh, b_ih, b_hh)`` on a rectangular and a square
    case, against :func:`lmcourse.models.rnn.rnn_step`."""
    name = "rnn_step"
    g = torch.Generator().manual_seed(0)
    worst = 0.0
    # the square case first: there a forgotten transpose of W_ih runs and can be named
    for batch, n_in, hidden in ((2, 4, 4), (3, 5, 4)):
        def rand(*shape):
            return torch.randn(*shape, generator=g, dtype=torch.float64)
        x, h = rand(batch, n_in), rand(batch, hidden)
        W_ih, W_hh, b_ih, b_hh = rand(hidden, n_in), rand(hidden, hidden), rand(hidden), \
            rand(hidden)
        args = (x, h, W_ih, W_hh, b_ih, b_hh)
        try:
            got = student(*args)
        except NotImplementedError:
            attempt(name, student, *args)  # the standard reminder
            return
        except RuntimeError as err:
            if "shape" in str(err) or "size" in str(err):
                fail(name, f"a shape error ({err}). x is batch x {n_in}, h is batch x {hidden}, "
                           f"W_ih is {hidden} x {n_in} and W_hh is {hidden} x {hidden} "
                           "(PyTorch's layout: output features first), so each weight "
                           "multiplies the rows from the right as its transpose: x W_ihᵀ "
                           "and h W_hhᵀ.")
            fail(name, f"your code raised RuntimeError: {err}")
        except Exception as err:  # noqa: BLE001 - any crash in student code is a failed check
            fail(name, f"your code raised {type(err).__name__}: {err}")
        want = reference_rnn_step(*args)
        if same(got, want):
            worst = max(worst, float((got - want).abs().max()))
            continue
        expect(isinstance(got, torch.Tensor), name,
               f"return a tensor (the new hidden state), got {type(got).__name__}")
        expect(got.shape == want.shape, name,
               f"the new state should be batch x hidden = {tuple(want.shape)}, got "
               f"{tuple(got.shape)}")
        a_x, a_h, b = x @ W_ih.T, h @ W_hh.T, b_ih + b_hh
        mistakes = [
            (a_x + a_h + b, f"the tanh is missing: h_t = {_STEP}; without a squashing "
                            "function the state can grow without bound."),
            (torch.tanh(a_x + h @ W_hh + b),
             "W_hh is not transposed: PyTorch stores it as (out x in), so the recurrent term "
             "multiplies h by W_hh's transpose, h W_hhᵀ."),
            (torch.tanh(a_x + a_h), "the biases are missing: add b_ih + b_hh inside the tanh."),
            (torch.tanh(a_x + a_h + b_ih), "b_hh is missing: PyTorch's RNN has two biases."),
            (torch.tanh(a_x + a_h + b_hh), "b_ih is missing: PyTorch's RNN has two biases."),
            (torch.tanh(a_x + a_h) + b, f"the biases go inside the tanh: {_STEP}."),
            (torch.sigmoid(a_x + a_h + b), "use tanh, not the sigmoid, for the hidden state."),
            (torch.relu(a_x + a_h + b), "use tanh, not ReLU, for this RNN's hidden state."),
            (torch.tanh(a_x + b), "the previous state h is not used: add the recurrent "
                                  "term h W_hhᵀ inside the tanh."),
            (torch.tanh(a_h + b), "the input x is not used: add the input term x W_ihᵀ "
                                  "inside the tanh."),
        ]
        if n_in == hidden:
            mistakes.append((torch.tanh(x @ W_ih + a_h + b), "W_ih is not transposed: "
                             "PyTorch stores it as (hidden x input), so the input term "
                             "multiplies x by W_ih's transpose, x W_ihᵀ."))
        for wrong, hint in mistakes:
            if same(got, wrong):
                fail(name, hint)
        fail(name, f"for a {batch} x {n_in} input the new state differs from {_STEP} by up "
                   f"to {float((got.double() - want).abs().max()):.3g}.")
    passed(name, f"matches lmcourse.models.rnn.rnn_step, {_STEP}, on 2 cases, "
                 f"max difference {worst:.1e}")


# ---- exercise 2: truncated BPTT -----------------------------------------------------------

class _CountingSGD(torch.optim.SGD):
    """SGD with learning rate 0 (parameters stay put) that counts ``step()`` calls and keeps
    the norm of the gradient each step used (clipping after the step has no effect)."""

    def __init__(self, params):
        super().__init__(params, lr=0.0)
        self.steps = 0
        self.norms: list[float] = []

    def step(self, closure=None):
        self.steps += 1
        grads = [p.grad.flatten() for g in self.param_groups for p in g["params"]
                 if p.grad is not None]
        self.norms.append(float(torch.cat(grads).norm()) if grads else 0.0)
        return super().step(closure)


def _reference_forward(params: dict, X: torch.Tensor) -> torch.Tensor:
    """The lab's model from state zero, with the course's rnn_step: the logits."""
    W_ih = params["W_ih"]
    h = X.new_zeros(X.shape[0], params["W_hh"].shape[0], dtype=W_ih.dtype)
    outputs = []
    for x_t in torch.nn.functional.one_hot(X.T, W_ih.shape[1]).to(W_ih.dtype):
        h = reference_rnn_step(x_t, h, W_ih, params["W_hh"], params["b_ih"], params["b_hh"])
        outputs.append(h)
    return torch.stack(outputs, dim=1) @ params["W_hq"] + params["b_q"]


def _needs_rnn_step(name: str, forward: Callable[..., Any], params: dict,
                    X: torch.Tensor) -> torch.Tensor:
    """Exercise 1 first: its check on the rnn_step the model runs, then the model's logits
    against the course's; returns the state the model ends in (with its history)."""
    step = earlier(forward, "rnn_step")
    if callable(step):
        requires(name, 1, rnn_step, step)
    try:
        logits, state = forward(params, X, None)
    except NotImplementedError:
        fail(name, "the model's forward pass cannot run yet: finish rnn_step (exercise 1).")
    except Exception as err:  # noqa: BLE001
        fail(name, f"pass exercise 1 first: the model's forward pass raised "
                   f"{type(err).__name__}: {err}; does rnn_step pass its check?", 1)
    with torch.no_grad():
        want = _reference_forward(params, X)
    expect(same(logits.detach(), want), name,
           f"pass exercise 1 first: the model runs your rnn_step, and its predictions "
           f"differ from those of {_STEP}; run exercise 1's check.", 1)
    return state


def _small_params(vocab: int, hidden: int, seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    shapes = {"W_ih": (hidden, vocab), "W_hh": (hidden, hidden), "b_ih": (hidden,),
              "b_hh": (hidden,), "W_hq": (hidden, vocab), "b_q": (vocab,)}
    return {k: (0.5 * torch.randn(*s, generator=g, dtype=torch.float64)).requires_grad_()
            for k, s in shapes.items()}


def _loss(forward: Callable, params: dict, X: torch.Tensor, Y: torch.Tensor, state: Any
          ) -> tuple[torch.Tensor, Any]:
    logits, new_state = forward(params, X, state)
    return lm_loss(logits, Y), new_state


def _grads(loss: torch.Tensor, params: dict) -> list[torch.Tensor]:
    return list(torch.autograd.grad(loss, list(params.values()), retain_graph=True))


def train_step(student: Callable[..., Any], forward: Callable[..., Any]) -> None:
    """Exercise 2: ``train_step(params, optimizer, X, Y, state, clip)`` does one truncated-BPTT
    update: it starts from the carried state *detached*, clips, steps, and returns
    ``(loss, final state)``.

    ``forward(params, X, state) -> (logits, state)`` is the lab's model; the check uses it
    for the reference too, so only the truncation logic is tested here.
    """
    name = "train_step"
    vocab, hidden, batch, steps = 7, 5, 3, 6
    params = _small_params(vocab, hidden, seed=1)
    g = torch.Generator().manual_seed(2)
    X0, X1, Y1 = (torch.randint(vocab, (batch, steps), generator=g) for _ in range(3))

    # the state arrives with its history: it was computed from the parameters
    carried = _needs_rnn_step(name, forward, params, X0)
    expect(isinstance(carried, torch.Tensor) and carried.grad_fn is not None, name,
           "the model's forward pass should return a state that depends on the parameters")
    loss_t, final = _loss(forward, params, X1, Y1, carried.detach())
    truncated = _grads(loss_t, params)
    loss_f, _ = _loss(forward, params, X1, Y1, carried)
    through = _grads(loss_f, params)
    loss_z, _ = _loss(forward, params, X1, Y1, None)
    zeroed = _grads(loss_z, params)

    opt = _CountingSGD(list(params.values()))
    for p in params.values():  # stale gradients from an earlier step
        p.grad = torch.ones_like(p)
    try:
        out = student(params, opt, X1, Y1, carried, clip=1e9)
    except NotImplementedError:
        attempt(name, student, params, opt, X1, Y1, carried)
        return
    except Exception as err:  # noqa: BLE001
        fail(name, f"your code raised {type(err).__name__}: {err}")
    expect(isinstance(out, tuple) and len(out) == 2, name,
           "return a pair (loss as a float, the state to carry into the next minibatch)")
    loss_value, new_state = out
    got = [p.grad for p in params.values()]
    expect(all(gr is not None for gr in got), name,
           "some parameters have no gradient after train_step: call loss.backward()")
    expect(opt.steps == 1, name,
           f"optimizer.step() was called {opt.steps} times, expected once per minibatch "
           "(after backward and clipping).")

    def matches(ref: list[torch.Tensor], extra: float = 0.0) -> bool:
        return all(torch.allclose(a, b + extra, atol=1e-9, rtol=1e-7)
                   for a, b in zip(got, ref, strict=True))

    if not matches(truncated):
        if matches(truncated, 1.0) or matches(through, 1.0) or matches(zeroed, 1.0):
            fail(name, "the gradients still hold the previous minibatch's values: call "
                       "optimizer.zero_grad() before loss.backward() (PyTorch accumulates).")
        if matches(through):
            fail(name, "the gradient flowed back into the previous minibatch: the incoming "
                       "state was not detached. Detach it before the forward pass (same "
                       "numbers, no history) so that backpropagation stops at the segment "
                       "boundary (truncated BPTT).")
        if matches([batch * steps * t for t in truncated]):
            fail(name, "the gradients are batch * steps times too large: use the MEAN "
                       "cross-entropy over all positions (F.cross_entropy's default), "
                       "not the sum.")
        if matches(zeroed):
            fail(name, "the state was reset to zero: the gradients equal those of a "
                       "minibatch that starts from h = 0. Use the state passed in "
                       "(detached), so row b continues where it stopped in the previous "
                       "minibatch; only state=None should mean zeros.")
        fail(name, "the gradients differ from those of the loss on this minibatch, started "
                   "from the detached incoming state: the forward pass from that state, the "
                   "mean cross-entropy over all positions, then backward.")
    expect(isinstance(loss_value, (float, int)) or (isinstance(loss_value, torch.Tensor)
                                                    and loss_value.numel() == 1), name,
           f"return the loss as a number (loss.item()), got {type(loss_value).__name__}")
    value = loss_value.item() if isinstance(loss_value, torch.Tensor) else float(loss_value)
    expect(math.isclose(value, loss_t.item(), rel_tol=1e-7), name,
           f"the returned loss {value:.6f} {how_far(value, loss_t.item())} against the mean "
           "cross-entropy of the minibatch that your gradients come from: return the value "
           "(.item()) of the very loss you called backward() on.")
    expect(isinstance(new_state, torch.Tensor), name,
           "return the final hidden state (a tensor) as the second value, so the next "
           "minibatch can continue from it")
    expect(same(new_state, final), name,
           "the returned state is not the hidden state after the last position of this "
           "minibatch: return the state that forward() gives back (the next minibatch "
           "continues from it).")

    # clipping: a small threshold must bound the norm of the gradient the step uses
    opt = _CountingSGD(list(params.values()))
    attempt(name, student, params, opt, X1, Y1, carried.detach(), clip=1e-3)
    after = float(torch.cat([p.grad.flatten() for p in params.values()]).norm())
    used = opt.norms[0] if opt.norms else after
    expect(used <= 1e-3 * (1 + 1e-6) or after > 1e-3 * (1 + 1e-6), name,
           f"with clip=0.001 the gradients were clipped only after optimizer.step(), which "
           f"had already used them unclipped (norm {used:.3g}): clip between backward() "
           "and optimizer.step().")
    expect(used <= 1e-3 * (1 + 1e-6), name,
           f"with clip=0.001 the gradient norm after train_step is {after:.3g}: clip the "
           "gradients to the norm `clip` (lmcourse.train.clip_gradients, on all the "
           "parameters) between backward() and optimizer.step().")

    # two minibatches in a row, as in the training loop (the graph of the first is freed)
    opt = _CountingSGD(list(params.values()))
    state = None
    for X in (X0, X1):
        try:
            _, state = student(params, opt, X, Y1, state, clip=1.0)
        except RuntimeError as err:
            if "second time" in str(err) or "freed" in str(err):
                fail(name, "backward tried to go through the previous minibatch's graph, "
                           "which was already freed: detach the incoming state first.")
            fail(name, f"your code raised RuntimeError on consecutive minibatches: {err}")
        except Exception as err:  # noqa: BLE001
            fail(name, f"with state=None (the first minibatch) your code raised "
                       f"{type(err).__name__}: {err}")
    worst = max(float((a - b).abs().max()) for a, b in zip(got, truncated, strict=True))
    passed(name, f"gradients stop at the segment boundary (max difference to the truncated "
                 f"reference {worst:.1e}); state carried, clipped, one step per minibatch")


# ---- the result: better than counting character pairs --------------------------------------

@torch.no_grad()
def model_perplexity(forward: Callable, params: dict, eval_ids: Sequence[int],
                     batch_size: int = 32, num_steps: int = 64) -> float:
    """Perplexity of the lab's model on ``eval_ids``, reading it in sequential minibatches
    and carrying the state (as in training)."""
    from lmcourse.data import lm_batches

    state, nll, count = None, 0.0, 0
    for X, Y in lm_batches(eval_ids, batch_size, num_steps, generator=torch.Generator()):
        logits, state = forward(params, X, state)
        nll += float(torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]).double(), Y.reshape(-1), reduction="sum"))
        count += Y.numel()
    return math.exp(nll / count)


def ngram_perplexities(train_ids: Sequence[int], val_ids: Sequence[int], vocab_size: int,
                       orders: Sequence[int] = (1, 2, 3, 4, 5, 6)) -> dict[int, float]:
    """Validation perplexity of interpolated Kneser–Ney n-gram models
    (:class:`lmcourse.models.ngram.NGramLM`) fitted on ``train_ids``, one per order."""
    from lmcourse.models.ngram import NGramLM

    return {n: NGramLM(n, vocab_size).fit(train_ids).perplexity(val_ids) for n in orders}


@functools.lru_cache(maxsize=8)
def _tuned_ngram(train_ids: tuple[int, ...], val_ids: tuple[int, ...], vocab_size: int,
                 orders: tuple[int, ...] | None = None):
    """:func:`~lmcourse.models.ngram_tuning.best_ngram` (over ``orders``, by default the
    whole grid), remembered: a student re-runs the check after every change to the model,
    and the n-gram's tuning does not change."""
    from lmcourse.models.ngram_tuning import CHAR_ORDERS, best_ngram

    return best_ngram(train_ids, val_ids, vocab_size, orders=orders or CHAR_ORDERS)


def beats_bigram(forward: Callable, params: dict, train_ids: Sequence[int],
                 val_ids: Sequence[int], vocab_size: int
                 ) -> tuple[float, dict[int | str, float | str]]:
    """Final check: the trained model's validation perplexity is below the Kneser–Ney
    **bigram** model's (a model that reads only the previous character; its discount
    chosen on a tuning split cut from the training text, as every baseline's settings
    are). Prints the model beside the unigram and trigram (discount 0.75), that bigram and
    the **tuned** n-gram on the same split (order and discount chosen on the tuning split,
    :func:`~lmcourse.models.ngram_tuning.best_ngram`), and says honestly whether it also
    beats the tuned one. Returns ``(model perplexity, {1: unigram, 2: bigram, 3: trigram,
    "bigram_setting": the bigram's chosen discount, "tuned": tuned n-gram perplexity,
    "tuned_setting": what the tuning chose})``."""
    name = "trained model"
    requires_earlier(name, forward, ("rnn_step", 1, rnn_step))
    try:
        ppl = model_perplexity(forward, params, val_ids)
    except CheckFailed:
        raise
    except NotImplementedError:
        fail(name, "the model cannot run yet: finish rnn_step (exercise 1) and train it.")
    except Exception as err:  # noqa: BLE001
        fail(name, f"evaluating the model raised {type(err).__name__}: {err}")
    expect(math.isfinite(ppl), name, "the validation perplexity is not finite: did the "
                                     "loss diverge? Lower the learning rate or clip.")
    ngram: dict[int | str, float | str] = dict(ngram_perplexities(train_ids, val_ids, vocab_size,
                                                          orders=(1, 3)))
    bigram, ngram[2] = _tuned_ngram(tuple(train_ids), tuple(val_ids), vocab_size, (2,))
    ngram["bigram_setting"] = str(bigram.best)
    tuned, ngram["tuned"] = _tuned_ngram(tuple(train_ids), tuple(val_ids), vocab_size)
    ngram["tuned_setting"] = str(tuned.best)
    rows = [("unigram (Kneser-Ney)", ngram[1]), ("bigram (KN, D tuned)", ngram[2]),
            ("trigram (Kneser-Ney)", ngram[3]), ("tuned n-gram (Kneser-Ney)", ngram["tuned"]),
            ("your RNN", ppl)]
    print("validation perplexity, same split:")
    for label, value in rows:
        print(f"  {label:<28} {value:7.2f}")
    print(f"  (bigram: {bigram.best}, its discount chosen on the tuning split; "
          f"{tuned.summary()})")
    expect(ppl < ngram[2], name,
           f"validation perplexity {ppl:.2f} is not below the bigram baseline {ngram[2]:.2f} "
           f"(a model that only looks at the previous character; the unigram gets "
           f"{ngram[1]:.2f}). A model that ignores the state, or one that stopped learning, "
           "lands here: check that train_step carries the (detached) state, that the loss "
           "went down, and train for the full budget.")
    claim("your RNN beats the bigram Kneser-Ney model (a model of the previous character)",
          ppl, baseline=(bigram.label("bigram KN, discount tuned"), ngram[2]),
          higher_is_better=False,
          metric="validation perplexity", digits=2)
    verdict = (f"and below the tuned n-gram ({ngram['tuned']:.2f}) too"
               if ppl < ngram["tuned"] else
               f"but not below the tuned n-gram ({tuned.best}, {ngram['tuned']:.2f}): on a "
               "third of a million characters, counting long contexts with tuned discounts "
               "beats every network this course trains (chapter 03 measures how much more "
               "text a network needs to pass it)")
    passed(name, f"validation perplexity {ppl:.2f} < bigram baseline {ngram[2]:.2f}, {verdict}")
    return ppl, ngram

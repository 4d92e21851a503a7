"""Auto-checks for distilling the fine-tuned MiniLM into a smaller student.

The temperature softmax, the distillation loss and the combined loss are compared with
:mod:`lmcourse.models.distill` on fixed random logits (float64), and on extreme logits
(``±1000``) where a softmax written as ``exp / sum`` overflows and the log of a softmax
underflows. When an answer is wrong, the check compares it with the usual mistakes (no
temperature on the teacher, teacher and student exchanged, the ``T^2`` left out, ...) to
name the one it is. The distillation step runs on tiny randomly initialised BERTs, so it
takes a fraction of a second. The last check compares the trained student with its teacher.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from lmcourse import finetune
from lmcourse.checks import (
    CheckFailed,
    attempt,
    close,
    expect,
    fail,
    passed,
    requires_earlier,
    same,
)
from lmcourse.checks.beats import keeps_teacher_quality  # the lab's last check
from lmcourse.checks.compare import how_far
from lmcourse.checks.finetune import (
    _batch,
    _clipped,
    _flat,
    _gradient_the_optimiser_saw,
    _RecordingAdamW,
    _RecordingScheduler,
    tiny_bert,
)
from lmcourse.models import distill as reference

__all__ = ["combined_loss", "distill_step", "distillation_loss", "keeps_teacher_quality",
           "softmax_t"]

_TOL = 1e-6


def _logits(*shape: int, scale: float = 1.0, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return scale * torch.randn(*shape, generator=g, dtype=torch.float64)


def _extreme() -> tuple[torch.Tensor, torch.Tensor]:
    """Student and teacher logits of ±1000: each softmax is one-hot to machine precision."""
    s = torch.tensor([[1000.0, -1000.0, 0.0], [-1000.0, 999.0, 1000.0], [3.0, -2.0, 0.5]])
    t = torch.tensor([[-1000.0, 1000.0, 0.0], [1000.0, -1000.0, 0.0], [0.0, 1.0, -1.0]])
    return s, t


def _scalar(name: str, got: Any, batch: int) -> torch.Tensor:
    """The student's loss as a 0-d tensor, or a failure that says what came back instead."""
    if isinstance(got, float | int):
        fail(name, "return a tensor, not a Python number (.item() or float() cut the graph, so "
                   "backward() could not reach the student's logits).")
    expect(isinstance(got, torch.Tensor), name,
           f"return the loss as a 0-d tensor, got {type(got).__name__}")
    if got.shape == (batch,):
        fail(name, f"one loss per example (shape {tuple(got.shape)}): take the mean over the "
                   "batch, .mean(), to return a single number.")
    expect(got.numel() == 1, name,
           f"return a single number (the batch mean), got a tensor of shape {tuple(got.shape)}; "
           "sum over the classes (dim=-1), then average over the batch.")
    return got.reshape(())


# ---- exercise 1: the temperature softmax ---------------------------------------------------

def _softmax_t_variants(z: torch.Tensor, T: float) -> list[tuple[torch.Tensor, str]]:
    """The answers of the usual mistakes in ``softmax(z / T)``, each with its hint."""
    return [
        (torch.softmax(z, -1), "the temperature is ignored: divide the logits by T "
                               "before the softmax, softmax(z / T)."),
        (torch.softmax(z * T, -1), "you multiplied the logits by T; divide them: "
                                   "softmax(z / T) (a large T flattens the distribution)."),
        (torch.softmax(z, -1) / T, "you divided the probabilities by T after the softmax; "
                                   "divide the logits before it, softmax(z / T)."),
        (z / T, "these are the scaled logits z / T: apply the softmax to them."),
        (torch.softmax(z / T, 0), "softmax over the wrong axis (dim=0, the batch): the "
                                  "classes are the last axis, dim=-1."),
        (torch.softmax(z / T, 1), "softmax over the wrong axis (dim=1): with logits "
                                  "B x T x C the classes are the last axis; use dim=-1."),
    ]


def softmax_t(student: Callable[..., Any]) -> None:
    """Exercise 1: ``softmax_t(logits, T)`` = ``softmax(logits / T)`` over the last axis."""
    name = "softmax_t"
    z = _logits(2, 3, 5, scale=2.0)
    for T in (2.0, 0.5, 1.0, 5.0):
        raw = attempt(name, student, z.clone(), T)
        expect(isinstance(raw, torch.Tensor), name,
               f"return a tensor of probabilities, got {type(raw).__name__}")
        got = raw.detach()
        expect(got.shape == z.shape, name,
               f"the output should have the input's shape {tuple(z.shape)} (one probability per "
               f"logit), got {tuple(got.shape)}")
        want = reference.softmax_t(z, T)
        if same(got, want, _TOL):
            continue
        at = f" (at T = {T:g})"
        for value, hint in _softmax_t_variants(z, T):
            if same(got, value, _TOL):
                fail(name, hint + at)
        sums = got.sum(-1).double()
        if sums.isfinite().all() and not torch.allclose(sums, torch.ones_like(sums)):
            fail(name, f"the probabilities do not sum to 1 over the classes{at}: normalise "
                       "over the last axis.")
        where = tuple(int(i) for i in torch.nonzero((got - want).abs() > _TOL)[0])
        fail(name, f"the probabilities differ from softmax(z / T){at}: yours for the first "
                   f"row are {[round(v, 4) for v in got[0, 0].tolist()]}; at {where} yours "
                   f"{how_far(float(got[where]), float(want[where]), _TOL)}.")
    s, _ = _extreme()
    for T in (1.0, 2.0):
        got = attempt(name, student, s.clone(), T)
        want = reference.softmax_t(s, T)
        if isinstance(got, torch.Tensor) and not got.detach().isfinite().all():
            fail(name, f"with logits of ±1000 (T = {T:g}) you get NaN or inf: exp(1000 / T) "
                       "overflows. Subtract each row's maximum before exp (it cancels in the "
                       "ratio), or use torch.softmax on the scaled logits, which does.")
        expect(same(got, want, _TOL), name,
               f"with logits of ±1000 (T = {T:g}) your probabilities for the first row are "
               f"{got.detach()[0].tolist()}, which differ from softmax(z / T): subtract each "
               "row's maximum before exp, or use torch.softmax on the scaled logits.")
    passed(name, "softmax(z / T) over the last axis at T = 0.5, 1, 2, 5, finite at ±1000")


# ---- exercise 2: the distillation loss -----------------------------------------------------

def _cross_entropy(p: torch.Tensor, log_q: torch.Tensor) -> torch.Tensor:
    """``mean_b -sum_i p_i log_q_i``."""
    return -(p * log_q).sum(-1).mean()


def _loss_variants(s: torch.Tensor, t: torch.Tensor, T: float
                   ) -> list[tuple[torch.Tensor, str]]:
    """The values of the usual mistakes in ``L_d`` (float64), each with its hint."""
    q, log_p = torch.softmax(t / T, -1), F.log_softmax(s / T, -1)
    p, log_q = torch.softmax(s / T, -1), F.log_softmax(t / T, -1)
    right = _cross_entropy(q, log_p)
    entropy_q = _cross_entropy(q, log_q)
    B, C = s.shape
    return [
        (_cross_entropy(torch.softmax(t, -1), log_p),
         "no temperature on the teacher: its logits were not divided by T. Both "
         "distributions are softened: q = softmax(t / T) and log p = log_softmax(s / T)."),
        (_cross_entropy(q, F.log_softmax(s, -1)),
         "no temperature on the student: divide its logits by T as well, "
         "log p = log_softmax(s / T)."),
        (_cross_entropy(torch.softmax(t, -1), F.log_softmax(s, -1)),
         "the temperature is ignored: divide both logits by T."),
        (_cross_entropy(p, log_q),
         "teacher and student are exchanged (the direction is swapped): the TEACHER's "
         "softened distribution q = softmax(t / T) is the target that weighs the STUDENT's "
         "log-probabilities, -sum_i q_i log p_i. The first argument is the student's."),
        (_cross_entropy(p, log_q) - _cross_entropy(p, log_p),
         "teacher and student are exchanged: that is KL(p || q) with p the student's "
         "distribution. The target is the teacher's: -sum_i q_i log p_i with "
         "q = softmax(t / T), p = softmax(s / T)."),
        (right - entropy_q,
         "that is the KL divergence KL(q || p) = sum q log(q / p), which is the cross-entropy "
         "minus the teacher's entropy: the same gradient, but the exercise asks for the "
         "cross-entropy itself, -sum_i q_i log p_i (batch mean)."),
        (T**2 * right, "you multiplied by T^2: that factor belongs to the combined loss "
                       "(exercise 3), not to L_d."),
        (right / T**2, "you divided by T^2: L_d is the plain cross-entropy of the softened "
                       "distributions, with no factor."),
        (B * right, f"you summed over the batch: average it instead (.mean() over the "
                    f"{B} examples)."),
        (right / C, f"you averaged over the classes too ({C} of them): sum over the classes, "
                    "then average over the batch."),
        (-right, "the sign is wrong: the cross-entropy -sum_i q_i log p_i is positive "
                 "(log p_i < 0)."),
    ]


def distillation_loss(student: Callable[..., Any]) -> None:
    """Exercise 2: ``distillation_loss`` of the student's logits ``s``, the teacher's ``t`` and
    the temperature ``T`` is ``mean_b -sum_i softmax(t/T)_i log softmax(s/T)_i``."""
    name = "distillation_loss"
    requires_earlier(name, student, ("softmax_t", 1, softmax_t))
    s0, t = _logits(5, 7, seed=1), _logits(5, 7, scale=3.0, seed=2)
    for T in (2.0, 4.0, 1.0):
        s = s0.clone().requires_grad_(True)
        got = _scalar(name, attempt(name, student, s, t.clone(), T), len(s))
        want = reference.distillation_loss(s0, t, T)
        at = f" (at T = {T:g})"
        if not close(got.item(), float(want), _TOL):
            for value, hint in _loss_variants(s0, t, T):
                if close(got.item(), float(value), _TOL):
                    fail(name, hint + at)
            fail(name, f"L_d = {got.item():.6f}{at} {how_far(got.item(), float(want))} "
                       "against -mean_b sum_i softmax(t/T)_i log softmax(s/T)_i, and it is "
                       "none of the usual mistakes: compute it step by step on one row.")
        expect(got.requires_grad, name,
               "the loss carries no gradient back to the student's logits: compute it with "
               "torch operations on student_logits (no .detach(), .item() or NumPy on them).")
        (grad,) = torch.autograd.grad(got, s)
        s_ref = s0.clone().requires_grad_(True)
        (want_grad,) = torch.autograd.grad(reference.distillation_loss(s_ref, t, T), s_ref)
        expect(same(grad, want_grad, _TOL), name,
               f"the value is right but its gradient with respect to the student's logits "
               f"is not{at}: it should be (p - q) / (T B).")
    s, t = _extreme()
    for T in (1.0, 2.0):
        got = _scalar(name, attempt(name, student, s.clone(), t.clone(), T), len(s))
        want = reference.distillation_loss(s, t, T)
        if not bool(got.detach().isfinite()):
            fail(name, f"with logits of ±1000 (T = {T:g}) the loss is {got.item()}: the log of "
                       "a softmax was computed naively, torch.log(torch.softmax(...)). The "
                       "softmax underflows to exactly 0 and log(0) = -inf (and 0 * -inf = "
                       "NaN). Take the student's log-probabilities from F.log_softmax of its "
                       "softened logits, which computes z - logsumexp(z) without ever taking "
                       "the log of 0.")
        expect(close(got.item(), float(want), 1e-5), name,
               f"with logits of ±1000 (T = {T:g}) L_d = {got.item():.4f}, which "
               f"{how_far(got.item(), float(want), 1e-5)}: a log of a softmax that was "
               "clamped or shifted away from 0 loses the value; use F.log_softmax on the "
               "student's softened logits.")
    example = float(reference.distillation_loss(s0, _logits(5, 7, scale=3.0, seed=2), 2.0))
    passed(name, f"L_d matches at T = 1, 2, 4 (e.g. {example:.4f} at T = 2), with the right "
                 "gradient, and stays finite at ±1000")


# ---- exercise 3: the combined loss ---------------------------------------------------------

def _combined_variants(s: torch.Tensor, t: torch.Tensor, y: torch.Tensor, T: float, a: float,
                       b: float) -> list[tuple[torch.Tensor, str]]:
    soft, hard = reference.distillation_loss(s, t, T), F.cross_entropy(s, y)
    return [
        (a * soft + b * hard,
         f"the T^2 factor is missing: alpha * T^2 * L_d + beta * L_s. The gradient of L_d "
         f"shrinks like 1/T^2 (Hinton et al. 2015); without the factor the soft targets "
         f"weigh {T**2:g} times less here than alpha says."),
        (a * T * soft + b * hard, "you multiplied L_d by T; the factor is T^2 "
                                  "(temperature ** 2)."),
        (a * soft / T**2 + b * hard, "you divided L_d by T^2: multiply by it, "
                                     "alpha * T^2 * L_d."),
        (T**2 * (a * soft + b * hard), "T^2 multiplies the soft term only: "
                                       "alpha * T^2 * L_d + beta * L_s."),
        (a * T**2 * soft + b * F.cross_entropy(s / T, y),
         "the hard-label loss L_s is the ordinary cross-entropy at T = 1: "
         "the student's raw logits against the labels, without dividing by T."),
        (b * T**2 * soft + a * hard, "alpha and beta are exchanged: alpha weighs the soft "
                                     "targets (L_d), beta the hard labels (L_s)."),
        (a * T**2 * soft + (1 - a) * hard, "use the beta argument for L_s, not 1 - alpha."),
        (a * T**2 * soft, "the hard-label term beta * L_s is missing."),
        (b * hard, "the soft-target term alpha * T^2 * L_d is missing."),
        (a * T**2 * reference.distillation_loss(t, s, T) + b * hard,
         "in L_d teacher and student are exchanged: distillation_loss takes the student's "
         "logits first, then the teacher's, then the temperature."),
    ]


def combined_loss(student: Callable[..., Any]) -> None:
    """Exercise 3: ``combined_loss(s, t, labels, T, alpha, beta)`` =
    ``alpha T^2 L_d + beta L_s``."""
    name = "combined_loss"
    requires_earlier(name, student, ("distillation_loss", 2, distillation_loss))
    s0, t = _logits(6, 3, seed=3), _logits(6, 3, scale=3.0, seed=4)
    y = torch.tensor([0, 2, 1, 1, 0, 2])
    first = 0.0
    for T, a, b in ((2.0, 0.7, 0.2), (4.0, 0.5, 0.5), (3.0, 0.3, 0.9)):
        s = s0.clone().requires_grad_(True)
        got = _scalar(name, attempt(name, student, s, t.clone(), y.clone(), T, a, b), len(s))
        want = reference.combined_loss(s0, t, y, T, a, b)
        at = f" (at T = {T:g}, alpha = {a:g}, beta = {b:g})"
        if not close(got.item(), float(want), _TOL):
            for value, hint in _combined_variants(s0, t, y, T, a, b):
                if close(got.item(), float(value), _TOL):
                    fail(name, hint + at)
            fail(name, f"L = {got.item():.6f}{at} {how_far(got.item(), float(want))} "
                       "against alpha T^2 L_d + beta L_s. (Did distillation_loss pass its "
                       "check?)")
        expect(got.requires_grad, name,
               "the loss carries no gradient back to the student's logits: keep it a tensor "
               "computed from student_logits.")
        first = float(want) if T == 2.0 else first
    s, t = _extreme()
    y = torch.tensor([1, 0, 2])
    got = _scalar(name, attempt(name, student, s.clone(), t.clone(), y, 2.0, 0.5, 0.5), len(s))
    want = reference.combined_loss(s, t, y, 2.0, 0.5, 0.5)
    if not bool(got.detach().isfinite()):
        fail(name, f"with logits of ±1000 the loss is {got.item()}: a log of a softmax was "
                   "computed naively, torch.log(torch.softmax(...)), which gives log(0) = -inf. "
                   "Use F.cross_entropy on the student's raw logits for L_s (it works with "
                   "log_softmax) and your distillation_loss for L_d.")
    expect(close(got.item(), float(want), 1e-5), name,
           f"with logits of ±1000 L = {got.item():.4f}, which "
           f"{how_far(got.item(), float(want), 1e-5)}: compute L_s with F.cross_entropy on "
           "the raw logits and L_d with log-probabilities from F.log_softmax.")
    passed(name, f"alpha T^2 L_d + beta L_s matches at three (T, alpha, beta), e.g. "
                 f"{first:.4f} at T = 2, alpha = 0.7, beta = 0.2; finite at ±1000")


# ---- exercise 4: one distillation step -----------------------------------------------------

def _tiny_pair() -> tuple[finetune.SequenceClassifier, finetune.SequenceClassifier]:
    """A tiny teacher with dropout 0.3 and a 1-layer student (no dropout) made from another
    tiny BERT whose embeddings are frozen, both with large classifier weights, built without
    touching the global random state."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        teacher = finetune.SequenceClassifier(tiny_bert(dropout=0.3), dropout=0.3)
        student = finetune.SequenceClassifier(
            reference.init_student_from_teacher(tiny_bert(seed=1)), dropout=0.0)
        for model in (teacher, student):  # confident logits, so that the soft targets matter
            torch.nn.init.normal_(model.classifier.weight, std=1.0)
    student.freeze_embeddings()  # as in the lab
    return teacher, student


def _near(a: torch.Tensor, b: torch.Tensor, tol: float = 2e-4) -> bool:
    """``||a - b|| <= tol ||b||``: two gradients (flattened) agree."""
    return a.shape == b.shape and float((a - b).norm()) <= tol * float(b.norm()) + 1e-12


def distill_step(student_fn: Callable[..., Any], temperature: float = 4.0, alpha: float = 0.9,
                 beta: float = 0.1, clip: float = 0.05) -> None:
    """Exercise 4: ``distill_step(student, teacher, batch, optimizer, scheduler, temperature,
    alpha, beta, clip)``: one update of the student on the combined loss."""
    name = "distill_step"
    requires_earlier(name, student_fn, ("combined_loss", 3, combined_loss))
    teacher, student = _tiny_pair()
    ref_student = copy.deepcopy(student)
    ids, mask = _batch([7, 3, 5, 2, 6, 4])
    labels = torch.tensor([1, 0, 0, 1, 0, 0])
    teacher.eval()
    with torch.no_grad():
        t_logits = teacher(ids, mask)
    ref_params = [p for p in ref_student.parameters() if p.requires_grad]

    def grad_of(loss: torch.Tensor) -> torch.Tensor:
        return _flat(torch.autograd.grad(loss, ref_params, allow_unused=True), ref_params)

    s_logits = ref_student(ids, mask)
    g = grad_of(reference.combined_loss(s_logits, t_logits, labels, temperature, alpha, beta))
    want_loss = reference.combined_loss(s_logits.detach(), t_logits, labels, temperature, alpha,
                                        beta).item()
    hard_only = grad_of(F.cross_entropy(ref_student(ids, mask), labels))
    defaults = grad_of(reference.combined_loss(ref_student(ids, mask), t_logits, labels))

    params = [p for p in student.parameters() if p.requires_grad]
    optimizer = _RecordingAdamW(params, lr=1e-3)
    scheduler = _RecordingScheduler(optimizer)
    # gradients left from an earlier step, as large as this step's in total
    size = float(g.norm()) / sum(p.numel() for p in params) ** 0.5
    junk = [torch.full_like(p, size) for p in params]
    for p, j in zip(params, junk, strict=True):
        p.grad = j.clone()
    old = _flat(junk, params)
    teacher.train()  # as if someone left it in training mode: the step must switch it off
    student.eval()  # as predicting leaves it
    calls: list[bool] = []
    hook = teacher.register_forward_hook(lambda *_: calls.append(torch.is_grad_enabled()))
    try:
        with warnings.catch_warnings(), torch.random.fork_rng(devices=[]):
            warnings.simplefilter("ignore")
            torch.manual_seed(1)
            got = attempt(name, student_fn, student, teacher, (ids, mask, labels.clone()),
                          optimizer, scheduler, temperature, alpha, beta, clip)
    except CheckFailed as err:
        if "does not require grad" in str(err):
            fail(name, "the loss has no gradient: were the student's logits computed under "
                       "torch.no_grad(), or passed where the teacher's belong? combined_loss "
                       "takes the student first (its logits are the first argument), and the "
                       f"student's forward pass runs outside no_grad. ({err})")
        raise
    finally:
        hook.remove()
    if isinstance(got, torch.Tensor) and got.requires_grad:
        fail(name, "return the loss as a Python float (its .item()), not the tensor: a "
                   "tensor keeps the step's graph alive.")
    try:
        loss = float(got)
    except (TypeError, ValueError, RuntimeError):
        fail(name, f"return the loss as a float (loss.item()), got {type(got).__name__}")
    expect(bool(calls), name, "the teacher was never called: its logits on the batch (ids "
                              "and mask) are the soft targets.")
    expect(not teacher.training, name,
           "the teacher is still in training mode: call teacher.eval(), or its dropout makes "
           "the soft targets random (a different target for the same sentence every time).")
    if any(calls):
        fail(name, "the teacher's forward pass ran with gradients on: compute its logits "
                   "inside `with torch.no_grad():`. The teacher is not trained here; keeping "
                   "its graph costs time and memory at every step.")
    if any(p.grad is not None and bool(p.grad.any()) for p in teacher.parameters()):
        fail(name, "the teacher received gradients: compute its logits under torch.no_grad().")
    expect(student.training, name,
           "the student is still in evaluation mode: call student.train() before its forward "
           "pass, so that its dropout is on while it learns.")
    seen = _gradient_the_optimiser_saw(name, optimizer, params, g, old, clip, "student", _near)
    if _near(seen, _clipped(hard_only, clip)):
        fail(name, "the student learned from the hard labels only (plain cross-entropy): "
                   "its loss is your combined_loss, the teacher's soft targets and the labels "
                   "together.")
    if _near(seen, _clipped(defaults, clip)):
        fail(name, "the temperature, alpha and beta arguments were ignored (the defaults were "
                   "used): pass them on to combined_loss.")
    expect(_near(seen, _clipped(g, clip)), name,
           "the gradient the optimiser used differs from that of your combined_loss on this "
           "batch (temperature, alpha and beta passed on), clipped to norm clip: check the "
           "order of the arguments (the student's logits first) and that the teacher's logits "
           "come from the teacher in evaluation mode.")
    if not close(loss, want_loss, 1e-4):
        fail(name, f"the returned loss {loss:.6f} {how_far(loss, want_loss, 1e-4)} against "
                   "the combined loss of the batch: return the .item() of the loss you called "
                   "backward() on.")
    n = optimizer.log.count("scheduler")
    expect(n == 1, name, f"scheduler.step() was called {n} times: once per step, after "
                         "optimizer.step().")
    expect(optimizer.log == ["optimizer", "scheduler"], name,
           "step the optimiser first, then the scheduler.")
    passed(name, f"combined loss {loss:.4f}, teacher in eval mode without gradients, fresh "
                 f"student gradients clipped to norm {clip}, one optimiser and scheduler step")

"""Lab 07 checks: right answers pass; each typical wrong answer fails with its own hint."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from lmcourse import metrics
from lmcourse.checks import CheckFailed
from lmcourse.checks import distill as check
from lmcourse.models import distill


def fails_with(fn, *args, hint: str, **kwargs) -> str:
    with pytest.raises(CheckFailed) as info:
        fn(*args, **kwargs)
    assert hint in str(info.value), str(info.value)
    return str(info.value)


def not_implemented(*args, **kwargs):
    raise NotImplementedError


# ---- exercise 1: the temperature softmax ---------------------------------------------------

def stable_softmax(z, T=1.0):
    z = z / T
    e = torch.exp(z - z.max(dim=-1, keepdim=True).values)
    return e / e.sum(-1, keepdim=True)


def test_softmax_t_accepts_right_answers():
    check.softmax_t(distill.softmax_t)
    check.softmax_t(lambda z, T=1.0: torch.softmax(z / T, dim=-1))
    check.softmax_t(stable_softmax)


@pytest.mark.parametrize(("wrong", "hint"), [
    (lambda z, T: torch.softmax(z, -1), "the temperature is ignored"),
    (lambda z, T: torch.softmax(z * T, -1), "multiplied the logits by T"),
    (lambda z, T: torch.softmax(z, -1) / T, "after the softmax"),
    (lambda z, T: z / T, "apply the softmax"),
    (lambda z, T: torch.softmax(z / T, 0), "wrong axis (dim=0"),
    (lambda z, T: torch.softmax(z / T, 1), "wrong axis (dim=1)"),
    (lambda z, T: torch.exp(z / T), "do not sum to 1"),
    (lambda z, T: torch.exp(z / T) / torch.exp(z / T).sum(-1, keepdim=True), "overflows"),
    (lambda z, T: torch.softmax(z / T, -1)[..., :-1], "the input's shape"),
    (lambda z, T: (torch.softmax(z / T, -1) + 0.01) / 1.05, "differ from softmax(z / T)"),
    (not_implemented, "not implemented yet"),
])
def test_softmax_t_rejects(wrong, hint):
    fails_with(check.softmax_t, wrong, hint=hint)


# ---- exercise 2: the distillation loss -----------------------------------------------------

def loss_from_definition(s, t, T=1.0):
    q = torch.softmax(t / T, -1)
    return -(q * F.log_softmax(s / T, -1)).sum(-1).mean()


distillation_loss = loss_from_definition  # exercise 2, under the lab's name: combined calls it


def test_distillation_loss_accepts_right_answers():
    check.distillation_loss(distill.distillation_loss)
    check.distillation_loss(loss_from_definition)
    # soft targets are allowed by F.cross_entropy
    check.distillation_loss(lambda s, t, T=1.0: F.cross_entropy(s / T, torch.softmax(t / T, -1)))


def kl(a, b, T):  # KL(softmax(b/T) || softmax(a/T)), batch mean, as F.kl_div computes it
    return F.kl_div(F.log_softmax(a / T, -1), torch.softmax(b / T, -1), reduction="batchmean")


@pytest.mark.parametrize(("wrong", "hint"), [
    (lambda s, t, T: -(torch.softmax(t, -1) * F.log_softmax(s / T, -1)).sum(-1).mean(),
     "no temperature on the teacher"),
    (lambda s, t, T: -(torch.softmax(t / T, -1) * F.log_softmax(s, -1)).sum(-1).mean(),
     "no temperature on the student"),
    (lambda s, t, T: loss_from_definition(s, t), "the temperature is ignored"),
    (lambda s, t, T: loss_from_definition(t, s, T), "teacher and student are exchanged"),
    (lambda s, t, T: kl(t, s, T), "teacher and student are exchanged: that is KL(p || q)"),
    (lambda s, t, T: kl(s, t, T), "that is the KL divergence KL(q || p)"),
    (lambda s, t, T: T**2 * loss_from_definition(s, t, T), "belongs to the combined loss"),
    (lambda s, t, T: loss_from_definition(s, t, T) / T**2, "you divided by T^2"),
    (lambda s, t, T: -(torch.softmax(t / T, -1) * F.log_softmax(s / T, -1)).sum(),
     "summed over the batch"),
    (lambda s, t, T: -(torch.softmax(t / T, -1) * F.log_softmax(s / T, -1)).mean(),
     "averaged over the classes too"),
    (lambda s, t, T: -loss_from_definition(s, t, T), "the sign is wrong"),
    (lambda s, t, T: -(torch.softmax(t / T, -1) * F.log_softmax(s / T, -1)).sum(-1),
     "one loss per example"),
    (lambda s, t, T: -(torch.softmax(t / T, -1) * F.log_softmax(s / T, -1)),
     "return a single number"),
    (lambda s, t, T: loss_from_definition(s, t, T).item(), "not a Python number"),
    (lambda s, t, T: loss_from_definition(s.detach(), t, T), "carries no gradient"),
    (lambda s, t, T: loss_from_definition(s, t, T) + 0.001 * (s**2).sum()
     - 0.001 * (s**2).sum().item(), "its gradient"),
    (lambda s, t, T: -(torch.softmax(t / T, -1) * torch.log(torch.softmax(s / T, -1)))
     .sum(-1).mean(), "computed naively"),
    (lambda s, t, T: -(torch.softmax(t / T, -1) * torch.log(
        torch.softmax(s / T, -1).clamp_min(1e-12))).sum(-1).mean(), "clamped"),
    (lambda s, t, T: loss_from_definition(s, t, T) + 0.1, "is too high by"),
    (not_implemented, "not implemented yet"),
])
def test_distillation_loss_rejects(wrong, hint):
    fails_with(check.distillation_loss, wrong, hint=hint)


# ---- exercise 3: the combined loss ---------------------------------------------------------

def combined(s, t, y, T=2.0, alpha=0.5, beta=0.5, *, soft_factor=lambda T: T**2,
             hard=lambda s, y, T: F.cross_entropy(s, y), swap_weights=False, swap_ld=False,
             outer=1.0):
    a, b = (beta, alpha) if swap_weights else (alpha, beta)
    soft = distillation_loss(t, s, T) if swap_ld else distillation_loss(s, t, T)
    return outer * (a * soft_factor(T) * soft + b * hard(s, y, T))


def variant(**kwargs):
    return lambda s, t, y, T=2.0, alpha=0.5, beta=0.5: combined(s, t, y, T, alpha, beta, **kwargs)


def test_combined_loss_accepts_right_answers():
    check.combined_loss(distill.combined_loss)
    check.combined_loss(combined)
    check.combined_loss(lambda s, t, y, T=2.0, alpha=0.5, beta=0.5:
                        alpha * T * T * distill.distillation_loss(s, t, T)
                        + beta * F.nll_loss(F.log_softmax(s, -1), y))


@pytest.mark.parametrize(("wrong", "hint"), [
    (variant(soft_factor=lambda T: 1.0), "the T^2 factor is missing"),
    (variant(soft_factor=lambda T: T), "you multiplied L_d by T"),
    (variant(soft_factor=lambda T: 1 / T**2), "you divided L_d by T^2"),
    (lambda s, t, y, T, a, b: T**2 * combined(s, t, y, T, a, b, soft_factor=lambda T: 1.0),
     "T^2 multiplies the soft term only"),
    (variant(hard=lambda s, y, T: F.cross_entropy(s / T, y)), "ordinary cross-entropy at T = 1"),
    (variant(swap_weights=True), "alpha and beta are exchanged"),
    (lambda s, t, y, T, a, b: combined(s, t, y, T, a, 1 - a), "not 1 - alpha"),
    (lambda s, t, y, T, a, b: combined(s, t, y, T, a, 0.0), "beta * L_s is missing"),
    (lambda s, t, y, T, a, b: combined(s, t, y, T, 0.0, b), "alpha * T^2 * L_d is missing"),
    (variant(swap_ld=True), "in L_d teacher and student are exchanged"),
    (variant(hard=lambda s, y, T: -torch.log(torch.softmax(s, -1))[torch.arange(len(y)), y]
             .mean()), "computed naively"),
    (lambda s, t, y, T, a, b: combined(s, t, y, T, a, b).item(), "not a Python number"),
    (lambda s, t, y, T, a, b: combined(s.detach(), t, y, T, a, b), "carries no gradient"),
    (lambda s, t, y, T, a, b: combined(s, t, y, T, a, b) + 1.0, "Did distillation_loss pass"),
    (not_implemented, "not implemented yet"),
])
def test_combined_loss_rejects(wrong, hint):
    fails_with(check.combined_loss, wrong, hint=hint)


# ---- exercise 4: one distillation step -----------------------------------------------------

combined_loss = distill.combined_loss  # exercise 3, under the lab's name: step() calls it


def step(student, teacher, batch, optimizer, scheduler, temperature=2.0, alpha=0.5, beta=0.5,
         clip=1.0, *, teacher_eval=True, no_grad=True, student_train=True, zero=True,
         zero_after_backward=False, clip_it=True, hard_only=False, defaults=False,
         sched=True, sched_first=False, item=True, swap=False):
    input_ids, attention_mask, labels = batch
    if teacher_eval:
        teacher.eval()
    if not hard_only:
        with torch.set_grad_enabled(not no_grad):
            teacher_logits = teacher(input_ids, attention_mask)
    if student_train:
        student.train()
    if zero:
        optimizer.zero_grad()
    logits = student(input_ids, attention_mask)
    if hard_only:
        loss = F.cross_entropy(logits, labels)
    elif defaults:
        loss = combined_loss(logits, teacher_logits, labels)
    elif swap:
        loss = combined_loss(teacher_logits, logits, labels, temperature, alpha, beta)
    else:
        loss = combined_loss(logits, teacher_logits, labels, temperature, alpha, beta)
    loss.backward()
    if zero_after_backward:
        optimizer.zero_grad()
    if clip_it:
        nn.utils.clip_grad_norm_(student.parameters(), clip)
    if sched and sched_first:
        scheduler.step()
    optimizer.step()
    if sched and not sched_first:
        scheduler.step()
    return loss.item() if item else loss


def svariant(**kwargs):
    return lambda *args: step(*args, **kwargs)


def test_distill_step_accepts_the_right_step():
    check.distill_step(step)


@pytest.mark.parametrize(("kwargs", "hint"), [
    ({"teacher_eval": False}, "teacher is still in training mode"),
    ({"no_grad": False}, "inside `with torch.no_grad():`"),
    ({"student_train": False}, "student is still in evaluation mode"),
    ({"zero": False}, "an earlier backward()"),
    ({"zero_after_backward": True}, "saw no gradient"),
    ({"clip_it": False}, "not clipped"),
    ({"hard_only": True}, "teacher was never called"),
    ({"defaults": True}, "arguments were ignored"),
    ({"swap": True}, "the student first"),
    ({"sched": False}, "scheduler.step() was called 0 times"),
    ({"sched_first": True}, "step the optimiser first"),
    ({"item": False}, "(its .item()), not the tensor"),
])
def test_distill_step_rejects(kwargs, hint):
    fails_with(check.distill_step, svariant(**kwargs), hint=hint)


def test_distill_step_rejects_more():
    def labels_only(student, teacher, batch, optimizer, scheduler, *args):
        teacher.eval()
        with torch.no_grad():
            teacher(*batch[:2])  # called, then ignored
        return step(student, teacher, batch, optimizer, scheduler, *args, hard_only=True)

    fails_with(check.distill_step, labels_only, hint="hard labels only")

    def swapped_no_detach(student, teacher, batch, optimizer, scheduler, T, alpha, beta, clip):
        teacher.eval()
        with torch.no_grad():
            teacher_logits = teacher(*batch[:2])
        student.train()
        optimizer.zero_grad()
        loss = combined(teacher_logits, student(*batch[:2]), batch[2], T, alpha, beta)
        loss.backward()
        nn.utils.clip_grad_norm_(student.parameters(), clip)
        optimizer.step()
        scheduler.step()
        return loss.item()

    fails_with(check.distill_step, swapped_no_detach, hint="check the order of the arguments")
    fails_with(check.distill_step, not_implemented, hint="not implemented yet")

    def twice(*args):
        step(*args)
        return step(*args)

    fails_with(check.distill_step, twice, hint="called 2 times")


def test_distill_step_leaves_the_global_random_state_alone():
    torch.manual_seed(5)
    want = torch.rand(3)
    torch.manual_seed(5)
    check.distill_step(step)
    assert torch.equal(torch.rand(3), want)


# ---- the distilled student against its teacher ---------------------------------------------

@pytest.fixture
def rows():
    g = torch.Generator().manual_seed(0)
    labels = (torch.rand(400, generator=g) < 0.1).long().tolist()
    return [(f"sentence {i}", y, f"review {i}") for i, y in enumerate(labels)]


def scorer(rows, noise: float, seed: int = 0):
    """Scores that rank spoilers higher, blurred by noise."""
    g = torch.Generator().manual_seed(seed)
    table = {t: y + noise * float(torch.randn((), generator=g)) for t, y, _ in rows}
    return lambda texts: torch.tensor([table[t] for t in texts])


def test_keeps_teacher_quality(rows, capsys):
    teacher = scorer(rows, 0.5)
    good = scorer(rows, 0.6, seed=1)
    aucs = check.keeps_teacher_quality(good, teacher, rows, {"bag of words": scorer(rows, 1.0)},
                                       losses=[0.7, 0.5])
    out = capsys.readouterr().out
    assert "bag of words" in out and "bootstrap interval" in out and "✅" in out
    assert set(aucs) == {"teacher", "student", "bag of words"}
    assert metrics.lift_share(aucs["student"], aucs["teacher"]) >= 0.75


def test_keeps_teacher_quality_rejects(rows):
    teacher, good = scorer(rows, 0.5), scorer(rows, 0.6, seed=1)
    fails_with(check.keeps_teacher_quality, scorer(rows, 3.0, seed=2), teacher, rows,
               hint="of the teacher's lift above chance")
    fails_with(check.keeps_teacher_quality, good, teacher, rows, losses=[],
               hint="the student was not trained")
    fails_with(check.keeps_teacher_quality, good, teacher, rows, losses=[0.7, float("nan")],
               hint="NaN or infinite")
    fails_with(check.keeps_teacher_quality, lambda texts: -good(texts), teacher, rows,
               hint="below chance")
    fails_with(check.keeps_teacher_quality, lambda texts: torch.zeros(len(texts)), teacher,
               rows, hint="the same score")
    fails_with(check.keeps_teacher_quality, lambda texts: good(texts)[:-1], teacher, rows,
               hint="one score per sentence")
    fails_with(check.keeps_teacher_quality, lambda texts: good(texts) * float("nan"), teacher,
               rows, hint="NaN or infinite")
    fails_with(check.keeps_teacher_quality, not_implemented, teacher, rows,
               hint="not implemented yet")


def test_keeps_teacher_quality_measures_the_lift_above_chance_not_the_ratio(rows):
    """A weak teacher (ROC-AUC near 0.58) and a student near a coin: the student has 90% of
    the teacher's ROC-AUC (chance alone has 86% of it) but keeps half its lift: it fails."""
    teacher, coin_like = scorer(rows, 3.0), scorer(rows, 6.0, seed=2)
    labels = [y for _, y, _ in rows]
    texts = [t for t, _, _ in rows]
    t_auc = metrics.roc_auc(labels, teacher(texts))
    s_auc = metrics.roc_auc(labels, coin_like(texts))
    assert s_auc / t_auc >= 0.9 and metrics.lift_share(s_auc, t_auc) < 0.75
    fails_with(check.keeps_teacher_quality, coin_like, teacher, rows,
               hint="of the teacher's lift above chance")
    fails_with(check.keeps_teacher_quality, teacher, lambda texts: -teacher(texts), rows,
               hint="not above chance")


def test_keeps_teacher_quality_against_the_bag_of_words_and_a_control(rows, capsys):
    """Lab 07's rule: not behind the bag of words beyond the interval; the labels-only
    control and the bag of words each get a recorded verdict."""
    teacher, good = scorer(rows, 0.5), scorer(rows, 0.6, seed=1)
    check.keeps_teacher_quality(good, teacher, rows,
                                {"bag of words": scorer(rows, 0.7, seed=3),
                                 "labels only": scorer(rows, 0.6, seed=4)},
                                bag_of_words="bag of words", control="labels only", record=True)
    out = capsys.readouterr().out
    assert out.count("95% paired bootstrap interval") == 2 and "not behind the bag of words" in out
    fails_with(check.keeps_teacher_quality, scorer(rows, 0.9, seed=2), teacher, rows,
               {"bag of words": scorer(rows, 0.05, seed=3)}, bag_of_words="bag of words",
               share=0.5, hint="behind the bag of words beyond the bootstrap interval")
    with pytest.raises(ValueError, match="not among the baselines"):
        check.keeps_teacher_quality(good, teacher, rows, {}, bag_of_words="bag of words")

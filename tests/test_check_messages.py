"""A failed lab check reads as one short message with its hint: in Jupyter, two lines (no
traceback through the check or through PyTorch), and the student's unfinished function or
crashing line named."""

from __future__ import annotations

import functools
import re
import traceback

import nbformat
import pytest
import torch

from lmcourse import checks
from lmcourse.checks import CheckFailed
from tools import nbtools
from tools.nbtools import ROOT

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def unfinished(x):
    # YOUR CODE HERE
    raise NotImplementedError("replace this line with your code")


def crashing(x):
    return x / 0


class Head(torch.nn.Module):
    def forward(self, x):
        raise NotImplementedError


def _plain(lines: list[str]) -> str:
    return ANSI.sub("", "\n".join(lines))


def test_render_traceback_is_the_check_and_its_hint():
    err = CheckFailed("configure", "use torch.optim.AdamW, not Adam")
    assert str(err) == "❌ configure: use torch.optim.AdamW, not Adam"
    shown = _plain(err._render_traceback_())
    assert shown == "✗ check failed: configure\nuse torch.optim.AdamW, not Adam"
    assert "Traceback" not in shown
    assert _plain(CheckFailed("just a message")._render_traceback_()) == (
        "✗ check failed: just a message")


def test_fail_raises_check_failed_with_its_parts():
    with pytest.raises(CheckFailed, match="x: hint") as info:
        checks.fail("x", "hint")
    assert (info.value.check, info.value.hint) == ("x", "hint")


def test_a_missing_implementation_names_the_function_deep_in_a_loop():
    """The stub raises inside library code (here functools.reduce, as finetune.fit calls a
    student's train_step): the hint names the student's function, and nothing is chained."""
    def loop():
        return functools.reduce(lambda acc, x: acc + unfinished(x), [1, 2, 3], 0)

    with pytest.raises(CheckFailed) as info:
        checks.attempt("training", loop)
    err = info.value
    assert "not implemented yet: fill in `unfinished`" in err.hint
    assert err.__cause__ is None and err.__suppress_context__
    text = "".join(traceback.format_exception(err))
    assert "During handling" not in text and "NotImplementedError(" not in text
    assert len(err._render_traceback_()) == 2


def test_a_method_is_named_with_its_class():
    with pytest.raises(CheckFailed, match=r"fill in `Head\.forward`"):
        checks.attempt("Head.forward", Head(), torch.zeros(2))


def test_a_crash_names_the_students_line():
    with pytest.raises(CheckFailed) as info:
        checks.attempt("divide", crashing, 1)
    hint = info.value.hint
    assert hint.startswith("your code raised ZeroDivisionError: division by zero")
    assert "in `crashing`" in hint and "`return x / 0`" in hint


def test_run_student_keeps_its_specific_hints_and_does_not_chain():
    def bad_view(x):
        return x.t().view(-1)

    with pytest.raises(CheckFailed, match="not contiguous") as info:
        checks.run_student("view", bad_view, torch.zeros(2, 3))
    assert info.value.__suppress_context__
    with pytest.raises(CheckFailed, match="not implemented yet: fill in `unfinished`"):
        checks.run_student("stub", unfinished, torch.zeros(2))


def test_every_check_failure_suppresses_its_context():
    """Checks that call fail() inside their own `except` blocks don't print the chain."""
    try:
        try:
            raise ValueError("inner")
        except ValueError:
            checks.fail("outer", "a hint")
    except CheckFailed as err:
        assert isinstance(err.__context__, ValueError)  # kept for whoever debugs a check
        assert "inner" not in "".join(traceback.format_exception(err))


def _first_check(fn):
    checks.expect(fn(2) == 4, "doubling", "double the number")
    print("✅ doubling: passed")


def _second_check(fn, first):
    checks.requires("adding", 1, _first_check, first)
    checks.expect(fn(2) == 3, "adding", "add one")


def test_requires_sends_the_student_back_to_the_earliest_failing_exercise(capsys):
    with pytest.raises(CheckFailed) as info:
        _second_check(lambda x: x + 1, lambda x: x * 3)
    err = info.value
    assert (err.check, err.exercise) == ("adding", 1)
    assert err.hint.startswith("pass exercise 1 first") and "double the number" in err.hint
    with pytest.raises(CheckFailed) as info:  # a check that requires that one: still exercise 1
        checks.requires("third", 2, _second_check, lambda x: x + 1, lambda x: x * 3)
    assert info.value.check == "third" and info.value.hint == err.hint
    with pytest.raises(CheckFailed, match="pass exercise 1 first.*ZeroDivisionError"):
        checks.requires("adding", 1, _first_check, crashing)
    assert capsys.readouterr().out == ""


def test_requires_is_quiet_and_leaves_the_random_state_alone(capsys):
    def noisy(_):
        torch.rand(5)
        print("✅ passed")

    torch.manual_seed(3)
    want = torch.rand(2)
    torch.manual_seed(3)
    checks.requires("later", 1, noisy, None)
    assert torch.equal(torch.rand(2), want)
    assert capsys.readouterr().out == ""


class Calling(torch.nn.Module):
    def forward(self, x):
        return through_a_helper(x)


def through_a_helper(x):
    return unfinished(x)


def test_earlier_finds_what_the_students_code_calls_not_a_librarys():
    from lmcourse import metrics

    def roc_auc(y, s):
        return crashing(y)

    assert checks.earlier(roc_auc, "crashing") is crashing
    assert checks.earlier(Calling, "unfinished") is unfinished  # a class, through a helper
    assert checks.earlier(Calling(), "unfinished") is unfinished
    assert checks.earlier(roc_auc, "no_such_name") is None
    assert checks.earlier(metrics.roc_auc, "roc_curve") is None  # the course's, not a lab's


def test_earlier_is_none_for_a_function_the_code_never_calls():
    """A wrong helper elsewhere in the notebook is no cause of this code's failure: no
    "pass exercise N first" for a function the graded code does not call (issue 74)."""
    def roc_auc(y, s):
        return crashing(y)

    assert checks.earlier(Head, "unfinished") is None  # defined in the notebook, never called
    assert checks.earlier(roc_auc, "unfinished") is None
    assert checks.calls(roc_auc, "crashing") and not checks.calls(roc_auc, "unfinished")


@pytest.mark.slow
def test_finetune_lab_student_copy_fails_its_first_check_in_two_lines():
    """Lab 06's student copy, generated from its solution and executed by nbclient up to its
    first check: the check cell's error output is the message and hint, not a traceback."""
    from nbclient import NotebookClient

    solution = ROOT / "labs" / "solutions" / "06_finetune.ipynb"
    student = nbformat.reads(nbtools.student_text(solution), as_version=4)
    first = next(i for i, c in enumerate(student.cells)
                 if "check" in c.metadata.get("tags", []))
    student.cells = student.cells[:first + 1]
    NotebookClient(student, timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(ROOT / "labs")}}).execute()
    errors = [o for o in student.cells[first].outputs if o.output_type == "error"]
    assert [e.ename for e in errors] == ["CheckFailed"]
    shown = _plain(errors[0].traceback)
    assert len(shown.splitlines()) <= 5, shown
    assert shown.startswith("✗ check failed: ReviewClassifier.forward"), shown
    assert "not implemented yet: fill in `ReviewClassifier.forward`" in shown


# ---- failure messages teach without giving the answer ---------------------------------------
#
# Each case plants a wrong implementation that no named mistake matches, so the check falls
# through to its last, general message. The "student" computes the right answer with the
# course's own code and returns something else: the right answer, in the formats the
# messages used to print it, must not appear, and the message must still say what differs.

class Caught:
    """The right answers a planted student computed, to look for in the message."""

    def __init__(self) -> None:
        self.values: list = []

    def keep(self, value):
        self.values.append(value)
        return value


def _shown(value) -> set[str]:
    """The ways a message could print ``value`` (a number, a tensor, a list)."""
    if isinstance(value, torch.Tensor):
        value = value.detach().double()
        if value.numel() == 1:
            return _shown(float(value))
        return ({str(value.int())} if value.dtype == torch.bool else set()) | _shown(
            value.tolist())
    if isinstance(value, float):
        return {f"{value:{f}}" for f in (".6f", ".4f", ".6g", ".10g")} | {str(round(value, 6))}
    if isinstance(value, int) and not isinstance(value, bool):
        return {f"{word} {value}" for word in ("expected", "is", "=", "gives", "should be")}
    if isinstance(value, list) and value and isinstance(value[0], float):
        return {str([round(v, n) for v in value]) for n in (3, 4, 5, 6)}
    if isinstance(value, list) and value and isinstance(value[0], list):
        return set().union(*(_shown(row) for row in value)) | {str(value)}
    return {str(value)}


def _bpe_cases():
    from lmcourse.checks import bpe as check08
    from lmcourse.tokenizers import bpe as ref

    def counts_plus_one(caught):
        def fn(seg):
            counts = dict(ref.pair_frequencies(seg))
            counts[("l", "o")] = caught.keep(counts[("l", "o")]) + 1
            return counts
        return lambda: check08.pair_counts(fn), "('l', 'o'): yours"

    def merge_drops_last(caught):
        return (lambda: check08.merge(
            lambda s, a, b: caught.keep(ref._merge(list(s), a, b))[:-1] or ["?"]),
            "goes wrong at its symbol")

    def learn_last_wrong(caught):
        def fn(words, n):
            merges = ref.train_bpe(words, n)
            caught.keep(merges[-1])
            caught.keep(merges[-1:])
            return merges[:-1] + [merges[0]]
        return lambda: check08.learn_bpe(fn), "merge 12 differs"

    def encode_characters(caught):
        def fn(word, merges):
            caught.keep(ref.apply_bpe(word, merges))
            return list(word)
        return lambda: check08.encode(fn), "goes wrong at its symbol"

    return [("bpe pair_counts", counts_plus_one), ("bpe merge", merge_drops_last),
            ("bpe learn_bpe", learn_last_wrong), ("bpe encode", encode_characters)]


def _autograd_cases():
    import math

    import test_check_autograd as engines

    from lmcourse.checks import autograd as check01
    from lmcourse.checks import autograd_training as training

    def tanh_sign(caught):
        t = math.tanh(0.8)
        caught.keep(0.25 + 0.7 * (1 - t * t))  # (its size is in the student's own -(1 - t²))
        engine = engines.lab_engine(tanh=engines._lab_unary(math.tanh, lambda x, o: o**2 - 1.0,
                                                         "tanh"))
        return lambda: check01.autograd_ops(engine), "the one for x has the wrong sign"

    def backward_skips_the_inputs(caught):
        def backward(self):
            order = engines.lab_topological_order(self)
            for node in order:
                node.grad = 0.0
            self.grad = 1.0
            for node in reversed(order[:-1]):  # the output's own closure is skipped
                node._backward()

        def build(x, y):
            u = x * y + x
            return u.tanh() * y + x * x + (y * u).exp() + x
        for g in check01.torch_gradients(build, [0.5, -1.5])[1]:
            caught.keep(g)
        return lambda: check01.autograd_backward(engines.lab_engine(backward=backward)), (
            "torch.autograd disagrees")

    def relu_always_one(caught):
        engine = engines.lab_engine(relu=engines._lab_unary(lambda x: max(0.0, x),
                                                         lambda x, o: 1.0, "relu"))
        rng = __import__("random").Random(0)
        while True:  # the first expression the check will find wrong, and torch's answer
            expr, xs = check01.random_case(rng)
            value, ref = check01.torch_gradients(expr, xs)
            ins = [engine(v) for v in xs]
            out = check01.evaluate(expr, ins)
            out.backward()
            if max(check01._rel(a, b) for a, b in zip([v.grad for v in ins], ref,
                                                      strict=True)) > 1e-9:
                break
        caught.keep([float(f"{g:.10g}") for g in ref])
        return lambda: check01.autograd_against_torch(engine), "against torch.autograd"

    def square_wrong(caught):
        def pow_(self, k):
            out = engines._lab_pow(self, k)
            if k == 2:  # right for the exponents exercise 1 tries, wrong for y ** 2
                def _backward():
                    self.grad += self.data * out.grad
                out._backward = _backward
            return out
        value, ref = check01.torch_gradients(lambda x, y: (x + y) * x * y**2, [1.0, 2.0])
        caught.keep(f"({ref[0]:g}, {ref[1]:g})")
        return lambda: check01.autograd_worked_example(engines.lab_engine(__pow__=pow_)), (
            "df/dy is too low")

    def half_steps(caught):
        from lmcourse.autograd import Value

        caught.keep([round(r, 6) for r in training._descend(Value, 0.5, 40)[1]])
        return lambda: check01.autograd_training(
            lambda p, f, lr, n: engines.good_train(p, f, lr * 0.9, n), Value), "w is too"

    return [("autograd local derivative", tanh_sign),
            ("autograd backward", backward_skips_the_inputs),
            ("autograd random expressions", relu_always_one),
            ("autograd worked example", square_wrong), ("autograd training", half_steps)]


def _tensor_cases():
    import numpy as np
    import torch.nn.functional as F

    from lmcourse import metrics
    from lmcourse.checks import attention as check05
    from lmcourse.checks import char_rnn_sampling as check02
    from lmcourse.checks import distill as check07
    from lmcourse.checks import gpt_block as check09
    from lmcourse.checks import spoilers as check03
    from lmcourse.checks import word2vec as check04
    from lmcourse.models import attention as att
    from lmcourse.models import distill as dist
    from lmcourse.models.recall import query_loss

    def padding(caught):
        def fn(lengths, n):
            mask = caught.keep(att.padding_mask(lengths, n)).clone()
            mask[-1] = True
            return mask
        return lambda: check05.masks(fn, att.causal_mask), "which is wrong in row"

    def causal(caught):
        def fn(T):
            mask = caught.keep(att.causal_mask(T)).clone()
            mask[-1, 0] = False
            return mask
        return lambda: check05.masks(att.padding_mask, fn), "which is wrong in row 3"

    def softmax_t(caught):
        def fn(z, T):
            p = caught.keep(dist.softmax_t(z, T))
            caught.keep(p[0, 0])
            return (p + 0.01 * torch.arange(p.shape[-1])) / (1 + 0.01 * 10)
        return lambda: check07.softmax_t(fn), "yours for the first row"

    def distillation(caught):
        return (lambda: check07.distillation_loss(
            lambda s, t, T: caught.keep(dist.distillation_loss(s, t, T)) * 1.03),
            "is too high by about 3%")

    def combined(caught):
        return (lambda: check07.combined_loss(
            lambda s, t, y, T, a, b: caught.keep(dist.combined_loss(s, t, y, T, a, b)) * 0.97),
            "is too low by about 3%")

    def recall(caught):
        return (lambda: check09.recall_loss(
            lambda lo, t: caught.keep(query_loss(lo, t)) * 1.05), "is too high by about 5%")

    def sampler(caught):
        def fn(logits, T, g):
            caught.keep(torch.softmax(logits.double() / T, 0)) if T else None
            if T == 0:
                return int(logits.argmax())
            p = torch.softmax(logits / T, 0) * 0.5 + 0.1
            return int(torch.multinomial(p, 1, generator=g))
        return lambda: check02.sample_token(fn), "too rarely"

    def weight(caught):
        return (lambda: check03.positive_weight(
            lambda y: caught.keep(float((y == 0).sum() / (y == 1).sum())) - 1), "too low by")

    def f1(caught):
        return (lambda: check03.f1(lambda y, p: caught.keep(metrics.f1_score(y, p)) + 0.01),
                "too high")

    def auc(caught):
        return (lambda: check03.roc_auc(
            lambda y, s: caught.keep(metrics.roc_auc(y, s)) * 0.98), "is too low by about 2%")

    def pad(caught):
        def fn(seqs, pad_id):
            n = max(map(len, seqs))
            ids = torch.tensor([s + [pad_id] * (n - len(s)) for s in seqs])
            caught.keep(ids.tolist()[1])  # the row the student gets wrong
            caught.keep(str(ids.tolist()))
            ids[1, 1] = 7
            return ids, torch.tensor([len(s) for s in seqs])
        return lambda: check03.pad_batch(fn, 1), "row(s) [1] are wrong"

    def ns_loss(caught):
        def fn(v, u_pos, u_neg):
            pos, neg = (u_pos * v).sum(-1), (u_neg * v.unsqueeze(1)).sum(-1)
            right = -(F.logsigmoid(pos) + F.logsigmoid(-neg).sum(-1)).mean()
            return caught.keep(right) * 1.1
        return lambda: check04.ns_loss(fn), "is too high by about 10%"

    def noise(caught):
        def fn(c):
            p = caught.keep(c ** 0.75 / (c ** 0.75).sum())
            caught.keep(np.round(p, 5).tolist())
            return np.r_[p[:-2], p[-1], p[-2]]
        return lambda: check04.noise_distribution(fn), "the most wrong is word"

    def discard(caught):
        def fn(c, t):
            p = caught.keep(np.maximum(0.0, 1 - np.sqrt(t / (c / c.sum()))))
            caught.keep(np.round(p, 4).tolist())
            return p * 0.9
        return lambda: check04.discard_probability(fn), "too low by about 10%"

    return [("attention padding mask", padding), ("attention causal mask", causal),
            ("distill softmax_t", softmax_t), ("distill loss", distillation),
            ("distill combined loss", combined), ("gpt recall loss", recall),
            ("char-rnn sampling", sampler), ("spoilers weight", weight), ("spoilers f1", f1),
            ("spoilers auc", auc), ("spoilers padding", pad), ("word2vec loss", ns_loss),
            ("word2vec noise", noise), ("word2vec discard", discard)]


ANSWER_CASES = _bpe_cases() + _autograd_cases() + _tensor_cases()


@pytest.mark.parametrize("plant", [c[1] for c in ANSWER_CASES],
                         ids=[c[0] for c in ANSWER_CASES])
def test_a_failure_message_does_not_give_the_answer(plant):
    caught = Caught()
    run, says = plant(caught)
    with pytest.raises(CheckFailed) as info:
        run()
    message = str(info.value)
    assert "pass exercise" not in message, message  # the planted mistake is this check's
    assert says in message, message
    assert caught.values, "the planted student never computed the right answer"
    shown = set().union(*(_shown(v.tolist() if hasattr(v, "tolist") and not isinstance(
        v, torch.Tensor) else v) for v in caught.values))
    leaked = sorted(s for s in shown if len(s) >= 3 and s in message)
    assert not leaked, f"the answer {leaked} is in the message:\n{message}"

"""Mutation tests of the labs' checks (issue 58): a grader can trust them.

Each case plants one mistake in a lab's solution (the copies with switchable mistakes in
``tests/test_check_*.py``) and runs the check the lab calls after that exercise. It must
fail (no false pass) with a :class:`CheckFailed`, never another exception (no traceback),
whose message names this mistake (no misdiagnosis): a mistake in an earlier exercise's
function is sent back to that exercise ("pass exercise N first") with its own hint.

A lab's notebook defines its exercises side by side, and a later one calls an earlier one
by name; :func:`in_notebook` plants a mistake there, where the checks look it up.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from types import FunctionType
from typing import Any

import numpy as np
import pytest
import test_check_attention as attention
import test_check_autograd as autograd
import test_check_bpe as bpe
import test_check_char_rnn as char_rnn
import test_check_distill as distill
import test_check_finetune as finetune
import test_check_gpt_block as gpt_block
import test_check_spoilers as spoilers
import test_check_word2vec as word2vec
import torch
import torch.nn.functional as F

from lmcourse.autograd import Value
from lmcourse.checks import CheckFailed
from lmcourse.checks import attention as check05
from lmcourse.checks import autograd as check01
from lmcourse.checks import bpe as check08
from lmcourse.checks import char_rnn as check02
from lmcourse.checks import distill as check07
from lmcourse.checks import finetune as check06
from lmcourse.checks import gpt_block as check09
from lmcourse.checks import spoilers as check03
from lmcourse.checks import word2vec as check04
from lmcourse.checks import word2vec_sampling as check04b

LABS = [f"{n:02d}" for n in range(1, 10)]
MIN_PER_LAB = 8


def in_notebook(code: Any, **earlier: Any) -> Any:
    """``code`` (a function or a class) as if defined in a notebook whose earlier
    exercises' functions are ``earlier``: the names it calls resolve to them."""
    if isinstance(code, type):
        methods = {k: in_notebook(v, **earlier) for k, v in vars(code).items()
                   if isinstance(v, FunctionType)}
        return type(code.__name__, (code,), methods)
    return FunctionType(code.__code__, {**code.__globals__, **earlier}, code.__name__,
                        code.__defaults__, code.__closure__)


@dataclass(frozen=True)
class Planted:
    """One planted mistake: the lab, what is wrong, the check run on it, and the parts of
    the message that name it."""

    lab: str
    mistake: str
    run: Callable[[pytest.MonkeyPatch], Any]
    says: tuple[str, ...]


def planted(lab: str, mistake: str, run: Callable[[pytest.MonkeyPatch], Any],
            *says: str) -> Planted:
    return Planted(lab, mistake, run, says)


def patched(name: str, impl: Any, then: Callable[[], Any]) -> Callable[..., Any]:
    """Lab 01's engine with one method of ``Value`` replaced, then ``then()``."""
    def run(monkeypatch: pytest.MonkeyPatch) -> Any:
        monkeypatch.setattr(Value, name, impl)
        return then()
    return run


def plain(then: Callable[[], Any]) -> Callable[..., Any]:
    return lambda _monkeypatch: then()


# ---- lab 01: the autograd engine -------------------------------------------------------

_OPS = autograd.OPS_BROKEN
_MUL_SWAPPED, _TANH_X = _OPS["mul swapped"][1], _OPS["tanh 1 - x^2"][1]


def _ops() -> None:
    check01.autograd_ops(Value)


AUTOGRAD = [
    planted("01", "`=` instead of `+=` in __add__", patched("__add__", _OPS["add with ="][1], _ops),
            "in a + b, the parents' grads were overwritten: use `+=`"),
    planted("01", "the factors of __mul__ swapped", patched("__mul__", _MUL_SWAPPED, _ops),
            "the factors are swapped"),
    planted("01", "tanh's derivative from the input", patched("tanh", _TANH_X, _ops),
            "not 1 - x²"),
    planted("01", "exp's derivative from the input", patched("exp", _OPS["exp uses x"][1], _ops),
            "which is the output `out.data`, not the input x"),
    planted("01", "the power rule without k", patched("__pow__", _OPS["pow without k"][1], _ops),
            "the factor k is missing"),
    planted("01", "a node listed before its parents", plain(
        lambda: check01.autograd_topological_order(autograd.preorder, Value)),
        "the output comes first"),
    planted("01", "no visited set", plain(
        lambda: check01.autograd_topological_order(autograd.no_visited_set, Value)),
        "a node appears more than once"),
    planted("01", "backward in forward order", patched(
        "backward", autograd.forward_order, lambda: check01.autograd_backward(Value)),
        "call _backward in REVERSE topological order"),
    planted("01", "backward without resetting the grads", patched(
        "backward", autograd.no_reset, lambda: check01.autograd_backward(Value)),
        "calling backward a second time changed the grads"),
    planted("01", "backward without the base case", patched(
        "backward", autograd.no_base_case, lambda: check01.autograd_backward(Value)),
        "the base case z^ω = dω/dω = 1"),
    planted("01", "the worked example over a broken __mul__", patched(
        "__mul__", _MUL_SWAPPED, lambda: check01.autograd_worked_example(Value)),
        "worked example: pass exercise 1 first", "the factors are swapped"),
    planted("01", "the worked example over a broken backward", patched(
        "backward", autograd.forward_order, lambda: check01.autograd_worked_example(Value)),
        "worked example: pass exercise 3 first", "REVERSE topological order"),
    planted("01", "training that ignores the learning rate", plain(
        lambda: check01.autograd_training(autograd.no_lr, Value)),
        "the step ignored the learning rate"),
    planted("01", "training up the gradient", plain(
        lambda: check01.autograd_training(autograd.uphill, Value)), "stepped *up* the gradient"),
    planted("01", "the loss graph built once", plain(
        lambda: check01.autograd_training(autograd.stale_graph, Value)),
        "the loss graph was built once, before the loop"),
    planted("01", "random expressions over a broken tanh", patched(
        "tanh", _TANH_X, lambda: check01.autograd_against_torch(Value)),
        "pass exercise 1 first", "not 1 - x²"),
]


# ---- lab 02: the character RNN ---------------------------------------------------------

def _no_b_hh(x, h, W_ih, W_hh, b_ih, b_hh):
    return torch.tanh(x @ W_ih.T + b_ih + h @ W_hh.T)


def _train_step(**mistake: Any) -> Callable[..., Any]:
    return plain(lambda: check02.train_step(char_rnn.make_train_step(**mistake),
                                            char_rnn.rnn_forward))


CHAR_RNN = [
    planted("02", "rnn_step without tanh", plain(lambda: check02.rnn_step(
        lambda x, h, Wi, Wh, bi, bh: x @ Wi.T + bi + h @ Wh.T + bh)), "the tanh is missing"),
    planted("02", "W_hh not transposed", plain(lambda: check02.rnn_step(
        lambda x, h, Wi, Wh, bi, bh: torch.tanh(x @ Wi.T + bi + h @ Wh + bh))),
        "W_hh is not transposed"),
    planted("02", "rnn_step without b_hh", plain(lambda: check02.rnn_step(_no_b_hh)),
            "b_hh is missing"),
    planted("02", "train_step over an rnn_step without b_hh (issue 58: a 30-line traceback)",
            plain(lambda: check02.train_step(char_rnn.make_train_step(), in_notebook(
                char_rnn.make_forward(), rnn_step=_no_b_hh))),
            "pass exercise 1 first", "b_hh is missing"),
    planted("02", "a trained model over an rnn_step without b_hh", plain(
        lambda: check02.beats_bigram(in_notebook(char_rnn.make_forward(), rnn_step=_no_b_hh), {},
                                     [], [], 5)),
        "trained model: pass exercise 1 first", "b_hh is missing"),
    planted("02", "the state not detached", _train_step(detach=False),
            "the incoming state was not detached"),
    planted("02", "the state reset every minibatch", _train_step(reset=True),
            "the state was reset to zero"),
    planted("02", "clipping after optimizer.step() (issue 58: passed)",
            _train_step(clip_after_step=True), "clipped only after optimizer.step()"),
    planted("02", "no zero_grad", _train_step(zero_grad=False),
            "the gradients still hold the previous minibatch's values"),
    planted("02", "the summed cross-entropy", _train_step(reduction="sum"),
            "use the MEAN cross-entropy"),
    planted("02", "logits multiplied by T", plain(
        lambda: check02.sample_token(char_rnn.multiply_logits)), "don't multiply"),
    planted("02", "probabilities divided by T", plain(
        lambda: check02.sample_token(char_rnn.divide_probabilities)), "divide the LOGITS by T"),
]


# ---- lab 03: spoilers ------------------------------------------------------------------

def _pad_left(seqs, pad_id):
    ids, lengths = spoilers.pad_right(seqs, pad_id)
    for row, n in enumerate(lengths.tolist()):
        ids[row] = torch.roll(ids[row], ids.shape[1] - n)
    return ids, lengths


def _padded_lengths(seqs, pad_id):
    ids, _ = spoilers.pad_right(seqs, pad_id)
    return ids, torch.full((len(seqs),), ids.shape[1])


SPOILERS = [
    planted("03", "padding on the left", plain(lambda: check03.pad_batch(_pad_left, 1)),
            "padding is on the left"),
    planted("03", "the padded lengths", plain(lambda: check03.pad_batch(_padded_lengths, 1)),
            "lengths are the REAL lengths"),
    planted("03", "the LSTM reads the padding", plain(
        lambda: check03.spoiler_model(spoilers.NoPacking, 1)), "the LSTM read the padding"),
    planted("03", "the last time step as the summary", plain(
        lambda: check03.spoiler_model(spoilers.LastStep, 1)), "you used output[:, -1]"),
    planted("03", "the two directions swapped", plain(
        lambda: check03.spoiler_model(spoilers.Swapped, 1)), "the two directions are swapped"),
    planted("03", "the class weight inverted", plain(lambda: check03.positive_weight(
        lambda y: float((y == 1).sum() / (y == 0).sum()))), "the ratio is inverted"),
    planted("03", "FPR and TPR swapped", plain(
        lambda: check03.roc_curve(lambda y, s: spoilers.right_curve(y, s)[::-1])),
        "FPR and TPR are swapped"),
    planted("03", "ties split one example at a time", plain(
        lambda: check03.roc_curve(spoilers.per_sample_curve)), "tied scores are split"),
    planted("03", "roc_auc over a curve with split ties", plain(lambda: check03.roc_auc(
        in_notebook(spoilers.roc_auc, roc_curve=spoilers.per_sample_curve))),
        "pass exercise 5's roc_curve first", "tied scores are split"),
    planted("03", "the AUC of hard predictions", plain(lambda: check03.roc_auc(
        lambda y, s: spoilers.metrics.roc_auc(y, (s >= 0.5).long()))), "hard 0/1 predictions"),
]


# ---- lab 04: word2vec ------------------------------------------------------------------

def _loss_plus_on_negatives(v, u_pos, u_neg):
    pos, neg = word2vec._scores(v, u_pos, u_neg)
    return -(F.logsigmoid(pos) + F.logsigmoid(neg).sum(-1)).mean()


def _keep_probability(counts, t):
    return np.minimum(1.0, np.sqrt(t / (counts / counts.sum())))


WORD2VEC = [
    planted("04", "the center paired with itself", plain(lambda: check04.skipgram_pairs(
        word2vec._offsets_pairs(lambda w: range(-w, w + 1)))), "paired with itself"),
    planted("04", "one side of the window", plain(lambda: check04.skipgram_pairs(
        word2vec._offsets_pairs(lambda w: range(1, w + 1)))), "only one side of the window"),
    planted("04", "no minus for the noise words", plain(
        lambda: check04.ns_loss(_loss_plus_on_negatives)), "MINUS inside"),
    planted("04", "the summed loss", plain(lambda: check04.ns_loss(
        lambda v, up, un: word2vec.ns_loss(v, up, un) * len(v))), "MEAN over the B pairs"),
    planted("04", "no zero_grad", plain(
        lambda: check04.train_step(word2vec.make_train_step(zero_grad=False))),
        "optimizer.zero_grad()"),
    planted("04", "contexts looked up in emb_in", plain(
        lambda: check04.train_step(word2vec.make_train_step(out_table="in"))),
        "emb_in for the centers and emb_out"),
    planted("04", "a step over a wrong ns_loss", plain(lambda: check04.train_step(
        in_notebook(word2vec.make_train_step(), ns_loss=_loss_plus_on_negatives))),
        "pass exercise 2 first", "MINUS inside"),
    planted("04", "training with pairs from one side", plain(lambda: check04.learns_clusters(
        word2vec._offsets_pairs(lambda w: range(1, w + 1)), word2vec.train_step)),
        "pass exercise 1 first", "only one side of the window"),
    planted("04", "the noise distribution without the 3/4 power", plain(
        lambda: check04b.noise_distribution(lambda c: c / c.sum())), "raise the counts"),
    planted("04", "the keep probability for the discard one", plain(
        lambda: check04b.discard_probability(_keep_probability)),
        "this is the probability of KEEPING the word"),
]


# ---- lab 05: attention -----------------------------------------------------------------

_FLIPPED = attention.make_attention(mask_mode="flipped")
_RESHAPED = attention.make_mha(split=lambda x, h: x.reshape(x.shape[0], h, x.shape[1], -1))

ATTENTION = [
    planted("05", "no 1/√d",
            plain(lambda: check05.attention(attention.make_attention(scale="none"))),
            "the 1/√d scale is missing"),
    planted("05", "softmax over the queries", plain(
        lambda: check05.attention(attention.make_attention(axis=-2))),
        "softmax over the wrong axis"),
    planted("05", "k.T for the keys", plain(
        lambda: check05.attention(attention.make_attention(transpose="T"))), "k.T, which reverses"),
    planted("05", "the causal mask's upper triangle", plain(lambda: check05.masks(
        attention.padding_mask, lambda T: torch.ones(T, T, dtype=torch.bool).triu())),
        "this is the upper triangle"),
    planted("05", "the padding mask off by one", plain(lambda: check05.masks(
        lambda lengths, n: torch.arange(n)[None] <= lengths[:, None], attention.causal_mask)),
        "off by one"),
    planted("05", "the mask's polarity reversed", plain(
        lambda: check05.masked_attention(_FLIPPED)), "mask polarity: True means attention is"),
    planted("05", "the mask applied after the softmax", plain(
        lambda: check05.masked_attention(attention.make_attention(mask_mode="after"))),
        "the mask was applied after the softmax"),
    planted("05", "heads split by a plain reshape", plain(lambda: check05.heads(
        lambda x, h: x.reshape(x.shape[0], h, x.shape[1], -1), attention.merge_heads)),
        "you reshaped straight to (B, heads, T, E/heads)"),
    planted("05", "no output projection", plain(
        lambda: check05.multi_head_attention(attention.make_mha(out_proj=False))),
        "the output projection is missing"),
    planted("05", "multi-head attention over a reversed mask", plain(
        lambda: check05.multi_head_attention(in_notebook(attention.MultiHeadAttention,
                                                         attention=_FLIPPED))),
        "pass exercise 3 first", "mask polarity"),
    planted("05", "causal self-attention over a reversed mask (issue 58: 'the diagonal of "
                  "the causal mask must be True')", plain(lambda: check05.causal_self_attention(
                      attention.causal_self_attention,
                      in_notebook(attention.MultiHeadAttention, attention=_FLIPPED))),
            "causal self-attention: pass exercise 3 first", "mask polarity"),
    planted("05", "causal self-attention over a layer that splits by reshape", plain(
        lambda: check05.causal_self_attention(attention.causal_self_attention, _RESHAPED)),
        "pass exercise 5 first", "without the transpose"),
    planted("05", "self-attention without the causal mask", plain(
        lambda: check05.causal_self_attention(lambda mha, x: mha(x, x, x)[0],
                                              attention.MultiHeadAttention)), "the future leaks"),
]


# ---- lab 06: fine-tuning ---------------------------------------------------------------

FINETUNE = [
    planted("06", "no attention mask", plain(lambda: check06.classifier(finetune.NoMask)),
            "attention_mask was not passed"),
    planted("06", "the mean of the tokens", plain(lambda: check06.classifier(finetune.MeanPooled)),
            "mean of the token vectors"),
    planted("06", "the pooler's output", plain(lambda: check06.classifier(finetune.Pooler)),
            "you used pooler_output"),
    planted("06", "no dropout", plain(lambda: check06.classifier(finetune.NoDropout)),
            "apply self.dropout"),
    planted("06", "no model.train()", plain(
        lambda: check06.train_step(finetune.variant(train=False))), "call model.train()"),
    planted("06", "clipping after optimizer.step()", plain(
        lambda: check06.train_step(finetune.variant(clip_after_step=True))), "not clipped"),
    planted("06", "the class weight ignored", plain(
        lambda: check06.train_step(finetune.variant(weighted=False))), "class_weight was ignored"),
    planted("06", "the scheduler before the optimiser", plain(
        lambda: check06.train_step(finetune.variant(sched_first=True))),
        "step the optimiser first"),
    planted("06", "predicting with dropout on", plain(
        lambda: check06.predict_proba(finetune.pvariant(evaluate=False))), "dropout is still on"),
    planted("06", "P(class 0) for P(class 1)", plain(lambda: check06.predict_proba(
        finetune.pvariant(transform=lambda z: torch.softmax(z, -1)[:, 0]))), "that is P(class 0)"),
]


# ---- lab 07: distillation --------------------------------------------------------------

_NO_T2 = distill.variant(soft_factor=lambda T: 1.0)

DISTILL = [
    planted("07", "the temperature ignored", plain(
        lambda: check07.softmax_t(lambda z, T: torch.softmax(z, -1))),
        "the temperature is ignored"),
    planted("07", "the probabilities divided by T", plain(
        lambda: check07.softmax_t(lambda z, T: torch.softmax(z, -1) / T)), "after the softmax"),
    planted("07", "no temperature on the teacher", plain(lambda: check07.distillation_loss(
        lambda s, t, T: distill.loss_from_definition(s, t * T, T))),
        "no temperature on the teacher"),
    planted("07", "the log of a softmax", plain(lambda: check07.distillation_loss(
        lambda s, t, T: -(torch.softmax(t / T, -1) * torch.log(torch.softmax(s / T, -1)))
        .sum(-1).mean())), "computed naively"),
    planted("07", "a distillation loss over a softmax_t without T", plain(
        lambda: check07.distillation_loss(in_notebook(
            lambda s, t, T=1.0: -(softmax_t(t, T) * F.log_softmax(s / T, -1)).sum(-1).mean(),  # noqa: F821
            softmax_t=lambda z, T=1.0: torch.softmax(z, -1)))),
        "pass exercise 1 first", "the temperature is ignored"),
    planted("07", "no T²", plain(lambda: check07.combined_loss(_NO_T2)),
            "the T^2 factor is missing"),
    planted("07", "alpha and beta exchanged", plain(
        lambda: check07.combined_loss(distill.variant(swap_weights=True))),
        "alpha and beta are exchanged"),
    planted("07", "a combined loss over a distillation loss with the teacher untempered", plain(
        lambda: check07.combined_loss(in_notebook(distill.combined, distillation_loss=(
            lambda s, t, T=1.0: distill.loss_from_definition(s, t * T, T))))),
        "pass exercise 2 first", "no temperature on the teacher"),
    planted("07", "a step over a combined loss without T² (issue 58: blamed the argument "
                  "order)", plain(lambda: check07.distill_step(
                      in_notebook(distill.step, combined_loss=_NO_T2))),
            "pass exercise 3 first", "the T^2 factor is missing"),
    planted("07", "the teacher in training mode", plain(
        lambda: check07.distill_step(distill.svariant(teacher_eval=False))),
        "the teacher is still in training mode"),
    planted("07", "the teacher with gradients", plain(
        lambda: check07.distill_step(distill.svariant(no_grad=False))),
        "inside `with torch.no_grad():`"),
]


# ---- lab 08: byte-pair encoding --------------------------------------------------------

def _merge_first_only(symbols, a, b):
    return bpe.merge(symbols, a, b, first_only=True)


BPE = [
    planted("08", "pair counts not weighted", plain(lambda: check08.pair_counts(
        lambda s: bpe.pair_counts(s, weighted=False))), "weight it by its count"),
    planted("08", "distinct pairs per word", plain(lambda: check08.pair_counts(
        lambda s: bpe.pair_counts(s, distinct=True))), "must count twice"),
    planted("08", "only the first occurrence merged", plain(
        lambda: check08.merge(_merge_first_only)), "only the first occurrence"),
    planted("08", "merged from the right", plain(lambda: check08.merge(
        lambda s, a, b: bpe.merge(s, a, b, from_right=True))), "merged from the right"),
    planted("08", "the counts never recomputed", plain(lambda: check08.learn_bpe(
        lambda w, n: bpe.learn_bpe(w, n, recount=False))),
        "the most frequent pairs of the FIRST"),
    planted("08", "ties broken alphabetically", plain(lambda: check08.learn_bpe(
        lambda w, n: bpe.learn_bpe(w, n, alphabetical_ties=True))), "ties were broken"),
    planted("08", "learning over a merge of the first occurrence", plain(
        lambda: check08.learn_bpe(in_notebook(bpe.learn_bpe, merge=_merge_first_only))),
        "pass exercise 2 first", "only the first occurrence"),
    planted("08", "learning over unweighted counts", plain(lambda: check08.learn_bpe(
        in_notebook(bpe.learn_bpe, pair_counts=lambda s: bpe.pair_counts(s, weighted=False)))),
        "pass exercise 1 first", "weight it by its count"),
    planted("08", "encoding by longest match", plain(lambda: check08.encode(
        lambda w, m: bpe.encode(w, m, longest=True))), "longest"),
    planted("08", "the merges replayed in reverse", plain(lambda: check08.encode(
        lambda w, m: bpe.encode(w, m, order="reversed"))), "order"),
    planted("08", "encoding over a merge of the first occurrence", plain(
        lambda: check08.encode(in_notebook(bpe.encode, merge=_merge_first_only))),
        "encode: pass exercise 2 first", "only the first occurrence"),
]


# ---- lab 09: a tiny GPT ----------------------------------------------------------------

def _recall_sum(logits, targets):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                           ignore_index=gpt_block.IGNORE, reduction="sum")


GPT_BLOCK = [
    planted("09", "no causal mask", plain(
        lambda: check09.causal_self_attention(gpt_block.make_attention("no mask"))),
        "your model sees the future"),
    planted("09", "no 1/√d", plain(
        lambda: check09.causal_self_attention(gpt_block.make_attention("no scale"))),
        "the 1/√d scale is missing"),
    planted("09", "the mask after the softmax", plain(
        lambda: check09.causal_self_attention(gpt_block.make_attention("mask after softmax"))),
        "the mask was applied after the softmax"),
    planted("09", "heads split by a plain reshape (issue 58: 'your model sees the future')",
            plain(lambda: check09.causal_self_attention(
                gpt_block.make_attention("split without transpose"))),
            "the heads were split by reshaping B x T x E straight to"),
    planted("09", "post-norm", plain(lambda: check09.block(gpt_block.make_block("post-norm"))),
            "this is post-norm"),
    planted("09", "no residuals",
            plain(lambda: check09.block(gpt_block.make_block("no residuals"))),
            "no residual connections"),
    planted("09", "a block over an attention without 1/√d", plain(lambda: check09.block(
        gpt_block.make_block(attention=gpt_block.make_attention("no scale")))),
        "pass exercise 1 first", "the 1/√d scale is missing"),
    planted("09", "no position embeddings", plain(
        lambda: check09.tiny_gpt(gpt_block.make_gpt("no positions"))), "no position embeddings"),
    planted("09", "a model over a post-norm block", plain(lambda: check09.tiny_gpt(
        gpt_block.make_gpt(block=gpt_block.make_block("post-norm")))),
        "pass exercise 2 first", "this is post-norm"),
    planted("09", "the summed recall loss", plain(lambda: check09.recall_loss(_recall_sum)),
            "you summed the per-query losses"),
    planted("09", "training a model without positions", plain(lambda: check09.beats_lstm(
        gpt_block.make_gpt("no positions"), gpt_block.recall_loss, 4, 1, progress=False)),
        "pass exercise 3 first", "no position embeddings"),
]

PLANTED = (AUTOGRAD + CHAR_RNN + SPOILERS + WORD2VEC + ATTENTION + FINETUNE + DISTILL + BPE
           + GPT_BLOCK)


@pytest.mark.parametrize("case", PLANTED, ids=[f"{p.lab}: {p.mistake}" for p in PLANTED])
def test_a_planted_mistake_fails_with_its_own_message(case: Planted, monkeypatch) -> None:
    with pytest.raises(CheckFailed) as info:  # anything else would show a traceback
        case.run(monkeypatch)
    err = info.value
    for part in case.says:
        assert part in str(err), f"{case.mistake}: expected {part!r} in\n{err}"
    assert len(err._render_traceback_()) == 2, "shown as the check and its hint"
    if "pass exercise" not in case.says[0]:
        assert "pass exercise" not in str(err), f"{case.mistake}: sent back wrongly\n{err}"


def test_every_lab_has_enough_planted_mistakes() -> None:
    counts = Counter(p.lab for p in PLANTED)
    assert {lab: counts[lab] for lab in LABS if counts[lab] < MIN_PER_LAB} == {}


def test_each_planted_mistake_of_a_lab_has_a_message_of_its_own() -> None:
    seen = Counter((p.lab, p.says) for p in PLANTED)
    assert [key for key, n in seen.items() if n > 1] == []


def test_in_notebook_rebinds_the_names_a_function_calls() -> None:
    def outer(x):
        return inner(x) + 1  # noqa: F821 - resolved in the notebook's namespace

    assert in_notebook(outer, inner=lambda x: 2 * x)(3) == 7
    assert math.isclose(in_notebook(outer, inner=math.sqrt)(4.0), 3.0)

"""Lab 02 checks: the right answers pass; typical wrong answers fail with a specific hint."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from lmcourse.checks import CheckFailed
from lmcourse.checks import char_rnn as check
from lmcourse.data import Vocab, load_corpus
from lmcourse.models.ngram_tuning import best_ngram
from lmcourse.train import clip_gradients


def fails_with(fn, *args, hint: str) -> str:
    with pytest.raises(CheckFailed) as info:
        fn(*args)
    assert hint in str(info.value), str(info.value)
    return str(info.value)


# ---- the lab's solution (the same code as labs/solutions/02_char_rnn.py) ------

def rnn_step(x, h, W_ih, W_hh, b_ih, b_hh):
    return torch.tanh(x @ W_ih.T + b_ih + h @ W_hh.T + b_hh)


def make_forward(step=None):
    """The lab's given model, running ``step`` (by default the lab's name, rnn_step)."""
    def rnn_forward(params, X, state=None):
        W_ih, W_hh = params["W_ih"], params["W_hh"]
        h = (X.new_zeros(X.shape[0], W_hh.shape[0], dtype=W_ih.dtype)
             if state is None else state)
        outputs = []
        for x_t in F.one_hot(X.T, W_ih.shape[1]).to(W_ih.dtype):
            h = (step or rnn_step)(x_t, h, W_ih, W_hh, params["b_ih"], params["b_hh"])
            outputs.append(h)
        return torch.stack(outputs, dim=1) @ params["W_hq"] + params["b_q"], h
    return rnn_forward


rnn_forward = make_forward(rnn_step)


def make_train_step(detach=True, reset=False, zero_grad=True, clip_it=True, reduction="mean",
                    return_state="final", clip_after_step=False):
    def train_step(params, optimizer, X, Y, state, clip=1.0):
        if reset:
            state = None
        if detach and state is not None:
            state = state.detach()
        logits, new_state = rnn_forward(params, X, state)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), Y.reshape(-1),
                               reduction=reduction)
        if zero_grad:
            optimizer.zero_grad()
        loss.backward()
        if clip_it and not clip_after_step:
            clip_gradients(params.values(), clip)
        optimizer.step()
        if clip_after_step:  # too late: the step has used the unclipped gradients
            clip_gradients(params.values(), clip)
        out = {"final": new_state, "zeros": torch.zeros_like(new_state), "none": None}
        return loss.item(), out[return_state]
    return train_step


def sample_token(logits, temperature, generator=None):
    if temperature == 0:
        return int(logits.argmax())
    probs = torch.softmax(logits / temperature, dim=-1)
    return int(torch.multinomial(probs, 1, generator=generator))


# ---- exercise 1 ---------------------------------------------------------------------------

def test_rnn_step_accepts_the_right_answer(capsys):
    check.rnn_step(rnn_step)
    assert "rnn_step: passed" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, hint", [
    (lambda x, h, Wi, Wh, bi, bh: x @ Wi.T + bi + h @ Wh.T + bh, "the tanh is missing"),
    (lambda x, h, Wi, Wh, bi, bh: torch.tanh(x @ Wi.T + bi + h @ Wh + bh),
     "W_hh is not transposed"),
    (lambda x, h, Wi, Wh, bi, bh: torch.tanh(x @ Wi + bi + h @ Wh.T + bh),
     "W_ih is not transposed"),
    (lambda x, h, Wi, Wh, bi, bh: torch.tanh(x @ Wi.T + bi + Wh @ h + bh),
     "multiplies the rows from the right as its transpose"),
    (lambda x, h, Wi, Wh, bi, bh: torch.tanh(x @ Wi.T + h @ Wh.T), "the biases are missing"),
    (lambda x, h, Wi, Wh, bi, bh: torch.tanh(x @ Wi.T + h @ Wh.T + bi), "b_hh is missing"),
    (lambda x, h, Wi, Wh, bi, bh: torch.sigmoid(x @ Wi.T + bi + h @ Wh.T + bh),
     "not the sigmoid"),
    (lambda x, h, Wi, Wh, bi, bh: torch.tanh(x @ Wi.T + bi + bh),
     "the previous state h is not used"),
])
def test_rnn_step_rejects_typical_mistakes(wrong, hint):
    fails_with(check.rnn_step, wrong, hint=hint)


def test_rnn_step_not_implemented_is_a_check_failure():
    def stub(*_):
        raise NotImplementedError
    fails_with(check.rnn_step, stub, hint="not implemented yet")


# ---- exercise 2 ---------------------------------------------------------------------------

def test_train_step_accepts_the_right_answer(capsys):
    check.train_step(make_train_step(), rnn_forward)
    assert "train_step: passed" in capsys.readouterr().out


@pytest.mark.parametrize("kwargs, hint", [
    (dict(detach=False), "the incoming state was not detached"),
    (dict(reset=True), "the state was reset to zero"),
    (dict(zero_grad=False), "optimizer.zero_grad()"),
    (dict(reduction="sum"), "use the MEAN cross-entropy"),
    (dict(clip_it=False), "clip the gradients"),
    (dict(clip_after_step=True), "clipped only after optimizer.step()"),
    (dict(return_state="zeros"), "not the hidden state after the last position"),
    (dict(return_state="none"), "return the final hidden state"),
])
def test_train_step_rejects_typical_mistakes(kwargs, hint):
    fails_with(check.train_step, make_train_step(**kwargs), rnn_forward, hint=hint)


def test_train_step_needs_a_working_rnn_step():
    def stub(*_):
        raise NotImplementedError
    fails_with(check.train_step, make_train_step(), make_forward(stub),
               hint="finish rnn_step")


def test_train_step_sends_a_wrong_rnn_step_back_to_exercise_1():
    """An rnn_step without b_hh leaves that bias out of the graph: exercise 1 is named, with
    no traceback from autograd."""
    def no_b_hh(x, h, W_ih, W_hh, b_ih, b_hh):
        return torch.tanh(x @ W_ih.T + b_ih + h @ W_hh.T)
    fails_with(check.train_step, make_train_step(), make_forward(no_b_hh),
               hint="pass exercise 1 first")


# ---- exercise 3 ---------------------------------------------------------------------------

def test_sample_token_accepts_the_right_answer(capsys):
    check.sample_token(sample_token)
    assert "sample_token: passed" in capsys.readouterr().out


def divide_probabilities(logits, temperature, generator=None):
    if temperature == 0:
        return int(logits.argmax())
    probs = torch.softmax(logits, dim=-1) / temperature
    return int(torch.multinomial(probs, 1, generator=generator))


def multiply_logits(logits, temperature, generator=None):
    if temperature == 0:
        return int(logits.argmax())
    probs = torch.softmax(logits * temperature, dim=-1)
    return int(torch.multinomial(probs, 1, generator=generator))


def no_zero_case(logits, temperature, generator=None):
    probs = torch.softmax(logits / temperature, dim=-1)
    return int(torch.multinomial(probs, 1, generator=generator))


def always_argmax(logits, temperature, generator=None):
    return int(logits.argmax())


def uniform(logits, temperature, generator=None):
    if temperature == 0:
        return int(logits.argmax())
    return int(torch.randint(len(logits), (1,), generator=generator))


@pytest.mark.parametrize("wrong, hint", [
    (divide_probabilities, "divide the LOGITS by T"),
    (multiply_logits, "divide by the temperature, don't multiply"),
    (no_zero_case, "T = 0 means greedy decoding"),
    (always_argmax, "every draw was the argmax"),
    (uniform, "every token is equally likely"),
])
def test_sample_token_rejects_typical_mistakes(wrong, hint):
    fails_with(check.sample_token, wrong, hint=hint)


# ---- the final check ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def corpus():
    text = "\n".join(load_corpus("lee")).lower()
    vocab = Vocab(text)
    ids = vocab.encode(text)
    cut = int(0.9 * len(ids))
    return ids[:cut], ids[cut:], len(vocab)


def counts_model(train, V, order):
    """A "model" the check can run like the lab's: row-wise add-one-smoothed counts of the
    next character given the previous ``order - 1`` (order 1: character frequencies,
    order 3: the previous two characters), carried across minibatches in ``state``."""
    t = torch.tensor(train)
    k = order - 1
    shape = (V,) * k + (V,)
    counts = torch.ones(shape)
    index = tuple(t[i:len(t) - k + i] for i in range(k + 1))
    counts.index_put_(index, torch.ones(len(t) - k), accumulate=True)
    log_p = (counts / counts.sum(-1, keepdim=True)).log()

    def forward(params, X, state=None):
        history = X.new_zeros(X.shape[0], k) if state is None else state
        full = torch.cat([history, X], dim=1)
        logits = torch.stack([log_p[tuple(full[:, j + 1:j + k + 1].T)] if k else log_p.expand(
            X.shape[0], V) for j in range(X.shape[1])], dim=1)
        return logits, full[:, full.shape[1] - k:]
    return forward


def test_ngram_perplexities_fall_with_the_order(corpus):
    train, val, V = corpus
    ppl = check.ngram_perplexities(train, val, V, orders=(1, 2, 3))
    assert V > ppl[1] > ppl[2] > ppl[3] > 1


def test_beats_bigram_accepts_a_trigram_model_and_prints_the_baselines(corpus, capsys):
    train, val, V = corpus
    ppl, ngram = check.beats_bigram(counts_model(train, V, 3), {}, train, val, V)
    assert ppl < ngram[2] and set(ngram) == {1, 2, 3, "bigram_setting", "tuned",
                                             "tuned_setting"}
    tuned, _ = best_ngram(train, val, V)
    assert ngram["tuned"] <= ngram[3] and ngram["tuned_setting"] == str(tuned.best)
    bigram, bigram_ppl = best_ngram(train, val, V, orders=(2,))  # the bar: a tuned bigram
    assert ngram[2] == bigram_ppl and ngram["bigram_setting"] == str(bigram.best)
    assert bigram.best.order == 2 and len(bigram.tried) > 1
    out = capsys.readouterr().out
    assert "trained model: passed" in out
    for label in ("unigram", "bigram", "trigram", "tuned n-gram", "your RNN", "settings tried"):
        assert label in out
    assert "but not below the tuned n-gram" in out  # a counted trigram loses to the tuned one


def test_beats_bigram_rejects_a_model_that_ignores_the_context(corpus):
    """Character frequencies alone beat the uniform guess but not the bigram: the old,
    too-low bar."""
    train, val, V = corpus
    fails_with(check.beats_bigram, counts_model(train, V, 1), {}, train, val, V,
               hint="is not below the bigram baseline")


def test_beats_bigram_rejects_an_untrained_model(corpus):
    train, val, V = corpus
    g = torch.Generator().manual_seed(0)
    untrained = {"W_ih": torch.randn(16, V, generator=g),
                 "W_hh": torch.randn(16, 16, generator=g),
                 "b_ih": torch.zeros(16), "b_hh": torch.zeros(16),
                 "W_hq": torch.randn(16, V, generator=g),
                 "b_q": torch.zeros(V)}
    fails_with(check.beats_bigram, rnn_forward, untrained, train, val, V,
               hint="is not below the bigram baseline")


def test_beats_bigram_rejects_a_model_that_cannot_run(corpus):
    train, val, V = corpus

    def stub(*_):
        raise NotImplementedError
    params = {"W_ih": torch.zeros(4, V), "W_hh": torch.zeros(4, 4), "b_ih": torch.zeros(4),
              "b_hh": torch.zeros(4), "W_hq": torch.zeros(4, V), "b_q": torch.zeros(V)}
    fails_with(check.beats_bigram, make_forward(stub), params, train, val, V,
               hint="cannot run yet")

"""Lab 04 checks: the right answers pass; typical wrong answers fail with a specific hint."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from lmcourse.checks import CheckFailed
from lmcourse.checks import word2vec as check


def fails_with(fn, *args, hint: str) -> str:
    with pytest.raises(CheckFailed) as info:
        fn(*args)
    assert hint in str(info.value), str(info.value)
    return str(info.value)


# ---- the lab's solution (the same code as labs/solutions/04_word2vec.py) ------

def skipgram_pairs(ids, window):
    centers, contexts = [], []
    for o in range(1, min(window, len(ids) - 1) + 1):
        centers += [ids[:-o], ids[o:]]
        contexts += [ids[o:], ids[:-o]]
    if not centers:
        return ids[:0], ids[:0]
    return torch.cat(centers), torch.cat(contexts)


def ns_loss(v, u_pos, u_neg):
    pos = (u_pos * v).sum(-1)
    neg = (u_neg * v.unsqueeze(1)).sum(-1)
    return -(F.logsigmoid(pos) + F.logsigmoid(-neg).sum(-1)).mean()


def make_train_step(loss_fn=None, zero_grad=True, step=True, out_table="out", sign=1.0):
    def train_step(emb_in, emb_out, centers, contexts, negatives, optimizer):
        if zero_grad:
            optimizer.zero_grad()
        table = emb_out if out_table == "out" else emb_in
        loss = (loss_fn or ns_loss)(emb_in(centers), table(contexts), table(negatives))
        (sign * loss).backward()
        if step:
            optimizer.step()
        return loss.item()
    return train_step


train_step = make_train_step()


# ---- exercise 1: pairs ----------------------------------------------------------------------

def test_pairs_accept_the_solution(capsys):
    check.skipgram_pairs(skipgram_pairs)
    assert "skipgram_pairs: passed" in capsys.readouterr().out


def test_pairs_accept_a_plain_loop_in_another_order():
    def loops(ids, window):
        ids = ids.tolist()
        pairs = [(ids[t], ids[j]) for t in range(len(ids))
                 for j in range(max(0, t - window), min(len(ids), t + window + 1)) if j != t]
        return torch.tensor([c for c, _ in pairs]), torch.tensor([o for _, o in pairs])
    check.skipgram_pairs(loops)


def _offsets_pairs(offsets_of):
    def pairs(ids, window):
        c, o = [], []
        n = len(ids)
        for t in range(n):
            for off in offsets_of(window):
                if 0 <= t + off < n:
                    c.append(int(ids[t]))
                    o.append(int(ids[t + off]))
        return torch.tensor(c, dtype=torch.long), torch.tensor(o, dtype=torch.long)
    return pairs


@pytest.mark.parametrize("offsets, hint", [
    (lambda w: range(-w, w + 1), "paired with itself"),
    (lambda w: range(1, w + 1), "only one side of the window"),
    (lambda w: [o for o in range(-w + 1, w) if o], "produced the pairs of window"),
    (lambda w: [o for o in range(-w - 1, w + 2) if o], "not window + 1"),
])
def test_pairs_reject_wrong_windows(offsets, hint):
    fails_with(check.skipgram_pairs, _offsets_pairs(offsets), hint=hint)


def test_pairs_reject_wrap_around_and_deduplication():
    def rolled(ids, window):
        c, o = [], []
        for off in range(1, window + 1):
            c += [ids, ids]
            o += [torch.roll(ids, -off), torch.roll(ids, off)]
        return torch.cat(c), torch.cat(o)
    fails_with(check.skipgram_pairs, rolled, hint="wrap around")

    def deduplicated(ids, window):
        c, o = skipgram_pairs(ids, window)
        unique = sorted(set(zip(c.tolist(), o.tolist(), strict=True)))
        return torch.tensor([a for a, _ in unique]), torch.tensor([b for _, b in unique])
    fails_with(check.skipgram_pairs, deduplicated, hint="don't remove duplicates")


def test_pairs_reject_unimplemented_and_mismatched_lengths():
    def todo(ids, window):
        raise NotImplementedError
    fails_with(check.skipgram_pairs, todo, hint="not implemented yet")
    fails_with(check.skipgram_pairs, lambda ids, w: (ids, ids[:-1]), hint="one entry per pair")


# ---- exercise 2: the loss -------------------------------------------------------------------

def test_loss_accepts_the_solution(capsys):
    check.ns_loss(ns_loss)
    assert "ns_loss: passed" in capsys.readouterr().out


def _scores(v, u_pos, u_neg):
    return (u_pos * v).sum(-1), (u_neg * v.unsqueeze(1)).sum(-1)


@pytest.mark.parametrize("wrong, hint", [
    (lambda p, n: -(F.logsigmoid(p) + F.logsigmoid(n).sum(-1)).mean(), "MINUS inside"),
    (lambda p, n: -(torch.sigmoid(p) + torch.sigmoid(-n).sum(-1)).mean(), "take the logarithm"),
    (lambda p, n: -(F.logsigmoid(p) + F.logsigmoid(-n).sum(-1)).sum(), "MEAN over the B pairs"),
    (lambda p, n: -(F.logsigmoid(p) + F.logsigmoid(-n).mean(-1)).mean(), "SUMS the K noise"),
    (lambda p, n: -F.logsigmoid(p).mean(), "noise words' term is missing"),
    (lambda p, n: (F.logsigmoid(p) + F.logsigmoid(-n).sum(-1)).mean(), "whole loss is flipped"),
])
def test_loss_rejects_typical_mistakes(wrong, hint):
    fails_with(check.ns_loss, lambda v, up, un: wrong(*_scores(v, up, un)), hint=hint)


def test_loss_rejects_unstable_log_of_sigmoid_and_detached_values():
    def naive(v, u_pos, u_neg):
        p, n = _scores(v, u_pos, u_neg)
        return -(torch.log(torch.sigmoid(p)) + torch.log(torch.sigmoid(-n)).sum(-1)).mean()
    fails_with(check.ns_loss, naive, hint="F.logsigmoid")

    def detached(v, u_pos, u_neg):
        return ns_loss(v, u_pos, u_neg).detach()
    fails_with(check.ns_loss, detached, hint="does not depend on the inputs")
    fails_with(check.ns_loss, lambda v, up, un: ns_loss(v, up, un).item(), hint="torch tensor")


# ---- exercise 3: the step -------------------------------------------------------------------

def test_step_accepts_the_solution(capsys):
    check.train_step(train_step)
    assert "train_step: passed" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, hint", [
    (make_train_step(zero_grad=False), "optimizer.zero_grad()"),
    (make_train_step(step=False), "optimizer.step()"),
    (make_train_step(out_table="in"), "emb_in for the centers and emb_out"),
    (make_train_step(loss_fn=lambda v, up, un: ns_loss(v, up, un) * len(v)),
     "Did ns_loss pass its check?"),
])
def test_step_rejects_typical_mistakes(wrong, hint):
    fails_with(check.train_step, wrong, hint=hint)


def test_step_rejects_a_wrong_return_value():
    def returns_after(emb_in, emb_out, centers, contexts, negatives, optimizer):
        train_step(emb_in, emb_out, centers, contexts, negatives, optimizer)
        return ns_loss(emb_in(centers), emb_out(contexts), emb_out(negatives)).item()
    fails_with(check.train_step, returns_after, hint="computed before the optimizer's step")


# ---- training checks ------------------------------------------------------------------------

def test_clusters_accept_the_solution(capsys):
    check.learns_clusters(skipgram_pairs, train_step)
    assert "training on two topics: passed" in capsys.readouterr().out


def test_clusters_reject_broken_training():
    """A broken step or pair list is its exercise's fault: the training check says so."""
    message = fails_with(check.learns_clusters, skipgram_pairs, make_train_step(step=False),
                         hint="pass exercise 3 first")
    assert "the embeddings did not change" in message
    fails_with(check.learns_clusters, skipgram_pairs, make_train_step(sign=-1.0),
               hint="pass exercise 3 first")
    fails_with(check.learns_clusters, lambda ids, window: skipgram_pairs(ids, 1), train_step,
               hint="pass exercise 1 first")

    def unpaired(ids, window):  # centers and contexts permuted independently
        c, o = skipgram_pairs(ids, window)
        g = torch.Generator().manual_seed(int(ids[0]) + len(ids))
        return c[torch.randperm(len(c), generator=g)], o
    fails_with(check.learns_clusters, unpaired, train_step, hint="pass exercise 1 first")


def _month_vectors(words, rng, strength):
    vectors = rng.standard_normal((len(words), 16))
    months = ["januari", "februari", "march", "april", "june", "juli", "august", "septemb",
              "octob", "novemb", "decemb"]
    shared = rng.standard_normal(16)
    for i, w in enumerate(words):
        if w in months:
            vectors[i] += strength * shared
    return vectors


def test_months_accept_trained_like_vectors_and_reject_others(capsys):
    rng = np.random.default_rng(0)
    words = ["januari", "februari", "march", "april", "june", "juli", "august", "septemb",
             "octob", "novemb", "decemb"] + [f"w{i}" for i in range(500)]
    share = check.months_close(torch.tensor(_month_vectors(words, rng, 5.0)), words)
    assert share > 0.9 and "months are neighbours: passed" in capsys.readouterr().out
    fails_with(check.months_close, _month_vectors(words, rng, 0.0), words,
               hint="Did the training loop run")
    fails_with(check.months_close, np.zeros((len(words), 16)), words, hint="all zero")
    fails_with(check.months_close, _month_vectors(words, rng, 5.0)[:-1], words,
               hint="one row per word")


# ---- exercises 4 and 5: noise distribution and subsampling ----------------------------------

def noise_right(counts):
    p = counts.astype(np.float64) ** 0.75
    return p / p.sum()


def discard_right(counts, t):
    f = counts / counts.sum()
    return np.maximum(0.0, 1 - np.sqrt(t / f))


def test_noise_distribution_accepts_the_solution_as_numpy_or_torch(capsys):
    check.noise_distribution(noise_right)
    check.noise_distribution(lambda c: torch.from_numpy(noise_right(c)))
    assert capsys.readouterr().out.count("noise_distribution: passed") == 2


@pytest.mark.parametrize(("wrong", "hint"), [
    (lambda c: c / c.sum(), "raise the counts to the power 0.75"),
    (lambda c: c.astype(float) ** 0.75, "not renormalised"),
    (lambda c: (c / c.sum()) ** 0.75, "normalise again"),
    (lambda c: c ** (4 / 3) / (c ** (4 / 3)).sum(), "4/3 instead of 3/4"),
    (lambda c: np.ones(len(c)) / len(c), "uniform"),
    (lambda c: np.ones(3), "one number per word"),
    (lambda c: 1 / 0, "ZeroDivisionError"),
])
def test_noise_distribution_rejects_typical_mistakes(wrong, hint):
    fails_with(check.noise_distribution, wrong, hint=hint)


def test_noise_distribution_rejects_an_unrecognised_answer():
    message = fails_with(check.noise_distribution, lambda c: noise_right(c)[::-1].copy(),
                         hint="the most wrong is word 0")
    assert "too low" in message and "expected" not in message


def test_discard_probability_accepts_the_solution(capsys):
    check.discard_probability(discard_right)
    assert "discard_probability: passed" in capsys.readouterr().out


@pytest.mark.parametrize(("wrong", "hint"), [
    (lambda c, t: np.minimum(1, np.sqrt(t / (c / c.sum()))), "probability of KEEPING"),
    (lambda c, t: 1 - np.sqrt(t / (c / c.sum())), "clip it at 0"),
    (lambda c, t: np.maximum(0, 1 - np.sqrt(t / c)), "relative frequency"),
    (lambda c, t: np.maximum(0, 1 - t / (c / c.sum())), "square root is missing"),
    (lambda c, t: np.minimum(1, (np.sqrt(c / c.sum() / t) + 1) * t / (c / c.sum())),
     "gensim's KEEP probability"),
    (lambda c, t: discard_right(c, 0.01), "use the argument t"),
])
def test_discard_probability_rejects_typical_mistakes(wrong, hint):
    fails_with(check.discard_probability, wrong, hint=hint)


def test_discard_probability_student_stub_fails():
    def stub(counts, t):
        raise NotImplementedError
    fails_with(check.discard_probability, stub, hint="not implemented yet")

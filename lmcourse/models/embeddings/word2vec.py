"""word2vec: skip-gram and CBOW with negative sampling, trained on minibatches
of (center, context) examples, with the unigram^0.75 noise distribution and the
subsampling of frequent words of Mikolov et al. (2013b).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from lmcourse.data.words import WordCorpus

# ---- word2vec: negative sampling ----------------------------------------------------------

def noise_distribution(counts: np.ndarray, power: float = 0.75) -> np.ndarray:
    """``P_n(w) = count(w)^0.75 / sum_w' count(w')^0.75``, where negatives are drawn from
    (Mikolov et al., 2013b): flatter than the unigram distribution, so rare words are
    drawn a bit more often and ``the`` a bit less."""
    p = counts.astype(np.float64) ** power
    return p / p.sum()


def noise_table(probs: np.ndarray, size: int = 10_000_000) -> torch.Tensor:
    """word2vec's *unigram table*: word ids repeated in proportion to ``probs``, so that a
    uniformly random entry is a draw from ``probs`` (to within ``1/size``). Drawing many
    negatives is then one ``randint`` and one gather."""
    reps = np.round(probs * size).astype(np.int64)
    return torch.repeat_interleave(torch.arange(len(probs), dtype=torch.int32),
                                   torch.from_numpy(reps))


def keep_probability(counts: np.ndarray, sample: float = 1e-3) -> np.ndarray:
    """Probability of keeping each occurrence of a word when subsampling frequent words.

    With ``f = count / total``, word2vec's C code and gensim keep a word with probability

        p_keep(w) = (sqrt(f / t) + 1) * t / f        (capped at 1),

    a smoother variant of the paper's discard probability ``1 - sqrt(t / f)``
    (Mikolov et al., 2013b). ``t = 1e-5`` suits billions of words; on a few hundred
    thousand, gensim's default ``t = 1e-3`` is the sensible choice.
    """
    f = counts / counts.sum()
    return np.minimum((np.sqrt(f / sample) + 1) * sample / f, 1.0)


def subsample(docs: Sequence[np.ndarray], keep: np.ndarray, rng: np.random.Generator
              ) -> list[np.ndarray]:
    """Drop each occurrence of word ``w`` with probability ``1 - keep[w]``; the words that
    remain close ranks, so windows reach a little further (as in word2vec)."""
    return [d[rng.random(len(d)) < keep[d]] for d in docs]


def window_reach(n: int, window: int, rng: np.random.Generator | None = None) -> np.ndarray:
    """How far each of ``n`` positions looks: ``window`` everywhere, or with ``rng``
    word2vec's *dynamic window*, a fresh ``b ~ Uniform{1..window}`` per position."""
    return np.full(n, window) if rng is None else rng.integers(1, window + 1, size=n)


def skipgram_pairs(docs: Sequence[np.ndarray], window: int,
                   rng: np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray]:
    """All (center, context) pairs with ``1 <= |offset| <= window`` inside each document,
    in text order (by center position).

    With ``rng``, each center draws its own window ``b`` uniformly from ``1..window`` (the
    *dynamic window* of word2vec: near words are used more often than far ones). Built one
    offset at a time with array masks: no loop over positions.
    """
    centers, contexts = [], []
    for doc in docs:
        n = len(doc)
        if n < 2:
            continue
        reach = window_reach(n, window, rng)
        pos, ctx = [], []
        for o in range(1, min(window, n - 1) + 1):
            right = np.nonzero(reach[:-o] >= o)[0]       # center i sees i + o
            left = np.nonzero(reach[o:] >= o)[0] + o     # center i sees i - o
            pos += [right, left]
            ctx += [right + o, left - o]
        pos, ctx = np.concatenate(pos), np.concatenate(ctx)
        order = np.lexsort((ctx, pos))                   # by center, then context position
        centers.append(doc[pos[order]])
        contexts.append(doc[ctx[order]])
    if not centers:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(centers), np.concatenate(contexts)


def cbow_windows(docs: Sequence[np.ndarray], window: int,
                 rng: np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray]:
    """For CBOW: every position's center word and its context ids, ``N x 2*window``, padded
    with ``-1`` beyond the document or the (dynamic) window. Positions without any context
    are left out."""
    centers, contexts = [], []
    offsets = [o for o in range(-window, window + 1) if o != 0]
    for doc in docs:
        n = len(doc)
        if n < 2:
            continue
        reach = window_reach(n, window, rng)
        pos = np.arange(n)[:, None] + np.array(offsets)[None, :]
        valid = (pos >= 0) & (pos < n) & (np.abs(np.array(offsets))[None, :] <= reach[:, None])
        ctx = np.where(valid, doc[np.clip(pos, 0, n - 1)], -1)
        centers.append(doc)
        contexts.append(ctx)
    centers, contexts = np.concatenate(centers), np.concatenate(contexts)
    has = (contexts >= 0).any(axis=1)
    return centers[has], contexts[has]


def negative_sampling_loss(v: torch.Tensor, u_pos: torch.Tensor, u_neg: torch.Tensor
                           ) -> torch.Tensor:
    """Skip-gram with negative sampling, one value per pair (Mikolov et al., 2013b):

        loss = -log sigma(u_o . v_c) - sum_k log sigma(-u_k . v_c)

    ``v`` (``B x d``) are the center (input) vectors, ``u_pos`` (``B x d``) the true
    contexts' output vectors, ``u_neg`` (``B x K x d``) those of ``K`` noise words.
    ``logsigmoid`` computes ``log sigma`` without overflow.
    """
    pos = (u_pos * v).sum(-1)                 # B: scores of the true pairs
    neg = (u_neg * v.unsqueeze(1)).sum(-1)    # B x K: scores of the noise pairs
    return -F.logsigmoid(pos) - F.logsigmoid(-neg).sum(-1)


def sgns_step(W_in: torch.Tensor, W_out: torch.Tensor, inputs: torch.Tensor,
              targets: torch.Tensor, negatives: torch.Tensor, lr: float) -> float:
    """One SGD step of word2vec on a minibatch, in place; returns the summed loss.

    ``inputs`` are center ids (skip-gram, shape ``B``) or context windows (CBOW,
    ``B x 2w`` padded with ``-1``; ``v`` is then the mean of their input vectors).
    ``targets`` (``B``) are the words to predict, ``negatives`` (``B x K``) noise words.
    With scores ``s_j = u_j . v`` and labels ``y = (1, 0, ..., 0)`` the loss of
    :func:`negative_sampling_loss` has ``dloss/ds_j = sigma(s_j) - y_j``, so

        dloss/dv = sum_j (sigma(s_j) - y_j) u_j,      dloss/du_j = (sigma(s_j) - y_j) v.

    ``index_add_`` scatters ``-lr`` times these into the rows used (a row used twice gets
    both updates); for CBOW every context word gets the whole ``dloss/dv``, as in word2vec.
    """
    B, d = len(targets), W_in.shape[1]
    if inputs.dim() == 1:  # skip-gram
        v = W_in.index_select(0, inputs)
    else:                  # CBOW
        ok = inputs >= 0
        rows = W_in.index_select(0, inputs.clamp(min=0).reshape(-1)).view(*inputs.shape, d)
        v = (rows * ok.unsqueeze(-1)).sum(1) / ok.sum(1, keepdim=True)
    out_ids = torch.cat([targets.unsqueeze(1), negatives], dim=1).reshape(-1)
    u = W_out.index_select(0, out_ids).view(B, -1, d)  # B x (1+K) x d
    loss = negative_sampling_loss(v, u[:, 0], u[:, 1:])
    s = (u * v.unsqueeze(1)).sum(-1)                    # B x (1+K) scores s_j = u_j . v
    g = torch.sigmoid(s)
    g[:, 0] -= 1.0
    g *= -lr                                           # dloss/ds, times the step
    W_out.index_add_(0, out_ids, (g.unsqueeze(-1) * v.unsqueeze(1)).view(-1, d))
    dv = torch.bmm(g.unsqueeze(1), u).squeeze(1)        # B x d
    if inputs.dim() == 1:
        W_in.index_add_(0, inputs, dv)
    else:
        W_in.index_add_(0, inputs[ok], dv.unsqueeze(1).expand(-1, inputs.shape[1], -1)[ok])
    return float(loss.sum())


@dataclass
class Trained:
    """What a training run returns: the word vectors (``V x d``, the input embeddings for
    word2vec, ``W + W~`` for GloVe), the mean loss of every epoch and the time it took;
    ``tracked``: a score measured on the vectors after every epoch, where one was asked for."""

    vectors: np.ndarray
    losses: list[float]
    seconds: float
    context_vectors: np.ndarray | None = None
    tracked: list[float] | None = None


def train_word2vec(corpus: WordCorpus, dim: int = 100, window: int = 5, negative: int = 5,
                   epochs: int = 5, sg: bool = True, lr: float = 0.025, min_lr: float = 1e-4,
                   sample: float = 1e-3, batch_size: int = 1024, shuffle: bool = False,
                   seed: int = 0, device: torch.device | str = "cpu",
                   stop_after: int | None = None) -> Trained:
    """word2vec with negative sampling, skip-gram (``sg=True``) or CBOW, trained as the C
    tool and gensim train it, but on minibatches of examples instead of one at a time.

    Every epoch subsamples frequent words (:func:`keep_probability`), draws dynamic
    windows, builds all its examples at once (:func:`skipgram_pairs` or
    :func:`cbow_windows`) and all its negatives (``K`` per example, from ``count^0.75``
    through :func:`noise_table`), then walks through the examples in text order (or
    shuffled, with ``shuffle=True``), ``batch_size`` at a time, with :func:`sgns_step`.
    The learning rate falls linearly from ``lr`` to ``min_lr`` over the whole run. Input
    vectors start uniform in ``(-1/d, 1/d)`` (gensim's choice), output vectors at 0. The
    word vectors are the input vectors. ``stop_after``: stop after that many epochs of the
    ``epochs``-long schedule (the first steps of a longer run, for checking a stored one).
    """
    dev = torch.device(device)
    rng = np.random.default_rng(seed)
    gen = torch.Generator().manual_seed(seed)
    V = len(corpus)
    W_in = ((torch.rand(V, dim, generator=gen) * 2 - 1) / dim).to(dev)
    W_out = torch.zeros(V, dim, device=dev)
    table = noise_table(noise_distribution(corpus.counts))
    keep = keep_probability(corpus.counts, sample) if sample else np.ones(V)
    losses = []
    start = time.perf_counter()
    for epoch in range(epochs if stop_after is None else min(stop_after, epochs)):
        docs = subsample(corpus.docs, keep, rng) if sample else corpus.docs
        if sg:
            inputs, targets = skipgram_pairs(docs, window, rng)
        else:
            targets, inputs = cbow_windows(docs, window, rng)
        if shuffle:
            order = rng.permutation(len(targets))
            inputs, targets = inputs[order], targets[order]
        n = len(targets)
        inputs, targets = torch.from_numpy(inputs).to(dev), torch.from_numpy(targets).to(dev)
        draws = torch.randint(len(table), (n, negative), generator=gen)
        negs = table[draws].long().to(dev)
        total = 0.0
        for s in range(0, n, batch_size):
            progress = (epoch + s / n) / epochs
            rate = lr - (lr - min_lr) * progress
            batch = slice(s, s + batch_size)
            total += sgns_step(W_in, W_out, inputs[batch], targets[batch], negs[batch], rate)
        losses.append(total / max(n, 1))
    return Trained(W_in.cpu().numpy(), losses, time.perf_counter() - start,
                   W_out.cpu().numpy())


def gensim_word2vec(documents: Sequence[Sequence[str]], words: Sequence[str], sg: bool = True,
                    dim: int = 100, window: int = 5, negative: int = 5, epochs: int = 5,
                    sample: float = 1e-3, min_count: int = 5, lr: float = 0.025,
                    seed: int = 0) -> Trained:
    """gensim's ``Word2Vec`` with the same settings as :func:`train_word2vec`, on one
    worker (deterministic for a given ``seed``); the rows in the order of ``words``, which
    must be exactly gensim's vocabulary. ``losses`` stays empty (gensim does not report
    per-epoch losses); ``seconds`` is the training call's wall time."""
    from gensim.models import Word2Vec

    start = time.perf_counter()
    model = Word2Vec(documents, vector_size=dim, window=window, negative=negative, sg=int(sg),
                     epochs=epochs, min_count=min_count, sample=sample, alpha=lr, workers=1,
                     seed=seed)
    seconds = time.perf_counter() - start
    if sorted(model.wv.index_to_key) != sorted(words):
        raise ValueError(f"gensim's vocabulary ({len(model.wv.index_to_key):,} words) is not "
                         f"the {len(words):,} given: build both from the same documents and "
                         f"min_count ({min_count})")
    rows = np.stack([model.wv[w] for w in words])
    context = np.stack([model.syn1neg[model.wv.key_to_index[w]] for w in words])
    return Trained(rows, [], seconds, context)

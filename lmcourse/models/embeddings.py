"""Word embeddings: from counting to predicting, each method a few lines.

Every method here turns a corpus (a list of documents, each a list of word ids) into a
matrix with one row per word. They come in two families:

* **counts**: one-hot vectors; the word-context co-occurrence matrix ``X`` of a symmetric
  window; TF-IDF word-document weights; positive pointwise mutual information (PPMI)
  of ``X``, compressed with a truncated SVD;
* **predictions**: word2vec's skip-gram and CBOW with negative sampling, trained with
  minibatches of (center, context) pairs; and GloVe, a weighted least-squares fit of
  ``w_i . w~_j + b_i + b~_j`` to ``log X_ij``.

The helpers at the end compare them: cosine nearest neighbours, 3CosAdd analogies, word
similarity (Spearman rho) and analogy accuracy on the test sets gensim ships, and the
overlap of nearest neighbours between two embeddings.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch
import torch.nn.functional as F

__all__ = [
    "WordCorpus",
    "Trained",
    "analogy",
    "analogy_accuracy",
    "analogy_ranks",
    "cbow_windows",
    "cooccurrence",
    "cosine_similarity",
    "glove_loss",
    "glove_step",
    "glove_weight",
    "keep_probability",
    "load_analogies",
    "load_word_pairs",
    "most_similar",
    "negative_sampling_loss",
    "neighbour_agreement",
    "noise_distribution",
    "noise_table",
    "one_hot",
    "ppmi",
    "randomized_svd",
    "sgns_step",
    "skipgram_pairs",
    "subsample",
    "svd_embeddings",
    "term_document",
    "tfidf",
    "train_glove",
    "train_word2vec",
    "word_similarity",
]


# ---- the corpus as word ids ---------------------------------------------------------------

@dataclass
class WordCorpus:
    """Documents as arrays of word ids; words seen fewer than ``min_count`` times are dropped.

    ``words[i]`` is the word with id ``i`` (most frequent first, ties alphabetical) and
    ``counts[i]`` how often it occurs. Dropping rare words *before* windowing, rather than
    mapping them to an unknown token, is what word2vec and gensim do.
    """

    words: list[str]
    counts: np.ndarray
    docs: list[np.ndarray]
    index: dict[str, int] = field(repr=False)

    @classmethod
    def from_documents(cls, documents: Iterable[Sequence[str]], min_count: int = 1
                       ) -> WordCorpus:
        documents = [list(d) for d in documents]
        counts = Counter(w for d in documents for w in d)
        kept = sorted((w for w, c in counts.items() if c >= min_count),
                      key=lambda w: (-counts[w], w))
        index = {w: i for i, w in enumerate(kept)}
        docs = [np.array([index[w] for w in d if w in index], dtype=np.int64)
                for d in documents]
        return cls(kept, np.array([counts[w] for w in kept], dtype=np.int64), docs, index)

    def __len__(self) -> int:
        return len(self.words)

    @property
    def num_tokens(self) -> int:
        return int(sum(len(d) for d in self.docs))


# ---- counting -----------------------------------------------------------------------------

def one_hot(ids: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """``e_w``: the row of the identity matrix for each id. Any two distinct words are
    orthogonal (cosine 0) and equally far apart: one-hot vectors know no similarity."""
    return torch.eye(vocab_size)[ids]


def _window_pairs(docs: Sequence[np.ndarray], window: int
                  ) -> Iterable[tuple[int, np.ndarray, np.ndarray]]:
    """For each distance ``o = 1..window``: (o, left ids, right ids) of every pair of
    positions ``o`` apart inside the same document."""
    for o in range(1, window + 1):
        left = [d[:-o] for d in docs if len(d) > o]
        right = [d[o:] for d in docs if len(d) > o]
        if left:
            yield o, np.concatenate(left), np.concatenate(right)


def cooccurrence(docs: Sequence[np.ndarray], vocab_size: int, window: int = 5,
                 weighting: str = "count") -> sp.csr_matrix:
    """The symmetric word-context matrix: ``X[w, c]`` adds up, over every occurrence of
    ``w``, the words ``c`` at distance ``1 <= |o| <= window`` in the same document.

    ``weighting="count"`` adds 1 per pair; ``"harmonic"`` adds ``1/|o|`` (GloVe's choice:
    far words count less). ``X`` is symmetric and sparse (a ``scipy.sparse`` CSR matrix).
    """
    if weighting not in ("count", "harmonic"):
        raise ValueError(f"weighting must be 'count' or 'harmonic', not {weighting!r}")
    rows, cols, vals = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)], [np.zeros(0)]
    for o, left, right in _window_pairs(docs, window):
        w = 1.0 if weighting == "count" else 1.0 / o
        rows += [left, right]  # both directions: c right of w, and w left of c
        cols += [right, left]
        vals.append(np.full(2 * len(left), w))
    rows, cols, vals = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
    X = sp.coo_matrix((vals, (rows, cols)), shape=(vocab_size, vocab_size))
    return X.tocsr()  # duplicate (row, col) entries are summed


def term_document(docs: Sequence[np.ndarray], vocab_size: int) -> sp.csr_matrix:
    """``tf[w, d]``: how many times word ``w`` occurs in document ``d`` (raw counts)."""
    rows = np.concatenate(docs)
    cols = np.concatenate([np.full(len(d), j) for j, d in enumerate(docs)])
    return sp.coo_matrix((np.ones(len(rows)), (rows, cols)),
                         shape=(vocab_size, len(docs))).tocsr()


def tfidf(tf: sp.csr_matrix) -> sp.csr_matrix:
    """TF-IDF (Salton & Buckley, 1988) in its plainest variant:

        tfidf[w, d] = tf[w, d] * log(N / df[w])

    with ``tf`` the raw count, ``N`` the number of documents, ``df[w]`` the number of
    documents that contain ``w`` and the natural log. A word in every document gets 0.
    (gensim's ``TfidfModel`` uses ``log2`` and normalises each document; scikit-learn
    smooths ``df`` and adds 1 to the idf.)
    """
    N = tf.shape[1]
    df = np.asarray((tf > 0).sum(axis=1)).ravel()
    idf = np.log(N / np.maximum(df, 1))
    return sp.diags(idf) @ tf


def ppmi(X: sp.spmatrix, alpha: float = 1.0) -> sp.csr_matrix:
    """Positive pointwise mutual information of a co-occurrence matrix:

        PMI(w, c) = log( P(w, c) / (P(w) P_alpha(c)) ),   PPMI = max(PMI, 0),

    with ``P(w, c) = X_wc / sum(X)``, ``P(w) = sum_c X_wc / sum(X)`` and the context
    distribution raised to ``alpha`` and renormalised,
    ``P_alpha(c) = (sum_w X_wc)^alpha / sum_c' (sum_w X_wc')^alpha``. With ``alpha = 0.75``
    (Levy, Goldberg & Dagan, 2015) rare contexts get a little more probability, which
    lowers their otherwise inflated PMI.
    Zero counts have PMI = -inf, so PPMI is 0 there: the result stays sparse.
    """
    X = sp.coo_matrix(X)
    total = X.sum()
    p_w = np.asarray(X.sum(axis=1)).ravel() / total
    c = np.asarray(X.sum(axis=0)).ravel() ** alpha
    p_c = c / c.sum()
    pmi = np.log(X.data / total) - np.log(p_w[X.row]) - np.log(p_c[X.col])
    keep = pmi > 0
    return sp.coo_matrix((pmi[keep], (X.row[keep], X.col[keep])), shape=X.shape).tocsr()


def randomized_svd(M: sp.spmatrix | np.ndarray, k: int, oversample: int = 10, iters: int = 4,
                   seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The top ``k`` singular triplets of ``M`` by random projection (Halko, Martinsson &
    Tropp, 2011): find an orthonormal basis ``Q`` of ``M``'s dominant column space from
    ``M Omega`` (``Omega`` Gaussian, sharpened by ``iters`` power iterations
    ``Q <- M M^T Q``), then take the exact SVD of the small matrix ``Q^T M``.
    Only products with ``M`` are needed, so a sparse ``M`` stays sparse."""
    rng = np.random.default_rng(seed)
    Q = M @ rng.standard_normal((M.shape[1], k + oversample))
    for _ in range(iters):
        Q, _ = np.linalg.qr(Q)
        Q = M @ (M.T @ Q)
    Q, _ = np.linalg.qr(Q)
    U, S, Vt = np.linalg.svd(np.asarray((M.T @ Q).T), full_matrices=False)
    return (Q @ U)[:, :k], S[:k], Vt[:k]


def svd_embeddings(M: sp.spmatrix | np.ndarray, dim: int, power: float = 0.5,
                   seed: int = 0) -> np.ndarray:
    """Truncated SVD ``M ~ U_d S_d V_d^T``; word vectors ``W = U_d S_d^power``.

    ``power = 1`` keeps the best rank-``d`` approximation's own scaling; ``0.5`` (a
    symmetric split between words and contexts) usually works better for similarity
    (Levy, Goldberg & Dagan, 2015).
    """
    U, S, _ = randomized_svd(M, dim, seed=seed)
    return (U * S**power).astype(np.float32)


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
    s = (u * v.unsqueeze(1)).sum(-1)                    # B x (1+K)
    loss = -F.logsigmoid(s[:, 0]) - F.logsigmoid(-s[:, 1:]).sum(-1)
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
    word2vec, ``W + W~`` for GloVe), the mean loss of every epoch and the time it took."""

    vectors: np.ndarray
    losses: list[float]
    seconds: float
    context_vectors: np.ndarray | None = None


def train_word2vec(corpus: WordCorpus, dim: int = 100, window: int = 5, negative: int = 5,
                   epochs: int = 5, sg: bool = True, lr: float = 0.025, min_lr: float = 1e-4,
                   sample: float = 1e-3, batch_size: int = 1024, shuffle: bool = False,
                   seed: int = 0, device: torch.device | str = "cpu") -> Trained:
    """word2vec with negative sampling, skip-gram (``sg=True``) or CBOW, trained as the C
    tool and gensim train it, but on minibatches of examples instead of one at a time.

    Every epoch subsamples frequent words (:func:`keep_probability`), draws dynamic
    windows, builds all its examples at once (:func:`skipgram_pairs` or
    :func:`cbow_windows`) and all its negatives (``K`` per example, from ``count^0.75``
    through :func:`noise_table`), then walks through the examples in text order (or
    shuffled, with ``shuffle=True``), ``batch_size`` at a time, with :func:`sgns_step`.
    The learning rate falls linearly from ``lr`` to ``min_lr`` over the whole run. Input
    vectors start uniform in ``(-1/d, 1/d)`` (gensim's choice), output vectors at 0. The
    word vectors are the input vectors.
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
    for epoch in range(epochs):
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


# ---- GloVe --------------------------------------------------------------------------------

def glove_weight(x: torch.Tensor, x_max: float = 100.0, alpha: float = 0.75) -> torch.Tensor:
    """GloVe's weight ``f(x) = (x / x_max)^alpha`` below ``x_max``, 1 above: rare pairs
    (noisy) count less, very frequent pairs do not dominate (Pennington et al., 2014)."""
    return (x / x_max).pow(alpha).clamp(max=1.0)


def glove_loss(w: torch.Tensor, w_ctx: torch.Tensor, b: torch.Tensor, b_ctx: torch.Tensor,
               x: torch.Tensor, x_max: float = 100.0, alpha: float = 0.75) -> torch.Tensor:
    """Weighted least squares on the log counts, one value per nonzero ``X_ij``:

        f(X_ij) * (w_i . w~_j + b_i + b~_j - log X_ij)^2
    """
    err = (w * w_ctx).sum(-1) + b + b_ctx - torch.log(x)
    return glove_weight(x, x_max, alpha) * err.pow(2)


def glove_step(params: list[torch.Tensor], sq_sums: list[torch.Tensor], i: torch.Tensor,
               j: torch.Tensor, x: torch.Tensor, lr: float, x_max: float = 100.0,
               alpha: float = 0.75) -> float:
    """One AdaGrad step of GloVe on a minibatch of nonzero entries ``X[i, j] = x``, in
    place; returns the summed loss. ``params = [W, W~, b, b~]`` (biases as ``V x 1``).

    With ``e = w_i . w~_j + b_i + b~_j - log x`` and ``g = 2 f(x) e``, the gradients are
    ``g w~_j`` for ``w_i``, ``g w_i`` for ``w~_j`` and ``g`` for both biases. They are
    summed per row (``index_add_``), then AdaGrad (Duchi et al., 2011) scales each
    coordinate by the root of its running sum of squared gradients,
    ``S += G^2;  theta -= lr G / sqrt(S)``: frequent words take smaller steps.
    """
    W, C, b, c = params
    w, u = W.index_select(0, i), C.index_select(0, j)
    err = (w * u).sum(-1) + b[i, 0] + c[j, 0] - torch.log(x)
    f = glove_weight(x, x_max, alpha)
    g = (2 * f * err).unsqueeze(-1)
    for P, S, rows, grad in ((W, sq_sums[0], i, g * u), (C, sq_sums[1], j, g * w),
                             (b, sq_sums[2], i, g), (c, sq_sums[3], j, g)):
        G = torch.zeros_like(P).index_add_(0, rows, grad)
        S.addcmul_(G, G)
        P.addcdiv_(G, S.sqrt().add_(1e-8), value=-lr)
    return float((f * err * err).sum())


def train_glove(X: sp.spmatrix, dim: int = 100, epochs: int = 10, lr: float = 0.05,
                x_max: float = 100.0, alpha: float = 0.75, batch_size: int = 16384,
                seed: int = 0, device: torch.device | str = "cpu") -> Trained:
    """GloVe (Pennington, Socher & Manning, 2014): minimise :func:`glove_loss` summed over
    the nonzero entries of ``X``, with AdaGrad (:func:`glove_step`) on shuffled
    minibatches (the reference code: one entry at a time, lr 0.05). Vectors start uniform
    in ``(-0.5/d, 0.5/d)``, biases at 0; the result is ``W + W~``, the paper's choice."""
    dev = torch.device(device)
    gen = torch.Generator().manual_seed(seed)
    X = sp.coo_matrix(X)
    rows = torch.from_numpy(X.row.astype(np.int64)).to(dev)
    cols = torch.from_numpy(X.col.astype(np.int64)).to(dev)
    vals = torch.from_numpy(X.data.astype(np.float32)).to(dev)
    V = X.shape[0]
    params = [((torch.rand(V, dim, generator=gen) - 0.5) / dim).to(dev) for _ in range(2)]
    params += [torch.zeros(V, 1, device=dev) for _ in range(2)]
    sq_sums = [torch.zeros_like(p) for p in params]
    losses = []
    start = time.perf_counter()
    for _ in range(epochs):
        order = torch.randperm(len(vals), generator=gen).to(dev)
        total = 0.0
        for s in range(0, len(vals), batch_size):
            k = order[s:s + batch_size]
            total += glove_step(params, sq_sums, rows[k], cols[k], vals[k], lr, x_max, alpha)
        losses.append(total / len(vals))
    return Trained((params[0] + params[1]).cpu().numpy(), losses,
                   time.perf_counter() - start, params[1].cpu().numpy())


# ---- using and judging embeddings ---------------------------------------------------------

def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


def cosine_similarity(a: np.ndarray, b: np.ndarray) -> float | np.ndarray:
    """``cos(a, b) = a . b / (|a| |b|)``: 1 for the same direction, 0 for orthogonal
    vectors, -1 for opposite ones. The length of the vectors does not matter."""
    return (_unit(np.asarray(a, dtype=np.float64))
            * _unit(np.asarray(b, dtype=np.float64))).sum(-1)


def most_similar(vectors: np.ndarray, words: Sequence[str], word: str | np.ndarray,
                 k: int = 10, exclude: Iterable[str] = ()) -> list[tuple[str, float]]:
    """The ``k`` words whose vectors have the largest cosine with ``word``'s vector (or
    with a given query vector), never the query word itself nor any word in ``exclude``."""
    index = {w: i for i, w in enumerate(words)}
    unit = _unit(vectors)
    skip = {index[w] for w in exclude if w in index}
    if isinstance(word, str):
        skip.add(index[word])
        query = unit[index[word]]
    else:
        query = _unit(np.asarray(word, dtype=unit.dtype))
    sims = unit @ query
    order = np.argsort(-sims, kind="stable")
    top = order[~np.isin(order, list(skip))][:k]
    return [(words[i], float(sims[i])) for i in top]


def analogy(vectors: np.ndarray, words: Sequence[str], a: str, b: str, c: str,
            k: int = 1) -> list[tuple[str, float]]:
    """``a : b :: c : ?`` by 3CosAdd (Mikolov et al., 2013a; Levy & Goldberg, 2014):

        argmax_x cos(x, b - a + c)     over unit vectors, x not in {a, b, c}

    (e.g. cairo : egypt :: rome : italy). Excluding the three query words matters: the
    nearest vector to ``b - a + c`` is very often ``b`` or ``c`` itself.
    """
    unit = _unit(vectors)
    index = {w: i for i, w in enumerate(words)}
    query = unit[index[b]] - unit[index[a]] + unit[index[c]]
    return most_similar(unit, words, query, k, exclude=(a, b, c))


# ---- intrinsic evaluation on the sets gensim ships ----------------------------------------

def _test_data(name: str) -> Path:
    from gensim.test.utils import datapath

    return Path(datapath(name))


def load_word_pairs(name: str = "wordsim353.tsv") -> list[tuple[str, str, float]]:
    """Word pairs with a human similarity score: ``wordsim353.tsv`` (353 pairs, relatedness
    and similarity mixed) or ``simlex999.txt`` (999 pairs, similarity only)."""
    pairs = []
    for line in _test_data(name).read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        a, b, score = line.split("\t")[:3]
        pairs.append((a, b, float(score)))
    return pairs


def load_analogies(name: str = "questions-words.txt") -> list[tuple[str, str, str, str, str]]:
    """Mikolov et al.'s analogy questions ``a b c d`` (a : b :: c : d) with their section,
    e.g. ``("capital-common-countries", "Athens", "Greece", "Baghdad", "Iraq")``."""
    out, section = [], ""
    for line in _test_data(name).read_text(encoding="utf-8").splitlines():
        if line.startswith(":"):
            section = line[1:].strip()
        elif line.strip():
            out.append((section, *line.split()[:4]))
    return out


def _normalise(word: str, transform: Callable[[str], str] | None) -> str:
    word = word.lower()
    return transform(word) if transform else word


def word_similarity(vectors: np.ndarray, words: Sequence[str],
                    pairs: Sequence[tuple[str, str, float]],
                    transform: Callable[[str], str] | None = None) -> tuple[float, float, int]:
    """Spearman's rho between cosine similarity and human scores over the pairs whose
    both words are in the vocabulary (lowercased, then ``transform``-ed, e.g. stemmed).
    Returns ``(rho, coverage, n)``: coverage is the fraction of pairs used."""
    from scipy.stats import spearmanr

    index = {w: i for i, w in enumerate(words)}
    unit = _unit(vectors)
    model, human = [], []
    for a, b, score in pairs:
        a, b = _normalise(a, transform), _normalise(b, transform)
        if a in index and b in index:
            model.append(float(unit[index[a]] @ unit[index[b]]))
            human.append(score)
    n = len(model)
    rho = float(spearmanr(model, human).statistic) if n > 2 else float("nan")
    return rho, n / max(len(pairs), 1), n


def analogy_ranks(vectors: np.ndarray, words: Sequence[str],
                  questions: Sequence[tuple[str, str, str, str, str]],
                  transform: Callable[[str], str] | None = None,
                  batch: int = 512) -> tuple[np.ndarray, float]:
    """For each question ``a : b :: c : d`` whose four words are in the vocabulary and
    distinct (after lowercasing and ``transform``), the rank of ``d`` among all words by
    3CosAdd, the query words excluded (rank 1 = answered right). Returns the ranks and
    the coverage (fraction of questions used)."""
    index = {w: i for i, w in enumerate(words)}
    ids = []
    for q in questions:
        ws = [_normalise(w, transform) for w in q[1:]]
        if len(set(ws)) == 4 and all(w in index for w in ws):
            ids.append([index[w] for w in ws])
    if not ids:
        return np.zeros(0, dtype=np.int64), 0.0
    unit = torch.from_numpy(_unit(vectors).astype(np.float32))
    ids_t = torch.tensor(ids)
    ranks = []
    for s in range(0, len(ids_t), batch):
        a, b, c, d = ids_t[s:s + batch].T
        rows = torch.arange(len(a))
        sims = (unit[b] - unit[a] + unit[c]) @ unit.T
        for col in (a, b, c):
            sims[rows, col] = -torch.inf
        ranks.append((sims > sims[rows, d].unsqueeze(1)).sum(1) + 1)
    return torch.cat(ranks).numpy(), len(ids) / len(questions)


def analogy_accuracy(vectors: np.ndarray, words: Sequence[str],
                     questions: Sequence[tuple[str, str, str, str, str]],
                     transform: Callable[[str], str] | None = None) -> tuple[float, float, int]:
    """3CosAdd accuracy over the questions :func:`analogy_ranks` can use (four distinct
    in-vocabulary words). Returns ``(accuracy, coverage, n)``."""
    ranks, coverage = analogy_ranks(vectors, words, questions, transform)
    acc = float((ranks == 1).mean()) if len(ranks) else float("nan")
    return acc, coverage, len(ranks)


def neighbour_agreement(a: np.ndarray, b: np.ndarray, probe: Sequence[int], k: int = 10
                        ) -> float:
    """Mean overlap ``|N_a(w) & N_b(w)| / k`` of the ``k`` cosine nearest neighbours of the
    ``probe`` word ids in two embeddings of the same vocabulary (rows aligned).

    1 means both embeddings see the same neighbourhoods, 0 that they share none. Two
    trainings of the same method with different seeds do not reach 1: that is the ceiling
    to compare other methods with.
    """
    probe = torch.as_tensor(np.asarray(probe))

    def neighbours(vectors: np.ndarray) -> torch.Tensor:
        unit = torch.from_numpy(_unit(vectors).astype(np.float32))
        sims = unit[probe] @ unit.T
        sims[torch.arange(len(probe)), probe] = -torch.inf
        return sims.topk(k, dim=1).indices

    na, nb = neighbours(a), neighbours(b)
    shared = (na.unsqueeze(2) == nb.unsqueeze(1)).any(2).sum(1)
    return float(shared.float().mean()) / k


"""Word vectors by counting: one-hot vectors, the word-context co-occurrence
matrix ``X`` of a symmetric window, TF-IDF word-document weights, and positive pointwise
mutual information (PPMI) of ``X`` compressed with a truncated SVD.

A corpus is a list of documents, each an array of word ids; every method returns a matrix
with one row per word.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import scipy.sparse as sp
import torch

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

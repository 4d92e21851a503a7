"""GloVe: a weighted least-squares fit of ``w_i . w~_j + b_i + b~_j`` to
``log X_ij`` over the nonzero co-occurrence counts, trained with AdaGrad (Pennington et al.,
2014).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np
import scipy.sparse as sp
import torch

from lmcourse import progress_bar
from lmcourse.models.embeddings.evaluate import load_word_pairs, word_similarity
from lmcourse.models.embeddings.word2vec import Trained

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
                seed: int = 0, device: torch.device | str = "cpu",
                callback: Callable[[int, np.ndarray], None] | None = None,
                tol: float | None = None, progress: bool = False,
                track: Callable[[np.ndarray], float] | None = None) -> Trained:
    """GloVe (Pennington, Socher & Manning, 2014): minimise :func:`glove_loss` summed over
    the nonzero entries of ``X``, with AdaGrad (:func:`glove_step`) on shuffled
    minibatches (the reference code: one entry at a time, lr 0.05). Vectors start uniform
    in ``(-0.5/d, 0.5/d)``, biases at 0; the result is ``W + W~``, the paper's choice.
    ``callback(epoch, vectors)``, if given, sees ``W + W~`` after every epoch;
    ``track(vectors)``, if given, is measured on them after every epoch into
    ``Trained.tracked`` (e.g. WordSim-353 with :func:`wordsim_score`).

    With ``tol``, training stops at the first epoch whose loss is less than ``tol`` below
    the previous one, relatively (``1 - J_t / J_{t-1} < tol``: the loss is flat), and
    ``epochs`` is only the cap."""
    if X.shape[0] != X.shape[1] or X.nnz == 0:
        raise ValueError(f"GloVe needs a square co-occurrence matrix with nonzero entries; "
                         f"got shape {X.shape} with {X.nnz} nonzeros")
    if np.any(X.data <= 0):
        raise ValueError("GloVe fits log X_ij: every stored entry must be positive "
                         "(drop explicit zeros with X.eliminate_zeros())")
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
    losses: list[float] = []
    tracked: list[float] | None = None if track is None else []
    start = time.perf_counter()
    bar = progress_bar(range(epochs), progress, desc=f"GloVe seed {seed}", leave=False)
    for _ in bar:
        order = torch.randperm(len(vals), generator=gen).to(dev)
        total = 0.0
        for s in range(0, len(vals), batch_size):
            k = order[s:s + batch_size]
            total += glove_step(params, sq_sums, rows[k], cols[k], vals[k], lr, x_max, alpha)
        losses.append(total / len(vals))
        bar.set_postfix(loss=f"{losses[-1]:.4f}")
        if callback is not None or tracked is not None:
            vectors = (params[0] + params[1]).cpu().numpy()
            if callback is not None:
                callback(len(losses), vectors)
            if tracked is not None:
                tracked.append(track(vectors))
        if tol is not None and len(losses) > 1 and 1 - losses[-1] / losses[-2] < tol:
            break
    return Trained((params[0] + params[1]).cpu().numpy(), losses,
                   time.perf_counter() - start, params[1].cpu().numpy(), tracked)


# ---- a score to measure after every epoch -------------------------------------------------

WORDSIM = "WordSim-353 Spearman rho, Porter stems"


def wordsim_score(words: Sequence[str]) -> Callable[[np.ndarray], float]:
    """``score(vectors)``: the WordSim-353 Spearman correlation of ``vectors`` (rows in the
    order of ``words``), words matched by their Porter stems."""
    from gensim.parsing.porter import PorterStemmer

    pairs, stem = load_word_pairs("wordsim353.tsv"), PorterStemmer().stem
    return lambda vectors: word_similarity(vectors, words, pairs, stem)[0]

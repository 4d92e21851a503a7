"""Using and judging word vectors: cosine nearest neighbours, 3CosAdd
analogies, word similarity (Spearman rho) and analogy accuracy on the test sets gensim
ships, and the overlap of nearest neighbours between two embeddings.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np
import torch

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


def _pair_cosines(vectors: np.ndarray, words: Sequence[str],
                  pairs: Sequence[tuple[str, str, float]],
                  transform: Callable[[str], str] | None) -> tuple[np.ndarray, np.ndarray]:
    """Cosine and human score of every pair whose two words are in the vocabulary."""
    index = {w: i for i, w in enumerate(words)}
    unit = _unit(vectors)
    kept = [(index[a], index[b], score) for a, b, score in (
        (_normalise(a, transform), _normalise(b, transform), s) for a, b, s in pairs)
        if a in index and b in index]
    cos = np.array([float(unit[i] @ unit[j]) for i, j, _ in kept])
    return cos, np.array([score for _, _, score in kept])


def word_similarity(vectors: np.ndarray, words: Sequence[str],
                    pairs: Sequence[tuple[str, str, float]],
                    transform: Callable[[str], str] | None = None) -> tuple[float, float, int]:
    """Spearman's rho between cosine similarity and human scores over the pairs whose
    both words are in the vocabulary (lowercased, then ``transform``-ed, e.g. stemmed).
    Returns ``(rho, coverage, n)``: coverage is the fraction of pairs used."""
    from scipy.stats import spearmanr

    model, human = _pair_cosines(vectors, words, pairs, transform)
    n = len(model)
    rho = float(spearmanr(model, human).statistic) if n > 2 else float("nan")
    return rho, n / max(len(pairs), 1), n


def rho_gap_interval(vectors_a: np.ndarray, vectors_b: np.ndarray, words: Sequence[str],
                     pairs: Sequence[tuple[str, str, float]],
                     transform: Callable[[str], str] | None = None, resamples: int = 1000,
                     seed: int = 0) -> tuple[float, float, float]:
    """How sure is ``rho_a - rho_b`` (Spearman against the human scores, two embeddings of
    the same vocabulary)? A paired bootstrap over the word pairs: the pairs are drawn with
    replacement ``resamples`` times and both rhos recomputed on each draw. Returns the gap
    on all pairs and the 2.5th and 97.5th percentiles of the resampled gaps."""
    from scipy.stats import rankdata

    cos_a, human = _pair_cosines(vectors_a, words, pairs, transform)
    cos_b, _ = _pair_cosines(vectors_b, words, pairs, transform)

    def rho(x: np.ndarray, y: np.ndarray) -> np.ndarray:  # row-wise Spearman
        rx, ry = rankdata(x, axis=-1), rankdata(y, axis=-1)
        rx, ry = rx - rx.mean(-1, keepdims=True), ry - ry.mean(-1, keepdims=True)
        return (rx * ry).sum(-1) / np.sqrt((rx ** 2).sum(-1) * (ry ** 2).sum(-1))

    draws = np.random.default_rng(seed).integers(0, len(human), (resamples, len(human)))
    gaps = rho(cos_a[draws], human[draws]) - rho(cos_b[draws], human[draws])
    gap = float(rho(cos_a, human) - rho(cos_b, human))
    return gap, float(np.percentile(gaps, 2.5)), float(np.percentile(gaps, 97.5))


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

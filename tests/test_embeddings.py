"""Word embeddings: every count, weight and gradient against a plain reference computation."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from scipy.stats import spearmanr

from lmcourse.data import WordCorpus
from lmcourse.models import embeddings as E
from lmcourse.models.embeddings import evaluate

TOY = [
    "the cat sat on the mat the cat ran".split(),
    "a dog sat on a log".split(),
    "the dog and the cat".split(),
    "birds sing".split(),
]


@pytest.fixture
def toy():
    return WordCorpus.from_documents(TOY)


# ---- the corpus ------------------------------------------------------------------------------

def test_corpus_orders_by_frequency_and_drops_rare_words():
    corpus = WordCorpus.from_documents(TOY, min_count=2)
    counts = Counter(w for d in TOY for w in d)
    assert corpus.words == sorted((w for w, c in counts.items() if c >= 2),
                                  key=lambda w: (-counts[w], w))
    assert corpus.counts.tolist() == [counts[w] for w in corpus.words]
    for doc, ids in zip(TOY, corpus.docs, strict=True):  # rare words removed, order kept
        assert [corpus.words[i] for i in ids] == [w for w in doc if counts[w] >= 2]


def test_one_hot_rows_are_orthonormal():
    e = E.one_hot(torch.tensor([2, 0, 3]), 4)
    assert torch.equal(e, torch.eye(4)[[2, 0, 3]])
    assert torch.equal(e @ e.T, torch.eye(3))


# ---- counting --------------------------------------------------------------------------------

@pytest.mark.parametrize("window", [1, 2, 4])
@pytest.mark.parametrize("weighting", ["count", "harmonic"])
def test_cooccurrence_matches_loops(toy, window, weighting):
    ref = np.zeros((len(toy), len(toy)))
    for doc in toy.docs:
        for t in range(len(doc)):
            for j in range(len(doc)):
                if j != t and abs(j - t) <= window:
                    ref[doc[t], doc[j]] += 1.0 if weighting == "count" else 1.0 / abs(j - t)
    got = E.cooccurrence(toy.docs, len(toy), window, weighting).toarray()
    np.testing.assert_allclose(got, ref, atol=1e-12)
    np.testing.assert_allclose(got, got.T)


def test_tfidf_matches_loops(toy):
    got = E.tfidf(E.term_document(toy.docs, len(toy))).toarray()
    ref = np.zeros((len(toy), len(TOY)))
    for j, doc in enumerate(TOY):
        for w in set(doc):
            df = sum(w in d for d in TOY)
            ref[toy.index[w], j] = doc.count(w) * math.log(len(TOY) / df)
    np.testing.assert_allclose(got, ref, atol=1e-12)


def test_tfidf_of_a_word_in_every_document_is_zero():
    corpus = WordCorpus.from_documents([["x", "a"], ["x", "b"], ["x", "x", "c"]])
    got = E.tfidf(E.term_document(corpus.docs, len(corpus))).toarray()
    assert np.all(got[corpus.index["x"]] == 0)
    assert got[corpus.index["a"], 0] == pytest.approx(math.log(3))


@pytest.mark.parametrize("alpha", [1.0, 0.75])
def test_ppmi_matches_loops(toy, alpha):
    X = E.cooccurrence(toy.docs, len(toy), window=2).toarray()
    total = X.sum()
    row = X.sum(axis=1)
    col = X.sum(axis=0)
    col_alpha_total = sum(c**alpha for c in col)
    ref = np.zeros_like(X)
    for w in range(len(toy)):
        for c in range(len(toy)):
            if X[w, c] > 0:
                pmi = math.log((X[w, c] / total)
                               / ((row[w] / total) * (col[c] ** alpha / col_alpha_total)))
                ref[w, c] = max(pmi, 0.0)
    got = E.ppmi(sp.csr_matrix(X), alpha=alpha)
    np.testing.assert_allclose(got.toarray(), ref, atol=1e-12)
    assert np.all(got.data > 0)  # sparse: zeros are not stored


def test_randomized_svd_matches_numpy():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((60, 8)) @ rng.standard_normal((8, 50))  # rank 8
    U, S, Vt = E.randomized_svd(sp.csr_matrix(A), 8)
    S_ref = np.linalg.svd(A, compute_uv=False)[:8]
    np.testing.assert_allclose(S, S_ref, rtol=1e-8)
    np.testing.assert_allclose((U * S) @ Vt, A, atol=1e-8)
    W = E.svd_embeddings(sp.csr_matrix(A), 8, power=0.5)
    np.testing.assert_allclose(np.abs(W), np.abs(U * np.sqrt(S)), atol=1e-5)


# ---- word2vec ingredients --------------------------------------------------------------------

def test_noise_distribution_and_table():
    counts = np.array([100, 10, 1])
    p = E.noise_distribution(counts)
    ref = np.array([c**0.75 for c in counts]) / sum(c**0.75 for c in counts)
    np.testing.assert_allclose(p, ref)
    table = E.noise_table(p, size=100_000)
    freq = np.bincount(table.numpy(), minlength=3) / len(table)
    np.testing.assert_allclose(freq, p, atol=1e-5)


def test_keep_probability_formula():
    counts = np.array([5000, 500, 50, 5])
    t = 1e-3
    got = E.keep_probability(counts, t)
    for c, p in zip(counts, got, strict=True):
        f = c / counts.sum()
        assert p == pytest.approx(min(1.0, (math.sqrt(f / t) + 1) * t / f))
    assert got[-1] == 1.0 and got[0] < 1.0


def _pairs_by_loops(doc, window, reach=None):
    out = []
    for t in range(len(doc)):
        b = window if reach is None else reach[t]
        for j in range(len(doc)):
            if j != t and abs(j - t) <= b:
                out.append((doc[t], doc[j]))
    return Counter(out)


def test_skipgram_pairs_match_loops():
    docs = [np.array([3, 1, 4, 1, 5, 9, 2]), np.array([6]), np.array([5, 3])]
    for window in (1, 2, 3, 10):
        c, o = E.skipgram_pairs(docs, window)
        want = sum((_pairs_by_loops(d.tolist(), window) for d in docs), Counter())
        assert Counter(zip(c.tolist(), o.tolist(), strict=True)) == want


def test_dynamic_windows_are_per_center():
    doc = np.arange(12)
    c, o = E.skipgram_pairs([doc], 4, rng=np.random.default_rng(3))
    reach = np.random.default_rng(3).integers(1, 5, size=len(doc))  # the same draws
    want = _pairs_by_loops(doc.tolist(), 4, reach.tolist())
    assert Counter(zip(c.tolist(), o.tolist(), strict=True)) == want
    assert list(c) == sorted(c)  # text order: by center position


def test_cbow_windows_match_loops():
    doc = np.array([7, 8, 9, 10, 11])
    centers, ctx = E.cbow_windows([doc, np.array([1])], 2)
    assert centers.tolist() == doc.tolist()  # the one-word document has no context
    for t, row in enumerate(ctx):
        want = sorted(doc[j] for j in range(len(doc)) if j != t and abs(j - t) <= 2)
        assert sorted(x for x in row.tolist() if x >= 0) == want


def test_negative_sampling_loss_by_hand():
    v, u_o = [0.4, -0.3, 0.2], [0.1, 0.5, -0.2]
    u_k = [[0.3, 0.2, -0.1], [-0.2, 0.4, 0.6], [0.5, -0.5, 0.0]]

    def log_sigmoid(x):
        return -math.log(1 + math.exp(-x))

    def dot(a, b):
        return sum(x * y for x, y in zip(a, b, strict=True))

    want = -log_sigmoid(dot(u_o, v)) - sum(log_sigmoid(-dot(u, v)) for u in u_k)
    got = E.negative_sampling_loss(torch.tensor([v], dtype=torch.float64),
                                   torch.tensor([u_o], dtype=torch.float64),
                                   torch.tensor([u_k], dtype=torch.float64))
    assert got.shape == (1,)
    assert got.item() == pytest.approx(want, abs=1e-12)


def test_sgns_step_is_sgd_on_the_summed_loss():
    g = torch.Generator().manual_seed(0)
    W_in = torch.randn(7, 3, generator=g, dtype=torch.float64)
    W_out = torch.randn(7, 3, generator=g, dtype=torch.float64)
    c, o = torch.tensor([0, 1, 0, 6]), torch.tensor([2, 2, 3, 0])
    n = torch.tensor([[4, 5], [4, 0], [1, 4], [6, 2]])
    A, B = W_in.clone().requires_grad_(), W_out.clone().requires_grad_()
    loss = E.negative_sampling_loss(A[c], B[o], B[n]).sum()
    loss.backward()
    value = E.sgns_step(W_in, W_out, c, o, n, lr=0.3)
    assert value == pytest.approx(loss.item(), abs=1e-12)
    torch.testing.assert_close(W_in, A.detach() - 0.3 * A.grad, atol=1e-12, rtol=0)
    torch.testing.assert_close(W_out, B.detach() - 0.3 * B.grad, atol=1e-12, rtol=0)


def test_cbow_step_gives_each_context_word_the_whole_gradient():
    g = torch.Generator().manual_seed(1)
    W_in = torch.randn(6, 3, generator=g, dtype=torch.float64)
    W_out = torch.randn(6, 3, generator=g, dtype=torch.float64)
    ctx = torch.tensor([[1, 2, -1, -1], [0, 2, 3, 4]])
    t, n = torch.tensor([5, 1]), torch.tensor([[3, 4], [5, 5]])
    means = torch.stack([W_in[row[row >= 0]].mean(0) for row in ctx]).requires_grad_()
    B = W_out.clone().requires_grad_()
    E.negative_sampling_loss(means, B[t], B[n]).sum().backward()
    want_in = W_in.clone()
    for b, row in enumerate(ctx):
        for w in row[row >= 0]:
            want_in[w] -= 0.2 * means.grad[b]
    E.sgns_step(W_in, W_out, ctx, t, n, lr=0.2)
    torch.testing.assert_close(W_in, want_in, atol=1e-12, rtol=0)
    torch.testing.assert_close(W_out, B.detach() - 0.2 * B.grad, atol=1e-12, rtol=0)


def test_glove_weight_and_step_match_torch_adagrad():
    x = torch.tensor([1.0, 50.0, 100.0, 400.0])
    torch.testing.assert_close(E.glove_weight(x), torch.tensor([0.01**0.75, 0.5**0.75, 1, 1]))
    g = torch.Generator().manual_seed(0)
    init = [torch.randn(4, 3, generator=g, dtype=torch.float64) * 0.3 for _ in range(2)]
    init += [torch.randn(4, 1, generator=g, dtype=torch.float64) * 0.1 for _ in range(2)]
    i, j = torch.tensor([0, 1, 0, 3]), torch.tensor([1, 0, 2, 3])
    xs = torch.tensor([2.0, 2.0, 30.0, 120.0], dtype=torch.float64)
    ours = [p.clone() for p in init]
    sq = [torch.zeros_like(p) for p in init]
    ref = [p.clone().requires_grad_() for p in init]
    opt = torch.optim.Adagrad(ref, lr=0.1, eps=1e-8)
    for _ in range(4):
        value = E.glove_step(ours, sq, i, j, xs, lr=0.1)
        opt.zero_grad()
        J = E.glove_loss(ref[0][i], ref[1][j], ref[2][i, 0], ref[3][j, 0], xs).sum()
        assert value == pytest.approx(J.item(), abs=1e-12)
        J.backward()
        opt.step()
    for a, b in zip(ours, ref, strict=True):
        torch.testing.assert_close(a, b.detach(), atol=1e-10, rtol=0)


# ---- training learns a planted structure -----------------------------------------------------

def _two_topics(seed=0, n_docs=60, segments=6, length=15):
    rng = np.random.default_rng(seed)
    words = [f"a{i}" for i in range(8)] + [f"b{i}" for i in range(8)]
    docs = []
    for d in range(n_docs):
        doc = []
        for s in range(segments):
            prefix = "a" if (d + s) % 2 else "b"
            doc += [f"{prefix}{k}" for k in rng.integers(0, 8, size=length)]
        docs.append(doc)
    return WordCorpus.from_documents(docs), words


def _same_topic_share(vectors, corpus, k=3):
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    sims = unit @ unit.T
    np.fill_diagonal(sims, -np.inf)
    top = np.argsort(-sims, axis=1)[:, :k]
    topic = np.array([w[0] for w in corpus.words])
    return float((topic[top] == topic[:, None]).mean())


@pytest.mark.parametrize("sg", [True, False])
def test_word2vec_learns_two_planted_topics(sg):
    corpus, _ = _two_topics()
    untrained = np.random.default_rng(0).standard_normal((len(corpus), 10))
    run = E.train_word2vec(corpus, dim=10, window=2, negative=3, epochs=5, sg=sg,
                           lr=0.025 if sg else 0.05, sample=0, batch_size=64)
    assert run.losses[-1] < run.losses[0]
    assert _same_topic_share(run.vectors, corpus) >= 0.95
    assert _same_topic_share(untrained, corpus) < 0.8  # the test can fail


def test_word2vec_stop_after_is_the_start_of_the_longer_run():
    corpus, _ = _two_topics()
    settings = dict(dim=6, window=2, negative=3, epochs=4, batch_size=64, seed=3)
    full = E.train_word2vec(corpus, **settings)
    start = E.train_word2vec(corpus, **settings, stop_after=2)
    assert start.losses == full.losses[:2]
    assert not np.array_equal(start.vectors, full.vectors)


def test_gensim_word2vec_gives_rows_in_our_order_and_refuses_another_vocabulary():
    corpus, words = _two_topics()
    documents = [[corpus.words[i] for i in doc] for doc in corpus.docs]
    run = E.gensim_word2vec(documents, corpus.words, dim=6, window=2, epochs=3, min_count=1)
    assert run.vectors.shape == run.context_vectors.shape == (len(corpus), 6)
    assert _same_topic_share(run.vectors, corpus) > _same_topic_share(
        np.random.default_rng(0).standard_normal((len(corpus), 6)), corpus)
    again = E.gensim_word2vec(documents, corpus.words, dim=6, window=2, epochs=3, min_count=1)
    np.testing.assert_array_equal(run.vectors, again.vectors)  # one worker: deterministic
    with pytest.raises(ValueError, match="vocabulary"):
        E.gensim_word2vec(documents, corpus.words[:-1], dim=6, window=2, min_count=1)


def test_glove_learns_two_planted_topics():
    corpus, _ = _two_topics()
    X = E.cooccurrence(corpus.docs, len(corpus), window=2, weighting="harmonic")
    run = E.train_glove(X, dim=10, epochs=30, lr=0.05, batch_size=64, x_max=10)
    assert run.losses[-1] < run.losses[0]
    assert _same_topic_share(run.vectors, corpus) >= 0.95


def test_glove_callback_sees_the_vectors_after_every_epoch():
    corpus, _ = _two_topics()
    X = E.cooccurrence(corpus.docs, len(corpus), window=2, weighting="harmonic")
    seen = []
    run = E.train_glove(X, dim=6, epochs=3, batch_size=64, x_max=10,
                        callback=lambda epoch, vec: seen.append((epoch, vec.copy())))
    assert [e for e, _ in seen] == [1, 2, 3]
    np.testing.assert_array_equal(seen[-1][1], run.vectors)
    assert not np.array_equal(seen[0][1], seen[-1][1])  # the vectors moved between epochs


def test_glove_stops_when_its_loss_is_flat_and_rejects_bad_matrices():
    corpus, _ = _two_topics()
    X = E.cooccurrence(corpus.docs, len(corpus), window=2, weighting="harmonic")
    run = E.train_glove(X, dim=6, epochs=200, batch_size=64, x_max=10, lr=0.05, tol=0.01)
    drops = [1 - b / a for a, b in zip(run.losses[:-1], run.losses[1:], strict=True)]
    assert 2 < len(run.losses) < 200  # it stopped, and not at once
    assert drops[-1] < 0.01 and all(d >= 0.01 for d in drops[:-1])
    with pytest.raises(ValueError, match="square"):
        E.train_glove(X[:, :-1])
    bad = X.tocsr(copy=True)
    bad.data[0] = 0.0
    with pytest.raises(ValueError, match="positive"):
        E.train_glove(bad)


def test_glove_tracks_a_score_after_every_epoch():
    corpus, _ = _two_topics()
    X = E.cooccurrence(corpus.docs, len(corpus), window=2, weighting="harmonic")
    run = E.train_glove(X, dim=6, epochs=40, batch_size=64, x_max=10, lr=0.05, tol=0.01,
                        track=lambda v: float(v.sum()))
    assert len(run.tracked) == len(run.losses) < 40
    assert run.tracked[-1] == pytest.approx(float(run.vectors.sum()), rel=1e-6)
    assert E.train_glove(X, dim=6, epochs=2, batch_size=64, x_max=10).tracked is None


def test_ppmi_svd_separates_two_planted_topics():
    corpus, _ = _two_topics()
    X = E.cooccurrence(corpus.docs, len(corpus), window=2)
    assert _same_topic_share(E.svd_embeddings(E.ppmi(X, 0.75), 4), corpus) >= 0.95


# ---- using and judging embeddings ------------------------------------------------------------

WORDS = ["a", "b", "c", "d", "e"]
VECS = np.array([[1, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0.9, 0.1], [0, 0, 1]], float)


def test_most_similar_never_returns_the_query_or_excluded_words():
    hits = E.most_similar(VECS, WORDS, "b", k=4)
    assert [w for w, _ in hits][0] == "a" and "b" not in [w for w, _ in hits]
    assert "a" not in [w for w, _ in E.most_similar(VECS, WORDS, "b", k=4, exclude=["a"])]
    sims = dict(E.most_similar(VECS, WORDS, "c", k=4))
    assert sims["d"] == pytest.approx(0.9 / math.sqrt(0.82))


def test_analogy_excludes_the_three_query_words():
    # b - a + c = c exactly: without the exclusion the answer would be c itself
    assert E.analogy(VECS, WORDS, "a", "b", "c")[0][0] == "d"
    answers = [w for w, _ in E.analogy(VECS, WORDS, "a", "b", "c", k=5)]
    assert not {"a", "b", "c"} & set(answers)


def test_cosine_similarity_limits():
    a = np.array([1.0, 2.0, 3.0])
    assert E.cosine_similarity(a, 5 * a) == pytest.approx(1.0)
    assert E.cosine_similarity(a, -a) == pytest.approx(-1.0)
    assert E.cosine_similarity(a, np.array([3.0, 0.0, -1.0])) == pytest.approx(0.0)


def test_word_similarity_is_spearman_on_covered_pairs():
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((len(WORDS), 3))
    pairs = [("A", "b", 3.0), ("c", "d", 1.0), ("a", "e", 2.0), ("zz", "a", 5.0),
             ("b", "e", 4.0)]
    rho, coverage, n = E.word_similarity(vectors, WORDS, pairs)
    covered = [p for p in pairs if p[0].lower() in WORDS and p[1] in WORDS]
    cos = [E.cosine_similarity(vectors[WORDS.index(a.lower())], vectors[WORDS.index(b)])
           for a, b, _ in covered]
    assert rho == pytest.approx(spearmanr(cos, [s for *_, s in covered]).statistic)
    assert (coverage, n) == (4 / 5, 4)


def test_analogy_accuracy_and_ranks():
    rng = np.random.default_rng(0)
    base = rng.standard_normal((4, 20))
    offset = rng.standard_normal(20)
    words = ["x0", "x1", "x2", "x3", "y0", "y1", "y2", "y3"]
    vectors = np.vstack([base, base + 3 * offset])  # yi = xi + offset: every analogy holds
    questions = [("s", "x0", "y0", "x1", "y1"), ("s", "x2", "y2", "x3", "y3"),
                 ("s", "x0", "y0", "x1", "y3"),  # wrong answer on purpose
                 ("s", "x0", "y0", "x0", "y0"),  # degenerate: not four distinct words
                 ("s", "x0", "y0", "q", "y1")]   # out of the vocabulary
    acc, coverage, n = E.analogy_accuracy(vectors, words, questions)
    assert (n, coverage) == (3, 3 / 5)
    assert acc == pytest.approx(2 / 3)
    ranks, _ = E.analogy_ranks(vectors, words, questions)
    assert ranks[0] == 1 and ranks[1] == 1 and ranks[2] > 1


def test_neighbour_agreement():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((50, 8))
    probe = np.arange(20)
    rotation, _ = np.linalg.qr(rng.standard_normal((8, 8)))
    assert E.neighbour_agreement(a, a * 3.0, probe, k=5) == pytest.approx(1.0)
    assert E.neighbour_agreement(a, a @ rotation, probe, k=5) == pytest.approx(1.0)
    b = rng.standard_normal((50, 8))

    def top(vectors, i, k=5):
        unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        sims = unit @ unit[i]
        sims[i] = -np.inf
        return set(np.argsort(-sims)[:k])

    want = np.mean([len(top(a, i) & top(b, i)) / 5 for i in probe])
    assert E.neighbour_agreement(a, b, probe, k=5) == pytest.approx(want)


def test_evaluation_sets_load_completely():
    pairs_ws, pairs_sl = E.load_word_pairs("wordsim353.tsv"), E.load_word_pairs("simlex999.txt")
    questions = E.load_analogies()
    lines = evaluate._test_data("questions-words.txt").read_text().splitlines()
    assert len(questions) == sum(1 for x in lines if x.strip() and not x.startswith(":"))
    assert len({q[0] for q in questions}) == sum(1 for x in lines if x.startswith(":"))
    for name, pairs in (("wordsim353.tsv", pairs_ws), ("simlex999.txt", pairs_sl)):
        text = evaluate._test_data(name).read_text().splitlines()
        assert len(pairs) == sum(1 for x in text if x.strip() and not x.startswith("#"))
    assert all(isinstance(s, float) for *_, s in pairs_ws + pairs_sl)


def test_plot_projections_draws_one_panel_per_embedding_with_the_legend_in_the_first():
    import matplotlib

    matplotlib.use("Agg")
    from lmcourse.viz.embeddings import plot_projections

    words = [f"w{i}" for i in range(6)]
    groups = {"a": words[:3], "b": words[3:]}
    rng = np.random.default_rng(0)
    fig = plot_projections({"one": rng.standard_normal((6, 4)),
                            "two": rng.standard_normal((6, 4))}, words, groups)
    first, second = fig.axes
    assert (first.get_title(), second.get_title()) == ("one", "two")
    assert len(first.collections) == len(second.collections) == 6  # a point per word
    assert first.get_legend() is not None and second.get_legend() is None
    assert [t.get_text() for t in first.get_legend().get_texts()] == ["a", "b"]


def test_rho_gap_interval_is_a_paired_bootstrap_over_word_pairs():
    import numpy as np

    from lmcourse.models.embeddings import rho_gap_interval, word_similarity

    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(60)]
    good = rng.normal(size=(60, 8))
    unit = good / np.linalg.norm(good, axis=1, keepdims=True)
    pairs = [(words[i], words[j], float(unit[i] @ unit[j]) + rng.normal(0, 0.05))
             for i, j in rng.integers(0, 60, (300, 2)) if i != j]
    noise = rng.normal(size=(60, 8))
    gap, low, high = rho_gap_interval(good, noise, words, pairs, resamples=300)
    rho_good, rho_noise = (word_similarity(v, words, pairs)[0] for v in (good, noise))
    assert gap == pytest.approx(rho_good - rho_noise)  # the same rho as word_similarity
    assert 0 < low < gap < high
    assert rho_gap_interval(good, good, words, pairs, resamples=50) == (0.0, 0.0, 0.0)

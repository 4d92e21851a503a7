# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown] slideshow={"slide_type": "slide"}
# # 04 · Word embeddings: one-hot vectors and counting
#
# A neural language model reads words, and a network can only read numbers. The first layer
# of every model in this course therefore maps each word to a vector, its **embedding**.
# This chapter asks what a good word vector is and builds them in the two ways the field
# found: by **counting** which words occur near which (co-occurrence, TF-IDF, PPMI, SVD)
# and by **predicting** neighbours (word2vec's skip-gram and CBOW, and GloVe, which
# predicts the counts themselves). All of them are built on the same real text and judged
# with the tests the field uses.
#
# This chapter has three parts: here one-hot vectors and the counting methods;
# chapter 4b predicts instead (word2vec and GloVe); chapter 4c evaluates every kind of
# vector side by side.
#
# By the end of it you will be able to
#
# - explain why one-hot vectors know nothing about similarity, and what the
#   *distributional hypothesis* offers instead;
# - compute a co-occurrence matrix, TF-IDF weights, PPMI and a truncated SVD, and check
#   each against a plain reference;
# - say what a cosine similarity of 0 or 1 really means, and why random vectors in high
#   dimension are nearly orthogonal.

# %% [markdown] slideshow={"slide_type": "skip"} tags=["run-card"]
# <details><summary>Run card: 7.8 s on a CPU, 700.5 MB of memory; GPU: not measured yet</summary>
#
# - **Time on a CPU:** 7.8 s normalised to the reference machine: 12 s wall on Intel(R) Xeon(R)
#   Processor, one torch thread, calibration 0.739 s against 0.482 s.
# - **Time on a GPU:** not measured yet.
# - **Peak memory:** 700.5 MB (the kernel's resident set).
# - **Last passed:** 2026-11-29, commit `8de5aec` (nbval, as `make test` runs it).
# - **Files read (2):**
#   - `gensim test data/head500.noblanks.cor` (2.3 MB)
#   - `gensim test data/lee_background.cor` (360.1 KB)
#
# Measured by the test run (`python -m tools.runcards`), not typed.
# </details>

# %% slideshow={"slide_type": "-"}
import math
import time

import matplotlib.pyplot as plt
import numpy as np
import scipy.sparse as sp
import torch

import lmcourse
from lmcourse import show
from lmcourse.data import WordCorpus, load_corpus, tokenize

# %% slideshow={"slide_type": "-"}
from lmcourse.models.embeddings import (
    cooccurrence,
    cosine_similarity,
    most_similar,
    one_hot,
    ppmi,
    randomized_svd,
    svd_embeddings,
    term_document,
    tfidf,
)
from lmcourse.viz.embeddings import plot_projections

# %% slideshow={"slide_type": "-"}

lmcourse.seed_everything(0)
dev = lmcourse.device()
torch.set_num_threads(1)  # one CPU thread, as every timing in chapters 04-4c
clock = time.perf_counter if lmcourse.on_gpu() else time.process_time  # CPU seconds on a CPU

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Words as symbols: one-hot vectors
#
# The simplest way to turn word number $w$ of a vocabulary $V$ into a vector is the
# **one-hot** vector $e_w \in \{0,1\}^{|V|}$: all zeros except a 1 in position $w$.
# Multiplying it by a weight matrix just selects a row, $e_w^\top E = E_w$, which is why an
# embedding layer is implemented as a lookup, never as a matrix product.

# %% slideshow={"slide_type": "-"}
show(one_hot)

# %% [markdown] slideshow={"slide_type": "-"}
# One-hot vectors are all the same distance apart: any two different words are orthogonal,
# so "cat" is exactly as unlike "dog" as it is unlike "carburettor". They are also as long
# as the vocabulary. Both problems are what an embedding fixes: a few hundred dense
# dimensions in which related words point in similar directions.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
E = one_hot(torch.tensor([0, 1, 2]), vocab_size=5)
print(E)
print("Gram matrix E E^T (dot products between the three words):")
print(E @ E.T)
E_table = torch.randn(5, 3, generator=torch.Generator().manual_seed(0))
d = (E @ E_table - E_table[:3]).abs().max().item()
print(f"one-hot times a matrix = row lookup: max |e_w^T E - E[w]| = {d:.1e}  (tolerance 0)")
assert d == 0

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The corpus: 330 thousand words of Wikipedia
#
# Everything in this chapter is trained on the same text: `head500.noblanks.cor`, the
# first documents of the **text8** Wikipedia dump that `gensim` ships for its tests. It is
# already preprocessed, and the preprocessing matters for everything below: lowercase, no
# punctuation or digits, **stop words removed** ("the", "of" are gone) and every word
# **Porter-stemmed** ("philosophy" → `philosophi`, "italy" → `itali`). We keep the words
# that occur at least 5 times (gensim's default `min_count`) and drop the rest from the
# text before windowing, as word2vec does.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
documents = [tokenize(doc) for doc in load_corpus("text8")]
corpus = WordCorpus.from_documents(documents, min_count=5)
V = len(corpus)
print(f"{len(documents)} documents, {sum(map(len, documents)):,} tokens, "
      f"{len({w for d in documents for w in d}):,} distinct words")
print(f"min_count=5: |V| = {V:,} words cover {corpus.num_tokens:,} tokens")
print("text:", " ".join(documents[0][:16]), "...")
print("most frequent:", " ".join(corpus.words[:12]))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## You shall know a word by the company it keeps
#
# The **distributional hypothesis** (Harris, 1954; Firth, 1957) says that words that occur
# in similar contexts have similar meanings. So describe a word by its contexts. Count, for
# every word $w$ and every context word $c$, how often $c$ appears within $L$ positions of
# $w$ (a symmetric window, inside the same document):
#
# $$X_{wc} = \sum_{t:\, x_t = w} \;\; \sum_{1 \le |o| \le L} \mathbb{1}[x_{t+o} = c].$$
#
# Row $X_w$ is then a $|V|$-dimensional description of $w$. $X$ is symmetric, and very
# sparse: most pairs of words never meet.

# %% [markdown] slideshow={"slide_type": "-"}
# **Try this first:** fill the blank in "a cup of ___ with milk". You guessed from the
# neighbours alone: that is the distributional hypothesis, which the rest of the chapter
# turns into vectors.

# %% slideshow={"slide_type": "-"}
show(cooccurrence)

# %% [markdown] slideshow={"slide_type": "-"}
# **Check** against the definition, written as plain loops, on the first 300 words of three
# documents (renumbered to a small vocabulary so a dense matrix fits):

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
small = [d[:300] for d in corpus.docs[:3]]
local = np.unique(np.concatenate(small))  # the word ids that occur, renumbered 0..n-1
small = [np.searchsorted(local, d) for d in small]
n_small, L = len(local), 2
ours = cooccurrence(small, n_small, window=L).toarray()
ref = np.zeros((n_small, n_small))
for doc in small:
    for t in range(len(doc)):
        for o in range(-L, L + 1):
            if o != 0 and 0 <= t + o < len(doc):
                ref[doc[t], doc[t + o]] += 1
d = np.abs(ours - ref).max()
print(f"{n_small} words, {int(ref.sum())} (word, context) pairs; max |ours - loops| = {d:.1e}"
      "  (tolerance 0)")
assert d == 0 and (ours == ours.T).all()

# %% [markdown] slideshow={"slide_type": "-"}
# On the whole corpus, with a window of $L = 5$ (the window every method below uses):

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
window = 5
X = cooccurrence(corpus.docs, V, window=window)
print(f"X: {V:,} x {V:,}, {X.nnz:,} nonzeros ({X.nnz / V**2:.2%} of the entries); "
      f"as a dense float32 matrix it would take {V * V * 4 / 2**20:.0f} MiB")
king = corpus.index["king"]
row = X[king].toarray().ravel()
print("most frequent contexts of 'king':",
      ", ".join(f"{corpus.words[c]} ({int(row[c])})" for c in np.argsort(-row, kind="stable")[:8]))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## TF-IDF: words described by the documents they occur in
#
# The information-retrieval view uses *documents* as contexts. The term-document matrix
# counts how often word $w$ occurs in document $d$, $\mathrm{tf}_{wd}$. Raw counts favour
# words that are everywhere, so each row is weighted by the **inverse document frequency**
# (Salton & Buckley, 1988). We use the plainest variant: raw counts, natural logarithm,
# no smoothing,
#
# $$\mathrm{tfidf}_{wd} = \mathrm{tf}_{wd}\,\log\frac{N}{\mathrm{df}_w},$$
#
# where $N$ is the number of documents and $\mathrm{df}_w$ the number that contain $w$. A
# word in every document gets weight 0: it cannot tell documents apart. (Libraries differ:
# gensim's `TfidfModel` uses $\log_2$ and normalises each document; scikit-learn adds 1 to
# the idf and smooths $\mathrm{df}$. Always say which variant you use.)

# %% slideshow={"slide_type": "-"}
show(term_document)
show(tfidf)

# %% slideshow={"slide_type": "-"}
toy_docs = [["cat", "sat", "mat", "cat"], ["dog", "sat", "log"], ["cat", "dog", "ran"],
            ["bird", "sat", "sang"]]
toy = WordCorpus.from_documents(toy_docs)
got = tfidf(term_document(toy.docs, len(toy))).toarray()
ref = np.zeros_like(got)
for j, doc in enumerate(toy_docs):
    for w in set(doc):
        df = sum(w in other for other in toy_docs)
        ref[toy.index[w], j] = doc.count(w) * math.log(len(toy_docs) / df)
d = np.abs(got - ref).max()
print("tf-idf of 'cat' in the 4 documents:", np.round(got[toy.index["cat"]], 4))
print("tf-idf of 'sat' in the 4 documents:", np.round(got[toy.index["sat"]], 4))
print(f"max |ours - loops| = {d:.1e}  (tolerance 1e-12)")
assert d < 1e-12

# %% [markdown] slideshow={"slide_type": "-"}
# With only 250 documents, a word's TF-IDF row says which *articles* it belongs to, so
# its neighbours are words of the same topic (relatedness), not words that could replace it
# (similarity). We will also compress these rows with an SVD below, which is **latent
# semantic analysis** (Deerwester et al., 1990).

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
T = tfidf(term_document(corpus.docs, V))


def sparse_neighbours(M: sp.spmatrix, word: str, k: int = 8) -> str:
    """Cosine nearest neighbours of a word among the rows of a sparse matrix."""
    M = sp.csr_matrix(M)
    norms = np.sqrt(np.asarray(M.multiply(M).sum(axis=1)).ravel()) + 1e-12
    i = corpus.index[word]
    sims = (M @ M[i].T).toarray().ravel() / (norms * norms[i])
    sims[i] = -1
    return ", ".join(corpus.words[j] for j in np.argsort(-sims, kind="stable")[:k])


print(f"TF-IDF over {T.shape[1]} documents, neighbours of 'king':", sparse_neighbours(T, "king"))
print("raw counts X (window 5),  neighbours of 'king':", sparse_neighbours(X, "king"))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Pointwise mutual information
#
# Raw co-occurrence counts are dominated by frequent words: `state` and `american` are near
# everything. What matters is whether $c$ appears near $w$ *more often than chance*. That is
# the **pointwise mutual information** (Church & Hanks, 1990), with probabilities estimated
# from $X$:
#
# $$\mathrm{PMI}(w,c) = \log\frac{P(w,c)}{P(w)\,P_\alpha(c)}, \qquad
# P(w,c) = \frac{X_{wc}}{\sum X}, \quad P(w) = \frac{\sum_c X_{wc}}{\sum X}, \quad
# P_\alpha(c) = \frac{(\sum_w X_{wc})^\alpha}{\sum_{c'} (\sum_w X_{wc'})^\alpha}.$$
#
# PMI is 0 for independent words, positive for words that attract each other and
# $-\infty$ for pairs never seen. Negative values are unreliable on a small corpus (you need
# a lot of text to be sure two words *avoid* each other), so we keep the **positive PMI**,
# $\mathrm{PPMI} = \max(\mathrm{PMI}, 0)$, which is also sparse. Rare contexts get inflated
# PMI; raising the context counts to $\alpha = 0.75$ (**context-distribution smoothing**,
# Levy, Goldberg & Dagan, 2015, borrowed from word2vec's noise distribution, chapter 4b) gives
# them a little more probability mass and so a little less PMI.

# %% slideshow={"slide_type": "-"}
show(ppmi)

# %% [markdown] slideshow={"slide_type": "-"}
# **Check** against the formula in dense NumPy on the small block from before, with and
# without smoothing:

# %% slideshow={"slide_type": "-"}
X_small = cooccurrence(small, n_small, window=L).toarray()
for alpha in (1.0, 0.75):
    P_wc = X_small / X_small.sum()
    P_w = X_small.sum(axis=1) / X_small.sum()
    P_c = X_small.sum(axis=0) ** alpha / (X_small.sum(axis=0) ** alpha).sum()
    with np.errstate(divide="ignore"):
        ref = np.maximum(np.log(P_wc / np.outer(P_w, P_c)), 0)
    got = ppmi(sp.csr_matrix(X_small), alpha=alpha).toarray()
    d = np.abs(got - ref).max()
    print(f"alpha = {alpha}: {int((got > 0).sum())} positive entries, "
          f"max |ours - dense| = {d:.1e}  (tolerance 1e-12)")
    assert d < 1e-12

# %% slideshow={"slide_type": "-"}
M = ppmi(X, alpha=0.75)
print(f"PPMI: {M.nnz:,} positive entries of {X.nnz:,} nonzero counts")
print("PPMI rows, neighbours of 'king':", sparse_neighbours(M, "king"))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Dense vectors from a truncated SVD
#
# PPMI rows are long ($|V|$ entries) and noisy. The singular value decomposition
# $M = U \Sigma V^\top$ gives the best rank-$d$ approximation $M \approx U_d \Sigma_d V_d^\top$
# (Eckart-Young); its left factor is a $d$-dimensional vector for every word. Following Levy,
# Goldberg & Dagan (2015) we split the singular values symmetrically between words and
# contexts,
#
# $$W = U_d\, \Sigma_d^{\,p}, \qquad p = \tfrac12 .$$
#
# We only need the top $d = 100$ singular triplets of a sparse $8087 \times 8087$ matrix,
# which a **randomized SVD** (Halko, Martinsson & Tropp, 2011) finds from a few products with
# $M$: project onto random directions, sharpen with power iterations, orthonormalise, and
# decompose the small matrix that is left.

# %% slideshow={"slide_type": "-"}
show(randomized_svd)
show(svd_embeddings)

# %% [markdown] slideshow={"slide_type": "-"}
# **Check** against the exact `np.linalg.svd` of a dense block of the PPMI matrix (the 500
# most frequent words): the largest singular values must agree closely, the 100th less so
# (the randomized method is approximate at the tail, where the spectrum is flat).

# %% slideshow={"slide_type": "-"}
block = M[:500, :500].toarray()
exact = np.linalg.svd(block, compute_uv=False)
_, approx, _ = randomized_svd(sp.csr_matrix(block), 100)
rel = np.abs(approx - exact[:100]) / exact[:100]
print(f"relative error of singular values 1-10: {rel[:10].max():.1e} (tolerance 1e-6); "
      f"of 1-100: {rel.max():.1e} (tolerance 0.1)")
assert rel[:10].max() < 1e-6 and rel.max() < 0.1

# %% slideshow={"slide_type": "-"}
dim = 100
timings, vectors = {}, {}
start = clock()
vectors["PPMI + SVD"] = svd_embeddings(ppmi(cooccurrence(corpus.docs, V, window), 0.75), dim)
timings["PPMI + SVD"] = clock() - start
start = clock()
vectors["TF-IDF + SVD (LSA)"] = svd_embeddings(tfidf(term_document(corpus.docs, V)), dim)
timings["TF-IDF + SVD (LSA)"] = clock() - start
for name in ("PPMI + SVD", "TF-IDF + SVD (LSA)"):
    print(f"{name:>20}: {timings[name]:.1f} s; neighbours of 'king':",
          ", ".join(w for w, _ in most_similar(vectors[name], corpus.words, "king", 8)))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Cosine similarity, and what 0 and 1 mean
#
# Embeddings are compared by the angle between them,
#
# $$\cos(a, b) = \frac{a \cdot b}{\lVert a\rVert\,\lVert b\rVert} \in [-1, 1].$$
#
# A cosine of **1** means the two vectors point the same way (the most similar two words can
# be; their lengths do not matter), **0** means they are orthogonal, and **−1** that they
# point in opposite directions. (Careful: it is sometimes written the other way round; a
# cosine of 0 is *not* "overlapping".) The length is discarded on purpose: in count-based
# and predicted vectors alike, it mostly grows with the word's frequency.

# %% slideshow={"slide_type": "-"}
show(cosine_similarity)

# %% [markdown] slideshow={"slide_type": "-"}
# What is a *large* cosine? In high dimension, two random directions are almost orthogonal:
# for independent Gaussian vectors in $\mathbb{R}^d$, $\cos$ has mean 0 and standard
# deviation $1/\sqrt{d}$. So a cosine of 0.3 is unremarkable in 10 dimensions and very
# unlikely by chance in 1,000. Measured (keep the question "compared with what?" in mind; we
# come back to it once the word vectors are trained):

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
rng = np.random.default_rng(0)
for d in (2, 10, 100, 1000):
    a, b = rng.standard_normal((2, 5000, d))
    cos = cosine_similarity(a, b)
    print(f"d = {d:>4}: mean cos {cos.mean():+.3f}, std {cos.std():.3f} "
          f"(1/sqrt(d) = {1 / math.sqrt(d):.3f}), mean |cos| {np.abs(cos).mean():.3f}")
    assert abs(cos.std() * math.sqrt(d) - 1) < 0.05

# %% [markdown] slideshow={"slide_type": "-"}
# The same as a picture, and the comparison that matters for word vectors: the cosines of
# random *pairs of words* (among the 1,000 most frequent) under PPMI + SVD, beside random
# directions in the same 100 dimensions.

# %% slideshow={"slide_type": "-"}
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.4))
for d in (10, 100, 1000):
    a, b = rng.standard_normal((2, 5000, d))
    ax1.hist(cosine_similarity(a, b), bins=60, histtype="step", density=True, label=f"d = {d}")
ax1.set(xlabel="cosine of two random Gaussian vectors", ylabel="density",
        title="random directions are nearly orthogonal")
ax1.legend(fontsize=8)
W = vectors["PPMI + SVD"]
pairs = rng.integers(0, 1000, size=(2, 5000))  # word ids are in order of frequency
word_cos = cosine_similarity(W[pairs[0]], W[pairs[1]])
a, b = rng.standard_normal((2, 5000, W.shape[1]))
random_cos = cosine_similarity(a, b)
ax2.hist(random_cos, bins=60, histtype="step", density=True, label=f"random, d = {dim}")
ax2.hist(word_cos, bins=60, histtype="step", density=True, label="PPMI + SVD, word pairs")
ax2.set(xlabel="cosine", title="unrelated words are not at 0")
ax2.legend(fontsize=8)
fig.tight_layout()
plt.show()
print(f"mean cosine: random word pairs {word_cos.mean():+.3f} (std {word_cos.std():.3f}), "
      f"random directions {random_cos.mean():+.3f} (std {random_cos.std():.3f})")

# %% [markdown] slideshow={"slide_type": "-"}
# Word vectors built from counts share a common direction (every word co-occurs with the
# frequent ones), so random pairs of words have positive cosines (the printed mean,
# against 0 for random directions) and a longer tail of large ones: a "similar" word must
# stand out against *this* distribution, not against 0. Projected to two dimensions (PCA
# fitted on these words only), the groups below sit together under PPMI + SVD; TF-IDF,
# which compares words by the documents they share, gives a looser picture, in which
# *black* and *white* leave the other colours.

# %% slideshow={"slide_type": "-"}
groups = {
    "family": ["father", "mother", "son", "daughter", "brother", "sister"],
    "colours": ["red", "blue", "green", "white", "black"],
    "countries": ["egypt", "itali", "franc", "germani", "greec", "england"],
}
plot_projections({name: vectors[name] for name in ("PPMI + SVD", "TF-IDF + SVD (LSA)")},
                 corpus.words, groups)
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - One-hot vectors are orthogonal and $|V|$ long; embeddings are short dense vectors in
#   which related words point in similar directions, learned from the **company words keep**.
# - **Counting:** the co-occurrence matrix of a symmetric window; **TF-IDF**
#   ($\mathrm{tf}\cdot\log N/\mathrm{df}$) with documents as contexts gives topical
#   relatedness; **PPMI** keeps the pairs that meet more often than chance (with context
#   smoothing $\alpha = 0.75$); a truncated **SVD** ($U_d\Sigma_d^{1/2}$) makes it dense.
# - **Cosine** is 1 for the same direction, 0 for orthogonal; random vectors in $d$
#   dimensions have cosines of size $1/\sqrt d$, and unrelated *words* are not at 0.
#
# Chapter 4b predicts instead (word2vec and GloVe), and chapter 4c evaluates every kind of
# vector.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises
#
# 1. *(warm-up)* Show that a word occurring in every document has TF-IDF 0 everywhere, and
#    that for one-hot vectors every pairwise cosine is 0 and every Euclidean distance
#    $\sqrt2$. What does that say about using one-hot vectors with a nearest-neighbour
#    classifier?
# 2. *(warm-up)* Compute the PPMI matrix of the co-occurrence counts
#    $X = \begin{pmatrix} 2 & 1 \\ 1 & 0 \end{pmatrix}$ by hand (no context smoothing,
#    $\alpha = 1$), and check with `ppmi`.

# %% [markdown] slideshow={"slide_type": "skip"}
# <details><summary>Worked answer to exercise 1</summary>
#
# ```python
# import numpy as np
# import scipy.sparse as sp
#
# from lmcourse.models.embeddings.counts import tfidf
#
# tf = sp.csr_matrix(np.array([[3, 1, 2],      # word 0 occurs in all three documents
#                              [0, 2, 0],
#                              [1, 0, 4]]))
# assert np.allclose(tfidf(tf).toarray()[0], 0)  # log(N / df) = log(3 / 3) = 0
# one_hot = np.eye(5)
# cosines = one_hot @ one_hot.T
# distances = np.linalg.norm(one_hot[:, None] - one_hot[None], axis=-1)
# off = ~np.eye(5, dtype=bool)
# assert np.allclose(cosines[off], 0) and np.allclose(distances[off], np.sqrt(2))
# ```
#
# $\mathrm{idf} = \log(N/\mathrm{df}) = \log 1 = 0$ for a word in every document. Two
# different one-hot vectors share no coordinate: their dot product is 0 and
# $\lVert e_i - e_j\rVert^2 = 1 + 1$. Every word is then equally far from every other,
# so a nearest-neighbour classifier on one-hot vectors has nothing to go on but identity.
# </details>

# %% [markdown] slideshow={"slide_type": "skip"}
# <details><summary>Worked answer to exercise 2</summary>
#
# ```python
# import math
#
# import numpy as np
# import scipy.sparse as sp
#
# from lmcourse.models.embeddings import ppmi
#
# X = sp.csr_matrix(np.array([[2.0, 1.0], [1.0, 0.0]]))
# N, rows, cols = 4.0, [3.0, 1.0], [3.0, 1.0]     # total, word and context counts
# pmi_01 = math.log((1 / N) / ((rows[0] / N) * (cols[1] / N)))   # log 4/3
# by_hand = np.array([[0.0, pmi_01], [pmi_01, 0.0]])  # log 8/9 < 0 and log 0 become 0
# assert np.allclose(ppmi(X, alpha=1.0).toarray(), by_hand)
# print(by_hand)
# ```
#
# With $N = 4$: $\mathrm{PMI}(0,0) = \log\frac{2/4}{(3/4)(3/4)} = \log\frac{8}{9} < 0$,
# $\mathrm{PMI}(0,1) = \mathrm{PMI}(1,0) = \log\frac{1/4}{(3/4)(1/4)} = \log\frac43 = 0.288$,
# and the zero count has $\mathrm{PMI} = -\infty$. PPMI keeps only the positive value: the
# two words that meet *more* often than their frequencies predict.
# </details>

# %% [markdown] slideshow={"slide_type": "slide"}
# ## References
#
# - Z. S. Harris (1954). *Distributional structure*. Word 10(2-3).
# - J. R. Firth (1957). *A synopsis of linguistic theory, 1930-1955*. Studies in Linguistic
#   Analysis.
# - G. Salton, C. Buckley (1988). *Term-weighting approaches in automatic text retrieval*.
#   Information Processing & Management 24(5).
# - K. W. Church, P. Hanks (1990). *Word association norms, mutual information, and
#   lexicography*. Computational Linguistics 16(1).
# - S. Deerwester, S. T. Dumais, G. W. Furnas, T. K. Landauer, R. Harshman (1990). *Indexing
#   by latent semantic analysis*. JASIS 41(6).
# - T. Mikolov, K. Chen, G. Corrado, J. Dean (2013a). *Efficient estimation of word
#   representations in vector space*. ICLR Workshop (arXiv:1301.3781).
# - T. Mikolov, I. Sutskever, K. Chen, G. Corrado, J. Dean (2013b). *Distributed
#   representations of words and phrases and their compositionality*. NeurIPS.
# - T. Mikolov, W. Yih, G. Zweig (2013). *Linguistic regularities in continuous space word
#   representations*. NAACL-HLT.
# - J. Pennington, R. Socher, C. D. Manning (2014). *GloVe: Global vectors for word
#   representation*. EMNLP.
# - O. Levy, Y. Goldberg (2014). *Neural word embedding as implicit matrix factorization*.
#   NeurIPS.
# - O. Levy, Y. Goldberg (2014). *Linguistic regularities in sparse and explicit word
#   representations*. CoNLL.
# - O. Levy, Y. Goldberg, I. Dagan (2015). *Improving distributional similarity with lessons
#   learned from word embeddings*. TACL 3.
# - N. Halko, P.-G. Martinsson, J. A. Tropp (2011). *Finding structure with randomness:
#   probabilistic algorithms for constructing approximate matrix decompositions*. SIAM
#   Review 53(2).
# - J. Duchi, E. Hazan, Y. Singer (2011). *Adaptive subgradient methods for online learning
#   and stochastic optimization*. JMLR 12.
# - L. Finkelstein, E. Gabrilovich, Y. Matias, E. Rivlin, Z. Solan, G. Wolfman, E. Ruppin
#   (2002). *Placing search in context: the concept revisited*. ACM TOIS 20(1).
# - F. Hill, R. Reichart, A. Korhonen (2015). *SimLex-999: evaluating semantic models with
#   (genuine) similarity estimation*. Computational Linguistics 41(4).
# - D. Mimno, L. Thompson (2017). *The strange geometry of skip-gram with negative
#   sampling*. EMNLP.
# - R. Řehůřek, P. Sojka (2010). *Software framework for topic modelling with large corpora*
#   (gensim). LREC Workshop on New Challenges for NLP Frameworks.

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
# # 4b · Word embeddings by prediction: word2vec and GloVe
#
# Chapter 04 built word vectors by counting: co-occurrences, TF-IDF, PPMI and a truncated
# SVD, on 300 thousand words of Wikipedia text. word2vec turns the question around: it
# *predicts* a word's neighbours and keeps the vectors that predict well; GloVe predicts
# the logarithm of the counts themselves. This chapter derives and trains both on the same
# text, side by side with `gensim`, and ends where it began: skip-gram, too, turns out to
# fit a matrix of counts. Chapter 4c puts every kind of vector to the tests the field uses.
#
# By the end of it you will be able to
#
# - derive and implement **skip-gram and CBOW with negative sampling** (noise distribution,
#   subsampling, dynamic windows, the gradient), vectorised over minibatches, and check one
#   step against autograd;
# - derive and implement **GloVe**'s weighted least squares with AdaGrad, choose its weight
#   cap from the corpus's counts, and decide when it has trained enough;
# - train both beside gensim's compiled word2vec with the same settings, and test Levy &
#   Goldberg's result that skip-gram factorises a shifted PMI matrix.

# %% [markdown] slideshow={"slide_type": "skip"} tags=["run-card"]
# <details><summary>Run card: 21 s on a CPU, 758.2 MB of memory; GPU: not measured yet</summary>
#
# - **Time on a CPU:** 21 s normalised to the reference machine: 32 s wall on Intel(R) Xeon(R)
#   Processor, one torch thread, calibration 0.739 s against 0.482 s.
# - **Time on a GPU:** not measured yet.
# - **Peak memory:** 758.2 MB (the kernel's resident set).
# - **Last passed:** 2026-11-29, commit `8de5aec` (nbval, as `make test` runs it).
# - **Files read (7):**
#   - `course cache/glove-3a61012af2db3b1d.safetensors` (6.5 MB)
#   - `course cache/glove-6a29dee8a5509e31.safetensors` (6.5 MB)
#   - `course cache/glove-f29513481270991b.safetensors` (6.5 MB)
#   - `course cache/word2vec-c2b9478024278d1f.safetensors` (51.8 MB)
#   - `gensim test data/head500.noblanks.cor` (2.3 MB)
#   - `gensim test data/lee_background.cor` (360.1 KB)
#   - `gensim test data/wordsim353.tsv` (7.2 KB)
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
from lmcourse.metrics import mean_spread

# %% slideshow={"slide_type": "-"}
from lmcourse.models.embeddings import (
    cbow_windows,
    cooccurrence,
    gensim_word2vec,
    glove_loss,
    glove_step,
    glove_weight,
    keep_probability,
    negative_sampling_loss,
    noise_distribution,
    sgns_step,
    skipgram_pairs,
    train_glove,
    train_word2vec,
    window_reach,
)
from lmcourse.viz.word2vec_diagrams import draw_word2vec

# %% slideshow={"slide_type": "-"}
lmcourse.seed_everything(0)
dev = lmcourse.device()
torch.set_num_threads(1)  # one core, as gensim's one worker below
clock = time.perf_counter if lmcourse.on_gpu() else time.process_time  # CPU seconds on a CPU

# chapter 04's corpus and counts, rebuilt (a few seconds)
documents = [tokenize(doc) for doc in load_corpus("text8")]
corpus = WordCorpus.from_documents(documents, min_count=5)
V, window, dim, seeds = len(corpus), 5, 100, (0, 1, 2)
X = cooccurrence(corpus.docs, V, window=window)
print(f"|V| = {V:,} words, {corpus.num_tokens:,} tokens; X has {X.nnz:,} nonzeros")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## word2vec: predict the neighbours
#
# Mikolov et al. (2013a) turned the counting around: instead of building $X$ and
# factorising it, **train a classifier to predict the context**, one window at a time, and
# keep its weights. Each word has two vectors, an input ("center") vector $v_w$ and an
# output ("context") vector $u_w$. Two architectures:
#
# - **skip-gram**: from the center word, predict each word of its window,
#   $P(o \mid c) = \dfrac{\exp(u_o^\top v_c)}{\sum_{w \in V}\exp(u_w^\top v_c)}$;
# - **CBOW** (continuous bag of words): from the average of the window's input vectors,
#   $\bar v = \frac{1}{|C|}\sum_{c \in C} v_c$, predict the center word.
#
# CBOW sees each position once and is fast; it smooths over the context and does well on
# frequent words. Skip-gram makes one example per (center, context) pair, about $L+1$ times
# more work, and represents rare words better.

# %% slideshow={"slide_type": "-"}
draw_word2vec()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# The softmax's denominator sums over the whole vocabulary for every pair: far too slow.
# **Negative sampling** (Mikolov et al., 2013b) replaces the $|V|$-way classification by $K+1$
# binary ones: is $(c, o)$ a real pair (label 1), or $(c, w_k)$ with $w_k$ a random *noise*
# word (label 0)? With $\sigma(x) = 1/(1+e^{-x})$, the loss of one pair is
#
# $$\ell(c, o) = -\log \sigma(u_o^\top v_c) \;-\; \sum_{k=1}^{K} \log \sigma(-u_{w_k}^\top v_c),
# \qquad w_k \sim P_n .$$
#
# It pushes the true context's score up and the $K$ noise words' scores down. Note the
# *minus* inside the second sigmoid: $\sigma(-s) = 1 - \sigma(s)$ is the probability of
# "not a real pair".

# %% slideshow={"slide_type": "-"}
show(negative_sampling_loss)

# %% [markdown] slideshow={"slide_type": "-"}
# **Check** on three-dimensional vectors, against the formula evaluated with `math`:

# %% slideshow={"slide_type": "-"}
v_c = [0.5, -0.2, 0.1]
u_o = [0.3, 0.4, -0.1]
u_noise = [[0.2, 0.1, 0.0], [-0.3, 0.2, 0.5]]


def sigma(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def dot(a: list, b: list) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


by_hand = -math.log(sigma(dot(u_o, v_c))) - sum(math.log(sigma(-dot(u, v_c))) for u in u_noise)
ours = negative_sampling_loss(torch.tensor([v_c], dtype=torch.float64),
                              torch.tensor([u_o], dtype=torch.float64),
                              torch.tensor([u_noise], dtype=torch.float64)).item()
print(f"loss: ours {ours:.12f}, by hand {by_hand:.12f}, |difference| {abs(ours - by_hand):.1e}"
      "  (tolerance 1e-12)")
assert abs(ours - by_hand) < 1e-12

# %% [markdown] slideshow={"slide_type": "slide"}
# ### Which noise words, and which words to skip
#
# **Noise distribution.** Negatives are drawn from the unigram distribution raised to the
# power 3/4 and renormalised,
#
# $$P_n(w) = \frac{\mathrm{count}(w)^{3/4}}{\sum_{w'} \mathrm{count}(w')^{3/4}},$$
#
# which Mikolov et al. (2013b) found to work better than either the unigram ($\tfrac34 \to
# 1$) or the uniform distribution ($\to 0$): frequent words are still drawn more often, but
# less overwhelmingly.
#
# **Subsampling of frequent words.** A very frequent word carries little information about
# its neighbours and costs many updates. Each occurrence of a word with relative frequency
# $f(w)$ is therefore dropped at random before the windows are built. The paper discards it
# with probability $1 - \sqrt{t/f(w)}$; the released C code, and gensim, *keep* it with
# probability
#
# $$p_{\text{keep}}(w) = \min\!\Big(1,\; \big(\sqrt{f(w)/t} + 1\big)\,\frac{t}{f(w)}\Big),$$
#
# a smoother variant, which is the one we implement. The paper's $t = 10^{-5}$ suits billions
# of words; on our 300 thousand it would throw away most of the text, so we use gensim's
# default $t = 10^{-3}$. Since the removed words are gone, windows reach a little further.

# %% slideshow={"slide_type": "-"}
show(noise_distribution)
show(keep_probability)

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
unigram = corpus.counts / corpus.counts.sum()
noise = noise_distribution(corpus.counts)
keep = {t: keep_probability(corpus.counts, t) for t in (1e-3, 1e-5)}
print(f"{'word':>8} {'count':>6} {'unigram':>8} {'noise':>8} {'keep t=1e-3':>12}"
      f" {'keep t=1e-5':>12}")
for w in ("state", "war", "king", "itali", "cairo"):
    i = corpus.index[w]
    print(f"{w:>8} {corpus.counts[i]:>6} {unigram[i]:>8.5f} {noise[i]:>8.5f} "
          f"{keep[1e-3][i]:>12.3f} {keep[1e-5][i]:>12.3f}")
for t, p in keep.items():
    print(f"t = {t:g}: expected share of the tokens kept {(p * unigram).sum():.1%}")

# %% slideshow={"slide_type": "-"}
ranks = np.arange(1, V + 1)
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(7.5, 3.2))
ax1.loglog(ranks, unigram, label="unigram $f(w)$")
ax1.loglog(ranks, noise, label="noise $P_n \\propto$ count$^{3/4}$")
ax1.set_xlabel("frequency rank")
ax1.set_ylabel("probability")
ax1.set_title("Zipf's law, and the flatter noise distribution", fontsize=9)
ax1.legend(fontsize=8)
for t, p in keep.items():
    ax2.semilogx(ranks, p, label=f"t = {t:g}")
ax2.set_xlabel("frequency rank")
ax2.set_ylabel("$p_{keep}$")
ax2.set_title("Subsampling keeps rare words, thins frequent ones", fontsize=9)
ax2.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# On this text, subsampling at $t = 10^{-3}$ does almost nothing (the share of tokens kept
# is printed above): the stop words, *the*, *of*, *and*, the very words subsampling exists
# for, were removed when the corpus was prepared (chapter 04), and of the words left only a
# handful of the most frequent, `state` among them, are thinned at all. On raw text, where
# *the* alone makes up several percent of the tokens, the same $t$ drops most of its
# occurrences. Exercise 2 tries the paper's $t = 10^{-5}$ here.

# %% [markdown] slideshow={"slide_type": "slide"}
# ### The training examples, all at once
#
# Skip-gram's examples are the (center, context) pairs of every window. word2vec also uses a
# **dynamic window**: each center draws its own reach $b$ uniformly from $1..L$, so a word at
# distance 1 is always used and one at distance $L$ only a fifth of the time (with $L=5$), a
# cheap way to weight near words more. Instead of a loop over positions, `skipgram_pairs`
# builds the pairs with one array operation per offset $o = 1..L$.

# %% slideshow={"slide_type": "-"}
show(window_reach)
show(skipgram_pairs)

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
sentence = ["cairo", "is", "the", "capital", "of", "egypt"]
ids = np.arange(len(sentence))
centers, contexts = skipgram_pairs([ids], window=2)
print(f"window 2, {len(centers)} pairs:",
      " ".join(f"({sentence[c]},{sentence[o]})" for c, o in zip(centers, contexts, strict=True)))
centers, contexts = skipgram_pairs([ids], window=2, rng=np.random.default_rng(1))
print(f"dynamic window (seeded), {len(centers)} pairs:",
      " ".join(f"({sentence[c]},{sentence[o]})" for c, o in zip(centers, contexts, strict=True)))
centers, windows = cbow_windows([ids], window=2)
print("CBOW examples (center <- context, -1 = padding):")
for c, ctx in list(zip(centers, windows, strict=True))[:3]:
    print(f"  {sentence[c]:>8} <- {ctx.tolist()}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ### The gradient, and one vectorised SGD step
#
# Write $s_0 = u_o^\top v_c$ for the true pair and $s_k = u_{w_k}^\top v_c$ for the noise
# words, with labels $y = (1, 0, \dots, 0)$. Since $\frac{d}{ds}\log\sigma(s) = 1 - \sigma(s)$,
#
# $$\frac{\partial \ell}{\partial s_j} = \sigma(s_j) - y_j, \qquad
# \frac{\partial \ell}{\partial v_c} = \sum_{j=0}^{K} (\sigma(s_j) - y_j)\, u_j, \qquad
# \frac{\partial \ell}{\partial u_j} = (\sigma(s_j) - y_j)\, v_c .$$
#
# The error signal $\sigma(s_j) - y_j$ is "predicted minus observed", as in logistic
# regression. word2vec applies these updates one pair at a time. We take a **minibatch** of
# $B$ pairs (all with their $K$ negatives), compute every score with one batched product,
# and scatter $-\eta$ times the gradients into the rows that were used with `index_add_`:
# a row that appears several times in the batch receives the sum of its updates. No Python
# loop over pairs, and no dense $|V| \times d$ gradient. For CBOW, $v$ is the mean of the
# context vectors and, as in word2vec, every context word receives the whole
# $\partial\ell/\partial \bar v$.

# %% slideshow={"slide_type": "-"}
show(sgns_step)

# %% [markdown] slideshow={"slide_type": "-"}
# **Check:** one step on a tiny case, with words repeated inside the batch (as negatives, as
# targets, and as both), must equal $-\eta$ times the gradient PyTorch's autograd computes
# for the summed `negative_sampling_loss` (float64):

# %% slideshow={"slide_type": "-"}
g = torch.Generator().manual_seed(0)
W_in0 = torch.randn(6, 4, generator=g, dtype=torch.float64)
W_out0 = torch.randn(6, 4, generator=g, dtype=torch.float64)
c_ids, o_ids = torch.tensor([0, 1, 0]), torch.tensor([2, 3, 2])
neg_ids = torch.tensor([[4, 5], [4, 0], [1, 4]])
A, B = W_in0.clone().requires_grad_(), W_out0.clone().requires_grad_()
loss = negative_sampling_loss(A[c_ids], B[o_ids], B[neg_ids]).sum()
loss.backward()
lr = 0.1
W_in1, W_out1 = W_in0.clone(), W_out0.clone()
value = sgns_step(W_in1, W_out1, c_ids, o_ids, neg_ids, lr)
d = max((W_in1 - (W_in0 - lr * A.grad)).abs().max().item(),
        (W_out1 - (W_out0 - lr * B.grad)).abs().max().item())
print(f"summed loss: sgns_step {value:.10f}, autograd {loss.item():.10f}")
print(f"max |sgns_step update - (-lr * autograd gradient)| = {d:.1e}  (tolerance 1e-12)")
assert abs(value - loss.item()) < 1e-12 and d < 1e-12

# %% [markdown] slideshow={"slide_type": "slide"}
# ### Training, and the same with gensim
#
# The training loop follows word2vec's recipe: every epoch, subsample, draw dynamic windows,
# build the examples and their negatives, and walk through them **in text order**, with a
# learning rate that falls linearly from $\eta_0 = 0.025$ (skip-gram; 0.05 for CBOW, the C
# tool's default) to $10^{-4}$ over the run. Input vectors start uniform in
# $(-1/d, 1/d)$ and output vectors at zero, as in gensim.

# %% slideshow={"slide_type": "-"}
show(train_word2vec)

# %% [markdown] slideshow={"slide_type": "-"}
# The settings are shared by our code and gensim's: $d = 100$, window 5, $K = 5$,
# $t = 10^{-3}$, `min_count` 5, the same number of epochs, and **one CPU thread each**
# (gensim's `workers=1`, which also makes it deterministic). Times are CPU seconds of each
# training call (wall-clock seconds on a GPU): other programs running at the same time
# affect them less than wall-clock time, but on a busy machine they still vary by a fifth
# or so from run to run.
#
# All of them together take about 45 seconds on a 2-core CPU, gensim's with three seeds,
# and chapter 4c evaluates exactly these vectors; so the runs are trained once and stored
# with the course. The cell below reads them (or trains them, saying so, the first time),
# and the first epoch of our skip-gram is trained again here and must repeat the stored one.

# %% slideshow={"slide_type": "-"}
from lmcourse.course import artifacts

epochs = lmcourse.budget(cpu=5, gpu=10)
runs = artifacts.text8_word2vec(corpus, documents, seeds=seeds, epochs=epochs, dim=dim,
                                    device=dev)
for name in ("skip-gram (ours)", "CBOW (ours)"):
    run = runs[name][0]
    print(f"{name:>24}: {epochs} epochs in {run.seconds:5.1f} s, loss per example "
          + " ".join(f"{x:.3f}" for x in run.losses))
start = clock()
live, stored, what = artifacts.word2vec_first_epoch(runs, corpus, epochs, dim, dev)
print(f"first epoch of our skip-gram trained here in {clock() - start:.1f} s:")
gap = artifacts.check_first_steps(live, stored, what)


# %% [markdown] slideshow={"slide_type": "-"}
# Two things to read in these numbers. The loss per example falls fastest in the first
# epoch, and the learning rate decays to almost nothing by the last, so more epochs at this
# size buy little. And our loop and gensim's run the same algorithm: the time gap is C
# against a few PyTorch calls per minibatch, not a smarter method.

# %% slideshow={"slide_type": "-"}
show(gensim_word2vec)

# %% slideshow={"slide_type": "-"}
for name in ("gensim skip-gram", "gensim CBOW"):
    seconds = np.mean([r.seconds for r in runs[name]])
    print(f"{name:>24}: {epochs} epochs in {seconds:5.1f} s per run, seeds {seeds}")
ours, gensims = runs["skip-gram (ours)"][0].seconds, runs["gensim skip-gram"][0].seconds
print(f"our skip-gram took {ours / gensims:.1f}x gensim's CPU time; chapter 4c compares what "
      "they learned")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## GloVe: fit the logarithm of the counts
#
# GloVe (Pennington, Socher & Manning, 2014) goes back to the global co-occurrence matrix,
# but learns it the way word2vec learns: by gradient descent on vectors. Its starting point
# is that *ratios* of co-occurrence probabilities carry meaning, which leads to asking
# $w_i^\top \tilde w_j + b_i + \tilde b_j \approx \log X_{ij}$ for every pair that was
# seen. The errors are weighted by how much we trust each count:
#
# $$J = \sum_{i,j:\;X_{ij} > 0} f(X_{ij})\,\big(w_i^\top \tilde w_j + b_i + \tilde b_j
# - \log X_{ij}\big)^2, \qquad
# f(x) = \begin{cases}(x/x_{\max})^{\alpha} & x < x_{\max}\\ 1 & \text{otherwise}\end{cases}$$
#
# with $\alpha = 3/4$ and, in the paper, $x_{\max} = 100$. Rare pairs (noisy counts) get
# small weights, and no pair, however frequent, weighs more than 1. The cap belongs to the
# corpus: 100 suits billions of words, while on our 300 thousand almost no count reaches it
# (the training cell prints the shares), so every pair would be down-weighted alike. We use
# $x_{\max} = 10$, the value of GloVe's own demo script for this very corpus (text8).
# GloVe counts with weight $1/|o|$ for a context at distance $|o|$ (our
# `weighting="harmonic"`), uses AdaGrad, and takes
# $W + \tilde W$ as the final vectors. Levy & Goldberg (2014) showed that skip-gram with
# negative sampling also factorises a matrix implicitly (the PMI matrix shifted by
# $\log K$): the two families are closer than they look.

# %% slideshow={"slide_type": "-"}
from lmcourse.course.claims import verdict

show(glove_weight)
show(glove_loss)
show(glove_step)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Why ratios? Pennington et al.'s table, on our corpus
#
# The paper's motivating example: with $P(k \mid i) = X_{ik} / \sum_{k'} X_{ik'}$, the
# probability that word $k$ appears in the context of $i$, compare *ice* and *steam*. A
# probe word related to one of them only (*solid*, *gas*) gives a ratio
# $P(k \mid \text{ice}) / P(k \mid \text{steam})$ far from 1; one related to both
# (*water*) or to neither (*fashion*) gives a ratio near 1. The ratio separates the
# relevant words from the noise better than either probability. GloVe's model is built so
# that $w_i^\top \tilde w_k - w_j^\top \tilde w_k \approx \log$ of that ratio.
#
# Our corpus cannot reproduce their pair: *ice* is not in the vocabulary (fewer than 5
# occurrences) and *steam* occurs 10 times. We take an analogous pair that our Wikipedia
# sample does contain often enough, `french` and `german` (358 and 379 occurrences), with
# probes specific to each (`franc`, `germani`), one shared (`war`) and one unrelated
# (`music`), from the window-5 counts $X$ built above. The paper's numbers (6 billion
# tokens) are printed beside ours, labelled.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT

print(f"'ice' in our vocabulary: {'ice' in corpus.index}; "
      f"'steam' occurs {int(corpus.counts[corpus.index['steam']])} times")
paper_table = {"solid": (1.9e-4, 2.2e-5, 8.9), "gas": (6.6e-5, 7.8e-4, 8.5e-2),
               "water": (3.0e-3, 2.2e-3, 1.36), "fashion": (1.7e-5, 1.8e-5, 0.96)}
print("Pennington et al. (2014), Table 1 (reported, 6e9 tokens):")
print(f"{'k':>9} {'P(k|ice)':>9} {'P(k|steam)':>10} {'ratio':>7}")
for k, (p_ice, p_steam, ratio) in paper_table.items():
    print(f"{k:>9} {p_ice:>9.1e} {p_steam:>10.1e} {ratio:>7.3g}")
rows = X.tocsr()
a, b = "french", "german"
row_a = rows[corpus.index[a]].toarray().ravel()
row_b = rows[corpus.index[b]].toarray().ravel()
print(f"\nmeasured here (window-5 counts, {corpus.num_tokens / 1e3:.0f}K tokens):")
print(f"{'k':>9} {'P(k|' + a + ')':>12} {'P(k|' + b + ')':>12} {'ratio':>7}   counts")
ratios = {}
for k in ("franc", "germani", "war", "music"):
    i = corpus.index[k]
    p_a, p_b = row_a[i] / row_a.sum(), row_b[i] / row_b.sum()
    ratios[k] = p_a / p_b
    print(f"{k:>9} {p_a:>12.1e} {p_b:>12.1e} {ratios[k]:>7.3g}   {int(row_a[i])} / {int(row_b[i])}")
far = ratios["franc"] > 3 and ratios["germani"] < 1 / 3
near = all(1 / 2 < ratios[k] < 2 for k in ("war", "music"))
verdict("co-occurrence ratios single out the relevant probes: far from 1 (> 3 or < 1/3) for a "
        "probe specific to one word, within a factor 2 of 1 for a shared or unrelated one",
        ratios["franc"], baseline=None, verdict="reproduced" if far and near else "not reproduced",
        paper=paper_table["solid"][2], metric=f"P(franc|{a}) / P(franc|{b})",
        note=f"specific probes far from 1: {far}; shared and unrelated probes within a factor "
             f"2 of 1: {near} (paper: P(solid|ice) / P(solid|steam))")

# %% [markdown] slideshow={"slide_type": "-"}
# Read the counts column before the ratios: on 300 thousand words the probabilities rest on
# a few dozen co-occurrences at most, so a single extra sentence moves a ratio visibly.
# The paper's table is built on 20,000 times more text.

# %% [markdown] slideshow={"slide_type": "-"}
# **Check:** three AdaGrad steps of `glove_step` on a tiny problem must match
# `torch.optim.Adagrad` driven by autograd on `glove_loss` (its accumulator starts at 0, as
# ours does, and we give it our $\epsilon = 10^{-8}$).
# Pairs repeat inside the batch, so rows receive summed gradients:

# %% slideshow={"slide_type": "-"}
g = torch.Generator().manual_seed(0)
init = [torch.randn(5, 3, generator=g, dtype=torch.float64) * 0.3 for _ in range(2)]
init += [torch.randn(5, 1, generator=g, dtype=torch.float64) * 0.1 for _ in range(2)]
i_ids, j_ids = torch.tensor([0, 1, 2, 0, 3]), torch.tensor([1, 0, 4, 2, 0])
x_vals = torch.tensor([3.0, 3.0, 150.0, 0.5, 12.0], dtype=torch.float64)
ours = [p.clone() for p in init]
sq = [torch.zeros_like(p) for p in init]
ref = [p.clone().requires_grad_() for p in init]
opt = torch.optim.Adagrad(ref, lr=0.05, eps=1e-8)
for _ in range(3):
    value = glove_step(ours, sq, i_ids, j_ids, x_vals, lr=0.05)
    opt.zero_grad()
    J = glove_loss(ref[0][i_ids], ref[1][j_ids], ref[2][i_ids, 0], ref[3][j_ids, 0], x_vals).sum()
    J.backward()
    opt.step()
d = max((a - b).abs().max().item() for a, b in zip(ours, ref, strict=True))
print(f"f(x) at x = 0.5, 12, 100, 150: "
      f"{[round(v, 4) for v in glove_weight(torch.tensor([0.5, 12, 100, 150.0])).tolist()]}")
print(f"after 3 steps: max |glove_step - torch Adagrad| = {d:.1e}  (tolerance 1e-8)")
assert d < 1e-8

# %% slideshow={"slide_type": "-"}
X_glove = cooccurrence(corpus.docs, V, window, weighting="harmonic")
x_max = artifacts.TEXT8_GLOVE["x_max"]
print(f"{X_glove.nnz:,} nonzero X_ij: {(X_glove.data < 2).mean():.0%} below 2, "
      f"{(X_glove.data >= 10).mean():.2%} at or above 10, {(X_glove.data >= 100).mean():.2%} "
      f"at or above the paper's x_max = 100")
print(f"x_max = {x_max:g} (GloVe's demo script for text8): the weight f(x) reaches 1 for the "
      f"{(X_glove.data >= x_max).mean():.2%} most frequent pairs instead of "
      f"{(X_glove.data >= 100).mean():.2%}")
start = clock()
live = train_glove(X_glove, dim=dim, epochs=2, lr=0.2, x_max=x_max, seed=0, device=dev)
print(f"two epochs of seed 0, trained here: {clock() - start:.1f} s, loss per pair "
      + " ".join(f"{x:.4f}" for x in live.losses))

# %% [markdown] slideshow={"slide_type": "-"}
# Each AdaGrad step sums the gradients of 16,384 pairs, so we take a larger step than the
# reference code's 0.05 for one pair at a time ($\eta = 0.2$; in our trials 0.5 fell more
# slowly). How long should it train? The paper runs 50 to 100 passes. We train until the
# loss is **flat**: we stop at the first epoch that lowers it by less than 1%
# (`train_glove(tol=0.01)`), with a cap. That takes a few dozen epochs, about half a minute
# per seed on a 2-core CPU: for three seeds, more than this notebook's budget. So the
# finished runs are trained once and stored with the course: the cell below reads them
# (and trains them itself, saying so, the first time), and the stored seed 0 must repeat
# the two epochs we just trained (`check_first_steps`). After every epoch each run also
# records the WordSim-353 correlation (chapter 4c explains the test):

# %% slideshow={"slide_type": "-"}
start = clock()
glove_runs = artifacts.text8_glove(X_glove, corpus.words, seeds=seeds, dim=dim, device=dev)
print(f"{len(glove_runs)} runs read (or trained) in {clock() - start:.1f} s; "
      f"{2 * V * (dim + 1):,} parameters (W, W~ and the biases) for {X_glove.nnz:,} "
      "nonzero counts")
artifacts.check_first_steps(live.losses, glove_runs[0].losses, "GloVe seed 0 (epochs)")
for seed, r in zip(seeds, glove_runs, strict=True):
    drop = 1 - r.losses[-1] / r.losses[-2]
    print(f"seed {seed}: {len(r.losses)} epochs in {r.seconds:.0f} s "
          f"({X_glove.nnz * len(r.losses) / r.seconds:,.0f} pairs/s), last epoch lowered the "
          f"loss by {drop:.2%}: " + ("flat" if drop < 0.01 else "NOT flat (stopped at the cap)"))

# %% slideshow={"slide_type": "-"}
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8, 3))
for seed, r in zip(seeds, glove_runs, strict=True):
    epochs_run = range(1, len(r.losses) + 1)
    ax1.semilogy(epochs_run, r.losses, marker=".", ms=3, label=f"seed {seed}")
    ax2.plot(epochs_run, r.tracked, marker=".", ms=3, label=f"seed {seed}")
ax1.set_xlabel("epoch")
ax1.set_ylabel("weighted squared error per pair")
ax1.legend(fontsize=8)
ax1.set_title("GloVe loss, until flat", fontsize=10)
ax2.set_xlabel("epoch")
ax2.set_ylabel("WordSim-353 Spearman rho")
ax2.set_title("GloVe on WordSim-353, every epoch", fontsize=10)
fig.tight_layout()
plt.show()
peak = [int(np.argmax(r.tracked)) + 1 for r in glove_runs]
final = [r.tracked[-1] for r in glove_runs]
best = [max(r.tracked) for r in glove_runs]
last5 = [max(r.tracked[-5:]) - min(r.tracked[-5:]) for r in glove_runs]
print(f"WordSim-353 at the stop: {mean_spread(final)}; best on the way: {mean_spread(best)} "
      f"(epochs {peak}; 3 seeds: mean ± half range); range over the last 5 epochs: "
      f"{max(last5):.3f}")
verdict("GloVe's WordSim-353 score has settled when training stops (it moves less than 0.02 "
        "over the last 5 epochs on every seed)", last5, baseline=("the threshold", 0.02),
        higher_is_better=False, verdict="reproduced" if max(last5) < 0.02 else "not reproduced",
        metric="range of WordSim-353 over the last 5 epochs",
        note="the ranked vectors are those at the stop; stopping at the best epoch instead "
             f"would add at most {max(b - f for b, f in zip(best, final, strict=True)):.3f}")

# %% [markdown] slideshow={"slide_type": "-"}
# Read the two panels together, with the verdict line: does the similarity score stop
# moving while the loss is still falling? GloVe has two vectors and a bias per word, about
# as many parameters as there are nonzero counts (printed above), so late epochs can keep
# fitting the noise of counts that are mostly below 2 without improving the vectors. We
# rank the vectors at the stop, as trained, rather than at the best epoch of the test set,
# which would be choosing on the test.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Skip-gram factorises a matrix too
#
# GloVe fits the log counts explicitly; skip-gram seems to do something else. Levy &
# Goldberg (2014) showed that it does not: at the optimum of the negative-sampling loss, with
# enough dimensions, every word-context pair satisfies
#
# $$u_c^\top v_w = \mathrm{PMI}(w, c) - \log K ,$$
#
# so skip-gram factorises chapter 04's PMI matrix, shifted by $\log K$, implicitly. This is a
# prediction we can test on our own skip-gram: for word-context pairs seen often enough that
# their PMI is well estimated, the dot product of the output and input vectors should sit
# about $\log 5 \approx 1.61$ below the PMI. The theorem's PMI takes the context's
# probability from the distribution the negatives are drawn from; ours draws them from
# $\mathrm{count}^{3/4}$, so the context's probability below is
# $P_{3/4}(c) = \#c^{3/4} / \sum_{c'} \#c'^{3/4}$ (Levy, Goldberg & Dagan 2015 call this
# PMI with a smoothed context distribution). It only holds approximately: our vectors have
# 100 dimensions, training stopped after a few epochs, and subsampling and dynamic windows
# change the effective counts.

# %% slideshow={"slide_type": "-"}
skip_gram = runs["skip-gram (ours)"][0]
Xc = sp.coo_matrix(X)
total = Xc.sum()
p_w = np.asarray(Xc.sum(axis=1)).ravel() / total
well = Xc.data >= 50  # pairs seen at least 50 times
wi, ci = Xc.row[well], Xc.col[well]
counts_c = np.asarray(Xc.sum(axis=0)).ravel()
p_noise = counts_c ** 0.75 / (counts_c ** 0.75).sum()  # what the negatives are drawn from
pmi = np.log(Xc.data[well] / total) - np.log(p_w[wi]) - np.log(p_noise[ci])
plain_pmi = np.log(Xc.data[well] / total) - np.log(p_w[wi]) - np.log(p_w[ci])
dots = (skip_gram.vectors[wi] * skip_gram.context_vectors[ci]).sum(axis=1)
print(f"{well.sum():,} pairs seen >= 50 times: median of u.v - PMI = "
      f"{np.median(dots - pmi):+.2f} (predicted -log 5 = {-math.log(5):+.2f}); "
      f"correlation of u.v with PMI {np.corrcoef(dots, pmi)[0, 1]:.2f}")
print(f"with the context's plain frequency instead of count^3/4: median "
      f"{np.median(dots - plain_pmi):+.2f}, correlation {np.corrcoef(dots, plain_pmi)[0, 1]:.2f}")
offset = np.median(dots - pmi)
within = abs(offset + math.log(5)) < 0.5
verdict("skip-gram with 5 negative samples fits u.v = PMI - log 5 on well-seen pairs (Levy & "
        "Goldberg 2014): the median offset lies within 0.5 of -log 5", offset, baseline=None,
        verdict="reproduced" if within else "not reproduced", paper=-math.log(5), digits=2,
        metric="median of u.v - PMI",
        note=f"the median offset is {abs(offset + math.log(5)):.2f} from -log 5 "
             f"({'within' if within else 'NOT within'} 0.5); the pairwise correlation is "
             f"{'loose (< 0.8)' if np.corrcoef(dots, pmi)[0, 1] < 0.8 else 'tight'}")

# %% [markdown] slideshow={"slide_type": "-"}
# The verdict line says how close the average offset comes to $-\log K$ and how tightly
# the dot products follow PMI pair by pair. With the context distribution the theorem
# assumes, the median offset is −1.94, inside the verdict's 0.5 of −1.61 but further from it
# than the −1.53 that the plain frequency gives; and pair by pair the correlation is only
# 0.23. So what this run shows is the average shift, not the theorem's pair-by-pair
# identity: after a few epochs on a small corpus, with 100 dimensions for 8,087 words, the
# vectors are far from the optimum the theorem describes, and at this scale the result
# neither confirms nor refutes it pair by pair.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - **Predicting:** word2vec's skip-gram predicts the window from the center, CBOW the center
#   from the averaged window; **negative sampling** replaces the softmax by $K$ binary
#   decisions against noise words from $\mathrm{count}^{3/4}$; frequent words are
#   subsampled; the gradient is "predicted minus observed" times the other vector, and a
#   minibatch step is a gather, a batched product and an `index_add_`.
# - **GloVe** fits $w_i^\top\tilde w_j + b_i + \tilde b_j$ to $\log X_{ij}$ with weights
#   $f(x) = \min(1, (x/x_{\max})^{3/4})$
#   ($x_{\max} = 10$ on our corpus, the paper's 100 on billions of words) and AdaGrad;
#   its co-occurrence **ratios** separate related from unrelated probe words
#   (**reproduced**<!-- ledger: co-occurrence ratios single out -->), and on our corpus they
#   rest on a few dozen counts.
# - Our skip-gram follows gensim's recipe and runs beside it with the same settings; its
#   time is printed beside gensim's compiled loop.
# - **Counting and predicting meet:** skip-gram with $K$ negatives fits
#   $\mathrm{PMI} - \log K$; after our few epochs the median offset is within half a nat of
#   $-\log 5$ (**reproduced**<!-- ledger: skip-gram with 5 negative samples fits -->).
#
# Chapter 4c evaluates all of these vectors, and chapter 04's, side by side.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises
#
# 1. *(warm-up)* For word counts (1000, 100, 10, 1), compute the noise distribution
#    $P_n \propto \mathrm{count}^{3/4}$ beside the unigram distribution, and the keep
#    probabilities of subsampling with $t = 10^{-3}$. Check with `noise_distribution` and
#    `keep_probability`.
# 2. *(short)* Train our skip-gram with subsampling $t = 10^{-5}$ (the paper's value). How
#    many tokens are kept per epoch, and what happens to the time and to the loss per
#    example? Explain with the $p_{\text{keep}}$ figure; then evaluate the vectors with
#    chapter 4c's `word_similarity` and `neighbour_agreement`.
# 3. *(harder)* Build the **shifted PPMI** matrix $\max(\mathrm{PMI} - \log K, 0)$ for
#    $K = 1, 5, 15$ and factorise it with `svd_embeddings`. Compare with our skip-gram
#    trained with the same $K$ (Levy & Goldberg, 2014).

# %% [markdown] slideshow={"slide_type": "skip"}
# <details><summary>Worked answer to exercise 1</summary>
#
# ```python
# import numpy as np
#
# from lmcourse.models.embeddings import keep_probability, noise_distribution
#
# counts = np.array([1000.0, 100.0, 10.0, 1.0])
# p_n = noise_distribution(counts)
# assert np.allclose(p_n, counts**0.75 / (counts**0.75).sum())
# unigram = counts / counts.sum()
# assert p_n[0] < unigram[0] and p_n[-1] > unigram[-1]   # flatter: rare words drawn more
# f, t = unigram, 1e-3
# assert np.allclose(keep_probability(counts, t), np.minimum((np.sqrt(f / t) + 1) * t / f, 1))
# print("noise:", p_n.round(4), "unigram:", unigram.round(4))
# print("keep:", keep_probability(counts, 1e-3).round(4))
# ```
#
# Raising counts to $3/4$ shrinks the gaps between them: the most frequent word gets
# less than its share of negative draws and the rarest more. Subsampling does the
# opposite job on the *training* side: a word making up 90% of the text is kept only a
# few percent of the time, while words below $f \approx t$ are always kept.
# </details>

# %% [markdown] slideshow={"slide_type": "skip"}
# <details><summary>Worked answer to exercise 2</summary>
#
# ```python
# import math
# import time
#
# import numpy as np
# import torch
# from gensim.parsing.porter import PorterStemmer
#
# from lmcourse.data import WordCorpus, load_corpus, tokenize
# from lmcourse.models.embeddings import (
#     keep_probability,
#     load_word_pairs,
#     neighbour_agreement,
#     skipgram_pairs,
#     subsample,
#     train_word2vec,
#     word_similarity,
# )
#
# torch.set_num_threads(1)
# documents = [tokenize(doc) for doc in load_corpus("text8")]
# corpus = WordCorpus.from_documents(documents, min_count=5)
# N, c, rng = corpus.num_tokens, corpus.counts, np.random.default_rng(0)
# for t in (1e-3, 1e-5):
#     keep = keep_probability(c, t)
#     docs = subsample(corpus.docs, keep, rng)
#     kept, pairs = sum(len(d) for d in docs), len(skipgram_pairs(docs, 5, rng)[0])
#     assert abs(kept - (keep * c).sum()) < 0.01 * N          # one epoch's draw, as expected
#     # p_keep = (sqrt(x) + 1) / x with x = f/t is below 1 exactly when x > 2.618 (golden ratio
#     # squared), and a thinned word keeps about sqrt(count * tN) + tN of its occurrences
#     thinned = c > ((1 + math.sqrt(5)) / 2) ** 2 * t * N
#     assert ((keep < 1) == thinned).all()
#     assert np.allclose((keep * c)[thinned], np.sqrt(c * t * N)[thinned] + t * N)
#     print(f"t = {t:g}: {kept:,} of {N:,} tokens kept ({kept / N:.1%}), {pairs:,} pairs; "
#           f"{thinned.sum():,} of {len(c):,} words thinned (count > {2.618 * t * N:.0f}); "
#           f"median occurrences of the 1,000 most frequent: {np.median((keep * c)[:1000]):.0f} "
#           f"(in the text {np.median(c[:1000]):.0f})")
#
# # scaled down: one epoch on the first 40 documents, d = 50, from the same random start
# small = WordCorpus.from_documents(documents[:40], min_count=5)
# start_vectors = train_word2vec(small, dim=50, stop_after=0, seed=0).vectors  # 0 epochs
# pairs_ws, stem = load_word_pairs("wordsim353.tsv"), PorterStemmer().stem
# loss, moved, seconds, ws = {}, {}, {}, {}
# for t in (1e-3, 1e-5):
#     start = time.process_time()
#     run = train_word2vec(small, dim=50, epochs=1, sample=t, seed=0)
#     seconds[t], loss[t] = time.process_time() - start, run.losses[0]
#     moved[t] = neighbour_agreement(run.vectors, start_vectors, np.arange(200))
#     ws[t] = word_similarity(run.vectors, small.words, pairs_ws, stem)[0]
#     print(f"t = {t:g} on {small.num_tokens:,} tokens: {seconds[t]:.2f} s, loss per example "
#           f"{loss[t]:.3f}; top-200 words' neighbours shared with the random start {moved[t]:.2f};"
#           f" WordSim-353 {ws[t]:+.3f}")
# ws_start = word_similarity(start_vectors, small.words, pairs_ws, stem)[0]
# print(f"the random start: WordSim-353 {ws_start:+.3f}; (K + 1) log 2 = {6 * math.log(2):.3f}")
# assert seconds[1e-5] < seconds[1e-3]
# assert loss[1e-5] > loss[1e-3] + 0.2 and abs(loss[1e-5] - 6 * math.log(2)) < 0.05
# assert moved[1e-5] > 0.8 and moved[1e-3] < 0.3 and abs(ws[1e-5] - ws_start) < 0.05
# ```
#
# With $t = 10^{-5}$ an epoch keeps 91,794 of the 304,180 tokens (30.2%, against 99.5% with
# $10^{-3}$) and has 547,085 skip-gram pairs instead of 1,814,730, so it takes about a third
# of the time. The $p_{\text{keep}}$ figure says why: $p_{\text{keep}} < 1$ exactly when
# $f(w) > 2.618\,t$, i.e. for words seen more than $2.618\,tN$ times: 796 with $t = 10^{-3}$
# (8 words), but 8 with $10^{-5}$ (5,846 of the 8,087 words). A thinned word keeps about
# $\sqrt{\mathrm{count} \cdot tN} + tN$ of its occurrences, so the 1,000 most frequent words,
# the ones chapter 4c probes, drop from a median of 131 occurrences to 23 per epoch: the
# paper's $t$ was set for billions of words. The loss per example starts at
# $(K+1)\log 2 = 4.159$ (the output vectors start at zero), and with a third of the updates
# our one-epoch run on 40 documents never leaves it (4.159, against 3.772 with $10^{-3}$):
# its vectors still share 97% of the 200 most frequent words' neighbours with their random
# start, and `word_similarity` gives them the start's WordSim-353 score (+0.073). A run this
# short cannot rank the two settings (the $10^{-3}$ run's -0.042 is noise too); that needs
# the chapter's five epochs on all of text8 for each setting, and `neighbour_agreement`
# against chapter 4c's gensim run.
# </details>

# %% [markdown] slideshow={"slide_type": "skip"}
# <details><summary>Worked answer to exercise 3</summary>
#
# ```python
# import math
#
# import numpy as np
# import scipy.sparse as sp
# import torch
# from gensim.parsing.porter import PorterStemmer
#
# from lmcourse.data import WordCorpus, load_corpus, tokenize
# from lmcourse.models.embeddings import (
#     cooccurrence,
#     load_word_pairs,
#     noise_distribution,
#     ppmi,
#     svd_embeddings,
#     train_word2vec,
#     word_similarity,
# )
#
# torch.set_num_threads(1)
# corpus = WordCorpus.from_documents([tokenize(d) for d in load_corpus("text8")], min_count=5)
# X = cooccurrence(corpus.docs, len(corpus), window=5)
# P = ppmi(X, alpha=0.75)                # the chapter's PPMI, context smoothing 0.75
# stem = PorterStemmer().stem
# tests = [load_word_pairs(t) for t in ("wordsim353.tsv", "simlex999.txt")]
# for K in (1, 5, 15):
#     S = P.copy()                       # max(PMI - log K, 0) = max(PPMI - log K, 0) for K >= 1
#     S.data = np.maximum(S.data - math.log(K), 0)
#     S.eliminate_zeros()
#     W = svd_embeddings(S, 50)
#     ws, sl = (word_similarity(W, corpus.words, t, stem)[0] for t in tests)
#     print(f"K = {K:>2}: shifted PPMI keeps {S.nnz / X.nnz:.0%} of the nonzero counts; "
#           f"its SVD (d = 50): WordSim-353 {ws:.3f}, SimLex-999 {sl:.3f}")
#
# # skip-gram with K negatives, on a planted corpus small enough to train to its optimum
# rng = np.random.default_rng(0)
# V = 30
# T = rng.dirichlet(np.full(V, 0.3), size=V).cumsum(axis=1)    # a random Markov chain
# state = rng.integers(V, size=20)                              # 20 documents of 1,000 words
# walk = [state]
# for _ in range(999):
#     state = np.minimum((T[state] < rng.random((20, 1))).sum(axis=1), V - 1)
#     walk.append(state)
# docs = [[f"w{i}" for i in doc] for doc in np.stack(walk, axis=1)]
# toy = WordCorpus.from_documents(docs)
# Xt = sp.coo_matrix(cooccurrence(toy.docs, V, window=1))       # the pairs skip-gram trains on
# n_w = np.asarray(Xt.sum(axis=1)).ravel()                      # pairs per center word
# p_n = noise_distribution(toy.counts)
# well = Xt.data >= 20
# w, ctx = Xt.row[well], Xt.col[well]
# pmi = np.log(Xt.data[well] / n_w[w] / p_n[ctx])               # log #(w,c) / (#(w) P_n(c))
# for K in (1, 5, 15):
#     run = train_word2vec(toy, dim=V, window=1, negative=K, sample=0, batch_size=256, seed=0)
#     dots = (run.vectors[w] * run.context_vectors[ctx]).sum(axis=1)
#     offset = np.median(dots - pmi)
#     r = np.corrcoef(dots, pmi)[0, 1]
#     print(f"skip-gram K = {K:>2}: median u.v - PMI {offset:+.3f} (-log K = {-math.log(K):+.3f}),"
#           f" correlation {r:.3f} over {well.sum()} pairs")
#     assert abs(offset + math.log(K)) < 0.15 and r > 0.9
# ```
#
# Shifting by $\log K$ zeroes every pair whose PMI is below $\log K$: the shifted PPMI keeps
# 96%, 64% and 35% of the nonzero counts for $K$ = 1, 5, 15. After the SVD ($d = 50$ here,
# to stay within time), $K = 1$ scores best on WordSim-353 (0.636), $K = 5$ on SimLex-999
# (0.290), and $K = 15$ loses on both (0.492, 0.209): on 300 thousand words most counts are
# small, and a large shift throws too many away. Our skip-gram with $K$ = 1, 5, 15 on all of
# text8 means three runs of the chapter's length ($K = 15$ costs more per pair), beyond this
# answer; the planted corpus (a random Markov chain over 30 words, window 1, no subsampling,
# $d = |V|$) checks instead what Levy & Goldberg proved: at its optimum, skip-gram with $K$
# negatives fits $u_c^\top v_w = \mathrm{PMI}(w, c) - \log K$, with the noise distribution's
# $\mathrm{count}^{3/4}$ in place of $P(c)$. The median offset follows $-\log K$: -0.069,
# -1.640 and -2.748 against 0, -1.609 and -2.708, with correlations from 0.943 to 0.988. So
# skip-gram and the SVD of the shifted PPMI aim at the same matrix, but not in the same way:
# skip-gram also fits the negative entries that $\max(\cdot, 0)$ erases and weighs each pair
# by how often it occurs, while the SVD treats every cell alike; the two need not rank the
# same on word similarity.
# </details>

# %% [markdown] slideshow={"slide_type": "slide"}
# ## References
#
# - Z. S. Harris (1954). *Distributional structure*. Word 10(2-3).
# - J. R. Firth (1957). *A synopsis of linguistic theory, 1930-1955*. Studies in Linguistic
#   Analysis.
# - K. W. Church, P. Hanks (1990). *Word association norms, mutual information, and
#   lexicography*. Computational Linguistics 16(1).
# - T. Mikolov, K. Chen, G. Corrado, J. Dean (2013a). *Efficient estimation of word
#   representations in vector space*. ICLR Workshop (arXiv:1301.3781).
# - T. Mikolov, I. Sutskever, K. Chen, G. Corrado, J. Dean (2013b). *Distributed
#   representations of words and phrases and their compositionality*. NeurIPS.
# - J. Pennington, R. Socher, C. D. Manning (2014). *GloVe: Global vectors for word
#   representation*. EMNLP.
# - O. Levy, Y. Goldberg (2014). *Neural word embedding as implicit matrix factorization*.
#   NeurIPS.
# - J. Duchi, E. Hazan, Y. Singer (2011). *Adaptive subgradient methods for online learning
#   and stochastic optimization*. JMLR 12.
# - R. Řehůřek, P. Sojka (2010). *Software framework for topic modelling with large corpora*
#   (gensim). LREC Workshop on New Challenges for NLP Frameworks.

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
# # Lab 04 · word2vec: skip-gram with negative sampling
#
# In chapter 4b you read a word2vec implementation and compared it with gensim's. Here you
# write the three pieces at its heart yourself and train word vectors on real text (the
# stemmed Wikipedia sample gensim ships, about 300 thousand words):
#
# 1. **the training pairs**: every (center, context) pair within a window;
# 2. **the negative-sampling loss**,
#    $\ell = -\log\sigma(u_o^\top v_c) - \sum_{k=1}^{K}\log\sigma(-u_{w_k}^\top v_c)$,
#    averaged over a minibatch;
# 3. **a vectorised training step**: a whole minibatch of pairs at once, no Python loop;
# 4. **the noise distribution** the negatives are drawn from, $\mathrm{count}^{3/4}$;
# 5. **subsampling of frequent words**: the probability of discarding each occurrence.
#
# After each exercise, run the check cell below it. A check computes the right answer
# itself and, if yours differs, names the mistake when it recognises it. Two checks at the
# end train with your code: first on a tiny corpus with two planted topics, then on the
# real text, where the months should end up next to each other. Each exercise has two hints,
# folded: open the first when you are stuck, the second if you still are.
#
# **What to expect.** The final check trains your skip-gram for one epoch on the real text
# and passes when, on average, at least a quarter of the other months are among each month's
# 10 nearest neighbours (random vectors: about 0.1%; the check prints your share).
# Before that, the planted-topics check wants at least 90% of each word's nearest neighbours
# from its own topic (the solution: 100%). The whole lab runs in under a minute on a
# laptop CPU; its run card (the folded line below) gives the time it measured.
#
# Fill in the places that say `raise NotImplementedError`, run the cell, run its check.

# %% [markdown] slideshow={"slide_type": "skip"} tags=["run-card"]
# <details><summary>Run card: 13 s on a CPU, 607.3 MB of memory; GPU: not measured yet</summary>
#
# - **Time on a CPU:** 13 s normalised to the reference machine: 19 s wall on Intel(R) Xeon(R)
#   Processor, one torch thread, calibration 0.691 s against 0.482 s.
# - **Time on a GPU:** not measured yet.
# - **Peak memory:** 607.3 MB (the kernel's resident set).
# - **Last passed:** 2026-11-29, commit `8de5aec-dirty` (nbval, as `make test` runs it).
# - **Files read (2):**
#   - `gensim test data/head500.noblanks.cor` (2.3 MB)
#   - `gensim test data/lee_background.cor` (360.1 KB)
#
# Measured by the test run (`python -m tools.runcards`), not typed.
# </details>

# %% [markdown] slideshow={"slide_type": "skip"} tags=["grading"]
# ### How this lab is graded
#
# Each check cell below is a question of the autograder (7 points in all), and ends with its
# name and points (`# q01: 1 point`).
#
# | question | your code it grades | also needs exercise | points |
# |---|---|---|---|
# | q01 · exercise 1 | `skipgram_pairs` | – | 1 |
# | q02 · exercise 2 | `ns_loss` | – | 1 |
# | q03 · exercise 3 | `train_step` | 2 | 1 |
# | q04 · exercise 3 | `skipgram_pairs`, `train_step` | 1, 2 | 1 |
# | q05 · exercise 4 | `noise_distribution` | – | 1 |
# | q06 · exercise 5 | `discard_probability` | – | 1 |
# | q07 · closing run | your trained model | – | 1 |
#
# - **The closing run is a question too** (1 point). The grader runs the lab's last check cell
#   itself, once, with the lab's own settings for a CPU (its CPU budget, even if you trained
#   longer on a GPU), with one thread. Your notebook's copy of that cell is skipped while
#   grading, so editing it changes nothing; the cells after it that use its result raise an
#   error while grading, which costs no points.
# - **A failed exercise costs the checks that need it.** When your code calls a function from
#   an earlier exercise, that exercise's check runs first; if it fails, this check fails too,
#   saying "pass exercise N first", and passes again once the earlier exercise does. The third
#   column lists those exercises for code that calls the earlier functions as the exercises
#   suggest. If your code does not call an earlier function, a mistake there does not cost
#   this check. An unfinished exercise fails its own check (and those that need it); the
#   others still count.
# - **Your own work.** Each graded function or class must be written in this notebook. One
#   taken from the course's package `lmcourse` (its own function or class, a subclass of one,
#   or code that hands its work to one by a call, an import, a default argument or a class
#   attribute) gets no points for the checks that grade it. The exceptions: what the lab's own
#   cells import, and the package's top-level helpers such as `lmcourse.device()`. Your
#   notebook's checks do not test this rule, only the grader does: a check that passes at home
#   can still score 0 if the code is not yours.
# - **Names.** The grader uses your functions, your classes and the lab's data as they stand
#   after the whole notebook has run, so do not reuse their names for scratch work. Other
#   scratch names, even `check`, are fine: the grader brings its own copy of the checks.

# %% slideshow={"slide_type": "-"}
import time

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

import lmcourse
from lmcourse.checks import word2vec as check
from lmcourse.data import WordCorpus, load_corpus, tokenize
from lmcourse.models.embeddings import most_similar, subsample

generator = lmcourse.seed_everything(0)
torch.set_num_threads(1)  # small tensors: one CPU thread is faster than two that wait

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 1: the training pairs
#
# Skip-gram learns from pairs (center word, context word). For a sentence of word ids
# $x_1, \dots, x_n$ and a window $L$, the pairs are all $(x_t, x_{t+o})$ with
# $1 \le |o| \le L$ and $1 \le t+o \le n$: up to $L$ words on **each side**, never the word
# itself, and nothing beyond the ends of the sentence.
#
# For `ids = [11, 12, 13]` and `window = 1` the pairs are (11, 12), (12, 11), (12, 13),
# (13, 12). Return them as two tensors of the same length, `centers` and `contexts`, with
# pair number $i$ = `(centers[i], contexts[i])`; the order of the pairs does not matter.
# Vectorise it: no loop over the positions of the sentence.
#
# <details><summary>Hint 1</summary>
#
# Chapter 4b's section *The training examples, all at once* builds the same pairs with one
# array operation per offset. Think offset by offset: for a fixed $o$, every word that has a
# word $o$ places to its right forms a pair with it, and the same two words form a second
# pair the other way round (context on the left).
#
# </details>
#
# <details><summary>Hint 2</summary>
#
# For each $o$ from 1 to $L$: the centers "with a context $o$ places to the right" are the
# sentence without its last $o$ words, and their contexts are the sentence without its first
# $o$ words (two slices of the same length, $n - o$); the left-hand pairs are the same two
# slices with the roles swapped. Collect the pieces in two lists and join each list into one
# tensor at the end (`torch.cat`). A window longer than the sentence needs no special case:
# for an offset beyond the sentence's end, both slices are simply empty.
#
# </details>

# %% slideshow={"slide_type": "-"}
def skipgram_pairs(ids: torch.Tensor, window: int) -> tuple[torch.Tensor, torch.Tensor]:
    """All (center, context) pairs with 1 <= |offset| <= window inside ``ids``."""
    # BEGIN SOLUTION
    centers, contexts = [], []
    for o in range(1, min(window, len(ids) - 1) + 1):
        centers += [ids[:-o], ids[o:]]   # context to the right, then to the left
        contexts += [ids[o:], ids[:-o]]
    if not centers:
        return ids[:0], ids[:0]
    return torch.cat(centers), torch.cat(contexts)
    # END SOLUTION


# %% slideshow={"slide_type": "-"} tags=["check"]
check.skipgram_pairs(skipgram_pairs)
# q01: 1 point

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 2: the negative-sampling loss
#
# Each word has an input vector $v$ (used when it is the center) and an output vector $u$
# (used when it is a context or a noise word). For one pair $(c, o)$ and $K$ noise words
# $w_1..w_K$ drawn at random, the loss is
#
# $$\ell(c, o) = -\log \sigma(u_o^\top v_c) - \sum_{k=1}^{K} \log \sigma(-u_{w_k}^\top v_c),
# \qquad \sigma(x) = \frac{1}{1 + e^{-x}}:$$
#
# the true pair should score high, the noise pairs low. Note the **minus inside** the second
# sigmoid. For a minibatch, the inputs are `v` ($B \times d$, the centers' input vectors),
# `u_pos` ($B \times d$, the true contexts' output vectors) and `u_neg`
# ($B \times K \times d$, the noise words' output vectors). Return the **mean over the $B$
# pairs** of $\ell$ (a tensor with one number), the $K$ noise terms being **summed** for
# each pair.
#
# Use `F.logsigmoid(x)` for $\log\sigma(x)$: `torch.log(torch.sigmoid(x))` gives $-\infty$
# once $\sigma(x)$ rounds to 0 (the check tries large scores).
#
# <details><summary>Hint 1</summary>
#
# Chapter 4b's section on negative sampling (the equation for $\ell(c, o)$) reads the loss
# as $K+1$ binary classifications: the true pair with label 1, each noise word with label 0,
# and $\sigma(-s) = 1 - \sigma(s)$ is the probability of "not a real pair". A score is a dot
# product $u^\top v$; every score of the minibatch comes from one batched operation.
#
# </details>
#
# <details><summary>Hint 2</summary>
#
# The $B$ true scores: multiply `v` and `u_pos` elementwise and sum over the last axis
# (shape $B$). The $B \times K$ noise scores: the same with `u_neg`, after giving `v` a
# middle axis of size 1 so that $B \times 1 \times d$ broadcasts against
# $B \times K \times d$. Then `F.logsigmoid` of the true scores, plus the sum over $K$ of
# `F.logsigmoid` of the *negated* noise scores; negate that and average over the $B$ pairs.
#
# </details>

# %% slideshow={"slide_type": "-"}
def ns_loss(v: torch.Tensor, u_pos: torch.Tensor, u_neg: torch.Tensor) -> torch.Tensor:
    """Mean over the batch of -log s(u_o . v) - sum_k log s(-u_k . v)."""
    # BEGIN SOLUTION
    pos = (u_pos * v).sum(-1)                # B
    neg = (u_neg * v.unsqueeze(1)).sum(-1)   # B x K
    return -(F.logsigmoid(pos) + F.logsigmoid(-neg).sum(-1)).mean()
    # END SOLUTION


# %% slideshow={"slide_type": "-"} tags=["check"]
check.ns_loss(ns_loss)
# q02: 1 point

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 3: one training step for a whole minibatch
#
# The two tables of vectors are `nn.Embedding` layers: `emb_in` holds the input vectors $v$
# (centers), `emb_out` the output vectors $u$ (true contexts and noise words). Calling a
# table on a tensor of ids returns their rows, whatever the shape of the ids: $B$ ids give
# $B \times d$, a $B \times K$ tensor of ids gives $B \times K \times d$. The tables are
# created with `sparse=True`, so the gradient only touches the rows that were used, and the
# optimizer you are given knows how to step with such gradients.
#
# Write `train_step`: one optimizer step on `ns_loss` of the minibatch, returning the loss
# (before the step) as a Python number. Three or four lines; no loop over the pairs.
#
# <details><summary>Hint 1</summary>
#
# Chapter 4b's `sgns_step` (section *The gradient, and one vectorised SGD step*) does this
# step by hand: the gradient of $\ell$, then an update of the rows that were used. Here
# autograd computes the gradient and the optimizer applies it. PyTorch *adds* each new
# gradient to the one already stored, so the old one must be cleared before every step.
#
# </details>
#
# <details><summary>Hint 2</summary>
#
# In order: the optimizer clears the gradients (`zero_grad`); three look-ups, the centers in
# `emb_in` and the contexts and negatives in `emb_out` ($B \times d$, $B \times d$,
# $B \times K \times d$); your `ns_loss` of the three; backward on that loss; the
# optimizer's `step`; the loss tensor's value as a Python float (the tensor method that
# returns a one-element tensor's number).
#
# </details>

# %% slideshow={"slide_type": "-"}
def train_step(emb_in: nn.Embedding, emb_out: nn.Embedding, centers: torch.Tensor,
               contexts: torch.Tensor, negatives: torch.Tensor,
               optimizer: torch.optim.Optimizer) -> float:
    """One optimizer step on the mean negative-sampling loss of a minibatch of pairs."""
    # BEGIN SOLUTION
    optimizer.zero_grad()
    loss = ns_loss(emb_in(centers), emb_out(contexts), emb_out(negatives))
    loss.backward()
    optimizer.step()
    return loss.item()
    # END SOLUTION


# %% slideshow={"slide_type": "-"} tags=["check"]
check.train_step(train_step)
# q03: 1 point

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Does it learn? Two planted topics
#
# Before spending time on real text, a sanity check with a known answer. The corpus below
# has 12 words in two topics (ids 0-5 and 6-11); each document uses the words of one topic
# only. Words of the same topic share contexts, so after training, each word's nearest
# neighbours should be from its own topic. The check builds the pairs with your
# `skipgram_pairs`, draws 3 uniform negatives per pair, and trains with your `train_step`
# and `torch.optim.SparseAdam` for a few seconds.

# %% slideshow={"slide_type": "-"} tags=["check"]
check.learns_clusters(skipgram_pairs, train_step)
# q04: 1 point

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 4: the noise distribution
#
# The negatives are not drawn uniformly: Mikolov et al. (2013b) draw word $w$ with
# probability
#
# $$P_n(w) = \frac{\mathrm{count}(w)^{3/4}}{\sum_{w'} \mathrm{count}(w')^{3/4}},$$
#
# the unigram distribution raised to the power $3/4$ **and renormalised**. The power
# flattens Zipf's law: frequent words are still drawn more often than rare ones, but less
# overwhelmingly than their share of the text. `counts` is a NumPy array of word counts;
# return a float array of the same length that sums to 1.
#
# <details><summary>Hint 1</summary>
#
# Chapter 4b's section *Which noise words, and which words to skip* gives $P_n$: the power
# $3/4$ is applied to the raw counts, and the result is a distribution only after dividing
# by its own total (the exponent 1 would give the unigram distribution, 0 the uniform one).
#
# </details>
#
# <details><summary>Hint 2</summary>
#
# Two elementwise steps on the whole array, no loop: turn the counts into floats and raise
# them to the power 0.75; divide by the sum of those powered values (not by the number of
# tokens).
#
# </details>

# %% slideshow={"slide_type": "-"}
def noise_distribution(counts: np.ndarray) -> np.ndarray:
    """P_n(w) = count(w)^0.75 / sum_w' count(w')^0.75."""
    # BEGIN SOLUTION
    p = counts.astype(np.float64) ** 0.75
    return p / p.sum()
    # END SOLUTION


# %% slideshow={"slide_type": "-"} tags=["check"]
check.noise_distribution(noise_distribution)
# q05: 1 point

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 5: subsampling frequent words
#
# A word such as `state` occurs thousands of times and tells little about its neighbours.
# Before the pairs are built, each occurrence of word $w$ is **discarded** with probability
#
# $$P_{\text{discard}}(w) = \max\Big(0,\; 1 - \sqrt{t / f(w)}\Big),
# \qquad f(w) = \frac{\mathrm{count}(w)}{\sum_{w'} \mathrm{count}(w')},$$
#
# the formula of the paper (Mikolov et al., 2013b). Words rarer than $t$ would get a
# negative value: they are never discarded, hence the $\max$. (The released `word2vec.c`,
# and gensim, which chapter 4b follows, use a smoother variant: they *keep* a word with
# probability $(\sqrt{f/t} + 1)\,t/f$. Here you write the paper's version.) Return the
# discard probability of every word, a float array.
#
# <details><summary>Hint 1</summary>
#
# Chapter 4b's section *Which noise words, and which words to skip* explains subsampling:
# the more frequent a word, the smaller $t / f(w)$ and the more often it is dropped. $f$ is
# a relative frequency (a share of the text), and a probability cannot be negative.
#
# </details>
#
# <details><summary>Hint 2</summary>
#
# Elementwise, on the arrays: the relative frequencies (the counts divided by their total);
# one minus the square root of $t / f$; then clip below at 0 with NumPy's elementwise
# maximum (Python's `max` does not work element by element). Use the argument `t`, not a
# constant.
#
# </details>

# %% slideshow={"slide_type": "-"}
def discard_probability(counts: np.ndarray, t: float) -> np.ndarray:
    """max(0, 1 - sqrt(t / f(w))) with f(w) = count(w) / total."""
    # BEGIN SOLUTION
    f = counts / counts.sum()
    return np.maximum(0.0, 1 - np.sqrt(t / f))
    # END SOLUTION


# %% slideshow={"slide_type": "-"} tags=["check"]
check.discard_probability(discard_probability)
# q06: 1 point

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Real text
#
# The corpus is the one of chapter 04: 250 Wikipedia articles, lowercased, with stop words
# removed and Porter-stemmed (*january* is `januari`), keeping words seen at least 5 times.
# Your two functions supply the last ingredients: noise words from your
# `noise_distribution`, and each occurrence kept with probability
# $1 - P_{\text{discard}}$ from your `discard_probability` with $t = 10^{-3}$ (gensim's
# default; the paper's $10^{-5}$ suits billions of words and would discard most of ours).

# %% slideshow={"slide_type": "-"}
documents = [tokenize(doc) for doc in load_corpus("text8")]
corpus = WordCorpus.from_documents(documents, min_count=5)
V = len(corpus)
print(f"{corpus.num_tokens:,} tokens, {V:,} words; most frequent: {' '.join(corpus.words[:8])}")

# %% slideshow={"slide_type": "-"}
noise = torch.from_numpy(noise_distribution(corpus.counts))
keep = 1 - discard_probability(corpus.counts, t=1e-3)
unigram = corpus.counts / corpus.counts.sum()
for w in corpus.words[:3] + ["januari", "king"]:
    i = corpus.index[w]
    print(f"{w:>8}: {unigram[i]:.2%} of the text, {noise[i]:.2%} of the noise draws, "
          f"kept {keep[i]:.0%} of the time")
print(f"expected share of the tokens kept per epoch: {(keep * unigram).sum():.1%}")

# %% [markdown] slideshow={"slide_type": "-"}
# The model: 50-dimensional input vectors, small random numbers to start; output vectors
# start at zero (as in word2vec). `SparseAdam` adapts the step size of every coordinate and
# works with the sparse gradients of the two tables.

# %% slideshow={"slide_type": "-"}
dim, window, K, batch_size = 50, 2, 5, 1024
emb_in = nn.Embedding(V, dim, sparse=True)
emb_out = nn.Embedding(V, dim, sparse=True)
with torch.no_grad():
    emb_in.weight.uniform_(-0.5 / dim, 0.5 / dim, generator=generator)
    emb_out.weight.zero_()
optimizer = torch.optim.SparseAdam(list(emb_in.parameters()) + list(emb_out.parameters()),
                                   lr=0.01)

# %% [markdown] slideshow={"slide_type": "-"}
# The training loop (given): every epoch subsamples the text, builds the pairs of every
# document with **your** `skipgram_pairs`, shuffles them, draws $K$ negatives per pair, and
# walks through them in minibatches with **your** `train_step`. About a million pairs per
# epoch; one epoch is enough on a laptop (more on a GPU).

# %% slideshow={"slide_type": "-"}
epochs = lmcourse.budget(cpu=1, gpu=3)
rng = np.random.default_rng(0)
history = []
start = time.perf_counter()
for epoch in range(epochs):
    pairs = [skipgram_pairs(torch.from_numpy(doc), window)
             for doc in subsample(corpus.docs, keep, rng)]
    centers = torch.cat([c for c, _ in pairs])
    contexts = torch.cat([o for _, o in pairs])
    order = torch.randperm(len(centers), generator=generator)
    centers, contexts = centers[order], contexts[order]
    negatives = torch.multinomial(noise, len(centers) * K, replacement=True,
                                  generator=generator).view(-1, K)
    for s in range(0, len(centers), batch_size):
        batch = slice(s, s + batch_size)
        history.append(train_step(emb_in, emb_out, centers[batch], contexts[batch],
                                  negatives[batch], optimizer))
    print(f"epoch {epoch + 1}: {len(centers):,} pairs, mean loss {np.mean(history[-200:]):.3f}, "
          f"{time.perf_counter() - start:.1f} s")

# %% slideshow={"slide_type": "-"}
fig, ax = plt.subplots(figsize=(7, 3))
smooth = np.convolve(history, np.ones(50) / 50, mode="valid")
ax.plot(smooth)
ax.set_xlabel("minibatch")
ax.set_ylabel("loss (moving average of 50)")
ax.set_title("Negative-sampling loss during training", fontsize=10)
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The final check: months
#
# Months occur in the same kinds of context ("born in ... 1880", "on 4 ..."), so a working
# skip-gram puts them next to each other. The check measures, for each month, the share of
# the other months among its 10 nearest neighbours (by cosine, over the whole vocabulary).

# %% slideshow={"slide_type": "-"} tags=["check"]
share = check.months_close(emb_in.weight, corpus.words)
# q07: 1 point

# %% slideshow={"slide_type": "-"}
vectors = emb_in.weight.detach().numpy()
for word in ("januari", "king", "church", "war", "music"):
    print(f"{word:>8}:", ", ".join(w for w, _ in most_similar(vectors, corpus.words, word, 6)))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Going further
#
# - Add word2vec's **dynamic window** to `skipgram_pairs`: each center draws its own reach
#   $b \in \{1..L\}$ and keeps the contexts with $|o| \le b$. How do the neighbours change?
# - Write the gradient by hand: $\partial\ell/\partial s_j = \sigma(s_j) - y_j$. Replace
#   autograd and the optimizer by `index_add_` updates (chapter 4b's `sgns_step`) and compare
#   the speed.
# - Turn it into **CBOW**: average the context vectors of a window and predict the center.
# - Compare your vectors with gensim's `Word2Vec` trained on the same documents, using the
#   neighbour agreement of chapter 4c.

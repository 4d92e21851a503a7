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
# # Lab 05 · Attention and multi-head attention
#
# Chapters 06 and 6b built attention from the ground up. Here you write it yourself, piece
# by piece, and each piece is checked against PyTorch
# (`torch.nn.functional.scaled_dot_product_attention` and `torch.nn.MultiheadAttention`) in
# float64. You will write:
#
# 1. **scaled dot-product attention**, $\mathrm{softmax}(QK^\top/\sqrt{d})\,V$, returning the
#    output and the weights;
# 2. the two **masks** every transformer uses: padding and causal;
# 3. **masked attention**: the same function, now honouring a mask;
# 4. **splitting and merging heads**, the reshapes at the heart of multi-head attention;
# 5. **multi-head attention** as a module whose weights are `nn.MultiheadAttention`'s;
# 6. **causal self-attention**, the layer of a GPT-style language model.
#
# After each exercise, run the check cell below it. A check computes the right answer
# itself and, when yours differs, says which typical mistake it recognises (a missing
# $1/\sqrt d$, the softmax over the wrong axis, a mask applied after the softmax, ...).
# Each exercise has two hints, folded: open the first when you are stuck, the second if you
# still are.
#
# **What to expect.** Every check compares your code with PyTorch in float64 and wants the
# same numbers to within $10^{-8}$ (the course's solution agrees to about $10^{-15}$). The
# final check runs your multi-head module as causal self-attention: changing only the last
# token must move no earlier output at all, and the output must match
# `nn.MultiheadAttention` under a causal mask. The whole lab runs in seconds; its run card
# (the folded line below) gives the time it measured.
#
# Conventions (the same as PyTorch's and the chapter's): vectors are **rows**, so `q` is
# `... x T x d` (T queries of size d) and `k` is `... x S x d`; a mask is **boolean** with
# `True` = attention **allowed**. Fill in the places that say `raise NotImplementedError`.

# %% [markdown] slideshow={"slide_type": "skip"} tags=["run-card"]
# <details><summary>Run card: 3.7 s on a CPU, 367.3 MB of memory; GPU: not measured yet</summary>
#
# - **Time on a CPU:** 3.7 s normalised to the reference machine: 5.3 s wall on Intel(R) Xeon(R)
#   Processor, one torch thread, calibration 0.691 s against 0.482 s.
# - **Time on a GPU:** not measured yet.
# - **Peak memory:** 367.3 MB (the kernel's resident set).
# - **Last passed:** 2026-11-29, commit `8de5aec-dirty` (nbval, as `make test` runs it).
# - **Files read (0):** none.
#
# Measured by the test run (`python -m tools.runcards`), not typed.
# </details>

# %% [markdown] slideshow={"slide_type": "skip"} tags=["grading"]
# ### How this lab is graded
#
# Each check cell below is a question of the autograder (6 points in all), and ends with its
# name and points (`# q01: 1 point`).
#
# | question | your code it grades | also needs exercise | points |
# |---|---|---|---|
# | q01 · exercise 1 | `attention` | – | 1 |
# | q02 · exercise 2 | `padding_mask`, `causal_mask` | – | 1 |
# | q03 · exercise 3 | `attention` | 1 | 1 |
# | q04 · exercise 4 | `split_heads`, `merge_heads` | – | 1 |
# | q05 · exercise 5 | `MultiHeadAttention` | 1, 3, 4 | 1 |
# | q06 · exercise 6 | `causal_self_attention`, `MultiHeadAttention` | 1, 2, 3, 4, 5 | 1 |
#
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
import math

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

import lmcourse
from lmcourse.checks import attention as check
from lmcourse.viz import plot_attention, plot_heads_grid

generator = lmcourse.seed_everything(0)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 1: scaled dot-product attention
#
# Each query $q_i$ is compared with every key $k_j$ by a dot product; the scores are
# divided by $\sqrt d$ (the dot product of two random $d$-dimensional vectors has variance
# $d$, so this keeps the scores at unit scale), a softmax over the keys turns each query's
# scores into weights that sum to 1, and the output of query $i$ is the weighted average of
# the values:
#
# $$
# \mathrm{Attention}(Q, K, V) = \underbrace{\mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt d}
# \right)}_{\text{weights, } T\times S} V .
# $$
#
# Write `attention(q, k, v, mask=None)` returning `(output, weights)`. It must work for any
# number of leading axes (a batch, or a batch and heads), so `k.T`, which reverses *all* the
# axes, will not do. Leave the mask for exercise 3 (you may write it now if you like; the
# first check does not use it).
#
# <details><summary>Hint 1</summary>
#
# Chapter 06's section *Attention in general: queries, keys and values* gives the row-vector
# form, $\mathrm{softmax}(QK^\top)V$ with the softmax along each row (one row per query);
# chapter 6b's *Why divide by $\sqrt{d}$?* derives the scale from
# $\mathrm{Var}(q^\top k) = d$. Every axis before the last two is a batch axis that the
# matrix product carries along.
#
# </details>
#
# <details><summary>Hint 2</summary>
#
# Steps: $d$ is the size of the last axis of `q`; the scores are `q` times `k` with its last
# two axes swapped (`transpose` accepts negative axes, counted from the end), shape
# `... x T x S`, divided by $\sqrt d$; the softmax along the last axis (the keys) gives the
# weights; the output is the weights times `v`, `... x T x d_v`. The matrix product `@`
# broadcasts over the leading axes. Return both.
#
# </details>

# %% slideshow={"slide_type": "-"}
def attention(q, k, v, mask=None):
    """(softmax(q k^T / sqrt(d)) v, weights); mask: boolean, True = allowed, broadcastable
    to the T x S scores."""
    # BEGIN SOLUTION
    d = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
    # END SOLUTION


# %% slideshow={"slide_type": "-"} tags=["check"]
check.attention(attention)
# q01: 1 point

# %% [markdown] slideshow={"slide_type": "-"}
# A tiny example to look at: three queries, four keys. The second query equals the third
# key, so it should put most of its weight there.

# %% slideshow={"slide_type": "-"}
keys = torch.tensor([[1.0, 0.0], [0.0, 1.0], [3.0, 3.0], [-1.0, -1.0]])
queries = torch.tensor([[1.0, 1.0], [3.0, 3.0], [-2.0, 0.0]])
values = torch.arange(4.0)[:, None]  # value j is just the number j
out, w = attention(queries, keys, values)
print("weights (one row per query):\n", w.round(decimals=3))
print("outputs (≈ the index of the key each query picked):",
      [round(o, 2) for o in out.squeeze(-1).tolist()])

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 2: padding and causal masks
#
# **Padding.** Sentences in a batch have different lengths, so the shorter ones are padded
# to the longest. Nobody should attend to a padding position. `padding_mask(lengths,
# max_len)` returns a `B x max_len` boolean tensor, `True` at the real tokens: row `b` is
# `True` at positions `0 .. lengths[b] - 1`.
#
# **Causal.** A language model predicts token $t+1$ from tokens $\le t$, so query $i$ may
# only look at keys $j \le i$. `causal_mask(T)` returns the `T x T` boolean lower triangle
# (diagonal included).
#
# <details><summary>Hint 1</summary>
#
# Chapter 6b's section *Masks: who may look at whom* defines both masks, with `True` where
# attention is allowed, and draws them. Neither needs a loop: a padding mask is a comparison
# of positions with lengths, a causal mask a triangle.
#
# </details>
#
# <details><summary>Hint 2</summary>
#
# Padding: a row of positions `0 .. max_len - 1` (`torch.arange`) compared with a
# column of lengths (the lengths with a trailing axis of size 1); broadcasting makes the
# result `B x max_len`, and a comparison is already boolean. Mind `<` against `<=`: position
# `lengths[b]` is padding. Causal: a `T x T` matrix of `True` (dtype `torch.bool`) cut to its
# lower triangle, diagonal kept (`torch.tril`).
#
# </details>

# %% slideshow={"slide_type": "-"}
def padding_mask(lengths, max_len):
    """B x max_len boolean mask, True at the real tokens (position < length)."""
    # BEGIN SOLUTION
    return torch.arange(max_len)[None, :] < lengths[:, None]
    # END SOLUTION


def causal_mask(T):
    """T x T boolean mask, True where key j <= query i."""
    # BEGIN SOLUTION
    return torch.ones(T, T, dtype=torch.bool).tril()
    # END SOLUTION


# %% slideshow={"slide_type": "-"} tags=["check"]
check.masks(padding_mask, causal_mask)
# q02: 1 point

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 3: masked attention
#
# A disallowed score must get weight **exactly 0**, and the remaining weights of its row
# must still sum to 1. The way to get both: set the disallowed scores to $-\infty$
# **before** the softmax, since $e^{-\infty} = 0$:
#
# $$
# \mathrm{weights}_{ij} = \frac{\exp(s_{ij})\,[\mathrm{mask}_{ij}]}{\sum_{j'}
# \exp(s_{ij'})\,[\mathrm{mask}_{ij'}]} .
# $$
#
# Complete the `mask` branch of `attention` in exercise 1, rerun that cell, then the check
# below. The mask broadcasts against the scores: a padding mask over the keys is
# `padding_mask(...)[:, None, :]` for `B x T x S` scores, `[:, None, None, :]` when there is
# also a heads axis. (This lab never masks *all* the keys of a query; chapter 6b explains
# what happens then.)
#
# <details><summary>Hint 1</summary>
#
# Chapter 6b's section *Masks: who may look at whom*, and its "bug to watch for": the mask
# acts on the **scores**, before the softmax, with a value whose exponential is exactly 0.
# Multiplying the weights by the mask afterwards leaves rows that no longer sum to 1; a
# score set to 0 still counts, since $e^0 = 1$.
#
# </details>
#
# <details><summary>Hint 2</summary>
#
# One step between the scores and the softmax, only when a mask is given: replace the
# scores by $-\infty$ where the mask is **False**. Look up `Tensor.masked_fill`: it fills
# where its boolean argument is `True`, so give it the mask negated (`~` flips a boolean
# tensor). The mask broadcasts as it comes; don't reshape it.
#
# </details>

# %% slideshow={"slide_type": "-"} tags=["check"]
check.masked_attention(attention)
# q03: 1 point

# %% [markdown] slideshow={"slide_type": "-"}
# The causal mask and the weights it lets through, for a short sentence with random
# vectors as its queries and keys:

# %% slideshow={"slide_type": "-"}
words = "the cat sat on the mat".split()
x = torch.randn(len(words), 8, generator=generator)
_, w = attention(x, x, x, causal_mask(len(words)))
fig, axes = plt.subplots(1, 2, figsize=(7, 3.2))
plot_attention(causal_mask(len(words)).float(), words, ax=axes[0], cmap="Greys",
               colorbar=False, title="causal mask (black = allowed)")
plot_attention(w, words, ax=axes[1], colorbar=False, title="masked attention weights")
fig.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 4: splitting and merging heads
#
# Multi-head attention runs $h$ attentions side by side, each on its own slice of
# $E/h$ features. With a batch `x` of shape `B x T x E`:
#
# - `split_heads(x, h)` returns `B x h x T x E/h`, where head `i` holds the **contiguous**
#   features `i*E/h .. (i+1)*E/h - 1` (the layout of `nn.MultiheadAttention`).
# - `merge_heads(x)` undoes it: `B x h x T x D` back to `B x T x h*D`.
#
# Read the sizes from `x.shape`; don't hard-code them.
#
# <details><summary>Hint 1</summary>
#
# Chapter 6b's section *Multi-head attention* shows the idea: one projection for all heads,
# then each head takes its own slice of the features. A `view` or `reshape` only regroups
# the numbers in memory order; moving the heads in front of the positions needs a
# transpose. Reshaping straight to `B x h x T x E/h` is a classic bug: it runs, but mixes
# positions.
#
# </details>
#
# <details><summary>Hint 2</summary>
#
# Split: read `B, T, E` from the shape; regroup the last axis into `h x E/h`
# (`B x T x h x E/h`); swap axes 1 and 2. Merge: swap axes 1 and 2 back (`B x T x h x D`),
# then flatten the last two axes into one of size `h*D`. After a transpose the tensor is no
# longer contiguous in memory, so `view` refuses it: use `reshape` there.
#
# </details>

# %% slideshow={"slide_type": "-"}
def split_heads(x, num_heads):
    """B x T x E -> B x heads x T x E/heads."""
    # BEGIN SOLUTION
    B, T, E = x.shape
    return x.view(B, T, num_heads, E // num_heads).transpose(1, 2)
    # END SOLUTION


def merge_heads(x):
    """B x heads x T x D -> B x T x heads*D."""
    # BEGIN SOLUTION
    B, H, T, D = x.shape
    return x.transpose(1, 2).reshape(B, T, H * D)
    # END SOLUTION


# %% slideshow={"slide_type": "-"} tags=["check"]
check.heads(split_heads, merge_heads)
# q04: 1 point

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 5: multi-head attention
#
# With $W^Q, W^K, W^V, W^O \in \mathbb{R}^{E\times E}$ and biases, in PyTorch's `nn.Linear`
# convention ($y = x W^\top + b$):
#
# $$
# Q = X_q {W^Q}^\top + b^Q,\quad K = X_k {W^K}^\top + b^K,\quad V = X_v {W^V}^\top + b^V,
# $$
# $$
# \mathrm{head}_i = \mathrm{Attention}(Q_i, K_i, V_i),\qquad
# \mathrm{output} = [\mathrm{head}_1, \dots, \mathrm{head}_h]\, {W^O}^\top + b^O,
# $$
#
# where $Q_i$ is head $i$'s slice of $Q$ (your `split_heads`). Each head's scores are
# scaled by $1/\sqrt{E/h}$, the size of *its* vectors, which your `attention` does by itself.
#
# The `__init__` below is given: it stores the parameters exactly as `nn.MultiheadAttention`
# does (`in_proj_weight` stacks $W^Q, W^K, W^V$ into one `3E x E` matrix, `in_proj_bias` the
# three biases, `out_proj` is $W^O$), so the check can load PyTorch's weights into your
# module. Write `forward(query, key, value, mask=None)`, with batch-first inputs
# (`B x T x E` and `B x S x E`), returning `(output B x T x E, weights B x h x T x S)`:
# the weights of every head, not their average.
#
# <details><summary>Hint 1</summary>
#
# Chapter 6b's section *Multi-head attention*: project once for all heads, split, attend in
# every head at once, merge, project with $W^O$. Your three earlier functions do the middle
# part; what is new is reading $W^Q, W^K, W^V$ and their biases out of the stacked
# parameters, in the order queries, keys, values.
#
# </details>
#
# <details><summary>Hint 2</summary>
#
# In order: cut `in_proj_weight` and `in_proj_bias` into three equal parts along the first
# axis (`chunk`); project `query`, `key` and `value`, each with its own weight and bias
# (`F.linear` computes $x W^\top + b$); split each into heads (`B x h x T x E/h` and
# `B x h x S x E/h`); your `attention`, with the mask passed on unchanged; merge the heads
# (`B x T x E`); `self.out_proj`. Return the output and the per-head weights.
#
# </details>

# %% slideshow={"slide_type": "-"}
class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        assert embed_dim % num_heads == 0, "embed_dim must be divisible by num_heads"
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.in_proj_weight = nn.Parameter(torch.empty(3 * embed_dim, embed_dim))
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * embed_dim))
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        nn.init.xavier_uniform_(self.in_proj_weight)

    def forward(self, query, key, value, mask=None):
        # BEGIN SOLUTION
        W_q, W_k, W_v = self.in_proj_weight.chunk(3)
        b_q, b_k, b_v = self.in_proj_bias.chunk(3)
        q = split_heads(F.linear(query, W_q, b_q), self.num_heads)
        k = split_heads(F.linear(key, W_k, b_k), self.num_heads)
        v = split_heads(F.linear(value, W_v, b_v), self.num_heads)
        heads, weights = attention(q, k, v, mask)
        return self.out_proj(merge_heads(heads)), weights
        # END SOLUTION


# %% slideshow={"slide_type": "-"} tags=["check"]
check.multi_head_attention(MultiHeadAttention)
# q05: 1 point

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 6: causal self-attention
#
# In a GPT-style language model every layer attends from the sequence to *itself*
# (query = key = value = `x`), under the causal mask, so that the output at position $t$
# depends only on tokens $\le t$. Write `causal_self_attention(mha, x)` for a batch
# `x` of shape `B x T x E`, returning the output `B x T x E` of `mha`. The check changes only
# the last token and verifies that no earlier output moves.
#
# <details><summary>Hint 1</summary>
#
# Self-attention (chapter 06, *Attention in general*) is attention with $Q = K = V = X$;
# the causal mask of exercise 2 is what keeps position $t$ from reading the tokens after it
# (chapter 6b, *Masks: who may look at whom*).
#
# </details>
#
# <details><summary>Hint 2</summary>
#
# One call of `mha`, with `x` as query, key and value, and the causal mask of exercise 2 for
# the sequence length `T` (the size of axis 1 of `x`). The module returns
# `(output, weights)`: return the output alone.
#
# </details>

# %% slideshow={"slide_type": "-"}
def causal_self_attention(mha, x):
    """Self-attention of x (B x T x E) with itself, each position seeing only the past."""
    # BEGIN SOLUTION
    output, _ = mha(x, x, x, causal_mask(x.shape[1]))
    return output
    # END SOLUTION


# %% slideshow={"slide_type": "-"} tags=["check"]
check.causal_self_attention(causal_self_attention, MultiHeadAttention)
# q06: 1 point

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Look at your heads
#
# Your module, with random weights, on a sentence whose words get random embeddings. Each
# panel is one head: row $i$ is where word $i$ looks. Every head is lower-triangular
# (causal), and the heads differ because their projections differ. Random weights make
# random patterns; chapter 06 trains a small model and its heads become structured, and
# chapter 09 shows the heads of a real pre-trained BERT.

# %% slideshow={"slide_type": "-"}
torch.manual_seed(0)
sentence = "the prime minister said the government would act".split()
mha = MultiHeadAttention(embed_dim=32, num_heads=4)
embeddings = torch.randn(1, len(sentence), 32)
with torch.no_grad():
    _, weights = mha(embeddings, embeddings, embeddings, causal_mask(len(sentence)))
fig = plot_heads_grid([weights], sentence)
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# ## Going further
#
# - Time your `attention` against `F.scaled_dot_product_attention` for `T = 64, 256, 1024`
#   (see `benchmarks/attention.py`). Why is PyTorch's faster, and why does it not return
#   the weights?
# - Make `attention` safe for a query whose keys are **all** masked: with $-\infty$
#   everywhere the softmax is $0/0$ = NaN. Return weights 0 and output 0 for such a row
#   instead (what `lmcourse.models.attention.masked_softmax` does).
# - Count the parameters of your `MultiHeadAttention(512, 8)` and compare with
#   $4E^2 + 4E$. Does the number depend on the number of heads? Does the compute?
# - Add dropout on the attention weights (during training only), as
#   `nn.MultiheadAttention(dropout=0.1)` does, and check you still match it in `eval()`.

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
# # 6b · Attention: the scale, masks and many heads
#
# Chapter 06 built attention, $\mathrm{softmax}(\text{scores})\,V$, and watched an
# encoder–decoder learn to align with it. Three details turn that operation into the one
# inside every transformer: the scores are **divided by $\sqrt d$**, **masks** decide who
# may look at whom, and the operation runs as several **heads** in parallel. This chapter
# derives, implements and checks each of them against PyTorch.
#
# By the end of it you will be able to
#
# - derive why dot products are **scaled by $1/\sqrt d$** ($\mathrm{Var}(q\cdot k) = d$),
#   check it by sampling, and measure what an unscaled, saturated softmax does to gradients;
# - build **padding** and **causal** masks, draw them, and get every masked weight exactly 0;
# - implement **multi-head attention** that loads `torch.nn.MultiheadAttention`'s weights and
#   returns the same outputs, and look at the heads of a small trained model in a widget.

# %% [markdown] slideshow={"slide_type": "skip"} tags=["run-card"]
# <details><summary>Run card: 16 s on a CPU, 890.2 MB of memory; GPU: not measured yet</summary>
#
# - **Time on a CPU:** 16 s normalised to the reference machine: 24 s wall on Intel(R) Xeon(R)
#   Processor, one torch thread, calibration 0.739 s against 0.482 s.
# - **Time on a GPU:** not measured yet.
# - **Peak memory:** 890.2 MB (the kernel's resident set).
# - **Last passed:** 2026-11-29, commit `8de5aec` (nbval, as `make test` runs it).
# - **Files read (1):**
#   - `gensim test data/lee_background.cor` (360.1 KB)
#
# Measured by the test run (`python -m tools.runcards`), not typed.
# </details>

# %% slideshow={"slide_type": "-"}
import math
from functools import partial

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

# %% slideshow={"slide_type": "-"}
import lmcourse
from lmcourse import show
from lmcourse.data import Vocab, document_split, lm_batches, load_corpus
from lmcourse.models.attention import (
    AttentionLM,
    MultiHeadAttention,
    attention_scores,
    causal_mask,
    mask_from_torch,
    merge_heads,
    padding_mask,
    scaled_dot_product_attention,
    softmax_jacobian,
    split_heads,
)

# %% slideshow={"slide_type": "-"}
from lmcourse.models.compress import count_params
from lmcourse.models.ngram import NGramLM
from lmcourse.timing import compare
from lmcourse.train import fit_lm
from lmcourse.viz import attention_widget, plot_attention

# %% slideshow={"slide_type": "-"}
generator = lmcourse.seed_everything(0)
dev = lmcourse.device()
torch.set_num_threads(1)  # small tensors: one CPU thread is faster than two that wait
f64 = torch.float64

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Why divide by $\sqrt{d}$?
#
# Vaswani et al. (2017) scale the dot products: $\mathrm{softmax}(QK^\top/\sqrt{d})V$. The
# reason is a classic exercise: let $q, k \in \mathbb{R}^d$ have independent
# entries with mean 0 and variance 1. What are $\mathrm{Var}(q^\top k)$ and
# $\mathrm{Var}(q^\top k/\sqrt d)$?
#
# Each term $q_i k_i$ has mean $\mathbb{E}[q_i]\,\mathbb{E}[k_i] = 0$ and variance
# $\mathbb{E}[q_i^2 k_i^2] - 0 = \mathbb{E}[q_i^2]\,\mathbb{E}[k_i^2] = 1$, and the $d$ terms
# are independent, so their variances add:
#
# $$
# \mathrm{Var}(q^\top k) = \sum_{i=1}^{d}\mathrm{Var}(q_i k_i) = d, \qquad
# \mathrm{Var}\!\left(\frac{q^\top k}{\sqrt d}\right) = \frac{d}{d} = 1 .
# $$
#
# The scores' standard deviation grows like $\sqrt d$; dividing by $\sqrt d$ brings it back
# to 1 whatever the size. Sampling says the same:

# %% [markdown] slideshow={"slide_type": "-"}
# **Work it out first:** with independent zero-mean, unit-variance entries, what is
# $\mathrm{Var}(q \cdot k)$? Summing $\mathrm{Var}(q_i k_i) = 1$ over the $d$ coordinates
# gives $d$. The measurement below shows the consequence: unscaled scores make the softmax
# almost one-hot, and its gradient almost zero.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
g = torch.Generator().manual_seed(0)
n = 5000
print("    d   Var(q.k) measured   (theory d)   Var(q.k/sqrt d) measured   (theory 1)")
for d in (4, 16, 64, 256, 1024):
    q, k = torch.randn(n, d, generator=g, dtype=f64), torch.randn(n, d, generator=g, dtype=f64)
    dots = (q * k).sum(-1)
    var, var_scaled = dots.var().item(), (dots / math.sqrt(d)).var().item()
    print(f"{d:>5}   {var:>17.1f}   {d:>11}   {var_scaled:>24.3f}   {1:>10}")
    assert abs(var / d - 1) < 0.1 and abs(var_scaled - 1) < 0.1  # ~5 standard errors

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### What large scores do to the softmax and its gradient
#
# Why should the scale of the scores matter? The softmax $p = \mathrm{softmax}(z)$ has the
# Jacobian
#
# $$
# \frac{\partial p_i}{\partial z_j} = p_i(\delta_{ij} - p_j), \qquad
# J = \mathrm{diag}(p) - p\,p^\top .
# $$
#
# If the scores are spread over a range much wider than 1, one of them dominates, $p$ is
# almost one-hot, and every entry of $J$ is almost 0 ($p_i \approx 1$ gives
# $p_i(1-p_i)\approx 0$; $p_i \approx 0$ gives $\approx 0$). The softmax **saturates** and
# hardly any gradient reaches the queries and keys that produced the scores.

# %% slideshow={"slide_type": "-"}
show(softmax_jacobian)

# %% slideshow={"slide_type": "-"}
z = torch.randn(6, dtype=f64)
J_auto = torch.autograd.functional.jacobian(lambda t: t.softmax(-1), z)
diff = (softmax_jacobian(z) - J_auto).abs().max().item()
print(f"max |diag(p) - p p^T  -  autograd Jacobian| = {diff:.1e}  (tolerance 1e-12)")
assert diff < 1e-12

# %% [markdown] slideshow={"slide_type": "-"}
# Now the measurement. For each $d$, draw a query and $S = 16$ keys with unit-variance
# entries, score them with plain dot products (standard deviation $\sqrt d$) and with scaled
# ones (standard deviation 1), and record the Frobenius norm of the softmax Jacobian and
# the largest weight, averaged over 2,000 draws.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
g = torch.Generator().manual_seed(1)
dims, draws, S = [1, 4, 16, 64, 256, 1024], 2000, 16
saturation = {"unscaled": [], "scaled": []}
print("    d   |J| unscaled   |J| scaled   max weight unscaled   max weight scaled")
for d in dims:
    q = torch.randn(draws, 1, d, generator=g, dtype=f64)
    K = torch.randn(draws, S, d, generator=g, dtype=f64)
    unscaled = attention_scores(q, K, scale=1.0)[:, 0]
    scaled = attention_scores(q, K)[:, 0]  # the default scale 1/sqrt(d)
    row = []
    for name, scores in (("unscaled", unscaled), ("scaled", scaled)):
        norm = torch.linalg.matrix_norm(softmax_jacobian(scores)).mean().item()
        peak = scores.softmax(-1).max(-1).values.mean().item()
        saturation[name].append(norm)
        row.append((norm, peak))
    print(f"{d:>5}   {row[0][0]:>12.3f}   {row[1][0]:>10.3f}   {row[0][1]:>19.3f}"
          f"   {row[1][1]:>17.3f}")

# %% slideshow={"slide_type": "-"}
fig, ax = plt.subplots(figsize=(7, 3.5))
ax.plot(dims, saturation["unscaled"], "o-", label="scores q·k (std √d)")
ax.plot(dims, saturation["scaled"], "s-", label="scores q·k / √d (std 1)")
ax.set_xscale("log", base=2)
ax.set_xlabel("dimension d of queries and keys")
ax.set_ylabel("mean ‖∂softmax/∂scores‖_F")
ax.set_title(f"Unscaled scores saturate the softmax ({S} keys, {draws} draws per point)")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# With scaled scores the gradient that flows through the softmax stays the same at every
# size. Without the scale it shrinks steadily as $d$ grows (about six times smaller at
# $d = 1024$ in the table), because the largest weight creeps towards 1: at initialisation the model
# would already commit hard to one key, and learn slowly which one. Here is the scaled
# version, the function the rest of the course uses:

# %% slideshow={"slide_type": "-"}
show(scaled_dot_product_attention)

# %% [markdown] slideshow={"slide_type": "-"}
# **Check.** Against `torch.nn.functional.scaled_dot_product_attention`, in float64, with and
# without the scale, for inputs with a batch axis, and with batch and heads axes:

# %% slideshow={"slide_type": "-"}
torch.manual_seed(0)
for lead in ((2,), (2, 4)):
    q, k, v = (torch.randn(*lead, n, 8, dtype=f64) for n in (5, 7, 7))
    for scale in (None, 1.0):
        ours, weights = scaled_dot_product_attention(q, k, v, scale=scale)
        ref = F.scaled_dot_product_attention(q, k, v, scale=scale)
        diff = (ours - ref).abs().max().item()
        print(f"q {tuple(q.shape)}, scale {'1/sqrt(d)' if scale is None else scale}: "
              f"max |ours - torch| = {diff:.1e}  (tolerance 1e-10)")
        assert diff < 1e-10

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Masks: who may look at whom
#
# Two situations forbid some (query, key) pairs.
#
# - **Padding.** A batch holds sentences of different lengths, padded to the longest.
#   Padding positions are not words: no query may attend to them.
# - **Causality.** A language model predicts token $t+1$ from tokens $1..t$. If position
#   $t$ could attend to position $t+1$ it would read the answer, so query $i$ may only see
#   keys $j \le i$.
#
# A mask is a boolean matrix of the scores' shape (or one that broadcasts to it) with
# **True where attention is allowed**, PyTorch's convention for
# `scaled_dot_product_attention` and Hugging Face's for `attention_mask`. Disallowed scores
# are set to $-\infty$ *before* the softmax, so their weight is $e^{-\infty} = 0$ exactly and
# the allowed weights still sum to 1:
#
# $$
# a_{ij} = \frac{\exp(s_{ij})\,[\mathrm{mask}_{ij}]}{\sum_{p}\exp(s_{ip})\,[\mathrm{mask}_{ip}]} .
# $$

# %% [markdown] slideshow={"slide_type": "-"}
# **A bug to watch for** (lab 05 checks for it): applying the mask *after* the softmax.
# Before reading on, say what goes wrong. (The rows no longer sum to 1, and the masked keys
# have already taken their share of the probability.)

# %% slideshow={"slide_type": "-"}
show(padding_mask)

# %% slideshow={"slide_type": "-"}
show(causal_mask)

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
sentences = [["the", "cat", "sat", "on", "the", "mat"], ["dogs", "bark"],
             ["a", "bird", "sang", "loudly"]]
lengths = torch.tensor([len(s) for s in sentences])
pad = padding_mask(lengths, 6)
print("padding_mask (B x S), 1 = real token:\n", pad.int())
print("causal_mask(4):\n", causal_mask(4).int())
print("as a key mask for B x heads x T x S scores:", tuple(pad[:, None, None, :].shape))

# %% slideshow={"slide_type": "-"}
tokens = sentences[2] + ["<pad>", "<pad>"]
both = pad[2][None, :] & causal_mask(6)
fig, axes = plt.subplots(1, 3, figsize=(9, 3.3))
panels = ((pad[2][None, :].expand(6, 6), "padding (sentence 3)"),
          (causal_mask(6), "causal"), (both, "padding & causal"))
for ax, (mask, title) in zip(axes, panels, strict=True):
    plot_attention(mask.float(), tokens, ax=ax, cmap="Greys", colorbar=False, title=title)
fig.suptitle("Masks as pictures: black = allowed (row = query, column = key)", fontsize=10)
fig.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# A mask broadcasts like any tensor: `T x S` (one causal mask for everything),
# `B x 1 x S` (one padding mask per sentence, the same for all queries), or
# `B x 1 x 1 x S` when the scores also have a heads axis. **Check** against PyTorch with
# masks of several shapes, float64:

# %% slideshow={"slide_type": "-"}
torch.manual_seed(1)
B, H, T, S, dk = 3, 2, 6, 6, 8
q, k, v = (torch.randn(B, H, n, dk, dtype=f64) for n in (T, S, S))
masks = {"causal T x S": causal_mask(T, S),
         "padding B x 1 x 1 x S": pad[:, None, None, :],
         "padding & causal B x 1 x T x S": pad[:, None, None, :] & causal_mask(T, S)}
for name, mask in masks.items():
    ours, weights = scaled_dot_product_attention(q, k, v, mask)
    diff = (ours - F.scaled_dot_product_attention(q, k, v, attn_mask=mask)).abs().max().item()
    leak = weights.masked_fill(mask, 0.0).abs().max().item()
    print(f"{name:<31}: max |ours - torch| = {diff:.1e}  (tolerance 1e-10); "
          f"largest masked weight {leak:g}")
    assert diff < 1e-10 and leak == 0.0
causal_diff = (scaled_dot_product_attention(q, k, v, causal_mask(T))[0]
               - F.scaled_dot_product_attention(q, k, v, is_causal=True)).abs().max().item()
print(f"causal_mask vs torch's is_causal=True: {causal_diff:.1e}")
assert causal_diff < 1e-10

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### When a query may attend to nothing
#
# If *every* key of a query is masked (a padding query under a padding-and-causal mask, say)
# the softmax computes $0/0$. We return weights 0 and output 0 for such a row (`masked_softmax`,
# chapter 06), which is also what `F.scaled_dot_product_attention` does since PyTorch 2.5.
# `nn.MultiheadAttention`, when it returns its weights, still gives NaN there, and a NaN in
# the forward pass poisons every gradient after it. Those rows are padding, so their value
# should never matter, as long as it is finite.

# %% slideshow={"slide_type": "-"}
empty = torch.ones(1, 3, 3, dtype=torch.bool)
empty[0, 1] = False  # query 1 may attend to nothing
x3 = torch.randn(1, 3, 4, dtype=f64)
ours, weights = scaled_dot_product_attention(x3, x3, x3, empty)
theirs = F.scaled_dot_product_attention(x3, x3, x3, attn_mask=empty)
mha_torch = nn.MultiheadAttention(4, 1, batch_first=True).double()
_, mha_weights = mha_torch(x3, x3, x3, attn_mask=~empty)
print("ours, query 1: weights", weights[0, 1].tolist(), " output", ours[0, 1].tolist())
print("F.scaled_dot_product_attention, query 1:", theirs[0, 1].tolist())
print("nn.MultiheadAttention weights, query 1:", mha_weights[0, 1].tolist())

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Multi-head attention
#
# One attention computes one weighted average per query, so it can follow one kind of
# relation at a time (say, "the previous word" *or* "the subject of this verb"). Multi-head
# attention runs $H$ attentions in parallel on different learned projections of the same
# input and concatenates the results. In chapter 06's column notation, with
# $W^Q_i, W^K_i, W^V_i \in \mathbb{R}^{(d/H)\times d}$ for $i = 1..H$ and
# $W \in \mathbb{R}^{d\times d}$:
#
# $$
# A = W \begin{bmatrix}\mathrm{Attention}(W^Q_1 Q, W^K_1 K, W^V_1 V)\\ \vdots\\
# \mathrm{Attention}(W^Q_H Q, W^K_H K, W^V_H V)\end{bmatrix} .
# $$
#
# Each head works in $d/H$ dimensions (and so scales its scores by $1/\sqrt{d/H}$), so the
# $H$ heads together cost about as much as one head of full width.
#
# In code one does not loop over heads. Stacking the $H$ matrices $W^Q_i$ gives one $d\times
# d$ matrix, so a single matrix product projects for all heads; then a reshape gives each
# head its slice of $d/H$ features:

# %% slideshow={"slide_type": "-"}
from lmcourse.viz.diagrams import draw_multi_head

draw_multi_head()
plt.show()

# %% slideshow={"slide_type": "-"}
show(split_heads)

# %% slideshow={"slide_type": "-"}
show(merge_heads)

# %% [markdown] slideshow={"slide_type": "-"}
# The module keeps the three stacked projections in one `3d x d` matrix, `in_proj_weight`,
# and $W$ in `out_proj`, exactly as `torch.nn.MultiheadAttention` does, so a state dict
# moves between the two as is:

# %% slideshow={"slide_type": "-"}
show(MultiHeadAttention.forward)

# %% [markdown] slideshow={"slide_type": "-"}
# **Check 1: the reshape is the formula above.** Compute every head separately with its
# own $(d/H)\times d$ matrices, concatenate, project with $W$, and compare with the module.

# %% slideshow={"slide_type": "-"}
torch.manual_seed(2)
E, H = 12, 3
mha = MultiHeadAttention(E, H, batch_first=True).double()
X = torch.randn(2, 5, E, dtype=f64)
W_Q, W_K, W_V = mha.in_proj_weight.detach().chunk(3)
b_Q, b_K, b_V = mha.in_proj_bias.detach().chunk(3)
heads = []
for i in range(H):
    rows = slice(i * E // H, (i + 1) * E // H)  # head i's rows of each stacked matrix
    head_q = X @ W_Q[rows].T + b_Q[rows]
    head_k = X @ W_K[rows].T + b_K[rows]
    head_v = X @ W_V[rows].T + b_V[rows]
    heads.append(scaled_dot_product_attention(head_q, head_k, head_v)[0])
by_loop = mha.out_proj(torch.cat(heads, dim=-1))
diff = (by_loop - mha(X, X, X)[0]).abs().max().item()
print(f"max |head-by-head loop - split/merge module| = {diff:.1e}  (tolerance 1e-12)")
assert diff < 1e-12

# %% [markdown] slideshow={"slide_type": "-"}
# **Check 2: against `torch.nn.MultiheadAttention`** with copied weights (random biases too,
# since PyTorch initialises them to 0), both batch layouts, self- and cross-attention, with
# and without masks, averaged and per-head weights, float64. One trap:
# `nn.MultiheadAttention`'s `key_padding_mask` and boolean `attn_mask` use the **opposite**
# polarity, `True` = *blocked*. `mask_from_torch` converts them to ours.

# %% slideshow={"slide_type": "-"}
show(mask_from_torch)

# %% slideshow={"slide_type": "-"}
torch.manual_seed(3)
E, H, B, T, S = 16, 4, 3, 5, 6
key_padding = ~padding_mask(torch.tensor([6, 4, 2]), S)  # torch: True = padding
blocked = torch.rand(T, S) < 0.3
blocked[:, 0] = False  # every query keeps a key
worst = {}

# %% slideshow={"slide_type": "-"}
for batch_first in (True, False):
    ref = nn.MultiheadAttention(E, H, batch_first=batch_first).double()
    with torch.no_grad():
        for p in ref.parameters():
            p.normal_(0, 0.3)
    ours = MultiHeadAttention(E, H, batch_first=batch_first).double().load_from_torch(ref)
    query, memory = torch.randn(B, T, E, dtype=f64), torch.randn(B, S, E, dtype=f64)
    if not batch_first:
        query, memory = query.transpose(0, 1), memory.transpose(0, 1)
    cases = {"self, no mask": ((query, query, query), {}),
             "cross, no mask": ((query, memory, memory), {}),
             "cross, key padding + attn mask": ((query, memory, memory),
                                                dict(key_padding_mask=key_padding,
                                                     attn_mask=blocked))}
    for name, (inputs, torch_masks) in cases.items():
        for average in (True, False):
            want_out, want_w = ref(*inputs, **torch_masks, average_attn_weights=average)
            got_out, got_w = ours(*inputs, mask_from_torch(**torch_masks, num_heads=H),
                                  average_attn_weights=average)
            d_out = (got_out - want_out).abs().max().item()
            d_w = (got_w - want_w).abs().max().item()
            worst[name] = max(worst.get(name, 0.0), d_out, d_w)
for name, diff in worst.items():
    print(f"{name:<31}: max |ours - nn.MultiheadAttention| (outputs and weights, "
          f"both layouts) = {diff:.1e}  (tolerance 1e-10)")
    assert diff < 1e-10
print("state dict:", {n: tuple(p.shape) for n, p in ours.state_dict().items()})

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Residual connection
#
# In a transformer the block around multi-head attention adds the input back and
# normalises (Ba et al.'s layer normalisation), with dropout on the attention output:
# $A' = \mathrm{LayerNorm}(\mathrm{Drop}(A) + Q)$, written $\mathrm{ResMHA}(Q, K, V)$ below.
# The residual path lets the input, and its gradient, pass through unchanged, as the LSTM's
# cell did in chapter 03. Chapter 07 assembles these blocks into a transformer.
#
# ## Numbers beside the paper
#
# The Transformer of Vaswani et al. (2017) uses $d_\text{model} = 512$ and $h = 8$ heads and
# reports $d_k = d_v = d_\text{model}/h = 64$. BERT keeps the per-head size (Devlin et al.,
# 2019): BERT-base has hidden size 768 and 12 heads, BERT-large 1024 and 16. We compute the
# head size and count the parameters of one attention layer of each with our module and with
# PyTorch's: four $d\times d$ projections and four bias vectors, $4d^2 + 4d$, independent of
# the number of heads.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
print("model          d_model  heads   d_k computed (paper)   params ours   params torch"
      "   4d^2+4d")
for name, d_model, heads, paper_dk in (("Transformer", 512, 8, 64), ("BERT-base", 768, 12, 64),
                                       ("BERT-large", 1024, 16, 64)):
    d_k = d_model // heads
    ours = count_params(MultiHeadAttention(d_model, heads))
    ref = count_params(nn.MultiheadAttention(d_model, heads))
    print(f"{name:<12} {d_model:>8} {heads:>6}   {d_k:>11} ({paper_dk})   {ours:>12,}"
          f"   {ref:>12,}   {4 * d_model**2 + 4 * d_model:>8,}")
    assert d_k == paper_dk and ours == ref == 4 * d_model**2 + 4 * d_model
T = 128
print(f"score FLOPs for T = {T}: 8 heads of 64 -> {8 * 2 * T * T * 64:,}; "
      f"1 head of 512 -> {2 * T * T * 512:,}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Looking at attention heads
#
# What do heads look at? With random weights, nothing in particular. So we train the
# smallest language model that has attention: token and position embeddings, **one** causal
# multi-head self-attention layer with a residual connection, and a linear layer that
# predicts the next character. No feed-forward block, no layer norm (chapter 07 adds
# those). It trains on the Lee news corpus, character by character, as the RNN of chapter 02
# did.

# %% slideshow={"slide_type": "-"}
show(AttentionLM)

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
text = "\n".join(load_corpus("lee")).lower()
vocab = Vocab(text)
ids = vocab.encode(text)
cut = document_split(text)  # the last whole articles, about 10%
train_ids, val_ids = ids[:cut], ids[cut:]
context = 64
print(f"{len(text):,} characters, {len(vocab)} symbols; context of {context} characters")
counts = torch.ones(len(vocab), len(vocab), dtype=f64)  # add-one smoothed bigram counts
t = torch.tensor(train_ids)
counts.index_put_((t[:-1], t[1:]), torch.ones(len(t) - 1, dtype=f64), accumulate=True)
log_p = (counts / counts.sum(1, keepdim=True)).log()
tv = torch.tensor(val_ids)
bigram_ppl = math.exp(-log_p[tv[:-1], tv[1:]].mean().item())
print(f"baseline: a character bigram model (sees only the current character) has validation "
      f"perplexity {bigram_ppl:.2f}")
kn3_ppl = NGramLM(3, len(vocab)).fit(train_ids).perplexity(val_ids)
print(f"stronger baseline: the Kneser-Ney 3-gram of chapter 02 (two characters of context) "
      f"has {kn3_ppl:.2f}")

# %% slideshow={"slide_type": "-"}
lmcourse.seed_everything(0)
model = AttentionLM(len(vocab), embed_dim=64, num_heads=4, max_len=context).to(dev)
epochs, per_epoch = lmcourse.budget(cpu=3, gpu=20), 150
val_batches = lm_batches(val_ids, 32, context, generator=generator)
history = fit_lm(model, lambda e: lm_batches(train_ids, 32, context, sequential=False,
                                             generator=generator)[:per_epoch],
                 epochs=epochs, lr=3e-3, carry_state=False, val_batches=val_batches)
print(f"{epochs * per_epoch} steps in {history.seconds:.1f} s; validation perplexity "
      f"{history.val_perplexity[-1]:.2f} (add-one bigram {bigram_ppl:.2f}, Kneser-Ney 3-gram "
      f"{kn3_ppl:.2f})")

# %% [markdown] slideshow={"slide_type": "-"}
# Beating the bigram baseline means the model uses characters before the current one, and
# attention is its only way to reach them. The Kneser-Ney 3-gram is the honest bar for a
# model this small and this briefly trained: the printed figures say whether a few hundred
# steps of one attention layer reach it (chapter 7b's longer runs show what a deeper
# transformer does with a real budget). Which ones? The figure shows every head of the
# layer on a real sentence. Row $i$ is the distribution of character $i$ over the
# characters it may see (the causal mask makes every picture lower-triangular). With a
# running kernel the widget below it goes further: it starts on one head, drawn large, and
# recomputes the heads for any sentence you type in its box (press Enter), so you can test
# a guess about a head on text of your own.

# %% slideshow={"slide_type": "-"}
def heads_of(text: str):
    """The model's attention weights on ``text``, and its characters as tokens."""
    if not 1 <= len(text) <= context:
        raise ValueError(f"type between 1 and {context} characters (got {len(text)})")
    unknown = sorted(set(text) - vocab.stoi.keys())
    if unknown:
        raise ValueError(f"characters the model never saw: {unknown}")
    return model.attentions(torch.tensor([vocab.encode(text)], device=dev)), list(text)


sentence = "the prime minister said"
model.eval()
attentions, chars = heads_of(sentence)
attention_widget(attentions, chars, compute=heads_of, text=sentence, head=0)

# %% [markdown] slideshow={"slide_type": "-"}
# Some heads look mostly at the **previous character** (a bright line just below the
# diagonal), which is what a character model needs most after the current character;
# others spread their weight over the current word, or further back. (The first few rows
# are special: near the start of a window there is little to look at.) We can measure it:
# the mean weight each head puts on the previous character, on itself, and the average
# distance it looks back, over the validation text.

# %% slideshow={"slide_type": "-"}
X_val = val_batches[0][0][:8].to(dev)
(W,) = model.attentions(X_val)  # B x heads x T x T
i = torch.arange(context, device=dev)
distance = (i[:, None] - i[None, :]).clamp(min=0).to(W.dtype)
for head in range(W.shape[1]):
    w = W[:, head]
    prev = w[:, i[1:], i[1:] - 1].mean().item()
    print(f"head {head}: weight on previous char {prev:.2f}, on itself "
          f"{w[:, i, i].mean().item():.2f}, mean look-back {(w * distance).sum(-1).mean():.1f}"
          " characters")
best = int(torch.stack([W[:, h, i[1:], i[1:] - 1].mean() for h in range(W.shape[1])]).argmax())
fig = plot_attention(attentions[0][0, best], chars,
                     title=f"head {best}: mostly the previous character")
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# These are the heads of a one-layer toy trained for a few seconds. Chapter 09 opens
# a real pre-trained BERT, MiniLM, and looks at its 72 heads (6 layers of 12), some of which
# follow syntax. Careful reading of such pictures comes with a warning: a weight says where
# a head *looks*, not how much what it finds changes the output.
#
# ## How fast is ours?
#
# Our `scaled_dot_product_attention` runs three separate operations (matrix product,
# softmax, matrix product) and keeps the $T\times S$ weights so we can look at them.
# PyTorch's `F.scaled_dot_product_attention` dispatches to fused kernels (FlashAttention-style
# on GPUs, Dao et al., 2022) that never store the full weight matrix. The course's one timer,
# `lmcourse.timing.compare`, times both in alternation in the same process on the same inputs
# (`make bench` does the same over more sizes); the ratio is what to read, the absolute times
# depend on the machine and its load.

# %% slideshow={"slide_type": "-"}
print(f"{dev}, float32, {torch.get_num_threads()} thread(s)")
print(f"{'B':>3} {'H':>3} {'T':>5} {'d':>4} {'ours (ms)':>10} {'torch (ms)':>11} "
      f"{'ours/torch':>11}")
rows = []
for B, H, T, d in ((8, 8, 64, 64), (4, 8, 256, 64), (2, 8, 512, 64)):
    q, k, v = (torch.randn(B, H, T, d, device=dev) for _ in range(3))
    with torch.no_grad():
        ours, ref = compare(partial(scaled_dot_product_attention, q, k, v),
                            partial(F.scaled_dot_product_attention, q, k, v), device=dev)
    rows.append({"ratio": ours / ref})
    print(f"{B:>3} {H:>3} {T:>5} {d:>4} {1e3 * ours:>10.2f} {1e3 * ref:>11.2f} "
          f"{ours / ref:>10.2f}x")
print(f"ours takes {np.mean([r['ratio'] for r in rows]):.1f}x the time of torch's, on average")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - $\mathrm{Var}(q^\top k) = d$ for unit-variance entries (measured: within sampling error
#   of $d$ from 4 to 1024), so scores are divided by $\sqrt d$. Unscaled scores saturate the
#   softmax, whose Jacobian $\mathrm{diag}(p) - pp^\top$ then vanishes.
# - Masks are boolean, `True` = allowed; masked scores become $-\infty$ before the softmax.
#   Padding masks hide pad tokens, causal masks hide the future. `nn.MultiheadAttention` uses
#   the opposite polarity.
# - Multi-head attention = project, split into $H$ heads of $d/H$, attend, merge, project;
#   $4d^2+4d$ parameters. Ours matches `F.scaled_dot_product_attention` and
#   `nn.MultiheadAttention` to ~1e-15 in float64.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises
#
# 1. *(warm-up)* Redo the variance exercise for entries with mean 0 and variance
#    $\sigma^2$. By what should the scores be divided? Check by sampling.
# 2. *(short)* Let a query equal one of the keys, $q = k_1$, all entries unit-variance. What
#    is the expected score of $k_1$, and of another key? Using the softmax, estimate the
#    weight on $k_1$ with and without the $1/\sqrt d$ scale for $d = 64$ and $S = 16$.
# 3. *(medium)* Retrain `AttentionLM` with 1, 2, 4 and 8 heads at the same `embed_dim`. How
#    do the validation perplexity and the heads' look-back distances change?
# 4. *(harder)* Without the causal mask, `AttentionLM` can see the character it must
#    predict. Train it that way for one epoch: what happens to the training and validation
#    perplexity, and what does the widget show? Explain.
# 5. *(open)* Write a memory-efficient attention that processes the keys in chunks of 64 and
#    combines the chunks' softmaxes with a running maximum and sum (the idea behind
#    FlashAttention). Check it against `scaled_dot_product_attention` and time both.

# %% [markdown] slideshow={"slide_type": "skip"}
# <details><summary>Worked answer to exercise 1</summary>
#
# ```python
# import math
#
# import torch
#
# torch.manual_seed(0)
# d, sigma = 64, 2.0
# q, k = sigma * torch.randn(200_000, d), sigma * torch.randn(200_000, d)
# scores = (q * k).sum(-1)
# assert math.isclose(scores.var().item(), d * sigma**4, rel_tol=0.03)   # d sigma^4
# scaled = scores / (sigma**2 * math.sqrt(d))
# assert math.isclose(scaled.var().item(), 1.0, rel_tol=0.03)
# print(f"Var(q.k) = {scores.var():.0f} (d sigma^4 = {d * sigma**4:.0f})")
# ```
#
# Each product $q_i k_i$ of independent mean-0 entries has variance
# $\mathrm{E}[q_i^2]\,\mathrm{E}[k_i^2] = \sigma^4$, and the $d$ products add up:
# $\mathrm{Var}(q\cdot k) = d\sigma^4$. Dividing by $\sigma^2\sqrt d$ brings it back to 1;
# with $\sigma = 1$ that is the transformer's $\sqrt d$.
# </details>

# %% [markdown] slideshow={"slide_type": "skip"}
# <details><summary>Worked answer to exercise 2</summary>
#
# ```python
# import math
#
# import torch
#
# torch.manual_seed(0)
# d, S, n = 64, 16, 20_000
# keys = torch.randn(n, S, d)
# q = keys[:, 0]                                    # the query equals key 1
# scores = (keys @ q[:, :, None]).squeeze(-1)       # n x S
# assert math.isclose(scores[:, 0].mean().item(), d, rel_tol=0.01)   # E[k1.k1] = d
# assert abs(scores[:, 1:].mean().item()) < 0.5                       # E[k.k1] = 0
# scaled = torch.softmax(scores / math.sqrt(d), -1)[:, 0].mean().item()
# unscaled = torch.softmax(scores, -1)[:, 0].mean().item()
# print(f"weight on k1: {scaled:.3f} with 1/sqrt(d), {unscaled:.4f} without")
# plug_in = math.exp(8) / (math.exp(8) + 15 * math.exp(0.5))    # e^8 against 15 e^(1/2)
# print(f"plug-in value with typical scores: {plug_in:.2f}")
# assert 0.95 < scaled < unscaled
# ```
#
# The score of $k_1$ is $\lVert k_1\rVert^2$, about $d = 64$; another key's score has mean
# 0 and variance $d$. Scaled by $1/\sqrt d$ that is about 8 against 15 standard normals:
# the plug-in value $e^8/(e^8 + 15\,e^{1/2})$ is 0.99, and the sampled mean weight 0.98
# (the score of $k_1$ varies too). Unscaled, 64 against
# scores of spread 8: the softmax is saturated at 1, and its gradient is almost 0, which is
# the chapter's argument for the scale.
# </details>

# %% [markdown] slideshow={"slide_type": "skip"}
# <details><summary>Worked answer to exercise 3</summary>
#
# ```python
# import torch
#
# from lmcourse.data import Vocab, document_split, lm_batches, load_corpus
# from lmcourse.models.attention import AttentionLM
# from lmcourse.models.ngram import NGramLM
# from lmcourse.train import fit_lm
#
# text = "\n".join(load_corpus("lee")).lower()
# vocab = Vocab(text)
# ids = vocab.encode(text)
# train_ids, val_ids = ids[:document_split(text)], ids[document_split(text):]
# T, E = 32, 32                                      # scaled down from the chapter's 64 and 64
# val = lm_batches(val_ids, 32, T, generator=torch.Generator().manual_seed(0))[:10]
# i = torch.arange(T)
# distance = (i[:, None] - i[None, :]).clamp(min=0).float()
# ppl, look = {}, {}
# for heads in (1, 2, 4, 8):
#     torch.manual_seed(0)
#     batches = lm_batches(train_ids, 16, T, sequential=False,
#                          generator=torch.Generator().manual_seed(0))[:200]  # the same 200
#     model = AttentionLM(len(vocab), embed_dim=E, num_heads=heads, max_len=T)
#     history = fit_lm(model, lambda epoch, b=batches: b, 1, lr=1e-2, carry_state=False,
#                      val_batches=val, progress=False)
#     (W,) = model.attentions(val[0][0])             # B x heads x T x T
#     per_head = (W * distance).sum(-1).mean((0, 2))  # mean look-back of each head
#     prev = W[:, :, i[1:], i[1:] - 1].mean((0, 2))   # weight on the previous character
#     ppl[heads], look[heads] = history.val_perplexity[-1], per_head.mean().item()
#     print(f"{heads} head(s) of {E // heads:>2} dims: validation perplexity {ppl[heads]:.2f}, "
#           f"mean look-back {look[heads]:.1f} characters, sharpest previous-character head "
#           f"{prev.max():.2f}")
# bigram = NGramLM(2, len(vocab)).fit(train_ids).perplexity(val_ids)
# print(f"Kneser-Ney bigram on the validation text: {bigram:.2f}")
# assert look[1] < look[2] < look[4] < look[8]       # more, narrower heads look further back
# assert ppl[8] > ppl[1] + 0.1                        # and, this early, predict a little worse
# ```
#
# Scaled down to run in seconds: a 32-character context, `embed_dim` 32, and 200 steps of 16
# windows at learning rate `1e-2`, the same batches for every head count. That is about a
# ninth of the chapter's training tokens, and all four models end near the Kneser–Ney
# bigram (11.24). Within that budget the trend is clear. Splitting the same 32 dimensions into
# more heads makes each head *less* sharp. One head of 32 dimensions puts 0.60 of its weight
# on the previous character and looks back 2.7 characters on average. Eight heads of 4
# dimensions look back 6.2 characters, and their sharpest head puts only 0.29 on the previous
# character. The validation perplexity gets a little worse (10.97 against 11.43). Early in
# training a head needs enough dimensions for its query and key to single out one position.
# Four-dimensional heads spread their weight, which looks further back but blurs the one
# character that matters most. The parameter count is the same for every head count
# ($4d^2 + 4d$ in the attention). More heads pay off once there is budget to specialise them,
# some on the previous character and others on the word. The exercise's full run (the
# chapter's `embed_dim` 64 and 450 steps, several seeds) is needed to see whether 4 or 8 heads
# overtake 1.
# </details>

# %% [markdown] slideshow={"slide_type": "skip"}
# <details><summary>Worked answer to exercise 4</summary>
#
# ```python
# import torch
#
# from lmcourse.data import Vocab, document_split, lm_batches, load_corpus
# from lmcourse.models.attention import AttentionLM
# from lmcourse.train import evaluate_lm, fit_lm
#
#
# class PeekingLM(AttentionLM):
#     """AttentionLM without the causal mask: position t may attend to t + 1, its target."""
#
#     def hidden(self, x):
#         T = x.shape[1]
#         h = self.embed(x) + self.position(torch.arange(T, device=x.device))
#         attended, weights = self.attention(h, h, h, None, average_attn_weights=False)
#         return h + attended, weights
#
#
# text = "\n".join(load_corpus("lee")).lower()
# vocab = Vocab(text)
# ids = vocab.encode(text)
# train_ids, val_ids = ids[:document_split(text)], ids[document_split(text):]
# T = 32
# val = lm_batches(val_ids, 32, T, generator=torch.Generator().manual_seed(0))[:10]
# batches = lm_batches(train_ids, 16, T, sequential=False,
#                      generator=torch.Generator().manual_seed(0))[:150]   # a short "epoch"
# torch.manual_seed(0)
# peek = PeekingLM(len(vocab), embed_dim=32, num_heads=4, max_len=T)
# history = fit_lm(peek, lambda epoch: batches, 1, lr=1e-2, carry_state=False,
#                  val_batches=val, progress=False)
# honest = AttentionLM(len(vocab), embed_dim=32, num_heads=4, max_len=T)
# honest.load_state_dict(peek.state_dict())          # the same weights, causal mask back on
# masked = evaluate_lm(honest, val, carry_state=False)
# (W,) = peek.attentions(val[0][0])                  # B x heads x T x T, no mask
# i = torch.arange(T - 1)
# on_next = W[:, :, i, i + 1].mean((0, 2))           # weight of query t on key t + 1
# print(f"training perplexity {history.epoch_perplexity[-1]:.2f}, validation (no mask) "
#       f"{history.val_perplexity[-1]:.2f}, the same weights with the causal mask {masked:.2f}")
# print("weight on the next character, per head:", " ".join(f"{v:.2f}" for v in on_next))
# print(f"weight above the diagonal (the future): {W.triu(1).sum(-1).mean():.2f}")
# assert history.val_perplexity[-1] < 2.0 < 10.0 < masked
# assert on_next.max() > 0.5
# ```
#
# `PeekingLM` is `AttentionLM` with the mask left out, trained on a short epoch (150 steps
# of 16 windows of 32 characters). Its training perplexity averaged over the epoch is 4.52,
# and the validation perplexity falls to 1.16: far below the chapter's model and the
# Kneser–Ney 3-gram, and too good to be true. The heads have learned to look one step
# *ahead*. One head puts 0.90 of its weight on the next character, which is the target, and
# 0.72 of all weight sits above the diagonal. The widget would show the upper triangle lit,
# with a bright line just above the diagonal instead of just below it. Validation does not
# catch the cheat, because the validation windows have their future in them too. Put the
# causal mask back on the same weights and the model, asked to predict without the answer,
# scores 7182: far worse than guessing uniformly among the 56 characters. It learned to copy,
# not to predict, and at generation time there is no next character to copy. Only the last
# position of each window was ever an honest prediction.
# </details>

# %% [markdown] slideshow={"slide_type": "skip"}
# <details><summary>Worked answer to exercise 5</summary>
#
# ```python
# import math
# from functools import partial
#
# import torch
# import torch.nn.functional as F
#
# from lmcourse.models.attention import causal_mask, scaled_dot_product_attention
# from lmcourse.timing import compare
#
#
# def chunked_attention(q, k, v, chunk: int = 64, causal: bool = False):
#     """softmax(Q K^T / sqrt(d)) V, reading the keys `chunk` at a time (online softmax).
#
#     Per query it keeps the running maximum m of the scores seen so far, the running sum
#     l = sum exp(s - m) and the running output o = sum exp(s - m) v; a new chunk with a larger
#     maximum rescales the old l and o by exp(m_old - m_new). Only T x chunk scores exist at once.
#     """
#     T, S = q.shape[-2], k.shape[-2]
#     m = q.new_full((*q.shape[:-1], 1), -math.inf)
#     l = q.new_zeros((*q.shape[:-1], 1))
#     o = q.new_zeros((*q.shape[:-1], v.shape[-1]))
#     for start in range(0, S, chunk):
#         s = q @ k[..., start:start + chunk, :].transpose(-2, -1) / math.sqrt(q.shape[-1])
#         if causal:
#             keys = torch.arange(start, min(start + chunk, S), device=q.device)
#             s = s.masked_fill(keys[None, :] > torch.arange(T, device=q.device)[:, None],
#                               -math.inf)
#         m_new = torch.maximum(m, s.amax(-1, keepdim=True))
#         p = torch.exp(s - m_new)                   # exp(-inf) = 0 for masked keys
#         rescale = torch.exp(m - m_new)             # 0 on the first chunk (m = -inf)
#         l = l * rescale + p.sum(-1, keepdim=True)
#         o = o * rescale + p @ v[..., start:start + chunk, :]
#         m = m_new
#     return o / l
#
#
# torch.manual_seed(0)
# B, H, T, d = 2, 4, 300, 32                         # 300 keys: 4 full chunks and one of 44
# q, k, v = (torch.randn(B, H, T, d, dtype=torch.float64) for _ in range(3))
# q = 3 * q                                          # large scores: the running max matters
# for causal in (False, True):
#     ours = chunked_attention(q, k, v, causal=causal)
#     ref, _ = scaled_dot_product_attention(q, k, v, causal_mask(T) if causal else None)
#     torch_ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
#     diff = max((ours - ref).abs().max().item(), (ours - torch_ref).abs().max().item())
#     print(f"causal={causal}: max |chunked - full| = {diff:.1e} (float64)")
#     assert diff < 1e-12
# q32, k32, v32 = (x.float() for x in (q, k, v))
# big = 20 * q32                                     # scores in the hundreds: exp overflows
# naive = torch.exp(big @ k32.transpose(-2, -1) / math.sqrt(d))
# err = (chunked_attention(big, k32, v32) - F.scaled_dot_product_attention(big, k32, v32))
# print(f"scores x20 in float32: plain exp gives inf: {bool(naive.isinf().any())}; "
#       f"chunked vs torch: {err.abs().max().item():.1e}")
# assert naive.isinf().any() and err.abs().max() < 1e-4
# for n in (300, 1024):
#     qn, kn, vn = (torch.randn(B, H, n, d) for _ in range(3))
#     t_chunk, t_full = compare(partial(chunked_attention, qn, kn, vn),
#                               partial(scaled_dot_product_attention, qn, kn, vn), repeats=5)
#     print(f"float32, T = S = {n}: chunked {1e3 * t_chunk:.2f} ms, ours in one piece "
#           f"{1e3 * t_full:.2f} ms; scores held at once per head {n * 64:,} vs {n * n:,}")
# ```
#
# The trick is the online softmax. For each query, keep the largest score seen so far ($m$),
# the sum of $e^{s - m}$ ($\ell$) and the unnormalised output $\sum e^{s-m} v$. When a chunk
# brings a larger maximum, multiply the old $\ell$ and output by $e^{m_\text{old} -
# m_\text{new}}$, so that everything stays relative to the new maximum. Divide once at the
# end. The result equals full attention to about 6e-15 in float64, with and without the causal
# mask. Subtracting the running maximum is not optional: with scores in the hundreds, plain
# `exp` overflows to inf in float32, while the chunked version still matches PyTorch to
# 2e-5. Each step holds $T \times 64$ scores instead of $T \times S$ (65,536 against
# 1,048,576 per head at 1,024). Speed depends on the machine, so read the printed times. A
# Python loop over chunks costs overhead at short lengths and can win at long ones, where the
# full score matrix no longer fits in cache. FlashAttention does the same in one fused GPU
# kernel, with the chunks in fast on-chip memory, and never writes the $T \times S$ matrix.
# </details>

# %% [markdown] slideshow={"slide_type": "slide"}
# ## References
#
# - I. Sutskever, O. Vinyals, Q. V. Le (2014). *Sequence to sequence learning with neural
#   networks*. NeurIPS.
# - K. Cho, B. van Merriënboer, D. Bahdanau, Y. Bengio (2014). *On the properties of neural
#   machine translation: encoder–decoder approaches*. SSST-8.
# - D. Bahdanau, K. Cho, Y. Bengio (2015). *Neural machine translation by jointly learning to
#   align and translate*. ICLR.
# - M.-T. Luong, H. Pham, C. D. Manning (2015). *Effective approaches to attention-based
#   neural machine translation*. EMNLP.
# - A. Vaswani, N. Shazeer, N. Parmar, J. Uszkoreit, L. Jones, A. N. Gomez, Ł. Kaiser,
#   I. Polosukhin (2017). *Attention is all you need*. NeurIPS.
# - J. L. Ba, J. R. Kiros, G. E. Hinton (2016). *Layer normalization*. arXiv:1607.06450.
# - J. Devlin, M.-W. Chang, K. Lee, K. Toutanova (2019). *BERT: pre-training of deep
#   bidirectional transformers for language understanding*. NAACL.
# - T. A. Plate (1995). *Holographic reduced representations*. IEEE Transactions on Neural
#   Networks 6(3).
# - T. Dao, D. Y. Fu, S. Ermon, A. Rudra, C. Ré (2022). *FlashAttention: fast and
#   memory-efficient exact attention with IO-awareness*. NeurIPS.

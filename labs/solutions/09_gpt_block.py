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
# # Lab 09 · Build and train a tiny GPT
#
# Chapter 7c showed a task where attention wins by construction: associative recall, where
# a sequence shows key–value pairs and then asks for the keys again. Here you build the
# model that wins it, a GPT-style decoder, from `nn.Linear`, `nn.LayerNorm` and
# `nn.Embedding` alone, and train it against an LSTM of the same size. You will write:
#
# 1. **causal multi-head self-attention**, the layer that looks things up;
# 2. **the pre-norm residual block**, attention then an MLP, each added to the stream;
# 3. **the whole model**: token and position embeddings, the blocks, a final norm, a head;
# 4. **the loss at the queries**, the only positions with an answer;
# 5. then the last check **trains** it and an LSTM with the same number of parameters on
#    the same batches, and you look at what your model's heads learned.
#
# **What to expect.** Your GPT answers at least 90% of the held-out queries with 8 pairs
# (the course's reference transformer: 1.000 over 3 seeds); the LSTM stays near a guess
# among the 8 values shown (the reference LSTM: 0.158). The last check prints both beside
# yours. The whole lab, training included, runs in about a minute on a laptop CPU; its run
# card (the folded line below) gives the time it measured.
#
# After each exercise, run the check cell below it. A check builds your module with its own
# weights, computes the right answer from the same weights, and when yours differs names the
# mistake it recognises (the model sees the future, the missing $1/\sqrt d$, the mask
# applied after the softmax, a block without its residual, ...). Each exercise has two
# hints, folded: open the first when you are stuck, the second if you still are.
#
# Fill in the places that say `raise NotImplementedError`, run the cell, run its check.

# %% [markdown] slideshow={"slide_type": "skip"} tags=["run-card"]
# <details><summary>Run card: 37 s on a CPU, 509.8 MB of memory; GPU: not measured yet</summary>
#
# - **Time on a CPU:** 37 s normalised to the reference machine: 52 s wall on Intel(R) Xeon(R)
#   Processor, one torch thread, calibration 0.691 s against 0.482 s.
# - **Time on a GPU:** not measured yet.
# - **Peak memory:** 509.8 MB (the kernel's resident set).
# - **Last passed:** 2026-11-29, commit `8de5aec-dirty` (nbval, as `make test` runs it).
# - **Files read (1):**
#   - `reference/recall-sweep/result.json` (43.1 KB)
#
# Measured by the test run (`python -m tools.runcards`), not typed.
# </details>

# %% [markdown] slideshow={"slide_type": "skip"} tags=["grading"]
# ### How this lab is graded
#
# Each check cell below is a question of the autograder (5 points in all), and ends with its
# name and points (`# q01: 1 point`).
#
# | question | your code it grades | also needs exercise | points |
# |---|---|---|---|
# | q01 · exercise 1 | `CausalSelfAttention` | – | 1 |
# | q02 · exercise 2 | `Block` | 1 | 1 |
# | q03 · exercise 3 | `TinyGPT` | 1, 2 | 1 |
# | q04 · exercise 4 | `recall_loss` | – | 1 |
# | q05 · closing run | `TinyGPT`, `recall_loss` | – | 1 |
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
import math

import matplotlib.pyplot as plt
import torch
from torch import nn

import lmcourse
from lmcourse.checks import gpt_block as check
from lmcourse.models.recall import IGNORE, recall_batch
from lmcourse.viz import plot_attention

lmcourse.seed_everything(0)
dev = lmcourse.device()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The task, again
#
# Keys are the ids 0–63, values 64–127. A sequence shows $P$ pairs `k v k v ...` and then
# the $P$ keys again in another order; at each query the model must output the value that
# followed that key. Keys and values are drawn afresh for every sequence, so nothing can be
# memorised: the answer must be looked up. Only the query positions have a target; every
# other position holds `IGNORE` (−100).

# %% slideshow={"slide_type": "-"}
example = recall_batch(1, pairs=4, generator=torch.Generator().manual_seed(0))
print("tokens: ", example.tokens[0].tolist())
print("targets:", example.targets[0].tolist())

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 1: causal multi-head self-attention
#
# The input `x` is `B x T x E` (a batch of $T$ vectors of width $E$). One linear layer,
# `self.qkv`, maps each vector to its query, key and value side by side, `[Q | K | V]`
# (each `B x T x E`). With $h$ heads, each head works on its own slice of $d = E / h$
# features (head $i$ holds features $i d$ to $(i+1) d - 1$). For each head:
#
# $$
# \mathrm{head} = \mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt d} + M\right) V,
# \qquad M_{ij} = \begin{cases} 0 & j \le i \\ -\infty & j > i \end{cases}
# $$
#
# The mask $M$ is what makes the model **causal**: query $i$ sees the keys $j \le i$ only,
# so the output at a position never depends on what comes after it. The heads, `B x h x T
# x d`, are merged back to `B x T x E` and pass through `self.out` ($W^O$).
#
# Write `forward`. Before returning, keep this call's attention weights (`B x h x T x T`,
# after the softmax), detached from the graph, in `self.weights`: you will look at them
# after training.
#
# <details><summary>Hint 1</summary>
#
# This is lab 05's scaled dot-product attention and its head split, written in one method;
# chapter 06 derives the $\sqrt d$ and the mask. The mask must act **before** the softmax:
# a blocked key needs a score whose exponential is exactly 0.
#
# </details>
#
# <details><summary>Hint 2</summary>
#
# The shapes, in order: `qkv(x)` is `B x T x 3E`; cut it into three `B x T x E`; regroup
# the last axis of each into `h x d` and swap the `T` and `h` axes (`B x h x T x d`); the
# scores are `B x h x T x T`; the `T x T` boolean lower triangle says which are allowed;
# after the softmax and the product with the values you are back at `B x h x T x d`; swap
# the axes back and flatten the last two to `E`.
#
# </details>

# %% slideshow={"slide_type": "-"}
class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        assert d_model % num_heads == 0, "d_model must be divisible by num_heads"
        self.num_heads = num_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)  # [W^Q; W^K; W^V], stacked
        self.out = nn.Linear(d_model, d_model)      # W^O

    def forward(self, x):
        """B x T x E -> B x T x E; position t reads positions <= t only."""
        # BEGIN SOLUTION
        B, T, E = x.shape
        q, k, v = (t.view(B, T, self.num_heads, -1).transpose(1, 2)
                   for t in self.qkv(x).chunk(3, dim=-1))
        scores = q @ k.transpose(-2, -1) / math.sqrt(E // self.num_heads)
        allowed = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        weights = scores.masked_fill(~allowed, float("-inf")).softmax(dim=-1)
        self.weights = weights.detach()  # B x heads x T x T, kept to look at
        return self.out((weights @ v).transpose(1, 2).reshape(B, T, E))
        # END SOLUTION


# %% slideshow={"slide_type": "-"} tags=["check"]
check.causal_self_attention(CausalSelfAttention)
# q01: 1 point

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 2: the pre-norm residual block
#
# A transformer block has two branches, each **added** to the stream of vectors it reads
# (the residual connection), each reading a LayerNorm of that stream (pre-norm, as in
# GPT-2; the 2017 paper normalised after the sum instead):
#
# $$
# h = x + \mathrm{Attn}(\mathrm{LN}_1(x)), \qquad
# y = h + \mathrm{MLP}(\mathrm{LN}_2(h)),
# $$
#
# where the MLP acts on each position alone: $\mathrm{MLP}(z) = W_2\,\mathrm{GELU}(W_1 z +
# b_1) + b_2$, widening to $4E$ and back. Write `forward`.
#
# <details><summary>Hint 1</summary>
#
# Chapter 07 explains why the sum matters: the block only learns a correction to its input,
# and the gradient reaches the first layers through the sums untouched. Only the branch
# reads the normalised vectors; the stream that carries on is not normalised.
#
# </details>
#
# <details><summary>Hint 2</summary>
#
# Two lines, one per equation. Each line reads the current stream, normalises it with its
# own norm (`norm1` for attention, `norm2` for the MLP), passes it through its branch, and
# adds the result to the stream it started from.
#
# </details>

# %% slideshow={"slide_type": "-"}
class Block(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, num_heads)
        self.norm2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(),
                                 nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        """B x T x E -> B x T x E: attention, then the MLP, each added to the stream."""
        # BEGIN SOLUTION
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))
        # END SOLUTION


# %% slideshow={"slide_type": "-"} tags=["check"]
check.block(Block)
# q02: 1 point

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 3: the whole model
#
# Token $x_t$ at position $t$ enters as the sum of two learned vectors, its token's and its
# position's; the blocks run in order; a final LayerNorm and a linear head give a score for
# every token of the vocabulary at every position:
#
# $$
# h^{(0)}_t = E[x_t] + P[t], \qquad h^{(\ell)} = \mathrm{Block}_\ell(h^{(\ell-1)}),
# \qquad \mathrm{logits}_t = W\,\mathrm{LN}(h^{(L)}_t) + b .
# $$
#
# Write `forward`, returning the logits alone (`B x T x vocab`).
#
# <details><summary>Hint 1</summary>
#
# Attention compares vectors, and nothing in it knows where a vector sits: without $P[t]$
# the model could not tell which value came right after which key. Chapter 07 compares
# learned and sinusoidal positions; here they are learned, one row of `self.positions` per
# place in the sequence.
#
# </details>
#
# <details><summary>Hint 2</summary>
#
# The positions of a batch of length $T$ are the integers $0 \dots T-1$, made on the same
# device as the ids; their embeddings (`T x E`) broadcast over the batch when added to the
# tokens' (`B x T x E`). Then a loop over `self.blocks`, then `self.norm`, then
# `self.head`.
#
# </details>

# %% slideshow={"slide_type": "-"}
class TinyGPT(nn.Module):
    def __init__(self, vocab_size, d_model, num_heads, num_layers, max_len):
        super().__init__()
        self.tokens = nn.Embedding(vocab_size, d_model)
        self.positions = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(Block(d_model, num_heads) for _ in range(num_layers))
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, ids):
        """B x T token ids -> B x T x vocab logits."""
        # BEGIN SOLUTION
        T = ids.shape[1]
        h = self.tokens(ids) + self.positions(torch.arange(T, device=ids.device))
        for block in self.blocks:
            h = block(h)
        return self.head(self.norm(h))
        # END SOLUTION


# %% slideshow={"slide_type": "-"} tags=["check"]
check.tiny_gpt(TinyGPT)
# q03: 1 point

# %% [markdown] slideshow={"slide_type": "-"}
# The model you will train: width 64, 4 heads, 2 blocks, the 128 ids of the task, sequences
# of up to 96 tokens. Count its parameters before you run the cell: each block has
# $4E^2 + 4E$ in attention, $8E^2 + 5E$ in the MLP and $4E$ in its two norms.

# %% slideshow={"slide_type": "-"}
gpt = TinyGPT(128, max_len=96, **check.GPT_SIZE)
print(f"{sum(p.numel() for p in gpt.parameters()):,} parameters")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 4: the loss at the queries
#
# Only the query positions have an answer; a language model's usual loss would average over
# every position. Write `recall_loss(logits, targets)`: the mean cross-entropy over the
# positions $Q$ whose target is not `IGNORE`,
#
# $$
# \mathcal{L} = -\frac{1}{|Q|} \sum_{(b, t) \in Q} \log \mathrm{softmax}(\mathrm{logits}_{b,t})
# [\mathrm{target}_{b,t}] .
# $$
#
# <details><summary>Hint 1</summary>
#
# The target at a query position is the answer that same position must output (no shift by
# one as in next-token prediction: the task put the answer where the model must say it).
# PyTorch's cross-entropy can skip a target value for you.
#
# </details>
#
# <details><summary>Hint 2</summary>
#
# Cross-entropy wants a 2-D `N x vocab` input and `N` targets: flatten the batch and time
# axes of both, and tell it which target value to skip. It averages over what it kept.
#
# </details>

# %% slideshow={"slide_type": "-"}
def recall_loss(logits, targets):
    """Mean cross-entropy over the positions whose target is not IGNORE."""
    # BEGIN SOLUTION
    return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                       targets.reshape(-1), ignore_index=IGNORE)
    # END SOLUTION


# %% slideshow={"slide_type": "-"} tags=["check"]
check.recall_loss(recall_loss)
# q04: 1 point

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Your GPT against an LSTM
#
# Nothing to write here: the check trains your `TinyGPT` and a two-layer LSTM of 80 units
# (about the same number of parameters) on the same batches of 8 pairs, for the same number
# of steps, each at the learning rate it did best with in chapter 7c (Adam, gradient norm
# clipped at 1, your `recall_loss`), and measures both on 512 held-out sequences. It passes
# when your GPT answers at least 90% of the queries and more than the LSTM.
#
# **Predict before you run:** will your GPT's accuracy rise steadily, or sit near the
# LSTM's for a while and then jump?

# %% slideshow={"slide_type": "-"} tags=["check"]
pairs, steps = 8, lmcourse.budget(cpu=800, gpu=1500)
from lmcourse.course import reference

sweep = reference.load("recall-sweep")
reference_accuracy = {kind: [sweep.metrics[s][f"{kind}@{pairs}"] for s in sweep.seeds]
                      for kind in ("transformer", "lstm")}
runs = check.beats_lstm(TinyGPT, recall_loss, pairs, steps, reference=reference_accuracy,
                        device=dev)
# q05: 1 point

# %% slideshow={"slide_type": "-"}
fig, ax = plt.subplots(figsize=(7, 3.4))
for kind, label in (("gpt", "your GPT"), ("lstm", "LSTM, same size")):
    x, y = zip(*runs[kind].curve, strict=True)
    ax.plot(x, y, "o-", ms=3, label=f"{label} ({runs[kind].parameters:,} parameters)")
ax.axhline(1 / pairs, color="0.5", ls=":", label=f"guess a shown value (1/{pairs})")
ax.set(xlabel="training step", ylabel="held-out query accuracy", ylim=(0, 1.05),
       title=f"Associative recall with {pairs} pairs: your GPT against an LSTM")
ax.legend(fontsize=8)
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## What did your heads learn?
#
# Run your trained model on one held-out sequence and draw, for each head of the second
# block, where the query positions (the last rows) look. A head that solved the lookup puts
# its weight on the **value** that followed the asked key: one bright cell per query row,
# one column right of where the same key was shown.

# %% slideshow={"slide_type": "-"}
model = runs["gpt"].model.eval()
batch = recall_batch(1, pairs, generator=torch.Generator().manual_seed(1))
with torch.no_grad():
    answers = model(batch.tokens.to(dev)).argmax(-1)[0].cpu()
names = [f"k{t}" if t < 64 else f"v{t - 64}" for t in batch.tokens[0].tolist()]
queries = range(2 * pairs, 3 * pairs)
print("asked:    ", " ".join(names[q] for q in queries))
print("answered: ", " ".join(f"v{int(answers[q]) - 64}" for q in queries))
print("right:    ", " ".join(f"v{int(batch.targets[0, q]) - 64}" for q in queries))

# %% slideshow={"slide_type": "-"}
last = model.blocks[-1].attn.weights[0].cpu()  # heads x T x T
on_value = torch.stack([last[:, q, int(batch.key_positions[0, q - 2 * pairs]) + 1]
                        for q in queries], dim=1).mean(1)
best = int(on_value.argmax())
print("weight on the asked value, per head of the last block:",
      " ".join(f"{w:.2f}" for w in on_value.tolist()))
fig = plot_attention(last[best, 2 * pairs:], names, names[2 * pairs:],
                     title=f"last block, head {best}: each query row reads its answer")
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# ## Going further
#
# - Remove the position embeddings (add nothing instead of $P[t]$) and train again: how far
#   does the accuracy get, and why does a causal model still learn *something* about order?
# - Train with 16 and 32 pairs (`pairs = 16`). Chapter 7c found 1,000 steps
#   enough for 16 pairs and too few for 32: how many steps does your model need at 32?
# - Replace your `attention` arithmetic by `torch.nn.functional.scaled_dot_product_attention`
#   with `is_causal=True` and time a training step at $T = 96$ and $T = 384$. Why can't the
#   fused version hand you the weights?
# - Make one block post-norm (exercise 2's hint) and train 2, 4 and 8 blocks of each kind at
#   the same learning rate: which trains more reliably as the model deepens?

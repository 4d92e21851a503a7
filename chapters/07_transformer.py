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
# # 07 · The transformer
#
# Chapter 06 built attention: every position asks a question of every other position and
# gets back a weighted average of their values. A **transformer** (Vaswani et al., 2017)
# stacks that operation with three more ingredients that make it trainable and useful:
# **positional encodings** (attention alone cannot tell order), **residual connections with
# LayerNorm** (so that a deep stack still passes signals and gradients), and a
# position-wise **feed-forward network** (where most of the parameters live). With a causal
# mask the same layer becomes a language model that reads left to right, GPT-style.
#
# This chapter has two parts: here the layers, checked against PyTorch, and the
# language model with the paper's training tricks; chapter 7b trains it against
# recurrent networks and n-grams, makes it write, and builds the full encoder–decoder.
#
# By the end of it you will be able to
#
# - show that attention without positions is blind to word order, and build **sinusoidal**
#   and **learned** positional encodings (and explain why sinusoids encode relative offsets);
# - write **LayerNorm**, the **residual** connection, and the **post-norm** and **pre-norm**
#   arrangements as equations and as code;
# - assemble an **encoder layer** that loads `torch.nn.TransformerEncoderLayer`'s weights and
#   gives the same outputs, and count its parameters against the paper's base model;
# - assemble a **decoder layer** (masked self-attention, cross-attention over the encoder's
#   memory, feed-forward) and check it against `torch.nn.TransformerDecoderLayer`;
# - turn the encoder layer into a **causal transformer LM** with the paper's training
#   tricks (weight tying, embedding dropout, the warm-up schedule);

# %% [markdown] slideshow={"slide_type": "skip"} tags=["run-card"]
# <details><summary>Run card: 4.2 s on a CPU, 401.2 MB of memory; GPU: not measured yet</summary>
#
# - **Time on a CPU:** 4.2 s normalised to the reference machine: 6.5 s wall on Intel(R) Xeon(R)
#   Processor, one torch thread, calibration 0.739 s against 0.482 s.
# - **Time on a GPU:** not measured yet.
# - **Peak memory:** 401.2 MB (the kernel's resident set).
# - **Last passed:** 2026-11-29, commit `8de5aec` (nbval, as `make test` runs it).
# - **Files read (0):** none.
#
# Measured by the test run (`python -m tools.runcards`), not typed.
# </details>

# %% slideshow={"slide_type": "-"}

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F

import lmcourse
from lmcourse import show
from lmcourse.models.attention import MultiHeadAttention, causal_mask, padding_mask
from lmcourse.models.compress import count_params

# %% slideshow={"slide_type": "-"}
from lmcourse.models.transformer import (
    LearnedPositions,
    TransformerDecoderLayer,
    TransformerEncoderLayer,
    TransformerLM,
    decoder_layer_parameters,
    encoder_layer_parameters,
    sinusoidal_positions,
)
from lmcourse.train import transformer_lr
from lmcourse.viz.architecture import draw_encoder_decoder

generator = lmcourse.seed_everything(0)
dev = lmcourse.device()
if dev.type == "cpu":
    torch.set_num_threads(1)  # small matrices: one thread is as fast, and steadier

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Attention does not know the order of its inputs
#
# Self-attention compares every position with every other one by dot products, and sums
# values with the resulting weights. Nothing in $\mathrm{softmax}(QK^\top/\sqrt d)\,V$ refers
# to *where* a token sits: if we shuffle the input rows by a permutation $\pi$, the output
# rows are shuffled the same way and are otherwise unchanged,
#
# $$\mathrm{Attn}(P_\pi X) = P_\pi\, \mathrm{Attn}(X).$$
#
# "dog bites man" and "man bites dog" would get the same set of vectors. **Check** with a
# random multi-head attention layer (no mask) and a random permutation:

# %% [markdown] slideshow={"slide_type": "-"}
# **Try it:** the cell below permutes the input positions; check that the outputs are
# permuted the same way. What would a model that cannot see order get wrong in "dog bites
# man" against "man bites dog"?

# %% slideshow={"slide_type": "-"}
torch.manual_seed(0)
mha = MultiHeadAttention(16, 4, batch_first=True).double()
X = torch.randn(1, 6, 16, dtype=torch.float64)
perm = torch.randperm(6)
out, _ = mha(X, X, X)
out_perm, _ = mha(X[:, perm], X[:, perm], X[:, perm])
d = (out_perm - out[:, perm]).abs().max().item()
print(f"max |Attn(PX) - P Attn(X)| = {d:.1e}  (tolerance 1e-12: order is invisible)")
assert d < 1e-12

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Sinusoidal positional encodings
#
# The fix is to add to each token embedding a vector that depends on its position,
# $x_t = E[\text{token}_t] + \mathrm{PE}[t]$. Vaswani et al. use fixed sinusoids: for
# position $pos$ and dimension pair $i = 0, \dots, d/2 - 1$,
#
# $$\mathrm{PE}[pos, 2i] = \sin\!\left(\frac{pos}{10000^{2i/d}}\right), \qquad
# \mathrm{PE}[pos, 2i+1] = \cos\!\left(\frac{pos}{10000^{2i/d}}\right).$$
#
# Think of $d/2$ clock hands, each turning at its own angular speed
# $\omega_i = 10000^{-2i/d}$: the first turns once every $2\pi \approx 6$ positions, the last
# once every $2\pi\cdot 10000$ positions. Together the hands give every position a unique
# reading, like the digits of a number in a continuous base.

# %% slideshow={"slide_type": "-"}
show(sinusoidal_positions)

# %% [markdown] slideshow={"slide_type": "-"}
# Why sines *and* cosines? Because a shift by $k$ positions is then a **rotation** of each
# $(\sin, \cos)$ pair by the angle $k\omega_i$, the same for every starting position. So
# $\mathrm{PE}[pos+k]$ is a fixed linear function of $\mathrm{PE}[pos]$, and the dot product
# between two positions depends only on their offset:
#
# $$\mathrm{PE}[p]\cdot\mathrm{PE}[p+k] = \sum_{i} \big(\sin(p\omega_i)\sin((p+k)\omega_i)
# + \cos(p\omega_i)\cos((p+k)\omega_i)\big) = \sum_i \cos(k\omega_i).$$
#
# **Check** both claims: the table against a direct loop over the formula, and the dot
# product at offset $k$ from many starting positions $p$ against $\sum_i\cos(k\omega_i)$.

# %% slideshow={"slide_type": "-"}
T_pe, d_pe = 128, 64
pe = sinusoidal_positions(T_pe, d_pe).double()
loop = torch.tensor([[np.sin(p / 10000 ** (2 * (j // 2) / d_pe)) if j % 2 == 0
                      else np.cos(p / 10000 ** (2 * (j // 2) / d_pe))
                      for j in range(d_pe)] for p in range(T_pe)], dtype=torch.float64)
print(f"max |table - loop| = {(pe - loop).abs().max().item():.1e}  (tolerance 1e-6)")
assert (pe - loop).abs().max() < 1e-6
omega = 10000.0 ** (-torch.arange(0, d_pe, 2, dtype=torch.float64) / d_pe)
worst = 0.0
for k in (1, 5, 20):
    dots = (pe[: T_pe - k] * pe[k:]).sum(dim=1)  # PE[p] . PE[p+k] for every p
    formula = torch.cos(k * omega).sum().item()
    worst = max(worst, (dots - formula).abs().max().item())
    print(f"offset {k:>2}: dot product {dots.mean():6.3f} for all p (spread "
          f"{(dots.max() - dots.min()).item():.0e}); sum_i cos(k w_i) = {formula:6.3f}")
assert worst < 1e-6

# %% [markdown] slideshow={"slide_type": "-"}
# The picture: each row is one position's encoding (fast clocks on the left, slow ones on
# the right); on the right, the dot product with position 0 as a function of the offset. It
# peaks at offset 0 and falls off, so nearby positions look alike, and it is symmetric in
# $\pm k$ (the dot product cannot tell left from right; the model must learn direction from
# the individual coordinates).

# %% slideshow={"slide_type": "-"}
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.5))
im = ax1.imshow(pe.numpy(), aspect="auto", cmap="RdBu", vmin=-1, vmax=1)
ax1.set(xlabel="dimension", ylabel="position", title="sinusoidal encodings, d = 64")
fig.colorbar(im, ax=ax1, fraction=0.046)
offsets = np.arange(-T_pe + 1, T_pe)
ax2.plot(offsets, [torch.cos(abs(k) * omega).sum().item() for k in offsets])
ax2.set(xlabel="offset k", ylabel=r"$PE[p]\cdot PE[p+k]$", title="similarity vs offset")
fig.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# **Learned positions** are the simpler alternative (BERT, GPT-2): a table with one trainable
# vector per position, $P \in \mathbb{R}^{L_{\max}\times d}$, trained with the rest of the
# model. They can fit whatever the data needs, but they know nothing about positions beyond
# $L_{\max}$ or positions rarely seen in training, whereas the sinusoids are defined
# everywhere. Vaswani et al. report nearly identical results with both.

# %% slideshow={"slide_type": "-"}
show(LearnedPositions)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Residual connections and LayerNorm
#
# A deep stack of layers is hard to train when each layer must *replace* its input. A
# **residual connection** (He et al., 2016) makes each block compute a *correction*,
# $x \mapsto x + F(x)$: the identity path carries the signal forward and the gradient
# backward ($\partial (x+F(x))/\partial x = I + \partial F/\partial x$) through any depth.
#
# **LayerNorm** (Ba, Kiros & Hinton, 2016) keeps the scale of the vectors under control. For
# one position's vector $x\in\mathbb{R}^d$, with $\mu = \frac1d\sum_j x_j$ and
# $\sigma^2 = \frac1d\sum_j (x_j-\mu)^2$,
#
# $$\mathrm{LN}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}} + \beta,$$
#
# with learned gain $\gamma$ and bias $\beta$. Unlike BatchNorm it uses statistics of a
# single position, so it behaves the same in training and inference and for any batch size.
# **Check** the equation against `torch.nn.functional.layer_norm`:

# %% slideshow={"slide_type": "-"}
torch.manual_seed(0)
x = torch.randn(4, 10, dtype=torch.float64) * 3 + 1
gamma, beta = torch.randn(10, dtype=torch.float64), torch.randn(10, dtype=torch.float64)
mu = x.mean(-1, keepdim=True)
var = ((x - mu) ** 2).mean(-1, keepdim=True)  # biased variance (1/d), as in LayerNorm
ours_ln = gamma * (x - mu) / torch.sqrt(var + 1e-5) + beta
d = (ours_ln - F.layer_norm(x, (10,), gamma, beta, eps=1e-5)).abs().max().item()
print(f"max |equation - F.layer_norm| = {d:.1e}  (tolerance 1e-12)")
assert d < 1e-12

# %% [markdown] slideshow={"slide_type": "-"}
# Where does the norm go? The paper puts it **after** the residual sum (**post-norm**):
#
# $$h = \mathrm{LN}_1\big(x + \mathrm{MHA}(x)\big), \qquad
# y = \mathrm{LN}_2\big(h + \mathrm{FFN}(h)\big).$$
#
# Most models since GPT-2 put it **before** each block, inside the branch (**pre-norm**):
#
# $$h = x + \mathrm{MHA}\big(\mathrm{LN}_1(x)\big), \qquad
# y = h + \mathrm{FFN}\big(\mathrm{LN}_2(h)\big).$$
#
# In pre-norm the residual path $x \to y$ is a clean identity, never normalised; Xiong et
# al. (2020) show that this keeps the gradients of the last layers well-scaled at
# initialisation, so pre-norm transformers train without the learning-rate warm-up that
# post-norm ones need. (A pre-norm stack then needs one final LayerNorm before the output
# head.)
#
# ## The feed-forward block
#
# Attention mixes information *between* positions; the feed-forward network then processes
# each position *separately* with the same two-layer MLP,
#
# $$\mathrm{FFN}(x) = W_2\, \mathrm{act}(W_1 x + b_1) + b_2, \qquad
# W_1\in\mathbb{R}^{d_{ff}\times d},\; W_2\in\mathbb{R}^{d\times d_{ff}},$$
#
# with ReLU in the paper (GELU in BERT and GPT) and a hidden width $d_{ff} = 4d$. In our
# layers it is the method `_feed_forward`, the code that really runs in the encoder layer
# below (and in the decoder layer): its branch `_ff_block` adds dropout, as PyTorch's layer
# does, with the same weights `linear1`, `linear2`:

# %% slideshow={"slide_type": "-"}
show(TransformerEncoderLayer._feed_forward)

# %% [markdown] slideshow={"slide_type": "-"}
# **Check.** The equation written out with the block's own weight matrices, position by
# position in a Python loop, must give what the block computes for the whole batch at once
# (float64, GELU this time). And the claim "each position separately": changing the input at
# one position must leave the output at every other position untouched.

# %% slideshow={"slide_type": "-"}
torch.manual_seed(0)
layer_ffn = TransformerEncoderLayer(8, 2, dim_feedforward=32, activation="gelu").double()
ffn = layer_ffn._feed_forward
x_ffn = torch.randn(2, 5, 8, dtype=torch.float64)
W1, b1 = layer_ffn.linear1.weight, layer_ffn.linear1.bias
W2, b2 = layer_ffn.linear2.weight, layer_ffn.linear2.bias
with torch.no_grad():
    by_hand = torch.stack([torch.stack([W2 @ torch.nn.functional.gelu(W1 @ x_ffn[b, t] + b1) + b2
                                        for t in range(5)]) for b in range(2)])
    out = ffn(x_ffn)
    moved = x_ffn.clone()
    moved[:, 2] += 1.0  # change position 2 only
    leak = (ffn(moved) - out)[:, [0, 1, 3, 4]].abs().max().item()
print(f"max |FFN(x) - W2 act(W1 x + b1) + b2| = {(out - by_hand).abs().max().item():.1e}"
      f"  (tolerance 1e-12); change at other positions = {leak:.1e} (must be 0)")
assert (out - by_hand).abs().max() < 1e-12 and leak == 0.0

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The encoder layer, checked against PyTorch
#
# Our layer uses the parameter names of `torch.nn.TransformerEncoderLayer` (`self_attn`
# is chapter 6b's `MultiHeadAttention`, then `linear1`, `linear2`, `norm1`, `norm2`), so
# `load_state_dict` copies a PyTorch layer's weights as is. Both arrangements are a few
# lines:

# %% slideshow={"slide_type": "-"}
show(TransformerEncoderLayer.forward)

# %% [markdown] slideshow={"slide_type": "-"}
# **Check.** For both `norm_first` settings, copy the weights of a randomly initialised
# `nn.TransformerEncoderLayer` (float32, dropout 0, eval mode; LayerNorm parameters
# perturbed so they are not the trivial 1 and 0) and compare the outputs with a causal mask.
# Careful with the mask polarity: PyTorch's `src_mask` says where attention is *forbidden*,
# ours where it is *allowed*, so we pass `~mask`. In eval mode PyTorch runs a fused
# "fast path"; in training mode (dropout 0, so the same function) its ordinary one. The
# difference between those two is the float32 rounding floor we should expect: the outputs
# are of size ~4, where one float32 step (ulp) is about $5\times10^{-7}$.

# %% slideshow={"slide_type": "-"}
torch.manual_seed(0)
d_model, nhead, d_ff, T, B = 32, 4, 64, 12, 3
mask = causal_mask(T)
for norm_first in (False, True):
    ref = torch.nn.TransformerEncoderLayer(d_model, nhead, d_ff, dropout=0.0,
                                           batch_first=True, norm_first=norm_first).eval()
    with torch.no_grad():
        for p in ref.parameters():
            p.add_(0.1 * torch.randn_like(p))
    ours = TransformerEncoderLayer(d_model, nhead, d_ff, batch_first=True,
                                   norm_first=norm_first)
    ours.load_state_dict(ref.state_dict())
    ours.eval()
    x = torch.randn(B, T, d_model)
    with torch.no_grad():
        expected = ref(x, src_mask=~mask)
        d = (ours(x, mask) - expected).abs().max().item()
        floor = (ref.train()(x, src_mask=~mask) - expected).abs().max().item()  # torch vs torch
    print(f"norm_first={norm_first!s:5}: max |ours - torch| = {d:.1e}  (tolerance 1e-6); "
          f"torch's two code paths differ by {floor:.1e}")
    assert d < 1e-6

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The decoder layer: masked self-attention, then cross-attention
#
# The paper's transformer translates: an **encoder** reads the source sentence, a
# **decoder** writes the target one token at a time. A decoder layer has three blocks
# instead of two. For the target vectors $y$ ($T\times d$) and the encoder's output, the
# **memory** $m$ ($S\times d$):
#
# 1. **masked self-attention** over the target, $\mathrm{MHA}(Q{=}y, K{=}y, V{=}y)$ under a
#    causal mask: target position $i$ sees positions $\le i$ only (the words it has
#    already written);
# 2. **cross-attention**, $\mathrm{MHA}(Q{=}y, K{=}m, V{=}m)$: the queries come from the
#    target, the keys and values from the source, so each target position looks up the
#    source positions it needs (chapter 06's alignment; a source padding mask hides padded
#    source positions);
# 3. the position-wise **feed-forward** network.
#
# Each block sits in a residual connection with a LayerNorm. Post-norm (the paper):
#
# $$h_1 = \mathrm{LN}_1\big(y + \mathrm{SelfAttn}(y)\big),\quad
# h_2 = \mathrm{LN}_2\big(h_1 + \mathrm{CrossAttn}(h_1, m)\big),\quad
# y' = \mathrm{LN}_3\big(h_2 + \mathrm{FFN}(h_2)\big);$$
#
# pre-norm:
#
# $$h_1 = y + \mathrm{SelfAttn}\big(\mathrm{LN}_1(y)\big),\quad
# h_2 = h_1 + \mathrm{CrossAttn}\big(\mathrm{LN}_2(h_1), m\big),\quad
# y' = h_2 + \mathrm{FFN}\big(\mathrm{LN}_3(h_2)\big).$$
#
# Our `TransformerDecoderLayer` shares the self-attention and feed-forward code with the
# encoder layer; the cross-attention block is the new part:

# %% [markdown] slideshow={"slide_type": "-"}
# **Before the figure:** where do the keys and values of cross-attention come from, and
# why does the decoder's self-attention need the causal mask during training (teacher
# forcing shows it the whole target at once)?

# %% slideshow={"slide_type": "-"}
show(TransformerDecoderLayer._mha_block)
show(TransformerDecoderLayer.forward)

# %% [markdown] slideshow={"slide_type": "-"}
# The whole model: $N$ encoder layers turn the source into the memory, and **every**
# decoder layer attends to that same memory. The decoder's input is the target shifted
# right by one (a start token first), so that position $i$ predicts target token $i$ from
# tokens $< i$ and the whole source; a linear layer and a softmax turn its output into the
# next-token distribution.

# %% slideshow={"slide_type": "-"}
fig, axes = plt.subplots(1, 2, figsize=(14, 6.2))
draw_encoder_decoder(norm_first=False, ax=axes[0])
draw_encoder_decoder(norm_first=True, ax=axes[1])
fig.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# **Check** against `torch.nn.TransformerDecoderLayer` with the same weights, in float64,
# for both arrangements, with the causal mask on the target's self-attention and a padding
# mask on the memory (the second and third sources are shorter). As for the encoder,
# PyTorch's masks say where attention is *forbidden*, so we pass their negations. In
# float64 there is no fast path and no float32 floor: the two should agree to ~1e-15.

# %% slideshow={"slide_type": "-"}
torch.manual_seed(0)
T_dec, S_dec, lengths = 7, 5, [5, 3, 2]
worst = 0.0
for norm_first in (False, True):
    ref = torch.nn.TransformerDecoderLayer(32, 4, 64, dropout=0.0, batch_first=True,
                                           norm_first=norm_first).double().eval()
    with torch.no_grad():
        for p in ref.parameters():
            p.add_(0.1 * torch.randn_like(p))
    ours = TransformerDecoderLayer(32, 4, 64, batch_first=True, norm_first=norm_first).double()
    ours.load_state_dict(ref.state_dict())  # same parameter names and shapes
    ours.eval()
    tgt = torch.randn(3, T_dec, 32, dtype=torch.float64)
    memory = torch.randn(3, S_dec, 32, dtype=torch.float64)
    allowed_tgt, allowed_mem = causal_mask(T_dec), padding_mask(lengths, S_dec)
    with torch.no_grad():
        expected = ref(tgt, memory, tgt_mask=~allowed_tgt, memory_key_padding_mask=~allowed_mem)
        got = ours(tgt, memory, tgt_mask=allowed_tgt, memory_mask=allowed_mem[:, None, None, :])
    d = (got - expected).abs().max().item()
    worst = max(worst, d)
    print(f"norm_first={norm_first!s:5}: max |ours - torch| = {d:.1e}  (float64, causal "
          "target mask, padded memory; tolerance 1e-10)")
assert worst <= 1e-10

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Counting parameters: our layer vs the formula vs the paper
#
# Per encoder layer: attention has four $d\times d$ projections with biases ($4d^2 + 4d$),
# the FFN $2\,d\,d_{ff} + d_{ff} + d$, the two LayerNorms $4d$. For the paper's **base
# model** ($d = 512$, 8 heads, $d_{ff} = 2048$, 6 encoder and 6 decoder layers) we count our
# module, the formula, and then the whole encoder–decoder. A decoder layer adds
# cross-attention ($4d^2 + 4d$) and a third LayerNorm ($2d$); the embedding matrix is shared
# by encoder, decoder and output layer over the paper's shared vocabulary of about 37,000
# BPE tokens (English–German).

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
base = TransformerEncoderLayer(512, 8, 2048)
print(f"one encoder layer: our module {count_params(base):,}, formula "
      f"{encoder_layer_parameters(512, 2048):,}")
assert count_params(base) == encoder_layer_parameters(512, 2048)
decoder_layer = count_params(TransformerDecoderLayer(512, 8, 2048))
print(f"one decoder layer: our module {decoder_layer:,}, formula "
      f"{decoder_layer_parameters(512, 2048):,}, torch "
      f"{count_params(torch.nn.TransformerDecoderLayer(512, 8, 2048)):,}")
assert decoder_layer == decoder_layer_parameters(512, 2048)
embeddings = 37_000 * 512
total = 6 * count_params(base) + 6 * decoder_layer + embeddings
print(f"6 encoder + 6 decoder layers + shared 37K x 512 embedding = {total / 1e6:.1f}M "
      "(computed)")
print("Vaswani et al. 2017, Table 3, base model: 65M (reported)")

# %% [markdown] slideshow={"slide_type": "-"}
# The computed total lands within a few percent of the reported 65M (the exact vocabulary
# size and whether the final LayerNorms are counted account for the rest). Note where the
# parameters are: in each layer the FFN holds twice as many as attention, and at this
# vocabulary size the embedding alone is almost a third of the model.
#
# ## A causal transformer language model
#
# For language modelling we keep only the encoder-style layer and add the **causal mask**
# of chapter 06: position $t$ may attend to positions $\le t$. Token embeddings plus
# positions go in, a stack of pre-norm layers, a final LayerNorm and a linear head to the
# vocabulary come out: a decoder-only (GPT-style) model. It follows the course's contract
# `logits, state = model(x, state)` with no state, so `fit_lm` trains it with
# `carry_state=False`.

# %% slideshow={"slide_type": "-"}
show(TransformerLM.hidden)

# %% [markdown] slideshow={"slide_type": "-"}
# **Check** causality: change the token at position 6 and confirm that the logits at
# positions 0–5 do not move at all, while those from 6 on do.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
torch.manual_seed(0)
toy = TransformerLM(20, 32, 4, 2, 64, max_len=16).double().eval()
a = torch.randint(0, 20, (2, 16))
b = a.clone()
b[:, 6] = (a[:, 6] + 1) % 20
with torch.no_grad():
    la, lb = toy(a)[0], toy(b)[0]
before = (la[:, :6] - lb[:, :6]).abs().max().item()
after = (la[:, 6:] - lb[:, 6:]).abs().max().item()
print(f"positions 0-5: max change {before:.1e} (must be 0); positions 6-15 changed: "
      f"{after > 1e-6}")
assert before == 0.0 and after > 1e-6

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Two tricks from the paper: weight tying and embedding dropout
#
# The input layer maps token $w$ to the row $E[w]$ of the embedding matrix
# $E\in\mathbb{R}^{V\times d}$; the output layer scores every token with a dot product,
# $\mathrm{logits}_t = W h_t + b$ with $W\in\mathbb{R}^{V\times d}$: the same shape.
# **Weight tying** (Press & Wolf, 2017; used by Vaswani et al.) sets $W = E$:
#
# $$p(x_{t+1} = w \mid x_{\le t}) = \mathrm{softmax}(E\,h_t + b)_w ,$$
#
# so a token's input vector is also the direction the model's state must point to predict
# it. It saves $V\cdot d$ parameters (for the paper's 37,000-token vocabulary, 19M of 65M)
# and on word-level data usually lowers perplexity too. The paper also multiplies the
# embeddings by $\sqrt d$ on the way in, and applies **dropout to the sums**
# $E[x_t]\sqrt d + \mathrm{PE}[t]$ (rate 0.1). Both are options of `TransformerLM`, off by
# default:

# %% slideshow={"slide_type": "-"}
show(TransformerLM.tie_weights)
show(TransformerLM.hidden)

# %% [markdown] slideshow={"slide_type": "-"}
# **Check** tying: the output layer's weight *is* the embedding matrix (one tensor), and
# the parameter count drops by exactly $V\cdot d$.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
untied = TransformerLM(56, 48, 4, 2, 96, max_len=64)
tied = TransformerLM(56, 48, 4, 2, 96, max_len=64, tie_weights=True)
print(f"head.weight is embed.weight: untied {untied.head.weight is untied.embed.weight}, "
      f"tied {tied.head.weight is tied.embed.weight}")
print(f"parameters: untied {count_params(untied):,}, tied {count_params(tied):,}, "
      f"difference {count_params(untied) - count_params(tied):,} = V*d = {56 * 48:,}")
assert tied.head.weight is tied.embed.weight
assert count_params(untied) - count_params(tied) == 56 * 48

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The warm-up learning-rate schedule
#
# Vaswani et al. train with Adam and a learning rate that rises linearly for `warmup`
# steps, then decays as the inverse square root of the step:
#
# $$\mathrm{lr}(s) = \mathrm{factor}\cdot d^{-1/2}\cdot\min\big(s^{-1/2},\; s\cdot
# \mathrm{warmup}^{-3/2}\big),$$
#
# with the two branches meeting at $s = \mathrm{warmup}$ (4,000 steps in the paper, with
# factor 1 and $d = 512$: a peak of $7\times10^{-4}$). Early on Adam's estimates of the
# gradient's scale are poor and a post-norm stack's gradients are badly scaled (Xiong et al.,
# 2020), so large steps would throw the model off; later, smaller steps let it settle.
# `fit_lm` takes any schedule as `lr_schedule`:

# %% slideshow={"slide_type": "-"}
show(transformer_lr)

# %% slideshow={"slide_type": "-"}
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3))
for ax, d, warm, factor, n in ((ax1, 512, 4000, 1.0, 20_000), (ax2, 48, 100, 2.0, 2400)):
    s_axis = np.arange(1, n + 1)
    ax.plot(s_axis, [transformer_lr(s, d, warm, factor) for s in s_axis])
    ax.axvline(warm, color="0.6", linestyle=":")
    ax.set_xticks(np.linspace(0, n, 5))  # five labels: long step counts do not collide
    ax.set(xlabel="step", ylabel="learning rate",
           title=f"d = {d}, warmup {warm}, factor {factor:g}")
ax1.set_title("paper: " + ax1.get_title())
ax2.set_title("ours (chapter 7b): " + ax2.get_title())
fig.tight_layout()
plt.show()
print(f"peak: paper {transformer_lr(4000, 512, 4000):.2e} at step 4000; "
      f"ours {transformer_lr(100, 48, 100, factor=2.0):.2e} at step 100")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - Attention is **permutation-equivariant**: order must be injected. Sinusoidal encodings
#   are fixed clocks whose dot products depend only on the offset; learned ones are a table.
# - **Residual connections** keep an identity path through depth; **LayerNorm** normalises
#   each position's vector. Post-norm (the paper) normalises after the sum, pre-norm
#   (modern practice) inside the branch, which trains more stably (Xiong et al., 2020).
# - The **FFN** is a per-position two-layer MLP with $d_{ff}=4d$; it holds two thirds of a
#   layer's parameters ($4d^2+4d$ attention vs $8d^2+5d$ FFN at $d_{ff}=4d$).
# - Our encoder layer equals `nn.TransformerEncoderLayer` with copied weights in both
#   arrangements; the base model's parameter count follows from the formula.
# - A **decoder layer** adds cross-attention between masked self-attention and the FFN: its
#   queries come from the target, its keys and values from the encoder's memory. Ours equals
#   `nn.TransformerDecoderLayer` in float64 (post-norm and pre-norm, causal mask).
# - With a causal mask the layer stack is a **language model**. The paper trains it with a
#   linear warm-up then $1/\sqrt{\text{step}}$ decay, ties the output layer to the
#   embedding ($\mathrm{softmax}(E h)$, saving $V d$ parameters) and drops out the input
#   embeddings; chapter 7b measures the last two at our scale, a 56-character vocabulary
#   and a few hundred steps.
#
# Chapter 7b trains this model against recurrent networks and n-grams, makes it write,
# and builds the full encoder–decoder.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises
#
# 1. *(warm-up)* Show that for the sinusoidal encodings $\mathrm{PE}[pos+k] = M_k\,
#    \mathrm{PE}[pos]$ for a block-diagonal matrix $M_k$ of $2\times2$ rotations. Build $M_5$
#    for $d = 64$ and check it numerically.
# 2. *(short)* Count the parameters of BERT-base ($d = 768$, 12 heads, $d_{ff} = 3072$, 12
#    layers, 30,522-token vocabulary, 512 learned positions) with `encoder_layer_parameters`
#    and compare with the 110M reported by Devlin et al. (2019).

# %% [markdown] slideshow={"slide_type": "skip"}
# <details><summary>Worked answer to exercise 1</summary>
#
# ```python
# import math
#
# import torch
#
# from lmcourse.models.transformer import sinusoidal_positions
#
# d, k = 64, 5
# pe = sinusoidal_positions(100, d).double()
# M = torch.zeros(d, d, dtype=torch.float64)
# for i in range(d // 2):                           # one 2 x 2 rotation per frequency
#     w = 10000.0 ** (-2 * i / d)
#     c, s = math.cos(w * k), math.sin(w * k)
#     M[2 * i:2 * i + 2, 2 * i:2 * i + 2] = torch.tensor([[c, s], [-s, c]])
# assert torch.allclose(pe[k:] , pe[:-k] @ M.T, atol=1e-5)   # PE[pos + k] = M_k PE[pos]
# ```
#
# Columns $2i$ and $2i+1$ hold $(\sin \omega_i p, \cos \omega_i p)$. The addition
# formulas give $\sin\omega_i(p+k) = \sin\omega_i p\cos\omega_i k + \cos\omega_i p
# \sin\omega_i k$ and $\cos\omega_i(p+k) = \cos\omega_i p\cos\omega_i k - \sin\omega_i p
# \sin\omega_i k$: a rotation by $\omega_i k$ that does not depend on $p$. A shift by $k$
# is one fixed linear map, which a layer can learn. (The table is float32, hence the
# tolerance.)
# </details>

# %% [markdown] slideshow={"slide_type": "skip"}
# <details><summary>Worked answer to exercise 2</summary>
#
# ```python
# from lmcourse.models.transformer import encoder_layer_parameters
#
# d, ff, layers, vocab, positions = 768, 3072, 12, 30_522, 512
# embeddings = (vocab + positions + 2) * d + 2 * d   # words, positions, 2 segments; LayerNorm
# pooler = d * d + d
# total = embeddings + layers * encoder_layer_parameters(d, ff) + pooler
# assert encoder_layer_parameters(d, ff) == 12 * d * d + 13 * d
# print(f"{total:,} parameters ({total / 1e6:.1f}M; the paper rounds to 110M)")
# ```
#
# One layer is $12d^2 + 13d$ (attention $4d^2 + 4d$, feed-forward $8d^2 + 5d$ with
# $d_{ff} = 4d$, two LayerNorms $4d$): 7.1M, so the 12 layers hold 85M. The embeddings add
# 23.8M, 98% of them the word table, and the pooler 0.6M: 109.5M in all, the "110M" of
# Devlin et al.
# </details>

# %% [markdown] slideshow={"slide_type": "slide"}
# ## References
#
# - A. Vaswani, N. Shazeer, N. Parmar, J. Uszkoreit, L. Jones, A. N. Gomez, Ł. Kaiser,
#   I. Polosukhin (2017). *Attention is all you need*. NeurIPS.
# - J. L. Ba, J. R. Kiros, G. E. Hinton (2016). *Layer normalization*. arXiv:1607.06450.
# - R. Xiong, Y. Yang, D. He, K. Zheng, S. Zheng, C. Xing, H. Zhang, Y. Lan, L. Wang, T.-Y. Liu
#   (2020). *On layer normalization in the transformer architecture*. ICML.
# - K. He, X. Zhang, S. Ren, J. Sun (2016). *Deep residual learning for image recognition*.
#   CVPR.
# - A. Radford, J. Wu, R. Child, D. Luan, D. Amodei, I. Sutskever (2019). *Language models
#   are unsupervised multitask learners* (GPT-2). OpenAI report.
# - O. Press, L. Wolf (2017). *Using the output embedding to improve language models*.
#   EACL.
# - A. Fan, M. Lewis, Y. Dauphin (2018). *Hierarchical neural story generation* (top-k
#   sampling). ACL.
# - R. Kneser, H. Ney (1995). *Improved backing-off for m-gram language modeling*. ICASSP.
# - J. Devlin, M.-W. Chang, K. Lee, K. Toutanova (2019). *BERT: pre-training of deep
#   bidirectional transformers for language understanding*. NAACL.

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
# By the end of this chapter you will be able to
#
# - show that attention without positions is blind to word order, and build **sinusoidal**
#   and **learned** positional encodings (and explain why sinusoids encode relative offsets);
# - write **LayerNorm**, the **residual** connection, and the **post-norm** and **pre-norm**
#   arrangements as equations and as code;
# - assemble an **encoder layer** that loads `torch.nn.TransformerEncoderLayer`'s weights and
#   gives the same outputs, and count its parameters against the paper's base model;
# - turn it into a **causal transformer LM**, train it against the RNN LM of chapter 02 on
#   the same data with the same number of steps, and look at its attention heads.

# %% slideshow={"slide_type": "-"}
import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F

import lmcourse
from lmcourse import show
from lmcourse.data import Vocab, lm_batches, load_corpus
from lmcourse.models.attention import MultiHeadAttention, causal_mask
from lmcourse.models.compress import count_params
from lmcourse.models.rnn import RNNLM
from lmcourse.models.transformer import (
    LearnedPositions,
    TransformerEncoderLayer,
    TransformerLM,
    encoder_layer_parameters,
    sinusoidal_positions,
)
from lmcourse.train import fit_lm
from lmcourse.viz import attention_widget

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

# %% [markdown] slideshow={"slide_type": "notes"}
# Quick demo to run live: permute the input positions and show that the outputs are
# permuted the same way. Ask what a model that cannot see order would get wrong in "dog
# bites man" vs "man bites dog".

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
# is chapter 06's `MultiHeadAttention`, then `linear1`, `linear2`, `norm1`, `norm2`), so
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
# ## Counting parameters: our layer vs the formula vs the paper
#
# Per encoder layer: attention has four $d\times d$ projections with biases ($4d^2 + 4d$),
# the FFN $2\,d\,d_{ff} + d_{ff} + d$, the two LayerNorms $4d$. For the paper's **base
# model** ($d = 512$, 8 heads, $d_{ff} = 2048$, 6 encoder and 6 decoder layers) we count our
# module, the formula, and then the whole encoder–decoder. A decoder layer adds
# cross-attention and a third LayerNorm (counted here with PyTorch's
# `nn.TransformerDecoderLayer`); the embedding matrix is shared by encoder, decoder and
# output layer over the paper's shared vocabulary of about 37,000 BPE tokens (English–German).

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
base = TransformerEncoderLayer(512, 8, 2048)
print(f"one encoder layer: our module {count_params(base):,}, formula "
      f"{encoder_layer_parameters(512, 2048):,}")
assert count_params(base) == encoder_layer_parameters(512, 2048)
decoder_layer = count_params(torch.nn.TransformerDecoderLayer(512, 8, 2048))
embeddings = 37_000 * 512
total = 6 * count_params(base) + 6 * decoder_layer + embeddings
print(f"one decoder layer (torch): {decoder_layer:,}")
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
# ## Transformer vs RNN on the chapter 02 data
#
# Same data as chapter 02: the lowercased Lee corpus, character by character, the last 10%
# held out. Same budget for both models: **the same number of optimizer steps** on exactly
# the same minibatches ($B = 32$ rows of $T = 32$ characters, sequential partitioning, a
# fresh random offset per epoch), Adam, gradient clipping at 1. The RNN is chapter 02's
# (128 hidden units, one-hot inputs) and carries its hidden state from minibatch to
# minibatch; the transformer has no state and sees only its 32-character window. We report
# wall time too: equal steps are not equal seconds.

# %% [markdown] slideshow={"slide_type": "notes"}
# This cell trains two models (run the notebook before class on a laptop). Stress that
# equal steps are not equal seconds; exercise 5 asks for the equal-wall-time comparison.

# %% slideshow={"slide_type": "-"}
text = "\n".join(load_corpus("lee")).lower()
vocab = Vocab(list(text))
ids = vocab.encode(list(text))
split = int(0.9 * len(ids))
train_ids, val_ids = ids[:split], ids[split:]
B, T = 32, 32
epochs, per_epoch = lmcourse.budget(cpu=4, gpu=20), 150


def batches(epoch: int):
    """Epoch ``epoch``'s minibatches: identical for both models."""
    return lm_batches(train_ids, B, T, generator=torch.Generator().manual_seed(epoch))[:per_epoch]


val_batches = lm_batches(val_ids, 32, T, generator=torch.Generator().manual_seed(0))
lmcourse.seed_everything(0)
rnn = RNNLM(len(vocab), 128).to(dev)
rnn_hist = fit_lm(rnn, batches, epochs=epochs, lr=5e-3, clip=1.0, carry_state=True,
                  val_batches=val_batches, desc="RNN")
lmcourse.seed_everything(0)
tlm = TransformerLM(len(vocab), d_model=64, nhead=4, num_layers=2, dim_feedforward=128,
                    max_len=T).to(dev)
tf_hist = fit_lm(tlm, batches, epochs=epochs, lr=3e-3, clip=1.0, carry_state=False,
                 val_batches=val_batches, desc="transformer")
print(f"{epochs * per_epoch} optimizer steps each on the same minibatches")
for name, model, h in (("RNN (ch. 02)", rnn, rnn_hist), ("transformer", tlm, tf_hist)):
    print(f"{name:>13}: {count_params(model):>7,} parameters, validation perplexity "
          f"{h.val_perplexity[-1]:.2f}, wall time {h.seconds:.1f} s")

# %% slideshow={"slide_type": "-"}
fig, ax = plt.subplots(figsize=(7, 3.5))
steps = np.arange(1, epochs + 1) * per_epoch
for name, h, style, colour in (("RNN", rnn_hist, "o-", "C0"),
                               ("transformer", tf_hist, "s-", "C1")):
    ax.plot(steps, h.val_perplexity, style, color=colour, label=f"{name}, validation")
    ax.plot(steps, h.epoch_perplexity, style, color=colour, alpha=0.35,
            label=f"{name}, training (epoch average)")
ax.set(yscale="log", xlabel="optimizer steps", ylabel="perplexity (log scale)",
       title="Same data, same steps: RNN vs transformer")
ax.legend()
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## What learned positions learn
#
# The same transformer again, on the same minibatches, but with a **learned** table
# $P \in \mathbb{R}^{32\times 64}$ in place of the sinusoids. Nothing tells the table that
# position 7 is next to position 8; if neighbouring rows end up similar, the data taught it.
# We compare the cosine similarity of every pair of positions for the two kinds of encoding
# (for the sinusoids this is the offset curve above, laid out as a matrix).

# %% slideshow={"slide_type": "-"}
lmcourse.seed_everything(0)
tlm_learned = TransformerLM(len(vocab), d_model=64, nhead=4, num_layers=2,
                            dim_feedforward=128, max_len=T, positions="learned").to(dev)
learned_hist = fit_lm(tlm_learned, batches, epochs=epochs, lr=3e-3, clip=1.0,
                      carry_state=False, val_batches=val_batches, desc="learned positions")
print(f"validation perplexity: sinusoidal {tf_hist.val_perplexity[-1]:.2f}, "
      f"learned {learned_hist.val_perplexity[-1]:.2f}")


def position_similarity(table: torch.Tensor) -> np.ndarray:
    """Cosine similarity of every pair of rows of a ``T x d`` position table."""
    unit = torch.nn.functional.normalize(table.detach().double().cpu(), dim=1)
    return (unit @ unit.T).numpy()


def neighbours_and_far(sim: np.ndarray) -> tuple[float, float]:
    """Mean cosine of adjacent positions, and of positions 8 or more apart."""
    n = len(sim)
    return (np.mean([sim[t, t + 1] for t in range(n - 1)]),
            np.mean([sim[t, u] for t in range(n) for u in range(n) if abs(t - u) >= 8]))


torch.manual_seed(0)
at_init = position_similarity(LearnedPositions(T, 64)(T))
learned_sim = position_similarity(tlm_learned.positions(T))
sinus_sim = position_similarity(sinusoidal_positions(T, 64))
for name, sim in (("learned, at initialisation", at_init), ("learned, trained", learned_sim),
                  ("sinusoidal", sinus_sim)):
    near, far = neighbours_and_far(sim)
    print(f"{name:>26}: mean cosine of neighbours {near:5.2f}, of positions 8+ apart {far:5.2f}")

fig, axes = plt.subplots(1, 2, figsize=(9, 4))
for ax, sim, title in ((axes[0], sinus_sim, "sinusoidal (fixed)"),
                       (axes[1], learned_sim, "learned (after training)")):
    im = ax.imshow(sim, cmap="RdBu", vmin=-1, vmax=1)
    ax.set(xlabel="position", ylabel="position", title=title)
fig.colorbar(im, ax=axes, fraction=0.046, label="cosine similarity")
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# The learned table starts as random noise: its rows are nearly orthogonal (the first line
# printed). Gradient descent alone arranged it, and it arranged it by *order*: neighbouring
# positions became similar and distant ones dissimilar, with no formula telling it that
# position 7 comes before position 8. It did not invent clocks, though. In this run the
# trained table is dominated by one smooth direction that runs from the start of the window
# to its end (the two large blocks of opposite sign), which is what a causal model with a
# 32-character window most needs to know: how much context it has. The sinusoids carry every
# offset at many frequencies. Here the learned version ends a little behind after the same
# steps (perplexities printed above: it has 2,048 more parameters to fit from scratch);
# Vaswani et al. found the two nearly identical at full scale. And the learned table cannot
# say anything about position 33, which it has never seen.

# %% [markdown] slideshow={"slide_type": "-"}
# With the same number of steps on the same minibatches, the small transformer reaches a
# lower validation perplexity than the RNN, although it sees only 32 characters of context
# and the RNN carries its state across windows. The price is per-step cost: on a CPU
# its steps are slower (printed above), and attention's cost grows with $T^2$.
# The transformer's advantage is that all positions of a window are processed in parallel
# and any two characters in it are one attention step apart, where the RNN must pass
# information through every intermediate state. On a GPU that parallelism is what makes
# transformers fast to train.
#
# ## What the heads of the trained model look at
#
# Row $i$ of a head's picture is the distribution of character $i$ over the characters it
# may see (lower-triangular by the causal mask). The widget shows all heads of a layer;
# choose a layer and a head to see one large with its labels.

# %% slideshow={"slide_type": "-"}
sentence = "the prime minister said"
x_sentence = torch.tensor([vocab.encode(list(sentence))], device=dev)
tlm.eval()
attentions = tlm.attentions(x_sentence)
attention_widget(attentions, list(sentence), layer=0)

# %% [markdown] slideshow={"slide_type": "-"}
# Typically a first-layer head attends mostly to the previous character or two (the local
# context a character model needs most), while others spread over the current word; the
# second layer can combine what the first gathered. These pictures say where a head looks,
# not how much what it finds changes the prediction.
#
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
# - With a causal mask the layer stack is a **language model**; on the chapter 02 data it beat
#   the RNN for the same number of steps, at a higher cost per step on a CPU.
#
# ## Exercises
#
# 1. *(warm-up)* Show that for the sinusoidal encodings $\mathrm{PE}[pos+k] = M_k\,
#    \mathrm{PE}[pos]$ for a block-diagonal matrix $M_k$ of $2\times2$ rotations. Build $M_5$
#    for $d = 64$ and check it numerically.
# 2. *(short)* Count the parameters of BERT-base ($d = 768$, 12 heads, $d_{ff} = 3072$, 12
#    layers, 30,522-token vocabulary, 512 learned positions) with `encoder_layer_parameters`
#    and compare with the 110M reported by Devlin et al. (2019).
# 3. *(medium)* Train the tiny transformer with no positional encoding at all (replace `pe`
#    by zeros). How much does validation perplexity suffer without positions, and why is it
#    still better than a unigram model?
# 4. *(medium)* Compare post-norm and pre-norm for a 6-layer tiny LM: train both with
#    learning rates 1e-3, 3e-3 and 1e-2 and plot the final perplexities. Which one tolerates
#    the larger learning rate?
# 5. *(harder)* Repeat the RNN vs transformer comparison with the **same wall time** instead
#    of the same number of steps, and with $T = 64$ and $T = 128$. Where does the
#    transformer's $T^2$ cost start to matter on a CPU?
#
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
# - J. Devlin, M.-W. Chang, K. Lee, K. Toutanova (2019). *BERT: pre-training of deep
#   bidirectional transformers for language understanding*. NAACL.

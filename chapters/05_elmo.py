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
# # 05 · ELMo: contextual word vectors from a bidirectional language model
#
# Chapter 04 gave every word **one** vector. But "bank" in *the West Bank* and "bank" in
# *the Reserve Bank cut interest rates* are different words that happen to share a
# spelling, and a static embedding has to average them. ELMo (Peters et al., 2018, "Deep
# contextualized word representations") gives each **token** its own vector, computed from
# the whole sentence by a language model that reads it in both directions.
#
# By the end of this chapter you will be able to
#
# - build ELMo's **character-CNN token encoder** (convolutions of several widths, max-pooling
#   over time, **highway** layers) and say why it has no out-of-vocabulary words;
# - write the **biLM**: a forward and a backward LSTM language model sharing the token
#   encoder and the softmax, trained on their **joint log-likelihood**, and check that each
#   direction really sees only its own side;
# - train a tiny biLM on real news text and read off its **2L+1 representations**;
# - mix them with a **ScalarMix** $\gamma\sum_j \mathrm{softmax}(s)_j h_{k,j}$;
# - measure that **contextual** vectors separate word senses that the **static** vector
#   cannot: cosine similarities, nearest neighbours, 1-nearest-neighbour word-sense
#   disambiguation per layer, and a per-layer **linear probe**;
# - compare our model's size with the original ELMo (93.6M parameters), counted with our
#   own module.

# %% slideshow={"slide_type": "-"}
from collections import Counter

import matplotlib.pyplot as plt
import numpy as np
import torch

import lmcourse
from lmcourse import show
from lmcourse.data import Vocab, load_corpus, tokenize
from lmcourse.models.compress import count_params
from lmcourse.models.elmo import (
    BiLM,
    CharCNN,
    Highway,
    ScalarMix,
    bilm_losses,
    cosine,
    encode_chars,
    fit_bilm,
    linear_probe,
    nearest_neighbour_accuracy,
)

generator = lmcourse.seed_everything(0)
if not lmcourse.on_gpu():
    torch.set_num_threads(1)  # small matrices: one CPU thread beats two that wait for each other

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Three ideas in one model
#
# ELMo's representations are
#
# - **contextual**: the vector of a token is a function of the entire sentence it sits in;
# - **deep**: it combines *all* layers of a pre-trained network, with weights learned per
#   task, instead of only the top layer;
# - **character based**: words are read letter by letter, so a misspelling or an unseen word
#   still gets a sensible vector from its morphology.
#
# The network has three parts, built bottom-up in this chapter: a token encoder that turns
# the characters of one word into a vector $x_k$; two stacks of LSTMs (one per reading
# direction) on top; and a softmax shared by both directions that predicts words.

# %% [markdown] slideshow={"slide_type": "notes"}
# Recap before starting: chapter 03 gave us (Bi)LSTMs, chapter 04 one vector per word
# *type*. ELMo's point fits in one question: how many vectors should "bank" have?

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The character-CNN token encoder
#
# A word is written as a sequence of byte ids, framed by a begin-of-word and an end-of-word
# symbol and padded to a fixed length $C$. Each character id is looked up in a small table
# of character embeddings ($d_c$ numbers each), giving a $d_c \times C$ matrix $E$.
#
# A filter of width $w$ is a $d_c \times w$ weight matrix $K$ that slides along the word:
# at each position $t$ it computes $f_t = \tanh(\langle K, E_{:,t:t+w}\rangle + b)$, a
# detector for one character $w$-gram pattern ("ing", "un", a digit run...). ELMo keeps only
# the strongest response along the word, **max-pooling over time**:
#
# $$y^{(K)} = \max_t f_t .$$
#
# With many filters of several widths (the paper: 2048 filters of widths 1 to 7) the word
# becomes the concatenation of all these maxima, whatever its length. A **highway** layer
# then mixes the features, and a linear layer projects them to the model width $d$.
#
# One deviation from the paper, ours: a **LayerNorm** after the projection rescales each
# $x_k$ to mean 0 and variance 1 (then a learned scale and shift). Without it, in our runs
# the token vectors grew to magnitudes around 10 to 50 during the first epoch, the LSTM
# gates saturated, and the tiny model stalled at the perplexity of a unigram model.

# %% slideshow={"slide_type": "-"}
show(encode_chars)

# %% slideshow={"slide_type": "-"}
show(CharCNN)

# %% [markdown] slideshow={"slide_type": "-"}
# Two behaviours to check: the output has one vector per token whatever the word's length,
# and each pooled feature is the maximum of that filter's responses over the positions
# (computed here a second way, by cutting the word into windows by hand).

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
torch.manual_seed(0)
enc = CharCNN(output_dim=8, char_dim=4, filters=((1, 3), (2, 5)), num_highway=1)
chars = encode_chars(["a", "river", "bank", "banking"], max_chars=10)
print("char ids of 'bank':", chars[2].tolist())
print("encoder output shape:", tuple(enc(chars).shape), "(4 words -> 4 vectors of width 8)")
e = enc.embed(chars[2])  # C x d_c
windows = e.unfold(0, 2, 1)  # positions x d_c x width
responses = torch.tanh(torch.einsum("pdw,ndw->pn", windows, enc.convs[1].weight)
                       + enc.convs[1].bias)
d = (enc.pooled(chars[2:3])[0, 3:] - responses.amax(0)).abs().max().item()
print(f"max |pooled - max over windows| = {d:.1e}  (tolerance 1e-6)")
assert d < 1e-6

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Highway layers
#
# A highway layer (Srivastava, Greff and Schmidhuber, 2015) lets each feature choose between
# being **transformed** and being **carried** through unchanged. With a transform gate
# $t = \sigma(W_T x + b_T)$,
#
# $$y = t \odot g(W_H x + b_H) + (1 - t) \odot x .$$
#
# It is the same idea as the LSTM's memory cell in chapter 03: an additive path with a
# gate. When $t \to 0$ the layer is the identity, and gradients pass through it untouched;
# when $t \to 1$ it is an ordinary dense layer. Initialising $b_T$ negative (we use $-1$)
# makes a fresh network start near the identity. ELMo uses $g = \mathrm{relu}$.

# %% slideshow={"slide_type": "-"}
show(Highway)

# %% [markdown] slideshow={"slide_type": "-"}
# The two limits, measured: a gate bias of $-50$ closes the gate and the layer returns its
# input; $+50$ opens it fully and the layer is $\mathrm{relu}(W_H x + b_H)$.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
torch.manual_seed(0)
x = torch.randn(6, 10)
carry, transform = Highway(10, gate_bias=-50.0), Highway(10, gate_bias=50.0)
d_carry = (carry(x) - x).abs().max().item()
d_transform = (transform(x) - torch.relu(transform.transform(x))).abs().max().item()
print(f"gate bias -50: max |y - x|               = {d_carry:.1e}  (tolerance 1e-6)")
print(f"gate bias +50: max |y - relu(W_H x + b)| = {d_transform:.1e}  (tolerance 1e-6)")
assert d_carry < 1e-6 and d_transform < 1e-6

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The bidirectional language model
#
# Given the tokens $t_1, \dots, t_N$ of a sentence, a **forward** LM factorises the
# probability left to right, and a **backward** LM right to left:
#
# $$p(t_1,\dots,t_N) = \prod_{k=1}^N p(t_k \mid t_1,\dots,t_{k-1})
#   = \prod_{k=1}^N p(t_k \mid t_{k+1},\dots,t_N).$$
#
# ELMo trains both at once. They share the token encoder parameters $\Theta_x$ and the
# softmax $\Theta_s$, and each has its own LSTMs $\overrightarrow{\Theta}_{LSTM}$,
# $\overleftarrow{\Theta}_{LSTM}$. Training maximises the **joint log-likelihood**
#
# $$\sum_{k=1}^N \Big(\log p(t_k \mid t_1,\dots,t_{k-1}; \Theta_x,
#   \overrightarrow{\Theta}_{LSTM}, \Theta_s) + \log p(t_k \mid t_{k+1},\dots,t_N; \Theta_x,
#   \overleftarrow{\Theta}_{LSTM}, \Theta_s)\Big).$$
#
# In code, the forward LSTM's output at position $k$ scores the next token $t_{k+1}$; the
# backward LSTM is the same recipe run on the reversed sequence, and its output at $k$
# scores $t_{k-1}$. Our loss is the sum of the two mean cross-entropies. Each direction has
# $L = 2$ layers, with a residual connection above the first, as in ELMo.
#
# We use `torch.nn.LSTM` here: chapter 03 showed that our `lmcourse.models.gated.LSTM`
# computes exactly the same function, but its Python loop over time steps is too slow to
# train a biLM within this notebook's budget.

# %% slideshow={"slide_type": "-"}
show(BiLM)

# %% slideshow={"slide_type": "-"}
show(bilm_losses)

# %% [markdown] slideshow={"slide_type": "-"}
# The one thing a biLM must never do is **peek**. If the forward LM could see $t_{k+1}$
# when predicting it, the loss would go to zero and nothing would be learned. We test it
# by changing token 4 of a 9-token sentence and measuring how much each direction's
# states change at every position: the forward states before position 4 and the backward
# states after it must not move at all.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
torch.manual_seed(0)
probe_lm = BiLM(vocab_size=50, dim=16, hidden=16).eval()
words = "the reserve bank cut interest rates again on tuesday".split()
a = encode_chars(words)[None]
b = encode_chars(words[:4] + ["raised"] + words[5:])[None]
with torch.no_grad():
    _, fa, ba = probe_lm.directional_states(a)
    _, fb, bb = probe_lm.directional_states(b)
change_f = (fa[-1] - fb[-1]).abs().amax(-1)[0]
change_b = (ba[-1] - bb[-1]).abs().amax(-1)[0]
print("position         ", " ".join(f"{k:>6d}" for k in range(len(words))))
print("forward  change  ", " ".join(f"{v:6.3f}" for v in change_f.tolist()))
print("backward change  ", " ".join(f"{v:6.3f}" for v in change_b.tolist()))
print(f"forward before 4: max change {change_f[:4].max().item():.1e}; "
      f"backward after 4: {change_b[5:].max().item():.1e}  (must be exactly 0)")
assert change_f[:4].max() == 0 and change_b[5:].max() == 0

# %% [markdown] slideshow={"slide_type": "-"}
# **Check the joint loss** against the equation, term by term: for every position $k$ read
# $\log p(t_k \mid t_1..t_{k-1})$ off the forward LM's log-softmax at $k-1$ and
# $\log p(t_k \mid t_{k+1}..t_N)$ off the backward LM's at $k+1$, sum over $k$ in a plain
# loop, and compare with `bilm_losses` (which averages each direction's $N-1$ terms). An
# untrained model should also be close to guessing: each mean cross-entropy near
# $\log V$.

# %% slideshow={"slide_type": "-"}
word_ids = torch.randint(0, 50, (1, len(words)), generator=torch.Generator().manual_seed(1))
with torch.no_grad():
    loss_f, loss_b = bilm_losses(probe_lm, a, word_ids)
    logp_f, logp_b = (logits.log_softmax(-1)[0] for logits in probe_lm(a))
    N, t = len(words), word_ids[0]
    forward_ll = sum(logp_f[k - 1, t[k]] for k in range(1, N))   # log p(t_k | t_<k)
    backward_ll = sum(logp_b[k + 1, t[k]] for k in range(N - 1))  # log p(t_k | t_>k)
diff = max(abs(loss_f.item() + forward_ll.item() / (N - 1)),
           abs(loss_b.item() + backward_ll.item() / (N - 1)))
print(f"joint log-likelihood by the loop: {(forward_ll + backward_ll).item():.4f}; "
      f"-(N-1)(loss_f + loss_b) = {-(N - 1) * (loss_f + loss_b).item():.4f}; "
      f"max difference of the means {diff:.1e} (tolerance 1e-5)")
print(f"untrained: loss_f = {loss_f.item():.3f}, loss_b = {loss_b.item():.3f}, "
      f"log V = {np.log(50):.3f}")
assert diff < 1e-5

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Data: words of the Lee news corpus, read as characters
#
# We train on the Lee corpus (300 Australian news stories from 2001, about 60 000 words).
# The input of every token is its characters, so the model can read any word; the
# **output** softmax, though, needs a fixed list of words. We keep the 2000 most frequent
# (plus `<unk>` for the rest as a prediction target), a small version of what ELMo did with
# its 793 471-word softmax. The token stream is cut into windows of 24 words.

# %% slideshow={"slide_type": "-"}
docs = load_corpus("lee")
tokens = [t for doc in docs for t in tokenize(doc)]
vocab = Vocab(tokens)
V = 2000
char_table = encode_chars(vocab.itos, max_chars=16)  # characters of every word type
ids = torch.tensor(vocab.encode(tokens))
T = 24
n = len(ids) // T
windows = ids[: n * T].view(n, T)
targets = torch.where(windows < V, windows, torch.zeros_like(windows))  # rare words -> <unk>
split, B = int(0.9 * n), 32
train_batches = [(char_table[windows[i:i + B]], targets[i:i + B]) for i in range(0, split, B)]
val_batches = [(char_table[windows[i:i + B]], targets[i:i + B]) for i in range(split, n, B)]
covered = float((windows < V).float().mean())
print(f"{len(tokens)} tokens, {len(vocab) - 1} word types; the softmax covers {covered:.1%} "
      f"of tokens; {len(train_batches)} training batches of {B} x {T}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Training a tiny biLM
#
# Our model: 16-dimensional character embeddings, 128 filters of widths 1 to 4, one highway
# layer, LayerNorm, $d = 64$, two LSTM layers per direction with 64 units. The joint loss is
# minimised with Adam and gradient clipping at norm 1 (chapter 02). A few epochs on a CPU
# are enough to see both directions learn; on a GPU `lmcourse.budget` trains longer.

# %% slideshow={"slide_type": "-"}
show(fit_bilm)

# %% slideshow={"slide_type": "-"}
lmcourse.seed_everything(0)
model = BiLM(vocab_size=V, dim=64, hidden=64, num_layers=2).to(lmcourse.device())
print(f"{count_params(model):,} parameters")
epochs = lmcourse.budget(cpu=4, gpu=16)
history = fit_bilm(model, train_batches, epochs, lr=5e-3, val=val_batches)
for key, values in history.items():
    print(f"{key:>9s} perplexity: " + "  ".join(f"{v:7.1f}" for v in values))

# %% slideshow={"slide_type": "-"}
fig, ax = plt.subplots(figsize=(7, 3.5))
ep = np.arange(1, epochs + 1)
for key, style in [("train_fwd", "C0-"), ("train_bwd", "C1-"), ("val_fwd", "C0--"),
                   ("val_bwd", "C1--")]:
    ax.plot(ep, history[key], style, marker="o", label=key.replace("_", " "))
ax.axhline(V, color="gray", lw=0.8, ls=":", label=f"uniform guess ({V})")
ax.set(xlabel="epoch", ylabel="perplexity", yscale="log",
       title="forward and backward LMs learn at the same pace")
ax.legend(fontsize=8)
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# Both directions reach similar perplexities: English is about as predictable backwards as
# forwards. These numbers are far from the original ELMo (39.7 on the 1B Word Benchmark,
# averaged over both directions, Peters et al. 2018) because our model is about 300
# times smaller and read 60 thousand words rather than 800 million, and the `<unk>` class makes
# the task easier than a full vocabulary; compare the trend, not the level.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2L+1 representations
#
# For token $k$ the biLM computes $2L + 1$ vectors: the token vector $x_k$ and, for each
# layer $j$, a forward and a backward state. ELMo groups them into $L+1$ layers of equal
# width by concatenation,
#
# $$h_{k,0} = [x_k; x_k], \qquad h_{k,j} = [\overrightarrow{h}_{k,j};
#   \overleftarrow{h}_{k,j}] \quad (j = 1, \dots, L),$$
#
# so the token layer is duplicated to match the $2d$ width of the LSTM layers.

# %% slideshow={"slide_type": "-"}
show(BiLM.layers)

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
model.eval()
sentence = "the reserve bank cut interest rates".split()
with torch.no_grad():
    reps = model.layers(encode_chars(sentence)[None].to(lmcourse.device())).cpu()
print("layers x batch x tokens x width:", tuple(reps.shape), "(L+1 = 3 layers, 2d = 128)")
halves = (reps[0, ..., :64] - reps[0, ..., 64:]).abs().max().item()
print(f"layer 0: max |first half - second half| = {halves:.1e}  (it is [x; x])")
assert halves == 0

# %% [markdown] slideshow={"slide_type": "slide"}
# ## ScalarMix: one vector per token for a downstream task
#
# A downstream model does not want three vectors per token. ELMo collapses them with
# weights learned **for the task** (the biLM itself stays frozen):
#
# $$\mathrm{ELMo}_k^{task} = \gamma^{task} \sum_{j=0}^{L} s_j^{task} h_{k,j}, \qquad
#   s^{task} = \mathrm{softmax}(w^{task}).$$
#
# The softmax keeps the layer weights positive and summing to one; the scalar $\gamma$ lets
# the task rescale the whole vector. Our `ScalarMix` stores the raw weights as `s` (our
# $w$) and starts them at zero, so an untrained mix is the plain **mean** of the layers.

# %% slideshow={"slide_type": "-"}
show(ScalarMix)

# %% slideshow={"slide_type": "-"}
mix = ScalarMix(3)
with torch.no_grad():
    elmo = mix(reps)
    d_mean = ((elmo - reps.mean(0)).abs().max() / reps.abs().max()).item()
print("weights at initialisation:", [f"{w:.4f}" for w in mix.weights.tolist()],
      f"(sum {mix.weights.sum().item():.4f})")
print(f"max |ScalarMix(h) - mean of layers| / max |h| = {d_mean:.1e}  (tolerance 1e-6, "
      "float32 rounding)")
assert d_mean < 1e-6

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Contextual versus static: one word, two senses
#
# The Lee corpus uses "bank" in two clearly different senses: the **West Bank** (a place,
# in stories on the Israeli-Palestinian conflict) and banks as **financial institutions**
# (the Reserve Bank, the National Australia Bank). "fire" is similar: **gunfire** ("opened
# fire", "cease fire") versus **flames** (the bushfires of December 2001). How often do
# they occur?

# %% [markdown] slideshow={"slide_type": "notes"}
# Ask the class for other ambiguous words from news text ("fire", "charge", "party",
# "court") and, if time allows, rerun the cell with one of them.

# %% slideshow={"slide_type": "-"}
counts = Counter(tokens)
print({w: counts[w] for w in ["bank", "fire", "west", "reserve", "opened", "cease"]})

# %% [markdown] slideshow={"slide_type": "-"}
# Each occurrence is cut out with 10 words of context on each side and run through the
# biLM; we keep the vectors of the centre token at every layer. Layer 0 depends only on the
# spelling, so every occurrence of "bank" must get **exactly the same** vector; layers 1
# and 2 depend on the context.

# %% slideshow={"slide_type": "-"}
def occurrences(word: str, width: int = 10) -> tuple[list[int], torch.Tensor]:
    """Positions of ``word`` in the stream and its (L+1) x n x 2d contextual vectors."""
    pos = [i for i, t in enumerate(tokens) if t == word and width <= i < len(tokens) - width]
    ctx = torch.stack([char_table[ids[i - width:i + width + 1]] for i in pos])
    with torch.no_grad():
        return pos, model.layers(ctx.to(lmcourse.device()))[:, :, width].cpu()


def context(i: int, width: int = 4) -> str:
    return " ".join(tokens[i - width:i]) + " [" + tokens[i] + "] " + " ".join(
        tokens[i + 1:i + width + 1])


bank_pos, bank_vecs = occurrences("bank")
west = [k for k, i in enumerate(bank_pos) if tokens[i - 1] == "west"]
money = [k for k, i in enumerate(bank_pos) if tokens[i - 1] != "west"]
p, q, r = west[0], west[1], money[0]
print("A:", context(bank_pos[p]), "\nB:", context(bank_pos[q]), "\nC:", context(bank_pos[r]))
is_west = torch.tensor([k in west for k in range(len(bank_pos))])
same = (is_west[:, None] == is_west[None, :]) & ~torch.eye(len(bank_pos), dtype=torch.bool)
diff = is_west[:, None] != is_west[None, :]
for j in range(3):
    centred = bank_vecs[j] - bank_vecs[j].mean(0)  # remove what all occurrences share
    v = torch.nn.functional.normalize(centred, dim=1)
    sims = v @ v.T
    spread = centred.norm(dim=1).max().item()
    pairs = (f"same sense {sims[same].mean():+.3f}, different {sims[diff].mean():+.3f}"
             if spread > 1e-4 else f"n/a (largest centred norm {spread:.0e})")
    print(f"layer {j}: cos(A, B) = {cosine(bank_vecs[j, p], bank_vecs[j, q]):.3f}, "
          f"cos(A, C) = {cosine(bank_vecs[j, p], bank_vecs[j, r]):.3f} | centred, mean over "
          f"pairs: {pairs}")
assert cosine(bank_vecs[0, p], bank_vecs[0, r]) > 0.99999

# %% [markdown] slideshow={"slide_type": "-"}
# At layer 0 all three are the same vector (cosine 1): a static embedding cannot tell the
# senses apart. In the LSTM layers the vectors differ, but only slightly: all occurrences
# share a large common component (the word itself, and the average state of the LSTM), so
# raw cosines are close to 1 and a single pair can mislead (compare cos(A, B) with
# cos(A, C)). Subtracting the mean vector of the 48 occurrences removes the shared part; the
# centred cosines, averaged over all pairs, compare same-sense and different-sense pairs
# (at layer 0 the centred vectors are all zero: there is nothing left to compare).
# Nearest neighbours show it more clearly: among **all** occurrences of
# "bank", which are closest to a West Bank token and to a financial one? (The corpus repeats
# a few sentences, so an identical context can appear as a neighbour.)

# %% slideshow={"slide_type": "-"}
def neighbours(vecs: torch.Tensor, query: int, k: int = 3) -> list[int]:
    v = torch.nn.functional.normalize(vecs, dim=1)
    sims = v @ v[query]
    sims[query] = -2
    return sims.topk(k).indices.tolist()


for query in (p, r):
    print("query:", context(bank_pos[query]))
    for n_ in neighbours(bank_vecs[2], query):
        print("    layer-2 neighbour:", context(bank_pos[n_]))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Word-sense disambiguation with a 1-nearest-neighbour classifier
#
# Peters et al. test whether the biLM separates senses with the simplest classifier there
# is: label each token with the sense of its nearest labelled neighbour. We make a small
# sense-labelled set from the corpus with **transparent rules** (a heuristic, not an
# annotator, so a few labels may be wrong):
#
# - **bank**: *place* if the previous word is "west", otherwise *financial*;
# - **fire**: *weapons* if the previous word is one of opened, returned, cease, tank, gun,
#   shell, intense, or the two words before are "exchange of"; occurrences after "under"
#   (figurative, "under fire") are left out; everything else is *flames*.
#
# Accuracy is leave-one-out: each occurrence is classified by its nearest other occurrence
# (cosine similarity), per layer. At layer 0 all vectors of a word are identical, so the
# "nearest" neighbour is an arbitrary tie (the first one in the list): that is the static
# baseline.

# %% slideshow={"slide_type": "-"}
WEAPON_WORDS = {"opened", "returned", "cease", "tank", "gun", "shell", "intense"}
fire_pos, fire_vecs = occurrences("fire")
fire_keep = [k for k, i in enumerate(fire_pos) if tokens[i - 1] != "under"]
fire_labels = torch.tensor([int(tokens[fire_pos[k] - 1] in WEAPON_WORDS
                                or tokens[fire_pos[k] - 2:fire_pos[k]] == ["exchange", "of"])
                            for k in fire_keep])
bank_labels = torch.tensor([int(tokens[i - 1] == "west") for i in bank_pos])
wsd = {"bank": (bank_vecs, bank_labels), "fire": (fire_vecs[:, fire_keep], fire_labels)}
wsd_acc = {}
for word, (vecs, labels) in wsd.items():
    majority = max(labels.float().mean().item(), 1 - labels.float().mean().item())
    wsd_acc[word] = [nearest_neighbour_accuracy(vecs[j], labels) for j in range(3)]
    print(f"{word}: {len(labels)} occurrences, {int(labels.sum())} in sense 1; majority "
          f"{majority:.2f}; 1-NN accuracy layer 0/1/2 = "
          + " / ".join(f"{a:.2f}" for a in wsd_acc[word]))

# %% slideshow={"slide_type": "-"}
fig, ax = plt.subplots(figsize=(7, 3.5))
width = 0.35
for i, word in enumerate(wsd_acc):
    ax.bar(np.arange(3) + (i - 0.5) * width, wsd_acc[word], width, label=f'"{word}"')
ax.set(xticks=range(3), xticklabels=["layer 0 (static)", "layer 1", "layer 2"],
       ylabel="1-NN sense accuracy", ylim=(0, 1.05),
       title="contextual layers separate senses; the static layer cannot")
ax.legend()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# For comparison, Peters et al. (2018, table 5) report 1-NN word-sense disambiguation on
# SemCor/Senseval (about 115 000 labelled tokens, thousands of senses): F1 **67.4** with the
# first biLM layer and **69.0** with the second, versus 65.9 for the most-frequent-sense
# baseline. Our task is far easier (two senses, often told apart by the previous word,
# which the forward LSTM sees), so our high accuracies say little about ELMo's; what
# carries over is the gap between the static layer and the contextual ones.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Mixing layers: try the weights yourself
#
# A task's ScalarMix chooses how much of each layer to use. The figure varies the raw
# weight $s_2$ of the top layer (with $s_0 = s_1 = 0$): on the left the softmax weights it
# gives the three layers, on the right the 1-NN sense accuracy of the mixed vectors for
# both words. With the sliders (in a running notebook) you can set all three raw weights.
# Two things to notice: the scale $\gamma$ cannot change a cosine nearest neighbour, so it
# has no slider; and for a single word, layer 0 is the *same* vector in every occurrence,
# so mixing it in only adds a shared offset, which dilutes the contextual differences but
# never adds sense information.

# %% slideshow={"slide_type": "-"}
import ipywidgets as widgets  # noqa: E402


def mixed_accuracy(s: list[float], word: str) -> tuple[list[float], float]:
    vecs, labels = wsd[word]
    m = ScalarMix(3)
    with torch.no_grad():
        m.s.copy_(torch.tensor(s))
        return m.weights.tolist(), nearest_neighbour_accuracy(m(vecs), labels)


grid = np.linspace(-4, 4, 17)
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.5))
weights = np.array([mixed_accuracy([0.0, 0.0, float(s2)], "bank")[0] for s2 in grid])
ax1.stackplot(grid, weights.T, labels=["layer 0", "layer 1", "layer 2"], alpha=0.8)
ax1.set(xlabel="raw weight $s_2$ ($s_0 = s_1 = 0$)", ylabel="softmax(s)", ylim=(0, 1),
        title="layer weights")
ax1.legend(fontsize=8, loc="upper left")
for i, word in enumerate(wsd):
    acc = [mixed_accuracy([0.0, 0.0, float(s2)], word)[1] for s2 in grid]
    ax2.plot(grid, acc, marker="o", color=f"C{i}", label=f'"{word}" 1-NN')
    ax2.axhline(wsd_acc[word][0], color=f"C{i}", ls=":", label=f'"{word}" static (layer 0)')
ax2.set(xlabel="raw weight $s_2$ ($s_0 = s_1 = 0$)", ylabel="accuracy", ylim=(0.5, 1.0),
        title="sense accuracy of the mix")
ax2.legend(fontsize=7)
plt.tight_layout()
plt.show()


def show_mix(s0=0.0, s1=0.0, s2=0.0):
    for word in wsd:
        w, acc = mixed_accuracy([s0, s1, s2], word)
        print(f'"{word}": softmax weights', " ".join(f"{v:.2f}" for v in w),
              f"| 1-NN accuracy {acc:.2f}")


sliders = {f"s{j}": widgets.FloatSlider(value=0.0, min=-4, max=4, step=0.5) for j in range(3)}
widgets.interactive(show_mix, **sliders)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## A per-layer linear probe: which layer holds what?
#
# Peters et al. found that lower biLM layers are better for syntax (part-of-speech tagging)
# and higher ones for meaning in context (word sense). We can ask a similar question of our
# tiny model with **linear probes**: freeze the biLM, take one layer's vectors, and fit a
# logistic regression to predict a property. Two properties, chosen so that the answer is
# known in advance:
#
# - **is the token a number** (contains a digit)? That is written in the characters, so
#   layer 0 should already know it;
# - **is the previous word "the", "a" or "an"**? That is about the *context*; layer 0 can only
#   guess from the word itself (nouns and adjectives follow articles more often).
#
# 3000 positions, 70% to fit each probe and 30% to test it; the majority-class accuracy is
# printed as the floor.

# %% slideshow={"slide_type": "-"}
gen = torch.Generator().manual_seed(0)
positions = (torch.randperm(len(tokens) - 40, generator=gen)[:3000] + 20).tolist()
ctx = torch.stack([char_table[ids[i - 10:i + 11]] for i in positions])
with torch.no_grad():
    probe_feats = model.layers(ctx.to(lmcourse.device()))[:, :, 10].cpu()  # 3 x 3000 x 128
properties = {
    "is a number": [any(c.isdigit() for c in tokens[i]) for i in positions],
    "follows an article": [tokens[i - 1] in ("the", "a", "an") for i in positions],
}
train_mask = torch.arange(len(positions)) < int(0.7 * len(positions))
probe_acc = {}
for name, values in properties.items():
    y = torch.tensor(values, dtype=torch.long)
    floor = max(y[~train_mask].float().mean().item(), 1 - y[~train_mask].float().mean().item())
    torch.manual_seed(0)
    probe_acc[name] = [linear_probe(probe_feats[j], y, train_mask) for j in range(3)]
    print(f"{name:>18s}: majority {floor:.3f}; probe accuracy layer 0/1/2 = "
          + " / ".join(f"{a:.3f}" for a in probe_acc[name]))

# %% [markdown] slideshow={"slide_type": "-"}
# The intrinsic property is read off layer 0 almost perfectly, and the LSTM layers keep it;
# the contextual property needs the LSTM layers. This is a tiny model and a crude probe
# (3000 examples, two properties we picked because we knew the answer), so it illustrates
# the method rather than reproducing the paper's finding. Peters et al. (2018, table 6)
# report POS-tagging accuracy of linear probes on the Penn Treebank: **97.3** with the first
# biLM layer and **96.8** with the second (versus 88.6 for CoVe's word-level layers).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Numbers beside the paper
#
# The original ELMo: 2048 character-CNN filters (widths 1 to 7: 32, 32, 64, 128, 256, 512,
# 1024), 16-dimensional character embeddings over 262 characters, 2 highway layers,
# projection to 512, and 2 LSTM layers per direction with 4096 cells projected to 512. The
# AllenNLP model card gives **93.6M** parameters (the softmax over 793 471 words is not
# counted: it is dropped after pre-training). We build our `BiLM` at that configuration on
# PyTorch's `meta` device, which creates the parameter shapes without allocating memory,
# and count.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
with torch.device("meta"):
    big = BiLM(vocab_size=1, dim=512, hidden=4096, num_layers=2, char_dim=16, num_chars=262,
               filters=((1, 32), (2, 32), (3, 64), (4, 128), (5, 256), (6, 512), (7, 1024)),
               num_highway=2)
parts = {"char CNN + highway + projection": big.encoder,
         "forward LSTMs": big.forward_lstms, "backward LSTMs": big.backward_lstms}
for name, module in parts.items():
    print(f"{name:>32s}: {count_params(module) / 1e6:6.2f}M")
total = sum(count_params(m) for m in parts.values())
ours = sum(p.numel() for n_, p in model.named_parameters() if not n_.startswith("softmax"))
print(f"{'ours at the paper configuration':>32s}: {total / 1e6:6.2f}M   (paper: 93.6M)")
print(f"{'our tiny biLM (same count)':>32s}: {ours / 1e6:6.2f}M")

# %% [markdown] slideshow={"slide_type": "-"}
# The small difference comes from PyTorch's LSTM having two bias vectors per gate block
# ($b_{ih}$ and $b_{hh}$, chapter 03) where the original TensorFlow code has one. Most of
# the 93.6M sit in the LSTMs (about 19M per layer and direction) and the two
# $2048 \times 2048$ highway layers (about 17M).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - ELMo reads each word through a **character CNN**: convolutions of several widths,
#   max-pooled over the word, then **highway** layers $y = t\odot g(W_H x + b_H) +
#   (1-t)\odot x$ that can carry features through unchanged. No word is out of vocabulary.
# - A **biLM** is a forward and a backward LSTM language model sharing the token encoder and
#   the softmax, trained on the sum of their log-likelihoods. Each direction sees only its
#   own side of the sentence (measured: exactly zero change on the wrong side).
# - Each token gets $2L+1$ vectors, grouped as $L+1$ layers $h_{k,0} = [x_k; x_k]$,
#   $h_{k,j} = [\overrightarrow{h}_{k,j}; \overleftarrow{h}_{k,j}]$, which a task mixes with
#   $\gamma\sum_j \mathrm{softmax}(s)_j h_{k,j}$ (the mean at initialisation).
# - Layer 0 is static (cosine exactly 1 between senses); the LSTM layers separate word
#   senses, as 1-nearest-neighbour sense classification and linear probes show even for a
#   model trained for seconds.
# - Chapter 06 replaces the recurrence by attention, and BERT (chapter 09) makes every
#   layer see both sides at once instead of concatenating two one-sided LMs.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises
#
# 1. *(warm-up)* Change `encode_chars` to `max_chars=8` and find three frequent Lee words
#    that become indistinguishable to the token encoder. Why does ELMo use 50 characters?
# 2. *(warm-up)* Set the highway gate bias to $+3$ instead of $-1$ and retrain. What
#    happens to the first epoch's perplexity, and why?
# 3. *(core)* Encode a misspelled or unseen word ("bankk", "firefighting") with the trained
#    token encoder and list its nearest words in the vocabulary by layer-0 cosine. What did
#    the character CNN pick up?
# 4. *(core)* Train a `ScalarMix` (its $s$ and $\gamma$ only, biLM frozen) with a logistic
#    regression on top for the "follows an article" property. Which layer gets the largest
#    weight?
# 5. *(stretch)* Replace the sense labels' rule for "fire" by your own hand labels of 40
#    occurrences and recompute the 1-NN accuracies. How many rule labels did you change?
# 6. *(stretch)* Remove the residual connection between the LSTM layers, retrain with the
#    same budget, and compare the perplexities and the layer-2 WSD accuracy.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## References
#
# - M. E. Peters, M. Neumann, M. Iyyer, M. Gardner, C. Clark, K. Lee, L. Zettlemoyer.
#   *Deep contextualized word representations.* NAACL 2018.
# - Y. Kim, Y. Jernite, D. Sontag, A. M. Rush. *Character-aware neural language models.*
#   AAAI 2016.
# - R. K. Srivastava, K. Greff, J. Schmidhuber. *Highway networks.* ICML Deep Learning
#   Workshop 2015 (also *Training very deep networks*, NeurIPS 2015).
# - R. Jozefowicz, O. Vinyals, M. Schuster, N. Shazeer, Y. Wu. *Exploring the limits of
#   language modeling.* 2016.
# - M. Gardner et al. *AllenNLP: a deep semantic natural language processing platform.*
#   2018 (the pre-trained ELMo models and their parameter counts).

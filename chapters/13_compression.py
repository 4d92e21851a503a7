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
# # 13 · Compression: smaller, faster, and what it costs
#
# Pre-trained language models grew from ELMo's 94 million parameters to hundreds of
# billions in three years. Distillation (chapter 12) trains a smaller model to imitate a
# large one. This chapter takes the other road: keep the trained model and make *it*
# cheaper. Gupta and Agrawal's survey (2020) sorts the methods into six families: pruning,
# quantization, knowledge distillation, parameter sharing, tensor decomposition, and
# sub-quadratic transformers (architectures whose attention costs less than $T^2$). The
# project proposal this course's syllabus draws on picks four of them as "paradigms" for a
# trained model (pruning, quantization, parameter sharing, tensor decomposition), and this
# chapter runs one or two of each on the same model and the same task (distillation has
# chapter 12; sub-quadratic attention changes the architecture, so it needs pre-training
# from scratch):
#
# - **pruning**: remove weights (unstructured, by magnitude) or whole attention heads (by
#   importance);
# - **quantization**: store weights in 8 bits instead of 32;
# - **parameter sharing**: one set of weights used in several places (ALBERT, chapter 10);
# - **tensor decomposition**: replace a weight matrix by a product of two thin ones.
#
# The model is lab 06's: MiniLM fine-tuned to flag spoiler sentences. Every method is
# measured on this machine in the same run: parameters, bytes, latency and ROC-AUC on the
# same held-out sentences.
#
# By the end of this chapter you will be able to
#
# - prune a model by weight magnitude and explain, with a measurement, why 90% zeros in a
#   dense matrix do not make it any faster;
# - score attention heads by Michel et al.'s gradient importance and remove the least
#   important ones;
# - quantize a model's Linear layers to int8 and account for where its bytes go;
# - factorise the feed-forward matrices by truncated SVD and choose a rank;
# - read a size / latency / quality table and its Pareto front, and say which method to
#   reach for.

# %% slideshow={"slide_type": "-"}
import dataclasses
import time

import matplotlib.pyplot as plt
import torch
from IPython.display import Markdown, display

import lmcourse
from lmcourse import finetune, show
from lmcourse.course.claims import bootstrap_verdict
from lmcourse.course.teacher import (
    distillation_pool,
    half_depth_student,
    spoiler_data,
    spoiler_teacher,
)
from lmcourse.data.goodreads import distinct_sentences
from lmcourse.metrics import bootstrap_auc_difference, roc_auc
from lmcourse.models.baselines import bag_of_words_baseline
from lmcourse.models.bert import BertModel
from lmcourse.models.compress import (
    count_params,
    factorize_feed_forward,
    head_importance,
    latency_seconds,
    linear_weight_bytes,
    low_rank_linear,
    magnitude_prune,
    mask_heads,
    quantize_int8,
    serialized_bytes,
    weight_sparsity,
)
from lmcourse.models.distill import combined_loss, train_student

notebook_start = time.perf_counter()
dev = lmcourse.device()
print(f"device: {dev}; torch threads: {torch.get_num_threads()}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The model, the task, the yardsticks
#
# `spoiler_teacher` is lab 06's recipe in one call: MiniLM (6 layers, width 384, 12 heads)
# with a linear classifier on `[CLS]`, fine-tuned for a few hundred steps on balanced
# batches of training sentences. It is trained once and cached (chapter 12 and lab 07 use
# the same model). We score every variant by **ROC-AUC** on held-out test sentences: every
# distinct sentence of the test split, once each (2,300 of them, 105 spoilers; a template
# sentence that occurs in many reviews counts once, with the label most of its tags give).
# Differences between compressed models are often a few thousandths, so each row of the
# final table also gets a **paired bootstrap interval** against the uncompressed model:
# resample the test sentences with replacement, score both models on the same resample,
# and read the 2.5th and 97.5th percentiles of the difference over 500 resamples. The
# strongest simple baseline, a bag of words (lab 03), is scored on the same sentences.
# Sweeps (sparsity, heads removed, rank) draw their curves on a smaller fixed sample, every
# test spoiler and 300 other sentences, to stay within a CPU minute; each model that makes
# it into the final table is scored again on all 2,300. (Removing heads, like magnitude
# pruning, only masks weights; its sweep is its result.)
#
# **Latency** is the median time of a forward pass over one batch of 64 test sentences
# padded to 32 pieces, always on the CPU (PyTorch's int8 kernels are CPU kernels), with
# the same threads for every model.

# %% slideshow={"slide_type": "-"}
data = spoiler_data()
teacher = spoiler_teacher(data).cpu().eval()

eval_texts, eval_labels = distinct_sentences(data.test)
latency_ids, latency_mask = finetune.encode(data.tokenizer, eval_texts[:64], data.max_len,
                                            pad_to_max=True)
scores_of = {}  # model -> its P(spoiler) for each evaluation sentence
sweep_rows = data.evaluation_sample(others=300, part=[(t, y, "") for t, y in
                                                      zip(eval_texts, eval_labels, strict=True)])


def auc_of(model) -> float:
    """ROC-AUC on all the evaluation sentences (the scores are kept for the intervals)."""
    scores_of[model] = finetune.predict_texts(model, data.tokenizer, eval_texts, data.max_len)
    return roc_auc(eval_labels, scores_of[model])


def sweep_auc(model) -> float:
    """ROC-AUC on the sweep sample: every spoiler and 300 other evaluation sentences."""
    return data.roc_auc(model, *sweep_rows)


def latency_of(model) -> float:
    model = model.cpu().eval()
    return latency_seconds(lambda: model(latency_ids, latency_mask), repeats=5)


bag_of_words = bag_of_words_baseline(data.train)
bow_scores = bag_of_words(eval_texts)
bow_auc = roc_auc(eval_labels, bow_scores)
teacher_auc, teacher_latency = auc_of(teacher), latency_of(teacher)
teacher_sweep = sweep_auc(teacher)
print(f"evaluation: {len(eval_texts):,} distinct test sentences ({sum(eval_labels)} spoilers); "
      f"sweep sample {len(sweep_rows[0]):,}")
print(f"MiniLM fine-tuned (teacher): ROC-AUC {teacher_auc:.3f}, {count_params(teacher):,} "
      f"parameters, {teacher_latency * 1e3:.1f} ms per batch of 64")
print(f"bag of words (baseline):     ROC-AUC {bow_auc:.3f}")
print(f"teacher minus bag of words: {teacher_auc - bow_auc:+.3f}")

# %% [markdown] slideshow={"slide_type": "-"}
# Keep the last line in mind. The review sample is written from templates, and with every
# training sentence labelled a bag of words ranks its test sentences as well as the
# fine-tuned teacher (chapter 09's learning curve shows why: pre-training pays when labels
# are few, and this teacher had them all). So the question for every compressed model below
# is not only how much ROC-AUC it loses, but whether it stays level with the bag of words:
# a compressed transformer that falls below it is worse than a model with one weight per
# word, on this task.

# %% [markdown] slideshow={"slide_type": "subslide"}
# Where are the parameters? A compression method can only shrink what it touches, so we
# split MiniLM's count into the embedding tables, the attention matrices, the feed-forward
# matrices and the rest. The Linear layers (attention and feed-forward) are what pruning,
# quantization and low rank act on here.

# %% slideshow={"slide_type": "-"}
def parameter_groups(model) -> dict[str, int]:
    groups = {"embeddings": 0, "attention": 0, "feed-forward": 0, "other": 0}
    for name, p in model.named_parameters():
        if ".embeddings." in f".{name}":
            groups["embeddings"] += p.numel()
        elif ".attention." in name:
            groups["attention"] += p.numel()
        elif ".intermediate." in name or (".output." in name and ".layer." in name):
            groups["feed-forward"] += p.numel()
        else:
            groups["other"] += p.numel()
    return groups


groups = parameter_groups(teacher)
total = sum(groups.values())
for name, n in groups.items():
    print(f"{name:<13} {n:>11,}  {n / total:6.1%}")
print(f"{'total':<13} {total:>11,}  (count_params: {count_params(teacher):,})")
print(f"\nfp32 checkpoint: {serialized_bytes(teacher) / 1e6:.1f} MB, of which the Linear "
      f"weight matrices {linear_weight_bytes(teacher) / 1e6:.1f} MB")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Magnitude pruning
#
# The simplest guess at which weights matter is their size. For each Linear weight
# matrix $W$, remove the fraction $s$ of entries with the smallest magnitude:
#
# $$W' = W \odot \mathbb{1}\big[\,|W| > q_s(|W|)\,\big],$$
#
# with $q_s$ the $s$-quantile of $|W|$ in that matrix. Nothing is retrained here
# ("one-shot" pruning); in practice one prunes gradually and fine-tunes in between, which
# keeps more quality at high sparsity. The classifier head is left alone.

# %% slideshow={"slide_type": "-"}
show(magnitude_prune)

# %% slideshow={"slide_type": "-"}
SPARSITIES = (0.5, 0.7, 0.9)
pruned_models = {s: magnitude_prune(teacher, s) for s in SPARSITIES}
pruning_auc = {0.0: teacher_sweep} | {s: sweep_auc(m) for s, m in pruned_models.items()}
print(f"{'sparsity':>9} {'zeros in Linear weights':>24} {'ROC-AUC (sweep sample)':>23}")
for s, auc in pruning_auc.items():
    zeros = weight_sparsity(pruned_models[s]) if s else weight_sparsity(teacher)
    print(f"{s:>9.0%} {zeros:>24.1%} {auc:>23.3f}")

fig, ax = plt.subplots(figsize=(5.5, 3.2))
ax.plot([100 * s for s in pruning_auc], list(pruning_auc.values()), "o-",
        label="magnitude pruning (one-shot)")
ax.axhline(bow_auc, color="grey", ls=":", label="bag of words")
ax.set_xlabel("share of Linear weights set to zero (%)")
ax.set_ylabel("ROC-AUC")
ax.set_title("quality as sparsity grows")
ax.legend()
fig.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# The curve is flat at first and then falls off a cliff: the smallest weights contribute
# little, but past some sparsity the pruning starts removing weights that carry the
# model. Where the cliff begins for our model is printed above; retraining between
# pruning steps moves it to the right.

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Zeros are not free.** A pruned matrix is still a dense $384 \times 1536$ array of
# floats, and the matrix-multiply kernel multiplies every entry, zero or not. To gain
# speed, the zeros must be skipped: a sparse format (which stores indices next to values
# and only pays off at very high sparsity), or *structured* pruning that removes whole
# rows, heads or layers so the matrices get smaller. We time the dense model, the 90%
# pruned one, and one feed-forward matrix multiplied as dense and as a sparse CSR matrix.

# %% slideshow={"slide_type": "-"}
dense_latency = teacher_latency
sparse_latency = latency_of(pruned_models[0.9])
ff = pruned_models[0.9].encoder.encoder.layer[0].intermediate.dense.weight.detach()
x = torch.randn(ff.shape[1], 64 * 32)  # one batch of 64 x 32 token vectors
ff_csr = ff.to_sparse_csr()
t_dense = latency_seconds(lambda: ff @ x, repeats=7)
t_csr = latency_seconds(lambda: ff_csr @ x, repeats=7)
print(f"whole model, dense kernels: unpruned {dense_latency * 1e3:.1f} ms, 90% zeros "
      f"{sparse_latency * 1e3:.1f} ms (ratio {sparse_latency / dense_latency:.2f})")
print(f"one feed-forward matrix ({ff.shape[0]} x {ff.shape[1]}, "
      f"{(ff == 0).float().mean():.0%} zeros) times 2,048 vectors: dense {t_dense * 1e3:.2f} "
      f"ms, sparse CSR {t_csr * 1e3:.2f} ms (ratio {t_csr / t_dense:.2f})")

# %% [markdown] slideshow={"slide_type": "-"}
# The first line is the point: with dense kernels, the pruned model takes the same time
# (the ratio is about 1, within timing noise). Whether the sparse format wins on the second
# line depends on the sparsity, the CPU and the library; at moderate sparsities it usually
# loses, because every stored value carries an index and the memory accesses become
# irregular. Unstructured pruning saves *storage* (once the zeros are compressed), not
# time.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Pruning attention heads
#
# Michel, Levy and Neubig (2019) asked *Are Sixteen Heads Really Better than One?* Put a
# gate $\xi_h$ on the output of each head, so that the attention layer computes
# $\sum_h \xi_h \,\mathrm{Att}_h(x)$, and measure how much the loss cares about each gate:
#
# $$I_h = \mathbb{E}_{x}\left|\frac{\partial \mathcal{L}(x)}{\partial \xi_h}\right|
# \quad\text{at } \xi = 1.$$
#
# A head with small $I_h$ can be switched off ($\xi_h = 0$) with little change in the loss,
# to first order. Since a head's output is $A_h V_h$, scaling the head's slice of the
# value projection by $\xi_h$ is the same gate; `head_importance` inserts it on a copy of
# the model and backpropagates a few batches of training sentences. Removing a head here
# zeroes its value rows (`mask_heads`), which shows the quality cost; to also gain speed,
# the head's query, key and value rows would be cut out of the matrices.

# %% slideshow={"slide_type": "-"}
show(head_importance)

# %% slideshow={"slide_type": "-"}
train_y = torch.tensor([label for _, label, _ in data.train])
batches = iter(finetune.balanced_batches(train_y, 32, 8, torch.Generator().manual_seed(1)))


def batch_loss(model):
    idx = next(batches)
    ids, mask, _ = data.encode([data.train[i] for i in idx.tolist()])  # only the batch's rows
    return torch.nn.functional.cross_entropy(model(ids, mask), train_y[idx])


importance = head_importance(teacher, batch_loss, batches=8)
layers, heads = importance.shape
order = importance.flatten().argsort()  # least important first
HEADS_REMOVED = (18, 36, 54)
head_auc = {0: teacher_sweep}
for n in HEADS_REMOVED:
    keep = torch.ones(layers * heads, dtype=torch.bool)
    keep[order[:n]] = False
    head_auc[n] = sweep_auc(mask_heads(teacher, keep.view(layers, heads)))
for n, auc in head_auc.items():
    print(f"heads removed {n:>2} of {layers * heads}: ROC-AUC {auc:.3f} (sweep sample)")

fig, (ax_imp, ax_auc) = plt.subplots(1, 2, figsize=(10, 3.4))
image = ax_imp.imshow(importance, cmap="viridis", aspect="auto")
ax_imp.set_xlabel("head")
ax_imp.set_ylabel("layer")
ax_imp.set_title("head importance $I_h$ (8 batches of 32)")
fig.colorbar(image, ax=ax_imp)
ax_auc.plot(list(head_auc), list(head_auc.values()), "o-", label="least important first")
ax_auc.axhline(bow_auc, color="grey", ls=":", label="bag of words")
ax_auc.set_xlabel("heads removed")
ax_auc.set_ylabel("ROC-AUC")
ax_auc.legend()
fig.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# Read the heat map for structure: Michel et al. found that most heads can go one at a
# time, that some layers tolerate losing nearly all of their heads, and that the
# importance concentrates in a few heads. The curve on the right says how far that holds
# for our fine-tuned MiniLM, measured on the same sentences as every other method.

# %% [markdown] slideshow={"slide_type": "notes"}
# Ask the room before showing the curve: if a quarter of the heads go, which are the
# least important ones likely to be, and how much ROC-AUC do we lose? Then point out that
# this is one-shot removal without any retraining; the paper prunes iteratively and
# recovers part of the loss by fine-tuning.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Dynamic int8 quantization
#
# A float32 weight takes 4 bytes. Symmetric 8-bit quantization stores one scale per matrix
# and an integer per entry,
#
# $$W \approx \text{scale} \cdot W_{\text{int8}},\qquad
# W_{\text{int8}} = \operatorname{round}\!\big(W / \text{scale}\big) \in [-128, 127],
# \qquad \text{scale} = \max|W| / 127,$$
#
# so the matrix shrinks about four times and the rounding error of each entry is at most
# half a scale step. *Dynamic* quantization also converts each layer's input to int8 on
# the fly (with a scale computed from that input), multiplies in integers and converts back
# to float. PyTorch does this for every `nn.Linear` in one call; embeddings and
# LayerNorms stay in float32.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
w = torch.tensor([0.50, -0.127, 0.031, -1.27])
scale = w.abs().max() / 127
w_int8 = torch.round(w / scale).clamp(-128, 127).to(torch.int8)
print(f"scale {scale:.4f}; int8 {w_int8.tolist()}; back to float "
      f"{[round(v, 4) for v in (w_int8.float() * scale).tolist()]}")
print(f"largest rounding error {(w_int8.float() * scale - w).abs().max():.4f} "
      f"<= half a step {scale / 2:.4f}")

# %% slideshow={"slide_type": "-"}
quantized = quantize_int8(teacher)
int8_auc, int8_latency = auc_of(quantized), latency_of(quantized)
linear_ratio = linear_weight_bytes(quantized) / linear_weight_bytes(teacher)
size_ratio = serialized_bytes(quantized) / serialized_bytes(teacher)
print(f"{'':<22} {'fp32':>10} {'int8':>10} {'int8 / fp32':>12}")
print(f"{'Linear weights (MB)':<22} {linear_weight_bytes(teacher) / 1e6:>10.1f} "
      f"{linear_weight_bytes(quantized) / 1e6:>10.1f} {linear_ratio:>12.2f}")
print(f"{'whole checkpoint (MB)':<22} {serialized_bytes(teacher) / 1e6:>10.1f} "
      f"{serialized_bytes(quantized) / 1e6:>10.1f} {size_ratio:>12.2f}")
print(f"{'latency (ms, batch 64)':<22} {teacher_latency * 1e3:>10.1f} "
      f"{int8_latency * 1e3:>10.1f} {int8_latency / teacher_latency:>12.2f}")
print(f"{'ROC-AUC':<22} {teacher_auc:>10.3f} {int8_auc:>10.3f} "
      f"{int8_auc - teacher_auc:>+12.3f}")
print(f"\ntargets: speed-up >= 1.5x (measured {teacher_latency / int8_latency:.2f}x), Linear "
      f"weights <= 0.3x (measured {linear_ratio:.2f}x), ROC-AUC lost <= 0.01 (measured "
      f"{teacher_auc - int8_auc:+.3f})")

# %% [markdown] slideshow={"slide_type": "-"}
# The Linear weights shrink to about a quarter, as the arithmetic says. The whole
# checkpoint shrinks far less: MiniLM's word-embedding table (30,522 × 384, printed in the
# parameter breakdown above) stays in float32. The speed-up depends on the CPU's integer
# instructions and on how much of the time the matrix products take; the table prints what
# this machine measured.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Low-rank feed-forward matrices
#
# Any $m \times n$ matrix has a singular value decomposition $W = U \Sigma V^\top$. Keeping
# the $r$ largest singular values gives the best rank-$r$ approximation in both the
# spectral and the Frobenius norm (Eckart–Young):
#
# $$W \approx W_r = (U_r \Sigma_r)\,V_r^\top,\qquad \|W - W_r\|_2 = \sigma_{r+1}.$$
#
# As two Linear layers, $n \to r \to m$, it costs $r(m + n)$ numbers instead of $mn$ and
# saves compute as soon as $r < mn / (m + n)$: for MiniLM's $384 \times 1536$ feed-forward
# matrices, any rank below 307.

# %% slideshow={"slide_type": "-"}
show(low_rank_linear)

# %% slideshow={"slide_type": "-"}
layer0 = teacher.encoder.encoder.layer[0].intermediate.dense
singular = torch.linalg.svdvals(layer0.weight.detach())
approx = low_rank_linear(layer0, 96)
spectral_error = torch.linalg.matrix_norm(
    layer0.weight.detach() - approx[1].weight @ approx[0].weight, 2)
print(f"layer 0 feed-forward, rank 96: spectral error {spectral_error:.4f}, "
      f"sigma_97 {singular[96]:.4f} (Eckart-Young: equal)")

RANKS = (192, 96, 48)
low_rank_models = {r: factorize_feed_forward(teacher, r) for r in RANKS}
low_rank_rows = {}
for r, model in low_rank_models.items():
    low_rank_rows[r] = (count_params(model), sweep_auc(model), latency_of(model))
print(f"{'rank':>6} {'parameters':>11} {'ROC-AUC (sweep sample)':>23} {'latency ms':>11}")
print(f"{'full':>6} {count_params(teacher):>11,} {teacher_sweep:>23.3f} "
      f"{teacher_latency * 1e3:>11.1f}")
for r, (params, auc, lat) in low_rank_rows.items():
    print(f"{r:>6} {params:>11,} {auc:>23.3f} {lat * 1e3:>11.1f}")

fig, ax = plt.subplots(figsize=(5.5, 3.2))
ax.plot((singular / singular[0]).numpy())
for r in RANKS:
    ax.axvline(r, color="grey", ls=":", lw=0.8)
ax.set_xlabel("index $i$")
ax.set_ylabel(r"$\sigma_i / \sigma_1$")
ax.set_title("singular values of layer 0's feed-forward matrix")
fig.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# A trained weight matrix is not low rank: its singular values fall slowly (the figure),
# so every rank cut removes real signal; the table says how much ROC-AUC each cut costs
# when nothing is retrained. Methods that use decomposition in practice factorise and
# then fine-tune, or train the factors from the start (ALBERT's factorised embedding,
# chapter 10, is the latter).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Parameter sharing
#
# ALBERT (chapter 10) shares one layer's weights across the whole depth. That cannot be
# applied to a trained model after the fact (its six layers hold six different sets of
# weights); it is a choice made before pre-training. What it buys in parameters is simple
# to compute on MiniLM's shape:

# %% slideshow={"slide_type": "-"}
shared = BertModel(dataclasses.replace(teacher.encoder.config, share_layers=True))
unshared = count_params(teacher.encoder)
print(f"MiniLM encoder: {unshared:,} parameters; one layer shared across 6: "
      f"{count_params(shared):,} ({count_params(shared) / unshared:.0%}); compute per token "
      "unchanged")

# %% [markdown] slideshow={"slide_type": "-"}
# Sharing saves memory and download size, never compute: the shared layer still runs six
# times. Latency, unlike bytes, is unchanged.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Stacking: distil first, then compress
#
# The TinyBERT authors end by proposing to combine distillation with further compression,
# and the lecture notes propose the same experiment. The methods act on different things:
# distillation removes layers (and so time), quantization shrinks the bytes of each
# remaining matrix. We take chapter 12's recipe (a half-depth student initialised from
# every other teacher layer, $\alpha T^2 L_d + \beta L_s$ with $T = 2$, the same steps,
# seed 0) and quantize the student to int8.

# %% slideshow={"slide_type": "-"}
pool, teacher_logits = distillation_pool(data, teacher)
torch.manual_seed(0)
student = half_depth_student(teacher)


def distil_loss(model, ids, mask, labels, rows):
    return combined_loss(model(ids, mask), teacher_logits[rows], labels, temperature=2.0)


train_student(student, pool, distil_loss, steps=lmcourse.budget(cpu=30, gpu=400), lr=2e-4,
              progress=False)
student_int8 = quantize_int8(student)
stacked = {"distilled student (3 layers)": student, "distilled student + int8": student_int8}
stacked_rows = {name: (auc_of(m), latency_of(m)) for name, m in stacked.items()}
for name, (auc, lat) in stacked_rows.items():
    print(f"{name:<30} ROC-AUC {auc:.3f}  latency {lat * 1e3:6.1f} ms "
          f"({teacher_latency / lat:.2f}x faster than the teacher)")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## One table, one picture
#
# Every variant above, on the same sentences and the same machine. "Size" is the bytes of
# the checkpoint (`torch.save` of the state dict); latency is per batch of 64 on the CPU.

# %% slideshow={"slide_type": "-"}
variants = {"MiniLM fine-tuned (fp32)": teacher, "MiniLM, int8 dynamic": quantized,
            "MiniLM, 90% of weights pruned": pruned_models[0.9],
            "MiniLM, feed-forward rank 96": low_rank_models[96], **stacked}
timings = {"MiniLM fine-tuned (fp32)": teacher_latency, "MiniLM, int8 dynamic": int8_latency,
           "MiniLM, 90% of weights pruned": sparse_latency,
           "MiniLM, feed-forward rank 96": low_rank_rows[96][2]}
timings |= {name: lat for name, (_, lat) in stacked_rows.items()}
summary = {}
for name, model in variants.items():  # every row scored on all 2,300 sentences
    auc = roc_auc(eval_labels, scores_of[model]) if model in scores_of else auc_of(model)
    latency = timings.get(name) or latency_of(model)
    summary[name] = (serialized_bytes(model) / 1e6, latency * 1e3, auc)
lines = ["| model (ours, measured) | size MB | latency ms | ROC-AUC | minus fp32's, 95% interval |",
         "|---|---:|---:|---:|---:|"]
for name, (mb, ms, auc) in summary.items():
    diff, low, high = bootstrap_auc_difference(eval_labels, scores_of[variants[name]],
                                               scores_of[teacher])
    change = "-" if variants[name] is teacher else f"{diff:+.3f} [{low:+.3f}, {high:+.3f}]"
    lines.append(f"| {name} | {mb:.1f} | {ms:.1f} | {auc:.3f} | {change} |")
diff, low, high = bootstrap_auc_difference(eval_labels, bow_scores, scores_of[teacher])
lines.append(f"| bag of words (baseline) | - | - | {bow_auc:.3f} | {diff:+.3f} [{low:+.3f}, "
             f"{high:+.3f}] |")
display(Markdown("\n".join(lines)))

# %% slideshow={"slide_type": "subslide"}
short = {"MiniLM fine-tuned (fp32)": "fp32", "MiniLM, int8 dynamic": "int8",
         "MiniLM, 90% of weights pruned": "pruned 90%",
         "MiniLM, feed-forward rank 96": "rank 96",
         "distilled student (3 layers)": "student", "distilled student + int8": "student int8"}
floor = min(0.85, bow_auc - 0.02)  # points below it are listed under the plot
fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
for ax, column, label in ((axes[0], 0, "checkpoint size (MB)"),
                          (axes[1], 1, "latency per batch of 64 (ms)")):
    points = sorted((v[column], v[2], name) for name, v in summary.items())
    for i, (x_value, y_value, name) in enumerate(points):
        if y_value < floor:
            continue
        ax.scatter(x_value, y_value, zorder=3)
        ax.annotate(short[name], (x_value, y_value), fontsize=8, textcoords="offset points",
                    xytext=(4, 6 if i % 2 else -11))
    front, best = [], -1.0  # Pareto front: nothing smaller (faster) is better
    for x_value, y_value, _ in points:
        if y_value > best:
            front.append((x_value, y_value))
            best = y_value
    ax.step(*zip(*front, strict=True), where="post", color="black", lw=1.2, alpha=0.6,
            label="Pareto front")
    ax.axhline(bow_auc, color="grey", ls=":", label="bag of words")
    ax.set_ylim(floor, None)
    ax.set_xlabel(label)
axes[0].set_ylabel("ROC-AUC (test sentences)")
axes[0].legend(loc="lower right", fontsize=8)
fig.suptitle("size and latency against quality (higher and further left is better)")
fig.tight_layout()
plt.show()
below = [f"{name} ({v[2]:.3f})" for name, v in summary.items() if v[2] < floor]
print(f"below the plotted range (ROC-AUC < {floor:.2f}): {', '.join(below) or 'none'}")

# %% [markdown] slideshow={"slide_type": "-"}
# A point is on the **Pareto front** when no other model is both smaller (or faster) and
# better. Pruning without a sparse format lands on neither front: same size as a float32
# checkpoint (the zeros are stored) and the same latency. The distilled student moves
# along both axes at once (fewer layers), at the cost of training, and quantizing it
# stacks the two savings; where the stacked model lands against the bag-of-words line is
# the honest test of the combination on this task.

# %% [markdown] slideshow={"slide_type": "subslide"}
# Every method against the strongest simple baseline, one verdict each. With one model per
# row there are no seeds to compare, so the verdict reads the paired bootstrap interval of
# the ROC-AUC difference on the 2,300 test sentences: above zero means ahead of the bag of
# words, below zero behind it, and an interval across zero is no difference.

# %% slideshow={"slide_type": "-"}
for name, model in variants.items():
    mb, ms, _ = summary[name]
    bootstrap_verdict(f"the {name} ranks spoilers better than the bag of words", eval_labels,
                      scores_of[model], baseline=("bag of words", bow_scores), resamples=500,
                      note=f"{mb:.1f} MB, {ms:.1f} ms per batch of 64")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Model sizes over time
#
# The reason for all this: the parameter counts of published pre-trained models (numbers
# from the papers, as collected in the course's lecture notes; ELMo's from its paper).

# %% slideshow={"slide_type": "-"}
published = [("ELMo", 2018.1, 94e6), ("BERT-large", 2018.8, 340e6), ("GPT-2", 2019.1, 1.5e9),
             ("MegatronLM", 2019.7, 8.3e9), ("T5", 2019.8, 11e9), ("T-NLG", 2020.1, 17e9),
             ("GShard", 2020.5, 600e9)]
fig, ax = plt.subplots(figsize=(6.5, 3.6))
for name, year, n in published:
    ax.scatter(year, n, color="tab:blue")
    ax.annotate(name, (year, n), fontsize=8, xytext=(4, -3), textcoords="offset points")
ax.scatter(2019.5, count_params(teacher), color="tab:orange")
ax.annotate("our MiniLM (measured)", (2019.5, count_params(teacher)), fontsize=8,
            xytext=(4, -3), textcoords="offset points")
ax.set_yscale("log")
ax.set_xlabel("year")
ax.set_ylabel("parameters (log scale)")
ax.set_title("pre-trained language models, parameters (papers) vs ours")
fig.tight_layout()
plt.show()
growth = published[-1][2] / published[0][2]
print(f"ELMo to GShard: x{growth:,.0f} in about {published[-1][1] - published[0][1]:.1f} years "
      f"(paper figures); our MiniLM: {count_params(teacher) / 1e6:.1f}M (counted)")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## How the literature measures quality: GLUE and SQuAD
#
# Compression papers report what is lost on standard benchmarks, not on spoilers:
#
# - **GLUE** (Wang et al., 2018), nine sentence and sentence-pair tasks scored together.
#   Three of them, with the kind of example each contains (written for this course):
#   - *SST-2*, sentiment of a sentence: "a tender, funny film that never overstays its
#     welcome" → positive;
#   - *MNLI*, whether a premise entails, contradicts or is neutral to a hypothesis:
#     "The museum closes at six on weekdays." / "The museum is open at nine on a Tuesday
#     evening." → contradiction;
#   - *QQP*, whether two questions ask the same thing: "How do I learn to cook rice?" /
#     "What is the best way to cook rice?" → duplicate.
#   The others are CoLA (grammatical or not), MRPC and STS-B (paraphrase, similarity
#   score), QNLI and RTE (entailment), WNLI (pronoun resolution).
# - **SQuAD** (Rajpurkar et al., 2016; 2.0 in 2018): given a paragraph and a question,
#   mark the answer span, e.g. "The bridge opened in 1932 after six years of work." /
#   "When did the bridge open?" → "1932". Version 2.0 adds questions that the paragraph
#   cannot answer, which the model must refuse. Scored by exact match and token F1.
#
# DistilBERT's "97% of BERT" is a GLUE average; TinyBERT's numbers are GLUE tasks too.
# Our "AUC kept" column plays the same role on one task.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - Compression keeps a trained model and makes it cheaper: **pruning**, **quantization**,
#   **parameter sharing** and **low-rank decomposition**: four of Gupta and Agrawal's six
#   families (the other two are distillation, chapter 12, and sub-quadratic transformers).
# - **Magnitude pruning** zeroes the smallest weights of each matrix; with dense kernels it
#   saves no time (measured above), and sparse formats only pay at high sparsity.
# - **Head importance** $I_h = \mathbb{E}|\partial\mathcal{L}/\partial\xi_h|$ ranks
#   attention heads; removing the least important ones shows how much of the attention a
#   fine-tuned model really uses.
# - **Dynamic int8 quantization** stores Linear weights in a byte plus a scale per matrix:
#   about a quarter of their size; the embeddings stay float32, so the whole model shrinks
#   less.
# - **Truncated SVD** gives the best rank-$r$ matrix; trained matrices are not low rank,
#   so cutting the rank without retraining costs quality.
# - The methods **stack**: a distilled student (fewer layers) can be quantized too (fewer
#   bytes per matrix); the table shows what the combination kept.
# - One table and one Pareto plot on the same task and machine are the honest way to
#   compare: the printed numbers, not the method's name, decide. On 2,300 test sentences
#   with about a hundred spoilers, differences of a few thousandths are inside the paired
#   bootstrap interval; only the verdicts that clear it say a method lost (or kept) quality.
#
# ## Exercises
#
# 1. *(warm-up)* Compute by hand the size in bytes of one $384 \times 1536$ matrix in
#    float32 and in int8 with one float32 scale. Check against `linear_weight_bytes`.
# 2. Change `magnitude_prune` to rank the weights of *all* matrices together (global
#    pruning) instead of each matrix separately. At 70% sparsity, which layers lose most,
#    and is the ROC-AUC better or worse than per-matrix pruning?
# 3. Remove heads in *random* order (three seeds) and plot the curve beside the importance
#    order. How much does the importance score buy?
# 4. Fine-tune the rank-48 model for 50 steps with `finetune.fit` and measure how much of
#    the lost ROC-AUC comes back.
# 5. *(harder)* Physically remove the pruned heads: cut their rows out of the query, key
#    and value matrices and the matching columns of the attention output matrix, and
#    measure the latency as heads go.
# 6. *(harder)* Stack three methods: remove a quarter of the distilled student's heads by
#    importance, then quantize it. Add the row to the table: is it on the Pareto front?
#
# ## References
#
# - Gupta, Agrawal (2020). *Compression of Deep Learning Models for Text: A Survey.*
#   arXiv:2008.05221.
# - Michel, Levy, Neubig (2019). *Are Sixteen Heads Really Better than One?* NeurIPS.
# - Han, Mao, Dally (2016). *Deep Compression: Compressing Deep Neural Networks with
#   Pruning, Trained Quantization and Huffman Coding.* ICLR.
# - Jacob et al. (2018). *Quantization and Training of Neural Networks for Efficient
#   Integer-Arithmetic-Only Inference.* CVPR.
# - Eckart, Young (1936). *The approximation of one matrix by another of lower rank.*
#   Psychometrika.
# - Lan et al. (2020). *ALBERT: A Lite BERT for Self-supervised Learning of Language
#   Representations.* ICLR.
# - Jiao et al. (2020). *TinyBERT: Distilling BERT for Natural Language Understanding.*
#   Findings of EMNLP.
# - Wang et al. (2018). *GLUE: A Multi-Task Benchmark and Analysis Platform for Natural
#   Language Understanding.* BlackboxNLP.
# - Rajpurkar, Zhang, Lopyrev, Liang (2016). *SQuAD: 100,000+ Questions for Machine
#   Comprehension of Text.* EMNLP; Rajpurkar, Jia, Liang (2018). *Know What You Don't
#   Know: Unanswerable Questions for SQuAD.* ACL.

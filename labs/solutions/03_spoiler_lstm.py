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
# # Lab 03 · Finding spoilers with a bidirectional LSTM
#
# Goodreads lets reviewers hide the sentences that give a plot away. Wan et al. (2019)
# collected 1.4 million such reviews, each sentence tagged spoiler or not, and asked: can a
# model find the spoilers by itself? Here you build the classic answer, a **bidirectional
# LSTM** that reads one sentence and outputs P(spoiler). You will write:
#
# 1. **padding**: many sentences of different lengths in one tensor;
# 2. the model's **forward pass**, with *packing*, so that padding changes nothing;
# 3. the **class weight** that keeps a 3%-positive problem from collapsing to "never a
#    spoiler";
# 4. the metrics that make sense when positives are rare: **F1**, the **ROC curve** and
#    the **area under it** (ROC-AUC);
#
# and then train the model, watch its **validation curve**, and compare it with three
# baselines: always answering "no spoiler", counting spoiler-ish words, and the strongest
# simple classifier, a **bag-of-words logistic regression**.
#
# **What to expect.** The last check scores your trained BiLSTM on the test sentences and
# passes when it beats the keyword baseline by at least 0.1 in both ROC-AUC and F1 (the
# keywords get about 0.65 and 0.21). It prints your BiLSTM's figures beside the bag of words
# trained on the same sentences; on this generated sample expect the two to end close: word
# order buys little. The whole lab, training
# included, runs in under a minute on a laptop CPU; its run card (the folded line below)
# gives the time it measured.
#
# > **The data is a generated sample, not real Goodreads reviews.** To run offline and in
# > a minute, the course ships `data/goodreads_sample.jsonl.gz`: 5,000 reviews that a
# > seeded program wrote from templates (`data/make_goodreads_sample.py`; `data/README.md`
# > says how and compares its statistics with the real data). It has **exactly the real
# > file's schema**, so everything below runs unchanged on the real data: download it once
# > with `lmcourse.data.goodreads.download_reviews(...)` (about 1.4M reviews; `data/README.md`
# > explains the checksum you must supply, since the course cannot pin one it has never
# > downloaded) and pass its path instead of `sample_path()`, with `limit=` to read only the
# > first reviews.
#
# After each exercise, run the check cell below it: it computes the right answer itself and,
# if yours differs, names the mistake when it recognises it (padding on the wrong side, an
# LSTM that read the padding, an inverted class weight, ties split in the ROC curve, ...).
# Each exercise has two hints, folded: open the first when you are stuck, the second if you
# still are. Fill in the places that say `raise NotImplementedError`.

# %% [markdown] slideshow={"slide_type": "skip"} tags=["run-card"]
# <details><summary>Run card: 31 s on a CPU, 451.2 MB of memory; GPU: not measured yet</summary>
#
# - **Time on a CPU:** 31 s normalised to the reference machine: 44 s wall on Intel(R) Xeon(R)
#   Processor, one torch thread, calibration 0.691 s against 0.482 s.
# - **Time on a GPU:** not measured yet.
# - **Peak memory:** 451.2 MB (the kernel's resident set).
# - **Last passed:** 2026-11-29, commit `8de5aec-dirty` (nbval, as `make test` runs it).
# - **Files read (1):**
#   - `data/goodreads_sample.jsonl.gz` (633.1 KB)
#
# Measured by the test run (`python -m tools.runcards`), not typed.
# </details>

# %% [markdown] slideshow={"slide_type": "skip"} tags=["grading"]
# ### How this lab is graded
#
# Each check cell below is a question of the autograder (7 points in all), and ends with its
# name and points (`# q01: 1 point`).
#
# | question | your code it grades | also needs exercise | points |
# |---|---|---|---|
# | q01 · exercise 1 | `pad_batch` | – | 1 |
# | q02 · exercise 2 | `SpoilerLSTM` | – | 1 |
# | q03 · exercise 3 | `positive_weight` | – | 1 |
# | q04 · exercise 4 | `f1` | – | 1 |
# | q05 · exercise 5 | `roc_curve` | – | 1 |
# | q06 · exercise 5 | `roc_auc` | 5 (`roc_curve`) | 1 |
# | q07 · closing run | your trained model | – | 1 |
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
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

import lmcourse
from lmcourse import metrics
from lmcourse.checks import spoilers as check
from lmcourse.data import Vocab, tokenize

lmcourse.seed_everything(0)
torch.set_num_threads(1)  # small matrices: one CPU thread wastes less time waiting
device = lmcourse.device()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The data
#
# Each line of the file is one review in the real data set's JSON schema: ids of the user,
# the book and the review, a date, a rating from 0 (none) to 5 stars, `has_spoiler`, and
# `review_sentences`, a list of `[label, sentence]` pairs with label 1 for a spoiler.
# `load_reviews` reads it (plain or gzipped) and stops at the first malformed line with the
# file name, the line number and what is wrong.

# %% slideshow={"slide_type": "-"} tags=["nbval-check-output"]
from lmcourse.data.goodreads import load_reviews, sample_path, sentences, split_reviews, summary

reviews = load_reviews(sample_path())
stats = summary(reviews)
print(reviews)
real = {"reviews": 1_378_033, "spoiler_review_rate": 89_627 / 1_378_033,
        "sentences": 17_672_655, "spoiler_sentence_rate": 569_724 / 17_672_655}
print(f"{'':26s} {'this sample':>12s} {'real data (Wan et al. 2019)':>28s}")
for key, fmt in (("reviews", ",d"), ("sentences", ",d"), ("spoiler_review_rate", ".1%"),
                 ("spoiler_sentence_rate", ".1%")):
    print(f"{key:26s} {stats[key]:>12{fmt}} {real[key]:>28{fmt}}")
print(f"mean position of spoiler sentences in a review (0 = first, 1 = last): "
      f"{stats['spoiler_position']:.2f}, of the others {stats['other_position']:.2f}")

# %% [markdown] slideshow={"slide_type": "subslide"}
# One review with a spoiler. Spoilers come in a **span**, usually in the latter part of the
# review (Wan et al. found the same in the real data); the span also catches reactions
# ("I screamed.") that give nothing away by themselves: the tags are noisy, as
# self-reported tags are.

# %% slideshow={"slide_type": "-"} tags=["nbval-check-output"]
example = next(r for r in reviews if r.has_spoiler and 6 <= len(r.sentences) <= 10)
print(f"book {example.book_id}, {example.rating} stars, {example.timestamp}")
for label, text in example.sentences:
    print(f"  {'SPOILER' if label else '       '}  {text}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ### Splitting by review
#
# Sentences of one review are alike (same book, same characters, same writer), so we split
# **reviews**, not sentences, into train / validation / test: otherwise half a spoiler span
# could sit in training and the other half in the test set. `split_reviews` hashes each
# review id, so the split is the same on every machine and does not move when the file
# grows. We then flatten each part into `(sentence, label, review_id)` triples.

# %% slideshow={"slide_type": "-"} tags=["nbval-check-output"]
parts = split_reviews(reviews, by="review_id")
train, val, test = (sentences(p) for p in parts)
for name, data in (("train", train), ("validation", val), ("test", test)):
    n_pos = sum(label for _, label, _ in data)
    print(f"{name:10s} {len(data):6,} sentences, {n_pos:4d} spoilers ({n_pos / len(data):.1%})")
majority_accuracy = 1 - sum(label for _, label, _ in test) / len(test)
print(f"always answering 'no spoiler' is right on {majority_accuracy:.1%} of the test "
      "sentences, and finds none of them")

# %% [markdown] slideshow={"slide_type": "subslide"}
# That last line is why accuracy is the wrong yardstick here: the useless majority-class
# answer scores about 97%. We will use **F1** and **ROC-AUC** instead (exercises 4 and 5).
#
# ### Tokens and a vocabulary
#
# `tokenize` lowercases and keeps words (with their apostrophes); `Vocab` numbers them by
# frequency. Words seen once in training become `<unk>` (id 0): the model has to cope with
# unseen names at test time anyway. We reserve one more id, `<pad>`, for padding.

# %% slideshow={"slide_type": "-"} tags=["nbval-check-output"]
vocab = Vocab((w for text, _, _ in train for w in tokenize(text)), min_freq=2,
              reserved=["<pad>"])
PAD = vocab.stoi["<pad>"]


def encode(text: str) -> list[int]:
    """Token ids of a sentence (one <unk> for a sentence without any word)."""
    return vocab.encode(tokenize(text)) or [vocab.unk_id]


lengths = sorted(len(encode(t)) for t, _, _ in train)
print(vocab)
print(f"<pad> = {PAD}; sentence lengths: median {lengths[len(lengths) // 2]}, "
      f"max {lengths[-1]} tokens")
print(encode(example.sentences[-1][1]), "<-", repr(example.sentences[-1][1]))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 1: padding a batch
#
# A minibatch is one tensor, so sentences of different lengths must be brought to the same
# length: append `pad_id` to each until it is as long as the longest. Write
# `pad_batch(sequences, pad_id)` that returns
#
# - `ids`: a `B x T` LongTensor (batch first, one row per sentence, padding on the
#   **right**), with `T` the longest length;
# - `lengths`: a LongTensor of the `B` real lengths.
#
# The lengths matter as much as the ids: they are how the LSTM will know where each
# sentence really ends. (`torch.nn.utils.rnn.pad_sequence` exists; write it yourself once.)
#
# <details><summary>Hint 1</summary>
#
# A padded batch is a rectangle: `B` rows as long as the longest sentence, filled with
# `pad_id`, and each sentence copied into the start of its row, so that its real tokens
# sit at positions $0 \dots n-1$. Exercise 2's packing reads exactly that layout: real
# tokens first, and the real lengths beside them.
#
# </details>
#
# <details><summary>Hint 2</summary>
#
# Compute the lengths first (a LongTensor of `B` numbers); `T` is their maximum. Make a
# `B x T` tensor that holds `pad_id` everywhere, with `dtype=torch.long` (look up
# `torch.full`), then, row by row, assign the sentence to the first `len(sentence)`
# positions of its row with a slice. Return the pair, ids first.
#
# </details>

# %% slideshow={"slide_type": "-"}
def pad_batch(sequences: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(B x T ids padded on the right with pad_id, B real lengths)."""
    # BEGIN SOLUTION
    lengths = torch.tensor([len(s) for s in sequences])
    ids = torch.full((len(sequences), int(lengths.max())), pad_id, dtype=torch.long)
    for row, seq in enumerate(sequences):
        ids[row, : len(seq)] = torch.tensor(seq, dtype=torch.long)
    return ids, lengths
    # END SOLUTION


# %% slideshow={"slide_type": "-"} tags=["check"]
check.pad_batch(pad_batch, pad_id=PAD)
# q01: 1 point

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 2: the BiLSTM classifier
#
# The model embeds each token, runs a **bidirectional** LSTM over the sentence and reads
# the two final states: the forward LSTM's state after the last word, $\overrightarrow{h}_T$,
# has read the sentence left to right; the backward LSTM's state after the first word,
# $\overleftarrow{h}_1$, has read it right to left. Their concatenation goes through a
# linear layer to one number, the **logit** $z$, and
#
# $$
# P(\text{spoiler}) = \sigma(z) = \frac{1}{1 + e^{-z}}, \qquad
# z = w^\top \big[\overrightarrow{h}_T ; \overleftarrow{h}_1\big] + b.
# $$
#
# Chapter 03 builds the LSTM cell itself (`lmcourse.models.gated.LSTM`, with the same
# parameters and outputs as `torch.nn.LSTM`); here we use PyTorch's fused `nn.LSTM`, which
# is much faster and accepts *packed* batches. At the end of the lab the trained weights
# run in the course's own LSTM too.
#
# ### Why pack?
#
# In a padded batch, a 3-word sentence is followed by `<pad>` tokens. The forward
# direction would read them after the sentence and the **backward direction would start
# with them**, so a sentence's score would depend on the length of its batch-mates.
# Packing the batch (`pack_padded_sequence`, imported above) tells the LSTM each real
# length: every direction stops (or starts) at the real last word, and `h_n` holds the
# right final states. With one layer and two directions, `h_n` is `2 x B x H`: `h_n[-2]` is
# the forward direction, `h_n[-1]` the backward one.
#
# Write `forward(ids, lengths)`: return `B` **logits** $z$, one per sentence, computed as in
# the equation above from a packed batch (no sigmoid: the loss applies it). The check
# compares your batched output with each sentence run alone, unpadded.
#
# <details><summary>Hint 1</summary>
#
# Chapter 03's section "Bidirectional LSTMs" shows where the two summaries of a sentence
# live: the forward direction's final state after the last word, the backward direction's
# after the first, both in `h_n`, not at the last step of the output (whose backward half
# has read one token). Packing, above, is what makes "the last word" the real one and not
# padding.
#
# </details>
#
# <details><summary>Hint 2</summary>
#
# In order: the embedded ids (`B x T x E`); the packed sequence, made from them and the
# lengths (batch first, lengths on the CPU, and not sorted: read the keyword arguments of
# `pack_padded_sequence`); the LSTM on it, keeping only `h_n` from what it returns; the two
# directions' final states (each `B x H`) concatenated along the feature axis (`B x 2H`);
# `self.head` (`B x 1`); the last axis dropped, so that you return a vector of `B` logits.
#
# </details>

# %% slideshow={"slide_type": "-"}
class SpoilerLSTM(nn.Module):
    """Embedding -> bidirectional LSTM -> [forward h_T ; backward h_1] -> one logit."""

    def __init__(self, vocab_size: int, embed_dim: int, hidden_size: int, pad_id: int):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=pad_id)
        self.lstm = nn.LSTM(embed_dim, hidden_size, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * hidden_size, 1)

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Logits (B,) for padded token ids (B x T) with real lengths (B,)."""
        # BEGIN SOLUTION
        packed = pack_padded_sequence(self.embedding(ids), lengths.cpu(), batch_first=True,
                                      enforce_sorted=False)
        _, (h_n, _) = self.lstm(packed)
        return self.head(torch.cat([h_n[-2], h_n[-1]], dim=-1)).squeeze(-1)
        # END SOLUTION


# %% slideshow={"slide_type": "-"} tags=["check"]
check.spoiler_model(SpoilerLSTM, pad_id=PAD)
# q02: 1 point

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 3: weighting the rare class
#
# With 3% positives, the loss is dominated by the negatives, and a model can get a low
# loss by giving every sentence a small probability. The binary cross-entropy with a
# **positive-class weight** $w_+$ makes each spoiler count $w_+$ times:
#
# $$
# \ell(z, y) = -\big[\, w_+\, y \log \sigma(z) + (1 - y) \log\big(1 - \sigma(z)\big) \big].
# $$
#
# With $w_+ = n_- / n_+$ (negatives over positives, counted on the **training** labels)
# the positives weigh as much in total as the negatives. `nn.BCEWithLogitsLoss` implements
# this loss, with $w_+$ as its `pos_weight`. (Oversampling the spoiler sentences is the
# other common fix.) Write `positive_weight(labels)` for a tensor of 0/1 labels; return a
# float.
#
# <details><summary>Hint 1</summary>
#
# The weight balances the two classes in the loss above: $n_+$ spoilers that each count
# $w_+$ times weigh $w_+ n_+$ in total, the negatives $n_-$; setting the two equal gives
# $w_+$. The rarer the positives, the larger the weight: about 29 on this training set.
#
# </details>
#
# <details><summary>Hint 2</summary>
#
# With 0/1 labels, the number of positives is their sum and the negatives are the rest of
# the labels. Divide the one count by the other, as Python numbers (convert the tensor
# sum with `int` first), so that you return a plain float.
#
# </details>

# %% slideshow={"slide_type": "-"}
def positive_weight(labels: torch.Tensor) -> float:
    """n_negative / n_positive of 0/1 labels."""
    # BEGIN SOLUTION
    n_pos = int(labels.sum())
    return (len(labels) - n_pos) / n_pos
    # END SOLUTION


# %% slideshow={"slide_type": "-"} tags=["check"]
check.positive_weight(positive_weight)
# q03: 1 point

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 4: F1
#
# Predict "spoiler" when the probability is above a threshold and count, on the positive
# class: true positives (TP, spoilers found), false positives (FP, false alarms) and false
# negatives (FN, spoilers missed). Precision and recall, and F1, their harmonic mean:
#
# $$
# P = \frac{TP}{TP + FP}, \qquad R = \frac{TP}{TP + FN}, \qquad
# F_1 = \frac{2PR}{P + R} = \frac{2\,TP}{2\,TP + FP + FN}.
# $$
#
# True negatives appear nowhere: F1 does not reward the easy "no spoiler" answers. When
# there is no true positive, F1 is 0 (take care: $P$ may then be $0/0$). Write
# `f1(labels, predictions)` for two 0/1 tensors of the same length; return a float.
#
# <details><summary>Hint 1</summary>
#
# The right-hand form of the equation, $2\,TP / (2\,TP + FP + FN)$, needs only three
# counts and never divides $0$ by $0$ unless $TP = 0$, the case you return 0 for. All three
# counts are about the positive class, label 1.
#
# </details>
#
# <details><summary>Hint 2</summary>
#
# Turn both tensors into booleans. Each count is the number of positions where a
# condition holds: TP where the label and the prediction are both true, FP where the
# prediction is true and the label false, FN the other way round (elementwise and, not,
# then a sum, converted to an `int`). Then the formula, or 0.0 when TP is 0.
#
# </details>

# %% slideshow={"slide_type": "-"}
def f1(labels: torch.Tensor, predictions: torch.Tensor) -> float:
    """F1 of the positive class: 2TP / (2TP + FP + FN), 0.0 when TP = 0."""
    # BEGIN SOLUTION
    labels, predictions = labels.bool(), predictions.bool()
    tp = int((labels & predictions).sum())
    fp = int((~labels & predictions).sum())
    fn = int((labels & ~predictions).sum())
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0
    # END SOLUTION


# %% slideshow={"slide_type": "-"} tags=["check"]
check.f1(f1)
# q04: 1 point

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 5: the ROC curve and its area
#
# F1 depends on the threshold. The **ROC curve** shows every threshold at once: lower the
# threshold $t$ from above the highest score to below the lowest and plot
#
# $$
# \mathrm{FPR}(t) = \frac{FP(t)}{n_-} \;\;(x\text{-axis}), \qquad
# \mathrm{TPR}(t) = \frac{TP(t)}{n_+} \;\;(y\text{-axis}).
# $$
#
# It starts at $(0, 0)$ (nothing predicted positive) and ends at $(1, 1)$ (everything).
# Each positive that the threshold passes moves the curve up by $1/n_+$, each negative
# right by $1/n_-$. Sentences with the **same score** cross the threshold together, so a
# group of ties is one step (diagonal if it mixes both classes): the curve has one point
# per *distinct* score, after $(0, 0)$.
#
# The area under it, by trapezoids,
#
# $$
# \mathrm{AUC} = \sum_i (x_i - x_{i-1}) \, \frac{y_i + y_{i-1}}{2},
# $$
#
# is the probability that a random spoiler scores higher than a random non-spoiler (a tie
# counts one half): 0.5 for a coin, 1 for a perfect ranking. It needs the **scores**: on
# 0/1 predictions the curve has a single corner.
#
# Write `roc_curve`, which takes the labels and the scores and returns `(fpr, tpr)` (two
# 1-d tensors or lists, starting with `(0, 0)`), and `roc_auc`, which takes the same two
# arguments and returns the area as a float.
#
# <details><summary>Hint 1</summary>
#
# Lowering the threshold is reading the sentences from the highest score to the lowest,
# keeping running counts of the positives and negatives passed: TP and FP at every
# threshold at once. A point is recorded only where the score changes, at the end of each
# group of ties. The area is the trapezoid sum above over consecutive points of the curve
# your `roc_curve` returns.
#
# </details>
#
# <details><summary>Hint 2</summary>
#
# `roc_curve`: the order that sorts the scores from high to low (`torch.argsort`, with
# `stable=True`), the scores and the labels (as floats) in that order; the cumulative sum
# of the sorted labels is TP after each sentence (`torch.cumsum`), and FP is the number of
# sentences passed minus TP. Keep the entries at the last index of each tie group: the
# positions where the next sorted score differs (`torch.nonzero` of a comparison of the
# tensor with itself shifted by one), plus the very last index. Divide by the totals (the
# last TP and the last FP) and put a 0 in front of both. `roc_auc`: the widths are
# differences of consecutive FPR values and the mean heights are averages of consecutive
# TPR values, both from slices of the tensors shifted by one; sum their products.
#
# </details>

# %% slideshow={"slide_type": "-"}
def roc_curve(labels: torch.Tensor, scores: torch.Tensor):
    """(fpr, tpr) at every distinct score, from the highest down, starting at (0, 0)."""
    # BEGIN SOLUTION
    order = torch.argsort(scores, descending=True, stable=True)
    s, y = scores[order], labels[order].float()
    last = torch.cat([torch.nonzero(s[1:] != s[:-1]).flatten(),
                      torch.tensor([len(s) - 1])])  # the last index of each tie group
    tp = torch.cumsum(y, 0)[last]
    fp = (last + 1).float() - tp
    zero = torch.zeros(1)
    return torch.cat([zero, fp / fp[-1]]), torch.cat([zero, tp / tp[-1]])
    # END SOLUTION


def roc_auc(labels: torch.Tensor, scores: torch.Tensor) -> float:
    """Area under the ROC curve, by the trapezoid rule."""
    # BEGIN SOLUTION
    fpr, tpr = roc_curve(labels, scores)
    return float(((fpr[1:] - fpr[:-1]) * (tpr[1:] + tpr[:-1]) / 2).sum())
    # END SOLUTION


# %% slideshow={"slide_type": "-"} tags=["check"]
check.roc_curve(roc_curve)
# q05: 1 point

# %% slideshow={"slide_type": "-"} tags=["check"]
check.roc_auc(roc_auc)
# q06: 1 point

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Three baselines
#
# Before training a sequence model, what do simple answers score on the test sentences?
#
# - the **majority class**, "never a spoiler": F1 = 0, and a constant score gives AUC = 0.5;
# - a **keyword baseline**: score a sentence by how many of a small list of spoiler-ish
#   words it contains (*dies, killed, twist, ending, turns out, finally*, ...), and call it
#   a spoiler from one word on;
# - a **bag of words**: logistic regression on the sentence's word counts $c(x)$,
#   $P(\text{spoiler}) = \sigma(v^\top c(x) + b)$, trained on the same sentences with the
#   same class weight. It learns a weight per word but ignores word order: whatever the
#   BiLSTM gains over it is what order and context are worth here. A fair baseline gets the
#   care the model gets: its Adam learning rate and number of steps are chosen on the
#   validation sentences (a small grid, the highest validation ROC-AUC wins), just as the
#   BiLSTM's stopping point will be.

# %% slideshow={"slide_type": "-"}
lmcourse.show(check.keyword_scores)

# %% slideshow={"slide_type": "-"} tags=["nbval-check-output"]
test_texts = [t for t, _, _ in test]
test_y = torch.tensor([label for _, label, _ in test])
keyword = check.keyword_scores(test_texts)
print("spoiler words:", " ".join(sorted(check.SPOILER_WORDS)))
print(f"keyword baseline: ROC-AUC {roc_auc(test_y, keyword):.3f}, "
      f"F1 (one word or more) {f1(test_y, keyword >= 1):.3f}")
print(f"majority class:   ROC-AUC {roc_auc(test_y, torch.zeros(len(test_y))):.3f}, "
      f"F1 {f1(test_y, torch.zeros(len(test_y))):.3f}")
hits = [(t, label) for t, label, _ in test if check.keyword_scores([t])[0] > 0]
print(f"{sum(label for _, label in hits)} of the {len(hits)} test sentences with a spoiler "
      "word are spoilers, e.g. these that are not:")
for t, _ in [h for h in hits if not h[1]][:3]:
    print("   ", t)

# %% slideshow={"slide_type": "-"}
from lmcourse.models.baselines import tuned_bag_of_words_baseline

lmcourse.show(tuned_bag_of_words_baseline)

# %% slideshow={"slide_type": "-"}
bag_of_words = tuned_bag_of_words_baseline(train, val)  # learning rate, steps: on val
val_texts = [t for t, _, _ in val]
val_y = torch.tensor([label for _, label, _ in val])
bow_val_auc = roc_auc(val_y, bag_of_words(val_texts))
print(f"bag of words, tuned ({bag_of_words.setting}):\n  validation ROC-AUC {bow_val_auc:.3f}, "
      f"test ROC-AUC {roc_auc(test_y, bag_of_words(test_texts)):.3f}")

# %% [markdown] slideshow={"slide_type": "subslide"}
# The keyword list finds some spoilers but raises many false alarms ("I won't say who
# dies") and misses spoilers without those words ("So Wren was working for Corvin all
# along"). A sequence model can learn which *combinations* matter: a character's name with
# a plot verb, a negation before "dies".
#
# ## Training
#
# Everything is in place. The loop below shuffles the training sentences, pads each
# minibatch with your `pad_batch`, and minimises the weighted cross-entropy with Adam.
# Now and then (often in the first epoch, then twice per pass over the data) it scores the
# **validation** sentences (`predict` returns P(spoiler)) and records their ROC-AUC: the
# **validation curve**. The training loss says
# how well the model fits the sentences it learns from; the validation curve says how well
# it does on sentences it has not seen, and it is what decides when to stop: we keep the
# weights of the best validation point (**early stopping**). The test sentences stay
# untouched until the end.

# %% slideshow={"slide_type": "-"}
def make_batches(data, batch_size: int, shuffle: bool, generator=None):
    """Yield (ids, lengths, labels) minibatches of (text, label, review_id) triples."""
    order = torch.randperm(len(data), generator=generator) if shuffle else range(len(data))
    order = list(order)
    for start in range(0, len(order), batch_size):
        chunk = [data[int(i)] for i in order[start:start + batch_size]]
        ids, lengths = pad_batch([encode(t) for t, _, _ in chunk], PAD)
        yield ids, lengths, torch.tensor([float(label) for _, label, _ in chunk])


@torch.no_grad()
def predict(texts: list[str]) -> torch.Tensor:
    """P(spoiler) for each sentence."""
    model.eval()
    out = []
    for start in range(0, len(texts), 512):
        ids, lengths = pad_batch([encode(t) for t in texts[start:start + 512]], PAD)
        out.append(torch.sigmoid(model(ids.to(device), lengths)).cpu())
    model.train()
    return torch.cat(out)


# %% slideshow={"slide_type": "-"}
lmcourse.seed_everything(0)
model = SpoilerLSTM(len(vocab), embed_dim=32, hidden_size=lmcourse.budget(cpu=32, gpu=64),
                    pad_id=PAD).to(device)
train_y = torch.tensor([label for _, label, _ in train])
loss_fn = nn.BCEWithLogitsLoss(pos_weight=torch.tensor(positive_weight(train_y), device=device))
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
epochs = lmcourse.budget(cpu=3, gpu=10)
shuffler = torch.Generator().manual_seed(0)
steps_per_epoch = -(-len(train) // 64)
losses, curve, best = [], [], (0.0, None)  # curve: (minibatch, validation AUC)
start, seen = time.perf_counter(), 0

# %% slideshow={"slide_type": "-"}
for epoch in range(epochs):
    for step, (ids, lengths, y) in enumerate(make_batches(train, 64, shuffle=True,
                                                          generator=shuffler)):
        loss = loss_fn(model(ids.to(device), lengths), y.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        seen += len(y)
        # often while it learns fast (first epoch), then twice per epoch
        if (epoch == 0 and step + 1 in (10, 25, 50, 100, 200)) or step + 1 in (
                steps_per_epoch // 2, steps_per_epoch):
            curve.append((len(losses), roc_auc(val_y, predict(val_texts))))
            if curve[-1][1] > best[0]:
                best = (curve[-1][1], {k: v.clone() for k, v in model.state_dict().items()})
    print(f"epoch {epoch + 1}: mean loss of the last 100 minibatches "
          f"{sum(losses[-100:]) / 100:.3f}; validation ROC-AUC {curve[-1][1]:.3f} "
          f"({seen / (time.perf_counter() - start):,.0f} sentences/s)")

# %% slideshow={"slide_type": "-"}
model.load_state_dict(best[1])
print(f"kept the weights of the best validation point: ROC-AUC {best[0]:.3f} after "
      f"{curve[[a for _, a in curve].index(best[0])][0]} minibatches")

# %% slideshow={"slide_type": "-"}
fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 3.5))
ax.plot(losses, lw=0.5, alpha=0.5, label="minibatch")
smooth = torch.tensor(losses).unfold(0, 50, 1).mean(1)
ax.plot(range(49, len(losses)), smooth, label="mean of 50")
ax.set_xlabel("minibatch")
ax.set_ylabel(f"weighted BCE (pos_weight {positive_weight(train_y):.1f})")
ax.set_title("training loss")
ax.legend()
ax2.plot(*zip(*curve, strict=True), marker="o", label="BiLSTM")
ax2.axhline(bow_val_auc, color="C2", ls="--", label=f"bag of words ({bow_val_auc:.3f})")
keyword_val_auc = roc_auc(val_y, check.keyword_scores(val_texts))
ax2.axhline(keyword_val_auc, color="C3", ls=":", label=f"keywords ({keyword_val_auc:.3f})")
ax2.set_xscale("log")
ax2.set_xlabel("minibatch (log scale)")
ax2.set_ylabel("validation ROC-AUC")
ax2.set_title("validation curve")
ax2.legend(loc="lower right")
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Evaluation
#
# `predict` returns P(spoiler) for a list of sentences. The F1 threshold is chosen where F1
# is highest on the **validation** sentences, then applied unchanged to the test sentences
# (choosing it on the test set would flatter the model). With a weighted loss the best
# threshold is usually well above 0.5: the weight pushed all probabilities up.

# %% slideshow={"slide_type": "-"}
val_scores, test_scores = predict(val_texts), predict(test_texts)
threshold, val_f1 = metrics.best_threshold(val_y, val_scores)
print(f"threshold {threshold:.3f} (validation F1 {val_f1:.3f})")
print(f"test: ROC-AUC {roc_auc(test_y, test_scores):.3f}, "
      f"F1 {f1(test_y, test_scores >= threshold):.3f}")

# %% slideshow={"slide_type": "-"}
fig, ax = plt.subplots(figsize=(7, 3.5))
for name, scores in (("BiLSTM", test_scores), ("keyword baseline", keyword)):
    fpr, tpr = roc_curve(test_y, scores)
    ax.plot(fpr, tpr, label=f"{name} (AUC {roc_auc(test_y, scores):.3f})")
ax.plot([0, 1], [0, 1], color="grey", ls=":", label="majority class / chance (AUC 0.5)")
ax.set_xlabel("false-positive rate  FP / n-")
ax.set_ylabel("true-positive rate  TP / n+")
ax.set_title("ROC curves on the test sentences")
ax.legend(loc="lower right")
ax.set_aspect("equal")
plt.show()

# %% [markdown] slideshow={"slide_type": "subslide"}
# The check recomputes everything with the course's reference metrics: the majority,
# keyword and bag-of-words baselines on the test sentences, and your model's AUC and F1
# (each threshold chosen on validation). It passes when the model beats the keyword
# baseline by at least 0.1 in both; the bag-of-words row, with a bootstrap interval of the
# AUC difference, says whether word order and context bought anything on this data.

# %% slideshow={"slide_type": "-"} tags=["check"]
results = check.beats_baselines(predict, val, test,
                                 baselines={"tuned bag of words": bag_of_words})
# q07: 1 point

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The same weights in the course's own LSTM
#
# `lmcourse.models.gated.LSTM` (chapter 03) has `torch.nn.LSTM`'s parameter names and
# outputs, so the trained weights load into it unchanged. It knows nothing about packing,
# so we feed it one unpadded sentence at a time: the logits must agree.

# %% slideshow={"slide_type": "-"}
from lmcourse.models.gated import LSTM

ours = LSTM(model.lstm.input_size, model.lstm.hidden_size, batch_first=True,
            bidirectional=True)
ours.load_state_dict(model.lstm.state_dict())
model.cpu()
worst = 0.0
with torch.no_grad():
    for text in test_texts[:50]:
        x = model.embedding(torch.tensor([encode(text)]))
        _, (h_n, _) = ours(x)
        logit = model.head(torch.cat([h_n[-2], h_n[-1]], dim=-1)).squeeze()
        ids, lengths = pad_batch([encode(text)], PAD)
        worst = max(worst, abs(float(logit - model(ids, lengths)[0])))
model.to(device)
print(f"max |our LSTM - nn.LSTM| over 50 test sentences = {worst:.1e}  (tolerance 1e-5)")
assert worst < 1e-5

# %% [markdown] slideshow={"slide_type": "slide"}
# ## What does it still get wrong?
#
# The most confident mistakes on the test set. Some are the model's fault; many are the
# labels': reactions tagged inside a spoiler span, spoilers a reviewer forgot to hide.
# Nothing reaches 100% here, on real data even less so.

# %% slideshow={"slide_type": "-"}
wrong = [(float(s), label, t) for s, label, t in zip(test_scores, test_y.tolist(), test_texts,
                                                     strict=True)
         if (s >= threshold) != bool(label)]
for kind, flag in (("false alarms", 0), ("missed spoilers", 1)):
    worst_cases = sorted((w for w in wrong if w[1] == flag), key=lambda w: w[0],
                         reverse=not flag)[:4]
    print(f"{kind} ({sum(w[1] == flag for w in wrong)}):")
    for s, _, t in worst_cases:
        print(f"   P = {s:.2f}  {t}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - Sentence-level spoiler detection is a **rare-class** problem: about 3% of sentences,
#   6.5% of reviews. Accuracy rewards the useless majority answer; F1 (on the positive
#   class) and ROC-AUC do not.
# - A minibatch of sentences is **padded** to one length; **packing** tells the LSTM the
#   real lengths, so the forward direction ends, and the backward direction starts, at
#   the real last word. Without it the scores depend on the batch.
# - A **bidirectional** LSTM summarises a sentence by its forward state after the last
#   word and its backward state after the first.
# - The **positive-class weight** $n_-/n_+$ in the cross-entropy keeps the model from
#   collapsing to "never"; choose the decision threshold on validation data.
# - ROC-AUC is threshold-free and equals P(a random positive outranks a random negative);
#   it needs scores, not hard predictions.
# - The **validation curve** (the metric on held-out sentences during training) decides
#   when to stop; the test set is scored once, at the end.
# - A model is judged beside the strongest simple baseline: here a **bag-of-words**
#   logistic regression, which ignores word order. The check's table and its bootstrap
#   interval say whether the BiLSTM's order and context bought anything on this data.
#
# ## Going further
#
# 1. *(easy)* Train with `pos_weight = 1`. What happens to the loss, the AUC, the best
#    threshold, and the F1 at threshold 0.5?
# 2. *(easy)* Split by book instead (`split_reviews(reviews, by="book_id")`): the test
#    books' characters and plots are then new. How much do AUC and F1 drop? Why?
# 3. *(medium)* Spoilers sit late in a review. Add the sentence's relative position in its
#    review as a feature (concatenate it to the LSTM summary before `head`). Does it help?
# 4. *(medium)* A neural bag of words: average the embeddings instead of running the LSTM
#    (an `nn.EmbeddingBag` and a linear layer). Compare it with the count-based bag of words
#    and the BiLSTM in the check's table; why might word order matter more on real reviews
#    than on this generated sample?
# 5. *(harder)* Wan et al.'s SpoilerNet reads the **whole review**: a second, sentence-level
#    BiGRU runs over the sentence vectors, so each sentence sees its neighbours. Build it
#    and compare sentence-level AUC.
# 6. *(harder)* Download the real data (`download_reviews`, see `data/README.md`), train on
#    the first 100,000 reviews and compare with this sample.
#
# ## References
#
# - Mengting Wan, Rishabh Misra, Ndapa Nakashole, Julian McAuley. *Fine-grained spoiler
#   detection from large-scale review corpora.* ACL 2019.
# - Sepp Hochreiter, Jürgen Schmidhuber. *Long short-term memory.* Neural Computation, 1997.
# - Mike Schuster, Kuldip K. Paliwal. *Bidirectional recurrent neural networks.* IEEE
#   Transactions on Signal Processing, 1997.
# - Tom Fawcett. *An introduction to ROC analysis.* Pattern Recognition Letters, 2006.
# - Allen Bao, Marshall Ho, Saarthak Sangamnerkar. *Spoiler alert: using natural language
#   processing to detect spoilers in book reviews.* arXiv:2102.03882, 2021.

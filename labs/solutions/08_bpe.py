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
# # Lab 08 · Byte-pair encoding from scratch
#
# Chapter 08 learned a subword vocabulary with byte-pair encoding (BPE; Sennrich, Haddow
# and Birch, 2016): start from characters, and again and again merge the two neighbouring
# symbols that occur together most often. Here you write it yourself:
#
# 1. **pair counts**: how often each pair of neighbouring symbols occurs, weighted by how
#    often its word occurs;
# 2. **one merge**: replace every occurrence of a pair in a word by the joined symbol;
# 3. **training**: count, merge the most frequent pair everywhere, repeat;
# 4. **encoding** a word the training never saw, by replaying the merges.
#
# **What to expect.** Every check asks for chapter 08's answers exactly: your merges must
# equal its `train_bpe`'s, ties included, and the last check passes when your `encode`
# segments 8 words (unseen characters included) as its `apply_bpe` does. On the Lee corpus
# your first merges are short frequent pieces (*th*, *in*, *the*, ...) and the last of 300
# are whole words and suffixes (*nation*, *into*, *ated*); the final figure shows the
# symbols per word falling faster on the training words than on unseen ones. The whole lab
# runs in under a minute on a laptop CPU; its run card (the folded line below) gives the
# time it measured.
#
# After each exercise, run the check cell below it. A check computes the right answer with
# chapter 08's `lmcourse.tokenizers.bpe` and, when yours differs, says which typical
# mistake it recognises (a pair counted once per word, the first occurrence merged only,
# counts never updated, ties broken alphabetically, greedy longest match, ...). Each
# exercise has two hints, folded: open the first when you are stuck, the second if you
# still are.
#
# Conventions: a **segmentation** is a dict `{(s_1, ..., s_n): count}` from a word's
# current symbols to how often the word occurs; a **pair** is a tuple `(a, b)`; the merges
# are a list of pairs in the order they were learned. Fill in the places that say
# `raise NotImplementedError`.

# %% [markdown] slideshow={"slide_type": "skip"} tags=["run-card"]
# <details><summary>Run card: 19 s on a CPU, 381.3 MB of memory; GPU: not measured yet</summary>
#
# - **Time on a CPU:** 19 s normalised to the reference machine: 27 s wall on Intel(R) Xeon(R)
#   Processor, one torch thread, calibration 0.691 s against 0.482 s.
# - **Time on a GPU:** not measured yet.
# - **Peak memory:** 381.3 MB (the kernel's resident set).
# - **Last passed:** 2026-11-29, commit `8de5aec-dirty` (nbval, as `make test` runs it).
# - **Files read (1):**
#   - `gensim test data/lee_background.cor` (360.1 KB)
#
# Measured by the test run (`python -m tools.runcards`), not typed.
# </details>

# %% [markdown] slideshow={"slide_type": "skip"} tags=["grading"]
# ### How this lab is graded
#
# Each check cell below is a question of the autograder (4 points in all), and ends with its
# name and points (`# q01: 1 point`).
#
# | question | your code it grades | also needs exercise | points |
# |---|---|---|---|
# | q01 · exercise 1 | `pair_counts` | – | 1 |
# | q02 · exercise 2 | `merge` | – | 1 |
# | q03 · exercise 3 | `learn_bpe` | 1, 2 | 1 |
# | q04 · exercise 4 | `encode` | 2 | 1 |
#
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
from collections import Counter

import matplotlib.pyplot as plt

from lmcourse.checks import bpe as check
from lmcourse.data import load_corpus, tokenize

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 1: pair counts
#
# With $s^{(w)}$ the current symbols of word $w$ and $c(w)$ its count, the frequency of a
# pair is
#
# $$f(a, b) = \sum_w c(w)\;\#\{i : s^{(w)}_i = a,\ s^{(w)}_{i+1} = b\}.$$
#
# Count *occurrences*: "l o l o" holds `("l", "o")` twice. Pairs never cross from one word
# to the next. Return a `Counter`; build it word by word, left to right, so that its order
# is the order the pairs were first seen (exercise 3 needs that for ties).
#
# <details><summary>Hint 1</summary>
#
# This is step 3 of chapter 08's section "Byte-pair encoding, step by step", the equation
# for $f(a, b)$: every occurrence of a pair inside a word adds that word's count, so a word
# seen 5 times adds 5 for each of its neighbouring pairs.
#
# </details>
#
# <details><summary>Hint 2</summary>
#
# Two nested loops: over the `(symbols, count)` items of the segmentation, then over the
# neighbouring pairs of `symbols` (a sequence of $n$ symbols has $n - 1$ of them: pair the
# sequence with itself shifted by one, e.g. with `zip`). Add `count` to each pair's entry;
# a `Counter` starts every new key at 0 and remembers the order keys first appeared in.
#
# </details>

# %% slideshow={"slide_type": "-"}
def pair_counts(segmentation):
    """{(a, b): f(a, b)} over the neighbouring symbols of every word."""
    # BEGIN SOLUTION
    counts = Counter()
    for symbols, count in segmentation.items():
        for pair in zip(symbols[:-1], symbols[1:], strict=False):
            counts[pair] += count
    return counts
    # END SOLUTION


# %% slideshow={"slide_type": "-"} tags=["check"]
check.pair_counts(pair_counts)
# q01: 1 point

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 2: one merge
#
# Merging `(a, b)` replaces every `a` directly followed by `b` with one symbol `a + b`.
# Walk the symbols **left to right**, and after a merge skip both: "a a a" with `("a",
# "a")` becomes "aa a". Compare whole symbols, not characters: in "ab c" there is no
# pair `("a", "bc")`.
#
# <details><summary>Hint 1</summary>
#
# Step 4 of chapter 08's section "Byte-pair encoding, step by step": the merged pair
# becomes one new symbol wherever it occurs. A left-to-right scan that consumes both
# symbols of a match is what decides overlaps, so "a a a" gives "aa a".
#
# </details>
#
# <details><summary>Hint 2</summary>
#
# Build a new list while an index walks the old one (a `while` loop, since the step is
# sometimes 1 and sometimes 2): if the symbol at the index equals `a` and a next symbol
# exists and equals `b`, append the joined string and move on by two; otherwise append the
# symbol as it is and move on by one.
#
# </details>

# %% slideshow={"slide_type": "-"}
def merge(symbols, a, b):
    """The list of symbols with every occurrence of a b (left to right) replaced by a+b."""
    # BEGIN SOLUTION
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b:
            out.append(a + b)
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out
    # END SOLUTION


# %% slideshow={"slide_type": "-"} tags=["check"]
check.merge(merge)
# q02: 1 point

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 3: learning the merges
#
# Start with every word split into characters. Then, `num_merges` times: count the pairs
# (exercise 1), take the most frequent, merge it in **every** word (exercise 2), and record
# it. Count again after each merge: merging `("s", "t")` creates pairs like `("e", "st")`
# that did not exist before. Stop early when no pair is left (every word is one symbol).
#
# **Ties.** Two pairs often have the same count. Take the one **seen first**: the first
# maximal pair in your counter's order.
#
# <details><summary>Hint 1</summary>
#
# The loop of chapter 08's section "Byte-pair encoding, step by step" (steps 3 and 4,
# repeated), with the tie rule of its section "Ties, and why the rule matters". The counts
# must come from the segmentation as it is *now*, after every earlier merge.
#
# </details>
#
# <details><summary>Hint 2</summary>
#
# Keep a segmentation: a dict from each word's symbols (a tuple of its characters at the
# start, since a dict key cannot be a list) to the word's count. Each round: your
# `pair_counts`; stop if it is empty; pick the pair with the largest count (Python's `max`
# with a `key` function returns the first of equal keys, in iteration order); rebuild the
# dict with your `merge` applied to every key (turned back into a tuple); append the pair.
#
# </details>

# %% slideshow={"slide_type": "-"}
def learn_bpe(word_counts, num_merges):
    """The merges [(a, b), ...] learned from {word: count}, in order."""
    # BEGIN SOLUTION
    segmentation = {tuple(word): count for word, count in word_counts.items()}
    merges = []
    for _ in range(num_merges):
        counts = pair_counts(segmentation)
        if not counts:
            break
        a, b = max(counts, key=counts.get)
        segmentation = {tuple(merge(list(s), a, b)): c for s, c in segmentation.items()}
        merges.append((a, b))
    return merges
    # END SOLUTION


# %% slideshow={"slide_type": "-"} tags=["check"]
check.learn_bpe(learn_bpe)
# q03: 1 point

# %% [markdown] slideshow={"slide_type": "-"}
# On real text: the words of the Lee corpus (chapter 04's news sentences), 300 merges.
# The first merges are frequent short pieces; later ones are whole words.

# %% slideshow={"slide_type": "-"}
corpus_counts = Counter(w for line in load_corpus("lee") for w in tokenize(line))
merges = learn_bpe(dict(corpus_counts), 300)
print("first 12:", [a + b for a, b in merges[:12]])
print("last 8:  ", [a + b for a, b in merges[-8:]])

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 4: encoding a new word
#
# A word never seen in training is segmented by **replaying** the merges: start from its
# characters and, while any neighbouring pair is one of the merges, merge the pair that
# was learned **earliest** (the lowest index in `merges`). Characters that no merge
# mentions stay single symbols, so no word is ever unknown. (Applying each merge in
# learned order, one after the other, gives the same result.)
#
# <details><summary>Hint 1</summary>
#
# Chapter 08's section "Segmenting a word BPE has never seen": a merge's **rank** is its
# position in the list, and the word is built up in the same order as during training.
# Matching the longest known piece from the left is a different algorithm, and gives
# different pieces.
#
# </details>
#
# <details><summary>Hint 2</summary>
#
# First a dict from each pair to its rank (if a pair appears twice, keep its first rank).
# Then start from the list of the word's characters and loop: collect its neighbouring
# pairs that have a rank; if there are none, stop; otherwise merge the one with the lowest
# rank (`min` with a `key`) using your `merge`. Return the list of symbols.
#
# </details>

# %% slideshow={"slide_type": "-"}
def encode(word, merges):
    """The symbols of word after replaying merges, earliest learned first."""
    # BEGIN SOLUTION
    rank = {pair: i for i, pair in reversed(list(enumerate(merges)))}
    symbols = list(word)
    while len(symbols) > 1:
        candidates = [p for p in zip(symbols[:-1], symbols[1:], strict=False) if p in rank]
        if not candidates:
            break
        a, b = min(candidates, key=rank.get)
        symbols = merge(symbols, a, b)
    return symbols
    # END SOLUTION


# %% slideshow={"slide_type": "-"} tags=["check"]
check.encode(encode)
# q04: 1 point

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Putting it together: how many merges?
#
# Each merge adds one symbol to the vocabulary and shortens the words that contain it.
# Below, the Lee corpus's words are split 90/10 by their first occurrence; the merges are
# learned on the first part, and both parts are encoded with the first 0, 50, ..., 300
# merges. The number of symbols per word falls fast on the training words and more slowly
# on words the training never saw, which is why real vocabularies use tens of thousands of
# merges (GPT-2 50,000; chapter 08).

# %% slideshow={"slide_type": "-"}
words = list(corpus_counts)
seen, unseen = words[:int(0.9 * len(words))], words[int(0.9 * len(words)):]
learned = learn_bpe({w: corpus_counts[w] for w in seen}, 300)
sizes = list(range(0, 301, 50))


def symbols_per_word(word_list, n):
    total = sum(corpus_counts[w] * len(encode(w, learned[:n])) for w in word_list)
    return total / sum(corpus_counts[w] for w in word_list)


fig, ax = plt.subplots(figsize=(6, 3))
for name, part in (("training words", seen), ("unseen words", unseen)):
    ax.plot(sizes, [symbols_per_word(part, n) for n in sizes], marker="o", label=name)
ax.set(xlabel="merges", ylabel="symbols per word (token-weighted)")
ax.legend()
fig.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# **To go further.** Chapter 08's `train_bpe` produces the same merges as your
# `learn_bpe` but updates the counts incrementally (only the words that contain the
# merged pair change), which is what makes 50,000 merges affordable; its
# `tie_break="ids"` reproduces Hugging Face `tokenizers` exactly. Time both on the Lee
# corpus with 1,000 merges.

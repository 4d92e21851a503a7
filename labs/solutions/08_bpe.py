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
# After each exercise, run the check cell below it. A check computes the right answer with
# chapter 08's `lmcourse.tokenizers.bpe` and, when yours differs, says which typical
# mistake it recognises (a pair counted once per word, the first occurrence merged only,
# counts never updated, ties broken alphabetically, greedy longest match, ...).
#
# Conventions: a **segmentation** is a dict `{(s_1, ..., s_n): count}` from a word's
# current symbols to how often the word occurs; a **pair** is a tuple `(a, b)`; the merges
# are a list of pairs in the order they were learned. Fill in the places that say
# `raise NotImplementedError`.

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


# %% tags=["check"] slideshow={"slide_type": "-"}
check.pair_counts(pair_counts)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 2: one merge
#
# Merging `(a, b)` replaces every `a` directly followed by `b` with one symbol `a + b`.
# Walk the symbols **left to right**, and after a merge skip both: "a a a" with `("a",
# "a")` becomes "aa a". Compare whole symbols, not characters: in "ab c" there is no
# pair `("a", "bc")`.

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


# %% tags=["check"] slideshow={"slide_type": "-"}
check.merge(merge)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercise 3: learning the merges
#
# Start with every word split into characters. Then, `num_merges` times: count the pairs
# (exercise 1), take the most frequent, merge it in **every** word (exercise 2), and record
# it. Count again after each merge: merging `("s", "t")` creates pairs like `("e", "st")`
# that did not exist before. Stop early when no pair is left (every word is one symbol).
#
# **Ties.** Two pairs often have the same count. Take the one **seen first**: the first
# maximal pair in your counter's order (`max(counts, key=counts.get)` does exactly that,
# since `max` keeps the first of equal keys).

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


# %% tags=["check"] slideshow={"slide_type": "-"}
check.learn_bpe(learn_bpe)

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


# %% tags=["check"] slideshow={"slide_type": "-"}
check.encode(encode)

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

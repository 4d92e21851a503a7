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
# # 4c · Word vectors, tested: neighbours, analogies and the standard benchmarks
#
# Chapter 04 counted, chapter 4b predicted: we now hold eight kinds of word vectors for the
# same 8,087 words, from TF-IDF and PPMI with an SVD to GloVe, CBOW and skip-gram, ours and
# gensim's. Which are good? This chapter asks the questions the field asks: who are a word's
# nearest neighbours, does *Cairo : Egypt :: Rome : ?* come out as *Italy*, and how well
# do the cosines follow people's judgements of similarity. It reads the vectors chapter 4b
# trained (stored with the course: nothing is retrained here) and rebuilds chapter 04's.
#
# By the end of it you will be able to
#
# - find nearest neighbours and answer analogies with **3CosAdd**, and say why the famous
#   analogies need far more text than we have;
# - judge a cosine against the cosines of random word pairs, not against 0;
# - evaluate embeddings on **WordSim-353, SimLex-999 and the analogy questions**, reporting
#   coverage, and rank methods only by gaps larger than their seed spreads;
# - compare our skip-gram with gensim's honestly: neighbour agreement measured against
#   gensim's agreement with itself, and the time each took.

# %% [markdown] slideshow={"slide_type": "skip"} tags=["run-card"]
# <details><summary>Run card: 13 s on a CPU, 842.7 MB of memory; GPU: not measured yet</summary>
#
# - **Time on a CPU:** 13 s normalised to the reference machine: 21 s wall on Intel(R) Xeon(R)
#   Processor, one torch thread, calibration 0.739 s against 0.482 s.
# - **Time on a GPU:** not measured yet.
# - **Peak memory:** 842.7 MB (the kernel's resident set).
# - **Last passed:** 2026-11-29, commit `8de5aec` (nbval, as `make test` runs it).
# - **Files read (9):**
#   - `course cache/glove-3a61012af2db3b1d.safetensors` (6.5 MB)
#   - `course cache/glove-6a29dee8a5509e31.safetensors` (6.5 MB)
#   - `course cache/glove-f29513481270991b.safetensors` (6.5 MB)
#   - `course cache/word2vec-c2b9478024278d1f.safetensors` (51.8 MB)
#   - `gensim test data/head500.noblanks.cor` (2.3 MB)
#   - `gensim test data/lee_background.cor` (360.1 KB)
#   - `gensim test data/questions-words.txt` (604.0 KB)
#   - `gensim test data/simlex999.txt` (18.1 KB)
#   - `gensim test data/wordsim353.tsv` (7.2 KB)
#
# Measured by the test run (`python -m tools.runcards`), not typed.
# </details>

# %% slideshow={"slide_type": "-"}
import time

import matplotlib.pyplot as plt
import numpy as np
from gensim.parsing.porter import PorterStemmer

import lmcourse
from lmcourse import show
from lmcourse.data import WordCorpus, load_corpus, tokenize
from lmcourse.metrics import mean_spread

# %% slideshow={"slide_type": "-"}
from lmcourse.models.embeddings import (
    analogy,
    analogy_accuracy,
    analogy_ranks,
    cooccurrence,
    cosine_similarity,
    load_analogies,
    load_word_pairs,
    most_similar,
    neighbour_agreement,
    ppmi,
    rho_gap_interval,
    svd_embeddings,
    term_document,
    tfidf,
    word_similarity,
)
from lmcourse.viz.embeddings import neighbours_widget, plot_projections

# %% slideshow={"slide_type": "-"}
lmcourse.seed_everything(0)
dev = lmcourse.device()
clock = time.perf_counter if lmcourse.on_gpu() else time.process_time  # CPU seconds on a CPU

# chapter 04's corpus and count-based vectors, rebuilt (a few seconds)
documents = [tokenize(doc) for doc in load_corpus("text8")]
corpus = WordCorpus.from_documents(documents, min_count=5)
V, window, dim, seeds = len(corpus), 5, 100, (0, 1, 2)
X = cooccurrence(corpus.docs, V, window=window)
timings, vectors = {}, {}
for name, weigh in [("PPMI + SVD", lambda: ppmi(X, 0.75)),
                    ("TF-IDF + SVD (LSA)", lambda: tfidf(term_document(corpus.docs, V)))]:
    start = clock()
    vectors[name] = svd_embeddings(weigh(), dim)
    timings[name] = clock() - start

# %% slideshow={"slide_type": "-"}
# chapter 4b's trained vectors: ours (seed 0) and gensim's word2vec (3 seeds), GloVe (3 seeds)
from lmcourse.course import artifacts

runs = artifacts.text8_word2vec(corpus, documents, seeds=seeds, dim=dim, device=dev)
X_glove = cooccurrence(corpus.docs, V, window, weighting="harmonic")
runs["GloVe (ours)"] = artifacts.text8_glove(X_glove, corpus.words, seeds=seeds, dim=dim,
                                                 device=dev)
seed_vectors = {name: [r.vectors for r in rs] for name, rs in runs.items() if len(rs) > 1}
for name, rs in runs.items():
    vectors[name], timings[name] = rs[0].vectors, float(np.mean([r.seconds for r in rs]))
    print(f"{name:>18}: {len(rs)} run{'s' * (len(rs) > 1)}, {timings[name]:5.1f} s of "
          "training each (as measured when trained)")
vectors["gensim skip-gram, seed 1"] = seed_vectors["gensim skip-gram"][1]

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Nearest neighbours and analogies
#
# The nearest neighbours of a word are the words with the largest cosine, never the word
# itself. An **analogy** $a : b :: c : ?$ ("Cairo is to Egypt as Rome is to ?") is answered
# by vector arithmetic (Mikolov, Yih & Zweig, 2013): the offset $b - a$ (capital → country)
# is added to $c$, and we look for the word closest to the result. On unit vectors this is
# **3CosAdd** (Levy & Goldberg, 2014),
#
# $$d^\ast = \arg\max_{x \notin \{a, b, c\}} \cos(x,\; b - a + c).$$
#
# Excluding the three query words is essential: $b - a + c$ is usually closest to $b$ or $c$
# themselves, and the published accuracies all exclude them.

# %% slideshow={"slide_type": "-"}
show(most_similar)
show(analogy)

# %% slideshow={"slide_type": "-"}
shown = ["PPMI + SVD", "GloVe (ours)", "CBOW (ours)", "skip-gram (ours)", "gensim skip-gram"]
for word in ("king", "januari", "church", "blue"):
    print(f"--- {word}")
    for name in shown:
        print(f"{name:>17}:", ", ".join(w for w, _ in most_similar(vectors[name], corpus.words,
                                                                    word, 6)))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### How similar is similar?
#
# The neighbours of `king` have large cosines in the skip-gram embedding (the widget below
# prints them). Is that high?
# Compare with the cosine of **random pairs of words**: trained word vectors are not random
# directions. Skip-gram's vectors in particular crowd into a narrow cone, a side effect of
# negative sampling (Mimno & Thompson, 2017), so even unrelated words have a large positive
# cosine. The honest baseline for "similar" is this distribution, and it differs from method
# to method; it is not 0.

# %% slideshow={"slide_type": "-"}
rng = np.random.default_rng(0)
pairs = rng.integers(0, V, size=(5000, 2))
pairs = pairs[pairs[:, 0] != pairs[:, 1]]
fig, ax = plt.subplots(figsize=(7, 3.4))
gauss = cosine_similarity(*rng.standard_normal((2, len(pairs), dim)))
ax.hist(gauss, bins=60, density=True, histtype="step", lw=1.5, color="k",
        label=f"random Gaussian vectors (mean {gauss.mean():+.2f})")
for name in ("PPMI + SVD", "GloVe (ours)", "skip-gram (ours)", "gensim skip-gram"):
    cos = cosine_similarity(vectors[name][pairs[:, 0]], vectors[name][pairs[:, 1]])
    ax.hist(cos, bins=60, density=True, alpha=0.45, label=f"{name} (mean {cos.mean():+.2f})")
ax.set_xlabel("cosine similarity of two random words")
ax.set_ylabel("density")
ax.legend(fontsize=7)
ax.set_title(f"Unrelated words are not orthogonal in a trained embedding (d = {dim})",
             fontsize=10)
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# **Check** that the query words are excluded, on a constructed case where $b - a + c$ is
# exactly $c$'s direction (so without the exclusion, $c$ would be the answer):

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
toy_words = ["a", "b", "c", "d", "e"]
toy_vectors = np.array([[1, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0.9, 0.1], [0, 0, 1]], float)
for label, hits in [("a : b :: c : ?", analogy(toy_vectors, toy_words, "a", "b", "c", k=2)),
                    ("neighbours of b", most_similar(toy_vectors, toy_words, "b", k=2))]:
    print(f"{label:>15} ->", ", ".join(f"{w} ({s:.3f})" for w, s in hits))
assert analogy(toy_vectors, toy_words, "a", "b", "c")[0][0] == "d"
assert "b" not in [w for w, _ in most_similar(toy_vectors, toy_words, "b", k=4)]

# %% [markdown] slideshow={"slide_type": "slide"}
# ### Cairo : Egypt :: Rome : Italy, on 300 thousand words
#
# This classic analogy needs the four words to be in the vocabulary (stemmed here: *italy*
# is `itali`) and, more importantly, needs each of them to have been seen often enough, in
# enough different contexts, for its vector to encode "capital of" and "country". How often
# do they occur?

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
stem = PorterStemmer().stem
quad = [stem(w) for w in ("Cairo", "Egypt", "Rome", "Italy")]
print("stemmed:", quad)
print("counts :", {w: int(corpus.counts[corpus.index[w]]) for w in quad})
capitals = [q for q in load_analogies() if q[0] == "capital-common-countries"]
print(f"in Mikolov et al.'s test set there are {len(capitals)} capital-country questions")

# %% slideshow={"slide_type": "-"}
for name in shown:
    answers = analogy(vectors[name], corpus.words, *quad[:3], k=3)
    ranks, _ = analogy_ranks(vectors[name], corpus.words, [("", *quad)])
    print(f"{name:>17}: cairo : egypt :: rome : " + ", ".join(w for w, _ in answers)
          + f"   (rank of 'itali': {ranks[0]} of {V - 3})")

# %% [markdown] slideshow={"slide_type": "-"}
# `cairo` occurs 7 times in the whole corpus: its vector is little more than noise, and the
# offset *egypt − cairo* is mostly noise too. The embeddings that made this example famous
# were trained on hundreds of millions to billions of words (Mikolov et al., 2013a used a
# 6-billion-word Google News corpus for their best models), where every capital and country
# occurs thousands of times. What our small corpus *can* do is neighbourhoods of frequent
# words, as above, and a few analogies among frequent words. Explore them with the widget
# (it needs a live kernel; the static figure shows the default query):

# %% slideshow={"slide_type": "-"}
explore = {name: vectors[name] for name in shown}
choices = sorted(corpus.words[:2000])
neighbours_widget(explore, corpus.words, choices, query="king",
                  analogy_of=("cairo", "egypt", "rome"))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## A picture: two dimensions out of a hundred
#
# A projection onto the first two principal components of a handful of words shows the
# structure the vectors learned: words of the same kind (months, family, colours,
# countries) gather. Keep in mind that 2 of 100 dimensions hide most of the geometry; the
# cosines above, computed in all 100, are what counts.

# %% slideshow={"slide_type": "-"}
groups = {
    "months": ["januari", "februari", "march", "april", "june", "juli", "august"],
    "family": ["father", "mother", "son", "daughter", "brother", "sister"],
    "colours": ["red", "blue", "green", "white", "black"],
    "countries": ["egypt", "itali", "franc", "germani", "greec", "england"],
}
plot_projections({name: vectors[name] for name in ("PPMI + SVD", "skip-gram (ours)")},
                 corpus.words, groups)
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Intrinsic evaluation
#
# Three standard tests, all shipped with gensim:
#
# - **WordSim-353** (Finkelstein et al., 2002): 353 word pairs scored 0-10 by people for
#   similarity *or relatedness* (*cup* and *coffee* are related, so they score high);
# - **SimLex-999** (Hill, Reichart & Korhonen, 2015): 999 pairs scored for *similarity*
#   only (antonyms such as *old, new* score low, although they share contexts), a harder
#   test for distributional vectors;
# - Mikolov et al.'s (2013a) **analogy questions**: 19,544 questions $a : b :: c : d$ in 14
#   sections (capitals, currencies, family, plurals, tenses...).
#
# For similarity we report **Spearman's ρ** between the cosines and the human scores (only
# the ranking matters); for analogies the **accuracy** of 3CosAdd. Both can only use the
# items whose words are in our vocabulary, so we always report the **coverage**. Our text is
# stemmed, so the test words are stemmed with the same Porter stemmer. Stemming merges
# many analogy words (*walk : walks* becomes `walk : walk`): questions whose four stems are
# not distinct cannot be answered and are left out too.

# %% [markdown] slideshow={"slide_type": "-"}
# **How to read the tables below.** On a corpus of this size the similarity correlations
# are clearly above the random-vector row but well below the papers', and analogy accuracy is
# a few percent at best, gensim's included. Compare the methods with each other (with the
# seeds' spreads), and our skip-gram with gensim's through the neighbour agreement, beside
# gensim's agreement with itself under another seed.

# %% slideshow={"slide_type": "-"}
show(word_similarity)
show(analogy_ranks)
show(analogy_accuracy)
show(neighbour_agreement)

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
tests = {"WordSim-353": load_word_pairs("wordsim353.tsv"),
         "SimLex-999": load_word_pairs("simlex999.txt")}
questions = load_analogies()
for test, a, b in [("WordSim-353", "cup", "coffee"), ("SimLex-999", "old", "new"),
                   ("SimLex-999", "smart", "intelligent")]:
    print(f"{test}: {a}, {b} -> " + ", ".join(f"{s:.2f}" for x, y, s in tests[test]
                                               if (x, y) == (a, b)) + " of 10")
random_vectors = np.random.default_rng(0).standard_normal((V, dim)).astype(np.float32)
for test, items in tests.items():
    _, coverage, n = word_similarity(random_vectors, corpus.words, items, transform=stem)
    print(f"{test}: {n} of {len(items)} pairs in the vocabulary (coverage {coverage:.1%})")
_, coverage, n = analogy_accuracy(random_vectors, corpus.words, questions, transform=stem)
print(f"analogies: {n:,} of {len(questions):,} questions usable (coverage {coverage:.1%})")
without_stemming = analogy_accuracy(random_vectors, corpus.words, questions)[1]
print(f"(without stemming the test words, analogy coverage would be {without_stemming:.1%})")

# %% [markdown] slideshow={"slide_type": "-"}
# **Neighbour agreement.** Scores on such small test sets are noisy, so we also compare
# embeddings directly: for the 1,000 most frequent words, the mean overlap of their 10
# nearest neighbours in two embeddings. Two trainings of the *same* program with different
# seeds do not agree perfectly, so gensim's skip-gram against itself (seed 0 vs seed 1) is
# the ceiling for anyone's agreement with gensim.
#
# Everything in one table, computed in this run:

# %% slideshow={"slide_type": "-"}
vectors["random vectors"] = random_vectors
timings["random vectors"] = 0.0
reference = vectors["gensim skip-gram"]
probe = np.arange(1000)
ceiling = neighbour_agreement(vectors["gensim skip-gram, seed 1"], reference, probe)
order = ["random vectors", "TF-IDF + SVD (LSA)", "PPMI + SVD", "GloVe (ours)", "CBOW (ours)",
         "gensim CBOW", "skip-gram (ours)", "gensim skip-gram"]
deterministic = {"TF-IDF + SVD (LSA)", "PPMI + SVD"}  # the same numbers on every run


def similarity_scores(vec: np.ndarray) -> dict:
    return {key: word_similarity(vec, corpus.words, tests[test], stem)[0]
            for key, test in (("ws", "WordSim-353"), ("sl", "SimLex-999"))}


# %% slideshow={"slide_type": "-"}
results, per_seed = {}, {}
print(f"{'':>20} {'runs':>6} {'WS-353':>13} {'SimLex':>13} {'analogy':>8} {'agreement':>9}"
      f" {'of ceiling':>10} {'time':>6}")
for name in order:
    runs = seed_vectors.get(name, [vectors[name]])
    per_seed[name] = [similarity_scores(v) for v in runs]
    ranks = analogy_ranks(vectors[name], corpus.words, questions, stem)[0]  # seed 0 only
    results[name] = dict(per_seed[name][0], ranks=ranks, acc=float(np.mean(ranks == 1)),
                         agree=neighbour_agreement(vectors[name], reference, probe))
    n = "determ." if name in deterministic else f"{len(runs)} seed" + "s" * (len(runs) > 1)
    ws, sl = (mean_spread([r[k] for r in per_seed[name]]) if len(runs) > 1
              else f"{per_seed[name][0][k]:.3f}" for k in ("ws", "sl"))
    acc, agree = results[name]["acc"], results[name]["agree"]
    of_ceiling = "(ref.)" if name == "gensim skip-gram" else f"{agree / ceiling:.0%}"
    print(f"{name:>20} {n:>7} {ws:>13} {sl:>13} {acc:>8.1%} {agree:>9.3f} {of_ceiling:>10}"
          f" {timings[name]:>5.1f}s")
print("(mean ± half range over the seeds; analogy accuracy of seed 0; agreement: overlap of "
      "the 10 nearest neighbours of the 1,000 most frequent words with gensim skip-gram's "
      "seed 0, the reference (ref.), whose own row is 1 by definition; time: CPU seconds per "
      "run; for the trained methods, as measured when they were trained in chapter 4b)")

# %% [markdown] slideshow={"slide_type": "-"}
# The ranking on the two similarity tests, printed from the numbers above. A method counts
# as ahead of another only if the gap exceeds the sum of their seed spreads. Our skip-gram
# and CBOW take one seed each (to stay within the notebook's time budget: see the time
# column), so for them we borrow the spread of gensim's rows, which follow the same recipe;
# the two SVD methods are deterministic (spread 0).

# %% slideshow={"slide_type": "-"}
from lmcourse.course.claims import verdict

borrowed = {"skip-gram (ours)": "gensim skip-gram", "CBOW (ours)": "gensim CBOW"}
for test, key in (("WordSim-353", "ws"), ("SimLex-999", "sl")):
    stats = {name: (np.mean([r[key] for r in per_seed[name]]),
                    np.ptp([r[key] for r in per_seed[borrowed.get(name, name)]]) / 2)
             for name in order}
    ranked = sorted(stats, key=lambda m: -stats[m][0])
    print(f"{test}: " + " > ".join(f"{m} ({stats[m][0]:.3f})" for m in ranked[:5]))
    best, second = ranked[0], ranked[1]
    gap = stats[best][0] - stats[second][0]
    _, low, high = rho_gap_interval(vectors[best], vectors[second], corpus.words,
                                    tests[test], stem)  # seed 0 of each, pairs resampled
    beyond_seeds = gap > stats[best][1] + stats[second][1]
    clear = beyond_seeds and low > 0
    verdict(f"on {test}, {best} scores higher than every other method",
            [r[key] for r in per_seed[best]],
            baseline=(second, [r[key] for r in per_seed[second]]), higher_is_better=True,
            verdict="reproduced" if clear else "no difference", metric="Spearman rho",
            note=f"ahead by {gap:.3f}, {'more' if beyond_seeds else 'NOT more'} than their "
                 f"summed seed spreads ({stats[best][1] + stats[second][1]:.3f}, a one-seed "
                 "method's borrowed from gensim's row of the same recipe); over resampled "
                 f"word pairs the gap's 95% interval is [{low:+.3f}, {high:+.3f}]"
                 + ("" if low > 0 else ", which includes 0"))
    glove_rank = ranked.index("GloVe (ours)") + 1
    print(f"  GloVe (ours) ranks {glove_rank} of {len(ranked)}, trained until flat "
          f"({mean_spread([r[key] for r in per_seed['GloVe (ours)']])}, mean ± half range)")

# %% slideshow={"slide_type": "-"}
ours_ratio = results["skip-gram (ours)"]["agree"] / ceiling
speed = timings["skip-gram (ours)"] / timings["gensim skip-gram"]
print(f"gensim vs gensim (another seed): {ceiling:.3f}; ours vs gensim: "
      f"{results['skip-gram (ours)']['agree']:.3f} = {ours_ratio:.0%} of the ceiling "
      "(required: at least 80%)")
print(f"our skip-gram took {speed:.1f}x gensim's time on one core "
      f"({timings['skip-gram (ours)']:.1f} s vs {timings['gensim skip-gram']:.1f} s)")
assert ours_ratio >= 0.8

# %% [markdown] slideshow={"slide_type": "slide"}
# ### Reading the table
#
# - **Agreement with gensim.** Our skip-gram, which follows word2vec's recipe (subsampling,
#   dynamic windows, $K=5$ negatives from $P_n$, linear learning-rate decay, the text read
#   in order, gensim's initialisation) and differs only in updating a minibatch at a time,
#   shares almost as many neighbours with gensim as gensim shares with itself. It is slower,
#   though: gensim's inner loop is compiled C working on one pair at a time in cache, ours
#   is a handful of PyTorch calls per minibatch. Agreement measures closeness to gensim's
#   *procedure*, not quality: every detail of the recipe moves it (exercise 1 shows that
#   even the order of the examples does).
# - **Counting against predicting.** The printed ranking names the leader of this run, and
#   its lead counts only when it exceeds both the seed spreads and the sampling noise of the
#   test's word pairs (the bootstrap interval printed beside it must exclude 0: a test of a
#   few hundred pairs cannot resolve a gap of a hundredth). Whatever it is, it is a statement about
#   300 thousand stemmed words: compare the methods *relative to each other*, not with the
#   papers' absolute numbers. Levy, Goldberg & Dagan (2015) found that once the
#   hyper-parameters are matched (window, context smoothing, eigenvalue weighting, ...),
#   count-based and predictive methods perform comparably, with no consistent winner.
# - **CBOW** makes one update per position where skip-gram makes one per pair, so in the
#   same epochs it learns from far fewer examples. **GloVe** fits log counts that are mostly
#   tiny (chapter 4b printed the share of $X_{ij} < 2$: their weight $f(X_{ij})$ is small
#   and their logarithm noisy). It was trained until its loss was flat (chapter 4b shows
#   its WordSim-353 score on the way, settled by the stop).
# - **Analogies are hard.** Every method here answers a small fraction of the questions it
#   is asked (the accuracy column, against 50-75% in the papers), and it can only be asked
#   the questions whose words survive the vocabulary and stemming (the coverage printed
#   above). Yet the neighbourhoods look sensible. The reason: accuracy credits only the
#   exact word at rank 1 among 8,084 candidates. The rank of the right answer shows how
#   far off the guesses are, and which sections work:

# %% slideshow={"slide_type": "-"}
for name in ("random vectors", "PPMI + SVD", "skip-gram (ours)", "gensim skip-gram"):
    r = results[name]["ranks"]
    print(f"{name:>17}: rank of the right answer: median {np.median(r):6.0f}, "
          f"top-1 {np.mean(r <= 1):.1%}, top-10 {np.mean(r <= 10):.1%}, "
          f"top-100 {np.mean(r <= 100):.1%}")
sections = sorted({q[0] for q in questions}, key=[q[0] for q in questions].index)
per_section = []
for section in sections:
    qs = [q for q in questions if q[0] == section]
    acc, _, n = analogy_accuracy(vectors["PPMI + SVD"], corpus.words, qs, stem)
    if n:
        per_section.append(f"{section} {acc:.0%} (n={n})")
print("PPMI + SVD by section:", "; ".join(per_section))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Numbers beside the papers
#
# What the papers report comes from corpora thousands of times larger than ours; the
# comparison is about orders of magnitude, not decimals.
#
# - **Analogy accuracy, word2vec**: about 50-65% on the same question set with
#   10⁸-10⁹ training words (Mikolov et al., 2013a, b). Measured here: the table above.
# - **Analogy accuracy, GloVe**: about 75% with 42 billion tokens (Pennington et al.,
#   2014). Measured here: the table above.
# Both side by side with what we measured, on the analogy questions our vocabulary
# covers (the paper figures are quoted, ours come from the table above):

# %% slideshow={"slide_type": "-"}
paper = {"skip-gram (ours)": ("word2vec skip-gram, Mikolov et al. 2013", "50-65%", "~1e9 words"),
         "gensim skip-gram": ("word2vec skip-gram, Mikolov et al. 2013", "50-65%", "~1e9 words"),
         "GloVe (ours)": ("GloVe, Pennington et al. 2014", "~75%", "42e9 tokens")}
print(f"{'':>18} | {'paper (reported)':<62} | measured here")
for name, (source, acc, size) in paper.items():
    ours = results[name]["acc"]
    print(f"{name:>18} | {source:<40} {acc:>6} on {size:<11} | "
          f"{ours:>5.1%} on {corpus.num_tokens / 1e3:.0f}K tokens")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - **Neighbours and analogies:** nearest neighbours by cosine, never the word itself;
#   analogies by **3CosAdd**, excluding the three query words. *Cairo : Egypt :: Rome :
#   Italy* needs every word seen often, in many contexts: billions of words, not our 300
#   thousand.
# - **How similar is similar:** trained vectors are not random directions; the baseline for a
#   cosine is the distribution of random word pairs in the same embedding, not 0.
# - **Evaluation** on WordSim-353, SimLex-999 and the analogy questions must report coverage.
#   On 300 thousand words, similarity correlations are real but analogy accuracy is far
#   below the papers'. PPMI + SVD scores highest on WordSim-353
#   (**supported**<!-- ledger: on WordSim-353, PPMI + SVD -->), but not beyond the seeds on
#   SimLex-999 (**inconclusive**<!-- ledger: on SimLex-999, PPMI + SVD -->): a small-corpus
#   result. The rank of the right answer shows how far off the analogy
#   guesses are.
# - Our skip-gram's **agreement with gensim** is printed beside gensim's agreement with
#   itself under another seed, and its time beside gensim's compiled loop.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Exercises
#
# 1. *(medium)* Train our skip-gram again with `shuffle=True` (the minibatches then mix
#    pairs from the whole corpus, as one usually does). Compare its neighbour agreement with
#    gensim and its WordSim-353 and SimLex-999 scores with the in-order run. How can a run
#    agree *less* with gensim and yet score as well or better? What do two gensim runs with
#    different seeds still have in common?
# 2. *(medium)* Implement **3CosMul** (Levy & Goldberg, 2014):
#    $\arg\max_x \cos'(x,b)\cos'(x,c)/(\cos'(x,a)+\varepsilon)$ with $\cos' = (\cos+1)/2$, and
#    compare its analogy accuracy with 3CosAdd on our embeddings. For PPMI + SVD, also vary
#    the eigenvalue weight $p \in \{0, 0.5, 1\}$ and the context smoothing
#    $\alpha \in \{0.75, 1\}$: which choice matters most for WordSim-353 and for SimLex-999?
# 3. *(medium)* We use GloVe's demo value $x_{\max} = 10$; the paper's 100 was set for
#    corpora of billions of words, and on ours almost no count reaches it (chapter 4b
#    printed the shares).
#    Train `artifacts.glove_until_flat` with `x_max=100`, and with `dim=50` (the demo's
#    other setting): does GloVe's rank in the table change, by more than the seed spread?
#    What does that say about blaming the number of epochs versus the settings and the size
#    of the corpus?
# 4. *(open)* Train everything on the Lee corpus (`load_corpus("lee")`: unstemmed news,
#    60 thousand words) instead. How do the coverage and the scores change, and what does
#    that tell you about preprocessing choices versus corpus size?

# %% [markdown] slideshow={"slide_type": "skip"}
# <details><summary>Worked answer to exercise 1</summary>
#
# ```python
# import numpy as np
# import torch
#
# from lmcourse.data import WordCorpus
# from lmcourse.models.embeddings import (
#     gensim_word2vec,
#     most_similar,
#     neighbour_agreement,
#     train_word2vec,
# )
#
# torch.set_num_threads(1)
# # a planted corpus read in order: 4 topics of 20 words, 10 documents each, topic after topic;
# # 5 "drift" words occur, equally often, in the first topic's documents and in the last's
# rng = np.random.default_rng(0)
# documents = []
# for topic in range(4):
#     for _ in range(10):
#         doc = [f"t{topic}w{i}" for i in rng.integers(20, size=400)]
#         if topic in (0, 3):
#             for pos in rng.choice(400, size=40, replace=False):
#                 doc[pos] = f"drift{rng.integers(5)}"
#         documents.append(doc)
# corpus = WordCorpus.from_documents(documents)
# settings = dict(dim=20, epochs=5)
# runs = {"ours, in order": train_word2vec(corpus, seed=0, **settings),
#         "ours, shuffled": train_word2vec(corpus, seed=0, shuffle=True, **settings)}
# for seed in (0, 1):
#     runs[f"gensim, seed {seed}"] = gensim_word2vec(documents, corpus.words, min_count=1,
#                                                    seed=seed, **settings)
# topic_of = {w: w[1] for w in corpus.words if w.startswith("t")}
# drift = [corpus.index[f"drift{i}"] for i in range(5)]
# lean, everyone = {}, np.arange(len(corpus))
# for name, run in runs.items():
#     unit = run.vectors / np.linalg.norm(run.vectors, axis=1, keepdims=True)
#     first, last = (unit[[corpus.index[f"t{t}w{i}"] for i in range(20)]].mean(0) for t in (0, 3))
#     lean[name] = unit[drift] @ last - unit[drift] @ first   # > 0: nearer the last topic read
#     purity = np.mean([topic_of.get(n) == topic_of[w] for w in topic_of
#                       for n, _ in most_similar(run.vectors, corpus.words, w, 5)])
#     agree = neighbour_agreement(run.vectors, runs["gensim, seed 0"].vectors, everyone, k=5)
#     print(f"{name:>15}: 5 neighbours in the word's topic {purity:.0%}; agreement with gensim "
#           f"seed 0 {agree:.2f}; drift words lean to the last topic by {lean[name].mean():+.3f} "
#           "(each: " + " ".join(f"{x:+.2f}" for x in lean[name]) + ")")
#     assert purity > 0.95 and (agree < 0.6 or name == "gensim, seed 0")  # right, yet apart
# gensim = [lean[f"gensim, seed {seed}"] for seed in (0, 1)]   # the same order, the same pull
# assert all((g > 0).all() and g.mean() > 0.04 for g in gensim)
# assert abs(lean["ours, shuffled"].mean()) < 0.5 * min(g.mean() for g in gensim)
# ```
#
# Two runs of our skip-gram on all of text8 take several times this answer's budget, so the
# code uses a planted corpus that makes both questions visible. Four topics of 20
# interchangeable words are read topic after topic, and five drift words belong equally to
# the first topic and the last (the truth: no lean). Every run learns the topics (100% of
# each word's 5 nearest neighbours are in its topic), yet each agrees with gensim's seed 0 on
# only 0.31 to 0.33 of those neighbours, gensim's own seed 1 included: inside a topic the
# data do not decide the order, each run's random path does. What two gensim runs share
# beyond the data is the shape of that path: the same text order under the same
# learning-rate schedule. Both pull every drift word towards the topic read last (+0.081 and
# +0.099), an imprint of the order, not a fact about the words. Our shuffled run has no such
# imprint (+0.014): it is nearer the truth while sharing less of gensim's path. Our in-order
# run leans the other way here (-0.149): minibatches of 1,024 summed updates do not retrace
# gensim's pair-by-pair path, so reading in the same order is no guarantee of the same
# imprint. That is how a run can agree less with gensim and score as well or better:
# agreement rewards sharing gensim's procedure, the test sets only the information in the
# text.
# </details>

# %% [markdown] slideshow={"slide_type": "skip"}
# <details><summary>Worked answer to exercise 2</summary>
#
# ```python
# import functools
#
# import numpy as np
# import torch
# from gensim.parsing.porter import PorterStemmer
#
# from lmcourse.data import WordCorpus, load_corpus, tokenize
# from lmcourse.models.embeddings import (
#     analogy_accuracy,
#     cooccurrence,
#     cosine_similarity,
#     load_analogies,
#     load_word_pairs,
#     ppmi,
#     randomized_svd,
#     word_similarity,
# )
#
# torch.set_num_threads(1)
# corpus = WordCorpus.from_documents([tokenize(d) for d in load_corpus("text8")], min_count=5)
# X = cooccurrence(corpus.docs, len(corpus), window=5)
# stem, index = functools.cache(PorterStemmer().stem), corpus.index
# tests = {name: load_word_pairs(f) for name, f in (("WS-353", "wordsim353.tsv"),
#                                                    ("SimLex", "simlex999.txt"))}
# questions, ids = load_analogies(), []   # the questions analogy_ranks can use, as word ids
# for q in questions:
#     stems = [stem(w.lower()) for w in q[1:]]
#     if len(set(stems)) == 4 and all(w in index for w in stems):
#         ids.append([index[w] for w in stems])
# a, b, c, d = torch.tensor(ids).T
# rows = torch.arange(len(a))
#
#
# def accuracies(vectors: np.ndarray) -> tuple[float, float]:
#     """3CosAdd and 3CosMul accuracy (a, b and c excluded), from the same three cosines."""
#     unit = torch.from_numpy(vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).float()
#     cos_a, cos_b, cos_c = (unit[w] @ unit.T for w in (a, b, c))
#     add = cos_b - cos_a + cos_c    # cos(x, b - a + c) times |b - a + c|: the same argmax
#     # cos' = (cos + 1) / 2 and eps = 1e-3: cos'_b cos'_c / (cos'_a + eps), times 2
#     mul = cos_b.add_(1).mul_(cos_c.add_(1)).div_(cos_a.add_(1 + 2e-3))
#     x, (i, j, k) = 17, ids[0][:3]  # one score by hand, from the course's cosine
#     cos = [(cosine_similarity(vectors[x], vectors[w]) + 1) / 2 for w in (i, j, k)]
#     assert abs(mul[0, x].item() / 2 - cos[1] * cos[2] / (cos[0] + 1e-3)) < 1e-5
#     out = []
#     for score in (add, mul):
#         for col in (a, b, c):
#             score[rows, col] = -torch.inf
#         out.append((score.argmax(1) == d).float().mean().item())
#     return out[0], out[1]
#
#
# scores = {}
# for alpha in (0.75, 1.0):
#     U, S, _ = randomized_svd(ppmi(X, alpha), 50)     # one SVD, three eigenvalue weights
#     for p in (0, 0.5, 1):
#         W = (U * S**p).astype(np.float32)
#         scores[alpha, p] = [word_similarity(W, corpus.words, pairs, stem)[0]
#                             for pairs in tests.values()]
#         ws, sl = scores[alpha, p]
#         line = f"alpha {alpha:<4} p {p:<3}: WS-353 {ws:.3f}, SimLex {sl:.3f}"
#         if alpha == 0.75 and p > 0:
#             add, mul = accuracies(W)
#             line += f"; analogies: 3CosAdd {add:.1%}, 3CosMul {mul:.1%}"
#             if p == 0.5:           # our 3CosAdd is the course's analogy_accuracy
#                 assert abs(add - analogy_accuracy(W, corpus.words, questions, stem)[0]) < 1e-3
#         print(line)
# print(f"({len(ids):,} analogy questions usable; d = 50)")
# for t, name in enumerate(tests):   # the largest change each choice makes, the other fixed
#     by_p = max(np.ptp([scores[al, p][t] for p in (0, 0.5, 1)]) for al in (0.75, 1.0))
#     by_alpha = max(abs(scores[0.75, p][t] - scores[1.0, p][t]) for p in (0, 0.5, 1))
#     print(f"{name}: p moves it by up to {by_p:.3f}, alpha by up to {by_alpha:.3f}")
#     assert by_p > 2 * by_alpha
# for al in (0.75, 1.0):             # p = 0 is best on WS-353, p = 1 on SimLex
#     (ws0, sl0), (ws1, sl1) = scores[al, 0], scores[al, 1]
#     assert ws0 > ws1 + 0.03 and sl1 > sl0 + 0.02
# ```
#
# On these vectors 3CosMul does not beat 3CosAdd: over the 2,665 usable questions it answers
# 10.6% against 13.1% at $p = 0.5$, and 12.8% against 13.3% at $p = 1$ (Levy & Goldberg
# report 3CosMul ahead, on far larger corpora). Being a product and a ratio of cosines,
# 3CosMul depends on how the cosines are spread, which $p$ changes; 3CosAdd barely moves. For
# word similarity the eigenvalue weight matters far more than the context smoothing: $p$
# moves WordSim-353 by up to 0.085 and SimLex-999 by up to 0.044, $\alpha$ by at most 0.016
# and 0.004. And $p$ pulls the two tests apart: $p = 0$ (all directions weighted alike) is
# best on WordSim-353 (0.651) and worst on SimLex-999, $p = 1$ the reverse (0.286 on
# SimLex-999), so "the best $p$" depends on whether relatedness or similarity is asked for.
# ($d = 50$ here to stay within time; chapter 4c's table uses 100.)
# </details>

# %% [markdown] slideshow={"slide_type": "skip"}
# <details><summary>Worked answer to exercise 3</summary>
#
# ```python
# import numpy as np
# import torch
# from gensim.parsing.porter import PorterStemmer
#
# from lmcourse.data import WordCorpus, load_corpus, tokenize
# from lmcourse.models.embeddings import (
#     cooccurrence,
#     glove_weight,
#     load_word_pairs,
#     ppmi,
#     svd_embeddings,
#     train_glove,
#     word_similarity,
# )
#
# torch.set_num_threads(1)
# documents = [tokenize(d) for d in load_corpus("text8")]
# corpus = WordCorpus.from_documents(documents, min_count=5)
# x = torch.from_numpy(cooccurrence(corpus.docs, len(corpus), 5, weighting="harmonic").data)
# print(f"{len(x):,} nonzero X_ij, {(x < 2).double().mean():.0%} of them below 2")
# for x_max in (10, 100):
#     f = glove_weight(x, x_max)
#     print(f"x_max = {x_max:>3}: {int((x >= x_max).sum()):,} pairs reach weight 1; the "
#           f"{int((x >= 10).sum()):,} pairs with X_ij >= 10 carry {f[x >= 10].sum() / f.sum():.1%}"
#           " of the total weight")
# assert (glove_weight(x, 100)[x < 10] / glove_weight(x, 10)[x < 10]).allclose(
#     torch.tensor(0.1**0.75, dtype=x.dtype))        # below both caps: one common factor
#
# # scaled down: the first 20 documents, 3 epochs (far from flat), beside PPMI + SVD
# small = WordCorpus.from_documents(documents[:20], min_count=5)
# X = cooccurrence(small.docs, len(small), 5, weighting="harmonic")
# stem = PorterStemmer().stem
# tests = {"WS-353": load_word_pairs("wordsim353.tsv"), "SimLex": load_word_pairs("simlex999.txt")}
#
#
# def scores(vectors: np.ndarray) -> np.ndarray:
#     return np.array([word_similarity(vectors, small.words, t, stem)[0] for t in tests.values()])
#
#
# runs = {"x_max 10, d 100": {}, "x_max 10, d 100, seed 1": dict(seed=1),
#         "x_max 100, d 100": dict(x_max=100), "x_max 10, d 50": dict(dim=50)}
# got = {name: scores(train_glove(X, **dict(dict(dim=100, epochs=3, lr=0.2, x_max=10), **kw))
#                     .vectors) for name, kw in runs.items()}
# count_based = scores(svd_embeddings(ppmi(cooccurrence(small.docs, len(small), 5), 0.75), 100))
# print(f"{small.num_tokens:,} tokens, {len(small):,} words; PPMI + SVD: WS-353 "
#       f"{count_based[0]:.3f}, SimLex {count_based[1]:.3f}")
# base = got["x_max 10, d 100"]
# for name, s in got.items():
#     print(f"GloVe {name:>23}: WS-353 {s[0]:.3f}, SimLex {s[1]:+.3f}; change from seed 0 at "
#           f"x_max 10, d 100: {s[0] - base[0]:+.3f}, {s[1] - base[1]:+.3f}")
# assert max(s[0] for s in got.values()) < count_based[0] - 0.1   # GloVe's rank does not move
# ```
#
# On our counts $x_{\max}$ changes little in what GloVe fits. 94% of the nonzero $X_{ij}$
# are below 2 and only 4,386 pairs reach 10. Below both caps the weights of
# $x_{\max} = 100$ are those of $x_{\max} = 10$ times one factor $0.1^{3/4}$, and a common
# factor rescales the loss without moving its minimum; so $x_{\max}$ acts only through the
# pairs at or above 10, which carry 1.8% of the total weight with $x_{\max} = 10$ and 2.8%
# with 100. The scaled-down runs (the first 20 documents, 3 epochs, far from flat) agree:
# $x_{\max} = 100$ moves WordSim-353 by +0.002 and SimLex-999 by -0.008, $d = 50$ by +0.052
# and +0.039, while another seed moves them by +0.068 and +0.102; every variant stays more
# than 0.1 below PPMI + SVD on the same text (WordSim-353 0.428), so GloVe's rank does not
# move. The full question needs three seeds per setting, each trained until flat like the
# chapter's. Epochs are not to blame (the chapter trained until flat and its WordSim-353
# had settled), the settings move the scores by no more than a seed does, and what is left
# is the corpus: the logarithms of counts below 2 are mostly noise, which only more text
# fixes.
# </details>

# %% [markdown] slideshow={"slide_type": "skip"}
# <details><summary>Worked answer to exercise 4</summary>
#
# ```python
# import functools
#
# import numpy as np
# import torch
# from gensim.parsing.porter import PorterStemmer
# from gensim.parsing.preprocessing import preprocess_string
#
# from lmcourse.data import WordCorpus, load_corpus, tokenize
# from lmcourse.models.embeddings import (
#     analogy_accuracy,
#     cooccurrence,
#     load_analogies,
#     load_word_pairs,
#     ppmi,
#     svd_embeddings,
#     word_similarity,
# )
#
# torch.set_num_threads(1)
# stem = functools.cache(PorterStemmer().stem)
# text8 = [tokenize(d) for d in load_corpus("text8")]
# lee_raw = [tokenize(d) for d in load_corpus("lee")]
# lee = [preprocess_string(d) for d in load_corpus("lee")]   # stop words out, Porter stems
# n_lee = sum(len(d) for d in lee)
# cut = int(np.searchsorted(np.cumsum([len(d) for d in text8]), n_lee))
# setups = {"Lee, as written": (lee_raw, None), "Lee, text8's style": (lee, stem),
#           "text8, Lee's size": (text8[:cut + 1], stem), "text8, all": (text8, stem)}
# tests = {"WS-353": load_word_pairs("wordsim353.tsv"), "SimLex": load_word_pairs("simlex999.txt")}
# questions = load_analogies()
# found = {}
# for name, (docs, transform) in setups.items():
#     corpus = WordCorpus.from_documents(docs, min_count=5)
#     W = svd_embeddings(ppmi(cooccurrence(corpus.docs, len(corpus), 5), 0.75), 50)
#     (ws, ws_cov, ws_n), (sl, sl_cov, sl_n) = (word_similarity(W, corpus.words, t, transform)
#                                               for t in tests.values())
#     acc, an_cov, an_n = analogy_accuracy(W, corpus.words, questions, transform)
#     found[name] = dict(coverage=np.array([ws_cov, sl_cov, an_cov]), scores=np.array([ws, sl]))
#     print(f"{name:>18}: {corpus.num_tokens:>7,} tokens, {len(corpus):>5,} words; coverage WS "
#           f"{ws_cov:.0%}, SimLex {sl_cov:.0%}, analogies {an_cov:.1%}; PPMI + SVD: WS-353 "
#           f"{ws:.3f} on {ws_n} pairs, SimLex {sl:+.3f} on {sl_n}, analogies {acc:.1%} "
#           f"of {an_n:,}")
# style = found["Lee, text8's style"]["coverage"] - found["Lee, as written"]["coverage"]
# size = found["text8, all"]["coverage"] - found["text8, Lee's size"]["coverage"]
# print(f"coverage (WS, SimLex, analogies) gained by stemming Lee: {np.round(style, 3)}; "
#       f"by reading all {len(text8)} documents of text8 instead of {cut + 1}: {np.round(size, 3)}")
# assert (style[:2] > 0.05).all() and (size > 0.1).all() and (size > style).all()
# best = found.pop("text8, all")["scores"]
# assert all((best > f["scores"] + 0.1).all() for f in found.values())
# ```
#
# Coverage depends first on size: the first 15 documents of text8 (25,853 tokens, as many
# as Lee after preprocessing) cover 28% of WordSim-353, 20% of SimLex-999 and 0.3% of the
# analogies; all 250 documents 78%, 75% and 13.6%. Preprocessing moves it less: stemming Lee
# and dropping its stop words (gensim's `preprocess_string`, roughly text8's style) raises
# WordSim-353 coverage from 17% to 29% and SimLex-999 from 10% to 18% (word forms merge into
# one stem, which then passes `min_count`), and leaves the analogies at 0.7%. The scores
# (PPMI + SVD with $d = 50$ stands in for every method here: training word2vec and GloVe on
# each corpus does not fit the budget) are harder to read. Each is computed on the pairs its
# own vocabulary covers, 60 to 276 of them, so the rows are not measured on the same test:
# Lee as written scoring 0.264 on WordSim-353 against 0.126 stemmed is no evidence for raw
# text. Only all of text8 is clearly ahead, by more than 0.1 on both tests over every small
# setup. Preprocessing decides which questions can be asked; the size of the corpus decides
# how many, and how well they are answered.
# </details>

# %% [markdown] slideshow={"slide_type": "slide"}
# ## References
#
# - G. Salton, C. Buckley (1988). *Term-weighting approaches in automatic text retrieval*.
#   Information Processing & Management 24(5).
# - S. Deerwester, S. T. Dumais, G. W. Furnas, T. K. Landauer, R. Harshman (1990). *Indexing
#   by latent semantic analysis*. JASIS 41(6).
# - T. Mikolov, K. Chen, G. Corrado, J. Dean (2013a). *Efficient estimation of word
#   representations in vector space*. ICLR Workshop (arXiv:1301.3781).
# - T. Mikolov, W. Yih, G. Zweig (2013). *Linguistic regularities in continuous space word
#   representations*. NAACL-HLT.
# - J. Pennington, R. Socher, C. D. Manning (2014). *GloVe: Global vectors for word
#   representation*. EMNLP.
# - O. Levy, Y. Goldberg (2014). *Linguistic regularities in sparse and explicit word
#   representations*. CoNLL.
# - O. Levy, Y. Goldberg, I. Dagan (2015). *Improving distributional similarity with lessons
#   learned from word embeddings*. TACL 3.
# - L. Finkelstein, E. Gabrilovich, Y. Matias, E. Rivlin, Z. Solan, G. Wolfman, E. Ruppin
#   (2002). *Placing search in context: the concept revisited*. ACM TOIS 20(1).
# - F. Hill, R. Reichart, A. Korhonen (2015). *SimLex-999: evaluating semantic models with
#   (genuine) similarity estimation*. Computational Linguistics 41(4).
# - D. Mimno, L. Thompson (2017). *The strange geometry of skip-gram with negative
#   sampling*. EMNLP.
# - R. Řehůřek, P. Sojka (2010). *Software framework for topic modelling with large corpora*
#   (gensim). LREC Workshop on New Challenges for NLP Frameworks.

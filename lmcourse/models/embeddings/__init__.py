"""Word embeddings: from counting to predicting, each method a few lines.

Every method turns a corpus (:class:`lmcourse.data.WordCorpus`: documents as arrays of word
ids) into a matrix with one row per word. The modules, from counting to predicting:

* :mod:`~lmcourse.models.embeddings.counts`: one-hot, co-occurrence, TF-IDF, PPMI + SVD;
* :mod:`~lmcourse.models.embeddings.word2vec`: skip-gram and CBOW with negative sampling;
* :mod:`~lmcourse.models.embeddings.glove`: GloVe's weighted least squares on log counts;
* :mod:`~lmcourse.models.embeddings.evaluate`: neighbours, analogies, word similarity and
  analogy accuracy on the sets gensim ships.
"""

from lmcourse.models.embeddings.counts import (
    cooccurrence,
    one_hot,
    ppmi,
    randomized_svd,
    svd_embeddings,
    term_document,
    tfidf,
)
from lmcourse.models.embeddings.evaluate import (
    analogy,
    analogy_accuracy,
    analogy_ranks,
    cosine_similarity,
    load_analogies,
    load_word_pairs,
    most_similar,
    neighbour_agreement,
    rho_gap_interval,
    word_similarity,
)
from lmcourse.models.embeddings.glove import (
    WORDSIM,
    glove_loss,
    glove_step,
    glove_weight,
    train_glove,
    wordsim_score,
)
from lmcourse.models.embeddings.word2vec import (
    Trained,
    cbow_windows,
    gensim_word2vec,
    keep_probability,
    negative_sampling_loss,
    noise_distribution,
    noise_table,
    sgns_step,
    skipgram_pairs,
    subsample,
    train_word2vec,
    window_reach,
)

__all__ = [
    "Trained",
    "WORDSIM",
    "analogy",
    "analogy_accuracy",
    "analogy_ranks",
    "cbow_windows",
    "cooccurrence",
    "cosine_similarity",
    "gensim_word2vec",
    "glove_loss",
    "glove_step",
    "glove_weight",
    "keep_probability",
    "load_analogies",
    "load_word_pairs",
    "most_similar",
    "negative_sampling_loss",
    "neighbour_agreement",
    "noise_distribution",
    "noise_table",
    "one_hot",
    "ppmi",
    "randomized_svd",
    "rho_gap_interval",
    "sgns_step",
    "skipgram_pairs",
    "subsample",
    "svd_embeddings",
    "term_document",
    "tfidf",
    "train_glove",
    "train_word2vec",
    "window_reach",
    "word_similarity",
    "wordsim_score",
]

"""Real English text that is already on the machine, shipped by gensim for its tests.

``lee`` is the Lee background corpus (293 news articles from the Australian Broadcasting
Corporation, about 59K tokens; the file holds seven of them twice); ``text8`` is the first
500 lines of Wikipedia text8-style text gensim ships as ``head500.noblanks.cor`` (about 330K
words, lowercase, no punctuation); ``polarity`` is 200 labelled sentences of movie reviews
(:func:`load_polarity`); ``wiki`` is 106 articles of English Wikipedia, about 3 million
characters of prose (:mod:`lmcourse.data.wiki`: how the markup is cleaned, how it is split,
its licence). Nothing is downloaded. (For real *labelled* text at scale, Pang & Lee's 12,808
Rotten Tomatoes snippets, see :mod:`lmcourse.data.rotten_tomatoes`, which set-up fetches
once.)
"""

from __future__ import annotations

import re
from pathlib import Path

from lmcourse.data.gensim_data import gensim_file

CORPORA = {
    "lee": "lee_background.cor",
    "text8": "head500.noblanks.cor",
    "polarity": "pang_lee_polarity.cor",
}


def corpus_path(name: str = "lee") -> Path:
    """The file of a named corpus inside the installed gensim package."""
    if name not in CORPORA:
        known = sorted([*CORPORA, "wiki"])
        raise ValueError(f"unknown corpus {name!r}; choose one of {known}"
                         + (" (wiki is not one file: see lmcourse.data.wiki)"
                            if name == "wiki" else ""))
    return gensim_file(CORPORA[name])


def load_corpus(name: str = "lee") -> list[str]:
    """The corpus as a list of documents (one string per line of the file; for ``wiki``,
    one string per article)."""
    if name == "wiki":
        from lmcourse.data.wiki import wiki_articles

        return [text for _, text in wiki_articles()]
    text = corpus_path(name).read_text(encoding="utf-8", errors="replace")
    lines = (line.strip() for line in text.splitlines())
    # each document once: the Lee file repeats seven of its 300 articles word for word
    # (line 272 is line 264), and a held-out copy of a training article is a leak
    return list(dict.fromkeys(line for line in lines if line))


def document_split(text: str, fraction: float = 0.9) -> int:
    """Where to cut ``text`` (documents joined by newlines) so that both parts are whole
    documents: the start of the first document that begins at or after ``fraction`` of the
    characters. ``text[:cut]`` is for training, ``text[cut:]`` is held out.

    A cut at a character position would put the start of one article in training and its
    end in the held-out text."""
    if not 0 < fraction < 1:
        raise ValueError(f"fraction is the share of characters for training, strictly "
                         f"between 0 and 1; got {fraction}")
    mark = max(1, int(fraction * len(text)))
    cut = text.find("\n", mark - 1) + 1
    if cut == 0 or cut >= len(text):
        raise ValueError(f"no document starts after {fraction:.0%} of the text: join the "
                         "documents with newlines, and hold out less than the last document")
    return cut


def load_polarity() -> list[tuple[str, int]]:
    """Real English for classification: ``(sentence, label)`` pairs, label 1 for a positive
    opinion, from Pang & Lee's sentence polarity data set (2005, "Seeing stars: exploiting
    class relationships for sentiment categorization with respect to rating scales"):
    snippets of real movie reviews from Rotten Tomatoes, lowercased and split into tokens
    by its authors. gensim ships 200 of them, 100 of each label (``__label__pos`` /
    ``__label__neg`` lines)."""
    rows = []
    for number, line in enumerate(load_corpus("polarity"), 1):
        tag, _, text = line.partition(" ")
        if tag not in ("__label__pos", "__label__neg") or not text.strip():
            raise ValueError(f"{corpus_path('polarity')}, line {number}: expected "
                             f"'__label__pos <sentence>' or '__label__neg <sentence>', got "
                             f"{line[:60]!r}")
        rows.append((text.strip(), int(tag == "__label__pos")))
    return rows


_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def tokenize(text: str) -> list[str]:
    """Lowercase words and numbers; punctuation is dropped (``"It's 9pm."`` → it's, 9pm)."""
    return _WORD.findall(text.lower())

"""Real English text that is already on the machine, shipped by gensim for its tests.

``lee`` is the Lee background corpus (300 news articles from the Australian
Broadcasting Corporation, about 58K words); ``text8`` is the first 500 lines of
Wikipedia text8-style text gensim ships as ``head500.noblanks.cor`` (about 330K words,
lowercase, no punctuation); ``polarity`` is 200 labelled sentences of movie reviews
(:func:`load_polarity`); ``wiki`` is 106 articles of English Wikipedia, about 3 million
characters of prose (:mod:`lmcourse.data.wiki`: how the markup is cleaned, how it is split,
its licence). Nothing is downloaded. (For real *labelled* text at scale, Pang & Lee's
12,808 Rotten Tomatoes snippets, see :mod:`lmcourse.data.rotten_tomatoes`, which set-up
fetches once.)
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
    return [line.strip() for line in text.splitlines() if line.strip()]


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

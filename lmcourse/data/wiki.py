"""Ten times the Lee corpus, real and already installed: the Wikipedia excerpt gensim ships.

gensim tests its Wikipedia reader on a shortened dump of the first English articles
(``enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2``: 106 articles
once redirects are dropped, about 3 million characters of prose). Its text is Wikipedia's,
under CC BY-SA (https://creativecommons.org/licenses/by-sa/4.0/): quote it with
attribution to Wikipedia's authors.

What we do to the markup, deliberately: gensim's ``extract_pages`` reads the XML and its
``filter_wiki`` removes templates, links' targets, tables and references. What it leaves
we strip too: the quote marks of bold and italics (``'''A'''`` becomes ``A``) and the equals
signs of headings (``==History==`` becomes a line ``History``); runs of spaces become one,
lines are stripped, runs of blank lines become one blank line (lists of captions where a
gallery was stay, as short lines). Nothing is downloaded.

The split is by article, so no article's text is on both sides: articles are ordered by
the SHA-1 of their title (a fixed, arbitrary order), the first ones go to the held-out
part until it holds 10% of the characters, the next to the tuning part until that holds
10% more, and the rest train.
"""

from __future__ import annotations

import bz2
import hashlib
import re
from functools import cache

from lmcourse.data.gensim_data import gensim_file

WIKI_FILE = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
PARTS = ("train", "tuning", "held_out")
_QUOTES = re.compile(r"'{2,}")
_HEADING = re.compile(r"^[ \t]*=+[ \t]*(.*?)[ \t]*=+[ \t]*$", re.MULTILINE)
_SPACES = re.compile(r"[ \t\u00a0]+")
_BLANK_LINES = re.compile(r"\n{3,}")


def clean_wiki_text(text: str) -> str:
    """``filter_wiki``'s output without bold/italic quotes, heading marks and extra space."""
    text = _HEADING.sub(r"\1", _QUOTES.sub("", text))
    lines = [_SPACES.sub(" ", line).strip() for line in text.splitlines()]
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


@cache
def wiki_articles() -> tuple[tuple[str, str], ...]:
    """``(title, cleaned text)`` of every article of the excerpt that is not a redirect, in
    the dump's order."""
    from gensim.corpora.wikicorpus import extract_pages, filter_wiki

    articles = []
    with bz2.open(gensim_file(WIKI_FILE)) as f:
        for title, text, _ in extract_pages(f):
            if text and not text.lstrip().lower().startswith("#redirect"):
                cleaned = clean_wiki_text(filter_wiki(text))
                if cleaned:
                    articles.append((title, cleaned))
    return tuple(articles)


@cache
def wiki_split() -> dict[str, tuple[str, ...]]:
    """Titles of the articles in each part: ``{"train": ..., "tuning": ..., "held_out": ...}``
    (the rule is in the module's docstring)."""
    articles = wiki_articles()
    total = sum(len(text) for _, text in articles)
    order = sorted(articles, key=lambda a: hashlib.sha1(a[0].encode()).hexdigest())
    parts: dict[str, list[str]] = {part: [] for part in PARTS}
    filled = {"held_out": 0, "tuning": 0}
    for title, text in order:
        part = next((p for p in ("held_out", "tuning") if filled[p] < 0.1 * total), "train")
        parts[part].append(title)
        if part in filled:
            filled[part] += len(text)
    return {part: tuple(titles) for part, titles in parts.items()}


def wiki_text(part: str) -> str:
    """One part of the excerpt as one lowercased string, its articles separated by a blank
    line, in the dump's order."""
    if part not in PARTS:
        raise ValueError(f"part must be one of {PARTS}, got {part!r}")
    titles = set(wiki_split()[part])
    return "\n\n".join(text for title, text in wiki_articles() if title in titles).lower()

"""SentencePiece's idea (Kudo & Richardson, 2018): whitespace is just another symbol.

Raw text goes in, with no language-specific pre-tokenizer: every space becomes the
visible symbol ``▁`` (U+2581) and one is put in front of the text, so each word carries
its own leading ``▁``. Pieces are then learned over these strings (here with our BPE),
and decoding is exact: join the pieces and turn ``▁`` back into spaces.

The split matches Hugging Face's ``Metaspace`` pre-tokenizer (``prepend_scheme="always"``)
except on a text that starts with a space: it adds no ``▁`` there, we always do, so that
decoding gives back every text exactly.
"""

from __future__ import annotations

import re

__all__ = ["SPACE", "detokenize", "metaspace_words"]

SPACE = "\u2581"
_WORD = re.compile(f"{SPACE}*[^{SPACE}]+|{SPACE}+")


def metaspace_words(text: str) -> list[str]:
    """``"Hi  you"`` -> ``["▁Hi", "▁", "▁you"]``: spaces made visible, split before each
    ``▁`` so that no piece can span two words (a run of spaces keeps all but the last
    ``▁`` as pieces of its own)."""
    marked = SPACE + text.replace(" ", SPACE)
    words = []
    for chunk in _WORD.findall(marked):
        stripped = chunk.lstrip(SPACE)
        if not stripped:
            words.extend([SPACE] * len(chunk))
        else:
            words.extend([SPACE] * (len(chunk) - len(stripped) - 1))
            words.append(SPACE + stripped)
    return words


def detokenize(pieces: list[str]) -> str:
    """Pieces -> text: concatenate, ``▁`` -> space, drop the space added in front."""
    text = "".join(pieces).replace(SPACE, " ")
    return text[1:] if text.startswith(" ") else text

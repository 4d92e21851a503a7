"""Byte-level BPE (Radford et al., 2019; used by GPT-2 and RoBERTa).

Text is first turned into its UTF-8 bytes, so the base alphabet is the 256 possible
bytes and *every* string can be written with it: nothing is ever unknown. To keep BPE's
string machinery, each byte is shown as one printable character (``bytes_to_unicode``):
printable Latin-1 bytes stand for themselves, the others (space, control bytes, ...) are
shifted to code points from U+0100 on, so a space becomes ``Ġ`` and a newline ``Ċ``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache

import regex

from lmcourse.tokenizers.bpe import Pair, apply_bpe, count_words, train_bpe

__all__ = ["ByteLevelBPE", "byte_decode", "byte_encode", "bytes_to_unicode", "pre_tokenize"]

#: GPT-2's pre-tokenizer: contractions, letters, digits, other symbols, each run of them
#: taking the space in front of it; whitespace runs on their own.
GPT2_PATTERN = regex.compile(
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")


@lru_cache(maxsize=1)
def bytes_to_unicode() -> dict[int, str]:
    """The 256 bytes -> 256 printable characters mapping GPT-2 and RoBERTa use."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
            *range(ord("®"), ord("ÿ") + 1)]
    table, shift = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + shift)
            shift += 1
    return table


def byte_encode(text: str) -> str:
    """``text`` -> its UTF-8 bytes, written one mapped character per byte."""
    table = bytes_to_unicode()
    return "".join(table[b] for b in text.encode("utf-8"))


def byte_decode(symbols: str) -> str:
    """Inverse of :func:`byte_encode` (invalid UTF-8 shows as U+FFFD)."""
    inverse = {ch: b for b, ch in bytes_to_unicode().items()}
    return bytes(inverse[ch] for ch in symbols).decode("utf-8", errors="replace")


def pre_tokenize(text: str) -> list[str]:
    """Split ``text`` with GPT-2's pattern, then byte-encode each piece."""
    return [byte_encode(piece) for piece in GPT2_PATTERN.findall(text)]


class ByteLevelBPE:
    """BPE over byte symbols: ``train_bpe`` run on byte-encoded words, never an UNK."""

    def __init__(self, merges: Sequence[Pair]):
        self.merges = [tuple(p) for p in merges]
        self.ranks: dict[Pair, int] = {}
        for i, pair in enumerate(self.merges):
            self.ranks.setdefault(pair, i)
        self._cache: dict[str, list[str]] = {}

    @classmethod
    def train(cls, texts: Iterable[str], num_merges: int, **kwargs) -> ByteLevelBPE:
        """Learn ``num_merges`` merges from the byte-encoded words of ``texts``."""
        return cls(train_bpe(count_words(texts, pre_tokenize), num_merges, **kwargs))

    @property
    def vocab(self) -> list[str]:
        """The 256 byte symbols followed by the merged symbols."""
        base = list(bytes_to_unicode().values())
        return list(dict.fromkeys(base + [a + b for a, b in self.merges]))

    def segment(self, word: str) -> list[str]:
        """Pieces of one byte-encoded word."""
        if word not in self._cache:
            self._cache[word] = apply_bpe(word, self.ranks)
        return self._cache[word]

    def tokenize(self, text: str) -> list[str]:
        """Text -> byte-level pieces (every piece is in :attr:`vocab`)."""
        return [p for word in pre_tokenize(text) for p in self.segment(word)]

    @staticmethod
    def decode(pieces: Iterable[str]) -> str:
        """Pieces -> the exact original text."""
        return byte_decode("".join(pieces))

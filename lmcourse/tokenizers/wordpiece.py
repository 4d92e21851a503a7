"""WordPiece tokenization as BERT does it (Schuster & Nakajima, 2012; Wu et al., 2016).

Three stages, the same as Hugging Face's ``BertTokenizer``:

1. normalise: drop control characters, turn every whitespace into a space, put spaces
   around CJK ideographs, strip accents (NFD, then drop the combining marks) and
   lowercase (for an *uncased* vocabulary);
2. pre-tokenise: split on whitespace and isolate every punctuation character;
3. split each word greedily, longest match first: at position ``i`` take the longest
   piece ``w[i:j]`` in the vocabulary (written ``##w[i:j]`` when ``i > 0``), then go
   on from ``j``. A word that cannot be covered this way becomes ``[UNK]`` as a whole.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from pathlib import Path

__all__ = ["WordPiece", "is_cjk", "is_punctuation", "likelihood_scores"]

_CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
               (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def is_cjk(ch: str) -> bool:
    """True for a CJK ideograph (the Unicode blocks BERT treats as one word per char)."""
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


def is_punctuation(ch: str) -> bool:
    """ASCII punctuation and symbols (``$+<=>^`|~`` included) or a Unicode ``P*`` char."""
    return (ch.isascii() and not ch.isalnum() and ch.isprintable() and not ch.isspace()) \
        or unicodedata.category(ch).startswith("P")


def _is_control(ch: str) -> bool:
    return ch not in "\t\n\r" and unicodedata.category(ch).startswith("C")


class WordPiece:
    """BERT's tokenizer from a vocabulary: ``WordPiece(vocab).tokenize(text)``.

    ``vocab`` is a list of pieces (line order = id) or a dict piece -> id. Continuations
    carry the ``##`` prefix. The special tokens of the vocabulary (``[CLS]``, ``[MASK]``,
    ...) are kept whole when they appear in the text.
    """

    def __init__(self, vocab: Mapping[str, int] | Iterable[str], unk_token: str = "[UNK]",
                 max_input_chars_per_word: int = 100, lowercase: bool = True,
                 strip_accents: bool | None = None, prefix: str = "##"):
        self.vocab = dict(vocab) if isinstance(vocab, Mapping) else {
            piece: i for i, piece in enumerate(vocab)}
        if unk_token not in self.vocab:
            raise ValueError(f"the unknown token {unk_token!r} is not in the vocabulary")
        self.inv_vocab = {i: piece for piece, i in self.vocab.items()}
        self.unk_token = unk_token
        self.max_input_chars_per_word = max_input_chars_per_word
        self.lowercase = lowercase
        self.strip_accents = lowercase if strip_accents is None else strip_accents
        self.prefix = prefix
        self.specials = [s for s in _SPECIALS if s in self.vocab]
        self._special_re = re.compile("(" + "|".join(map(re.escape, self.specials)) + ")") \
            if self.specials else None
        self._cache: dict[str, list[str]] = {}

    @classmethod
    def from_file(cls, path: str | Path, **kwargs) -> WordPiece:
        """Read a ``vocab.txt`` (one piece per line; the line number is the id)."""
        lines = Path(path).read_text(encoding="utf-8").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return cls(lines, **kwargs)

    def __len__(self) -> int:
        return len(self.vocab)

    def normalize(self, text: str) -> str:
        """Stage 1: clean, space out CJK, strip accents, lowercase."""
        chars = []
        for ch in text:
            if ch in ("\x00", "\ufffd") or _is_control(ch):
                continue
            if ch.isspace():
                chars.append(" ")
            elif is_cjk(ch):
                chars.append(f" {ch} ")
            else:
                chars.append(ch)
        text = "".join(chars)
        if self.strip_accents:
            text = "".join(c for c in unicodedata.normalize("NFD", text)
                           if unicodedata.category(c) != "Mn")
        # character by character, like Hugging Face (no final-sigma rule: "Σ" -> "σ" always)
        return "".join(c.lower() for c in text) if self.lowercase else text

    @staticmethod
    def pre_tokenize(text: str) -> list[str]:
        """Stage 2: split on whitespace, every punctuation character a word of its own."""
        words = []
        for chunk in text.split():
            start = 0
            for i, ch in enumerate(chunk):
                if is_punctuation(ch):
                    if start < i:
                        words.append(chunk[start:i])
                    words.append(ch)
                    start = i + 1
            if start < len(chunk):
                words.append(chunk[start:])
        return words

    def split_word(self, word: str) -> list[str]:
        """Stage 3: greedy longest-match-first; ``[UNK]`` if the word cannot be covered."""
        if len(word) > self.max_input_chars_per_word:
            return [self.unk_token]
        pieces, start = [], 0
        while start < len(word):
            for end in range(len(word), start, -1):  # longest candidate first
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                if piece in self.vocab:
                    break
            else:
                return [self.unk_token]  # no piece starts here: the whole word is unknown
            pieces.append(piece)
            start = end
        return pieces

    def _tokenize_plain(self, text: str) -> list[str]:
        out = []
        for word in self.pre_tokenize(self.normalize(text)):
            if word not in self._cache:
                self._cache[word] = self.split_word(word)
            out.extend(self._cache[word])
        return out

    def tokenize(self, text: str) -> list[str]:
        """Text -> BERT pieces, special tokens such as ``[MASK]`` kept whole."""
        if self._special_re is None:
            return self._tokenize_plain(text)
        out = []
        for part in self._special_re.split(text):
            out.extend([part] if part in self.specials else self._tokenize_plain(part))
        return out

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        """Ids of the pieces, wrapped in ``[CLS] ... [SEP]`` like Hugging Face by default."""
        pieces = self.tokenize(text)
        if add_special_tokens and "[CLS]" in self.vocab and "[SEP]" in self.vocab:
            pieces = ["[CLS]", *pieces, "[SEP]"]
        return [self.vocab[p] for p in pieces]

    def decode(self, ids: Iterable[int]) -> str:
        """Join pieces back into text: ``##`` pieces glue to the previous one."""
        text = " ".join(self.inv_vocab[int(i)] for i in ids)
        return text.replace(" " + self.prefix, "")


def likelihood_scores(word_counts: Mapping[str, int]) -> dict[tuple[str, str], float]:
    """The WordPiece training criterion for each adjacent character pair of the words:

        score(a, b) = f(a, b) / (f(a) * f(b)),

    which prefers pairs whose parts rarely occur apart (BPE uses f(a, b) alone).
    """
    pair_f: dict[tuple[str, str], int] = {}
    sym_f: dict[str, int] = {}
    for word, count in word_counts.items():
        for ch in word:
            sym_f[ch] = sym_f.get(ch, 0) + count
        for pair in zip(word[:-1], word[1:], strict=True):
            pair_f[pair] = pair_f.get(pair, 0) + count
    return {p: f / (sym_f[p[0]] * sym_f[p[1]]) for p, f in pair_f.items()}

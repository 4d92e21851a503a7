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

import heapq
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

__all__ = ["SCORES", "WordPiece", "is_cjk", "is_punctuation", "likelihood_scores",
           "train_wordpiece"]

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


def _initial_symbols(word: str, prefix: str = "##") -> list[str]:
    """A word as its characters, every non-initial one with the continuation prefix:
    ``"low" -> ["l", "##o", "##w"]``."""
    return [word[0], *(prefix + ch for ch in word[1:])]


def _merge_symbols(symbols: list[str], a: str, b: str, prefix: str = "##") -> list[str]:
    """Replace every ``a b`` (left to right, no overlaps) by ``a + b`` without b's ``##``."""
    merged = a + b.removeprefix(prefix)
    out, i, n = [], 0, len(symbols)
    while i < n:
        if i + 1 < n and symbols[i] == a and symbols[i + 1] == b:
            out.append(merged)
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


def _symbol_pairs(symbols: list[str]) -> list[tuple[str, str]]:
    """The adjacent pairs (s_1, s_2), (s_2, s_3), ... of a segmentation."""
    return list(zip(symbols[:-1], symbols[1:], strict=True))


class _WordPieceCounts:
    """The training state: each word's current segmentation and, kept up to date after
    every merge, f(a, b), f(s), the words that hold each pair and the pairs of each symbol.
    A merge only touches the words that contain the merged pair."""

    def __init__(self, word_counts: Mapping[str, int]):
        self.words = [_initial_symbols(w) for w in word_counts]
        self.counts = list(word_counts.values())
        self.pair_f: dict[tuple[str, str], int] = {}
        self.sym_f: dict[str, int] = {}
        self.where: dict[tuple[str, str], set[int]] = {}  # pair -> indices of its words
        self.sym_pairs: dict[str, set[tuple[str, str]]] = {}  # symbol -> pairs holding it
        for k, symbols in enumerate(self.words):
            self._add(k, symbols, +1)

    def _add(self, k: int, symbols: list[str], sign: int) -> None:
        """Add (sign=+1) or remove (sign=-1) word k, segmented as ``symbols``, from the counts."""
        c = sign * self.counts[k]
        for s in symbols:
            f = self.sym_f.get(s, 0) + c
            if f > 0:
                self.sym_f[s] = f
            else:
                del self.sym_f[s]
        for pair in _symbol_pairs(symbols):
            f = self.pair_f.get(pair, 0) + c
            if f > 0:
                self.pair_f[pair] = f
                if sign > 0:
                    self.where.setdefault(pair, set()).add(k)
                    self.sym_pairs.setdefault(pair[0], set()).add(pair)
                    self.sym_pairs.setdefault(pair[1], set()).add(pair)
            else:  # the pair is gone from every word
                del self.pair_f[pair]
                del self.where[pair]
                self.sym_pairs[pair[0]].discard(pair)
                self.sym_pairs[pair[1]].discard(pair)

    def first_seen(self, pair: tuple[str, str]) -> tuple[int, int]:
        """(word index, position) of the first occurrence of ``pair`` in a scan of the
        words in order, each left to right in its current segmentation."""
        k = min(self.where[pair])
        return k, _symbol_pairs(self.words[k]).index(pair)

    def merge(self, a: str, b: str) -> set[tuple[str, str]]:
        """Merge every ``a b``; return the pairs whose score may have changed."""
        changed: set[tuple[str, str]] = set()
        for k in list(self.where[(a, b)]):
            old = self.words[k]
            new = _merge_symbols(old, a, b)
            for p in set(_symbol_pairs(old)):
                self.where[p].discard(k)  # _add puts it back if the new segmentation has p
            self._add(k, old, -1)
            self._add(k, new, +1)
            changed.update(_symbol_pairs(old), _symbol_pairs(new))
            self.words[k] = new
        for s in (a, b, a + b.removeprefix("##")):  # only these symbol counts moved
            changed.update(self.sym_pairs.get(s, ()))
        return changed


def _check_training_input(word_counts: Mapping[str, int], vocab_size: int,
                          min_frequency: int, specials: Sequence[str]) -> None:
    if not isinstance(word_counts, Mapping) or not word_counts:
        raise ValueError("word_counts must be a non-empty dict of word -> count; count the "
                         "words of normalised, pre-tokenised text first")
    for word, count in word_counts.items():
        if not isinstance(word, str) or not word:
            raise ValueError(f"every word must be a non-empty string, got {word!r}")
        if isinstance(count, bool) or not isinstance(count, int) or count <= 0:
            raise ValueError(f"the count of {word!r} must be a positive int, got {count!r}; "
                             "drop words that do not occur")
    if isinstance(min_frequency, bool) or not isinstance(min_frequency, int) \
            or min_frequency < 1:
        raise ValueError(f"min_frequency must be an int >= 1, got {min_frequency!r}")
    if len(set(specials)) != len(specials):
        raise ValueError(f"the special tokens must be distinct, got {list(specials)}")
    alphabet = {s for w in word_counts for s in _initial_symbols(w)} | set(specials)
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
        raise ValueError(f"vocab_size must be an int, got {vocab_size!r}")
    if vocab_size < len(alphabet):
        raise ValueError(f"vocab_size={vocab_size!r} is too small: the {len(specials)} special "
                         f"tokens and the {len(alphabet - set(specials))} initial symbols "
                         f"(characters, with and without ##) already need {len(alphabet)}; "
                         f"ask for vocab_size >= {len(alphabet)}")


SCORES = ("likelihood", "frequency")


def train_wordpiece(word_counts: Mapping[str, int], vocab_size: int, *, min_frequency: int = 2,
                    specials: Sequence[str] = _SPECIALS, score: str = "likelihood") -> list[str]:
    """Learn a WordPiece vocabulary of ``vocab_size`` pieces from ``{word: count}``.

    The words must already be normalised and pre-tokenised. Each starts as its characters,
    every non-initial one written ``##c`` (``low -> l ##o ##w``); these symbols are the
    alphabet. Each step merges the adjacent pair with the highest

        score(a, b) = f(a, b) / (f(a) * f(b)),

    frequencies weighted by the word counts over the current segmentations, among pairs
    with f(a, b) >= ``min_frequency``. ``score="frequency"`` merges the most frequent pair,
    score(a, b) = f(a, b), as BPE does (and as the vocabularies released with BERT behave:
    the ``tokenizers`` library's WordPieceTrainer is this BPE with ``##`` pieces). The new
    symbol is ``a`` followed by ``b`` without its ``##``: ``l + ##o -> lo``,
    ``##o + ##w -> ##ow``. Ties in score go to the larger f(a, b), then to the pair *seen
    first*: scan the words in the dict's order, each left to right in its current
    segmentation (the rule of :func:`~lmcourse.tokenizers.train_bpe`).

    Training stops when the vocabulary has ``vocab_size`` pieces or no pair is frequent
    enough. Returns the ``specials``, then the alphabet (sorted), then the new symbols in
    merge order (a merge that rebuilds a symbol already there adds nothing to the list).
    ``WordPiece(vocab)`` then splits every training word without ``[UNK]``: each character
    is in the alphabet.
    """
    _check_training_input(word_counts, vocab_size, min_frequency, specials)
    if score not in SCORES:
        raise ValueError(f"score must be one of {SCORES}, got {score!r}")
    by_frequency = score == "frequency"
    state = _WordPieceCounts(word_counts)
    alphabet = sorted(state.sym_f)
    vocab = dict.fromkeys([*specials, *alphabet])
    # the candidates in a heap, best first: (-score, -f(a, b), pair, f(a), f(b)). An entry
    # is stale once f(a, b), f(a) or f(b) has changed (a fresh one was pushed then); stale
    # entries are dropped when they reach the top
    heap: list[tuple[float, int, tuple[str, str], int, int]] = []

    def push(pair: tuple[str, str]) -> None:
        f = state.pair_f.get(pair, 0)
        if f >= min_frequency:
            fa, fb = state.sym_f[pair[0]], state.sym_f[pair[1]]
            # int / int is correctly rounded: equal ratios give equal floats, a true tie
            heapq.heappush(heap, (-float(f) if by_frequency else -f / (fa * fb), -f, pair,
                                  fa, fb))

    def fresh(entry: tuple[float, int, tuple[str, str], int, int]) -> bool:
        _, f, (a, b), fa, fb = entry
        return (state.pair_f.get((a, b)) == -f and state.sym_f.get(a) == fa
                and state.sym_f.get(b) == fb)

    for pair in state.pair_f:
        push(pair)
    while len(vocab) < vocab_size:
        while heap and not fresh(heap[0]):
            heapq.heappop(heap)
        if not heap:
            break  # no pair with f(a, b) >= min_frequency is left
        best = heap[0][:2]
        tied = set()
        while heap and heap[0][:2] == best:
            entry = heapq.heappop(heap)
            if fresh(entry):
                tied.add(entry)
        winner = min(tied, key=lambda e: state.first_seen(e[2]))
        for entry in tied - {winner}:
            heapq.heappush(heap, entry)
        a, b = winner[2]
        vocab.setdefault(a + b.removeprefix("##"))
        for pair in state.merge(a, b):
            push(pair)
        if len(heap) > 4 * len(state.pair_f) + 1000:  # drop the stale entries now and then
            heap.clear()
            for pair in state.pair_f:
                push(pair)
    return list(vocab)

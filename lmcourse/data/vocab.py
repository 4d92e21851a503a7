"""A vocabulary: the map between tokens and the integer ids a model sees."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence


class Vocab:
    """Tokens sorted by frequency (ties alphabetically), with reserved tokens first.

    Tokens seen fewer than ``min_freq`` times map to ``unk`` (id 0).
    """

    def __init__(self, tokens: Iterable[str], min_freq: int = 1,
                 reserved: Sequence[str] = (), unk: str = "<unk>"):
        self.counts = Counter(tokens)
        self.unk = unk
        ordered = sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0]))
        self.itos: list[str] = [unk, *[t for t in reserved if t != unk]]
        taken = set(self.itos)
        self.itos += [t for t, c in ordered if c >= min_freq and t not in taken]
        self.stoi = {t: i for i, t in enumerate(self.itos)}

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, token: str) -> bool:
        return token in self.stoi

    def __repr__(self) -> str:
        head = ", ".join(repr(t) for t in self.itos[:6])
        return f"Vocab(size={len(self)}: {head}, ...)"

    @property
    def unk_id(self) -> int:
        return 0

    def encode(self, tokens: Iterable[str]) -> list[int]:
        """Token ids; unknown tokens become ``unk_id``."""
        return [self.stoi.get(t, 0) for t in tokens]

    def decode(self, ids: Iterable[int], sep: str = "") -> str:
        """Join the tokens of ``ids`` with ``sep`` (``""`` for characters, ``" "`` for words)."""
        return sep.join(self.itos[int(i)] for i in ids)

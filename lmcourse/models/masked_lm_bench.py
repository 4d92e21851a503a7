"""What a masked LM must beat, and one fixed bench to compare pre-training recipes on
(chapters 09-11).

**Context-free guesses.** At a masked position ``i`` with neighbours ``l`` and ``r``, the
two-sided bigram guesses ``argmax_w P(w | l) P(r | w)``: one token of context on each side,
as a masked LM sees (a neighbour that is itself masked is not used).

**The bench.** NSP pairs of the training documents, and ``n_eval`` pairs of the test
documents masked *once* with a fixed seed, so that every recipe is scored on exactly the
same masked positions.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from lmcourse.data.sentences import ReviewSentences
from lmcourse.masking import mask_tokens
from lmcourse.models.bert import BertConfig
from lmcourse.models.pretraining import (
    BertForPreTraining,
    PretrainingHistory,
    collate_pairs,
    evaluate_pretraining,
    nsp_pairs,
    pretrain,
)

__all__ = ["SMOOTHING", "MaskedLMBench", "bigram_label", "choose_smoothing",
           "masked_token_baselines"]


# ---- what a model without context would guess ---------------------------------------------------

#: the add-k constants the two-sided bigram's smoothing is chosen from
SMOOTHING = (1e-4, 3e-4, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)


class _Bigrams:
    """Unigram and bigram counts of ``sequences`` (special tokens dropped)."""

    def __init__(self, sequences: Sequence[Sequence[int]], specials: set[int]):
        self.unigram: Counter[int] = Counter()
        self.follows: dict[int, Counter[int]] = {}
        for seq in sequences:
            seq = [t for t in seq if t not in specials]
            self.unigram.update(seq)
            for x, y in zip(seq[:-1], seq[1:], strict=True):
                self.follows.setdefault(x, Counter())[y] += 1
        self.top = self.unigram.most_common(1)[0][0]
        self.totals = {x: sum(row.values()) for x, row in self.follows.items()}

    def guesses(self, left: int | None, right: int | None, k: float) -> tuple[int, int]:
        """``(left-only guess, two-sided guess)``: ``argmax_w P(w | left)`` and
        ``argmax_w P(w | left) P(right | w)``, with add-``k`` smoothing of ``P(right | w)``."""
        row = self.follows.get(left, Counter()) if left is not None else self.unigram
        guess_left = row.most_common(1)[0][0] if row else self.top
        if right is None:
            return guess_left, guess_left
        candidates = [w for w, _ in row.most_common(200)] or [self.top]
        size = len(self.unigram)

        def score(w: int) -> float:  # P(w | left) P(right | w), up to a constant
            after = self.follows.get(w, Counter())
            return (row[w] + k) * (after[right] + k) / (self.totals.get(w, 0) + k * size)
        return guess_left, max(candidates, key=score)


def choose_smoothing(train_sequences: Sequence[Sequence[int]], special_ids: Sequence[int],
                     grid: Sequence[float] = SMOOTHING, every: int = 10,
                     positions: int = 4000, seed: int = 0) -> tuple[float, dict[float, float]]:
    """The two-sided bigram's add-``k`` constant chosen on held-out *training* text: counts
    from all but every ``every``-th sequence, accuracy at ``positions`` random positions of
    the held-out ones (each neighbour dropped with probability 0.15, as when it is masked
    too). Returns ``(best k, {k: accuracy})``; the smaller ``k`` wins a tie."""
    specials = set(special_ids)
    fit = [s for i, s in enumerate(train_sequences) if i % every]
    held = [[t for t in s if t not in specials]
            for i, s in enumerate(train_sequences) if not i % every]
    held = [s for s in held if s]
    if not held or not fit:
        raise ValueError(f"too few training sequences ({len(train_sequences)}) to hold out "
                         f"every {every}th for choosing the smoothing")
    counts, rng = _Bigrams(fit, specials), random.Random(seed)
    sites = []
    for _ in range(positions):
        seq = held[rng.randrange(len(held))]
        i = rng.randrange(len(seq))
        left = seq[i - 1] if i > 0 and rng.random() >= 0.15 else None
        right = seq[i + 1] if i + 1 < len(seq) and rng.random() >= 0.15 else None
        sites.append((left, right, seq[i]))
    tried = {k: sum(counts.guesses(left, right, k)[1] == target
                    for left, right, target in sites) / len(sites) for k in grid}
    best = max(tried.values())
    return min(k for k, acc in tried.items() if acc == best), tried


def bigram_label(smoothing: float, name: str = "bigram, both sides") -> str:
    """The two-sided bigram's name for a table or a verdict, with its chosen smoothing."""
    return f"{name} (add-k tuned, k = {smoothing:g})"


def masked_token_baselines(train_sequences: Sequence[Sequence[int]], inputs: torch.Tensor,
                           labels: torch.Tensor, special_ids: Sequence[int],
                           smoothing: float | None = None) -> dict[str, float]:
    """Accuracy at the masked positions of ``inputs`` (labels != -100) of three guesses
    fitted on ``train_sequences``:

    * **unigram**: always the most frequent token;
    * **bigram (left)**: ``argmax_w P(w | left neighbour)``;
    * **bigram (both sides)**: ``argmax_w P(w | left) P(right | w)``, which sees one token
      on each side, as a masked LM does (a neighbour that is itself masked is not used),
      its add-k smoothing ``smoothing`` or, by default, chosen on held-out training text
      (:func:`choose_smoothing`).
    """
    specials = set(special_ids)
    if smoothing is None:
        smoothing, _ = choose_smoothing(train_sequences, special_ids)
    counts = _Bigrams(train_sequences, specials)
    hits = Counter()
    positions = (labels != -100).nonzero().tolist()
    selected = labels != -100
    for b, i in positions:
        target = int(labels[b, i])
        left = int(inputs[b, i - 1]) if i > 0 and not selected[b, i - 1] else None
        right = (int(inputs[b, i + 1]) if i + 1 < inputs.shape[1] and not selected[b, i + 1]
                 else None)
        left = None if left in specials else left
        right = None if right in specials else right
        guess_left, guess_both = counts.guesses(left, right, smoothing)
        hits["unigram"] += target == counts.top
        hits["bigram (left)"] += target == guess_left
        hits["bigram (both sides)"] += target == guess_both
    n = max(len(positions), 1)
    return {name: hits[name] / n for name in ("unigram", "bigram (left)", "bigram (both sides)")}


# ---- one fixed bench for comparing pre-training recipes (chapters 10-11) -----------------------

@dataclass
class MaskedLMBench:
    """Same data, same held-out score for every recipe: NSP pairs of the training reviews,
    and ``n_eval`` pairs of the test reviews masked *once* with a fixed seed, so that two
    models are scored on exactly the same masked positions."""

    data: ReviewSentences
    max_len: int
    train_pairs: list[tuple[list[int], list[int], int]]
    test_pairs: list[tuple[list[int], list[int], int]]
    eval_batch: dict[str, torch.Tensor]
    eval_ids: torch.Tensor
    eval_labels: torch.Tensor

    @classmethod
    def build(cls, data: ReviewSentences, *, max_len: int = 32, n_eval: int = 1000,
              mask_seed: int = 123) -> MaskedLMBench:
        corpus = data.corpus
        train_pairs = nsp_pairs(data.train.documents, seed=0)
        test_pairs = nsp_pairs(data.test.documents, seed=1)
        batch = collate_pairs(test_pairs[:n_eval], corpus.cls_id, corpus.sep_id,
                              corpus.pad_id, max_len)
        ids, labels = mask_tokens(batch["input_ids"], corpus.mask_id, len(corpus),
                                  corpus.special_ids,
                                  generator=torch.Generator().manual_seed(mask_seed))
        return cls(data, max_len, train_pairs, test_pairs, batch, ids, labels)

    @property
    def ids_args(self) -> dict:
        """The special ids and length that ``pretrain`` and friends take."""
        c = self.data.corpus
        return dict(special_ids=c.special_ids, cls_id=c.cls_id, sep_id=c.sep_id,
                    pad_id=c.pad_id, mask_id=c.mask_id, max_len=self.max_len)

    def config(self, **changes) -> BertConfig:
        """The bench's tiny BERT (2 layers, width 64, 2 heads, no dropout); ``changes``
        override single fields, e.g. ``share_layers=True``."""
        settings = dict(vocab_size=len(self.data.corpus), hidden_size=64, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=256,
                        max_position_embeddings=self.max_len, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0)
        return BertConfig(**{**settings, **changes})

    def train_and_score(self, model: BertForPreTraining, seed: int, *, steps: int,
                        batch_size: int, lr: float = 2e-3, pairs: Sequence | None = None,
                        **pretrain_args) -> tuple[PretrainingHistory, dict[str, float]]:
        """``pretrain`` ``model`` on ``pairs`` (default: the bench's training pairs), then
        score it on the held-out masked batch (:func:`evaluate_pretraining`)."""
        history = pretrain(model, self.train_pairs if pairs is None else pairs, steps=steps,
                           batch_size=batch_size, lr=lr, seed=seed,
                           **{"progress": False, **pretrain_args, **self.ids_args})
        return history, self.score(model)

    def encode_sentences(self, texts: Sequence[str], tokenize: Callable[[str], list[str]]
                         ) -> tuple[torch.Tensor, torch.Tensor]:
        """Single sentences as pairs with an empty second segment, ``[CLS] ... [SEP] [SEP]``,
        in the bench's compact vocabulary (a piece it never saw becomes ``[UNK]``), padded:
        ``(input_ids, attention_mask)``."""
        corpus = self.data.corpus
        index = {piece: i for i, piece in enumerate(corpus.pieces)}
        unk = index["[UNK]"]
        pairs = [([index.get(p, unk) for p in tokenize(text)], [], 0) for text in texts]
        batch = collate_pairs(pairs, corpus.cls_id, corpus.sep_id, corpus.pad_id, self.max_len)
        return batch["input_ids"], batch["attention_mask"]

    def score(self, model: BertForPreTraining) -> dict[str, float]:
        return evaluate_pretraining(model, self.eval_batch, self.eval_ids, self.eval_labels)

    def baselines(self) -> dict[str, float]:
        """Masked-token accuracy of the context-free guesses (:func:`masked_token_baselines`)
        fitted on the training sentences, on the same masked positions."""
        return masked_token_baselines(self.data.train.sentences(), self.eval_ids,
                                      self.eval_labels, self.data.corpus.special_ids)

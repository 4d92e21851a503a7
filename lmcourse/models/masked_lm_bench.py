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

__all__ = ["MaskedLMBench", "masked_token_baselines"]


# ---- what a model without context would guess ---------------------------------------------------

def masked_token_baselines(train_sequences: Sequence[Sequence[int]], inputs: torch.Tensor,
                           labels: torch.Tensor, special_ids: Sequence[int]
                           ) -> dict[str, float]:
    """Accuracy at the masked positions of ``inputs`` (labels != -100) of three guesses
    fitted on ``train_sequences``:

    * **unigram**: always the most frequent token;
    * **bigram (left)**: ``argmax_w P(w | left neighbour)``;
    * **bigram (both sides)**: ``argmax_w P(w | left) P(right | w)``, which sees one token
      on each side, as a masked LM does (a neighbour that is itself masked is not used).
    """
    specials = set(special_ids)
    unigram: Counter[int] = Counter()
    follows: dict[int, Counter[int]] = {}
    for seq in train_sequences:
        seq = [t for t in seq if t not in specials]
        unigram.update(seq)
        for x, y in zip(seq[:-1], seq[1:], strict=True):
            follows.setdefault(x, Counter())[y] += 1
    top = unigram.most_common(1)[0][0]

    def p_next(x: int, y: int) -> float:  # P(y | x), add-0.1 smoothed
        row = follows.get(x, Counter())
        return (row[y] + 0.1) / (sum(row.values()) + 0.1 * len(unigram))

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
        row = follows.get(left, Counter()) if left is not None else unigram
        guess_left = row.most_common(1)[0][0] if row else top
        candidates = [w for w, _ in row.most_common(200)] or [top]
        if right is not None:  # P(w | left) is proportional to the count of (left, w)
            guess_both = max(candidates, key=lambda w: (row[w] + 0.1) * p_next(w, right))
        else:
            guess_both = guess_left
        hits["unigram"] += target == top
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

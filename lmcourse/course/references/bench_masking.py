"""BERT's static masking as the bench's ``pretrain`` needs it (the static-vs-dynamic arms)."""

from __future__ import annotations

import torch

from lmcourse.course.references.pretraining_corpus import BENCH_MAX_LEN, reviews


class StaticMasker:
    """BERT's static masking for ``pretrain``: ``copies`` masks drawn per pair before
    training; the ``v``-th time a pair is drawn it gets mask ``v % copies``."""

    def __init__(self, pairs: list, copies: int, seed: int):
        from lmcourse.masking import StaticMasking
        from lmcourse.models.pretraining import collate_pairs

        c = reviews().corpus
        ids = collate_pairs(pairs, c.cls_id, c.sep_id, c.pad_id, BENCH_MAX_LEN)["input_ids"]
        self.masks = StaticMasking(ids, copies, mask_id=c.mask_id, vocab_size=len(c),
                                   special_ids=c.special_ids,
                                   generator=torch.Generator().manual_seed(seed))
        self.visits = [0] * len(pairs)

    def __call__(self, rows: list[int], input_ids: torch.Tensor):
        masked, labels = [], []
        for r in rows:
            ids, lab = self.masks(self.visits[r], [r])
            self.visits[r] += 1
            masked.append(ids)
            labels.append(lab)
        width = input_ids.shape[1]
        return torch.cat(masked)[:, :width], torch.cat(labels)[:, :width]

"""SpanBERT's span-boundary objective: boundaries, the head's inputs, and training with it."""

from __future__ import annotations

import pytest
import torch

from lmcourse.masking import mask_spans
from lmcourse.models.bert import BertConfig
from lmcourse.models.pretraining import nsp_pairs, pretrain
from lmcourse.models.spanbert import SpanBertForPreTraining, span_boundaries

TINY = BertConfig(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=32, max_position_embeddings=32)


def _loop_boundaries(labels):
    """The same thing, one position at a time."""
    out = []
    for r, row in enumerate(labels.tolist()):
        for i, x in enumerate(row):
            if x == -100:
                continue
            s = i
            while row[s - 1] != -100:
                s -= 1
            e = i
            while row[e + 1] != -100:
                e += 1
            out.append((r, i, s - 1, e + 1, i - s))
    return out


def test_span_boundaries_match_a_loop_on_random_spans():
    ids = torch.randint(5, 40, (6, 30))
    ids[:, 0], ids[:, -1] = 1, 2
    _, labels = mask_spans(ids, 3, 40, [0, 1, 2, 3, 4], prob=0.3,
                           generator=torch.Generator().manual_seed(0))
    got = list(zip(*(t.tolist() for t in span_boundaries(labels)), strict=True))
    assert got == _loop_boundaries(labels) and len(got) > 20
    offsets = span_boundaries(labels, max_offset=2)[4]
    assert offsets.max() <= 1


def test_a_span_at_the_edge_of_a_row_is_refused():
    labels = torch.full((1, 6), -100)
    labels[0, 4:] = 7
    with pytest.raises(ValueError, match="first or last position"):
        span_boundaries(labels)


def test_the_boundary_head_reads_only_the_two_outside_tokens():
    torch.manual_seed(0)
    model = SpanBertForPreTraining(TINY)
    hidden = torch.randn(1, 8, 16, requires_grad=True)
    labels = torch.full((1, 8), -100)
    labels[0, 3:6] = torch.tensor([7, 8, 9])
    logits = model.sbo(hidden, labels)
    assert logits.shape == (3, 40)
    logits[1].sum().backward()
    touched = hidden.grad[0].abs().sum(-1).nonzero().flatten().tolist()
    assert touched == [2, 6]  # x_{s-1} and x_{e+1}, never the span itself


def test_pretraining_adds_the_boundary_loss_and_it_falls():
    docs = [[[5 + (d + s) % 7, 12, 13, 14, 15, 16] for s in range(6)] for d in range(12)]
    pairs = nsp_pairs(docs, seed=0)
    kw = dict(special_ids=[0, 1, 2, 3, 4], cls_id=1, sep_id=2, pad_id=0, mask_id=3)
    rng = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    model = SpanBertForPreTraining(TINY, max_offset=10)
    history = pretrain(model, pairs, steps=120, batch_size=16, lr=3e-3, progress=False,
                       nsp=False, masker=lambda rows, ids: mask_spans(
                           ids, 3, 40, kw["special_ids"], prob=0.3, generator=rng), **kw)
    assert len(history.auxiliary) == 120
    assert sum(history.auxiliary[-10:]) < 0.6 * sum(history.auxiliary[:10])
    with pytest.raises(RuntimeError, match="same batch"):
        SpanBertForPreTraining(TINY).auxiliary_loss(torch.full((2, 5), -100))

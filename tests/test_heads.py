"""BERT's fine-tuning heads against Hugging Face's classes of the same names, on the real
MiniLM weights in float64; span decoding; errors."""

from __future__ import annotations

import pytest
import torch
import transformers

from lmcourse.models import heads
from lmcourse.models.bert import BertConfig
from lmcourse.pretrained import load_hf_tokenizer, minilm_path

PAIRS = {"BertForSequenceClassification": 3, "BertForTokenClassification": 5,
         "BertForQuestionAnswering": 2}


@pytest.fixture(scope="module")
def batch():
    """Two question/passage pairs of different lengths: padding and two segments."""
    enc = load_hf_tokenizer()(["who wrote the book?", "where is the story set?"],
                              ["the book was written by a retired sailor in 1952",
                               "it is set in a small mining town in the north"],
                              padding=True, return_tensors="pt")
    enc["input_ids"][1, -1] = 0  # make sure the second row has padding to skip
    enc["attention_mask"][1, -1] = 0
    return enc


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_head_equals_hugging_face_on_minilm_in_float64(name, batch):
    torch.manual_seed(0)
    ref = getattr(transformers, name).from_pretrained(
        str(minilm_path()), local_files_only=True, num_labels=PAIRS[name],
        attn_implementation="eager").double().eval()
    ours = getattr(heads, name).from_pretrained(minilm_path(), num_labels=PAIRS[name])
    assert {k: v.shape for k, v in ours.state_dict().items()} == {
        k: v.shape for k, v in ref.state_dict().items() if not k.endswith("position_ids")}
    ours.load_state_dict({k: v for k, v in ref.state_dict().items()
                          if not k.endswith("position_ids")})
    ours = ours.double().eval()
    args = {k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids")}
    with torch.no_grad():
        a, b = ours(**args), ref(**args)
    fields = ("start_logits", "end_logits") if "Question" in name else ("logits",)
    for field in fields:
        x, y = getattr(a, field), getattr(b, field)
        assert x.shape == y.shape
        assert torch.allclose(x, y, atol=1e-10, rtol=0), (field, (x - y).abs().max())


def test_losses_equal_hugging_face(batch):
    torch.manual_seed(0)
    path, args = minilm_path(), {k: batch[k] for k in ("input_ids", "attention_mask",
                                                       "token_type_ids")}
    tags = torch.randint(0, 5, batch["input_ids"].shape)
    tags[batch["attention_mask"] == 0] = -100
    cases = [("BertForSequenceClassification", 3, {"labels": torch.tensor([2, 0])}),
             ("BertForTokenClassification", 5, {"labels": tags}),
             ("BertForQuestionAnswering", 2, {"start_positions": torch.tensor([9, 12]),
                                              "end_positions": torch.tensor([11, 14])})]
    for name, n, targets in cases:
        ref = getattr(transformers, name).from_pretrained(
            str(path), local_files_only=True, num_labels=n,
            attn_implementation="eager").double().eval()
        ours = getattr(heads, name)(BertConfig.from_dict(ref.config.to_dict()), n)
        ours.load_state_dict({k: v for k, v in ref.state_dict().items()
                              if not k.endswith("position_ids")})
        ours = ours.double().eval()
        with torch.no_grad():
            a, b = ours(**args, **targets).loss, ref(**args, **targets).loss
        assert abs(a.item() - b.item()) < 1e-10, name


def test_best_span_is_the_exhaustive_argmax_over_allowed_spans():
    g = torch.Generator().manual_seed(0)
    start, end = torch.randn(20, 12, generator=g), torch.randn(20, 12, generator=g)
    allowed = torch.rand(20, 12, generator=g) > 0.3
    allowed[:, 5] = True
    i, j = heads.best_span(start, end, allowed, max_length=4)
    for b in range(20):
        best = max((start[b, s] + end[b, e], s, e) for s in range(12) for e in range(s, s + 4)
                   if e < 12 and allowed[b, s] and allowed[b, e])
        assert (i[b].item(), j[b].item()) == best[1:]
        assert i[b] <= j[b] < i[b] + 4


def test_bad_input_is_explained():
    config = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=32)
    with pytest.raises(ValueError, match="num_labels must be 2"):
        heads.BertForQuestionAnswering(config, num_labels=3)
    with pytest.raises(ValueError, match="at least 1"):
        heads.BertForSequenceClassification(config, num_labels=0)
    tagger = heads.BertForTokenClassification(config, 4)
    with pytest.raises(ValueError, match="one tag per token"):
        tagger(torch.ones(2, 5, dtype=torch.long), labels=torch.zeros(2, 4, dtype=torch.long))
    qa = heads.BertForQuestionAnswering(config)
    with pytest.raises(ValueError, match="or neither"):
        qa(torch.ones(2, 5, dtype=torch.long), start_positions=torch.zeros(2, dtype=torch.long))
    with pytest.raises(ValueError, match="no allowed token"):
        heads.best_span(torch.zeros(1, 3), torch.zeros(1, 3), torch.zeros(1, 3, dtype=bool))

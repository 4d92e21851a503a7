"""The masking and temperature widgets fed by a real model: their scores are the model's."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import pytest
import torch
import torch.nn.functional as F

from lmcourse.data.sentences import SentenceCorpus
from lmcourse.models.bert import BertConfig
from lmcourse.models.pretraining import BertForPreTraining, mlm_predictor
from lmcourse.viz.masking import masking_figure, masking_widget, score_masking
from lmcourse.viz.temperature import soft_target_kl, temperature_figure


def _toy():
    corpus = SentenceCorpus.from_sentences([["a b c d e f", "b c d e f a"]], str.split)
    config = BertConfig(vocab_size=len(corpus), hidden_size=16, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=32,
                        max_position_embeddings=32)
    torch.manual_seed(0)
    return corpus, BertForPreTraining(config).eval()


def test_compact_tokenizer_reads_unknown_pieces_as_unk():
    corpus, _ = _toy()
    tok = corpus.tokenizer(str.split)
    assert tok.tokenize("a z b") == ["a", "[UNK]", "b"]
    assert tok.vocab["a"] == corpus.pieces.index("a") and len(tok.vocab) == len(corpus)


def test_score_masking_is_the_cross_entropy_at_the_masked_positions():
    corpus, model = _toy()
    predict = mlm_predictor(model)
    ids = torch.tensor([[1, 5, 6, 7, 8, 2], [1, 6, 7, 8, 9, 2]])
    masked, labels = ids.clone(), torch.full_like(ids, -100)
    masked[0, 2], labels[0, 2] = corpus.mask_id, ids[0, 2]
    masked[1, 4], labels[1, 4] = corpus.mask_id, ids[1, 4]
    guesses, loss, accuracy = score_masking(predict, masked, labels)
    logits = model(masked, torch.zeros_like(masked), torch.ones_like(masked))[0]
    by_hand = F.cross_entropy(logits[labels != -100], labels[labels != -100]).item()
    assert math.isclose(loss, by_hand, rel_tol=1e-6)
    assert torch.equal(guesses, logits.argmax(-1))
    right = (logits.argmax(-1)[labels != -100] == labels[labels != -100]).float().mean()
    assert accuracy == pytest.approx(right.item())
    nothing = score_masking(predict, ids, torch.full_like(ids, -100))
    assert math.isnan(nothing[1]) and math.isnan(nothing[2])
    with pytest.raises(ValueError, match="draws x T x vocabulary"):
        score_masking(lambda x: torch.zeros(3, 7), masked, labels)


def test_masking_figure_and_widget_report_the_models_scores_and_change_with_the_sliders():
    corpus, model = _toy()
    tok, predict = corpus.tokenizer(str.split), mlm_predictor(model)
    fig = masking_figure("a b c d e f a b c d e f", tok, schemes=("token",), draws=2,
                         rate_draws=50, prob=0.3, predict=predict)
    scores = fig.model_scores["token"]
    assert 0 <= scores["accuracy"] <= 1 and scores["loss"] > 0
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert any(t.startswith("→ ") for t in texts), "the model's guesses are written"
    assert any("the model gets" in ax.get_title(loc="left") for ax in fig.axes)
    plt.close(fig)
    box = masking_widget("a b c d e f a b c d e f", tok, predict=predict, draws=1,
                         rate_draws=50)
    before = box.state["figure"].model_scores["token"]
    box.controls["prob"].value = 0.6        # twice the masking: the model sees less context
    after = box.state["figure"].model_scores["token"]
    assert after != before
    plt.close("all")


def test_mlm_predictor_keeps_the_model_on_its_device_and_gives_no_gradient():
    _, model = _toy()
    out = mlm_predictor(model)(torch.tensor([[1, 5, 2]]))
    assert out.shape == (1, 3, model.bert.config.vocab_size) and not out.requires_grad


def test_soft_target_kl_is_torchs_kl_divergence():
    z, s = torch.tensor([3.0, 1.0, -2.0, 0.5]), torch.tensor([0.2, 0.1, 0.0, -0.4])
    for T in (0.5, 1.0, 4.0):
        q = torch.softmax(z.double() / T, -1)
        expected = F.kl_div(torch.log_softmax(s.double() / T, -1), q, reduction="sum").item()
        assert soft_target_kl(z, s, T) == pytest.approx(expected, rel=1e-12)
    assert soft_target_kl(z, z, 2.0) == pytest.approx(0.0, abs=1e-12)


def test_many_classes_show_the_top_ones_and_the_rest_as_one_bar():
    z = torch.linspace(5, -5, 900)
    fig = temperature_figure(z.tolist(), [f"w{i}" for i in range(900)], T=4.0, top=10)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels[:10] == [f"w{i}" for i in range(10)] and labels[-1] == "other 890"
    heights = [b.get_height() for b in ax.patches]
    hot = torch.softmax(z.double() / 4.0, -1)
    assert heights[-1] == pytest.approx(1 - hot[:10].sum().item(), rel=1e-9)
    assert "KL(q‖p) at T = 4" in ax.get_title()
    plt.close(fig)

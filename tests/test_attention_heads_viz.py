"""Attention-head pictures: token labels, one panel per head, the widget built headless."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from lmcourse.models.attention import MultiHeadAttention, causal_mask  # noqa: E402
from lmcourse.viz import attention_widget, plot_attention, plot_heads_grid  # noqa: E402
from lmcourse.viz.attention_heads import ALL_HEADS  # noqa: E402

TOKENS = ["the", "cat", "sat", "on", "the", "mat"]


def _attentions(layers=2, heads=4, seed=0):
    """Per-layer B x heads x T x T weights from our own multi-head attention (causal)."""
    torch.manual_seed(seed)
    T = len(TOKENS)
    x = torch.randn(1, T, 12)
    out = []
    for _ in range(layers):
        mha = MultiHeadAttention(12, heads, batch_first=True)
        x, w = mha(x, x, x, causal_mask(T), average_attn_weights=False)
        out.append(w.detach())
    return out


def test_plot_attention_labels_and_pixels():
    weights = _attentions(1)[0][0, 2]
    fig = plot_attention(weights, TOKENS, title="head 2")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == TOKENS
    assert [t.get_text() for t in ax.get_yticklabels()] == TOKENS
    assert ax.get_title() == "head 2"
    np.testing.assert_allclose(ax.images[0].get_array(), weights.numpy(), rtol=1e-6)
    assert len(fig.axes) == 2  # the heatmap and its colour bar
    plt.close(fig)


def test_plot_attention_cross_attention_and_spaces():
    weights = torch.softmax(torch.randn(3, 5), -1)
    keys = ["a", " ", "b", "\n", "c"]
    fig = plot_attention(weights[None, None], keys, ["x", "y", "z"], colorbar=False)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "␣", "b", "↵", "c"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["x", "y", "z"]
    plt.close(fig)
    with pytest.raises(ValueError, match="query and"):
        plot_attention(weights, ["a", "b"])


def test_heads_grid_has_one_panel_per_head():
    attentions = _attentions(2, heads=4)
    fig = plot_heads_grid(attentions, TOKENS, layer=1)
    panels = [ax for ax in fig.axes if ax.images]
    assert [ax.get_title() for ax in panels] == [f"head {h}" for h in range(4)]
    for h, ax in enumerate(panels):
        np.testing.assert_allclose(ax.images[0].get_array(), attentions[1][0, h].numpy(),
                                   rtol=1e-6)
        assert [t.get_text() for t in ax.get_xticklabels()] == TOKENS
    assert "layer 1" in fig._suptitle.get_text()
    plt.close(fig)


def test_heads_grid_hides_unused_panels():
    fig = plot_heads_grid(_attentions(1, heads=3), TOKENS, ncols=2)
    assert sum(bool(ax.images) for ax in fig.axes) == 3
    assert sum(not ax.axison for ax in fig.axes) == 1
    plt.close(fig)


def test_widget_builds_headless_and_redraws():
    attentions = _attentions(2, heads=4)
    box = attention_widget(attentions, TOKENS)
    fig = box.static_figure
    assert sum(bool(ax.images) for ax in fig.axes) == 4
    assert "layer 1" in fig._suptitle.get_text()  # the last layer by default
    assert box.layer_dropdown.options == (0, 1)
    assert box.head_dropdown.options == (ALL_HEADS, 0, 1, 2, 3)
    box.head_dropdown.value = 2  # one head
    box.layer_dropdown.value = 0
    box.head_dropdown.value = ALL_HEADS
    plt.close("all")


def test_widget_accepts_a_single_layer_tensor():
    single = _attentions(1, heads=2)[0]  # a bare B x heads x T x T tensor
    box = attention_widget(single, TOKENS)
    assert box.layer_dropdown.options == (0,)
    assert box.head_dropdown.options == (ALL_HEADS, 0, 1)
    box = attention_widget((single[0, 0],), TOKENS)  # T x T: one head
    assert box.head_dropdown.options == (ALL_HEADS, 0)
    plt.close("all")
    with pytest.raises(ValueError, match="B x heads"):
        attention_widget([torch.zeros(1, 1, 1, 2, 2)], ["a", "b"])


def test_widget_takes_a_real_hugging_face_models_attentions():
    """Any model that returns attentions works: here the real MiniLM checkpoint, read from
    disk with transformers (eager attention, which returns the weights)."""
    from transformers import BertModel

    from lmcourse.pretrained import load_hf_tokenizer, minilm_path

    tokenizer = load_hf_tokenizer()
    model = BertModel.from_pretrained(str(minilm_path()), local_files_only=True,
                                      attn_implementation="eager").eval()
    enc = tokenizer("the bank raised interest rates", return_tensors="pt")
    with torch.no_grad():
        attentions = model(**enc, output_attentions=True).attentions
    tokens = tokenizer.convert_ids_to_tokens(enc["input_ids"][0])
    assert len(attentions) == model.config.num_hidden_layers
    box = attention_widget(attentions, tokens, layer=2)
    fig = box.static_figure
    heatmaps = [ax for ax in fig.axes if ax.images]
    assert len(heatmaps) == model.config.num_attention_heads
    shown = heatmaps[5].images[0].get_array()
    np.testing.assert_allclose(shown, attentions[2][0, 5].numpy(), atol=1e-6)
    assert [t.get_text() for t in heatmaps[0].get_xticklabels()] == tokens
    plt.close("all")

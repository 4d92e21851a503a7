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


LONG = ("the prime minister said on tuesday that the new budget would cut taxes for "
        "families and small firms while raising spending on schools hospitals and roads "
        "across the whole country").split()


def _long_attentions(heads=4):
    torch.manual_seed(1)
    return [torch.softmax(torch.randn(1, heads, len(LONG), len(LONG)), -1)]


def _overlaps(labels, renderer, axis):
    boxes = [t.get_window_extent(renderer) for t in labels]
    lo, hi = ("x0", "x1") if axis == "x" else ("y0", "y1")
    spans = sorted((getattr(b, lo), getattr(b, hi)) for b in boxes)
    return sum(a[1] > b[0] + 0.5 for a, b in zip(spans, spans[1:], strict=False))


def test_heads_grid_labels_every_token_of_a_long_sentence_legibly():
    assert len(LONG) == 30
    fig = plot_heads_grid(_long_attentions(), LONG)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    panels = [ax for ax in fig.axes if ax.images]
    assert len(panels) == 4
    for h, ax in enumerate(panels):
        xlabels = ax.get_xticklabels()
        assert [t.get_text() for t in xlabels] == LONG
        assert min(t.get_fontsize() for t in xlabels) >= 4
        assert _overlaps(xlabels, renderer, "x") == 0
        if h % 2 == 0:  # first column: the query labels
            ylabels = ax.get_yticklabels()
            assert [t.get_text() for t in ylabels] == LONG
            assert _overlaps(ylabels, renderer, "y") == 0
    plt.close(fig)


def test_widget_recomputes_the_heads_for_a_typed_sentence():
    calls = []

    def compute(sentence):
        calls.append(sentence)
        if "!" in sentence:
            raise ValueError("no exclamation marks, please")
        words = sentence.split()
        torch.manual_seed(len(words))
        return [torch.softmax(torch.randn(1, 4, len(words), len(words)), -1)
                for _ in range(3)], words

    box = attention_widget(_attentions(2, heads=4), TOKENS, compute=compute,
                           text=" ".join(TOKENS), head=1)
    assert box.head_dropdown.value == 1 and box.text_box.value == " ".join(TOKENS)
    assert box.layer_dropdown.options == (0, 1) and calls == []
    static = box.static_figure  # drawn from the given attentions, not from compute
    assert [t.get_text() for t in static.axes[0].get_xticklabels()] == TOKENS

    box.text_box.value = "a dog barked at the moon tonight"
    assert calls == ["a dog barked at the moon tonight"]
    assert box.shown["tokens"] == "a dog barked at the moon tonight".split()
    assert box.layer_dropdown.options == (0, 1, 2)  # compute's model has three layers
    assert box.shown["layers"][0].shape == (1, 4, 7, 7)
    assert "7 tokens" in box.message.value
    box.head_dropdown.value = ALL_HEADS
    box.layer_dropdown.value = 2

    box.text_box.value = "stop!"
    assert "cannot show" in box.message.value and "exclamation" in box.message.value
    assert box.shown["tokens"] == "a dog barked at the moon tonight".split()  # kept
    plt.close("all")


def test_widget_without_compute_has_no_text_box_and_checks_head():
    box = attention_widget(_attentions(1, heads=2), TOKENS)
    assert box.text_box is None and box.head_dropdown.value == ALL_HEADS
    with pytest.raises(ValueError, match="head must be"):
        attention_widget(_attentions(1, heads=2), TOKENS, head=5)
    plt.close("all")


@pytest.mark.parametrize("heads, tokens", [(12, TOKENS * 2), (4, LONG)])
def test_heads_grid_text_does_not_collide(heads, tokens):
    """Head titles, axis labels and tick labels of neighbouring panels stay apart."""
    torch.manual_seed(0)
    n = len(tokens)
    fig = plot_heads_grid([torch.softmax(torch.randn(1, heads, n, n), -1)], tokens)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    panels = [ax for ax in fig.axes if ax.images]
    for i, ax in enumerate(panels):
        title = ax.title.get_window_extent(renderer)
        for j, other in enumerate(panels):
            texts = [other.xaxis.label, *other.get_xticklabels(), *other.get_yticklabels()]
            if j != i:
                texts.append(other.title)
            for text in texts:
                if text.get_text():
                    assert not title.overlaps(text.get_window_extent(renderer)), (
                        f"title of head {i} overlaps {text.get_text()!r} of head {j}")
    plt.close(fig)

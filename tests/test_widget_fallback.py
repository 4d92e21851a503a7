"""Every widget carries its static figure in its own display data: a kernel draws the live
widget only, a page without one (site, slides, an unrun notebook) the figure only."""

from __future__ import annotations

import base64

import matplotlib.pyplot as plt
import numpy as np
import pytest

from lmcourse.viz.figures import WIDGET_TEXT, box_with_figure, figure_png
from tools.nbtools import WIDGET_VIEW

PNG_MAGIC = b"\x89PNG"


def _widgets():
    from lmcourse.viz import attention_widget, masking_widget
    from lmcourse.viz.embeddings import neighbours_widget
    from lmcourse.viz.gradient_flow import gradient_flow_widget
    from lmcourse.viz.temperature import temperature_widget
    from lmcourse.viz.tokens import segmentation_widget

    rng = np.random.default_rng(0)
    words = ["king", "queen", "man", "woman", "cairo", "egypt", "rome", "italy"]
    vectors = {"toy": rng.normal(size=(len(words), 4))}
    attentions = [np.full((1, 2, 3, 3), 1 / 3)]
    return {
        "gradient flow": lambda: gradient_flow_widget(seq_len=10, hidden_size=4),
        "neighbours": lambda: neighbours_widget(vectors, words, words[:2], query="king", k=3),
        "attention": lambda: attention_widget(attentions, ["a", "b", "c"], layer=0),
        "masking": lambda: masking_widget("a b c d e f g h", draws=1, rate_draws=10),
        "temperature": lambda: temperature_widget([2.0, 1.0, 0.0], ["x", "y", "z"]),
        "segmentation": lambda: segmentation_widget({"chars": list}, "abc"),
    }


@pytest.mark.parametrize("name", list(_widgets()))
def test_a_widgets_display_data_holds_the_view_and_its_fallback(name):
    plt.close("all")
    box = _widgets()[name]()
    data = box._repr_mimebundle_()
    assert data[WIDGET_VIEW]["model_id"] == box.model_id
    assert data["text/plain"] == WIDGET_TEXT
    fallbacks = {"image/png", "text/html"} & set(data)
    assert len(fallbacks) == 1, f"{name}: one fallback, a figure or HTML: {sorted(data)}"
    if "image/png" in data:
        assert base64.b64decode(data["image/png"]).startswith(PNG_MAGIC)
    else:
        assert "abc" in data["text/html"] or "a" in data["text/html"]
    assert plt.get_fignums() == [], f"{name}: left a figure open to be drawn a second time"


def test_box_with_figure_needs_a_fallback_and_closes_the_figure():
    with pytest.raises(ValueError, match="static figure or fallback html"):
        box_with_figure([])
    fig, ax = plt.subplots()
    ax.plot([0, 1])
    box = box_with_figure([], fig)
    assert box.static_figure is fig and not plt.fignum_exists(fig.number)
    assert base64.b64decode(figure_png(fig)).startswith(PNG_MAGIC)

"""The encoder–decoder drawing of chapter 07 (``lmcourse.viz.architecture``)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from lmcourse.viz.architecture import draw_encoder_decoder  # noqa: E402


@pytest.mark.parametrize("norm_first", [False, True])
def test_draws_both_stacks_with_their_blocks(norm_first):
    ax = draw_encoder_decoder(norm_first=norm_first)
    texts = [t.get_text() for t in ax.texts]
    assert sum("self-attention" in t for t in texts) == 2   # encoder and decoder (masked)
    assert sum("cross-attention" in t for t in texts) == 1  # decoder only
    assert sum(t == "feed-forward" for t in texts) == 2
    norms = [t for t in texts if "LayerNorm" in t]
    # post-norm: one "Add & LayerNorm" per block (2 + 3); pre-norm: one per block + 2 final
    assert len(norms) == (7 if norm_first else 5)
    assert ("pre" if norm_first else "post") + "-norm" in ax.get_title()
    plt.close(ax.figure)

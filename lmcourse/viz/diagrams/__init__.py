r"""Eleven architecture drawings from the course's papers, boxes and arrows, matplotlib only.

Each ``draw_*`` function draws one static figure into ``ax`` (a new figure when ``ax`` is
``None``) and returns the Axes. The look is that of :mod:`lmcourse.viz.architecture`:
rounded boxes, grey arrows, equal scales, no axes, a title.

* :func:`draw_elmo`: characters → char-CNN → highway → $x_k$ → 2-layer biLSTM → tied
  softmax; $\mathrm{ELMo}_k = \gamma \sum_j s_j h_{k,j}$.
* :func:`draw_bahdanau`: $e_{ij} = v^\top\tanh(W s_{i-1} + U h_j)$, $\alpha_{ij} =
  \mathrm{softmax}_j(e_{ij})$, $c_i = \sum_j \alpha_{ij} h_j$.
* :func:`draw_multi_head`: split into $h$ heads of $d_k = d_{model}/h$, attend, concatenate,
  $W^O$.
* :func:`draw_truncation`: full, regular and randomized truncation of BPTT.
* :func:`draw_bert_inputs`: $x_i = E_{tok} + E_{seg} + E_{pos}$.
* :func:`draw_bert_heads`: BERT's four fine-tuning setups.
* :func:`draw_electra`: generator, discriminator, $\mathcal{L}_{MLM} + \lambda
  \mathcal{L}_{Disc}$.
* :func:`draw_albert`: factorised embeddings and cross-layer sharing.
* :func:`draw_deberta`: disentangled attention and the enhanced mask decoder.
* :func:`draw_distilbert_init`: the student copies one teacher layer out of two.
* :func:`draw_tinybert_mapping`: TinyBERT's layer map $g(m) = mN/M$ and its losses.

Labels that tests look up carry a ``gid`` (e.g. ``"teacher:4"``, ``"segment:3"``), and the
arrows that carry a mapping have one too (``"copy:4:2"``, ``"map:2:6"``).
"""

from lmcourse.viz.diagrams._pieces import CUT  # noqa: F401  (the colour of a cut; tests read it)
from lmcourse.viz.diagrams.bert_family import (
    draw_albert,
    draw_bert_heads,
    draw_bert_inputs,
    draw_deberta,
    draw_distilbert_init,
    draw_electra,
    draw_tinybert_mapping,
)
from lmcourse.viz.diagrams.sequence import (
    draw_bahdanau,
    draw_elmo,
    draw_multi_head,
    draw_truncation,
)

__all__ = ["draw_albert", "draw_bahdanau", "draw_bert_heads", "draw_bert_inputs",
           "draw_deberta", "draw_distilbert_init", "draw_electra", "draw_elmo",
           "draw_multi_head", "draw_tinybert_mapping", "draw_truncation"]

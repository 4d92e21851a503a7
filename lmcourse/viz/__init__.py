"""Pictures: static matplotlib figures and ipywidgets that carry a static figure as fallback.

Importing :mod:`lmcourse.viz` registers every widget's options: the gradient-flow
widget's cell menu (``rnn`` here, ``lstm`` and ``gru`` from :mod:`lmcourse.viz.gates`)
is the same whichever chapter imports it first.
"""
from lmcourse.viz import gates as _gates  # noqa: F401  (registers the LSTM and GRU cells)
from lmcourse.viz.attention_heads import (  # noqa: F401
    attention_widget,
    plot_attention,
    plot_heads_grid,
)
from lmcourse.viz.embeddings import (  # noqa: F401
    neighbours_widget,
    plot_neighbours,
    plot_projection,
)
from lmcourse.viz.gradient_flow import (  # noqa: F401
    gradient_flow,
    gradient_flow_widget,
    plot_gradient_flow,
)
from lmcourse.viz.graph import draw_dag, draw_graph  # noqa: F401
from lmcourse.viz.masking import (  # noqa: F401
    masking_figure,
    masking_widget,
    plot_masking,
    plot_masking_rates,
)

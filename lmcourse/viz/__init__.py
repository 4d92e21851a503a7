"""Pictures: static matplotlib figures and ipywidgets that also draw a static figure."""
from lmcourse.viz.attention_heads import (  # noqa: F401  (chapter 06)
    attention_widget,
    plot_attention,
    plot_heads_grid,
)
from lmcourse.viz.embeddings import (  # noqa: F401  (chapter 04)
    neighbours_widget,
    plot_neighbours,
    plot_projection,
)
from lmcourse.viz.gradient_flow import (  # noqa: F401  (chapter 02)
    gradient_flow,
    gradient_flow_widget,
    plot_gradient_flow,
)
from lmcourse.viz.graph import draw_dag, draw_graph  # noqa: F401  (chapter 01)

"""Pure figure builders: data in, ``plotly.graph_objects.Figure`` out.

One module per notebook topic. No builder touches widgets or global state; the
widgets in ``mha_core.widgets`` call these and copy the result into a persistent
``FigureWidget``.
"""

from .._display import show_figures_with_words

show_figures_with_words()  # in a kernel every figure is shown with its words (mha_core.widgets._words)

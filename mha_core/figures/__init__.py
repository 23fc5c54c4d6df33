"""Pure figure builders: data in, ``plotly.graph_objects.Figure`` out.

One module per notebook topic. No builder touches widgets or reads global state but the
theme; the widgets in ``mha_classroom.widgets`` call these and copy the result into a persistent
``FigureWidget``.

Importing this package changes nothing, and neither does building a figure: a builder returns a
``go.Figure`` and leaves how it is shown to the notebook. The course platform beside this package
(``mha_classroom.show_figures_with_words``, called in each notebook's first cell) has the kernel show
every figure with its words for a screen reader; ``mha_core`` never imports it.
"""

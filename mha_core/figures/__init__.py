"""Pure figure builders: data in, ``plotly.graph_objects.Figure`` out.

One module per notebook topic. No builder touches widgets or global state; the
widgets in ``mha_core.widgets`` call these and copy the result into a persistent
``FigureWidget``.
"""

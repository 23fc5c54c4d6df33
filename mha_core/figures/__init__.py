"""Pure figure builders: data in, ``plotly.graph_objects.Figure`` out.

One module per notebook topic. No builder touches widgets or reads global state but the
theme; the widgets in ``mha_core.widgets`` call these and copy the result into a persistent
``FigureWidget``.

Importing this package changes nothing. In a kernel the first figure built has the kernel
show every ``go.Figure`` with its words for a screen reader (``figures._style.base_layout``
calls ``mha_core.widgets._words.install``).
"""

"""Live controls: ipywidgets wired to the pure builders in ``mha_core.figures``.

One module per notebook topic. Each control group owns one live figure (``_base.figure_widget``:
a ``_live_figure.LiveFigure``), displayed once and updated in place (``_base.update_in_place``: one
diff per change); callbacks hold no maths of their own. Every control is reachable with Tab and moved with arrow keys.
"""

"""Live controls: ipywidgets wired to the pure builders in ``mha_core.figures``.

One module per notebook topic. Each control group owns one ``go.FigureWidget``,
displayed once and updated in place inside ``batch_update()``; callbacks hold no
maths of their own. Every control is reachable with Tab and moved with arrow keys.
"""

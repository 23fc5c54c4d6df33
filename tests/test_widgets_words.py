"""Every figure in JupyterLab carries its words: live figures through their group's helper, kept current on every
redraw; static figures as one hidden HTML output after plotly's own. (In the page: tests/browser/lab_axe.py.)"""

import re

import pytest

widgets = pytest.importorskip("ipywidgets")
go = pytest.importorskip("plotly.graph_objects")

from mha_classroom.describe import in_words, spoken  # noqa: E402
from mha_classroom.widgets import _keys, _words  # noqa: E402


def shown_by(group, monkeypatch) -> list:
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda *objs, **kw: shown.extend(objs))
    group._ipython_display_()
    return shown


def test_a_shown_head_grid_gives_its_helper_the_words_of_its_figure(monkeypatch):
    from mha_classroom.widgets.heads import head_grid

    monkeypatch.delenv("MHA_COURSE_STATIC", raising=False)
    group = head_grid(16, 4)
    _box, helper = shown_by(group, monkeypatch)
    words = in_words(group.figure._mha_shown)
    assert helper.words == [{"name": words.name, "description": spoken(words.description)}]
    assert "H = 4 heads" in helper.words[0]["name"]
    assert "head 4," in helper.words[0]["description"] and "head 5," not in helper.words[0]["description"]


@pytest.mark.parametrize("held", [False, True], ids=["from the kernel", "held by the page"])
def test_a_control_change_rewrites_the_words_from_the_new_figure(monkeypatch, held):
    from mha_classroom.widgets.heads import head_grid

    monkeypatch.delenv("MHA_COURSE_STATIC", raising=False)
    group = head_grid(16, 4)
    group.hold_settings = held
    _box, helper = shown_by(group, monkeypatch)
    sent, figure_messages = [], []
    helper._channel.observe(lambda change: sent.append(change["new"]), names="words")  # on its channel (_channel)
    original = group.figure._channel.send
    group.figure._channel.send = lambda content, buffers=None: (figure_messages.append(content), original(content, buffers))
    group.head_count.value = 2
    if held:
        # No message at all: the page switched to H = 2 by itself, with the words it holds for it.
        assert sent == figure_messages == []
        [state] = [s for s in group.figure._channel.held["states"] if s["values"] == [group.head_count.index]]
        assert state["words"] == helper.words[0]
    else:
        assert len(sent) + len(figure_messages) == 1  # one message per change: the words ride with the figure's change
        assert figure_messages[0]["words"] == helper.words[0]
    assert "H = 2 heads" in helper.words[0]["name"]
    assert helper.words[0]["description"] == spoken(in_words(group.figure._mha_shown).description)
    assert max(int(h) for h in re.findall(r"\bhead (\d+),", helper.words[0]["description"])) == 2


def test_an_unshown_group_computes_no_words():
    from mha_classroom.widgets.heads import head_grid

    group = head_grid(16, 4)
    calls = []
    original = _words.words_of
    try:
        _words.words_of = lambda fig: calls.append(fig) or original(fig)
        group.head_count.value = 2
    finally:
        _words.words_of = original
    assert calls == []


def test_the_helper_script_writes_a_polite_live_region_and_labels_each_plot_as_a_described_image():
    esm = _keys.keyboard_helper()._esm
    for needed in ('"aria-live", "polite"', '"aria-atomic", "true"', '"role", "img"', '"aria-label"',
                   '"aria-describedby"', '"aria-hidden", "true"', 'channel.on("change:words"', 'channel.off("change:words"',
                   "channel_of(model)"):
        assert needed in esm, needed
    assert "focus()" not in esm.split("function move")[0]  # announcing never moves the focus


def test_a_static_figure_is_shown_by_plotly_without_its_mode_bar_then_its_words(monkeypatch):
    import IPython.display
    import plotly.io as pio

    monkeypatch.delenv("MHA_COURSE_STATIC", raising=False)
    monkeypatch.setattr(pio.renderers, "default", "plotly_mimetype")
    fig = go.Figure(go.Bar(x=["the", "cache"], y=[0.25, 0.75]), layout={"title": {"text": "Weights of `key`"}})
    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda *objs, **kw: shown.append((objs, kw)))
    _words.show_figure(fig)
    ((bundle,), how), ((words_output,), told) = shown
    assert how["raw"] is True and how["display_id"].startswith("mha-figure-")  # plotly's own bundle, with an id
    assert bundle["application/vnd.plotly.v1+json"]["config"] == {"displayModeBar": False}
    assert bundle["application/vnd.plotly.v1+json"]["data"][0]["y"] == [0.25, 0.75]
    assert told["display_id"].startswith("mha-words-") and told["display_id"] != how["display_id"]
    text = words_output.data
    assert "\u2018cache\u2019 0.75" in text and 'aria-hidden' in text and '"role", "img"' in text
    assert re.search(r'<div class="mha-figure-words" id="(mha-words-[0-9a-f]{12})"', text)
    assert '"Weights of `key`"' in text  # the name, as JSON for the script


def test_in_static_mode_a_figure_gets_no_second_description(monkeypatch):
    import IPython.display

    monkeypatch.setenv("MHA_COURSE_STATIC", "1")
    fig = go.Figure(go.Bar(x=["a"], y=[1.0]))
    shown = []
    monkeypatch.setattr(type(fig), "_ipython_display_", lambda self: shown.append("plotly"))
    monkeypatch.setattr(IPython.display, "display", lambda *objs, **kw: shown.extend(objs))
    _words.show_figure(fig)
    assert shown == ["plotly"]


def test_install_registers_figures_only_inside_ipython():
    assert _words.install() is False  # no IPython shell in a test process


def test_the_words_are_hidden_by_a_clip_not_by_display_none():
    style = _words.SR_ONLY_STYLE
    assert "clip-path:inset(50%)" in style and "display:none" not in style and "visibility" not in style
    assert "position:absolute" not in style  # in the flow: an empty output never becomes a scrollable region
    assert _keys.keyboard_helper().layout.display is None

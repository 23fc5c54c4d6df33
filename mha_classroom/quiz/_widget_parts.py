"""What the quiz's widget modules share: sizes, CSS, colours, formatting and small controls.

The question view (``question_view``), the set (``widget``) and the progress table
(``progress_view``) are built from these; nothing here knows about the bank or the store
beyond a grading ``Verdict``.
"""

from __future__ import annotations

import html
import re

import ipywidgets as widgets

from mha_core import projector

from .. import _theme
from .grading import Verdict

#: Quiz text on a laptop: a little larger than the controls, for reading questions.
LAPTOP_FONT_PX = 18
KEYS_HINT = "Keyboard: Tab moves to the next option or button, Space chooses an option, Enter presses Check."

_CSS = """
<style>
.mha-quiz {{ font-size: {px}px; line-height: 1.45; max-width: 60em; }}
.mha-quiz .widget-html-content, .mha-quiz .widget-radio-box label, .mha-quiz .widget-checkbox label,
.mha-quiz .widget-checkbox span, .mha-quiz input, .mha-quiz button {{ font-size: {px}px !important; }}
.mha-quiz .widget-html-content {{ line-height: 1.45; white-space: normal; }}
.mha-quiz .widget-radio-box {{ width: 100%; }}
.mha-quiz .widget-radio-box label {{ white-space: normal; height: auto; line-height: 1.45; margin: 0.15em 0;
  display: flex; flex-direction: row-reverse; justify-content: flex-end; align-items: flex-start; }}
.mha-quiz .widget-radio-box input {{ float: none; flex: 0 0 auto; margin-top: 0.35em; }}
.mha-quiz .widget-checkbox {{ height: auto; width: 100%; }}
.mha-quiz .widget-checkbox label {{ white-space: normal; height: auto; line-height: 1.45; }}
.mha-quiz .widget-label {{ font-size: {px}px !important; }}
.mha-quiz .jupyter-button {{ flex: 0 0 auto; width: auto; min-width: 6em; height: auto; overflow: visible; margin-right: 0.6em; }}
.mha-quiz .mha-quiz-question {{ border-top: 1px solid #bbb; padding-top: 0.5em; margin-top: 0.5em; }}
.mha-quiz .mha-quiz-hint {{ color: #555; font-size: {hint}px; }}
.mha-quiz code {{ font-size: 1em; background: #f2f2f2; padding: 0 0.2em; }}
</style>
"""


def font_px(theme: projector.Theme | None = None) -> int:
    """The quiz's text size: 18 px on a laptop, the theme's control size (20 px) on a projector."""
    return max(LAPTOP_FONT_PX, projector.resolve(theme).control_font_size)


def css(theme: projector.Theme | None = None) -> str:
    """The quiz's ``<style>`` block at ``theme``'s size (None: the theme in use now)."""
    theme = projector.resolve(theme)
    px = font_px(theme)
    # Hints (how to answer, which keys) a little smaller than the questions, never below the theme's smallest text.
    return _CSS.format(px=px, hint=max(round(0.9 * px), theme.min_text_size))

COLOURS = {"right": "#1a6b35", "wrong": "#8a4b00", "info": "#1b4f72"}


# --------------------------------------------------------------------------- formatting


def plain_label(text: str) -> str:
    """Option text for a control label, which shows plain text: code marks (`...`) dropped."""
    return text.replace("`", "")


def rich(text: str) -> str:
    """Plain text to HTML: escaped, with `backticks` as code."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


def message(text: str, kind: str) -> str:
    return f'<div role="status" style="color:{COLOURS[kind]}">{rich(text)}</div>'


def verdict_html(verdict: Verdict) -> str:
    colour = COLOURS["right" if verdict.correct else "wrong"]
    lines = "".join(f"<div>{rich(d)}</div>" for d in verdict.details)
    # One region read whole, in order (aria-atomic): Orca read the explanation first and the verdict last.
    return (f'<div role="status" aria-atomic="true"><div style="color:{colour};font-weight:bold">{rich(verdict.headline)}</div>'
            f'{lines}</div>')


def html_widget(value: str = "", css_class: str | None = None) -> widgets.HTML:
    w = widgets.HTML(value=value, style={"font_size": f"{font_px()}px"}, layout=widgets.Layout(width="100%"))
    if css_class:
        w.add_class(css_class)
    return w


def button(description: str, css_class: str, tooltip: str) -> widgets.Button:
    b = widgets.Button(description=description, tooltip=tooltip, style={"font_size": f"{font_px()}px"},
                       layout=widgets.Layout(width="auto", height="auto", padding="0.2em 1em"))
    b.add_class(css_class)
    return b


# --------------------------------------------------------------------------- display once


def execution_count() -> int | None:
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    return getattr(shell, "execution_count", None) if shell is not None else None


class Displayable:
    """Shows ``self.box``; skips the second display IPython makes of a cell's last value."""

    _displayed_in: int | None = None

    def _ipython_display_(self):
        from IPython.display import display

        # quick_check() displays the quiz itself; when its result is also the cell's last
        # value, IPython would show it a second time in the same cell. Skip that one.
        count = execution_count()
        if count is not None and count == self._displayed_in:
            self._displayed_in = None
            return
        self._displayed_in = count
        display(self.box)
        _theme.keep(self.restyle, f"the {type(self).__name__}")

    def restyle(self, theme: projector.Theme) -> None:
        """Show the same in ``theme``'s text sizes, where it stands (``presenter`` switched the theme)."""
        raise NotImplementedError

"""The review's progress table: every set's results and the course total, with a reset that asks first."""

from __future__ import annotations

import html
import time

import ipywidgets as widgets

from .._display import in_ipython, static_mode
from ._widget_parts import Displayable, button, css, execution_count, font_px, html_widget, message
from .bank import Bank, default_bank
from .progress import ProgressStore, default_store
from .summary import progress_summary


class ProgressView(Displayable):
    """The review's table of every set, and a reset button that asks first.

    Attributes: .table (HTML, mha-quiz-progress), .reset_button, .confirm_button,
    .cancel_button (shown only while asking), .message (HTML), .box, .store.
    """

    def __init__(self, store: ProgressStore | None = None, bank: Bank | None = None):
        self.store = store or default_store()
        self.bank = bank or default_bank()
        self.table = html_widget("", "mha-quiz-progress")
        self.message = html_widget("", "mha-quiz-note")
        self.reset_button = button("Reset progress…", "mha-quiz-reset", "Erase your recorded answers (asks first)")
        self.confirm_button = button("Yes, erase my answers", "mha-quiz-reset-confirm", "Erase every recorded answer")
        self.confirm_button.button_style = "danger"
        self.cancel_button = button("Cancel", "mha-quiz-reset-cancel", "Keep your answers")
        self.confirm_button.layout.display = "none"
        self.cancel_button.layout.display = "none"
        self.reset_button.on_click(lambda _: self.ask_reset())
        self.confirm_button.on_click(lambda _: self.confirm_reset())
        self.cancel_button.on_click(lambda _: self.cancel_reset())
        self.box = widgets.VBox([html_widget(css()), self.table, widgets.HBox([self.reset_button, self.confirm_button, self.cancel_button]), self.message])
        self.box.add_class("mha-quiz")
        self.refresh()

    def restyle(self, theme) -> None:
        """The table and its buttons in ``theme``'s sizes: the style first, then the table, which sets its own."""
        self.box.children[0].value = css(theme)
        self.refresh()

    def refresh(self) -> None:
        summary = progress_summary(self.store, self.bank)
        self.table.value = progress_table_html(summary)
        if self.store.note:
            self.message.value = message(self.store.note, "wrong")

    def ask_reset(self) -> None:
        n = self.store.count()
        self.message.value = message(f"This erases all {n} recorded answers. Are you sure?", "wrong")
        self.confirm_button.layout.display = None
        self.cancel_button.layout.display = None

    def confirm_reset(self) -> int:
        erased = self.store.reset()
        self._hide_confirm()
        self.refresh()
        self.message.value = message(f"Erased {erased} recorded answers.", "info")
        return erased

    def cancel_reset(self) -> None:
        self._hide_confirm()
        self.message.value = message("Nothing was erased.", "info")

    def _hide_confirm(self) -> None:
        self.confirm_button.layout.display = "none"
        self.cancel_button.layout.display = "none"


def progress_table_html(summary) -> str:
    """The summary as an HTML table: one row per set, then the course total; the rows add up to it."""
    head = ("Notebook", "Topic", "Questions", "Tried", "Right at least once", "Right on the latest try", "Tries", "Last answered")
    rows = []
    repeated = 0
    for key, r in summary.items():
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(r.last_time)) if r.last_time else "not yet"
        cells = (r.set_id if key != "course" else "all", r.title, r.questions, r.attempted, r.best, r.last, r.tries, when)
        if key != "course":
            repeated += r.repeated
        weight = "font-weight:bold;border-top:2px solid #333;" if key == "course" else ""
        rows.append("<tr>" + "".join(f'<td style="{weight}padding:0.2em 0.5em">{html.escape(str(c))}</td>' for c in cells) + "</tr>")
    header = "".join(f'<th style="text-align:left;vertical-align:bottom;padding:0.2em 0.5em">{h}</th>' for h in head)
    foot = ""
    if repeated:
        foot = (f'<div class="mha-quiz-hint mha-quiz-progress-note" style="margin-top:0.3em">'
                f"Each question counts once, in the notebook it belongs to, so the rows add up to the total. "
                f"The review's quick check also repeats {repeated} questions of notebooks 01-10: "
                f"an answer to one of them counts in that notebook's row.</div>")
    # width:100% lets long topics wrap inside the output area (about 848 px at 1280 x 800 with the
    # file browser open) instead of running past it.
    return (f'<table style="font-size:{font_px()}px;border-collapse:collapse;width:100%">'
            f"<caption style=\"text-align:left;font-weight:bold\">Your quick-check progress</caption>"
            f"<thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table>{foot}")


STATIC_PROGRESS_NOTE = (
    "Your progress is kept in JupyterLab: there this table reads the progress file every quick check writes to, "
    "and shows how many questions of each notebook you have tried and got right, with a reset button. This page has "
    "no progress file; each page's quick check keeps your answers in this browser only, with its own reset button."
)


def static_progress_html(summary) -> str:
    """The review's table as a handout shows it: every notebook, its topic and its questions, and where progress is kept.

    A handout has no kernel and no progress file (``make handouts`` points the store at a throwaway one), so the
    columns of results would always read zero.
    """
    head = ("Notebook", "Topic", "Questions")
    rows = []
    for key, r in summary.items():
        cells = (r.set_id if key != "course" else "all", r.title, r.questions)
        weight = "font-weight:bold;border-top:2px solid #333;" if key == "course" else ""
        rows.append("<tr>" + "".join(f'<td style="{weight}padding:0.2em 0.5em">{html.escape(str(c))}</td>' for c in cells) + "</tr>")
    header = "".join(f'<th scope="col" style="text-align:left;vertical-align:bottom;padding:0.2em 0.5em">{h}</th>' for h in head)
    return (f'<div class="mha-quiz-static-progress"><p style="font-size:{font_px()}px">{html.escape(STATIC_PROGRESS_NOTE)}</p>'
            f'<table style="font-size:{font_px()}px;border-collapse:collapse;width:100%">'
            '<caption style="text-align:left;font-weight:bold">The course\'s quick checks</caption>'
            f"<thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>")


def show_progress(*, show: bool | None = None, store: ProgressStore | None = None) -> ProgressView:
    """Display the progress table for every notebook (for the review notebook) and return it."""
    view = ProgressView(store=store)
    if show if show is not None else in_ipython():
        from IPython.display import HTML, display

        if static_mode():
            # A handout (make handouts): no kernel to read or reset progress; the sections and where progress lives.
            display(HTML(static_progress_html(progress_summary(view.store, view.bank))))
            view._displayed_in = execution_count()  # the cell's own value is not shown a second time
        else:
            display(view)
    return view

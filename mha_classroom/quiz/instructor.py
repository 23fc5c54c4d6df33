"""The instructor's side of a class: how the room is doing, and a clock for the lesson plan.

In the instructor's own JupyterLab on the course hub::

    from mha_classroom.quiz.instructor import room_view, panel
    room_view("03")      # the room on notebook 03's exercises (split_heads, merge_heads); Refresh redraws
    room_view("split_heads")
    panel("A")           # plan A of the guide: its parts, Start / Next, minutes per part, the room's counts

The counts come from the class poll (``poll.verdict_counts``, ``poll.counts``): each
learner once, by their latest verdict or answer in the last ten minutes, anonymous,
readable only with the hub role ``instructor``. Off the hub, or for a learner's
account, the view says so in a sentence and shows nothing else. The panel's clock is
kept in the kernel (``time.monotonic``); it needs no network, and the plan is data
(``data/lesson_plans.json``, the guide's tables, which a test keeps equal).

The pure parts (``room_rows``, ``room_text``, ``LessonClock``, ``load_plans``) build
text and numbers; the widgets only wire buttons to them.
"""

from __future__ import annotations

import html
import json
import re
import time
from dataclasses import dataclass, field

from . import poll

#: A quick-check id cited in a plan's "what you do" text, as the guide writes it.
BANK_ID = re.compile(r"`(\d\d-[a-z0-9]+(?:-[a-z0-9]+)*)`")
NOT_ON_HUB = ("The room's results show only on the course hub: this kernel has no class poll "
              "(MHA_POLL_URL and a hub token are not set).")
NO_ANSWER = ("The class poll did not answer: it shows the room only to the hub role instructor, "
             "and only while the service is up.")


# --------------------------------------------------------------------------- which exercises


def exercises_for(what) -> tuple[str, ...]:
    """Exercise names for a notebook ("03", 3) or an exercise name (or a list of them); ValueError naming the valid ones."""
    from ..exercises import catalogue

    known = catalogue()
    items = [what] if isinstance(what, (str, int)) and not isinstance(what, bool) else list(what or ())
    names: list[str] = []
    for item in items:
        text = f"{item:02d}" if isinstance(item, int) and not isinstance(item, bool) else str(item)
        if text in known:
            names.append(text)
            continue
        found = [n for n, entry in known.items() if entry["notebook"] == text]
        if not found:
            notebooks = sorted({entry["notebook"] for entry in known.values()})
            raise ValueError(f"what={item!r} is neither an exercise nor a notebook with exercises; valid are "
                             f"{', '.join(known)} or the notebooks {', '.join(notebooks)}")
        names += found
    if not names:
        raise ValueError(f"what={what!r} names no exercise; valid are {', '.join(known)}")
    return tuple(dict.fromkeys(names))


# --------------------------------------------------------------------------- the room, as rows and text


def room_rows(counts: dict) -> list[tuple[str, int]]:
    """One exercise's counts (``poll.verdict_counts``) as (label, learners) rows, passed first, then each mistake."""
    rows = [("passed", counts["passed"])]
    rows += sorted(((f"mistake: {name}", n) for name, n in counts["mistakes"].items()),
                   key=lambda r: (-r[1] if isinstance(r[1], (int, float)) and not isinstance(r[1], bool) else 0, str(r[0])))
    rows += [("other wrong result or error", counts["other"]), ("not tried yet", counts["not_tried"])]
    return rows


def room_text(results: dict) -> str:
    """``{exercise: counts or None}`` as the plain text the view shows (and a screen reader reads)."""
    lines = []
    for name, counts in results.items():
        if counts is None:
            lines.append(f"{name}: no answer from the class poll")
            continue
        minutes = round(counts["window_s"] / 60)
        lines.append(f"{name} ({counts['present']} learners seen in the last {minutes} minutes):")
        lines += [f"  {label}: {n}" for label, n in room_rows(counts)]
    return "\n".join(lines)


def _number(value) -> str:
    """A count from the poll as text: a whole number, or "?" for anything else (never the value's own text)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or abs(value) == float("inf"):
        return "?"
    return str(int(value))


def room_html(results: dict) -> str:
    """``{exercise: counts or None}`` as HTML. Everything from the poll is data: each count is coerced
    to a whole number ("?" if it is not one) and each text escaped, so no reply can put markup in the page."""
    parts = []
    for name, counts in results.items():
        name = html.escape(str(name))
        if not isinstance(counts, dict):
            parts.append(f"<p><b>{name}</b>: no answer from the class poll.</p>")
            continue
        window = counts.get("window_s")
        minutes = _number(window / 60 if _number(window) != "?" else None)
        try:
            rows = room_rows(counts)
        except (KeyError, TypeError, AttributeError):
            rows = []
        cells = "".join(f"<tr><td>{html.escape(str(label))}</td><td style='text-align:right'>{_number(n)}</td></tr>"
                        for label, n in rows)
        parts.append(f"<table class='mha-room-table'><caption style='text-align:left'><b>{name}</b>: "
                     f"{_number(counts.get('present'))} learners seen in the last {minutes} minutes</caption>"
                     f"<tr><th style='text-align:left'>verdict</th><th>learners</th></tr>{cells}</table>")
    return "".join(parts)


def room_counts(names, window_s: float = poll.DEFAULT_WINDOW_S) -> dict | None:
    """``{exercise: poll.verdict_counts(...)}`` for ``names``; None off the hub. Never raises."""
    if not poll.available():
        return None
    return {name: poll.verdict_counts(name, window_s) for name in names}


def _room_message(results: dict | None) -> str:
    if results is None:
        return f"<div role='status'>{html.escape(NOT_ON_HUB)}</div>"
    if all(c is None for c in results.values()):
        return f"<div role='status'>{html.escape(NO_ANSWER)}</div>"
    return f"<div role='status'>{room_html(results)}</div>"


def question_text(question_id: str, counts: dict | None) -> str:
    """A quick check's room counts (``poll.counts``) by the letters every place shows, as one line."""
    from .bank import default_bank
    from .grading import option_labels, option_order

    if counts is None:
        return f"{question_id}: no answer from the class poll"
    question = next((q for q in default_bank().all_questions() if q.id == question_id), None)
    if question is not None and question.kind != "numeric":
        order = option_order(question)
        labels = option_labels(order)
        parts = [f"{labels[i].rstrip(')')}: {counts['counts'].get(str(i), 0)}" for i in order]
    else:
        parts = [f"{value}: {n}" for value, n in sorted(counts["counts"].items())]
    return f"{question_id} ({counts['answered']} learners answered): " + ", ".join(parts)


# --------------------------------------------------------------------------- the room view (a widget)


@dataclass
class RoomView:
    """The room on some exercises: ``.output`` (HTML), ``.refresh_button``, ``.refresh()``, ``.box``."""

    names: tuple
    window_s: float = poll.DEFAULT_WINDOW_S
    results: dict | None = None
    box: object = field(default=None, repr=False)

    def __post_init__(self):
        import ipywidgets as widgets

        self.output = widgets.HTML()
        self.output.add_class("mha-room")
        self.refresh_button = widgets.Button(description="Refresh", tooltip="Ask the class poll again")
        self.refresh_button.on_click(lambda _: self.refresh())
        self.box = widgets.VBox([self.refresh_button, self.output])
        self.refresh()

    def refresh(self) -> str:
        self.results = room_counts(self.names, self.window_s)
        self.output.value = _room_message(self.results)
        return self.output.value

    def _ipython_display_(self):
        from IPython.display import display

        display(self.box)


def room_view(what="03", *, window_s: float = poll.DEFAULT_WINDOW_S, show: bool | None = None) -> RoomView:
    """Show how the room is doing on a notebook's exercises (or named ones), with a Refresh button."""
    from .._display import in_ipython

    view = RoomView(exercises_for(what), window_s)
    if show if show is not None else in_ipython():
        from IPython.display import display

        display(view.box)
    return view


# --------------------------------------------------------------------------- lesson plans and their clock


def load_plans() -> dict:
    """The guide's lesson plans (``data/lesson_plans.json``): ``{plan id: {"title", "sessions": [...]}}``."""
    from mha_core._data import data_file

    path = data_file("lesson_plans.json")
    return {p["id"]: p for p in json.loads(path.read_text(encoding="utf-8"))["plans"]}


def plan_parts(plan: str = "A", session: int = 1) -> list[dict]:
    """The parts of one session of a plan, each with its quick-check ids and its notebook's exercises."""
    from ..exercises import catalogue

    plans = load_plans()
    if plan not in plans:
        raise ValueError(f"plan={plan!r} is not a lesson plan; valid plans are {', '.join(map(repr, plans))}")
    sessions = plans[plan]["sessions"]
    if not (isinstance(session, int) and 1 <= session <= len(sessions)):
        raise ValueError(f"session={session!r}: plan {plan} has sessions 1 to {len(sessions)}")
    known = catalogue()
    parts = []
    for part in sessions[session - 1]["parts"]:
        exercises = tuple(n for n, e in known.items() if e["notebook"] == part["notebook"])
        parts.append({**part, "questions": tuple(BANK_ID.findall(part["what"])), "exercises": exercises})
    return parts


class LessonClock:
    """Which part of the plan is running and for how long, kept in the kernel; ``clock`` is injectable for tests."""

    def __init__(self, parts: list[dict], clock=time.monotonic):
        self.parts, self._clock = parts, clock
        self.current: int | None = None  # None before Start, len(parts) after the last Next
        self.elapsed = [0.0] * len(parts)
        self._since: float | None = None

    def _bank(self) -> None:
        if self._since is not None and self.current is not None and self.current < len(self.parts):
            now = self._clock()
            self.elapsed[self.current] += now - self._since
            self._since = now

    def start(self) -> None:
        """Start the first part (again, from zero)."""
        self.elapsed = [0.0] * len(self.parts)
        self.current, self._since = 0, self._clock()

    def next(self) -> None:
        """Close the current part and start the next one (after the last: the plan is over)."""
        if self.current is None:
            return self.start()
        self._bank()
        if self.current < len(self.parts):
            self.current += 1
            self._since = self._clock()

    def minutes(self) -> list[float]:
        self._bank()
        return [e / 60 for e in self.elapsed]

    def text(self) -> str:
        """The plan as lines: planned and elapsed minutes per part, the running one marked."""
        spent = self.minutes()
        lines = []
        for i, (part, used) in enumerate(zip(self.parts, spent)):
            mark = ">" if i == self.current else " "
            over = " (over)" if used > part["minutes"] else ""
            lines.append(f"{mark} {used:4.1f} of {part['minutes']:2d} min  {part['notebook'] or '-':>2}  "
                         f"{part['what']}{over}")
        total = sum(p["minutes"] for p in self.parts)
        lines.append(f"  {sum(spent):4.1f} of {total} min in all")
        return "\n".join(lines)


def part_room_text(part: dict) -> str:
    """The room's counts for a part's quick checks and its notebook's exercises, as text."""
    if not poll.available():
        return NOT_ON_HUB
    lines = [question_text(q, poll.counts(q)) for q in part["questions"]]
    results = room_counts(part["exercises"]) or {}
    if results:
        lines.append(room_text(results))
    return "\n".join(lines) if lines else "This part has no quick check or exercise to count."


class Panel:
    """The instructor's panel: ``.clock`` (a LessonClock), ``.start_button``, ``.next_button``,
    ``.refresh_button``, ``.plan_text`` and ``.room_text`` (HTML), ``.box``."""

    def __init__(self, plan: str = "A", session: int = 1, clock=time.monotonic):
        import ipywidgets as widgets

        self.clock = LessonClock(plan_parts(plan, session), clock)
        self.title = widgets.HTML(f"<b>Plan {html.escape(plan)}, session {session}</b>")
        self.plan_text, self.room_text = widgets.HTML(), widgets.HTML()
        self.start_button = widgets.Button(description="Start", tooltip="Start the first part's clock")
        self.next_button = widgets.Button(description="Next part", tooltip="Close this part and start the next")
        self.refresh_button = widgets.Button(description="Refresh", tooltip="Update the minutes and ask the poll again")
        self.start_button.on_click(lambda _: self._do(self.clock.start))
        self.next_button.on_click(lambda _: self._do(self.clock.next))
        self.refresh_button.on_click(lambda _: self._do(None))
        buttons = widgets.HBox([self.start_button, self.next_button, self.refresh_button])
        self.box = widgets.VBox([self.title, buttons, self.plan_text, self.room_text])
        self.box.add_class("mha-panel")
        self._do(None)

    def _do(self, action) -> None:
        if action is not None:
            action()
        self.plan_text.value = f"<pre role='status'>{html.escape(self.clock.text())}</pre>"
        current = self.clock.current
        if current is None or current >= len(self.clock.parts):
            room = "Press Start to start the clock." if current is None else "The plan is over."
        else:
            room = part_room_text(self.clock.parts[current])
        self.room_text.value = f"<pre role='status'>{html.escape(room)}</pre>"

    def _ipython_display_(self):
        from IPython.display import display

        display(self.box)


def panel(plan: str = "A", session: int = 1, *, show: bool | None = None) -> Panel:
    """Show the instructor's panel for a plan of the guide ("A", or "B" with session 1 or 2)."""
    from .._display import in_ipython

    p = Panel(plan, session)
    if show if show is not None else in_ipython():
        from IPython.display import display

        display(p.box)
    return p

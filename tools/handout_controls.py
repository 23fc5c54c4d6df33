"""A control group's recorded settings as part of a handout page (``tools/handouts.py``).

``mha_classroom.widgets._states`` records, while the notebook runs in static mode, every
setting a control group declares: per setting, the option of each control, the figure's
plotly JSON, its words and the lines shown beside it. Here that record becomes HTML:
native, keyboard-usable controls (radio buttons in a fieldset named by its legend, a
labelled slider or list, checkboxes for head switches), the lines, the figure (the same
markup as every other figure: an image named by its title and described by its words),
and the settings as JSON, each figure kept as its change from an earlier one (``figure_diff``: the
course's one figure diff, the same a live figure sends in JupyterLab).
``handout_assets/states.js`` switches between them; without scripts the page shows the
first setting.
"""

from __future__ import annotations

import html
import json
import re

from mha_classroom.widgets._plain import apply_diff, figure_diff  # the course's one figure diff, shared with JupyterLab


def _json_in_script(data) -> str:
    """JSON that is safe inside a ``<script>`` element (no ``</script>`` can close it early)."""
    return json.dumps(data, separators=(",", ":")).replace("</", "<\\/").replace("<!--", "<\\!--")


def _figure_markup(spec: dict, figure_id: str, *, live: bool = False) -> str:
    """The ``<figure>`` for ``spec``; ``live``: its words are announced when a control changes them."""
    from mha_classroom.describe import in_words

    words = in_words(spec)
    name, text = html.escape(words.name), html.escape(words_text(words.description))
    polite = ' aria-live="polite"' if live else ""
    return (
        f'<figure class="mha-figure" id="{figure_id}">'
        f'<div class="mha-plot" role="img" aria-label="{name}" aria-describedby="{figure_id}-words"></div>'
        f'<p class="mha-figure-words" id="{figure_id}-words"{polite}><b>In words:</b> '
        f'<span class="mha-figure-words-text">{text}</span></p>'
        f'<script type="application/json" class="mha-figure-data">{_json_in_script(spec)}</script></figure>'
    )


def words_text(description: str) -> str:
    """A description as the page shows it: `code` marks as quotes, one run of plain text.

    Plain text on purpose: Chromium stops reading a description into the accessibility tree
    after some dozens of child nodes, and each <code> would add two.
    """
    return re.sub(r"`([^`]+)`", "\u2018\\1\u2019", description)


#: The figure's title, spoken when a setting changes it: a visually hidden line among the group's lines, which
#: sit in a polite live region (``states.js`` rewrites a line only when its text changes). Without it a listener
#: heard the new description but not the new title, which is where most figures say what the setting is
#: ("H = 8 heads of d_head = 2"; "38 heads off: held-out mean 0.950").
NAME_TEXT = "mha-figure-name"
SR_ONLY = "position:absolute;width:1px;height:1px;margin:-1px;padding:0;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap;border:0"


def _name_html(name: str) -> str:
    # Escaped as the browser writes text back (innerHTML), so an unchanged title is not rewritten and said again.
    return html.escape(f"Figure: {name}.", quote=False)


def states_page_data(data: dict) -> dict:
    """The recorded settings of a control group as the page keeps them: each figure as its change from an
    earlier setting ``r`` (the first, the one before it, or the first of its base: whichever change is smallest)."""
    figures = [state["figure"] for state in data["states"]]
    base_idx = [k for k, c in enumerate(data["controls"]) if c.get("base")]
    base_start = {}
    states = []
    for i, state in enumerate(data["states"]):
        key = tuple(state["values"][k] for k in base_idx)
        base_start.setdefault(key, i)
        entry = {"v": state["values"], "n": state["words"]["name"], "w": words_text(state["words"]["description"]),
                 "t": {**state["texts"], NAME_TEXT: _name_html(state["words"]["name"])}}
        if i:
            refs = sorted({0, i - 1, base_start[key]} - {i})
            diffs = [(len(json.dumps(d, separators=(",", ":"))), r, d)
                     for r in refs for d in [figure_diff(figures[r], figures[i]) or {}]]
            _, ref, diff = min(diffs, key=lambda t: (t[0], t[1]))
            entry["f"] = diff
            if ref:
                entry["r"] = ref
        states.append(entry)
    return {"controls": data["controls"], "states": states, "mode": data["mode"]}


def page_figure(page_data: dict, first: dict, index: int) -> dict:
    """The figure of setting ``index`` rebuilt from ``states_page_data`` and the first figure (as states.js does)."""
    state = page_data["states"][index]
    base = first if not index else page_figure(page_data, first, state.get("r", 0))
    return apply_diff(base, state.get("f"))


def _control_html(control: dict, k: int, value: int, prefix: str) -> str:
    """One control as native, keyboard-usable HTML (disabled until ``states.js`` brings it to life).

    A slider's readout is hidden from screen readers: an ``<output>`` is a live region, so Orca said
    every new value twice (the slider's own value text, then the readout).
    """
    cid = f"{prefix}-c{k}"
    legend = html.escape(control["legend"])
    labels = control["labels"]
    if control["kind"] == "range":
        return (f'<div class="mha-states-control mha-states-range"><label for="{cid}">{legend}</label> '
                f'<input type="range" id="{cid}" data-control="{k}" min="0" max="{len(labels) - 1}" step="1" '
                f'value="{value}" aria-valuetext="{html.escape(labels[value])}" disabled> '
                f'<output for="{cid}" class="mha-states-readout" aria-hidden="true">{html.escape(labels[value])}</output></div>')
    if control["kind"] == "select":
        options = "".join(f'<option value="{i}"{" selected" if i == value else ""}>{html.escape(label)}</option>'
                          for i, label in enumerate(labels))
        return (f'<div class="mha-states-control"><label for="{cid}">{legend}</label> '
                f'<select id="{cid}" data-control="{k}" disabled>{options}</select></div>')
    items = "".join(
        f'<label><input type="radio" name="{cid}" data-control="{k}" value="{i}"{" checked" if i == value else ""} disabled>'
        f"<span>{html.escape(label)}</span></label>" for i, label in enumerate(labels))
    return f'<fieldset class="mha-states-control mha-states-radio"><legend>{legend}</legend>{items}</fieldset>'


def _checkboxes_html(group: list[tuple[int, dict]], values: list[int], prefix: str) -> str:
    """A run of on/off controls (one per head) as one fieldset of checkboxes."""
    items = []
    for k, control in group:
        checked = control["labels"][values[k]] == "on"
        items.append(f'<label><input type="checkbox" id="{prefix}-c{k}" data-control="{k}"'
                     f'{" checked" if checked else ""} disabled><span>{html.escape(control["name"])}</span></label>')
    return (f'<fieldset class="mha-states-control mha-states-checks"><legend>{html.escape(group[0][1]["legend"])}</legend>'
            + "".join(items) + "</fieldset>")


def states_html(data: dict, figure_id: str) -> str:
    """A control group's recorded settings: its controls, the lines it shows, its figure, and the settings as JSON.

    ``states.js`` switches between the settings; without scripts the page shows the first setting.
    """
    first = data["states"][0]
    prefix = f"{figure_id}-controls"
    parts = [f'<div class="mha-states" id="{prefix}" data-figure="{figure_id}">']
    if data.get("note"):
        parts.append(f'<p class="mha-states-note">{html.escape(data["note"])}</p>')
    if data.get("sentence"):
        parts.append(f'<p class="mha-states-mode">{html.escape(data["sentence"])}</p>')
    controls = data["controls"]
    k = 0
    while k < len(controls):
        if controls[k]["kind"] == "checkbox":
            run = [(k, controls[k])]
            while k + 1 < len(controls) and controls[k + 1]["kind"] == "checkbox" and controls[k + 1]["legend"] == controls[k]["legend"]:
                k += 1
                run.append((k, controls[k]))
            parts.append(_checkboxes_html(run, first["values"], prefix))
        else:
            parts.append(_control_html(controls[k], k, first["values"][k], prefix))
        k += 1
    texts = "".join(f'<div class="mha-states-text" data-text="{html.escape(attr)}">{value}</div>'
                    for attr, value in first["texts"].items())
    texts += (f'<div class="mha-states-text" data-text="{NAME_TEXT}" style="{SR_ONLY}">'
              f'{_name_html(first["words"]["name"])}</div>')
    if any(c["kind"] == "select" for c in controls):
        # A list's new choice, said in words: after Down on a list Orca spoke the figure's new words but
        # often not the choice itself (07's sentence list), so states.js writes it here.
        texts += f'<div class="mha-states-choice" style="{SR_ONLY}"></div>'
    parts.append(f'<div class="mha-states-texts" aria-live="polite">{texts}</div>')
    parts.append(_figure_markup(first["figure"], figure_id, live=True))
    parts.append(f'<script type="application/json" class="mha-states-data">{_json_in_script(states_page_data(data))}</script>'
                 "</div>")
    return "".join(parts)

"""The instructor's guide cites only what exists: notebooks, headings, controls, bank ids; plans add up.

The citation forms are documented at the top of ``docs/instructor_guide.md``:

- a notebook file: ``notebooks/NN_topic.ipynb`` (in backticks);
- a heading, in guillemets, exactly as the notebook writes it: «## 5. Live control: how many heads?»;
- a control (the function that builds it), in backticks with empty brackets: ``head_grid()``;
- a quick-check question by its bank id, in backticks: ``03-what-is-a-head``.

A section ``## NN · Title (`notebooks/NN_topic.ipynb`)`` covers one notebook; headings and
controls quoted in it must be in that notebook.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from mha_classroom.quiz.bank import SET_IDS, default_bank

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "instructor_guide.md"

NOTEBOOK_REF = re.compile(r"`(notebooks/(\d\d)_[a-z0-9_]+\.ipynb)`")
HEADING_REF = re.compile(r"«(#{1,4} [^»]+)»")
CONTROL_REF = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)\(\)`")
BANK_ID_REF = re.compile(r"`(\d\d-[a-z0-9]+(?:-[a-z0-9]+)*)`")
SECTION = re.compile(r"^## (\d\d) · .*$", re.MULTILINE)
PLAN_TABLE = re.compile(r"^\| (\d+) \| [^|]+ \| [^|]+ \|$", re.MULTILINE)


def guide_text() -> str:
    return GUIDE.read_text(encoding="utf-8")


def sections() -> dict[str, str]:
    """Notebook number -> the text of its section (up to the next ``## `` heading)."""
    text = guide_text()
    starts = [(m.group(1), m.start()) for m in SECTION.finditer(text)]
    found = {}
    for (number, start), (_, end) in zip(starts, starts[1:] + [(None, len(text))]):
        body = text[start:end]
        following = re.search(r"^## (?!\d\d · )", body[3:], re.MULTILINE)
        found[number] = body[: following.start() + 3] if following else body
    return found


def notebook_of(number: str, body: str) -> Path:
    first_line = body.splitlines()[0]
    match = NOTEBOOK_REF.search(first_line)
    assert match, f"section {number} names no notebook in its heading: {first_line!r}"
    assert match.group(2) == number, f"section {number} names {match.group(1)}"
    return ROOT / match.group(1)


def read_notebook(path: Path):
    assert path.exists(), f"the guide cites {path.relative_to(ROOT)}, which does not exist"
    return nbformat.read(path, as_version=4)


def headings(nb) -> set[str]:
    return {line.strip() for cell in nb.cells if cell.cell_type == "markdown"
            for line in cell.source.splitlines() if line.startswith("#")}


def called(nb, name: str) -> bool:
    pattern = re.compile(rf"(?<![\w.]){re.escape(name)}\(|\.{re.escape(name)}\(")
    return any(pattern.search(cell.source) for cell in nb.cells if cell.cell_type == "code")


SECTIONS = sections()


def test_the_guide_has_one_section_per_notebook_in_course_order():
    assert list(SECTIONS) == list(SET_IDS), f"sections {list(SECTIONS)}; expected {list(SET_IDS)}"


def test_every_notebook_the_guide_names_exists():
    missing = sorted({ref for ref, _ in NOTEBOOK_REF.findall(guide_text()) if not (ROOT / ref).exists()})
    assert not missing, f"the guide names notebooks that do not exist: {missing}"


def test_every_bank_id_the_guide_cites_is_in_the_bank():
    bank_ids = {q.id for q in default_bank().all_questions()}
    cited = set(BANK_ID_REF.findall(guide_text()))
    assert cited, "the guide cites no quick-check question"
    assert not cited - bank_ids, f"not in the bank: {sorted(cited - bank_ids)}"


@pytest.mark.parametrize("number", list(SECTIONS))
def test_each_section_cites_its_own_quick_check_questions(number):
    own = [i for i in BANK_ID_REF.findall(SECTIONS[number]) if i.startswith(f"{number}-")]
    assert own, f"section {number} cites none of notebook {number}'s questions"


@pytest.mark.parametrize("number", list(SECTIONS))
def test_each_quoted_heading_is_in_its_notebook(number):
    body = SECTIONS[number]
    nb = read_notebook(notebook_of(number, body))
    quoted = [h.strip() for h in HEADING_REF.findall(body)]
    missing = [h for h in quoted if h not in headings(nb)]
    assert not missing, f"section {number} quotes headings its notebook does not have: {missing}"


@pytest.mark.parametrize("number", list(SECTIONS))
def test_each_named_control_is_called_in_its_notebook(number):
    body = SECTIONS[number]
    nb = read_notebook(notebook_of(number, body))
    names = CONTROL_REF.findall(body)
    missing = [n for n in names if not called(nb, n)]
    assert not missing, f"section {number} names controls its notebook never calls: {missing}"


@pytest.mark.parametrize("number", [n for n in SECTIONS if n not in ("00", "11")])
def test_each_section_with_a_live_control_names_it(number):
    assert CONTROL_REF.search(SECTIONS[number]), f"section {number} names no control"


def test_every_section_gives_the_notebooks_run_time_and_what_to_do_when_a_figure_stops():
    for number, body in SECTIONS.items():
        assert "**Run time:**" in body, f"section {number} gives no run time"
        assert "**If a figure stops updating.**" in body, f"section {number} says nothing about a stuck figure"


def _plan_minutes(title: str) -> list[list[int]]:
    """The minutes column of each table under the plan whose heading starts with ``title``."""
    text = guide_text()
    start = text.index(title)
    body_start = start + len(title)
    following = re.search(r"^#{2,3} ", text[body_start:], re.MULTILINE)
    block = text[start: body_start + following.start()] if following else text[start:]
    tables = re.split(r"\n\s*\n(?=\*\*|\|)", block)
    return [[int(m) for m in PLAN_TABLE.findall(t)] for t in tables if PLAN_TABLE.search(t)]


def test_the_50_minute_plan_adds_up_to_50_minutes():
    (minutes,) = _plan_minutes("### Plan A: one 50-minute session")
    assert sum(minutes) == 50, minutes


def test_each_90_minute_session_adds_up_to_90_minutes():
    sessions = _plan_minutes("### Plan B: two 90-minute sessions")
    assert len(sessions) == 2
    assert [sum(m) for m in sessions] == [90, 90], sessions


def test_the_citation_patterns_catch_what_they_should():
    # The checks above are only as good as these patterns.
    sample = ("«## 5. Live control: how many heads?» `head_grid()` `03-what-is-a-head` "
              "`notebooks/03_multiple_heads.ipynb` `quick_check(\"03\", classroom=True)`")
    assert HEADING_REF.findall(sample) == ["## 5. Live control: how many heads?"]
    assert CONTROL_REF.findall(sample) == ["head_grid"]
    assert BANK_ID_REF.findall(sample) == ["03-what-is-a-head"]
    assert NOTEBOOK_REF.findall(sample) == [("notebooks/03_multiple_heads.ipynb", "03")]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("from x import head_grid\nhead_grid(d_model=16)")])
    assert called(nb, "head_grid") and not called(nb, "grid")

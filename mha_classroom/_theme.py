"""What the course has shown follows ``mha_core.presenter``: each figure, control group and quick check
is built again in the new sizes where it stands, without running a cell.

An instructor who switches the projector theme on in front of a class (``mha_core.presenter(True)``)
sees every figure above and below grow to the projector's sizes at once; training is not run again
and no cell's numbers change, because each thing is built again from what it already holds: a
builder's figure from its inputs (``mha_core.figures._style.builder``), a control group from its
controls' current values (``ControlGroup.restyle``), a quick check from its questions.

Whatever shows something calls ``keep`` with a function that restyles it; the first call has
``presenter`` call ``restyle_shown`` after every switch (``projector.follow``). Nothing happens on
import. A figure the learner built without a builder, or changed after building, keeps its sizes.
"""

from __future__ import annotations

from mha_core import projector

#: One ``(restyle, what)`` per thing shown in this kernel: a function taking the new theme, and what it restyles.
_shown: list = []


def keep(restyle, what: str) -> None:
    """Call ``restyle(theme)`` after every switch of the theme, for something just shown (``what``, in words)."""
    projector.follow(restyle_shown)
    _shown.append((restyle, what))


def restyle_shown(theme: projector.Theme) -> list[str]:
    """Restyle everything shown, oldest first; return what could not be, with why (each is left as it was).

    Something that fails does not stop the rest, and the cell names each one, so an instructor knows which
    cells to run again.
    """
    failed = []
    for restyle, what in list(_shown):
        try:
            restyle(theme)
        except Exception as error:  # noqa: BLE001 - one figure's failure must not leave the others in the old sizes
            failed.append(f"{what} ({type(error).__name__}: {error})"[:200])
    if failed:
        print(f"{len(failed)} of the {len(_shown)} figures and controls shown could not be built again in the "
              f"{theme.name} sizes; run their cells again:\n" + "\n".join(f"  {line}" for line in failed))
    return failed

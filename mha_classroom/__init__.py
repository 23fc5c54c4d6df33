"""mha_classroom: the course platform beside the teaching library ``mha_core``.

``mha_core`` is what a learner reads to learn: attention, the torch module, the cache, costs,
blocks, models, pretrained models, figure builders. This package is the classroom around it,
and ``mha_core`` never imports it:

    widgets     the controls of each notebook, the live-figure plumbing and its JavaScript (js/)
    exercises   the learner's checks (planted mistakes, verdicts to the room's poll)
    quiz        quick checks, progress, the poll client, the instructor's view;
                ``python -m mha_classroom.quiz`` in a terminal
    describe    a figure in words, for a screen reader
    _display    where code is shown: a kernel or not, live or for a static page
    kernel_io   the course's kernels: output streams with no empty flush, a control's change answered
                with idle alone when quick (environment settings)
    server_io   the hub's learners' servers: a kernel's activity read with less work (a server option)

Importing it changes nothing. Each notebook's first cell calls ``show_figures_with_words()``:
from then on the kernel shows every ``go.Figure`` (a builder's from ``mha_core.figures``) with its
words for a screen reader. Building a control does the same.
"""


def show_figures_with_words() -> None:
    """Have this kernel show every ``go.Figure`` with its words for a screen reader (``widgets._words.install``).

    Once per kernel; a second call changes nothing. Outside IPython (a script, the tests) nothing happens.
    """
    from .widgets._words import install

    install()

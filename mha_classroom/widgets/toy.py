"""Controls for notebooks 06 and 08: train the toy model live; switch its heads off.

``LiveTraining`` (06): seed, head-count and step-budget controls. A change retrains
the model (the status line reads "training..." and a progress bar moves) and the one
figure shows each head's role scores step by step as they emerge. A setting trained
before comes back from the in-process cache at once. Bad settings (a head count that
does not divide d_model, a seed that is not a whole number, a budget below one step)
show a plain message beside the controls. The budget goes up to ``MAX_BUDGET`` steps,
under a minute of training on a quiet two-core machine; Kernel > Interrupt (or the toolbar's stop
button) stops a run within a step and keeps it: the figure, the progress bar and
``result`` show the model as trained so far, and the status line says where it stopped.

``HeadSwitches`` (08): one checkbox per head; the figure shows the model's accuracy
per relation with the unticked heads off. Every on/off combination is measured once
when the group is built, so a click only looks the answer up.
"""

from __future__ import annotations

import itertools

import ipywidgets as widgets
import numpy as np

from mha_core import _validate, projector
from mha_core.figures.toy import ablation_figure, role_history_figure

from ._base import ControlGroup, TrainingGroup, figure_widget, message_box, show_message, update_in_place

#: The head counts the slider offers; those that do not divide d_model = 48 get a message.
MAX_HEADS = 8
#: Redraw the live figure at most this often during training (every ``eval_every`` steps it is measured).
REDRAW_EVERY = 10
#: The largest step budget the control accepts: under a minute on a quiet two-core machine (one head
#: trains about 200 steps a second there: issue 24 measured 4,710 steps in 22 s; eight heads are about 1.8 times slower, as
#: measured side by side on a busy machine: 15 and 26 ms a step). Longer runs belong in a cell.
MAX_BUDGET = 5_000


def check_budget(max_steps) -> None:
    """A ValueError naming ``max_steps`` when the budget is above what the control allows."""
    if isinstance(max_steps, int) and max_steps > MAX_BUDGET:
        raise ValueError(f"max_steps={max_steps} is more than this control allows; valid budgets are 1 to {MAX_BUDGET:,} "
                         f"steps (under a minute of training on a quiet two-core machine). For a longer run, call "
                         f"mha_core.models.train(n_heads=..., seed=..., max_steps=...) in a cell: "
                         f"Kernel > Interrupt stops it and keeps the model")


def parse_seed(text) -> int:
    """A seed typed into the text box, as an int; TypeError/ValueError naming ``seed`` otherwise."""
    text = str(text).strip()
    try:
        value = int(text)
    except ValueError:
        value = text  # not a whole number: seed_int's TypeError quotes the text
    return _validate.seed_int(value)


def history_arrays(result):
    """Steps (N,) and role scores (N, H, R) from a trained model's history (or a partial one)."""
    history = result if isinstance(result, list) else result.history
    steps = np.array([p.step for p in history])
    scores = np.stack([p.role_scores for p in history])  # (N, H, R)
    return steps, scores


def history_figure(result, relations, *, max_steps: int, theme: projector.Theme | None = None):
    """The live figure for a (partial) history: what ``LiveTraining`` shows, in ``theme``'s sizes."""
    steps, scores = history_arrays(result)
    return role_history_figure(steps, scores, relations, max_steps=max_steps, validate=False, theme=theme)


def status_text(result, relations) -> str:
    """One line: steps taken, and the accuracy reached on each relation."""
    p = result.final
    acc = ", ".join(f"{name} {a:.2f}" for name, a in zip(relations, p.accuracy))
    if getattr(result, "interrupted", False):
        return (f"{result.config.n_heads} head(s), seed {result.config.seed}: stopped at step {p.step} of "
                f"{result.config.max_steps} (interrupted); the figure shows the model as trained so far. Accuracy: {acc}.")
    verdict = "reached the target" if result.reached_target else "did not reach the target"
    return f"{result.config.n_heads} head(s), seed {result.config.seed}: {p.step} steps, {verdict}. Accuracy: {acc}."


class LiveTraining(TrainingGroup):
    """Seed (text), head count (slider) and step budget; a progress bar; one live figure.

    Attributes: ``seed``, ``n_heads``, ``max_steps`` (controls), ``progress``,
    ``status``, ``message``, ``figure``, ``result`` (the TrainedModel shown).
    """

    redraw_every = REDRAW_EVERY
    #: A handout has no Python to train: three seeds of the starting head count, trained while it is built
    #: (``widgets._states``).
    handout_controls = {"seed": ["0", "1", "2"]}
    handout_note = ("Training needs Python, so here you pick one of three seeds, each trained with 3 heads while "
                    "this page was built. In JupyterLab you type any seed and choose the head count and the step budget.")

    def __init__(self, n_heads: int = 3, seed: int = 0, max_steps: int | None = None):
        from mha_core.models.tasks import RELATIONS
        from mha_core.models.training import TrainConfig

        self.relations = RELATIONS.relations
        default = TrainConfig()
        max_steps = default.max_steps if max_steps is None else max_steps
        self.theme = projector.theme()  # read once: every redraw keeps the sizes the group was built with
        style = {"description_width": "initial"}
        self.seed = widgets.Text(value=str(seed), description="seed", continuous_update=False, style=style,
                                 layout=widgets.Layout(width="150px"))
        self.n_heads = widgets.IntSlider(value=n_heads, min=1, max=MAX_HEADS, description="heads H",
                                         continuous_update=False, style=style, layout=widgets.Layout(width="330px"))
        self.max_steps = widgets.IntText(value=max_steps, description=f"step budget (1 to {MAX_BUDGET:,})", style=style,
                                         layout=widgets.Layout(width="260px"))
        for control, name in ((self.seed, "seed"), (self.n_heads, "head-count"), (self.max_steps, "steps")):
            control.add_class(f"mha-toy-{name}")
        self.progress = widgets.IntProgress(value=0, min=0, max=max_steps, description="",
                                            layout=widgets.Layout(width="300px"))
        self.status = widgets.HTML(value="")
        self.status.add_class("mha-toy-status")
        self.message = message_box()
        self.result = None
        self.figure = None
        config = self.config()
        self.figure = figure_widget(role_history_figure(np.zeros(1), np.zeros((1, n_heads, len(self.relations))),
                                                        self.relations, max_steps=config.max_steps, theme=self.theme))
        for control in (self.seed, self.n_heads, self.max_steps):
            control.observe(self._on_change, names="value")

    def config(self):
        """The TrainConfig of the current controls (raises TypeError/ValueError for a bad setting)."""
        from mha_core.models.training import TrainConfig

        config = TrainConfig(n_heads=self.n_heads.value, seed=parse_seed(self.seed.value), max_steps=self.max_steps.value)
        check_budget(config.max_steps)
        return config

    def _models(self):
        from mha_core.models import training

        return training.is_cached, training.trained

    def _started_text(self, config) -> str:
        return f"training... {config.n_heads} head(s), seed {config.seed}"

    def _redraw(self, partial: list, config) -> None:
        acc = ", ".join(f"{a:.2f}" for a in partial[-1].accuracy)
        self._show_status(f"training... step {partial[-1].step} / {config.max_steps}, accuracy {acc}", busy=True)
        # A frame of the run: drawn, not read out (the finished run's words are, in _show).
        update_in_place(self.figure, history_figure(partial, self.relations, max_steps=config.max_steps,
                                                    theme=self.theme), words=False)

    def _show(self, result, config, *, cached: bool) -> None:
        self.result = result
        self.progress.value = result.steps
        update_in_place(self.figure, history_figure(result, self.relations, max_steps=config.max_steps,
                                                    theme=self.theme))
        prefix = "(from the cache) " if cached else ("" if result.interrupted else "trained: ")
        self._show_status(prefix + status_text(result, self.relations))

    def _on_change(self, change):
        self.train()

    @property
    def box(self) -> widgets.VBox:
        controls = widgets.HBox([self.seed, self.n_heads, self.max_steps])
        return widgets.VBox([controls, self.message, widgets.HBox([self.progress, self.status]), self.figure])


def live_training(n_heads: int = 3, seed: int = 0, max_steps: int | None = None) -> LiveTraining:
    """Show the controls, then train the starting setting live; returns the group."""
    return LiveTraining(n_heads, seed, max_steps).show_and_train()


class HeadSwitches(ControlGroup):
    """One checkbox per head of a trained model; the figure shows accuracy with the unticked heads off."""

    #: A handout records every on/off combination of the heads (``widgets._states``).
    handout_legends = {"switches": "Heads switched on"}

    def handout_controls(self) -> dict:
        return {f"switches[{h}]": [True, False] for h in range(len(self.switches))}

    def __init__(self, result, batch=None, baselines: dict | None = None):
        from mha_core.models.analysis import ablation_accuracy
        from mha_core.models.training import evaluation_batch, one_thread

        self.result = result
        self.theme = projector.theme()  # read once: every redraw keeps the sizes the group was built with
        self.baselines = baselines  # {"label": (R,)}: lines drawn on the figure, such as chance
        model = result.model
        self.relations = model.task.relations
        batch = evaluation_batch(model.task) if batch is None else batch
        H = model.n_heads
        with one_thread():
            self.table = {
                off: ablation_accuracy(model, batch, off)
                for k in range(H + 1) for off in itertools.combinations(range(H), k)
            }
        self.switches = [widgets.Checkbox(value=True, description=f"head {h + 1}", indent=False,
                                          layout=widgets.Layout(width="110px")) for h in range(H)]
        for s in self.switches:
            s.add_class("mha-toy-head-switch")
        self.message = message_box()
        self.figure = figure_widget(self._build())
        for s in self.switches:
            s.observe(self._on_change, names="value")

    @property
    def heads_off(self) -> np.ndarray:
        """(H,) bool, True = off: the boxes that are not ticked."""
        return np.array([not s.value for s in self.switches], dtype=bool)

    def accuracy(self) -> np.ndarray:
        return self.table[tuple(int(h) for h in np.flatnonzero(self.heads_off))]  # keyed by the heads off, in order

    def _build(self):
        return ablation_figure(self.accuracy(), self.relations, self.heads_off, baseline=self.table[()],
                               baselines=self.baselines, validate=False, theme=self.theme)

    def _on_change(self, change):
        self.redraw()

    def redraw(self):
        update_in_place(self.figure, self._build())
        if self.heads_off.all():
            show_message(self.message, "Every head is off: only the residual path (token + position) reaches the read-outs.",
                         kind="info", theme=self.theme)
        else:
            show_message(self.message, "", theme=self.theme)

    @property
    def box(self) -> widgets.VBox:
        return widgets.VBox([widgets.HBox(self.switches), self.message, self.figure])


def head_switches(result, batch=None, baselines: dict | None = None) -> HeadSwitches:
    """Checkboxes for the heads of a trained toy model, and its accuracy with the unticked heads off.

    ``baselines`` (``{"label": (R,)}``, e.g. from ``models.analysis.no_attention_accuracy``) adds labelled lines.
    """
    return HeadSwitches(result, batch, baselines)

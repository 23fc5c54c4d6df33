"""Controls for notebook 09: train the two-layer model live; switch one of its heads off.

``LiveInduction``: repeat length (varying / fixed), seed and step budget. A change
retrains the model (the status line reads "training..." and a progress bar moves) and
the one figure shows the loss on each half and every head's previous-token and induction
score, step by step. A setting trained before comes back from the in-process cache at
once. Kernel > Interrupt (or the toolbar's stop button) stops a run within a step and
keeps it: the figure and ``result`` show the model as trained so far.

``HeadOff``: which head is off (none, or one of the four) and how (zero or mean
ablation); the figure shows the best induction score in the last layer and the loss on
the second repeat, against every head on. Every setting is measured once when the group
is built, so a click only looks the answer up.
"""

from __future__ import annotations

import ipywidgets as widgets

from mha_core import projector
from mha_core.figures.induction import ablation_figure, head_name, training_figure

from ._base import ControlGroup, TrainingGroup, figure_widget, message_box, remembered, show_message, update_in_place
from .toy import parse_seed

#: Redraw the live figure at most this often (every ``eval_every`` steps the scores are measured).
REDRAW_EVERY = 50
#: The largest step budget the control accepts: about half a minute on a quiet two-core machine
#: (about 14 ms a step measured there; 30 ms on a busy one). Longer runs belong in a cell.
MAX_BUDGET = 2_000
REPEATS = ("varying", "fixed")


def check_budget(max_steps) -> None:
    """A ValueError naming ``max_steps`` when the budget is outside what the control allows."""
    if isinstance(max_steps, int) and max_steps > MAX_BUDGET:
        raise ValueError(f"max_steps={max_steps} is more than this control allows; valid budgets are 1 to {MAX_BUDGET:,} "
                         f"steps. For a longer run, call mha_core.models.induction.train_induction(max_steps=...) in a "
                         f"cell: Kernel > Interrupt stops it and keeps the model")


def history_figure(history, *, max_steps: int, theme: projector.Theme | None = None, validate: bool = False):
    """The live figure for a trained model or a partial history (a list of reports): what ``LiveInduction`` shows.

    The loss is drawn as one point per report: the mean over the training steps since the
    report before, on each half of the batch (so the figure is the same live and at the end).
    """
    import numpy as np

    from mha_core import circuits
    from mha_core.models.induction import EVAL_REPEAT, INDUCTION_THRESHOLD

    history = history.history if hasattr(history, "history") else history
    steps = np.array([p.step for p in history])
    losses = np.array([(p.first_half_loss, p.repeated_half_loss) for p in history[1:]], dtype=float)  # (N-1, 2)
    previous = np.stack([p.previous_token for p in history])  # (N, L, H)
    induction = np.stack([p.induction for p in history])  # (N, L, H)
    chance = circuits.chance_scores(scored_length(), EVAL_REPEAT)
    return training_figure(steps[1:], losses, steps, previous, induction, chance_previous=chance.previous_token,
                           chance_induction=chance.induction, threshold=INDUCTION_THRESHOLD, max_steps=max_steps,
                           validate=validate, theme=theme)


def scored_length() -> int:
    """T of the sequences the scores are measured on (``models.induction.evaluation_tokens``)."""
    from mha_core.models.repeats import SEQ_LEN

    return SEQ_LEN


def status_text(result) -> str:
    """One line: steps taken, when an induction head formed, and the best scores reached."""
    p, c = result.final, result.config
    head = f"best induction score {p.induction[-1].max():.2f}, best previous-token score {p.previous_token[0].max():.2f}"
    # Steps, not seconds: a handout records this line, and the seconds are the build machine's, never the same twice.
    formed = (f"an induction head formed at step {result.formed_at}"
              if result.formed_at is not None else "no induction head yet")
    where = f"stopped at step {p.step} of {c.max_steps} (interrupted)" if result.interrupted else f"{p.step} steps"
    return f"{c.repeat} repeat length, seed {c.seed}: {where}; {formed}; {head}."


class LiveInduction(TrainingGroup):
    """Repeat length (toggle), seed (text) and step budget; a progress bar; one live figure.

    Attributes: ``repeat``, ``seed``, ``max_steps`` (controls), ``progress``, ``status``,
    ``message``, ``figure``, ``result`` (the TrainedInduction shown).
    """

    #: A handout has no Python to train: both repeat settings of three seeds, trained while it is built.
    redraw_every = REDRAW_EVERY
    handout_controls = {"repeat": list(REPEATS), "seed": ["0", "1", "2"]}
    handout_note = ("Training needs Python, so here you pick one of three seeds and the repeat setting, each trained "
                    "while this page was built. In JupyterLab you type any seed and choose the step budget.")

    def __init__(self, seed: int = 0, repeat: str = "varying", max_steps: int | None = None):
        import numpy as np

        from mha_core.models.induction import InductionConfig

        max_steps = InductionConfig().max_steps if max_steps is None else max_steps
        self.theme = projector.theme()  # read once: every redraw keeps the sizes the group was built with
        style = {"description_width": "initial"}
        self.repeat = widgets.ToggleButtons(options=list(REPEATS), value=repeat, description="repeat length",
                                            style={**style, "button_width": "100px"})
        self.seed = widgets.Text(value=str(seed), description="seed", continuous_update=False, style=style,
                                 layout=widgets.Layout(width="150px"))
        self.max_steps = widgets.IntText(value=max_steps, description=f"step budget (1 to {MAX_BUDGET:,})",
                                         style=style, layout=widgets.Layout(width="260px"))
        for control, name in ((self.repeat, "repeat"), (self.seed, "seed"), (self.max_steps, "steps")):
            control.add_class(f"mha-induction-{name}")
        self.progress = widgets.IntProgress(value=0, min=0, max=max_steps, layout=widgets.Layout(width="300px"))
        self.status = widgets.HTML(value="")
        self.status.add_class("mha-induction-status")
        self.message = message_box()
        self.result = None
        empty = np.zeros((1, 2, 2))
        self.figure = figure_widget(training_figure(
            np.zeros(0), np.zeros((0, 2)), np.zeros(1), empty, empty, chance_previous=0.0, chance_induction=0.0,
            threshold=0.4, max_steps=max_steps, theme=self.theme))
        for control in (self.repeat, self.seed, self.max_steps):
            control.observe(self._on_change, names="value")

    def config(self):
        """The InductionConfig of the current controls (raises TypeError/ValueError for a bad setting)."""
        from mha_core.models.induction import InductionConfig

        config = InductionConfig(seed=parse_seed(self.seed.value), repeat=self.repeat.value,
                                 max_steps=self.max_steps.value)
        check_budget(config.max_steps)
        return config

    def _models(self):
        from mha_core.models import induction

        return induction.is_cached, induction.trained_induction

    def _started_text(self, config) -> str:
        return f"training... {config.repeat} repeat length, seed {config.seed}"

    def _redraw(self, partial: list, config) -> None:
        self._show_status(f"training... step {partial[-1].step} / {config.max_steps}, best induction score "
                          f"{partial[-1].induction[-1].max():.2f}", busy=True)
        # A frame of the run: drawn, not read out (the finished run's words are, in _show).
        update_in_place(self.figure, history_figure(partial, max_steps=config.max_steps, theme=self.theme), words=False)

    def _show(self, result, config, *, cached: bool) -> None:
        self.result = result
        self.progress.value = result.steps
        update_in_place(self.figure, history_figure(result, max_steps=config.max_steps, theme=self.theme))
        prefix = "(from the cache) " if cached else ("" if result.interrupted else "trained: ")
        self._show_status(prefix + status_text(result))

    def _on_change(self, change):
        self.train()

    @property
    def box(self) -> widgets.VBox:
        controls = widgets.VBox([self.repeat, widgets.HBox([self.seed, self.max_steps])])  # one row ran past 848 px
        return widgets.VBox([controls, self.message, widgets.HBox([self.progress, self.status]), self.figure])


def live_induction(seed: int = 0, repeat: str = "varying", max_steps: int | None = None) -> LiveInduction:
    """Show the controls, then train the starting setting live; returns the group."""
    return LiveInduction(seed, repeat, max_steps).show_and_train()


class HeadOff(ControlGroup):
    """Which head is off (toggle buttons) and how (zero / mean); the figure against every head on."""

    handout_controls = {"head": None, "ablation": None}
    #: Its ten settings are in the page (``_states.hold``): a move switches the figure there, the kernel only hears it.
    hold_settings = True

    def __init__(self, trained):
        from mha_core import circuits
        from mha_core.models.induction import EVAL_REPEAT
        from mha_core.models.induction_analysis import ablation_effects

        self.theme = projector.theme()
        self.trained = trained
        self.effects = {ablation: ablation_effects(trained, ablation) for ablation in ("zero", "mean")}
        L, H = self.effects["zero"].induction.shape
        self.chance = circuits.chance_scores(scored_length(), EVAL_REPEAT).induction
        names = ["none"] + [head_name(layer, head) for layer in range(L) for head in range(H)]
        style = {"description_width": "initial", "button_width": "90px"}  # five buttons in one row of 848 px
        self.head = widgets.ToggleButtons(options=names, value=names[1], description="head off", style=style)
        self.ablation = widgets.ToggleButtons(options=["zero", "mean"], value="zero", description="ablation", style=style)
        self.head.add_class("mha-induction-head-off")
        self.ablation.add_class("mha-induction-ablation")
        self.message = message_box()
        self.figure = figure_widget(self._build(self.head.value, self.ablation.value))
        for control in (self.head, self.ablation):
            control.observe(self._on_change, names="value")

    def measured(self, head: str | None = None, ablation: str | None = None) -> tuple[float, float, float, float]:
        """(induction on, loss on, induction off, loss off) for a setting (the current one by default)."""
        head, ablation = head or self.head.value, ablation or self.ablation.value
        e = self.effects[ablation]
        if head == "none":
            return e.induction_on, e.repeat_loss_on, e.induction_on, e.repeat_loss_on
        layer, h = (int(part[1:]) - 1 for part in head.split())
        return e.induction_on, e.repeat_loss_on, float(e.induction[layer, h]), float(e.repeat_loss[layer, h])

    @remembered
    def _build(self, head: str, ablation: str):
        label = "no head off" if head == "none" else f"{head} off ({ablation})"
        return ablation_figure(*self.measured(head, ablation), label=label, chance_induction=self.chance, validate=False,
                               theme=self.theme)

    def redraw(self):
        update_in_place(self.figure, self._build(self.head.value, self.ablation.value))

    def _on_change(self, change):
        self.redraw()

    @property
    def box(self) -> widgets.VBox:
        return widgets.VBox([self.head, self.ablation, self.message, self.figure])


def head_off(trained) -> HeadOff:
    """Toggle buttons that switch one head of a trained two-layer model off, and what that does."""
    return HeadOff(trained)

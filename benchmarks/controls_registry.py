"""Every live control the benchmarks drive: a small table, one row per control group.

To add a control group, add a ``Group``: the widget module it lives in, a function that
builds it the way its notebook does, and the controls to drive, each as
``attribute -> values`` (``"switches[2]"`` drives the third control in a list). Values are set on ``<group>.<attribute>.value`` in turn;
``None`` means every option the control offers at that moment, in order (dropdowns,
toggle buttons, selection sliders). Include impossible settings where a control has
them: their message path is timed too.

A widget module with no row here is still found (see ``bench_controls.discover``): a
public function in it that builds a group without arguments is driven automatically;
otherwise the report lists the module as not measured.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable


@dataclass(frozen=True)
class Group:
    module: str  # the widget module, e.g. "mha_classroom.widgets.qkv"
    build: Callable[[], object]  # builds the group as its notebook does
    controls: dict[str, list | None]  # attribute -> values to cycle through (None: every option)
    figure: str = "figure"  # the attribute holding the group's one FigureWidget
    notebook: str = ""
    notes: str = field(default="")


def _welcome():
    from mha_classroom.widgets.welcome import smoke_check

    return smoke_check()


def _demo():
    """The small seeded one-head layer and the running sentence's token vectors, (T, D) = (6, 8)."""
    from mha_core.examples import TOKENS, demo_layer, token_vectors

    return demo_layer(d_model=8, n_heads=1, seed=0), token_vectors(d_model=8, seed=0), TOKENS


def _token_explorer():
    from mha_classroom.widgets.qkv import token_explorer

    layer, x, tokens = _demo()
    result = layer(x)  # unbatched: q, k, v are (H, T, Dh) = (1, 6, 8)
    return token_explorer(result.q[0], result.k[0], result.v[0], tokens)


def _scaling_explorer():
    from mha_classroom.widgets.single_head import scaling_explorer

    return scaling_explorer()


def _mask_explorer():
    from mha_classroom.widgets.single_head import mask_explorer

    layer, x, tokens = _demo()
    return mask_explorer(x, layer.w_q, layer.w_k, layer.w_v, tokens)


def _head_grid():
    from mha_classroom.widgets.heads import head_grid

    return head_grid()


def _head_switches():
    from mha_classroom.widgets.projection import head_switches

    return head_switches()


def _head_sizing():
    from mha_classroom.widgets.sizing import head_sizing

    return head_sizing()


def _kv_cache_calculator():
    from mha_classroom.widgets.serving import kv_cache_calculator

    return kv_cache_calculator(model="Llama-2-7B", n_tokens=4096, batch=1, bytes_per_value=2, memory_gib=80)


def _live_training():
    """Notebook 06's controls with seeds 0 and 1 trained beforehand: the events time the cached path
    and the messages (a retrain takes seconds; bench_training times it)."""
    from mha_classroom.widgets.toy import LiveTraining
    from mha_core.models.training import TrainConfig, trained

    for seed in (0, 1):
        trained(TrainConfig(n_heads=3, seed=seed))
    group = LiveTraining(n_heads=3, seed=0)
    group.train()
    return group


def _toy_head_switches():
    from mha_classroom.widgets.toy import head_switches
    from mha_core.models.training import TrainConfig, trained

    return head_switches(trained(TrainConfig(n_heads=6, seed=0)))


def _induction_live():
    """Notebook 09's training controls with seed 0 and 1 (varying) trained beforehand: the events time the cached
    path and the messages (a retrain takes seconds; bench_induction times it)."""
    from mha_classroom.widgets.induction import LiveInduction
    from mha_core.models.induction import InductionConfig, trained_induction

    for seed in (0, 1):
        trained_induction(InductionConfig(seed=seed))
    group = LiveInduction(seed=0)
    group.train()
    return group


def _induction_head_off():
    from mha_classroom.widgets.induction import head_off
    from mha_core.models.induction import InductionConfig, trained_induction

    return head_off(trained_induction(InductionConfig(seed=0)))


def _minilm_explorer():
    from mha_classroom.widgets.pretrained import layer_head_explorer
    from mha_core.pretrained import load_minilm

    return layer_head_explorer(load_minilm(), layer=0, head=2)


def _minilm_pruning():
    from mha_classroom.widgets.pretrained import pruning_explorer

    return pruning_explorer()


GROUPS: dict[str, Group] = {
    "welcome": Group("mha_classroom.widgets.welcome", _welcome, {"slider": [0.0, 0.5, 1.0, 2.0, 3.0, 4.0]}, notebook="00"),
    "qkv.token_explorer": Group("mha_classroom.widgets.qkv", _token_explorer, {"token": None}, notebook="01"),
    "single_head.scaling": Group("mha_classroom.widgets.single_head", _scaling_explorer, {"d_head": None}, notebook="02"),
    "single_head.mask": Group("mha_classroom.widgets.single_head", _mask_explorer, {"mode": None}, notebook="02"),
    "heads.head_grid": Group("mha_classroom.widgets.heads", _head_grid, {"head_count": None}, notebook="03"),
    # Four heads by default; toggling each in turn also reaches "every head off" (its message path).
    "projection.head_switches": Group(
        "mha_classroom.widgets.projection", _head_switches, {f"switches[{h}]": [False, True] for h in range(4)}, notebook="04"
    ),
    # 5 and 7 heads never divide the d_model choices: the impossible-split message is timed too.
    "sizing.head_sizing": Group(
        "mha_classroom.widgets.sizing", _head_sizing,
        {"d_model": None, "n_heads": [1, 2, 4, 5, 8, 12, 16, 7, 32, 64], "n_tokens": None}, notebook="05",
    ),
    # Llama-2-70B's weights do not fit in 80 GiB, and a batch of 256 does not fit either: both message paths are timed.
    "serving.kv_cache_calculator": Group(
        "mha_classroom.widgets.serving", _kv_cache_calculator,
        {"model": ["Llama-2-7B", "Llama-2-70B", "Gemma-2B", "GPT-2 small", "Mistral-7B v0.1"], "n_tokens": None,
         "batch": [1, 8, 64, 256], "dtype": None, "memory": None, "n_kv_heads": None},
        notebook="10",
    ),
    # Seeds 0 and 1 are cached; "1.5", 5 heads and 0 steps are the bad settings (their message path).
    "toy.live_training": Group(
        "mha_classroom.widgets.toy", _live_training,
        {"seed": ["1", "0", "1.5", "1", "0"], "n_heads": [5, 3], "max_steps": [0, -1, 300]}, notebook="06",
        notes="cached settings and bad settings only; a retrain is timed in the training section",
    ),
    # Seeds 0 and 1 are cached; "x" and 0 steps are the bad settings (their message path).
    "induction.live_induction": Group(
        "mha_classroom.widgets.induction", _induction_live, {"seed": ["1", "0", "x", "0"], "max_steps": [0, 600]},
        notebook="09", notes="cached settings and bad settings only; a retrain is timed in bench_induction",
    ),
    "induction.head_off": Group(
        "mha_classroom.widgets.induction", _induction_head_off, {"head": None, "ablation": None}, notebook="09"
    ),
    "toy.head_switches": Group(
        "mha_classroom.widgets.toy", _toy_head_switches, {f"switches[{h}]": [False, True] for h in range(6)}, notebook="08"
    ),
    # The text box runs the whole model (continuous_update=False: on Enter); an empty and a too-long text time
    # the message path.
    "pretrained.layer_head_explorer": Group(
        "mha_classroom.widgets.pretrained", _minilm_explorer,
        {"layer": None, "head": None,
         "text": ["we rotated the api key after the leak", "", " ".join(["word"] * 40), "the cache key changed after deploy"]},
        notebook="07",
    ),
    # Notebook 08's real half: a lookup in the precomputed steps.
    "pretrained.pruning_explorer": Group(
        "mha_classroom.widgets.pretrained", _minilm_pruning, {"n_off": [0, 1, 2, 3, 5, 8, 13, 21]}, notebook="08",
    ),
}

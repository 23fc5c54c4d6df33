"""Torch toy models: a one-layer attention model trained live, and what its heads learn.

Imported lazily (``mha_core.models`` needs torch; ``import mha_core`` does not load it).

Modules:
    tasks       synthetic sequence tasks and their targets (relations, last match)
    toy         ``ToyModel``: embeddings, ``TorchMultiHeadAttention``, residual, read-outs
    training    ``train`` / ``trained`` (cached), deterministic for a seed, with progress
    analysis    head roles, head similarity, switching heads off
    bottleneck  accuracy against head count at fixed d_model; the cached sweep

Heads across layers (the induction head):
    repeats             the repeated-stretch task (repeat length varying 4-12, or fixed 12)
    attention_only      ``AttentionOnlyModel``: 2 layers x 2 heads of ``TorchMultiHeadAttention``, no MLPs
    induction           ``train_induction``: live, interruptible, scores of every head over steps
    induction_analysis  head scores, K/Q-composition against a random baseline, zero and mean ablation
"""

from .analysis import (
    DUPLICATE_THRESHOLD,
    ROLE_THRESHOLD,
    ablation_accuracy,
    accuracy,
    duplicate_pairs,
    greedy_removal,
    head_roles,
    head_similarity,
    key_similarity,
    role_findings,
    role_scores,
    single_head_removal,
)
from .tasks import LAST_MATCH, RELATIONS, Batch, Task, get_task
from .toy import ToyModel, ToyOutput
from .training import Progress, TrainConfig, TrainedModel, evaluation_batch, train, trained

__all__ = [
    "DUPLICATE_THRESHOLD", "ROLE_THRESHOLD", "LAST_MATCH", "RELATIONS", "Batch", "Task", "ToyModel", "ToyOutput",
    "Progress", "TrainConfig", "TrainedModel", "ablation_accuracy", "accuracy", "bottleneck_sweep",
    "duplicate_pairs", "evaluation_batch", "get_task", "greedy_removal", "head_roles", "head_similarity",
    "key_similarity", "load_sweep", "role_findings", "role_scores", "single_head_removal", "train", "trained",
]


def __getattr__(name):
    # The sweep's module is also a command (python -m mha_core.models.bottleneck): importing it here
    # eagerly would make runpy warn that it was imported before it ran.
    if name in ("bottleneck_sweep", "load_sweep"):
        from . import bottleneck

        return getattr(bottleneck, name)
    raise AttributeError(f"module 'mha_core.models' has no attribute {name!r}")

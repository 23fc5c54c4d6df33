"""Training the toy model: deterministic for a seed, with progress reports and an early stop.

``train(config, callback)`` runs Adam on fresh random batches for at most
``config.max_steps`` steps. Every ``config.eval_every`` steps it measures the
per-relation accuracy and each head's role scores on a fixed evaluation batch, calls
``callback(progress)``, and stops once every relation reaches
``config.target_accuracy``. The budget is a number of steps, never a wall-clock time,
so a slow machine trains the same model, only later.

Determinism: the model's initial weights come from ``config.seed``; the training
batches from a private ``torch.Generator`` seeded with it; the evaluation batch from
a fixed seed of its own. Torch runs on one thread while training (thread counts can
change the order of float sums, hence the last bits), so the same config gives the
same numbers, bit for bit, on the same machine and torch version.

``trained(config)`` caches finished models in the process: asking again for a config
already trained answers at once.

Stopping a run. ``train(..., interruptible=True)`` (what notebook 06's controls use)
turns Kernel > Interrupt into "stop here and keep what was trained": while it trains it
listens for SIGINT itself (ipykernel ignores SIGINT outside its own handlers, so a
plain KeyboardInterrupt may never come), finishes the step under way, measures the
model once more, and returns it with ``interrupted`` set. A KeyboardInterrupt raised
inside the loop (from the callback, say) is kept the same way. Without
``interruptible`` an interrupt raises as usual, so a script stops at Ctrl-C. An
interrupted run is never put in ``trained``'s cache.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, NamedTuple

import numpy as np
import torch
import torch.nn.functional as F

from .. import _validate
from ._interrupt import TrainedRun, cached_run, one_thread, resolve_config, stop_on_sigint
from .analysis import accuracy, role_scores
from .tasks import IGNORE, Batch, get_task
from .toy import D_MODEL, ToyModel

#: The evaluation batch is the same for every run: the same sequences score every model.
EVAL_SEED = 12345
EVAL_BATCH = 256


@dataclass(frozen=True)
class TrainConfig:
    """Everything that decides a trained model. Two equal configs train equal models."""

    n_heads: int = 3
    seed: int = 0
    d_model: int = D_MODEL
    task: str = "relations"
    max_steps: int = 300
    batch_size: int = 128
    lr: float = 3e-3
    target_accuracy: float = 0.99
    eval_every: int = 10

    def __post_init__(self):
        _validate.head_counts(self.d_model, self.n_heads)
        get_task(self.task)
        # Plain ints and floats (np.int64(3) becomes 3): torch's generators take nothing else.
        for name in ("n_heads", "d_model", "max_steps", "batch_size", "eval_every"):
            object.__setattr__(self, name, _validate.positive_int(getattr(self, name), name))
        object.__setattr__(self, "lr", _validate.positive_number(self.lr, "lr", example="3e-3"))
        object.__setattr__(self, "target_accuracy", _validate.real_number(
            self.target_accuracy, "target_accuracy", "a number above 0 and at most 1, such as 0.99", lambda v: 0 < v <= 1))
        object.__setattr__(self, "seed", _validate.seed_int(self.seed))

    def memory_bytes(self) -> int:
        """About how many bytes training this config holds at once (float32); ``train`` checks it first.

        The parameters four times (weights, gradients, Adam's two moments), and for each
        token of one training batch and of the evaluation batch about 12 vectors of width
        d_model, 2 score rows per head and 3 logit rows per relation. Within 30% of the
        peak measured for d_model 48 to 3,072 and batch_size 128 to 65,536.
        """
        task = get_task(self.task)
        D, H, T, R, C, V = self.d_model, self.n_heads, task.seq_len, len(task.relations), task.n_classes, task.vocab_size
        parameters = V * D + T * D + 4 * D * D + 4 * D + R * (D * C + C)
        per_token = 12 * D + 2 * H * T + 3 * R * C
        return 4 * (4 * parameters + (self.batch_size + EVAL_BATCH) * T * per_token)


class Progress(NamedTuple):
    """One progress report.

    Shapes:
        accuracy: (R,), per relation, on the evaluation batch
        role_scores: (H, R), each head's attention mass on each relation's targets
    """

    step: int
    max_steps: int
    loss: float
    accuracy: np.ndarray
    role_scores: np.ndarray
    done: bool


@dataclass
class TrainedModel(TrainedRun):
    """A trained model, the config that made it, and its progress history."""

    model: ToyModel
    config: TrainConfig
    history: list[Progress] = field(default_factory=list)
    #: True when an interrupt stopped training before the target or the budget: the model is as trained so far.
    interrupted: bool = False

    @property
    def reached_target(self) -> bool:
        return bool(np.all(self.final.accuracy >= self.config.target_accuracy))


def evaluation_batch(task="relations") -> Batch:
    """The fixed batch every model is measured on (``EVAL_BATCH`` sequences, seed ``EVAL_SEED``)."""
    return get_task(task).batch(EVAL_BATCH, seed=EVAL_SEED)


def loss_of(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Cross-entropy summed over relations, averaged over defined positions.

    Shapes:
        logits: (R, B, T, C); targets: (R, B, T)
    """
    C = logits.shape[-1]
    return sum(F.cross_entropy(lr.reshape(-1, C), tr.reshape(-1), ignore_index=IGNORE) for lr, tr in zip(logits, targets))


def measure(model: ToyModel, batch: Batch) -> tuple[np.ndarray, np.ndarray]:
    """Per-relation accuracy (R,) and role scores (H, R) of ``model`` on ``batch``."""
    with torch.no_grad():
        logits, weights = model(batch.tokens, need_weights=True)
    return accuracy(logits, batch.targets), role_scores(weights, batch.target_positions)


def train(config: TrainConfig | None = None, callback: Callable[[Progress], None] | None = None, *,
          interruptible: bool = False, **overrides) -> TrainedModel:
    """Train one toy model; ``callback(progress)`` every ``eval_every`` steps and at the end.

    ``overrides`` replace fields of ``config`` (``train(n_heads=1, seed=2)``).
    ``interruptible=True``: an interrupt (SIGINT, or a KeyboardInterrupt raised in the
    loop) stops training after the step under way and returns the model trained so far,
    with ``interrupted`` set and a last progress report (``done``) at that step; the
    callback is not called again then.
    """
    config = resolve_config(config, TrainConfig, overrides)
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig or None; got {type(config).__name__}")
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be a function that takes a Progress report, or None; got {callback!r} ({type(callback).__name__})")
    _validate.fits_this_process(
        config.memory_bytes(), f"training with batch_size={config.batch_size}, d_model={config.d_model}, n_heads={config.n_heads}",
        hint="make batch_size or d_model smaller")
    task = get_task(config.task)
    eval_batch = evaluation_batch(task)
    with one_thread(), stop_on_sigint(interruptible) as stop:
        model = ToyModel(config.n_heads, d_model=config.d_model, task=task, seed=config.seed)
        optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
        generator = torch.Generator().manual_seed(config.seed)
        result = TrainedModel(model, config)
        acc, roles = measure(model, eval_batch)
        result.history.append(Progress(0, config.max_steps, float("nan"), acc, roles, False))
        completed, loss = 0, None  # whole steps done; the loss of the last one
        try:
            if callback is not None:
                callback(result.history[-1])
            for step in range(1, config.max_steps + 1):
                if stop.requested:
                    break
                batch = task.batch(config.batch_size, generator=generator)
                loss = loss_of(model(batch.tokens).logits, batch.targets)
                if not torch.isfinite(loss):
                    # Diverged (a step size too large for this model): say so instead of training on NaN.
                    raise ValueError(f"training diverged at step {step}: the loss became {float(loss.detach())}; "
                                     f"lr={config.lr:g} is too large for this model, try a smaller one such as 3e-3")
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                completed = step
                if step % config.eval_every == 0 or step == config.max_steps:
                    acc, roles = measure(model, eval_batch)
                    done = bool(np.all(acc >= config.target_accuracy)) or step == config.max_steps
                    result.history.append(Progress(step, config.max_steps, float(loss.detach()), acc, roles, done))
                    if callback is not None:
                        callback(result.history[-1])
                    if done:
                        break
        except KeyboardInterrupt:
            if not interruptible:
                raise
            stop.requested = True
        if stop.requested and not result.history[-1].done:
            result.interrupted = True
            last_loss = float("nan") if loss is None else float(loss.detach())
            acc, roles = measure(model, eval_batch)
            if result.history[-1].step == completed:
                result.history.pop()  # measured at this very step already: replace it by the final report
            result.history.append(Progress(completed, config.max_steps, last_loss, acc, roles, True))
    model.eval()
    return result


_CACHE: dict[TrainConfig, TrainedModel] = {}


def trained(config: TrainConfig | None = None, callback: Callable[[Progress], None] | None = None, *,
            interruptible: bool = False, **overrides) -> TrainedModel:
    """``train`` with an in-process cache: a config trained before comes back at once (no callback then).

    An interrupted run (``interruptible=True``) is returned but not cached: asking again trains again.
    """
    config = resolve_config(config, TrainConfig, overrides)
    return cached_run(_CACHE, config, train, callback, interruptible)


def is_cached(config: TrainConfig) -> bool:
    return config in _CACHE


def clear_cache() -> None:
    _CACHE.clear()

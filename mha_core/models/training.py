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
"""

from __future__ import annotations

import contextlib
import numbers
from dataclasses import dataclass, field, replace
from typing import Callable, NamedTuple

import numpy as np
import torch
import torch.nn.functional as F

from .. import _validate
from .analysis import accuracy, role_scores
from .tasks import IGNORE, Batch, check_seed, get_task
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
        check_seed(self.seed)
        get_task(self.task)
        for name in ("max_steps", "batch_size", "eval_every"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise TypeError(f"{name} must be a whole number of at least 1; got {value!r} ({type(value).__name__})")
            if value < 1:
                raise ValueError(f"{name}={value} is too small; {name} must be a whole number of at least 1")
        if not isinstance(self.lr, numbers.Real) or not self.lr > 0:
            raise ValueError(f"lr={self.lr!r} must be a positive number")
        if not isinstance(self.target_accuracy, numbers.Real) or not 0 < self.target_accuracy <= 1:
            raise ValueError(f"target_accuracy={self.target_accuracy!r} must lie in (0, 1]")


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
class TrainedModel:
    """A trained model, the config that made it, and its progress history."""

    model: ToyModel
    config: TrainConfig
    history: list[Progress] = field(default_factory=list)

    @property
    def steps(self) -> int:
        """Training steps taken (at most ``config.max_steps``)."""
        return self.history[-1].step if self.history else 0

    @property
    def final(self) -> Progress:
        return self.history[-1]

    @property
    def reached_target(self) -> bool:
        return bool(np.all(self.final.accuracy >= self.config.target_accuracy))


def evaluation_batch(task="relations") -> Batch:
    """The fixed batch every model is measured on (``EVAL_BATCH`` sequences, seed ``EVAL_SEED``)."""
    return get_task(task).batch(EVAL_BATCH, seed=EVAL_SEED)


@contextlib.contextmanager
def one_thread():
    """Run torch on one thread inside the block: the same float sums every time, and no spinning threads after."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


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


def train(config: TrainConfig | None = None, callback: Callable[[Progress], None] | None = None, **overrides) -> TrainedModel:
    """Train one toy model; ``callback(progress)`` every ``eval_every`` steps and at the end.

    ``overrides`` replace fields of ``config`` (``train(n_heads=1, seed=2)``).
    """
    config = replace(config or TrainConfig(), **overrides) if overrides else (config or TrainConfig())
    task = get_task(config.task)
    eval_batch = evaluation_batch(task)
    with one_thread():
        model = ToyModel(config.n_heads, d_model=config.d_model, task=task, seed=config.seed)
        optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
        generator = torch.Generator().manual_seed(config.seed)
        result = TrainedModel(model, config)
        acc, roles = measure(model, eval_batch)
        result.history.append(Progress(0, config.max_steps, float("nan"), acc, roles, False))
        if callback is not None:
            callback(result.history[-1])
        for step in range(1, config.max_steps + 1):
            batch = task.batch(config.batch_size, generator=generator)
            loss = loss_of(model(batch.tokens).logits, batch.targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step % config.eval_every == 0 or step == config.max_steps:
                acc, roles = measure(model, eval_batch)
                done = bool(np.all(acc >= config.target_accuracy)) or step == config.max_steps
                result.history.append(Progress(step, config.max_steps, float(loss.detach()), acc, roles, done))
                if callback is not None:
                    callback(result.history[-1])
                if done:
                    break
    model.eval()
    return result


_CACHE: dict[TrainConfig, TrainedModel] = {}


def trained(config: TrainConfig | None = None, callback: Callable[[Progress], None] | None = None, **overrides) -> TrainedModel:
    """``train`` with an in-process cache: a config trained before comes back at once (no callback then)."""
    config = replace(config or TrainConfig(), **overrides) if overrides else (config or TrainConfig())
    if config not in _CACHE:
        _CACHE[config] = train(config, callback)
    return _CACHE[config]


def is_cached(config: TrainConfig) -> bool:
    return config in _CACHE


def clear_cache() -> None:
    _CACHE.clear()

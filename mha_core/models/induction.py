"""Training the two-layer attention-only model until an induction head forms, live and interruptible.

``train_induction(config, callback)`` runs AdamW (lr 1e-2, batch 32) on fresh batches
of the repeated-stretch task (``repeats``) for ``config.max_steps`` steps. Every step it
keeps the loss on the first half and on the repeated half of the training batch
(``TrainedInduction.losses``). Every ``config.eval_every`` steps it measures every
head's previous-token score and induction score on a fixed set of repeated random
tokens (``evaluation_tokens``: one first token, a random stretch of 12, the stretch
again; ``mha_core.circuits``) and calls ``callback(progress)``.

An induction head has *formed* when a head's induction score reaches
``INDUCTION_THRESHOLD`` = 0.4, the score above which ARENA's exercises call a head an
induction head (ARENA, chapter 1.2 "Intro to Mech Interp", ``induction_attn_detector``).
``TrainedInduction.formed_at`` is the first measured step where one does;
``config.stop_when_formed`` ends training there.

What to expect (measured: ``benchmarks/bench_induction.py``, ``tests/test_models_induction.py``):
with a varying repeat length the loss stays on a plateau, then drops as a layer-0
head becomes a previous-token head and a layer-1 head an induction head (Olsson et
al. 2022's phase change, here after a few hundred steps rather than billions of
tokens). With a fixed repeat length the induction stripe appears sooner, and no
previous-token head forms: the model finds the copy by its position.

Determinism and stopping are as in ``training`` (notebook 06): the model's weights
from ``config.seed``, the batches from a private generator with the same seed, torch
on one thread; ``interruptible=True`` turns Kernel > Interrupt into "stop after this
step and keep the model".
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

import numpy as np
import torch

from .. import _validate, circuits
from ._interrupt import TrainedRun, cached_run, one_thread, resolve_config, stop_on_sigint
from .attention_only import AttentionOnlyModel
from .repeats import RepeatTask, half_losses

#: A head whose induction score reaches this is an induction head (ARENA's threshold).
INDUCTION_THRESHOLD = 0.4
#: The evaluation sequences: repeated random tokens, the same for every model.
EVAL_SEED = 2022
EVAL_SEQUENCES = 64
EVAL_REPEAT = 12


@dataclass(frozen=True)
class InductionConfig:
    """Everything that decides a trained model. Two equal configs train equal models."""

    seed: int = 0
    repeat: str = "varying"
    max_steps: int = 600
    batch_size: int = 32
    lr: float = 1e-2
    eval_every: int = 10
    stop_when_formed: bool = False

    def __post_init__(self):
        RepeatTask(self.repeat)  # names the valid settings
        for name in ("max_steps", "batch_size", "eval_every"):
            object.__setattr__(self, name, _validate.positive_int(getattr(self, name), name))
        object.__setattr__(self, "lr", _validate.positive_number(self.lr, "lr", example="1e-2"))
        object.__setattr__(self, "seed", _validate.seed_int(self.seed))
        object.__setattr__(self, "stop_when_formed", _validate.flag(self.stop_when_formed, "stop_when_formed"))

    @property
    def task(self) -> RepeatTask:
        return RepeatTask(self.repeat)


class InductionProgress(NamedTuple):
    """One progress report.

    Shapes:
        previous_token, induction: (L, H), every head's score on ``evaluation_tokens``
    """

    step: int
    max_steps: int
    first_half_loss: float  # mean over the training steps since the last report (NaN at step 0)
    repeated_half_loss: float
    previous_token: np.ndarray
    induction: np.ndarray
    seconds: float  # since training started (not part of what a seed decides)
    done: bool


@dataclass
class TrainedInduction(TrainedRun):
    """A trained model, its config, its per-step losses and its progress reports."""

    model: AttentionOnlyModel
    config: InductionConfig
    history: list[InductionProgress] = field(default_factory=list)
    #: (steps, 2): the loss on the first half and on the repeated half of each step's training batch.
    losses: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    interrupted: bool = False

    @property
    def formed_at(self) -> int | None:
        """The first measured step where a head's induction score reached ``INDUCTION_THRESHOLD``, or None."""
        for p in self.history:
            if p.induction.max() >= INDUCTION_THRESHOLD:
                return p.step
        return None

    @property
    def seconds_to_form(self) -> float | None:
        """Seconds of training (measurements included) until ``formed_at``, or None."""
        step = self.formed_at
        return None if step is None else next(p.seconds for p in self.history if p.step == step)

    def score_history(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Steps (n,), previous-token scores (n, L, H) and induction scores (n, L, H) of every report."""
        steps = np.array([p.step for p in self.history])
        return steps, np.stack([p.previous_token for p in self.history]), np.stack([p.induction for p in self.history])


def evaluation_tokens(vocab_size: int | None = None) -> torch.Tensor:
    """The fixed repeated random tokens every score is measured on: (64, 25), seed ``EVAL_SEED``."""
    vocab_size = RepeatTask().vocab_size if vocab_size is None else vocab_size
    tokens = circuits.repeated_tokens(EVAL_SEQUENCES, EVAL_REPEAT, vocab_size, seed=EVAL_SEED)  # (B, 1 + 2L)
    return torch.from_numpy(tokens)  # (B, T)


def pattern_scores(model: AttentionOnlyModel, tokens: torch.Tensor, repeat_length: int = EVAL_REPEAT,
                   **forward) -> tuple[np.ndarray, np.ndarray]:
    """Every head's previous-token and induction score on repeated tokens (``forward``: heads_off, ...).

    Shapes:
        tokens: (B, T), ending with a stretch of ``repeat_length`` and its copy
        returns: previous_token (L, H), induction (L, H)
    """
    with torch.no_grad():
        _, weights = model(tokens, need_weights=True, **forward)  # (L, B, H, T, T)
    weights = weights.double().numpy()
    previous = np.stack([circuits.previous_token_score(w) for w in weights])  # (L, H)
    induction = np.stack([circuits.induction_score(w, repeat_length) for w in weights])  # (L, H)
    return previous, induction


def train_induction(config: InductionConfig | None = None, callback: Callable[[InductionProgress], None] | None = None,
                    *, interruptible: bool = False, **overrides) -> TrainedInduction:
    """Train one model; ``callback(progress)`` every ``eval_every`` steps and at the end.

    ``overrides`` replace fields of ``config`` (``train_induction(seed=2, repeat="fixed")``).
    ``interruptible=True``: an interrupt (SIGINT, or a KeyboardInterrupt raised in the
    loop) stops training after the step under way and returns the model so far, with
    ``interrupted`` set and a last report (``done``) at that step.
    """
    config = resolve_config(config, InductionConfig, overrides)
    if not isinstance(config, InductionConfig):
        raise TypeError(f"config must be an InductionConfig or None; got {type(config).__name__}")
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be a function that takes an InductionProgress, or None; got {callback!r:.60}")
    task = config.task
    eval_tokens = evaluation_tokens(task.vocab_size)
    losses: list[tuple[float, float]] = []
    with one_thread(), stop_on_sigint(interruptible) as stop:
        model = AttentionOnlyModel(vocab_size=task.vocab_size, seq_len=task.seq_len, seed=config.seed)
        optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr)
        generator = torch.Generator().manual_seed(config.seed)
        result = TrainedInduction(model, config)
        start = time.perf_counter()

        def report(step: int, done: bool) -> None:
            since = np.array(losses[result.history[-1].step if result.history else 0:], dtype=float).reshape(-1, 2)
            first, repeated = since.mean(axis=0) if len(since) else (float("nan"), float("nan"))
            previous, induction = pattern_scores(model, eval_tokens)
            result.history.append(InductionProgress(step, config.max_steps, float(first), float(repeated), previous,
                                                    induction, time.perf_counter() - start, done))

        report(0, False)
        completed = 0
        try:
            if callback is not None:
                callback(result.history[-1])
            for step in range(1, config.max_steps + 1):
                if stop.requested:
                    break
                batch = task.batch(config.batch_size, generator=generator)
                logits = model(batch.tokens).logits  # (B, T, V)
                first, repeated = half_losses(logits, batch.tokens, task)
                loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, task.vocab_size),
                                                         batch.tokens[:, 1:].reshape(-1))
                if not torch.isfinite(loss):
                    raise ValueError(f"training diverged at step {step}: the loss became {float(loss.detach())}; "
                                     f"lr={config.lr:g} is too large, try a smaller one such as 3e-3")
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                losses.append((float(first.detach()), float(repeated.detach())))
                completed = step
                if step % config.eval_every == 0 or step == config.max_steps:
                    report(step, step == config.max_steps)
                    formed = result.history[-1].induction.max() >= INDUCTION_THRESHOLD
                    if config.stop_when_formed and formed:
                        result.history[-1] = result.history[-1]._replace(done=True)
                    if callback is not None:
                        callback(result.history[-1])
                    if result.history[-1].done:
                        break
        except KeyboardInterrupt:
            if not interruptible:
                raise
            stop.requested = True
        if stop.requested and not result.history[-1].done:
            result.interrupted = True
            if result.history[-1].step == completed:
                result.history.pop()  # measured at this very step already: replace it by the final report
            report(completed, True)
    result.losses = np.array(losses, dtype=float).reshape(-1, 2)
    model.eval()
    return result


_CACHE: dict[InductionConfig, TrainedInduction] = {}


def is_cached(config: InductionConfig) -> bool:
    """Whether ``trained_induction`` holds this config already (a control then shows it at once)."""
    return config in _CACHE


def trained_induction(config: InductionConfig | None = None, callback=None, *, interruptible: bool = False,
                      **overrides) -> TrainedInduction:
    """``train_induction`` with an in-process cache (an interrupted run is not cached)."""
    config = resolve_config(config, InductionConfig, overrides)
    return cached_run(_CACHE, config, train_induction, callback, interruptible)

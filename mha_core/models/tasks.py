"""Synthetic sequence tasks for the toy models: what a head must learn to look at.

Two tasks, both on short random token sequences (tokens 0..V-1, T positions):

``RELATIONS`` (notebooks 06 and 08) asks, at every position t, three things at once:

    previous token    the token at t - 1            (undefined at t = 0)
    two back          the token at t - 2            (undefined at t < 2)
    largest so far    the largest token in 0..t

A causal attention layer can answer each one by looking at the right position: the
previous one, the one two back, or one holding the largest token so far. Those
positions are the relation's *targets*; ``target_positions`` marks them, and the
role analysis (``analysis.role_scores``) measures how much of each head's weight
falls on them.

``LAST_MATCH`` (notebook 08's bottleneck sweep) asks how far back the last earlier
occurrence of the current token is (1..t), or 0 when the token has not occurred
before. Finding it means matching token identity between a query and a key, which
needs rank in the query-key product: the job small heads do badly.

Undefined targets are ``IGNORE`` (-100, what ``torch.nn.functional.cross_entropy``
skips).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple

import torch

from .. import _validate

VOCAB_SIZE = 12
SEQ_LEN = 12
#: The target of a position where a relation is undefined (cross_entropy's ignore_index).
IGNORE = -100


class Batch(NamedTuple):
    """Token sequences with their targets.

    Shapes:
        tokens: (B, T), int64 in 0..V-1
        targets: (R, B, T), int64 class per relation and position; IGNORE where undefined
        target_positions: (R, B, T, T) bool; [r, b, t, j] is True when key position j
            holds what relation r asks for at query position t (all False where undefined)
    """

    tokens: torch.Tensor
    targets: torch.Tensor
    target_positions: torch.Tensor


@dataclass(frozen=True)
class Task:
    """A named task: its relations, how many classes each has, and its batch maker."""

    name: str
    relations: tuple[str, ...]
    n_classes: int
    make: Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]  # tokens -> (targets, target_positions)
    vocab_size: int = VOCAB_SIZE
    seq_len: int = SEQ_LEN

    def batch(self, batch_size: int, *, seed: int | None = None, generator: torch.Generator | None = None) -> Batch:
        """``batch_size`` random sequences and their targets, from ``seed`` or ``generator`` (not the global RNG)."""
        batch_size = _validate.positive_int(batch_size, "batch_size")
        if generator is None:
            generator = torch.Generator().manual_seed(_validate.seed_int(seed if seed is not None else 0))
        tokens = torch.randint(0, self.vocab_size, (batch_size, self.seq_len), generator=generator)  # (B, T)
        targets, positions = self.make(tokens)
        return Batch(tokens, targets, positions)

    def from_tokens(self, tokens) -> Batch:
        """The targets of given sequences, shape (B, T) (or (T,) for one sequence)."""
        tokens = torch.as_tensor(tokens, dtype=torch.long)
        if tokens.dim() == 1:
            tokens = tokens.unsqueeze(0)  # (1, T)
        tokens = self.check_tokens(tokens)
        targets, positions = self.make(tokens)
        return Batch(tokens, targets, positions)

    def check_tokens(self, tokens: torch.Tensor) -> torch.Tensor:
        """``tokens`` unchanged if it is a (B, T) integer tensor of this task's tokens, else a clear error.

        Shapes:
            tokens: (B, T), 1 <= T <= seq_len, values 0 .. vocab_size - 1
        """
        if not isinstance(tokens, torch.Tensor) or tokens.is_floating_point() or tokens.is_complex() or tokens.dtype == torch.bool:
            what = f"dtype {tokens.dtype}" if isinstance(tokens, torch.Tensor) else type(tokens).__name__
            raise TypeError(f"tokens must be an integer torch.Tensor of shape (B, T); got {what}")
        if tokens.dim() != 2 or not 1 <= tokens.shape[1] <= self.seq_len or tokens.numel() == 0:
            raise ValueError(f"tokens must have shape (B, T) with 1 <= T <= {self.seq_len} (the task's seq_len); got {tuple(tokens.shape)}")
        low, high = int(tokens.min()), int(tokens.max())
        if low < 0 or high >= self.vocab_size:
            raise ValueError(f"tokens must lie in 0..{self.vocab_size - 1} (the task's vocab_size={self.vocab_size}); "
                             f"got values {low}..{high}")
        return tokens


def _relations(tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Targets of previous token, two back, largest so far.

    Shapes:
        tokens: (B, T)
        returns: targets (3, B, T), target_positions (3, B, T, T)
    """
    B, T = tokens.shape
    targets = torch.full((3, B, T), IGNORE, dtype=torch.long)  # (R, B, T)
    positions = torch.zeros((3, B, T, T), dtype=torch.bool)  # (R, B, Tq, Tk)
    query = torch.arange(T)
    for r, back in ((0, 1), (1, 2)):
        targets[r, :, back:] = tokens[:, :-back]  # (B, T - back)
        positions[r, :, query[back:], query[back:] - back] = True  # one key per query
    largest = torch.cummax(tokens, dim=1).values  # (B, T)
    targets[2] = largest
    causal = query[None, :] <= query[:, None]  # (Tq, Tk): key at or before the query
    positions[2] = (tokens[:, None, :] == largest[:, :, None]) & causal  # (B, Tq, Tk): every key holding the maximum
    return targets, positions


def _last_match(tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Distance back to the last earlier occurrence of each token (0 = none).

    Shapes:
        tokens: (B, T)
        returns: targets (1, B, T), target_positions (1, B, T, T)
    """
    B, T = tokens.shape
    query = torch.arange(T)
    earlier = query[None, :] < query[:, None]  # (Tq, Tk): strictly before the query
    same = (tokens[:, :, None] == tokens[:, None, :]) & earlier  # (B, Tq, Tk)
    # The last earlier match has the largest key index among the matches.
    key_index = torch.where(same, query, torch.full_like(query, -1))  # (B, Tq, Tk)
    last = key_index.max(dim=-1).values  # (B, Tq); -1 = no match
    found = last >= 0
    targets = torch.where(found, query - last, torch.zeros_like(last))  # (B, T)
    positions = (query[None, None, :] == last[:, :, None]) & found[:, :, None]  # (B, Tq, Tk)
    return targets.unsqueeze(0), positions.unsqueeze(0)  # (1, B, T), (1, B, T, T)


RELATIONS = Task("relations", ("previous token", "two back", "largest so far"), VOCAB_SIZE, _relations)
LAST_MATCH = Task("last match", ("distance to last match",), SEQ_LEN, _last_match)
TASKS = {RELATIONS.name: RELATIONS, LAST_MATCH.name: LAST_MATCH}


def get_task(task) -> Task:
    """A ``Task`` from itself or its name ('relations', 'last match')."""
    if isinstance(task, Task):
        return task
    if task not in TASKS:
        raise ValueError(f"task={task!r} is not a known task; valid tasks are {', '.join(repr(t) for t in TASKS)}")
    return TASKS[task]

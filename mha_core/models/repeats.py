"""The repeated-stretch task: next-token prediction where the second half repeats earlier tokens.

Each sequence has ``seq_len`` = 25 tokens over a vocabulary of 32. Positions 0 .. 12
are random. From position 13 on every token repeats the one ``repeat_length`` (L)
places back:

    tokens[t] = tokens[t - L]        for t = 13 .. 24

With L = 12 that is one first token, a random stretch of 12 and the same stretch again
(``mha_core.circuits.repeated_tokens``). With L = 4 the last four tokens of the first
half come round three times. The model predicts every next token; only in the
repeated half can it do better than guessing, and only by finding the earlier copy of
the current token and reading what came after it: an induction head.

Two settings of L (notebook: "repeat length fixed / varying"):

    varying  L drawn for each sequence from 4 .. 12: the copy is never at the same
             distance, so position alone cannot find it
    fixed    L = 12 for every sequence: the copy is always 11 keys back from the token
             to predict, a shortcut that needs no previous-token head

Losses are read on two halves (``half_losses``): the *first half*, predicting tokens
1 .. 12 (random: nothing to learn beyond the vocabulary), and the *repeated half*,
predicting tokens 14 .. 24 (each follows a token that has an earlier copy). Token 13,
the first of the repeat, follows a random token and belongs to neither.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn.functional as F

from .. import _validate

VOCAB_SIZE = 32
SEQ_LEN = 25
#: The first position of the repeated half.
REPEAT_FROM = 13
#: The repeat lengths of the two settings.
REPEAT_LENGTHS = {"varying": tuple(range(4, 13)), "fixed": (12,)}


class RepeatBatch(NamedTuple):
    """Sequences with a repeated half, and the repeat length of each.

    Shapes:
        tokens: (B, T) int64 in 0..V-1
        repeat_length: (B,) int64
    """

    tokens: torch.Tensor
    repeat_length: torch.Tensor


@dataclass(frozen=True)
class RepeatTask:
    """The task for one setting of the repeat length ('varying' or 'fixed')."""

    repeat: str = "varying"
    vocab_size: int = VOCAB_SIZE
    seq_len: int = SEQ_LEN
    repeat_from: int = REPEAT_FROM

    def __post_init__(self):
        _validate.choice(self.repeat, "repeat", tuple(REPEAT_LENGTHS))

    @property
    def repeat_lengths(self) -> tuple[int, ...]:
        return REPEAT_LENGTHS[self.repeat]

    def batch(self, batch_size: int, *, seed: int | None = None, generator: torch.Generator | None = None) -> RepeatBatch:
        """``batch_size`` sequences from ``seed`` or ``generator`` (never the global RNG)."""
        batch_size = _validate.positive_int(batch_size, "batch_size")
        if generator is None:
            generator = torch.Generator().manual_seed(_validate.seed_int(seed if seed is not None else 0))
        elif not isinstance(generator, torch.Generator):
            raise TypeError(f"generator must be a torch.Generator or None; got {type(generator).__name__}")
        tokens = torch.randint(0, self.vocab_size, (batch_size, self.seq_len), generator=generator)  # (B, T)
        lengths = torch.tensor(self.repeat_lengths)
        pick = torch.randint(0, len(lengths), (batch_size,), generator=generator)  # (B,)
        repeat_length = lengths[pick]  # (B,)
        rows = torch.arange(batch_size)
        for t in range(self.repeat_from, self.seq_len):  # in order: a short repeat copies its own copies
            tokens[:, t] = tokens[rows, t - repeat_length]  # (B,)
        return RepeatBatch(tokens, repeat_length)

    @property
    def first_half_targets(self) -> range:
        """Positions of the tokens predicted in the first half (1 .. 12)."""
        return range(1, self.repeat_from)

    @property
    def repeated_half_targets(self) -> range:
        """Positions of the tokens predicted in the repeated half (14 .. 24): each follows a repeated token."""
        return range(self.repeat_from + 1, self.seq_len)


def next_token_losses(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of each next-token prediction: position t predicts token t + 1.

    Shapes:
        logits: (B, T, V); tokens: (B, T)
        returns: (B, T - 1), entry t the loss of predicting token t + 1
    """
    B, T, V = logits.shape
    losses = F.cross_entropy(logits[:, :-1].reshape(-1, V), tokens[:, 1:].reshape(-1), reduction="none")  # (B*(T-1),)
    return losses.view(B, T - 1)  # (B, T - 1)


def half_losses(logits: torch.Tensor, tokens: torch.Tensor, task: RepeatTask | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean loss of predicting the first half's tokens (1 .. 12) and the repeated half's (14 .. 24).

    Shapes:
        logits: (B, T, V); tokens: (B, T)
        returns: first_half (), repeated_half ()
    """
    task = task or RepeatTask()
    losses = next_token_losses(logits, tokens)  # (B, T - 1): column t predicts token t + 1
    first = [t - 1 for t in task.first_half_targets]
    repeated = [t - 1 for t in task.repeated_half_targets]
    return losses[:, first].mean(), losses[:, repeated].mean()

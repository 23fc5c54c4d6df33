"""The induction circuit in a real decoder (notebook 09, section 10): SmolLM2-135M on repeated random words.

Notebook 09 grows a previous-token head and an induction head in a two-layer toy. This
module looks for the same two kinds of head among SmolLM2's 270 (30 layers x 9 heads),
with the same scores (``mha_core.circuits``), and switches the best induction heads off:

    search = find_induction_heads(model)          # scores, chance levels and losses on repeated words
    search.top_induction(5)                       # [(layer, head, score), ...] counted from 0
    removal = remove_induction_heads(model, search, k=5)
    removal.top_loss, removal.random_losses       # the second repeat's loss, top-k off / k random off

The sequences are the toy's layout with a real vocabulary: the model's BOS token, then a
stretch of ``repeat_length`` random words, then the same stretch again. The words are
*ordinary tokens* (``ordinary_token_ids``): a space and three or more lowercase letters,
among the first ``ORDINARY_BELOW`` ids of the vocabulary (byte-pair merges come roughly
in order of frequency, so these are common whole words: " the", " kernel", " relief").

Losses follow the toy's halves (``mha_core.models.repeats``): the *first repeat*
predicts tokens 2 .. L + 1 (counted from 1; each is a fresh random word), the *second
repeat* predicts tokens L + 3 .. 2L + 1 (each follows a word that has an earlier copy).
Token L + 2, the first of the copy, follows a random word and belongs to neither.

Switching heads off uses the decoder's head switches (``heads_off``): zero ablation, the
head's output replaced by zeros. The control switches off as many heads drawn at random
from the others, several times, with a seed.

``weight_on_later_tokens`` is the check for why MiniLM cannot take part: an encoder's
queries look both ways, so a query can read the very token it would have to predict.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .. import _validate, circuits
from .decoder_analysis import top_heads
from .encoder import head_name

#: Ordinary tokens come from the ids below this (the most frequent merges of the vocabulary).
ORDINARY_BELOW = 5000
#: A whole lowercase word with its leading space, as a token piece.
_WORD = re.compile(r" [a-z]{3,}")
#: The notebook's defaults: two sequences of BOS + 24 words + the same 24 (T = 49), five random draws of k = 5 heads.
N_SEQUENCES = 2
REPEAT_LENGTH = 24
TOP_K = 5
N_DRAWS = 5

__all__ = ["N_DRAWS", "N_SEQUENCES", "ORDINARY_BELOW", "REPEAT_LENGTH", "TOP_K", "HeadRemoval", "InductionSearch",
           "find_induction_heads", "ordinary_token_ids", "remove_induction_heads", "repeat_losses",
           "repeated_word_ids", "token_losses", "weight_on_later_tokens"]


def _check_model(model):
    for attribute in ("forward", "pieces", "n_layers", "n_heads", "vocab_size", "bos_id"):
        if not hasattr(model, attribute):
            raise TypeError(f"model must be a decoder from load_smollm2(); got {type(model).__name__}, "
                            f"which has no {attribute!r}")
    return model


def ordinary_token_ids(model, below: int = ORDINARY_BELOW) -> np.ndarray:
    """Ids of whole lowercase words with a leading space (" the", " kernel"), among the ids below ``below``.

    Shapes:
        returns: (N,) int64, increasing
    """
    model = _check_model(model)
    below = _validate.int_in_range(below, "below", 2, model.vocab_size, meaning=" (the vocabulary's size)")
    pieces = model.pieces(range(below))
    ids = np.array([i for i, piece in enumerate(pieces) if _WORD.fullmatch(piece)], dtype=np.int64)
    if len(ids) < 2:
        raise ValueError(f"below={below} leaves {len(ids)} ordinary word(s); use a larger value, e.g. {ORDINARY_BELOW}")
    return ids


def repeated_word_ids(model, n_sequences: int = N_SEQUENCES, repeat_length: int = REPEAT_LENGTH, *,
                      seed=0) -> np.ndarray:
    """BOS, a stretch of ``repeat_length`` random ordinary words, the same stretch again; one row per sequence.

    The layout is ``circuits.repeated_tokens``'s (drawn there, with no random first
    token), its draws mapped onto ``ordinary_token_ids``; the first token is the model's BOS.

    Shapes:
        returns: (B, T) int64 with B = n_sequences, T = 1 + 2 * repeat_length
    """
    model = _check_model(model)
    words = ordinary_token_ids(model)
    limit = (model.context - 1) // 2 if hasattr(model, "context") else None
    if limit is not None:
        _validate.int_in_range(repeat_length, "repeat_length", 1, limit, meaning=" (twice it, plus BOS, must fit the context)")
    picks = circuits.repeated_tokens(n_sequences, repeat_length, len(words), prefix=0, seed=seed)  # (B, 2L)
    bos = np.full((picks.shape[0], 1), model.bos_id, dtype=np.int64)  # (B, 1)
    return np.concatenate([bos, words[picks]], axis=1)  # (B, 1 + 2L)


# --------------------------------------------------------------------------- losses


def token_losses(logits, ids) -> np.ndarray:
    """Cross-entropy of each next-token prediction (nats): position t predicts token t + 1.

    Shapes:
        logits: (T, V); ids: (T,)
        returns: (T - 1,)
    """
    logits = np.asarray(logits, dtype=np.float64)[:-1]  # (T-1, V)
    ids = np.asarray(ids)
    top = logits.max(axis=-1, keepdims=True)  # (T-1, 1)
    log_probs = logits - top - np.log(np.exp(logits - top).sum(axis=-1, keepdims=True))  # (T-1, V)
    return -log_probs[np.arange(len(ids) - 1), ids[1:]]  # (T-1,)


def repeat_losses(losses, repeat_length: int) -> tuple[float, float]:
    """Mean loss of the first repeat (tokens 2 .. L+1) and of the second (tokens L+3 .. 2L+1), counted from 1.

    Shapes:
        losses: (B, T - 1) with T = 1 + 2 * repeat_length; column t predicts token t + 1 (from 0)
    """
    losses = np.asarray(losses, dtype=np.float64)
    L = _validate.positive_int(repeat_length, "repeat_length")
    if losses.ndim != 2 or losses.shape[1] != 2 * L:
        raise ValueError(f"losses must have shape (B, 2 * repeat_length) = (B, {2 * L}); got {losses.shape}")
    return float(losses[:, :L].mean()), float(losses[:, L + 1:].mean())


# --------------------------------------------------------------------------- the search


@dataclass(frozen=True)
class InductionSearch:
    """Every head's scores on repeated random words, and how well the model predicts each repeat.

    Layers and heads count from 0 here; ``head_name`` names them for people ("L19 H7").

    Shapes (B sequences, T = 1 + 2L tokens, L_ layers, H heads):
        ids: (B, T)
        induction, previous_token: (L_, H)
        losses: (B, T - 1), column t the loss of predicting token t + 1
    """

    ids: np.ndarray
    tokens: tuple[str, ...]  # the first sequence's tokens, as text
    repeat_length: int
    induction: np.ndarray
    previous_token: np.ndarray
    chance: circuits.ChanceScores
    losses: np.ndarray
    first_repeat_loss: float
    second_repeat_loss: float
    uniform_loss: float  # ln V: the loss of a guess spread evenly over the vocabulary

    def top_induction(self, k: int = TOP_K) -> list[tuple[int, int, float]]:
        """The ``k`` heads with the largest induction score, largest first: (layer, head, score) from 0."""
        return top_heads(self.induction, k)

    def top_previous_token(self, k: int = TOP_K) -> list[tuple[int, int, float]]:
        """The ``k`` heads with the largest previous-token score, largest first."""
        return top_heads(self.previous_token, k)

    def count_above(self, scores: str, threshold: float) -> int:
        """How many heads score at least ``threshold`` on ``scores`` ('induction' or 'previous_token')."""
        scores = _validate.choice(scores, "scores", ("induction", "previous_token"))
        return int((getattr(self, scores) >= float(threshold)).sum())


def find_induction_heads(model, n_sequences: int = N_SEQUENCES, repeat_length: int = REPEAT_LENGTH, *,
                         seed=0) -> InductionSearch:
    """Run the model on repeated random words and score every head (``circuits`` scores, averaged over sequences).

    One forward pass per sequence, each keeping every head's weights.
    """
    model = _check_model(model)
    ids = repeated_word_ids(model, n_sequences, repeat_length, seed=seed)  # (B, T)
    runs = [model.forward(row, keep=True) for row in ids]
    weights = np.stack([run.attentions for run in runs])  # (B, L_, H, T, T)
    B, n_layers, H, T, _ = weights.shape
    # Every head of every layer as one head axis, so the circuits scores (B, H, T, T) -> (H,) read all 270 at once.
    weights = weights.reshape(B, n_layers * H, T, T)  # (B, L_*H, T, T)
    induction = circuits.induction_score(weights, repeat_length).reshape(n_layers, H)  # (L_, H)
    previous = circuits.previous_token_score(weights).reshape(n_layers, H)  # (L_, H)
    losses = np.stack([token_losses(run.logits, row) for run, row in zip(runs, ids)])  # (B, T-1)
    first, second = repeat_losses(losses, repeat_length)
    return InductionSearch(ids=ids, tokens=runs[0].tokens, repeat_length=int(repeat_length), induction=induction,
                           previous_token=previous, chance=circuits.chance_scores(T, repeat_length), losses=losses,
                           first_repeat_loss=first, second_repeat_loss=second,
                           uniform_loss=float(np.log(model.vocab_size)))


# --------------------------------------------------------------------------- switching heads off


@dataclass(frozen=True)
class HeadRemoval:
    """The loss on each repeat with the top ``k`` induction heads off, and with ``k`` random heads off, per draw.

    Heads are (layer, head) pairs counted from 0. Zero ablation (the decoder's head switches).

    Shapes:
        random_heads: n_draws lists of k pairs
        random_losses, random_first_losses: (n_draws,)
    """

    k: int
    top_heads: tuple[tuple[int, int], ...]
    loss_on: float  # second repeat, every head on
    top_loss: float  # second repeat, the top k induction heads off
    top_first_loss: float  # first repeat, the top k off
    random_heads: tuple[tuple[tuple[int, int], ...], ...]
    random_losses: np.ndarray
    random_first_losses: np.ndarray
    ablation: str = "zero"

    @property
    def random_mean(self) -> float:
        return float(self.random_losses.mean())

    @property
    def random_range(self) -> tuple[float, float]:
        return float(self.random_losses.min()), float(self.random_losses.max())

    @property
    def top_names(self) -> list[str]:
        return [head_name(layer, head) for layer, head in self.top_heads]


def _losses_with_heads_off(model, ids, heads_off, repeat_length: int) -> tuple[float, float]:
    losses = np.stack([token_losses(model.forward(row, heads_off=list(heads_off)).logits, row) for row in ids])  # (B, T-1)
    return repeat_losses(losses, repeat_length)


def remove_induction_heads(model, search: InductionSearch, k: int = TOP_K, *, n_draws: int = N_DRAWS,
                           seed=0) -> HeadRemoval:
    """Switch the ``k`` best induction heads of ``search`` off, then ``k`` random other heads, ``n_draws`` times.

    The random heads are drawn, without repeats within a draw, from the heads that are not
    among the top ``k``: the control never switches off the heads it is compared with.
    Costs (1 + n_draws) forward passes per sequence of ``search``.
    """
    model = _check_model(model)
    if not isinstance(search, InductionSearch):
        raise TypeError(f"search must be the InductionSearch find_induction_heads returns; got {type(search).__name__}")
    n_heads_total = search.induction.size
    k = _validate.int_in_range(k, "k", 1, n_heads_total - 1, meaning=" (leaving some heads to draw at random)")
    n_draws = _validate.positive_int(n_draws, "n_draws")
    rng = _validate.rng(seed)
    H = search.induction.shape[1]
    top = tuple((layer, head) for layer, head, _ in search.top_induction(k))
    others = np.setdiff1d(np.arange(n_heads_total), [layer * H + head for layer, head in top])  # flat indices
    top_first, top_second = _losses_with_heads_off(model, search.ids, top, search.repeat_length)
    draws, firsts, seconds = [], [], []
    for _ in range(n_draws):
        picked = tuple(divmod(int(i), H) for i in np.sort(rng.choice(others, size=k, replace=False)))
        first, second = _losses_with_heads_off(model, search.ids, picked, search.repeat_length)
        draws.append(picked)
        firsts.append(first)
        seconds.append(second)
    return HeadRemoval(k=k, top_heads=top, loss_on=search.second_repeat_loss, top_loss=top_second,
                       top_first_loss=top_first, random_heads=tuple(draws), random_losses=np.asarray(seconds),
                       random_first_losses=np.asarray(firsts))


# --------------------------------------------------------------------------- why an encoder cannot take part


def weight_on_later_tokens(attentions) -> np.ndarray:
    """Each head's mean weight on the keys after the query, over the queries (0 for a decoder: it cannot look ahead).

    Shapes:
        attentions: (L, H, T, T)
        returns: (L, H)
    """
    a = _validate.float_array(attentions, "attentions", ranks=(4,), shape_names="(L, H, T, T)", copy=False)
    T = a.shape[-1]
    if a.shape[-2] != T:
        raise ValueError(f"attentions must have shape (L, H, T, T), one row per query; got {a.shape}")
    later = np.triu(np.ones((T, T), dtype=bool), k=1)  # (Tq, Tk): key after query
    return np.where(later, a, 0.0).sum(axis=-1).mean(axis=-1)  # (L, H)

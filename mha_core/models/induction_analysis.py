"""Reading a trained two-layer model: which heads do what, whether they compose, what breaks without them.

Three measurements, each against the level that says what it means:

``head_scores``         every head's previous-token and induction score on repeated random
                        tokens (``mha_core.circuits``), with the chance level of a head that
                        spreads its weight evenly
``composition``         the K-composition score of each layer-0 head into each layer-1 head
                        (Elhage et al. 2021), with the same score on random matrices of the
                        same shapes (``circuits.composition_baseline``)
``ablation_effects``    switch each head off, by zero or by mean ablation, and measure the
                        best induction score left in the last layer and the loss on the
                        second repeat

Zero and mean ablation differ in what they take away. A zeroed head takes away
everything it writes, including what it writes on every sequence alike (a constant
offset the later layers are tuned to), so even a head that takes no part in a circuit
can move things a little. A mean-ablated head keeps its average output at each
position and loses only what depends on the tokens: the part a circuit uses.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

from .. import _validate, circuits
from .attention_only import ABLATIONS, AttentionOnlyModel
from .induction import EVAL_REPEAT, evaluation_tokens, pattern_scores
from .repeats import RepeatTask, half_losses


def _model(model) -> AttentionOnlyModel:
    model = getattr(model, "model", model)  # a TrainedInduction or the model itself
    if not isinstance(model, AttentionOnlyModel):
        raise TypeError(f"model must be an AttentionOnlyModel or a TrainedInduction; got {type(model).__name__}")
    return model


class HeadScores(NamedTuple):
    """Every head's pattern scores, and the chance levels to read them against.

    Shapes:
        previous_token, induction: (L, H)
    """

    previous_token: np.ndarray
    induction: np.ndarray
    chance: circuits.ChanceScores


def head_scores(model, tokens: torch.Tensor | None = None, repeat_length: int = EVAL_REPEAT) -> HeadScores:
    """Previous-token and induction score of every head on repeated tokens (default: ``evaluation_tokens``)."""
    model = _model(model)
    tokens = evaluation_tokens(model.vocab_size) if tokens is None else tokens
    previous, induction = pattern_scores(model, tokens, repeat_length)
    return HeadScores(previous, induction, circuits.chance_scores(tokens.shape[1], repeat_length))


class Composition(NamedTuple):
    """K- and Q-composition between consecutive layers, and the random-matrix baseline (the same for both).

    Shapes:
        k_composition, q_composition: (L-1, H, H); [l, h0, h1] = head h0 of layer l into head h1 of layer l + 1
    """

    k_composition: np.ndarray
    q_composition: np.ndarray
    baseline: circuits.Baseline


def composition(model, *, n_draws: int = 200, seed: int = 0) -> Composition:
    """K- and Q-composition of every head of each layer into every head of the next, with the random baseline.

    The baseline is ``circuits.composition_baseline`` (K-composition of random heads); the
    Q-composition of random heads has the same distribution (both are products of the
    same kinds of random factors).
    """
    model = _model(model)
    layers = model.circuits()  # NumPy MultiHeadAttention per layer, x @ w layout
    H = model.n_heads
    k_scores, q_scores = [], []
    for earlier, later in zip(layers, layers[1:]):
        qk = circuits.qk_circuits(later.w_q, later.w_k, H)  # (H, D, D)
        ov = circuits.ov_circuits(earlier.w_v, earlier.w_o, H)  # (H, D, D)
        k_scores.append(circuits.k_composition(qk, ov))  # (H, H)
        q_scores.append(circuits.q_composition(qk, ov))  # (H, H)
    baseline = circuits.composition_baseline(model.d_model, H, n_draws=n_draws, seed=seed)
    return Composition(np.stack(k_scores), np.stack(q_scores), baseline)  # (L-1, H, H) each


class AblationEffects(NamedTuple):
    """What switching each head off (alone) does, against the model with every head on.

    Shapes:
        induction: (L, H); the best induction score in the last layer with head (l, h) off
        repeat_loss: (L, H); the loss on the second repeat with head (l, h) off
    """

    ablation: str
    induction_on: float
    repeat_loss_on: float
    induction: np.ndarray
    repeat_loss: np.ndarray


def second_repeat_loss(model, tokens: torch.Tensor, **forward) -> float:
    """Mean loss of predicting the tokens of the second repeat (14 .. 24) on repeated tokens."""
    model = _model(model)
    with torch.no_grad():
        logits = model(tokens, **forward).logits  # (B, T, V)
    return float(half_losses(logits, tokens, RepeatTask())[1])


#: Sequences of the training task that a mean ablation averages each head's output over.
MEAN_SEQUENCES = 1024
MEAN_SEED = 31


def mean_tokens(trained) -> torch.Tensor:
    """Sequences of the task a model was trained on (its repeat setting), to average head outputs over.

    Shapes:
        returns: (MEAN_SEQUENCES, T)
    """
    repeat = getattr(getattr(trained, "config", None), "repeat", None)
    if repeat is None:
        raise TypeError(f"trained must be a TrainedInduction (its config names the task); got {type(trained).__name__}; "
                        f"for a bare model pass mean_over=tokens")
    return RepeatTask(repeat).batch(MEAN_SEQUENCES, seed=MEAN_SEED).tokens


def ablation_effects(trained, ablation: str = "zero", tokens: torch.Tensor | None = None,
                     repeat_length: int = EVAL_REPEAT, *, mean_over: torch.Tensor | None = None) -> AblationEffects:
    """Switch each head off alone (``ablation`` 'zero' or 'mean') and measure the induction score and the loss.

    Measured on ``tokens`` (default: ``evaluation_tokens``). A mean ablation puts in
    each head's output averaged, position by position, over ``mean_over`` (default:
    ``mean_tokens(trained)``, sequences of the task the model was trained on, so with
    their repeat lengths), with every head on.
    """
    model = _model(trained)
    ablation = _validate.choice(ablation, "ablation", ABLATIONS)
    tokens = evaluation_tokens(model.vocab_size) if tokens is None else model.check_tokens(tokens)
    means = None
    if ablation == "mean":
        means = model.head_means(mean_tokens(trained) if mean_over is None else mean_over)  # (L, H, T, Dh)
    L, H = model.n_layers, model.n_heads
    induction, loss = np.zeros((L, H)), np.zeros((L, H))
    for layer in range(L):
        for head in range(H):
            forward = dict(heads_off=[(layer, head)], ablation=ablation, head_means=means)
            induction[layer, head] = pattern_scores(model, tokens, repeat_length, **forward)[1][-1].max()
            loss[layer, head] = second_repeat_loss(model, tokens, **forward)
    on_induction = pattern_scores(model, tokens, repeat_length)[1][-1].max()
    return AblationEffects(ablation, float(on_induction), second_repeat_loss(model, tokens), induction, loss)


def find_heads(scores: HeadScores) -> dict[str, tuple[int, int]]:
    """The (layer, head) with the highest previous-token score in the first layer and induction score in the last."""
    previous = (0, int(np.argmax(scores.previous_token[0])))
    last = scores.induction.shape[0] - 1
    return {"previous_token": previous, "induction": (last, int(np.argmax(scores.induction[last])))}

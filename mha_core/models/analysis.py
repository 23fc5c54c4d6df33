"""Reading a trained toy model: head roles, head similarity, and switching heads off.

Roles are found, not given. ``role_scores`` measures, for every head, the share of
its attention weight that lands on each relation's target positions, averaged over
the queries where the relation is defined and over a fixed batch. ``head_roles``
names the relation a head serves when that share is at least ``ROLE_THRESHOLD``
(0.5: more than half of the head's weight goes where the relation points), else
"none".

``head_similarity`` compares two heads' attention patterns query by query with the
Jensen-Shannon divergence (base 2, so 0 for identical rows and 1 for rows with no
overlap) and averages over queries and sequences. Two heads whose mean divergence is
below ``DUPLICATE_THRESHOLD`` duplicate each other.
"""

from __future__ import annotations

import numpy as np
import torch

from .. import _validate
from .tasks import IGNORE

#: A head serves a relation when at least this share of its weight lands on the relation's targets.
ROLE_THRESHOLD = 0.5
#: Two heads duplicate each other when their mean Jensen-Shannon divergence is below this.
DUPLICATE_THRESHOLD = 0.1
NONE = "none"


def _numpy(x) -> np.ndarray:
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def accuracy(logits, targets) -> np.ndarray:
    """Share of defined positions where the read-out's top class is the target, per relation.

    Shapes:
        logits: (R, B, T, C); targets: (R, B, T) with IGNORE where undefined
        returns: (R,)
    """
    logits, targets = _numpy(logits), _numpy(targets)
    defined = targets != IGNORE  # (R, B, T)
    hit = (logits.argmax(-1) == targets) & defined  # (R, B, T)
    return hit.sum(axis=(1, 2)) / np.maximum(defined.sum(axis=(1, 2)), 1)  # (R,)


def role_scores(weights, target_positions) -> np.ndarray:
    """Each head's mean attention weight on each relation's target positions.

    Averaged over the queries where the relation is defined (those with at least one
    target) and over the batch.

    Shapes:
        weights: (B, H, T, T), rows sum to 1
        target_positions: (R, B, T, T) bool
        returns: (H, R), each entry in 0..1
    """
    w = _numpy(weights).astype(np.float64)  # (B, H, Tq, Tk)
    pos = _numpy(target_positions).astype(bool)  # (R, B, Tq, Tk)
    if w.ndim != 4 or pos.ndim != 4 or w.shape[0] != pos.shape[1] or w.shape[2:] != pos.shape[2:]:
        raise ValueError(f"weights (B, H, T, T) and target_positions (R, B, T, T) do not match: {w.shape} and {pos.shape}")
    mass = np.einsum("bhqk,rbqk->hrbq", w, pos.astype(np.float64))  # (H, R, B, Tq): weight on the targets
    defined = pos.any(axis=-1)  # (R, B, Tq)
    total = (mass * defined[None]).sum(axis=(2, 3))  # (H, R)
    return total / np.maximum(defined.sum(axis=(1, 2)), 1)[None, :]  # (H, R)


def head_roles(scores, relations, threshold: float = ROLE_THRESHOLD) -> list[str]:
    """The relation each head serves (its highest score), or "none" below ``threshold``.

    Shapes:
        scores: (H, R)
    """
    scores = np.asarray(scores, dtype=float)
    best = scores.argmax(axis=1)  # (H,)
    return [relations[r] if scores[h, r] >= threshold else NONE for h, r in enumerate(best)]


def role_findings(scores, relations, threshold: float = ROLE_THRESHOLD) -> list[str]:
    """One sentence per head: what it was found to do ("head 2 puts 0.98 of its weight on ...")."""
    scores = np.asarray(scores, dtype=float)
    lines = []
    for h, role in enumerate(head_roles(scores, relations, threshold)):
        r = int(scores[h].argmax())
        if role == NONE:
            lines.append(f"head {h + 1} serves no single relation: at most {scores[h, r]:.2f} of its weight "
                         f"lands on one relation's targets ({relations[r]})")
        else:
            lines.append(f"head {h + 1} puts {scores[h, r]:.2f} of its weight on the {role} target")
    return lines


def head_similarity(weights) -> np.ndarray:
    """Mean Jensen-Shannon divergence (base 2) between every pair of heads' weight rows.

    0 for identical patterns, 1 for patterns that never overlap.

    Shapes:
        weights: (B, H, T, T), rows sum to 1 (causal rows have zeros after the query)
        returns: (H, H), symmetric, zero diagonal
    """
    w = _numpy(weights).astype(np.float64)  # (B, H, Tq, Tk)
    p = w[:, :, None]  # (B, H, 1, Tq, Tk)
    q = w[:, None, :]  # (B, 1, H, Tq, Tk)
    m = (p + q) / 2  # (B, H, H, Tq, Tk)

    def kl(a, b):
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(a > 0, a * np.log2(a / b), 0.0)
        return terms.sum(-1)  # (B, H, H, Tq)

    js = (kl(p, m) + kl(q, m)) / 2  # (B, H, H, Tq)
    out = js.mean(axis=(0, 3))  # (H, H)
    out = (out + out.T) / 2
    np.fill_diagonal(out, 0.0)
    return np.clip(out, 0.0, 1.0)


def duplicate_pairs(similarity, threshold: float = DUPLICATE_THRESHOLD) -> list[tuple[int, int, float]]:
    """Pairs of heads (i < j, 0-based) whose divergence is below ``threshold``, closest first."""
    s = np.asarray(similarity, dtype=float)
    pairs = [(i, j, float(s[i, j])) for i in range(len(s)) for j in range(i + 1, len(s)) if s[i, j] < threshold]
    return sorted(pairs, key=lambda p: p[2])


def ablation_accuracy(model, batch, heads_off=None) -> np.ndarray:
    """Per-relation accuracy with the heads in ``heads_off`` switched off.

    ``heads_off``: (H,) bool, True = off, or head indices counted from 0, such as ``[0, 2]``.

    Shapes:
        returns: (R,)
    """
    off = _validate.heads_off(heads_off, model.n_heads)  # (H,) bool; names a head that does not exist
    with torch.no_grad():
        logits, _ = model(batch.tokens, heads_off=off)
    return accuracy(logits, batch.targets)


def single_head_removal(model, batch) -> np.ndarray:
    """Per-relation accuracy with each head off on its own. Shapes: returns (H, R)."""
    return np.stack([ablation_accuracy(model, batch, [h]) for h in range(model.n_heads)])


def greedy_removal(model, batch) -> list[tuple[tuple[int, ...], np.ndarray]]:
    """Switch heads off one at a time, each time the one whose loss hurts least (mean accuracy).

    Returns [(heads off so far, accuracy (R,)), ...] from no head off to every head off.
    """
    off: list[int] = []
    steps = [((), ablation_accuracy(model, batch, []))]
    for _ in range(model.n_heads):
        candidates = [h for h in range(model.n_heads) if h not in off]
        scored = [(ablation_accuracy(model, batch, off + [h]), h) for h in candidates]
        acc, h = max(scored, key=lambda item: (item[0].mean(), -item[1]))
        off.append(h)
        steps.append((tuple(off), acc))
    return steps


def key_similarity(model, token: int) -> np.ndarray:
    """Cosine similarity, through each head, between ``token``'s key and every vocabulary token's key.

    Each head projects the same token embeddings with its own slice of W_K, so each
    head puts different tokens near ``token``.

    Shapes:
        returns: (H, V), entries in -1..1; column ``token`` is 1
    """
    with torch.no_grad():
        k = model.keys_of_tokens().double()  # (H, V, Dh)
    V = k.shape[1]
    if not 0 <= int(token) < V:
        raise ValueError(f"token={token} is not in the vocabulary 0..{V - 1}")
    k = k / k.norm(dim=-1, keepdim=True).clamp_min(1e-12)  # (H, V, Dh) unit length
    return (k @ k[:, int(token), :, None]).squeeze(-1).numpy()  # (H, V)


# --------------------------------------------------------------------------- baselines: what a number means
#
# A share of weight, or an accuracy, says little until you know what a model gets
# without the skill in question. Two kinds of baseline:
#
# - for role scores: the share a head gets on a relation's targets when its pattern has
#   nothing to do with that relation (spread evenly, or fixed on one position);
# - for accuracy: guessing (1 / n_classes), and the best guess a read-out can make from
#   the current token and its position alone, which is all it has with every head off.


def uniform_head_role_scores(target_positions) -> np.ndarray:
    """The role scores of a head that spreads its weight evenly over the positions it can see.

    Shapes:
        target_positions: (R, B, T, T) bool
        returns: (R,)
    """
    pos = _numpy(target_positions).astype(bool)  # (R, B, Tq, Tk)
    T = pos.shape[-1]
    uniform = np.tril(np.ones((T, T)))  # (Tq, Tk): causal
    uniform /= uniform.sum(axis=1, keepdims=True)
    weights = np.broadcast_to(uniform, (pos.shape[1], 1, T, T))  # (B, 1, T, T)
    return role_scores(weights, pos)[0]  # (R,)


def positional_role_scores(target_positions, backs=(1, 2, 0)) -> np.ndarray:
    """The role scores of purely positional heads: each puts all its weight ``back`` positions back.

    A query with nothing that far back looks at itself. The default heads are
    previous token, two back, and the query itself.

    Shapes:
        target_positions: (R, B, T, T) bool
        returns: (len(backs), R)
    """
    pos = _numpy(target_positions).astype(bool)  # (R, B, Tq, Tk)
    T = pos.shape[-1]
    heads = np.zeros((len(backs), T, T))  # (H, Tq, Tk)
    for h, back in enumerate(backs):
        for t in range(T):
            heads[h, t, t - back if t >= back else t] = 1.0
    return role_scores(np.broadcast_to(heads, (pos.shape[1], len(backs), T, T)), pos)  # (H, R)


def chance_accuracy(task) -> np.ndarray:
    """Accuracy of guessing uniformly at random: 1 / n_classes for every relation. Shapes: returns (R,)."""
    from .tasks import get_task

    task = get_task(task)
    return np.full(len(task.relations), 1.0 / task.n_classes)


#: Sequences used to learn the best guess without attention (a fixed seed, apart from the evaluation batch's).
NO_ATTENTION_FIT = 20_000
NO_ATTENTION_SEED = 777


def no_attention_accuracy(task, batch, *, fit_size: int = NO_ATTENTION_FIT, seed: int = NO_ATTENTION_SEED) -> np.ndarray:
    """Accuracy on ``batch`` of the best guess from the current token and its position alone.

    With every head off a read-out sees only that (the residual path), so no such
    model can do better, up to sampling noise. The guess for each (position, token)
    is the most frequent target among ``fit_size`` fresh sequences drawn with ``seed``.

    Shapes:
        returns: (R,)
    """
    from .tasks import get_task

    task = get_task(task)
    fit = task.batch(fit_size, seed=seed)
    T, V, C = task.seq_len, task.vocab_size, task.n_classes
    tokens, targets = fit.tokens.numpy(), fit.targets.numpy()  # (N, T), (R, N, T)
    position = np.broadcast_to(np.arange(T), tokens.shape)  # (N, T)
    out = []
    for r in range(len(task.relations)):
        counts = np.zeros((T, V, C))
        defined = targets[r] != IGNORE  # (N, T)
        np.add.at(counts, (position[defined], tokens[defined], targets[r][defined]), 1)
        guess = counts.argmax(axis=-1)  # (T, V)
        b_tokens, b_targets = _numpy(batch.tokens), _numpy(batch.targets)[r]  # (B, T), (B, T)
        b_defined = b_targets != IGNORE
        b_position = np.broadcast_to(np.arange(b_tokens.shape[1]), b_tokens.shape)
        hit = guess[b_position, b_tokens] == b_targets  # (B, T)
        out.append((hit & b_defined).sum() / max(b_defined.sum(), 1))
    return np.array(out)


def removal_cost(model, batch) -> np.ndarray:
    """How much accuracy each relation loses when each head is switched off alone.

    The other way to find a head's role: not where it looks (``role_scores``), but what
    breaks without it.

    Shapes:
        returns: (H, R); 0 where nothing is lost
    """
    full = ablation_accuracy(model, batch, [])  # (R,)
    return full[None, :] - single_head_removal(model, batch)  # (H, R)

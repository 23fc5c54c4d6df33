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


def ablation_accuracy(model, batch, heads_off=()) -> np.ndarray:
    """Per-relation accuracy with the heads in ``heads_off`` (0-based) switched off.

    Shapes:
        returns: (R,)
    """
    H = model.n_heads
    bad = [h for h in heads_off if not 0 <= int(h) < H]
    if bad:
        raise ValueError(f"heads_off holds {bad}; heads are numbered 0..{H - 1}")
    heads_on = np.ones(H, dtype=bool)
    heads_on[list(heads_off)] = False
    with torch.no_grad():
        logits, _ = model(batch.tokens, heads_on=heads_on)
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

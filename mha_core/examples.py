"""The running sentence and small, seeded layers the notebooks share.

Everything is deterministic: the same seed gives the same token vectors and projection
matrices on every machine. In this module, as in the course, "weights" are attention
weights (after the softmax); the learned matrices w_q, w_k, w_v, w_o are "projections".
"""

from __future__ import annotations

import numpy as np

from . import _validate
from .attention import MultiHeadAttention, softmax

#: The sentence used from notebook 01 to 07.
RUNNING_SENTENCE = "the cache key changed after deploy"
#: Its tokens, one word each. T = 6.
TOKENS: tuple[str, ...] = tuple(RUNNING_SENTENCE.split())


def token_vectors(d_model: int = 8, seed: int = 0) -> np.ndarray:
    """Toy token vectors for the running sentence, one row per token.

    They stand in for the embeddings a trained model would look up: random, unit
    variance per feature, fixed by ``seed``.

    Shapes:
        returns: (T, D) = (6, d_model)
    """
    d_model = _validate.positive_int(d_model, "d_model")
    rng = np.random.default_rng(seed)
    return rng.standard_normal((len(TOKENS), d_model))  # (T, D)


def demo_layer(d_model: int = 8, n_heads: int = 2, *, n_kv_heads: int | None = None, seed: int = 0, sharpness: float = 2.0) -> MultiHeadAttention:
    """A seeded attention layer whose query and key projections are scaled so its patterns are easy to see.

    A trained layer's attention is often sharper than a freshly initialised one's;
    ``sharpness`` multiplies w_q and w_k to mimic that (the scores grow by sharpness²).
    It is a stand-in for learned projections, not a trained model.
    """
    layer = MultiHeadAttention(d_model, n_heads, n_kv_heads=n_kv_heads, seed=seed)
    layer.w_q = layer.w_q * sharpness
    layer.w_k = layer.w_k * sharpness
    return layer


#: The three features of notebook 01's hand-set example, one meaning each.
MEANING_FEATURES: tuple[str, ...] = ("is a thing", "is an action", "is a time")


def meaning_example() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A tiny hand-set example, before any random stand-ins: three features with a meaning each.

    The token vectors say what each token is (``MEANING_FEATURES``): `key` is a thing, `cache`
    half one (it says which key), `changed` an action, `after` a time, `deploy` half an action,
    half a time. w_q lets an action ask for a thing (strongly) and a time (less); w_k lets a
    thing offer itself as a thing and a time as a time. So `changed`'s query finds `key` first.
    Set by hand for illustration; a trained model learns such matrices, with many more features.

    Shapes:
        returns: x (T, 3) = (6, 3), w_q (3, 2), w_k (3, 2); query and key slots: (wants/is a thing, a time)
    """
    x = np.array([
        [0.0, 0.0, 0.0],  # the
        [0.5, 0.0, 0.0],  # cache
        [1.0, 0.0, 0.0],  # key
        [0.0, 1.0, 0.0],  # changed
        [0.0, 0.0, 1.0],  # after
        [0.0, 0.5, 0.5],  # deploy
    ])  # (T, 3)
    w_q = np.array([[0.0, 0.0], [2.0, 1.0], [0.0, 0.0]])  # (3, 2): an action asks for a thing (2) and a time (1)
    w_k = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]])  # (3, 2): a thing offers "thing", a time offers "time"
    return x, w_q, w_k


#: The hand-set sketch of notebook 03: three heads, each told by hand where to look.
HAND_SET_HEADS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("head 1: looks at 'cache' and 'key'", ("cache", "key")),
    ("head 2: looks at 'deploy'", ("deploy",)),
    ("head 3: looks at the token itself", ()),
)


def hand_set_weights() -> np.ndarray:
    """Attention weights for the hand-set sketch, set by hand for illustration, not learned.

    Head 1 spreads every query's weight over 'cache' and 'key'; head 2 puts it all on
    'deploy'; head 3 puts it on the query's own token.

    Shapes:
        returns: (3, T, T), rows sum to 1
    """
    T = len(TOKENS)
    weights = np.zeros((len(HAND_SET_HEADS), T, T))
    for h, (_, targets) in enumerate(HAND_SET_HEADS):
        if targets:
            for word in targets:
                weights[h, :, TOKENS.index(word)] = 1.0 / len(targets)
        else:
            weights[h] = np.eye(T)
    return weights


def single_head_projections(d_model: int = 8, d_head: int = 4, seed: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stand-in projection matrices for one head, as notebooks 01 and 02 use them: w_q, w_k, w_v.

    Random, not learned: entries drawn from a normal distribution and divided by
    sqrt(d_model), so a projected vector has entries of about unit size.

    Shapes:
        returns: w_q, w_k, w_v, each (D, Dh) = (d_model, d_head)
    """
    d_model = _validate.positive_int(d_model, "d_model")
    d_head = _validate.positive_int(d_head, "d_head")
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((d_model, d_head)) / np.sqrt(d_model) for _ in range(3))  # (D, Dh) each


def single_head_example(d_model: int = 8, d_head: int = 4):
    """Notebooks 01 and 02's running example: the sentence's token vectors, the stand-in
    projection matrices, and the queries, keys and values they give.

    Shapes:
        returns: x (T, D); (w_q, w_k, w_v), each (D, Dh); (q, k, v), each (T, Dh)
    """
    x = token_vectors(d_model=d_model, seed=0)  # (T, D)
    projections = single_head_projections(d_model, d_head, seed=1)  # (D, Dh) each
    return x, projections, tuple(x @ w for w in projections)  # (T, Dh) each


def head_weights(d_model: int, n_heads: int, *, seed: int = 0) -> np.ndarray:
    """Every head's attention weights for the running sentence, from ``demo_layer`` with a fixed seed.

    The seed fixes w_q, w_k and w_v, so every head count cuts the very same matrices.

    Shapes:
        returns: (H, T, T), rows sum to 1
    """
    layer = demo_layer(d_model, n_heads, seed=seed)
    return layer(token_vectors(d_model, seed=seed)).weights  # (H, T, T)


#: The query of notebook 00's smoke check.
WELCOME_QUERY = "changed"


def welcome_scores() -> np.ndarray:
    """The scores of the query 'changed' against every token, from a small seeded one-head layer.

    Shapes:
        returns: (T,)
    """
    layer = demo_layer(d_model=8, n_heads=1, seed=0, sharpness=1.0)
    result = layer(token_vectors(d_model=8, seed=0))
    return result.scores[0, TOKENS.index(WELCOME_QUERY)]  # (Tk,)


def welcome_weights(sharpness: float) -> np.ndarray:
    """softmax(sharpness x scores) of the query 'changed': more sharpness, more weight on the top token.

    Shapes:
        returns: (T,), sums to 1
    """
    return softmax(sharpness * welcome_scores())

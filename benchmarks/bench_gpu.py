"""The attention comparison on a CUDA device, in bfloat16, at a long context.

Runs only when ``torch.cuda.is_available()``; otherwise the report says so. The
contenders and their ratios are those of ``bench_attention``; the large matrix
multiply is 8192 x 8192 @ 8192 x 8192 in bfloat16. A contender that runs out of
device memory is reported as such and left out.

``MHA_BENCH_GPU_DRY_RUN=1`` runs this code path on the CPU at a small shape, to
check it on a machine without a GPU (the figures then mean nothing).
"""

from __future__ import annotations

import os

from .bench_attention import compare
from .shapes import GPU_SHAPE, describe

GPU_MATMUL_N = 8192


def run(quick: bool, log=print, **_) -> dict:
    import torch

    dry_run = os.environ.get("MHA_BENCH_GPU_DRY_RUN") == "1"
    if not torch.cuda.is_available() and not dry_run:
        return {"available": False, "note": "no CUDA device found"}
    if dry_run:
        device, shape, matmul_n, name = "cpu", {**GPU_SHAPE, "tokens": 128}, 256, "dry run on the CPU"
    else:
        device, shape, matmul_n, name = "cuda", GPU_SHAPE, GPU_MATMUL_N, torch.cuda.get_device_name(0)
    log(f"gpu: {name}: {describe(shape)}, bfloat16")
    result = compare(
        shape, device=device, dtype=torch.bfloat16, matmul_n=matmul_n,
        rounds=3 if quick else 30, warmup=1 if quick else 3, sample_s=0.0 if dry_run else 0.02,
        budget_s=None if quick else 60, min_rounds=3, log=log,
    )
    return {
        "available": True,
        "dry_run": dry_run,
        "device_name": name,
        "torch_cuda": torch.version.cuda,
        "dtype": "bfloat16",
        "result": result,
    }


# -- the report -------------------------------------------------------------------------------------

TITLE = "Attention on a CUDA device (bf16, long context)"
NUMBER = None


def markdown(result: dict, report: dict) -> list[str]:
    from .bench_attention import attention_table

    if not result.get("available"):
        return [result.get("note", "no CUDA device found")]
    lines = [f"Device: {result['device_name']}, {result['dtype']}" + (" (**dry run on the CPU: figures mean nothing**)" if result.get("dry_run") else ""), ""]
    lines += attention_table(result["result"])
    if result["result"].get("flops"):
        mm = result["result"]["flops"]["matmul"]
        lines += ["", f"matmul {mm['n']}^3 in bf16: {mm['flop_per_s'] / 1e12:.1f} TFLOP/s; "
                  + ", ".join(f"{k}: {a['fraction_of_matmul']:.0%}" for k, a in result["result"]["flops"]["achieved"].items())]
    return lines

"""Attention forward in torch: ``TorchMultiHeadAttention`` against what a learner would otherwise use.

Contenders, all on the same weights (one ``torch.nn.MultiheadAttention`` is the source;
``TorchMultiHeadAttention.from_torch`` copies it), all under ``torch.inference_mode()``:

    TorchMHA                    mha_core.TorchMultiHeadAttention(x, is_causal=True)
    TorchMHA (weights)          the same with need_weights=True (per-head weights)
    nn.MHA                      torch.nn.MultiheadAttention(x, x, x, need_weights=False,
                                attn_mask=<bool causal mask>, is_causal=True)
    nn.MHA (weights)            the same with need_weights=True, average_attn_weights=False
    bare SDPA                   fused qkv F.linear, reshape, F.scaled_dot_product_attention(
                                is_causal=True), reshape, out F.linear: the floor a module can reach

At the large shape a torch fp32 matrix multiply (2048 x 2048 @ 2048 x 2048) runs in the
same rounds: the machine's practical FLOP/s limit. Goals: TorchMHA at least as fast
as nn.MHA without weights, and within 10% of bare SDPA.
"""

from __future__ import annotations

from . import _format as fmt
from ._timing import calibrate_inner, interleaved, paired_ratio, summary
from .shapes import CPU_SHAPES, SMALL_SHAPES, describe

OURS, OURS_W, NN, NN_W, SDPA, MATMUL = (
    "TorchMHA", "TorchMHA (weights)", "nn.MHA", "nn.MHA (weights)", "bare SDPA", "matmul",
)
REFERENCES = (NN, SDPA)
GOAL_VS_NN = 1.00  # TorchMHA / nn.MHA without weights, at most
GOAL_VS_SDPA = 1.10  # TorchMHA / bare SDPA, at most
MATMUL_N = 2048


def attention_flop_count(shape: dict) -> dict:
    """FLOPs of one forward at ``shape``, from ``mha_core.costs.attention_flops``, times the batch.

    Convention: a multiply-add is 2 FLOPs. With a causal mask only the unblocked
    T(T+1)/2 of the T^2 score entries count, for the scores, the softmax and the mix
    (the projections are dense). Kernels that skip blocked tiles do about this much work.
    """
    from mha_core.costs import attention_flops

    T = shape["tokens"]
    parts = attention_flops(shape["d_model"], shape["n_heads"], T)
    fraction = (T + 1) / (2 * T) if shape["causal"] else 1.0
    counted = {
        "projections": parts["projections"],
        "scores": parts["scores"] * fraction,
        "softmax": parts["softmax"] * fraction,
        "mix": parts["mix"] * fraction,
    }
    per_sequence = sum(counted.values())
    return {
        "convention": "multiply-add = 2; causal counts the T(T+1)/2 unblocked score entries",
        "per_sequence": per_sequence,
        "total": per_sequence * shape["batch"],
        "dense_total": parts["total"] * shape["batch"],
    }


def build_contenders(shape: dict, *, device: str = "cpu", dtype=None, seed: int = 0):
    """The contenders as zero-argument callables, the nn.MultiheadAttention they share, and the input.

    Returns (contenders, module, x).
    """
    import torch
    import torch.nn.functional as F

    from mha_core import TorchMultiHeadAttention

    dtype = dtype or torch.float32
    B, T, D, H = shape["batch"], shape["tokens"], shape["d_model"], shape["n_heads"]
    Dh = D // H
    causal = bool(shape["causal"])
    torch.manual_seed(seed)
    module = torch.nn.MultiheadAttention(D, H, batch_first=True, dropout=0.0).to(device=device, dtype=dtype).eval()
    ours = TorchMultiHeadAttention.from_torch(module).eval()
    generator = torch.Generator(device="cpu").manual_seed(seed + 1)
    x = torch.randn(B, T, D, generator=generator, dtype=torch.float32).to(device=device, dtype=dtype)  # (B, T, D)
    mask = torch.ones(T, T, dtype=torch.bool, device=device).triu(1) if causal else None  # (T, T), True = blocked
    w_in, b_in = module.in_proj_weight, module.in_proj_bias  # (3D, D), (3D,)
    w_out, b_out = module.out_proj.weight, module.out_proj.bias  # (D, D), (D,)

    def bare_sdpa():
        qkv = F.linear(x, w_in, b_in)  # (B, T, 3D)
        q, k, v = qkv.view(B, T, 3, H, Dh).permute(2, 0, 3, 1, 4)  # 3 x (B, H, T, Dh)
        head_outputs = F.scaled_dot_product_attention(q, k, v, is_causal=causal)  # (B, H, T, Dh)
        concat = head_outputs.transpose(1, 2).reshape(B, T, D)  # (B, T, D)
        return F.linear(concat, w_out, b_out)  # (B, T, D)

    contenders = {
        OURS: lambda: ours(x, is_causal=causal).output,
        NN: lambda: module(x, x, x, need_weights=False, attn_mask=mask, is_causal=causal)[0],
        SDPA: bare_sdpa,
        OURS_W: lambda: ours(x, is_causal=causal, need_weights=True).output,
        NN_W: lambda: module(x, x, x, need_weights=True, average_attn_weights=False, attn_mask=mask, is_causal=causal)[0],
    }
    return contenders, module, x


def agreement(contenders: dict, reference: str = NN) -> dict:
    """Largest absolute difference of each contender's output from the reference's."""
    import torch

    with torch.inference_mode():
        expected = contenders[reference]().float()
        return {name: float((fn().float() - expected).abs().max()) for name, fn in contenders.items() if name != reference}


def compare(shape: dict, *, rounds: int, warmup: int, device: str = "cpu", dtype=None,
            matmul_n: int | None = None, sample_s: float = 0.002, budget_s: float | None = None,
            min_rounds: int = 3, log=print) -> dict:
    """Time every contender at ``shape`` in interleaved rounds; medians and paired ratios."""
    import torch

    contenders, module, x = build_contenders(shape, device=device, dtype=dtype)
    sync = torch.cuda.synchronize if device.startswith("cuda") else None
    dropped = {}
    if device.startswith("cuda"):
        # A contender that does not fit in the device's memory is reported, not fatal.
        for name in list(contenders):
            try:
                with torch.inference_mode():
                    contenders[name]()
                torch.cuda.synchronize()
            except torch.cuda.OutOfMemoryError as exc:  # noqa: PERF203
                dropped[name] = f"out of memory: {str(exc).splitlines()[0]}"
                del contenders[name]
                torch.cuda.empty_cache()
    diffs = agreement(contenders)
    if matmul_n:
        a = torch.randn(matmul_n, matmul_n, device=device).to(dtype or torch.float32)
        b = torch.randn(matmul_n, matmul_n, device=device).to(dtype or torch.float32)
        contenders[MATMUL] = lambda: a @ b
    with torch.inference_mode():
        inner = {name: 1 for name in contenders}
        if sample_s:
            inner = {name: calibrate_inner(fn, sample_s, sync=sync) for name, fn in contenders.items()}
            # Compared contenders take the same number of calls per sample: a different
            # count changes how much per-call overhead a sample hides, which skews ratios.
            shared = max(n for name, n in inner.items() if name != MATMUL)
            inner = {name: (n if name == MATMUL else shared) for name, n in inner.items()}
        times = interleaved(contenders, rounds=rounds, warmup=warmup, inner=inner, sync=sync,
                            budget_s=budget_s, min_rounds=min_rounds,
                            progress=lambda msg: log(f"  {describe(shape)}: {msg}"))
    result = {
        "shape": shape,
        "describe": describe(shape),
        "rounds": len(next(iter(times.values()))),
        "calls_per_sample": inner,
        "seconds": {name: summary(ts) for name, ts in times.items()},
        "ratios": {
            name: {ref: paired_ratio(times, name, ref) for ref in REFERENCES if ref in times}
            for name in times if name != MATMUL
        },
        "max_abs_diff_vs_nn_mha": diffs,
        "dropped": dropped,
    }
    if OURS in times and NN in times and SDPA in times:
        vs_nn = result["ratios"][OURS][NN]["median"]
        vs_sdpa = result["ratios"][OURS][SDPA]["median"]
        result["goals"] = {
            "vs_nn_mha": {"ratio": vs_nn, "limit": GOAL_VS_NN, "met": vs_nn <= GOAL_VS_NN},
            "vs_bare_sdpa": {"ratio": vs_sdpa, "limit": GOAL_VS_SDPA, "met": vs_sdpa <= GOAL_VS_SDPA},
        }
    if matmul_n:
        flops = attention_flop_count(shape)
        matmul_flops = 2 * matmul_n**3
        matmul_rate = matmul_flops / result["seconds"][MATMUL]["median"]
        result["flops"] = {
            **flops,
            "matmul": {"n": matmul_n, "flops": matmul_flops, "flop_per_s": matmul_rate},
            "achieved": {
                name: {
                    "flop_per_s": flops["total"] / result["seconds"][name]["median"],
                    "fraction_of_matmul": flops["total"] / result["seconds"][name]["median"] / matmul_rate,
                }
                for name in times if name != MATMUL
            },
        }
    return result


def _numpy_agreement(shape: dict) -> float:
    """Largest |TorchMHA fp32 - NumPy reference float64| at ``shape``: both load the same module."""
    import numpy as np
    import torch

    from mha_core.torch_convert import numpy_from_torch

    contenders, module, x = build_contenders(shape)
    reference = numpy_from_torch(module)
    with torch.inference_mode():
        ours = contenders[OURS]().double().numpy()
    expected = reference(x.double().numpy(), is_causal=bool(shape["causal"])).output
    return float(np.abs(ours - expected).max())


def run(quick: bool, log=print, **_) -> dict:
    import torch

    out = {
        "torch_threads": torch.get_num_threads(),
        "device": "cpu",
        "dtype": "float32",
        "shapes": {},
    }
    plan = {
        # About 1 s per call on two quiet cores, several times that on a busy machine: the
        # full run stops adding rounds after ~150 s (at least 5 rounds, at most 20).
        "large": dict(rounds=2, warmup=0, matmul_n=MATMUL_N, sample_s=0) if quick
        else dict(rounds=20, warmup=1, matmul_n=MATMUL_N, sample_s=0, budget_s=150, min_rounds=5),
        **{name: dict(rounds=20 if quick else 300, warmup=3, sample_s=0.002, budget_s=None if quick else 15)
           for name in SMALL_SHAPES},
    }
    for name, settings in plan.items():
        shape = CPU_SHAPES[name]
        log(f"attention {name}: {describe(shape)}")
        out["shapes"][name] = compare(shape, log=log, **settings)
        if name in SMALL_SHAPES:
            out["shapes"][name]["max_abs_diff_torch_fp32_vs_numpy_fp64"] = _numpy_agreement(shape)
    return out


# -- the report -------------------------------------------------------------------------------------

TITLE = "Attention forward on the CPU (fp32)"
NUMBER = 1


def goals(result: dict, missing: str) -> list[dict]:
    """Goal rows for ``report.derive``: two per shape (against nn.MHA and against bare SDPA)."""
    rows = []
    for shape_name in ("large", *SMALL_SHAPES):
        entry = (result or {}).get("shapes", {}).get(shape_name)
        if not entry or "goals" not in entry:
            rows.append(fmt.goal(f"TorchMHA vs nn.MHA without weights ({shape_name})", "<= 1.00x", missing, None))
            rows.append(fmt.goal(f"TorchMHA vs bare SDPA ({shape_name})", "<= 1.10x", missing, None))
            continue
        g = entry["goals"]

        def spread(reference, entry=entry):
            r = entry["ratios"]["TorchMHA"][reference]
            return (f"{fmt.x(r['median'])} (rounds p25-p75 {r['p25']:.2f}-{r['p75']:.2f}; "
                    f"ratio of medians {r['of_medians']:.2f}; {entry['rounds']} rounds)")

        rows.append(fmt.goal(f"TorchMHA vs nn.MHA without weights, {shape_name}: {entry['describe']}", "<= 1.00x",
                         spread("nn.MHA"), g["vs_nn_mha"]["met"]))
        rows.append(fmt.goal(f"TorchMHA vs bare SDPA + linear layers, {shape_name}", "<= 1.10x",
                         spread("bare SDPA"), g["vs_bare_sdpa"]["met"]))
    return rows


def attention_table(entry: dict) -> list[str]:
    """One shape's contenders as a Markdown table (the GPU section uses it too)."""
    seconds, ratios = entry["seconds"], entry["ratios"]
    diffs = entry.get("max_abs_diff_vs_nn_mha", {})
    calls = ", ".join(f"{k} {v}" for k, v in entry["calls_per_sample"].items())
    if all(v == 1 for v in entry["calls_per_sample"].values()):
        calls = "one call per sample"
    else:
        calls = f"calls averaged per sample: {calls}"
    lines = [
        f"{entry['describe']}; {entry['rounds']} interleaved rounds; {calls}.",
        "",
        "| contender | median | p25 - p75 | vs nn.MHA | vs bare SDPA | max abs diff vs nn.MHA |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, s in seconds.items():
        r = ratios.get(name, {})
        vs_nn = r.get("nn.MHA", {}).get("median") if name != "nn.MHA" else 1.0
        vs_sdpa = r.get("bare SDPA", {}).get("median") if name != "bare SDPA" else 1.0
        diff = diffs.get(name)
        diff_text = "-" if name in ("nn.MHA", "matmul") or diff is None else f"{diff:.1e}"
        if name == "matmul":
            vs_nn = vs_sdpa = None
        lines.append(f"| {name} | {fmt.ms(s['median'])} | {fmt.ms(s['p25'])} - {fmt.ms(s['p75'])} | {fmt.x(vs_nn)} | {fmt.x(vs_sdpa)} | {diff_text} |")
    for name, why in entry.get("dropped", {}).items():
        lines.append(f"| {name} | {why} | | | | |")
    return lines


def markdown(result: dict, report: dict) -> list[str]:
    """The section's Markdown lines, then section 2 (achieved FLOP/s at the large shape)."""
    lines = [
        f"torch threads: {result['torch_threads']}. All contenders share one `torch.nn.MultiheadAttention`'s weights"
        " (`TorchMultiHeadAttention.from_torch`) and run under `torch.inference_mode()`. nn.MHA gets the bool causal"
        " mask with the `is_causal=True` hint; \"(weights)\" means `need_weights=True` with per-head weights"
        " (`average_attn_weights=False` for nn.MHA). Bare SDPA is one fused `F.linear`, a reshape,"
        " `F.scaled_dot_product_attention(is_causal=True)`, a reshape and the output `F.linear`.",
    ]
    for name, entry in result["shapes"].items():
        lines += ["", f"### {name}", ""]
        lines += attention_table(entry)
        if "max_abs_diff_torch_fp32_vs_numpy_fp64" in entry:
            lines += ["", f"TorchMHA (fp32) against the NumPy reference (float64) on the same weights: "
                          f"max abs diff {entry['max_abs_diff_torch_fp32_vs_numpy_fp64']:.1e}."]
    large = result["shapes"].get("large", {})
    flops = large.get("flops")
    lines += ["", "## 2. Achieved FLOP/s at the large shape", ""]
    if flops:
        mm = flops["matmul"]
        lines += [
            f"FLOPs per forward: {flops['total'] / 1e9:.1f} GFLOP ({flops['convention']}; counting every score entry"
            f" would give {flops['dense_total'] / 1e9:.1f} GFLOP), from `mha_core.costs.attention_flops` times the batch."
            f" Practical limit: a torch fp32 matmul {mm['n']} x {mm['n']} @ {mm['n']} x {mm['n']}, timed in the same rounds:"
            f" **{mm['flop_per_s'] / 1e9:.1f} GFLOP/s**.",
            "",
            "| contender | achieved | fraction of matmul |",
            "| --- | ---: | ---: |",
        ]
        for name, a in flops["achieved"].items():
            lines.append(f"| {name} | {a['flop_per_s'] / 1e9:.1f} GFLOP/s | {a['fraction_of_matmul']:.0%} |")
    else:
        lines.append("Not measured (needs the large shape of section 1).")
    return lines

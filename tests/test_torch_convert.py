"""mha_core.torch_convert: the one place that converts between torch layers and the NumPy reference.

Conversions through ``TorchMultiHeadAttention.from_torch``/``from_numpy``/``to_numpy`` are
also tested in test_torch_attention.py, and parity over a sweep of shapes in test_parity.py.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from mha_core import MultiHeadAttention, TorchMultiHeadAttention  # noqa: E402
from mha_core import torch_convert  # noqa: E402

PACKAGE = Path(torch_convert.__file__).parent


def package_imports(module: str, package: Path = PACKAGE) -> set[str]:
    """The mha_core modules that ``<package>/<module>.py`` imports, anywhere in it (lazy imports too)."""
    tree = ast.parse((package / f"{module}.py").read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                found.add(node.module.split(".")[0])
            else:
                found.update(alias.name for alias in node.names)  # from . import x
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("mha_core"):
            parts = node.module.split(".")
            found.update([parts[1]] if len(parts) > 1 else [alias.name for alias in node.names])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("mha_core."))
    return found


CORE = ("attention", "torch_convert", "torch_attention", "kv_cache")


def import_circles(package: Path = PACKAGE) -> tuple[list[str], dict]:
    """The core modules that some chain of imports (lazy ones included) leads back to, and the graph."""
    modules = {path.stem for path in package.glob("*.py")}
    graph = {module: package_imports(module, package) & modules for module in modules}

    def reaches(start, goal, seen):
        return any(n == goal or (n not in seen and reaches(n, goal, seen | {n})) for n in graph[start])

    return [m for m in CORE if m in graph and reaches(m, m, {m})], graph


def test_imports_run_one_way_numpy_reference_then_conversion_then_torch_module():
    circles, graph = import_circles()
    assert not circles, f"import circle through {circles}: " + str({m: graph[m] for m in CORE})
    assert "attention" in graph["torch_convert"] and "torch_convert" in graph["torch_attention"]
    assert graph["attention"] <= {"_validate"}, graph["attention"]
    assert "torch_attention" not in graph["torch_convert"], "torch_convert must not import the torch module back"


def test_the_circle_check_finds_a_circle_of_lazy_imports(tmp_path):
    # The layout before this module existed: attention and torch_attention imported
    # _torch_weights inside functions, and _torch_weights imported torch_attention back.
    (tmp_path / "attention.py").write_text("def from_torch(m):\n    from ._torch_weights import read\n")
    (tmp_path / "_torch_weights.py").write_text("def read(m):\n    from .torch_attention import T\n")
    (tmp_path / "torch_attention.py").write_text("def to_numpy(self):\n    from .attention import from_torch\n")
    circles, _ = import_circles(tmp_path)
    assert circles == ["attention", "torch_attention"]


def randomised(module, seed=0):
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=generator, dtype=torch.float64))
    return module


@pytest.mark.parametrize("bias", [True, False])
def test_numpy_from_torch_transposes_each_stacked_matrix_exactly(bias):
    module = randomised(torch.nn.MultiheadAttention(12, 3, bias=bias, batch_first=True), seed=1)
    layer = torch_convert.numpy_from_torch(module)
    assert (layer.d_model, layer.n_heads, layer.n_kv_heads, layer.bias) == (12, 3, 3, bias)
    in_proj = module.in_proj_weight.detach().double().numpy()  # (3D, D), rows: q, k, v
    for i, name in enumerate(("w_q", "w_k", "w_v")):
        np.testing.assert_array_equal(getattr(layer, name), in_proj[12 * i : 12 * (i + 1)].T, err_msg=name)
    np.testing.assert_array_equal(layer.w_o, module.out_proj.weight.detach().double().numpy().T)
    if bias:
        np.testing.assert_array_equal(layer.b_k, module.in_proj_bias.detach().double().numpy()[12:24])
    else:
        assert layer.b_q is None and layer.b_o is None


def test_fused_round_trip_keeps_every_parameter_of_a_grouped_query_layer():
    reference = MultiHeadAttention(12, 6, n_kv_heads=2, seed=5)
    reference.b_v = np.linspace(-1, 1, reference.b_v.size)
    fused = torch_convert.fused_from_numpy(reference)
    assert fused["w_qkv"].shape == (12 + 2 * 2 * 2, 12) and fused["b_qkv"].shape == (20,)
    back = torch_convert.numpy_from_fused(TorchMultiHeadAttention.from_numpy(reference, dtype=torch.float64))
    for name in torch_convert.PARAMETER_NAMES:
        np.testing.assert_array_equal(getattr(back, name), getattr(reference, name), err_msg=name)


def test_fused_from_numpy_checks_an_array_reassigned_since_the_layer_was_built():
    reference = MultiHeadAttention(8, 2, seed=0)
    reference.w_k = np.zeros((8, 3))
    with pytest.raises(ValueError, match=r"w_k has shape \(8, 3\); this layer needs \(8, 8\)"):
        TorchMultiHeadAttention.from_numpy(reference)


def test_each_reader_names_the_type_it_was_given_and_what_to_use_instead():
    with pytest.raises(TypeError, match=r"got TorchMultiHeadAttention \(an mha_core.TorchMultiHeadAttention converts itself: layer.to_numpy\(\)\)"):
        torch_convert.numpy_from_torch(TorchMultiHeadAttention(8, 2, seed=0))
    with pytest.raises(TypeError, match="layer must be an mha_core.MultiHeadAttention; got MultiheadAttention"):
        torch_convert.fused_from_numpy(torch.nn.MultiheadAttention(8, 2))

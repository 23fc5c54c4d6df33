"""How the modules of ``mha_core`` and ``mha_classroom`` import each other: no ring, even through function bodies,
no side effect, and the teaching library never reaching the classroom.

Every ``import`` and ``from ... import`` in every module is read with ``ast`` (at the top, inside a
function, under ``if TYPE_CHECKING``: all alike), and so is what Python runs on the way: importing
``a.b.c`` runs ``a.b``'s ``__init__`` first. A ring of modules that reach each other is a cycle, even
when every edge but one sits in a function body: it holds only as long as nobody moves that import.

Importing a module must change nothing in the process that imports it: each module is imported in
a fresh Python with an IPython shell running, and the shell's display formatters (what IPython shows
for a ``go.Figure``, for example) and plotly's renderer and template must be as they were.

``mha_core`` (what a learner reads to learn) never imports ``mha_classroom`` (the course platform beside it):
no import statement of any of its modules names it, function bodies included, and importing every module of
``mha_core`` leaves no module of ``mha_classroom`` in ``sys.modules``.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mha_core"
CLASSROOM = ROOT / "mha_classroom"


def module_files(package: Path = PACKAGE) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` under ``package`` (a package is its ``__init__``)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imported_modules(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of ``modules`` that ``module`` (at ``path``) imports anywhere in its text."""
    is_package = path.name == "__init__.py"
    here = module.split(".") if is_package else module.split(".")[:-1]
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = here[:len(here) - node.level + 1] if node.level else []
            stem = ".".join(base + ([node.module] if node.module else []))
            # `from pkg import name`: the submodule pkg.name when there is one, else pkg itself
            names += [f"{stem}.{alias.name}" if f"{stem}.{alias.name}" in modules else stem for alias in node.names]
    found = set()
    for name in names:
        while name and name not in modules:  # `import a.b.c` of an attribute: the module that holds it
            name = name.rpartition(".")[0]
        if name and name != module:
            found.add(name)
    return found


def _packages_above(module: str) -> set[str]:
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """module -> every module importing it runs: what it imports, and the packages above those.

    The packages above ``module`` itself are left out: Python has them in ``sys.modules`` before
    ``module`` runs, so reaching one from ``module`` runs nothing.
    """
    graph = {}
    for module, path in modules.items():
        direct = imported_modules(module, path, modules)
        ran = set(direct)
        for target in direct:
            ran |= _packages_above(target) - _packages_above(module) - {module}
        graph[module] = ran
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted, and each module importing itself."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph) + 100))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return found


def ring_text(group: list[str], graph: dict[str, set[str]]) -> str:
    """Each module of ``group`` with the modules of the group it imports, for the failure message."""
    return "\n".join(f"  {m} -> {', '.join(sorted(graph[m] & set(group)))}" for m in group)


def test_the_reader_sees_imports_in_function_bodies_and_the_packages_they_run(tmp_path):
    # A made-up package with a ring closed only by a function body and a package __init__: it must be found.
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .sub import b\n")
    (pkg / "sub" / "__init__.py").write_text("def late():\n    from .. import c\n")
    (pkg / "sub" / "b.py").write_text("import os\n")
    (pkg / "c.py").write_text("def f():\n    from pkg.a import something\n")
    modules = module_files(pkg)
    graph = import_graph(modules)
    assert graph["pkg.a"] == {"pkg.sub.b", "pkg.sub"}
    assert graph["pkg.sub"] == {"pkg.c"}
    assert graph["pkg.c"] == {"pkg.a"}
    assert cycles(graph) == [["pkg.a", "pkg.c", "pkg.sub"]]
    (pkg / "c.py").write_text("def f():\n    import os\n")
    assert cycles(import_graph(module_files(pkg))) == []


def all_modules() -> dict[str, Path]:
    """Every module of both packages: a ring may run through both."""
    return {**module_files(PACKAGE), **module_files(CLASSROOM)}


def test_no_module_of_either_package_reaches_itself_through_imports_even_in_function_bodies():
    modules = all_modules()
    assert len(module_files(PACKAGE)) > 40 and len(module_files(CLASSROOM)) > 30, sorted(modules)
    graph = import_graph(modules)
    assert "mha_classroom.widgets._words" in graph["mha_classroom.widgets._base"]  # the reader sees the imports at all
    assert "mha_core.figures._style" in graph["mha_classroom.widgets._base"]  # and the ones across the packages
    rings = cycles(graph)
    assert not rings, "rings of imports (each module -> the modules of its ring it imports):\n" + \
        "\n\n".join(ring_text(group, graph) for group in rings)


def imports_of_the_classroom(package: Path) -> dict[str, list[str]]:
    """Module of ``package`` -> each ``mha_classroom`` import in its text (anywhere: function bodies too), as written."""
    found = {}
    for module, path in module_files(package).items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                named = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                named = [node.module or ""]
            elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
                  and isinstance(node.args[0].value, str)
                  and getattr(node.func, "attr", getattr(node.func, "id", "")) in ("import_module", "__import__")):
                named = [node.args[0].value]  # importlib.import_module("mha_classroom.quiz"), __import__(...)
            else:
                continue  # a relative import stays inside its own package
            named = [n for n in named if n == "mha_classroom" or n.startswith("mha_classroom.")]
            if named:
                found.setdefault(module, []).extend(f"line {node.lineno}: {n}" for n in named)
    return found


def test_the_reader_finds_a_classroom_import_in_a_function_body(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("import numpy\n")
    (pkg / "b.py").write_text("def late():\n    if True:\n        from mha_classroom.widgets import _words\n")
    (pkg / "c.py").write_text("def late():\n    import mha_classroom.quiz as quiz\n")
    (pkg / "d.py").write_text("import importlib\n\ndef late():\n    return importlib.import_module('mha_classroom')\n")
    (pkg / "e.py").write_text("import importlib\n\nimportlib.import_module('.attention', 'mha_core')\n")
    assert imports_of_the_classroom(pkg) == {"pkg.b": ["line 3: mha_classroom.widgets"],
                                             "pkg.c": ["line 2: mha_classroom.quiz"],
                                             "pkg.d": ["line 4: mha_classroom"]}


def test_no_module_of_mha_core_imports_mha_classroom_even_in_function_bodies():
    found = imports_of_the_classroom(PACKAGE)
    assert found == {}, "mha_core is the teaching library; these modules import the classroom:\n" + \
        "\n".join(f"  {module}: {', '.join(lines)}" for module, lines in sorted(found.items()))


#: Imports every module named on the command line, then prints the modules of mha_classroom it then holds.
_CLASSROOM_PROBE = r"""
import importlib, json, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
print(json.dumps(sorted(m for m in sys.modules if m == "mha_classroom" or m.startswith("mha_classroom."))))
"""


def classroom_modules_after_importing(names: list[str]) -> list[str]:
    done = subprocess.run([sys.executable, "-c", _CLASSROOM_PROBE, *names], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_importing_every_module_of_mha_core_loads_nothing_of_mha_classroom():
    assert classroom_modules_after_importing(sorted(module_files(PACKAGE))) == []
    # the probe sees the classroom when it is imported
    assert "mha_classroom.widgets._words" in classroom_modules_after_importing(["mha_classroom.widgets._base"])


#: Run in one fresh Python: an IPython shell, then each module named on the command line imported in turn;
#: after each, what changed since the one before, as one JSON line (a module imported by an earlier one counts
#: for that one: the first import that changes anything is named).
_PROBE = r"""
import importlib, json, sys
from IPython.core.interactiveshell import InteractiveShell

shell = InteractiveShell.instance()
formatter = shell.display_formatter


def state():
    import plotly.io as pio

    seen = {}
    named = dict(formatter.formatters)
    named["ipython_display"] = formatter.ipython_display_formatter
    named["mimebundle"] = formatter.mimebundle_formatter
    for name, f in named.items():
        seen[name] = sorted([repr(t) for t in f.type_printers] + ["%s.%s" % k for k in f.deferred_printers]
                            + [repr(t) for t in getattr(f, "singleton_printers", {})])
    seen["active_types"] = list(formatter.active_types)
    seen["plotly_renderer"] = str(pio.renderers.default)
    seen["plotly_template"] = str(pio.templates.default)
    return seen


changes = {}
before = state()
for name in sys.argv[1:]:
    if name == "--register-one":  # the probe's own check: a change it must report
        formatter.ipython_display_formatter.for_type_by_name("plotly.graph_objs._figure", "Figure", print)
    else:
        importlib.import_module(name)
    after = state()
    changed = {k: [before[k], after[k]] for k in before if before[k] != after[k]}
    if changed:
        changes[name] = changed
    before = after
print(json.dumps(changes))
"""

#: A module a learner never imports in a kernel: ``python -m mha_classroom.quiz`` runs it, and it runs the quiz.
NOT_IMPORTED_IN_A_KERNEL = {"mha_classroom.quiz.__main__"}


def import_changes(names: list[str]) -> dict:
    done = subprocess.run([sys.executable, "-c", _PROBE, *names], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_importing_any_module_changes_nothing_in_ipython_or_plotly():
    modules = sorted(set(all_modules()) - NOT_IMPORTED_IN_A_KERNEL)
    changes = import_changes(modules)
    assert changes == {}, "importing these modules changed IPython's formatters or plotly's defaults " \
        "(before, after):\n" + json.dumps(changes, indent=1)[:4000]


def test_the_probe_reports_a_registered_formatter_and_who_registered_it():
    # The side effect mha_core.figures used to have on import: the probe must report it, under its name.
    changes = import_changes(["json", "--register-one", "base64"])
    assert list(changes) == ["--register-one"], changes
    assert list(changes["--register-one"]) == ["ipython_display"]
    assert changes["--register-one"]["ipython_display"][1] == ["plotly.graph_objs._figure.Figure"]

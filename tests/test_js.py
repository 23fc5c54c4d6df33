"""The course's JavaScript: its unit tests under node's own test runner, its lint, and its place in the package.

The ``.js`` files are ``mha_classroom/widgets/js`` (the widgets' modules, joined by ``mha_classroom.widgets._js``; two of
them shared with the handouts) and ``tools/handout_assets`` (the handouts' scripts). Their unit tests are
``tests/js/*.test.js`` and ``*.test.mjs`` (``node --test``, a small DOM from linkedom), their lint eslint's
recommended rules (``tests/js/eslint.config.js``); both come pinned in ``tests/js/package-lock.json``:
``npm ci --prefix tests/js`` (``.ci/run`` does it). Without node or those packages the two tests are skipped,
saying why; under ``CI=true`` they fail instead.

Run only these: ``python -m pytest tests/test_js.py -q`` (or ``node --test tests/js/`` and
``npm run lint --prefix tests/js -- ...`` by hand, as the tests below spell out).
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from mha_classroom.widgets import _js

REPO = Path(__file__).resolve().parents[1]
JS_TESTS = REPO / "tests" / "js"
WIDGET_JS = sorted(_js.JS_DIR.glob("*.js"))
HANDOUT_JS = sorted((REPO / "tools" / "handout_assets").glob("*.js"))
LINTED = ("mha_classroom/widgets/js", "tools/handout_assets", "tests/js")


def _node_or_skip() -> str:
    """node's path; skipped (failed under CI=true) without node or without ``npm ci --prefix tests/js``."""
    node = shutil.which("node")
    problem = None
    if node is None:
        problem = "node is not installed (Debian: apt-get install nodejs npm)"
    elif not (JS_TESTS / "node_modules" / "eslint").is_dir():
        problem = "the JS test packages are not installed (run: npm ci --prefix tests/js)"
    if problem:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the JavaScript tests cannot run on CI: {problem}", pytrace=False)
        pytest.skip(f"JavaScript tests skipped: {problem}")
    return node


def _test_files() -> list[Path]:
    return sorted([*JS_TESTS.glob("*.test.js"), *JS_TESTS.glob("*.test.mjs")])


def test_every_javascript_unit_test_passes_under_node():
    node = _node_or_skip()
    files = _test_files()
    result = subprocess.run([node, "--test", *map(str, files)], cwd=REPO, capture_output=True, text=True, timeout=300)
    summary = dict(re.findall(r"^# (tests|pass|fail|cancelled|skipped) (\d+)$", result.stdout, re.M))
    assert result.returncode == 0 and summary.get("fail") == "0", result.stdout[-6000:] + result.stderr[-2000:]
    written = sum(len(re.findall(r"^test\(", p.read_text(encoding="utf-8"), re.M)) for p in files)
    assert int(summary["tests"]) == written and summary["pass"] == summary["tests"], (summary, written)


def test_every_javascript_file_passes_the_lint():
    node = _node_or_skip()
    eslint = JS_TESTS / "node_modules" / "eslint" / "bin" / "eslint.js"
    result = subprocess.run([node, str(eslint), "--config", str(JS_TESTS / "eslint.config.js"), "--max-warnings", "0",
                             *LINTED], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]


def test_every_javascript_file_has_unit_tests_that_load_it():
    """A test file names each module it loads: a widget module by its file name, a handout script too."""
    tests = "\n".join(p.read_text(encoding="utf-8") for p in _test_files())
    untested = [p.name for p in [*WIDGET_JS, *HANDOUT_JS] if f'"{p.name}"' not in tests and f"/{p.name}\"" not in tests]
    assert not untested, f"no unit test in tests/js loads {untested}"


def test_the_widget_javascript_ships_with_the_package():
    """``pip install .`` takes every file of ``mha_classroom/widgets/js`` (pyproject's package-data)."""
    data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["mha_classroom.widgets"]
    missing = [p.name for p in WIDGET_JS if not any(fnmatch.fnmatch(f"js/{p.name}", pattern) for pattern in data)]
    assert WIDGET_JS and not missing, f"not package data: {missing}"


def test_no_javascript_is_left_in_a_python_string():
    """No Python module of the package or the tools holds a script: each lives in a ``.js`` file."""
    signs = re.compile(r"export default \{|addEventListener\(|querySelector(All)?\(|setAttribute\(")
    found = [str(p.relative_to(REPO)) for folder in (REPO / "mha_core", REPO / "tools") for p in folder.rglob("*.py")
             if signs.search(p.read_text(encoding="utf-8"))]
    assert not found, f"JavaScript in Python strings: {found}"


def test_a_module_is_its_files_joined_after_the_constants_python_owns():
    joined = _js.module("label.js", "keys.js", values={"GROUP": "mha-keys", "PASSED": ("Tab", "Escape")})
    assert joined.startswith('const GROUP = "mha-keys";\nconst PASSED = new Set(["Tab", "Escape"]);\n')
    assert joined.index("var mhaLabel") < joined.index("export default")


def test_an_unknown_file_is_refused_naming_the_files_there():
    with pytest.raises(FileNotFoundError, match=r"name='labels.js' is no file in .*; valid names are .*label\.js"):
        _js.read("labels.js")


def test_no_shared_script_can_close_the_script_element_it_is_inlined_in():
    """``label.js``, ``save.js`` and ``static_words.js`` go inside a ``<script>`` of an HTML output (``_words``):
    only ``</script`` (or a comment opener) would end it early."""
    for name in ("label.js", "save.js", "static_words.js"):
        text = _js.read(name).lower()
        assert "</script" not in text and "<!--" not in text, name


def test_every_package_json_names_only_files_that_exist():
    """The npm manifests' descriptions point a reader to real files (one named a test that did not exist)."""
    import json

    for manifest in (JS_TESTS / "package.json", REPO / "tests" / "browser" / "package.json"):
        text = json.loads(manifest.read_text())["description"]
        named = re.findall(r"(tests/[\w/.-]+\.(?:py|js))", text)
        assert named, manifest
        missing = [n for n in named if not (REPO / n).exists()]
        assert not missing, f"{manifest.relative_to(REPO)} names {missing}, which do not exist"

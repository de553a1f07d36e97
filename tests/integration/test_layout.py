"""The tree's rules that import-linter cannot say (its contracts, in pyproject.toml, hold the
layers and forbid cycles): no module over 600 lines, no function over 60 without a reason written
above it, one name for one module across the tree, each server adapter well under 300 lines, and
no SQL outside the store package."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess

import pytest

from ..conftest import REPO

SIDECAR = REPO / "sidecar" / "autodoc"
MAX_LINES = 60
MAX_MODULE_LINES = 600


def test_no_module_over_600_lines():
    long = {
        str(p.relative_to(SIDECAR)): n
        for p in SIDECAR.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}


def test_every_module_name_is_unique_across_the_tree():
    """`lexical.py` beside `stages/lexical.py` made a reader ask which one they had open: a
    module's file name (a package's folder name) says what it is, once."""
    seen: dict[str, list[str]] = {}
    for p in SIDECAR.rglob("*.py"):
        if p.name in ("__init__.py", "__main__.py"):
            continue
        seen.setdefault(p.stem, []).append(str(p.relative_to(SIDECAR)))
    for folder in SIDECAR.rglob("*/"):
        if (folder / "__init__.py").exists():
            seen.setdefault(folder.name, []).append(str(folder.relative_to(SIDECAR)) + "/")
    assert {name: where for name, where in seen.items() if len(where) > 1} == {}


def test_no_long_function_without_a_reason_above_it():
    unexplained = []
    for path in sorted(SIDECAR.rglob("*.py")):
        lines = path.read_text().splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if node.end_lineno - node.lineno + 1 <= MAX_LINES:
                continue
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            above = lines[first - 2].strip() if first >= 2 else ""
            if not above.startswith("#"):
                unexplained.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name}")
    assert unexplained == []


def test_the_server_adapters_are_thin():
    modules = sorted([*(SIDECAR / "serve" / "lsp").rglob("*.py"),
                      *(SIDECAR / "serve" / "mcp").rglob("*.py")])  # fmt: skip
    assert len(modules) > 5
    for path in modules:
        assert len(path.read_text().splitlines()) < 300, path.relative_to(SIDECAR)


SQL = re.compile(r"""["'](?:SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|WITH|PRAGMA)\b""")
STORE = SIDECAR / "store"  # the package that owns every SQL statement of the sidecar


def test_no_sql_outside_the_store():
    holding = {
        str(p.relative_to(SIDECAR))
        for p in SIDECAR.rglob("*.py")
        if STORE not in p.parents and SQL.search(p.read_text())
    }
    assert holding == set()


def _lint_imports_with(tmp_path, module: str, planted: str) -> str:
    """`lint-imports` over a copy of the sidecar with one import planted at the end of `module`
    (inside a function, as the old cycles were): its report."""
    copy = tmp_path / "sidecar"
    shutil.copytree(
        SIDECAR.parent, copy, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    target = copy / "autodoc" / module
    target.write_text(target.read_text() + f"\n\ndef _planted() -> None:\n    {planted}\n")
    env = {**os.environ, "PYTHONPATH": str(copy)}
    lint = shutil.which("lint-imports") or "lint-imports"
    done = subprocess.run([lint], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode != 0, done.stdout
    return done.stdout


def test_the_contracts_catch_the_old_options_store_cycle(tmp_path):
    """Before the tree followed the data, the workspace options imported the Qdrant store to
    check its spec, which imported the store, which imported the options."""
    report = _lint_imports_with(
        tmp_path, "wire/workspace_options.py", "from autodoc.vectors import qdrant_dense  # noqa"
    )
    assert "autodoc.wire is not allowed to import autodoc.vectors" in report
    assert "No import cycle between sibling modules or packages BROKEN" in report


def test_the_contracts_catch_the_old_server_features_cycle(tmp_path):
    """The LSP server imported its features and the features imported the server's class."""
    report = _lint_imports_with(
        tmp_path, "serve/lsp/lsp_server.py", "from autodoc.serve.lsp import features  # noqa"
    )
    assert "No cycles are allowed in autodoc.serve.lsp" in report


@pytest.mark.parametrize(
    ("module", "planted", "broken"),
    [
        # a front end importing the engine: it would reach the index around the door
        ("serve/lsp/lsp_server.py", "from autodoc.engine import Engine  # noqa",
         "The LSP front end reaches the index only through the host's dispatcher"),
        ("serve/http/server.py", "from autodoc.engine.reading import Reading  # noqa",
         "The HTTP front end reaches the index only through the host's dispatcher"),
        # the refresher calling an engine operation off the table needs the engine
        ("serve/host/refresh.py", "from autodoc.engine.indexing import Indexing  # noqa",
         "The refresher and the watcher reach the engine only by the method table's names"),
        ("serve/host/refresh.py", "from autodoc.serve.dispatcher import Dispatcher  # noqa",
         "The refresher and the watcher reach the engine only by the method table's names"),
    ],
)  # fmt: skip
def test_the_one_door_contracts_catch_a_planted_way_around(tmp_path, module, planted, broken):
    """Issue 56: each planted import breaks its contract, and only that one."""
    report = _lint_imports_with(tmp_path, module, planted)
    assert f"{broken}" in report and "Contracts: 7 kept, 1 broken." in report, report


def _map_packages() -> dict[str, str]:
    """doc/architecture.md's tree: each package (a path under the sidecar, `serve/host`) and
    the text of its lines, read by indentation (two spaces a level)."""
    text = (REPO / "doc" / "architecture.md").read_text(encoding="utf-8")
    block = text.split("```\nsidecar/autodoc/", 1)[1].split("```", 1)[0]
    packages: dict[str, str] = {}
    stack: list[str] = []
    current = ""
    for line in block.splitlines()[1:]:
        head = re.match(r"^( +)([a-z0-9_]+)/(?=\s|$)", line)
        if head:
            depth = len(head.group(1)) // 2 - 1
            stack = [*stack[:depth], head.group(2)]
            current = "/".join(stack)
            packages[current] = ""
        if current:  # the header's own lines come first
            packages[current] += " " + line
    return packages


def test_the_architecture_map_names_every_module_where_it_lives():
    """Issue 56: the map drifted (24 modules missing). Every module of every package is named
    on its package's lines, and every package the map names is in the tree."""
    packages = _map_packages()
    missing = []
    for folder in sorted(p.parent for p in SIDECAR.rglob("__init__.py")):
        rel = folder.relative_to(SIDECAR).as_posix()
        if rel == ".":
            continue
        words = set(re.findall(r"[a-z0-9_]+", packages.get(rel, "")))
        assert rel in packages, f"the map has no line for {rel}/"
        missing += [f"{rel}/{p.stem}" for p in sorted(folder.glob("*.py"))
                    if not p.name.startswith("__") and p.stem not in words]  # fmt: skip
    assert missing == []
    for rel in packages:
        assert (SIDECAR / rel / "__init__.py").exists(), f"the map names {rel}/, not in the tree"


def test_every_test_lives_in_a_lane_and_the_unit_lane_starts_no_process():
    """Issue 56: `pytest -m unit` is the inner loop: in process, seconds. A test file at the
    top of tests/ has no lane; one in tests/unit/ that starts a process belongs elsewhere."""
    tests = REPO / "tests"
    assert sorted(p.name for p in tests.glob("test_*.py")) == []
    starts = re.compile(
        r"^\s*(import subprocess|from subprocess|import pynvim)|Popen|sys\.executable"
    )
    unit = sorted((tests / "unit").glob("test_*.py"))
    assert len(unit) > 30
    assert [p.name for p in unit if starts.search(p.read_text(encoding="utf-8"))] == []

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

from .conftest import REPO

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

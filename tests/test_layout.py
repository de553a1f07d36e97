"""The tree's rules: no function in the sidecar over 60 lines without a reason written above it,
each server adapter well under 300 lines, and no SQL outside the store package."""

from __future__ import annotations

import ast
import re

from .conftest import REPO

SIDECAR = REPO / "sidecar" / "autodoc"
MAX_LINES = 60


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
    for name in ("serve/lsp/lsp_server.py", "serve/mcp/mcp_server.py", "serve/lsp/lsp_features.py"):
        assert len((SIDECAR / name).read_text().splitlines()) < 300, name


SQL = re.compile(r"""["'](?:SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|WITH|PRAGMA)\b""")
STORE = SIDECAR / "store"  # the package that owns every SQL statement of the sidecar


def test_no_sql_outside_the_store():
    holding = {
        str(p.relative_to(SIDECAR))
        for p in SIDECAR.rglob("*.py")
        if STORE not in p.parents and SQL.search(p.read_text())
    }
    assert holding == set()

"""What a search imports (issue 45): the indexer, the link checks, completion and note actions
are imported where they are used, so a one-shot search loads none of them. Each search runs in
a process of its own and lists the modules it held at the end (as tests/test_startup.py does
for the model and the servers)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autodoc.engine import Engine
from autodoc.serve.dispatcher import Dispatcher

from .conftest import EXAMPLE_VAULT

PROBE = """
import json, sys
out = sys.argv.pop(1)
from autodoc.serve.cli import main
code = main(sys.argv[1:])
with open(out, "w") as f:
    json.dump({"code": code, "modules": sorted(sys.modules)}, f)
"""
# Loaded by what writes, completes, acts on or checks a note, never by a search.
NOT_SEARCH = (
    "autodoc.index.indexer",
    "autodoc.index.check",
    "autodoc.vectors.embedding_cache",
    "autodoc.query.note_actions",
    "autodoc.query.completion_context",
    "autodoc.query.note_completion",
    "autodoc.query.part_completion",
    "autodoc.query.paragraph_meaning",
    "statistics",  # the lexical stage's median is computed in place
)


@pytest.fixture(scope="module")
def indexed(tmp_path_factory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("imports")
    root = base / "vault"
    shutil.copytree(EXAMPLE_VAULT, root)
    db = base / "store" / "autodoc.db"
    rpc = Dispatcher(Engine(db))
    rpc.call("workspace.add", ["vault", str(root)])
    assert rpc.call("index.run", ["vault"])["embedding"]["coverage"]["embedded"] > 0
    rpc.engine.close()
    return root, db


def _modules(tmp_path: Path, db: Path, cwd: Path, *args: str) -> list[str]:
    out = tmp_path / "probe.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUTODOC_")}
    if "AUTODOC_CACHE" in os.environ:  # the model's identity, recorded by the indexing
        env["AUTODOC_CACHE"] = os.environ["AUTODOC_CACHE"]
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(out), "--db", str(db), *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert out.is_file(), proc.stderr[-2000:]
    got = json.loads(out.read_text())
    assert got["code"] == 0, proc.stderr[-2000:]
    return got["modules"]


@pytest.mark.parametrize("stages", [[], ["--stages", "lexical"]], ids=["hybrid", "lexical"])
def test_a_search_loads_no_writing_or_editing_module(indexed, tmp_path, stages):
    root, db = indexed
    modules = _modules(tmp_path, db, root, "search", "why did we pick sqlite", *stages)
    assert ("onnxruntime" in modules) == (not stages)  # the search it is said to be
    assert [m for m in NOT_SEARCH if m in modules] == []


def test_a_lexical_search_reads_its_package_files_without_importlib_resources(indexed, tmp_path):
    """The ranking model and the common-words list are read beside their modules."""
    root, db = indexed
    modules = _modules(tmp_path, db, root, "search", "lease recovery", "--stages", "lexical")
    assert "autodoc.query.ranking" in modules and "importlib.resources" not in modules

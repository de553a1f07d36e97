"""The CLI is a thin layer: `--call`, `index` and `search` over the same dispatcher."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from autodoc.cli import main

from .conftest import EXAMPLE_VAULT


@pytest.fixture
def cli(db_path, capsys):
    def run(*argv):
        code = main(["--db", str(db_path), *argv])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def test_index_and_search_the_example_vault(cli, tmp_path):
    vault = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    code, out, _ = cli("index", str(vault))
    assert code == 0
    assert out.startswith("indexed vault: 8 files (8 added")
    code, out, _ = cli("index", str(vault))
    assert "8 unchanged" in out and "(0 written)" in out
    code, out, err = cli("search", "reclaimBatch", "--workspace", "vault")
    assert code == 0
    first = out.splitlines()[0]
    path, _, rest = first.partition("  ")
    assert path.startswith("adr/0003-embedded-sqlite-store.md:")
    assert "reclaimBatch" in rest
    assert "hybrid" in err and "rerank skipped: no ranker configured" in err
    code, out, _ = cli("search", "embedded relational store", "--json", "-n", "2")
    answer = json.loads(out)
    assert answer["hits"][0]["path"] == "adr/0003-embedded-sqlite-store.md"
    assert len(answer["hits"]) == 2


def test_call_prints_json_and_errors_exit_nonzero(cli, tmp_path):
    (tmp_path / "v").mkdir()
    code, out, _ = cli("--call", "workspace.add", json.dumps(["v", str(tmp_path / "v")]))
    assert code == 0 and json.loads(out)["name"] == "v"
    code, out, _ = cli("--call", "workspace.list")
    assert code == 0 and json.loads(out)[0]["name"] == "v"
    code, out, err = cli("--call", "search.query", '["v"]')
    assert code != 0 and json.loads(err)["error"]["code"] == -32602
    code, out, err = cli("--call", "search.query", "not json")
    assert code != 0 and json.loads(err)["error"]["code"] == -32700
    code, out, err = cli("search", "x", "--workspace", "missing")
    assert code != 0 and "unknown workspace" in err


def test_console_script_and_env_db(tmp_path):
    exe = shutil.which("autodoc", path=os.path.dirname(sys.executable))
    assert exe, "the console script is installed with the package"
    env = {**os.environ, "AUTODOC_DB": str(tmp_path / "env.db")}
    proc = subprocess.run(
        [exe, "--call", "workspace.list"], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0 and json.loads(proc.stdout) == []
    assert (tmp_path / "env.db").exists()

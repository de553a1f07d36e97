"""The dispatcher's methods and errors, the writer lease, and doc.read confinement."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest

from autodoc.engine import Engine
from autodoc.wire.errors import INVALID_PARAMS, METHOD_NOT_FOUND, STORE_BUSY, RpcError

from ..conftest import write


def err(rpc, method, params):
    with pytest.raises(RpcError) as info:
        rpc.call(method, params)
    return info.value


@pytest.fixture
def ws(rpc, vault):
    write(vault, "a.md", "# Alpha\n\nfirst line\nsecond line\nthird line\n")
    write(vault, "sub/b.md", "# Beta\n\n## Part\nbeta words\n")
    rpc.call("workspace.add", ["kb", str(vault)])
    rpc.call("index.run", ["kb"])
    return rpc


def test_workspace_lifecycle(rpc, vault, tmp_path):
    created = rpc.call("workspace.add", ["kb", str(vault)])
    assert created["created"] is True and created["root"] == str(vault.resolve())
    assert rpc.call("workspace.add", ["kb", str(vault)])["created"] is False
    other = tmp_path / "other"
    other.mkdir()
    assert err(rpc, "workspace.add", ["kb", str(other)]).code == INVALID_PARAMS
    assert err(rpc, "workspace.add", ["bad name!", str(vault)]).code == INVALID_PARAMS
    assert err(rpc, "workspace.add", ["x", str(tmp_path / "missing")]).code == INVALID_PARAMS
    assert [w["name"] for w in rpc.call("workspace.list")] == ["kb"]
    assert rpc.call("workspace.remove", ["kb"])["removed"] is True
    assert rpc.call("workspace.list") == []
    assert err(rpc, "workspace.remove", ["kb"]).code == INVALID_PARAMS


def test_two_workspaces_share_one_store_but_not_results(rpc, tmp_path, db_path):
    for name in ("one", "two"):
        root = tmp_path / name
        write(root, "n.md", f"# {name}\n\nshared word {name}only\n")
        rpc.call("workspace.add", [name, str(root)])
        rpc.call("index.run", [name])
    hits = rpc.call("search.query", ["one", "shared"])["hits"]
    assert [h["snippet"] for h in hits] == ["shared word oneonly"]
    assert len(list(db_path.parent.glob("*.db"))) == 1


def test_unknown_method_and_bad_params(ws):
    assert err(ws, "nope", []).code == METHOD_NOT_FOUND
    assert err(ws, "search.query", {"workspace": "kb"}).code == INVALID_PARAMS
    assert err(ws, "search.query", ["kb"]).code == INVALID_PARAMS
    assert err(ws, "search.query", ["kb", "q", {}, 4]).code == INVALID_PARAMS
    assert err(ws, "search.query", ["missing", "q"]).code == INVALID_PARAMS
    assert err(ws, "search.query", ["kb", 42]).code == INVALID_PARAMS
    assert err(ws, "index.status", [None]).code == INVALID_PARAMS
    assert err(ws, "changes.since", ["kb", -1]).code == INVALID_PARAMS


def test_jsonrpc_envelope(ws):
    ok = ws.handle({"jsonrpc": "2.0", "id": 7, "method": "workspace.list"})
    assert ok["id"] == 7 and ok["result"][0]["name"] == "kb"
    bad = ws.handle({"jsonrpc": "2.0", "id": 8, "method": "search.query", "params": ["kb"]})
    assert bad["error"]["code"] == INVALID_PARAMS
    assert ws.handle("garbage")["error"]["code"] == -32600


def test_doc_read_span_and_confinement(ws, vault, tmp_path):
    got = ws.call("doc.read", ["kb", "a.md", 3, 4])
    assert got["text"] == "first line\nsecond line" and got["generation"] == 1
    assert ws.call("doc.read", ["kb", "a.md", 5, 99])["line_end"] == 5
    (tmp_path / "secret.md").write_text("secret")
    (vault / "link.md").symlink_to(tmp_path / "secret.md")
    for bad in [
        "../secret.md",
        str(tmp_path / "secret.md"),
        "link.md",
        "sub/../../secret.md",
        "missing.md",
        "",
        "a.md\x00",
    ]:
        assert err(ws, "doc.read", ["kb", bad, 1, 1]).code == INVALID_PARAMS, bad
    assert err(ws, "doc.read", ["kb", "a.md", 4, 3]).code == INVALID_PARAMS
    assert err(ws, "doc.read", ["kb", "a.md", 0, 3]).code == INVALID_PARAMS
    assert err(ws, "doc.read", ["kb", "a.md", 50, 60]).code == INVALID_PARAMS


def test_hit_spans_read_back_with_doc_read(ws):
    hit = ws.call("search.query", ["kb", "beta words"])["hits"][0]
    text = ws.call("doc.read", ["kb", hit["path"], hit["line_start"], hit["line_end"]])["text"]
    assert text == "## Part\nbeta words"


def test_configure_validates_and_rechunks(ws, engine):
    for bad in [
        {"section_tokens": 10},
        {"section_tokens": "big"},
        {"nope": 1},
        {"abstract_chunk": 1},
        {"section_tokens": True},
    ]:
        e = err(ws, "workspace.configure", ["kb", bad])
        assert e.code == INVALID_PARAMS
    assert err(ws, "workspace.section_size", ["kb", 5000]).code == INVALID_PARAMS
    out = ws.call("workspace.section_size", ["kb", 100])
    assert out["options"]["section_tokens"] == 100
    assert out["reindexed"]["modified"] == 2  # every document was cut again
    out = ws.call("workspace.configure", ["kb", {"demote_superseded": False}])
    assert out["reindexed"] is None  # not a chunking option: nothing to redo
    assert ws.call("workspace.list")[0]["options"]["demote_superseded"] is False


def test_store_is_wal_and_one_file(ws, db_path):
    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"workspaces", "documents", "chunks", "links", "changes"} <= tables


def test_second_writer_gets_a_clear_error(ws, db_path, vault):
    code = (
        "import json, sys\n"
        "from autodoc.serve.dispatcher import Dispatcher\n"
        "from autodoc.engine import Engine\n"
        "from autodoc.wire.errors import RpcError\n"
        f"d = Dispatcher(Engine({str(db_path)!r}))\n"
        "out = {'read': len(d.call('search.query', ['kb', 'beta'])['hits'])}\n"
        "try:\n"
        "    d.call('index.run', ['kb'])\n"
        "except RpcError as e:\n"
        "    out['error'] = e.to_dict()\n"
        "print(json.dumps(out))\n"
    )
    ws.engine.store.writer()  # this process holds the lease
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    out = json.loads(proc.stdout)
    assert out["read"] >= 1  # readers are never blocked
    assert out["error"]["code"] == STORE_BUSY
    assert "another process" in out["error"]["message"]
    assert str(__import__("os").getpid()) in out["error"]["data"]["holder"]


def test_lease_is_released_on_close(db_path, vault):
    write(vault, "a.md", "# A\n")
    first = Engine(db_path)
    first.workspaces.workspace_add("kb", str(vault))
    first.close()
    second = Engine(db_path)
    second.indexing.index_run("kb")  # would raise StoreBusyError if the lease had leaked
    second.close()

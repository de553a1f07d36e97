"""The method table (issue 56): every front end's routing, the HTTP server's served methods and
token rights, and the docs' method tables come from one record per method. A write method
added to the table is routed to the writer by the LSP server, the HTTP server and a team
server's worker with no other change."""

from __future__ import annotations

import asyncio
import shutil
import threading
from typing import Any

import pytest

from autodoc.engine import Engine
from autodoc.serve import method_table
from autodoc.serve.dispatcher import Dispatcher
from autodoc.serve.host.serving import Host
from autodoc.serve.method_table import Method
from autodoc.wire.errors import METHOD_NOT_FOUND, RpcError

from ..conftest import EXAMPLE_VAULT, REPO

RW, RO = "rw-token-0123456789abcdef", "ro-token-0123456789abcdef"


def test_the_docs_method_tables_are_generated_from_the_table():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert method_table.methods_table() in readme, (
        "README.md: python -m autodoc.serve.method_table methods"
    )
    served = (REPO / "doc" / "server.md").read_text(encoding="utf-8")
    assert method_table.served_table() in served, "doc/server.md: python -m ... method_table served"


def test_the_host_reaches_the_engine_only_through_the_table():
    """Issue 56: every engine operation `Host` uses is a record of the table (a client's method
    or one of the host's own, `HOST_METHODS`): in its code, `self.engine` is followed only by
    `.store` (the lease it holds) or passed whole; an operation called on it is a planted way
    around the table."""
    import ast

    tree = ast.parse((REPO / "sidecar/autodoc/serve/host/serving.py").read_text())
    around = [
        f"line {node.lineno}: self.engine.{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "engine"
        and isinstance(node.value.value, ast.Name)
        and node.value.value.id == "self"
        and node.attr != "store"
    ]
    assert around == []


def test_no_front_end_serves_the_hosts_own_operations(tmp_path):
    engine = Engine(tmp_path / "s.db")
    try:
        with pytest.raises(RpcError) as err:
            Dispatcher(engine).call("host.counts", ["v"])
        assert err.value.code == METHOD_NOT_FOUND
        assert "host." not in method_table.methods_table() + method_table.served_table()
    finally:
        engine.close()


def test_every_record_names_an_operation_of_the_engine_once(tmp_path):
    engine = Engine(tmp_path / "s.db")
    try:
        names = [m.name for m in method_table.METHODS]
        assert len(names) == len(set(names)) and set(names) == set(method_table.BY_NAME)
        concerns = [engine.workspaces, engine.indexing, engine.reading, engine.navigation]
        concerns += [engine.actions, engine.renaming, engine.completion, engine.questions]
        assert not set(method_table.HOST_BY_NAME) & set(method_table.BY_NAME)
        for m in method_table.METHODS + method_table.HOST_METHODS:
            bound = m.handler(engine)
            owner = getattr(bound, "__self__", None)  # an operation of one of the engine's concerns
            assert any(owner is c for c in concerns), m.name
            assert type(owner).__module__.startswith("autodoc.engine."), m.name
            assert m.params and m.result, m.name  # documented
            assert not (m.http == "write" and not m.writes), m.name
        # a store-changing method is never served to a read-only token
        assert all(m.http != "read" for m in method_table.METHODS if m.writes)
    finally:
        engine.close()


class _Stamp:
    """A write method's handler: the thread it ran on."""

    def __init__(self) -> None:
        self.threads: list[str] = []

    def __call__(self, engine: Engine) -> Any:
        def stamp(workspace: str, word: str) -> dict[str, str]:
            self.threads.append(threading.current_thread().name)
            return {"word": word, "thread": threading.current_thread().name}

        return stamp


@pytest.fixture
def stamp(monkeypatch) -> _Stamp:
    """A write method `test.stamp` added to the table, nothing else changed."""
    handler = _Stamp()
    added = Method("test.stamp", handler, writes=True, http="write",
                   params="`[workspace, word]`", result="a stamp")  # fmt: skip
    monkeypatch.setattr(method_table, "METHODS", (*method_table.METHODS, added))
    monkeypatch.setattr(method_table, "BY_NAME", {**method_table.BY_NAME, added.name: added})
    return handler


@pytest.fixture
def host(tmp_path, stamp):
    vault = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    engine = Engine(tmp_path / "store" / "s.db")
    served = Host(engine, watch=False)
    served.open(vault).result(timeout=120)
    yield served
    served.close()


def test_the_dispatcher_takes_a_method_added_to_the_table(tmp_path, stamp):
    rpc = Dispatcher(Engine(tmp_path / "s.db"))
    try:
        assert rpc.call("test.stamp", ["v", "hi"])["word"] == "hi"
        assert stamp.threads == [threading.current_thread().name]  # a one-shot call: here
    finally:
        rpc.engine.close()


def test_the_lsp_server_routes_it_to_the_writer(host, stamp):
    from autodoc.serve.lsp.lsp_entry import build_server

    server = build_server(host)
    try:
        handler = server.protocol.fm.features["autodoc/test.stamp"]  # registered from the table
        answer = asyncio.run(handler(["vault", "lsp"]))  # pygls hands the server in itself
        assert answer == {"word": "lsp", "thread": "autodoc-writer"}
        read = asyncio.run(server.protocol.fm.features["autodoc/index.status"](["vault"]))
        assert read["documents"] == 8
    finally:
        server.readers.shutdown()


def test_the_http_server_routes_it_to_the_writer_for_a_token_that_may_write(host, stamp):
    from starlette.testclient import TestClient

    from autodoc.serve.http.server import HttpApp
    from autodoc.serve.http.tokens import Token, Tokens

    tokens = Tokens([Token(RW, False), Token(RO, True)])
    app = HttpApp(host, tokens, max_concurrent=2)
    body = {"jsonrpc": "2.0", "id": 1, "method": "test.stamp", "params": ["vault", "http"]}
    with TestClient(app.asgi()) as client:
        ok = client.post("/rpc", json=body, headers={"Authorization": f"Bearer {RW}"})
        assert ok.status_code == 200, ok.text
        assert ok.json()["result"] == {"word": "http", "thread": "autodoc-writer"}
        refused = client.post("/rpc", json=body, headers={"Authorization": f"Bearer {RO}"})
        assert refused.status_code == 403 and refused.json()["error"]["code"] == -32003
        read = {"jsonrpc": "2.0", "id": 2, "method": "index.status", "params": ["vault"]}
        got = client.post("/rpc", json=read, headers={"Authorization": f"Bearer {RO}"})
        assert got.json()["result"]["documents"] == 8
    assert stamp.threads == ["autodoc-writer"]


def test_a_team_workers_write_without_the_lease_goes_to_the_lease_holder(tmp_path, stamp):
    """A team server's worker that does not hold the lease relays a write (`Host.relay`, set
    by `team_server.worker_app`); a read it answers itself."""
    engine = Engine(tmp_path / "s.db")
    worker = Host(engine, watch=False)
    relayed: list[tuple[str, Any]] = []
    worker.relay = lambda method, params: relayed.append((method, params)) or "at the holder"
    try:
        assert engine.store.lease.fd is None  # no folder opened: the lease is not this one's
        assert worker.call("test.stamp", ["v", "team"]).result(timeout=30) == "at the holder"
        assert relayed == [("test.stamp", ["v", "team"])] and stamp.threads == []
        assert worker.call("workspace.list", []).result(timeout=30) == []
    finally:
        worker.close()


def test_a_method_the_table_does_not_serve_over_http_is_not_found_there(host):
    from starlette.testclient import TestClient

    from autodoc.serve.http.server import HttpApp
    from autodoc.serve.http.tokens import Token, Tokens

    hidden = [m.name for m in method_table.METHODS if m.http == "none"]
    assert "index.paths" in hidden and "workspace.add" in hidden
    app = HttpApp(host, Tokens([Token(RW, False)]), max_concurrent=2)
    with TestClient(app.asgi()) as client:
        for name in hidden:
            body = {"jsonrpc": "2.0", "id": 1, "method": name, "params": ["vault"]}
            got = client.post("/rpc", json=body, headers={"Authorization": f"Bearer {RW}"})
            assert got.json()["error"]["code"] == -32601, name

"""What the door catches, every front end alike (issue 56): a string that is not text (a lone
UTF-16 surrogate, which no UTF-8 text can hold) in a query, a path or a workspace name is
-32602 naming the parameter on the CLI, the LSP server, MCP over stdio and HTTP, and the HTTP
server; a line the MCP SDK cannot read is answered to its id; the first `status` after a start
names the server's folder as served; a client that goes away mid-body leaves no traceback."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import threading
import time
from queue import Empty, Queue
from typing import Any

import pytest

from autodoc.engine import Engine
from autodoc.serve.dispatcher import Dispatcher
from autodoc.wire import limits
from autodoc.wire.errors import RpcError

from ..conftest import EXAMPLE_VAULT, REPO, lexical_workspace, write
from .test_fuzz import Wire
from .test_http import RW, call, post, team_server

LONE = "\ud800x"  # a high surrogate with no low one after it
# (method, params, the parameter named): a query, a path and a workspace name
CASES = [
    ("search.query", ["vault", LONE], "query"),
    ("doc.read", ["vault", f"a{LONE}.md"], "path"),
    ("index.status", [f"v{LONE}"], "name"),
]


def _not_text(error: dict[str, Any], param: str) -> None:
    assert error["code"] == -32602, error
    assert error["message"].startswith(f"{param} (params[")
    assert "lone UTF-16 surrogate" in error["message"]
    assert error["data"]["param"] == param


@pytest.fixture
def vault(tmp_path):
    root = tmp_path / "vault"
    write(root, "a.md", "# A\n\nalpha beta 🙂\n")
    return root


def test_the_walk_finds_a_lone_surrogate_anywhere_and_passes_text():
    assert limits.lone_surrogate_at(["v", "alpha 🙂", {"k": ["é", 1, None]}]) is None
    assert limits.lone_surrogate_at(["v", {"facets": {"tag": [1, LONE]}}]) == "[1].facets.tag[1]"
    assert limits.lone_surrogate_at([{"\udc80": 1}]) == "[0] (a key)"
    assert limits.lone_surrogate_at(["a", "\udfff", LONE]) == "[1]"  # the first, in order
    with pytest.raises(RpcError) as raised:
        limits.check_params(["v", LONE], ["workspace", "query"])
    assert raised.value.data == {"param": "query", "at": "params[1]"}


def test_the_dispatcher_names_the_parameter_and_still_takes_text(vault, tmp_path):
    rpc = Dispatcher(Engine(tmp_path / "s.db"))
    try:
        lexical_workspace(rpc, vault, "vault")
        for method, params, param in CASES:
            with pytest.raises(RpcError) as raised:
                rpc.call(method, params)
            _not_text(raised.value.to_dict(), param)
        with pytest.raises(RpcError) as raised:
            rpc.call("workspace.add", [LONE, str(vault)])
        _not_text(raised.value.to_dict(), "name")
        assert rpc.call("search.query", ["vault", "alpha 🙂"])["hits"]  # a pair is text
        assert [w["name"] for w in rpc.call("workspace.list")] == ["vault"]  # nothing added
    finally:
        rpc.engine.close()


def test_the_cli_answers_a_sentence_and_json_with_no_traceback(vault, tmp_path):
    db = tmp_path / "c.db"
    setup = Dispatcher(Engine(db))
    lexical_workspace(setup, vault, "vault")
    setup.engine.close()
    for method, params, param in CASES:
        out = subprocess.run(
            [sys.executable, "-m", "autodoc", "--db", str(db), "--call", method,
             json.dumps(params)],
            capture_output=True, text=True, timeout=60, cwd=REPO,
        )  # fmt: skip
        assert out.returncode == 2 and "Traceback" not in out.stderr
        assert out.stderr.count("\n") == 1 and out.stderr.startswith(f"autodoc: {param} (")
        _not_text(json.loads(out.stdout)["error"], param)


def test_the_lsp_server_answers_each_and_serves_on(vault, tmp_path):
    wire = Wire(vault, tmp_path / "lsp" / "autodoc.db")
    try:
        for rid, (method, params, param) in enumerate(CASES, 10):
            _not_text(wire.request(rid, f"autodoc/{method}", params)["error"], param)
        assert "result" in wire.request(20, "autodoc/workspace.list", [])
    finally:
        wire.close()


class _McpStdio:
    """`autodoc mcp` on pipes, spoken to line by line (the SDK's client cannot send what is
    not text)."""

    def __init__(self, db, root) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "autodoc", "--db", str(db), "mcp", str(root), "--no-watch"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        self.lines: Queue[dict[str, Any]] = Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in iter(self.proc.stdout.readline, b""):
            self.lines.put(json.loads(line))

    def send(self, raw: str | bytes) -> None:
        data = raw.encode() if isinstance(raw, str) else raw
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def answer(self, rid: Any, timeout: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            try:
                message = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except Empty:
                raise AssertionError(f"no answer to {rid!r}") from None
            if message.get("id") == rid:
                return message

    def tool(self, rid: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self.send(json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                              "params": {"name": name, "arguments": arguments}}))  # fmt: skip
        return self.answer(rid)

    def open(self) -> None:
        params = {"protocolVersion": "2025-06-18", "capabilities": {},
                  "clientInfo": {"name": "door", "version": "1"}}  # fmt: skip
        self.send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                              "params": params}))  # fmt: skip
        self.answer(0)
        self.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))

    def close(self) -> str:
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        finally:
            self.proc.kill()
        return self.proc.stderr.read().decode()


def test_mcp_stdio_answers_every_line_that_carries_an_id(tmp_path):
    root = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, root)
    server = _McpStdio(tmp_path / "store" / "m.db", root)
    try:
        server.open()
        # the first status names the server's folder as served: it waits for the folder to
        # be named, as a search does
        first = server.tool(1, "status", {})["result"]["structuredContent"]
        mine = [w for w in first["workspaces"] if w["name"] == "vault"]
        assert mine and mine[0]["served"] is True, first["workspaces"]
        refused = server.tool(2, "search", {"query": LONE})["error"]
        assert refused["code"] == -32602 and refused["data"]["param"] == "query"
        assert refused["data"]["at"] == "message.params.arguments.query"
        refused = server.tool(3, "read_span", {"path": f"a{LONE}.md"})["error"]
        assert refused["code"] == -32602 and refused["data"]["param"] == "path"
        server.send('{"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {')
        assert server.answer(4)["error"]["code"] == -32700  # not JSON: its id read anyway
        server.send('{"jsonrpc": "2.0", "id": "five"}')
        assert server.answer("five")["error"]["code"] == -32600  # JSON, but no message
        server.send("{not json at all")  # no id to answer: logged
        served = server.tool(6, "status", {})["result"]  # and it serves on
        assert not served.get("isError") and served["structuredContent"]["workspaces"]
        stderr = server.close()
    finally:
        server.proc.kill()
    assert "Traceback" not in stderr


def test_http_rpc_and_mcp_answer_each_and_a_client_gone_mid_body_is_one_line(tmp_path):
    served = team_server(tmp_path)  # up once its folder is indexed
    rpc, _, proc = next(served)
    url = rpc.removesuffix("/rpc")
    try:
        for method, params, param in CASES:
            status, answer, _ = call(rpc, method, *params)
            assert status == 200
            _not_text(answer["error"], param)
        arguments = {"query": LONE}
        body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": "search", "arguments": arguments}}  # fmt: skip
        status, answer, _ = post(f"{url}/mcp", json.dumps(body).encode())
        assert status == 400 and answer["id"] == 7
        assert answer["error"]["code"] == -32602 and answer["error"]["data"]["param"] == "query"
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port)) as gone:  # promises 1,000 bytes
            gone.sendall(b"POST /rpc HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + RW.encode()
                         + b"\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\"")  # fmt: skip
            time.sleep(0.3)
        assert call(rpc, "index.status", "vault")[0] == 200  # serving on
        time.sleep(0.3)
    finally:
        next(served, None)  # terminated
    stderr = proc.stderr.read().decode()
    assert "Traceback" not in stderr and "ClientDisconnect" not in stderr, stderr

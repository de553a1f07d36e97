"""Front ends through one door (issue 40): one query sent through the CLI (`autodoc --call`), the
LSP server (`autodoc/search.query`), the MCP server (the `search` tool) and the HTTP server
(`/rpc`) gets the same hits from each, and each request is answered by exactly one
`Dispatcher.call("search.query")`, as `AUTODOC_TRACE_METHODS` records it in every process.

Every front end runs as the real process over one store (the sample vault, lexical only), one
after another, so each holds the writer lease in turn.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from pytest_lsp import client_capabilities, make_test_lsp_client

from autodoc.serve.cli.main import main
from autodoc.serve.dispatcher import TRACE_ENV, Dispatcher, Reports
from autodoc.wire import protocol
from autodoc.wire.errors import INTERNAL_ERROR, INVALID_PARAMS, RpcError

from ..conftest import EXAMPLE_VAULT, lexical_workspace

QUERY = "embedded relational store"  # the title of the one record it names
OPTS: dict[str, Any] = {"stages": ["lexical"], "limit": 5}
TOKEN = "front-ends-token-0123456789"
WAIT_S = 30.0

Span = tuple[str, int, int]


@pytest.fixture(scope="module")
def indexed(tmp_path_factory) -> tuple[Path, Path, Path]:
    """(folder, vault, store): the sample vault indexed lexically by the CLI, in this process."""
    base = tmp_path_factory.mktemp("front-ends")
    vault = base / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    db = base / "store" / "autodoc.db"
    for args in (
        ["--call", "workspace.add", json.dumps(["vault", str(vault)])],
        ["--call", "workspace.configure", '["vault", {"embedding": "none"}]'],
        ["index", str(vault)],
    ):
        assert main(["--db", str(db), *args]) == 0
    return base, vault, db


def _env(trace: Path) -> dict[str, str]:
    """The test's environment without autodoc settings, tracing dispatcher calls to `trace`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUTODOC_")}
    env[TRACE_ENV] = str(trace)
    return env


def _traced(trace: Path) -> list[str]:
    return trace.read_text().splitlines() if trace.exists() else []


def _spans(hits: list[dict[str, Any]]) -> list[Span]:
    return [(h["path"], h["line_start"], h["line_end"]) for h in hits]


def via_cli(db: Path, trace: Path) -> tuple[list[Span], list[str]]:
    params = json.dumps(["vault", QUERY, OPTS])
    out = subprocess.run(
        [sys.executable, "-m", "autodoc", "--db", str(db), "--call", "search.query", params],
        env=_env(trace), capture_output=True, text=True, timeout=WAIT_S,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return _spans(json.loads(out.stdout)["hits"]), _traced(trace)


async def via_lsp(vault: Path, db: Path, trace: Path) -> tuple[list[Span], list[str]]:
    client = make_test_lsp_client()
    ready = asyncio.ensure_future(client.wait_for_notification("autodoc/indexReady"))
    await client.start_io(sys.executable, "-m", "autodoc", "--db", str(db), "serve",
                          "--log-level", "ERROR", env=_env(trace))  # fmt: skip
    try:
        await client.initialize_session(
            types.InitializeParams(
                capabilities=client_capabilities("neovim"),
                workspace_folders=[types.WorkspaceFolder(uri=vault.as_uri(), name="vault")],
                initialization_options={"embedding": "none"},
            )
        )
        await asyncio.wait_for(ready, WAIT_S)
        before = len(_traced(trace))
        answer = await client.protocol.send_request_async(
            "autodoc/search.query", ["vault", QUERY, OPTS]
        )
        calls = _traced(trace)[before:]
    finally:
        await client.shutdown_session()
        await client.stop()
    return [(h.path, h.line_start, h.line_end) for h in answer.hits], calls


async def via_mcp(base: Path, vault: Path, db: Path, trace: Path) -> tuple[list[Span], list[str]]:
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "autodoc", "--db", str(db), "mcp", "--no-watch", str(vault)],
        env=_env(trace),
        cwd=str(base),
    )
    async with Client(server, read_timeout_seconds=WAIT_S) as client:
        deadline = time.monotonic() + WAIT_S
        while True:  # `status` is the host's own answer: no dispatcher call
            status = (await client.call_tool("status", {})).structured_content
            if [w["indexing"] for w in status["workspaces"] if w["served"]] == ["ready"]:
                break
            assert time.monotonic() < deadline, status
            await asyncio.sleep(0.1)
        before = len(_traced(trace))
        args = {"query": QUERY, "workspace": "vault", **OPTS}
        result = await client.call_tool("search", args)
        calls = _traced(trace)[before:]
    assert not result.is_error, result.content[0].text
    return _spans(result.structured_content["hits"]), calls


def _rpc(port: int, method: str, *params: Any) -> dict[str, Any]:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)})
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"}
    request = urllib.request.Request(f"http://127.0.0.1:{port}/rpc", body.encode(), headers)
    with urllib.request.urlopen(request, timeout=WAIT_S) as response:
        return json.loads(response.read())


def via_http(base: Path, vault: Path, db: Path, trace: Path) -> tuple[list[Span], list[str]]:
    tokens = base / "tokens"
    tokens.write_text(f"{TOKEN}\n")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "autodoc", "--db", str(db), "serve", "--http",
         f"127.0.0.1:{port}", "--token-file", str(tokens), str(vault)],
        env=_env(trace), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + WAIT_S
        while True:  # served once the folder is open (each poll is an `index.status` call)
            try:
                if _rpc(port, "index.status", "vault").get("result", {}).get("documents") == 8:
                    break
            except (urllib.error.URLError, ConnectionError):
                pass
            assert time.monotonic() < deadline and proc.poll() is None, proc.stderr
            time.sleep(0.1)
        before = len(_traced(trace))
        answer = _rpc(port, "search.query", "vault", QUERY, OPTS)
        calls = _traced(trace)[before:]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert "result" in answer, answer
    return _spans(answer["result"]["hits"]), calls


async def test_one_query_through_every_front_end_is_one_dispatcher_call(indexed, tmp_path):
    base, vault, db = indexed
    answers = {
        "cli": via_cli(db, tmp_path / "cli.trace"),
        "lsp": await via_lsp(vault, db, tmp_path / "lsp.trace"),
        "mcp": await via_mcp(base, vault, db, tmp_path / "mcp.trace"),
        "http": via_http(base, vault, db, tmp_path / "http.trace"),
    }
    spans = {front: hits for front, (hits, _) in answers.items()}
    assert spans["cli"] and spans["cli"][0][0] == "adr/0003-embedded-sqlite-store.md"
    assert all(hits == spans["cli"] for hits in spans.values()), spans
    # What each front end's request made the dispatcher run: `search.query`, once, and
    # nothing else. A front end that went around the dispatcher would show no call here.
    calls = {front: called for front, (_, called) in answers.items()}
    assert calls == {front: ["search.query"] for front in answers}


# -- what the CLI needed from the dispatcher ----------------------------------------------------


def test_doc_indexed_says_which_paths_the_index_holds(rpc, tmp_path):
    vault = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    lexical_workspace(rpc, vault)
    paths = ["notes/onboarding.md", "notes/gone.md", "../README.md", "_schema/frontmatter.yaml",
             "notes/onboarding.md", ""]  # fmt: skip
    answer = rpc.call("doc.indexed", ["v", paths])
    protocol.conform(answer, protocol.DocsIndexed)
    assert answer == {
        "workspace": "v",
        "indexed": ["notes/onboarding.md"],
        "absent": ["notes/gone.md", "../README.md", "_schema/frontmatter.yaml", ""],
    }
    with pytest.raises(RpcError) as err:  # not text: refused at the door (issue 56)
        rpc.call("doc.indexed", ["v", ["notes/onboarding.md", "\ud800.md"]])
    assert err.value.code == INVALID_PARAMS and err.value.data["at"] == "params[1][1]"
    for bad in (["v", "notes/onboarding.md"], ["v", [1]], ["v", None], ["nope", []], ["v"]):
        with pytest.raises(RpcError) as err:
            rpc.call("doc.indexed", bad)
        assert err.value.code == INVALID_PARAMS, bad


def test_a_listeners_exception_reaches_the_caller_as_raised(rpc, tmp_path):
    """`autodoc index | head`: the closed pipe the CLI's own line hit is the CLI's to handle
    (exit 141), not an internal error; a failure of the method itself still is one."""
    vault = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    lexical_workspace(rpc, vault)

    def closed(summary: dict[str, Any]) -> None:
        raise BrokenPipeError

    with pytest.raises(BrokenPipeError):
        rpc.call("index.run", ["v"], reports=Reports(indexed=closed))
    seen: list[int] = []
    summary = rpc.call("index.run", ["v"], reports=Reports(progress=lambda d, t, p: seen.append(d)))
    assert summary["files"] == len(seen) == 8
    broken = Dispatcher(rpc.engine)
    broken.methods["index.run"] = lambda name, **reports: 1 / 0
    with pytest.raises(RpcError) as err:
        broken.call("index.run", ["v"], reports=Reports(indexed=closed))
    assert err.value.code == INTERNAL_ERROR

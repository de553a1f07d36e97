"""`autodoc serve --http`: a team's shared server. Bearer tokens (401 without or with a wrong
one, 403 for a write with a read-only one), only the configured folders, limits, and many
concurrent clients answered while the writer re-indexes."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ..conftest import EXAMPLE_VAULT, long_count

RW = "rw-token-0123456789abcdef"
RO = "ro-token-0123456789abcdef"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url: str, body: bytes | dict, token: str | None = RW) -> tuple[int, dict, dict]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read()), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}"), dict(e.headers)


def call(url: str, method: str, *params, token: str | None = RW, rid: int = 1):
    return post(url, {"jsonrpc": "2.0", "id": rid, "method": method, "params": list(params)},
                token)  # fmt: skip


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    yield from team_server(tmp_path_factory.mktemp("http"))


def launch(base: Path, command: str, tokens_text: str) -> tuple[subprocess.Popen, int, Path]:
    """`autodoc COMMAND --http` on a copy of the sample vault with these tokens: (process,
    port, vault), not yet waited for."""
    vault = base / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    tokens = base / "tokens"
    tokens.write_text(tokens_text)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "AUTODOC_TOKEN"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "autodoc", "--db", str(base / "store" / "a.db"), command,
         "--http", f"127.0.0.1:{port}", "--token-file", str(tokens), str(vault)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    return proc, port, vault


def team_server(base: Path):
    """`autodoc serve --http` on a copy of the sample vault, with a read-write and a read-only
    token: yields (url, vault, process) once the folder is indexed."""
    proc, port, vault = launch(base, "serve", f"# the team's tokens\n{RW}\n{RO} read-only\n")
    url = f"http://127.0.0.1:{port}/rpc"
    deadline = time.monotonic() + 60
    while True:
        try:
            status, answer, _ = call(url, "index.status", "vault")
            if status == 200 and answer.get("result", {}).get("documents") == 8:
                break
        except (urllib.error.URLError, ConnectionError):
            pass
        assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.2)
    yield url, vault, proc
    proc.terminate()
    proc.wait(timeout=10)


def test_no_token_or_a_wrong_one_is_401(server):
    url, _, _ = server
    for token in (None, "not-a-token-of-this-server", RW + "x"):
        status, answer, headers = call(url, "search.query", "vault", "lease", token=token)
        assert status == 401 and answer["error"]["code"] == -32001
        assert headers.get("www-authenticate", headers.get("WWW-Authenticate")).startswith("Bearer")


def test_no_cross_origin_headers(server):
    """CORS is off: a page in a browser on another origin gets no permission to call."""
    url, _, _ = server
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "workspace.list", "params": []})
    req = urllib.request.Request(url, data=body.encode(), method="POST", headers={
        "Authorization": f"Bearer {RO}", "Origin": "http://evil.example"})  # fmt: skip
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.status == 200
        assert not any(k.lower().startswith("access-control-") for k in r.headers)
    pre = urllib.request.Request(url, method="OPTIONS", headers={
        "Origin": "http://evil.example", "Access-Control-Request-Method": "POST"})  # fmt: skip
    try:
        urllib.request.urlopen(pre, timeout=30)
        raise AssertionError("a preflight was answered")
    except urllib.error.HTTPError as e:
        assert e.code in (401, 405) and "access-control-allow-origin" not in {
            k.lower() for k in e.headers
        }


def test_reads_with_either_token_and_writes_only_with_one_that_may(server):
    url, _, _ = server
    for token in (RW, RO):
        status, answer, _ = call(url, "search.query", "vault", "lease recovery", {"limit": 3},
                                 token=token)  # fmt: skip
        assert status == 200
        assert "adr/0004-lease-recovery.md" in {h["path"] for h in answer["result"]["hits"]}
    status, answer, _ = call(url, "index.run", "vault", token=RO)
    assert status == 403 and answer["error"]["code"] == -32003
    status, answer, _ = call(url, "index.run", "vault", token=RW)
    assert status == 200 and answer["result"]["files"] == 8


def test_only_the_configured_folders_and_the_served_methods(server, tmp_path):
    url, _, _ = server
    status, answer, _ = call(url, "workspace.add", "mine", str(tmp_path))
    assert status == 200 and answer["error"]["code"] == -32601  # nobody adds a folder remotely
    for method in ("workspace.remove", "workspace.configure"):
        assert call(url, method, "vault", {})[1]["error"]["code"] == -32601
    status, answer, _ = call(url, "search.query", "other", "lease")
    assert answer["error"]["code"] == -32602 and answer["error"]["data"]["workspaces"] == ["vault"]
    assert [w["name"] for w in call(url, "workspace.list")[1]["result"]] == ["vault"]
    status, answer, _ = call(url, "doc.read", "vault", "../../etc/passwd", 1, 2)
    assert answer["error"]["code"] == -32602  # confined as everywhere
    status, answer, _ = post(url, b"[1, 2]")
    assert status == 400 and answer["error"]["code"] == -32600  # no batches
    status, answer, _ = post(url, b"{not json")
    assert status == 400 and answer["error"]["code"] == -32700
    status, answer, _ = post(url, b"[" * 100_000)
    assert status == 400 and "nest deeper than 64" in answer["error"]["message"]
    # A body over 4 MB is refused from its Content-Length, before any of it is read.
    port = int(url.rsplit(":", 1)[1].split("/", 1)[0])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        head = "POST /rpc HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + RW
        s.sendall(f"{head}\r\nContent-Length: 4194305\r\n\r\n".encode())
        reply = b""
        while b'"error"' not in reply and (chunk := s.recv(65536)):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 413") and b'"code":-32602' in reply


def test_many_clients_at_once_while_the_writer_reindexes(server):
    url, vault, _ = server
    queries = ["lease recovery", "why did we pick sqlite", "reclaimBatch", "onboarding",
               "rank fusion", "postgres"]  # fmt: skip
    note = vault / "notes" / "churn.md"

    seen: set[tuple[int, int]] = set()

    def client(n: int) -> list[str]:
        errors, last = [], (0, 0)
        for i in range(long_count(20, 200)):  # AUTODOC_LONG=1: the 50 x 200
            opts = {"limit": 5, "stages": ["lexical"]}
            query = queries[(n + i) % 6]
            status, answer, _ = call(url, "search.query", "vault", query, opts, token=RO, rid=i)
            if status != 200 or "error" in answer or answer["id"] != i:
                errors.append(f"{status} {answer}")
                continue
            epoch = tuple(answer["result"]["epoch"])  # the one snapshot the hits came from
            if epoch < last:
                errors.append(f"went back from index generation {last} to {epoch}")
            last = epoch
            seen.add(epoch)
        return errors

    with ThreadPoolExecutor(max_workers=50) as pool:
        futures = [pool.submit(client, n) for n in range(50)]
        for k in range(10):  # the writer re-indexes meanwhile
            note.write_text(f"# Churn\n\nedit {k}\n")
            call(url, "index.run", "vault", token=RW)
        errors = [e for f in futures for e in f.result()]
    assert errors == []
    assert len(seen) > 1  # the answers spanned the writer's re-indexing


def test_refuses_to_listen_beyond_loopback_without_a_token(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "AUTODOC_TOKEN"}
    out = subprocess.run(
        [sys.executable, "-m", "autodoc", "--db", str(tmp_path / "a.db"), "serve", "--http",
         f"0.0.0.0:{free_port()}", str(EXAMPLE_VAULT)],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 2
    assert out.stderr.startswith("autodoc: refusing to listen on 0.0.0.0 without a token")
    weak = tmp_path / "weak"
    weak.write_text("short\n")
    out = subprocess.run(
        [sys.executable, "-m", "autodoc", "--db", str(tmp_path / "a.db"), "serve", "--http",
         f"127.0.0.1:{free_port()}", "--token-file", str(weak), str(EXAMPLE_VAULT)],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 2 and "at least 16 characters" in out.stderr


def test_tokens_are_compared_in_full_and_never_logged(server):
    from autodoc.serve.http.server import Token, Tokens

    tokens = Tokens([Token(RW, False), Token(RO, True)])
    assert tokens.check(f"Bearer {RW}") == Token(RW, False)
    assert tokens.check(f"Bearer {RO}").read_only
    assert tokens.check(f"Bearer {RW[:-1]}") is None and tokens.check(RW) is None
    assert tokens.check(None) is None and tokens.check("Basic abc") is None
    _, _, proc = server
    # Nothing the server wrote names a token (its stderr so far; it logs warnings only).
    os.set_blocking(proc.stderr.fileno(), False)
    said = (proc.stderr.read() or b"").decode()
    assert RW not in said and RO not in said


def test_mcp_over_streamable_http_with_the_sdks_client(tmp_path):
    """`autodoc mcp --http`: the same tools through the SDK's streamable-HTTP client, with the
    bearer token; without it, 401 before any MCP message."""
    import asyncio

    from mcp import Client
    from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

    from autodoc.engine import Engine

    (tmp_path / "private").mkdir()
    engine = Engine(tmp_path / "store" / "a.db")  # another workspace in the same store
    engine.workspaces.workspace_add("private", str(tmp_path / "private"))
    engine.close()
    proc, port, _ = launch(tmp_path, "mcp", f"{RO} read-only\n")
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 60
        while True:  # up once anything answers; 401 without a token
            try:
                status, answer, _ = post(url, {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                         token=None)  # fmt: skip
                break
            except (urllib.error.URLError, ConnectionError):
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.2)
        assert status == 401 and answer["error"]["code"] == -32001

        async def session() -> tuple[list[str], dict]:
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {RO}"})
            async with Client(streamable_http_client(url, http_client=http)) as client:
                names = sorted(t.name for t in (await client.list_tools()).tools)
                for _ in range(100):  # the folder is indexed in the background
                    found = await client.call_tool("find", {"name": "reclaimBatch"})
                    if not found.is_error and found.structured_content["matches"]:
                        break
                    await asyncio.sleep(0.2)
                status = (await client.call_tool("status", {})).structured_content
                private = await client.call_tool("search", {"query": "x", "workspace": "private"})
                assert [w["name"] for w in status["workspaces"]] == ["vault"]
                assert private.is_error and private.content[0].text.startswith("error -32602")
                return names, found.structured_content

        names, found = asyncio.run(session())
        assert names == ["find", "gaps", "read_span", "related", "search", "status"]
        assert found["matches"][0]["path"] == "adr/0003-embedded-sqlite-store.md"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_other_workspaces_of_the_store_stay_private(tmp_path):
    from autodoc.engine import Engine

    private = tmp_path / "private"
    private.mkdir()
    (private / "secret.md").write_text("# Salaries\n\nnot for the team server\n")
    engine = Engine(tmp_path / "store" / "a.db")
    engine.workspaces.workspace_add("private", str(private))
    engine.close()
    proc, port, _ = launch(tmp_path, "serve", f"{RW}\n")
    url = f"http://127.0.0.1:{port}/rpc"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                listed = call(url, "workspace.list")[1]["result"]
                if listed:
                    break
            except (urllib.error.URLError, ConnectionError, KeyError):
                pass
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.2)
        assert [w["name"] for w in listed] == ["vault"]
        answer = call(url, "search.query", "private", "salaries")[1]
        assert answer["error"]["code"] == -32602
    finally:
        proc.terminate()
        proc.wait(timeout=10)

"""Every limit of issue 22 on every front end: a nesting bomb, a huge request, a huge query,
a huge file read without a range, loose types and unknown keys each get their documented
JSON-RPC error, fast, on the CLI, the LSP server over stdio and the MCP server through the SDK's
own client, and the server keeps serving."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from autodoc.engine import Engine
from autodoc.serve.dispatcher import Dispatcher
from autodoc.wire import limits
from autodoc.wire.errors import RpcError

from ..conftest import REPO, lexical_workspace, write
from .test_fuzz import Wire
from .test_mcp import McpSession, first_state, wait_until

BOMB = "[" * 50_000 + "]" * 50_000


def nested(depth: int):
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.fixture
def vault(tmp_path):
    root = tmp_path / "vault"
    write(root, "a.md", "# A\n\nalpha beta\n")
    write(root, "long.md", "".join(f"line {n}\n" for n in range(1, 1001)))
    write(root, "wide.md", "".join("w" * 999 + "\n" for _ in range(100)))
    write(root, "one.md", "x" * 100_000 + "\n")
    return root


def test_the_depth_check_walks_without_recursion():
    assert not limits.too_deep(nested(limits.MAX_DEPTH))
    assert limits.too_deep(nested(limits.MAX_DEPTH + 1))
    assert limits.too_deep(nested(100_000))  # a Python-built bomb: no RecursionError
    assert limits.text_depth(BOMB) == limits.MAX_DEPTH + 1  # counting stops past the limit
    assert limits.text_depth('["[[[[", {"a": "]]]"}]') == 2  # brackets in strings do not count
    assert limits.request_id('{"jsonrpc":"2.0","params":{"id":9},"id":7}') == 7
    assert limits.request_id('{"id":"a\\"b"}') == 'a\\"b' and limits.request_id("[[[") is None
    # an id one level down, after a nested object has closed, is not the request's
    assert limits.request_id('{"params":{"x":{"y":1},"id":3},"id":7}') == 7
    assert limits.text_depth("[[1],[2]]") == 2 and limits.text_depth("[[[],[[]]]]") == 4
    assert limits.text_depth("[[],[[]]]") == 3
    assert limits.too_deep([nested(limits.MAX_DEPTH + 1), 1])  # a scalar does not end the walk


def test_the_dispatcher_refuses_deep_params_and_long_queries(rpc, vault):
    lexical_workspace(rpc, vault)
    with pytest.raises(RpcError) as exc:
        rpc.call("search.query", ["v", "alpha", {"facets": nested(limits.MAX_DEPTH)}])
    assert exc.value.to_dict() == {
        "code": -32602,
        "message": "params nest deeper than 64 levels",
        "data": {"limit": 64},
    }
    for text, message in (
        ("x" * (limits.MAX_QUERY_CHARS + 1), "query is longer than 4000 characters"),
        (" ".join(["w"] * (limits.MAX_QUERY_WORDS + 1)), "query has more than 64 words"),
    ):
        with pytest.raises(RpcError) as exc:
            rpc.call("search.query", ["v", text])
        assert (exc.value.code, exc.value.message) == (-32602, message)
        assert exc.value.data["field"] == "query"
    assert rpc.call("search.query", ["v", "alpha " + "x" * 3990])["query"]  # at the limit
    assert rpc.call("search.query", ["v", " ".join(["alpha"] * 64)])["hits"]


def test_a_long_read_is_cut_with_the_line_to_ask_for_next(rpc, vault):
    lexical_workspace(rpc, vault)
    got = rpc.call("doc.read", ["v", "long.md"])
    assert (got["line_start"], got["line_end"], got["lines_total"]) == (1, 400, 1000)
    assert got["truncated"] is True and got["next_line"] == 401
    text, line = [], 1
    while True:  # following next_line reads the whole file, each line once
        got = rpc.call("doc.read", ["v", "long.md", line])
        text.append(got["text"])
        if not got.get("truncated"):
            break
        line = got["next_line"]
    assert "\n".join(text) == "\n".join(f"line {n}" for n in range(1, 1001))
    wide = rpc.call("doc.read", ["v", "wide.md"])  # 1 KB lines: the 64 KB cap comes first
    assert wide["line_end"] == 64 and wide["next_line"] == 65
    assert len(wide["text"].encode()) <= limits.READ_MAX_BYTES
    one = rpc.call("doc.read", ["v", "one.md"])  # one line longer than the cap: shortened
    assert len(one["text"]) == limits.READ_MAX_BYTES and one["truncated"] and one["line_end"] == 1
    exact = rpc.call("doc.read", ["v", "long.md", 10, 12])
    assert exact["text"] == "line 10\nline 11\nline 12" and "truncated" not in exact


def test_a_100_mb_file_read_without_a_range_stays_small(tmp_path):
    """Read in blocks from the descriptor: the read allocates a block and the window, not the
    file (before: the whole file and its decoded text, several times 100 MB)."""
    root = tmp_path / "vault"
    root.mkdir()
    with open(root / "huge.md", "wb") as fh:
        line = b"y" * 99 + b"\n"
        for _ in range(10):
            fh.write(line * 100_000)  # 100 MB
    script = f"""
import json, tracemalloc
from autodoc.serve.dispatcher import Dispatcher
from autodoc.engine import Engine
rpc = Dispatcher(Engine({str(tmp_path / "s" / "autodoc.db")!r}))
rpc.call("workspace.add", ["v", {str(root)!r}])
rpc.call("workspace.configure", ["v", {{"embedding": "none", "max_file_mb": 200}}])
tracemalloc.start()
got = rpc.call("doc.read", ["v", "huge.md"])
peak = tracemalloc.get_traced_memory()[1]
print(json.dumps([got["lines_total"], got["line_end"], got["next_line"], peak / 1e6]))
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert out.returncode == 0, out.stderr
    total, end, next_line, peak_mb = json.loads(out.stdout)
    assert (total, end, next_line) == (1_000_000, 400, 401)
    print(f"peak allocation {peak_mb:.1f} MB reading 400 lines of a 100 MB file")
    assert peak_mb < 10


def test_the_cli_answers_a_nesting_bomb_with_a_sentence_and_json(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "autodoc", "--db", str(tmp_path / "s.db"), "--call",
         "workspace.list", BOMB],
        capture_output=True, text=True, timeout=60, cwd=REPO,
    )  # fmt: skip
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr == "autodoc: params nest deeper than 64 levels\n"
    assert json.loads(out.stdout)["error"] == {
        "code": -32602,
        "message": "params nest deeper than 64 levels",
        "data": {"limit": 64},
    }


def test_the_cli_refuses_a_long_query_and_a_string_line_number(tmp_path, vault):
    db = tmp_path / "c.db"
    setup = Dispatcher(Engine(db))  # indexed here, lexical only: the CLI calls are what is tested
    lexical_workspace(setup, vault)
    setup.engine.close()
    run = lambda *a: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "autodoc", "--db", str(db), *a],
        capture_output=True, text=True, timeout=60, cwd=REPO,
    )  # fmt: skip
    for method, params, message in (
        ("search.query", ["v", "q" * 5000], "query is longer than 4000 characters"),
        ("doc.read", ["v", "a.md", "1"], "line_start must be a positive integer"),
        ("doc.read", ["v", "a.md", True], "line_start must be a positive integer"),
    ):
        out = run("--call", method, json.dumps(params))
        assert out.returncode == 2 and out.stderr == f"autodoc: {message}\n"
        error = json.loads(out.stdout)["error"]
        assert (error["code"], error["message"]) == (-32602, message)


def test_the_lsp_server_answers_a_nesting_bomb_and_deep_params(tmp_path, vault):
    wire = Wire(vault, tmp_path / "lsp" / "autodoc.db")
    try:
        rid = iter(range(1000, 2000))  # the folder is added in the background: wait for it
        wait_until(
            lambda: any(
                w["name"] == "vault"
                for w in wire.request(next(rid), "autodoc/workspace.list", [])["result"]
            )
        )
        started = time.monotonic()
        wire.send_raw(('{"jsonrpc":"2.0","id":5,"method":"autodoc/workspace.list","params":'
                       + BOMB + "}").encode())  # fmt: skip
        assert wire.answer(5)["error"] == {  # measured before parsing, answered to its id
            "code": -32602,
            "message": "params nest deeper than 64 levels",
            "data": {"limit": 64},
        }
        body = ('{"jsonrpc":"2.0","id":9,"method":"autodoc/search.query","params":["vault","'
                + "q" * (limits.MAX_REQUEST_BYTES + 10) + '"]}')  # fmt: skip
        wire.send_raw(body.encode())
        assert wire.answer(9)["error"] == {
            "code": -32602,
            "message": "a request is longer than 4000000 bytes",
            "data": {"limit": 4000000},
        }
        deep = wire.request(6, "autodoc/search.query", ["vault", "alpha", {"facets": nested(100)}])
        assert deep["error"] == {
            "code": -32602,
            "message": "params nest deeper than 64 levels",
            "data": {"limit": 64},
        }
        huge = wire.request(7, "autodoc/search.query", ["vault", "q" * 1_000_000])
        assert huge["error"]["code"] == -32602 and "4000 characters" in huge["error"]["message"]
        for rid, line in ((10, "1"), (11, True)):  # integers are integers over LSP too
            loose = wire.request(rid, "autodoc/doc.read", ["vault", "a.md", line])
            assert loose["error"]["code"] == -32602
            assert loose["error"]["message"] == "line_start must be a positive integer"
        assert time.monotonic() - started < 30
        assert "result" in wire.request(8, "autodoc/workspace.list", [])  # still serving
    finally:
        wire.close()


def _peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def _server_pid(session: McpSession) -> int:
    return session.ok("status")["server"]["pid"]


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads /proc for RSS")
def test_the_mcp_server_answers_every_limit_with_its_code(tmp_path, vault):
    session = McpSession(["--db", str(tmp_path / "m" / "autodoc.db"), "mcp", str(vault)], tmp_path)
    try:
        wait_until(lambda: first_state(session, "indexing") == "ready")
        pid = _server_pid(session)
        before = _peak_rss_mb(pid)
        cases = [
            ("search", {"query": "alpha", "facets": {"a": nested(200)}}, "error -32602"),
            ("search", {"query": "q" * 1_000_000}, "error -32602: query is longer than 4000"),
            ("search", {"query": " ".join(["w"] * 65)}, "error -32602: query has more than 64"),
            ("read_span", {"path": "a.md", "line_start": "1"}, "error -32602: invalid arguments"),
            ("read_span", {"path": "a.md", "line_start": True}, "error -32602: invalid arguments"),
            ("read_span", {"path": "a.md", "line_end": "2"}, "error -32602: invalid arguments"),
            ("find", {"name": "alpha", "exact": "yes"}, "error -32602: invalid arguments"),
            ("search", {"query": "alpha", "limit": 2.5}, "error -32602: invalid arguments"),
            ("read_span", {"path": "a.md", "color": "red"}, "error -32602: invalid arguments for "
             "read_span: unknown argument 'color'"),
        ]  # fmt: skip
        for tool, args, expected in cases:
            try:
                result = session.call(tool, args)
            except Exception as exc:  # a JSON-RPC error from the wire guard, not a tool error
                assert expected.startswith("error -32602"), (tool, exc)
                assert "64 levels" in str(exc), exc
                continue
            assert result.is_error, (tool, args)
            assert result.content[0].text.startswith(expected), result.content[0].text
        after = _peak_rss_mb(pid)
        grown = after - before
        print(f"MCP server peak RSS {before:.0f} -> {after:.0f} MB over the cases (1 MB query)")
        assert grown < 100
        got = session.ok("read_span", {"path": "long.md"})
        assert got["truncated"] is True and got["next_line"] == 401
        assert session.ok("find", {"name": "a"}) is not None
    finally:
        session.close()

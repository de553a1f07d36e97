"""Property-based fuzzing (hypothesis): the query parser, every dispatcher method, and the LSP
wire. Only documented errors may come out, never -32603 (an internal error is a bug), and the
server must answer every request and stay up.

300 cases per target by default; `AUTODOC_LONG=1` runs 10,000.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autodoc.engine import Engine
from autodoc.parse.query_parser import parse_query
from autodoc.serve.dispatcher import Dispatcher
from autodoc.wire import link_answers, protocol
from autodoc.wire.errors import INTERNAL_ERROR, RpcError

from ..conftest import EXAMPLE_VAULT, long_count

CASES = long_count(300, 10_000)
DOCUMENTED = {-32700, -32600, -32601, -32602, -32603, -32800, -32065, -32067, -32069, -32070}
FUZZ = settings(
    max_examples=CASES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    database=None,
)

json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
)
json_value = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)
query_text = st.text(
    alphabet=st.characters(codec="utf-8") | st.sampled_from(list('":*-# \\/\x00tag:status:')),
    max_size=80,
)


@FUZZ
@given(query_text)
def test_the_query_parser_takes_any_text(text):
    declared = {"status", "type", "tag"}
    q = parse_query(text, declared.__contains__)
    assert all(i.text for i in q.items)
    assert all(f.field in declared and f.value for f in q.facets)
    assert parse_query(text).facets == []  # without a schema nothing is a facet


@pytest.fixture(scope="module")
def rpc(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz-vault")
    import shutil

    shutil.copytree(EXAMPLE_VAULT, root, dirs_exist_ok=True)
    engine = Engine(tmp_path_factory.mktemp("fuzz-store") / "autodoc.db")
    d = Dispatcher(engine)
    d.call("workspace.add", ["v", str(root)])
    d.call("workspace.configure", ["v", {"embedding": "none"}])
    d.call("index.run", ["v"])
    yield d
    engine.close()


READ_METHODS = ["workspace.list", "index.status", "search.query", "search.find", "doc.read",
                "doc.indexed", "doc.outline", "doc.actions", "doc.lenses",
                "changes.since", "related", "links.definition",
                "links.hover", "links.references", "links.document",
                "links.diagnostics", "links.prepare_rename", "links.rename",
                "links.file_renamed", "links.complete", "links.preview", "search.opened",
                "gaps.report"]  # fmt: skip
WRITE_METHODS = ["workspace.add", "workspace.remove", "workspace.section_size",
                 "workspace.configure", "index.run", "index.paths", "index.check"]  # fmt: skip


def _documented(fn, *args) -> None:
    try:
        fn(*args)
    except RpcError as err:
        assert err.code in DOCUMENTED and err.code != INTERNAL_ERROR, err.to_dict()


@FUZZ
@given(
    method=st.sampled_from([*READ_METHODS, "nope", "", "search"]),
    params=st.one_of(json_value, st.lists(json_value, max_size=5)),
)
def test_read_methods_raise_only_documented_errors(rpc, method, params):
    _documented(rpc.call, method, params)


@FUZZ
@given(
    method=st.sampled_from(WRITE_METHODS),
    params=st.lists(json_value, max_size=4),
)
def test_write_methods_raise_only_documented_errors(rpc, tmp_path_factory, method, params):
    if method not in ("workspace.section_size", "workspace.configure") and params[:1] == ["v"]:
        params = ["w", *params[1:]]  # keep the fuzzed store's own workspace
    _documented(rpc.call, method, params)


@FUZZ
@given(
    query=query_text,
    opts=st.dictionaries(
        st.sampled_from(
            ["limit", "stages", "paths", "facets", "tags", "mode", "retrieval", "window", "bogus"]
        ),
        json_value | st.lists(st.sampled_from(["lexical", "semantic", "rerank", "x"])),
        max_size=4,
    ),
)
def test_search_with_any_query_and_options(rpc, query, opts):
    _documented(rpc.call, "search.query", ["v", query, opts])


@FUZZ
@given(
    name=query_text | json_value,
    opts=st.dictionaries(st.sampled_from(["exact", "limit", "bogus"]), json_value, max_size=3),
)
def test_find_with_any_name_and_options(rpc, name, opts):
    _documented(rpc.call, "search.find", ["v", name, opts])


@FUZZ
@given(
    path=st.sampled_from(
        ["README.md", "adr/0004-lease-recovery.md", "../README.md", "/etc/passwd", ""]
    )
    | json_value,
    line=st.none() | st.integers(-3, 10**6) | json_value,
    opts=st.dictionaries(
        st.sampled_from(["limit", "include_self", "bogus"]), json_value, max_size=3
    ),
)
def test_related_with_any_path_line_and_options(rpc, path, line, opts):
    _documented(rpc.call, "related", ["v", path, line, opts])


LINK_PATHS = ["README.md", "adr/0004-lease-recovery.md", "notes/none.md", "../README.md", ""]
link_opts = st.dictionaries(
    st.sampled_from(["text", "units", "bogus"]),
    query_text | st.sampled_from(["utf-8", "utf-16", "utf-32", "utf-7"]) | json_value,
    max_size=3,
)


@FUZZ
@given(
    method=st.sampled_from(
        ["links.definition", "links.hover", "links.references", "links.complete"]
    ),
    path=st.sampled_from(LINK_PATHS) | json_value,
    line=st.integers(-3, 60) | st.integers(-(2**63), 2**63) | json_value,
    character=st.integers(-3, 120) | st.integers(-(2**63), 2**63) | json_value,
    opts=st.none() | link_opts,
)
def test_link_positions_with_any_path_line_character_and_options(
    rpc, method, path, line, character, opts
):
    _documented(rpc.call, method, ["v", path, line, character, opts])


@FUZZ
@given(
    method=st.sampled_from(["links.document", "links.diagnostics", "doc.outline"]),
    path=st.sampled_from(LINK_PATHS) | json_value,
    opts=st.none() | link_opts,
)
def test_document_links_with_any_path_and_options(rpc, method, path, opts):
    _documented(rpc.call, method, ["v", path, opts])


LINK_BITS = "[[ ]] ]( ) [ # ^ | / ../ ` 0003 Search ß 😀 %20 adr/".split()  # noqa: SIM905
link_text = st.lists(
    st.sampled_from([*LINK_BITS, " ", "\n", "\r", "```\n", "---\n"]) | st.text(max_size=4),
    max_size=24,
).map("".join)


@FUZZ
@given(
    text=link_text,
    line=st.integers(1, 8),
    character=st.integers(0, 90),
    units=st.sampled_from(["utf-8", "utf-16", "utf-32"]),
)
def test_completion_takes_any_text_at_any_position(rpc, text, line, character, units):
    """Whatever the editor holds around the cursor, `links.complete` answers its wire type
    (or a documented error), and `links.preview` of every entry too."""
    try:
        got = rpc.call("links.complete", ["v", "notes/onboarding.md", line, character,
                                          {"text": text, "units": units, "limit": 5}])  # fmt: skip
    except RpcError as err:
        assert err.code in DOCUMENTED and err.code != INTERNAL_ERROR, err
        return
    protocol.conform(got, link_answers.LinkCompletion)
    assert len(got["items"]) <= 5
    for item in got["items"]:
        if item["path"]:
            preview = rpc.call("links.preview", ["v", item["path"], item["line"] or None])
            protocol.conform(preview, link_answers.LinkPreview)


def test_every_method_is_fuzzed(rpc):
    assert set(READ_METHODS) | set(WRITE_METHODS) == set(rpc.methods)


# -- the LSP wire ------------------------------------------------------------------------------


class Wire:
    """`autodoc serve` on pipes, spoken to frame by frame."""

    def __init__(self, root: Path, db: Path) -> None:
        env = dict(os.environ, AUTODOC_DB=str(db))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "autodoc", "serve", "--log-level", "ERROR"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.buffer = b""
        self.request(1, "initialize", {"processId": None, "rootUri": root.as_uri(),
                                       "capabilities": {}})  # fmt: skip
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})

    def send_raw(self, body: bytes) -> None:
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def send(self, message) -> None:
        self.send_raw(json.dumps(message).encode())

    def request(self, rid, method, params) -> dict:
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return self.answer(rid)

    def _read_message(self, timeout: float) -> dict | None:
        deadline = time.monotonic() + timeout
        while True:
            head, sep, rest = self.buffer.partition(b"\r\n\r\n")
            if sep:
                length = int(
                    next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length"))
                    .split(b":")[1]
                )  # fmt: skip
                if len(rest) >= length:
                    self.buffer = rest[length:]
                    return json.loads(rest[:length])
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                if not chunk:
                    raise AssertionError("the server closed its output")
                self.buffer += chunk

    def answer(self, rid, timeout: float = 20.0) -> dict:
        """The response to `rid` (server notifications and requests are skipped)."""
        while True:
            message = self._read_message(timeout)
            assert message is not None, f"no answer to request {rid!r}"
            if "method" in message:
                if "id" in message:  # a server request (progress token, configuration)
                    self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
                continue
            if message.get("id") == rid or rid is None:
                return message

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture(scope="module")
def wire(tmp_path_factory):
    import shutil

    root = tmp_path_factory.mktemp("wire-vault")
    shutil.copytree(EXAMPLE_VAULT, root, dirs_exist_ok=True)
    (root / ".autodoc").write_text("")
    w = Wire(root, tmp_path_factory.mktemp("wire-store") / "autodoc.db")
    yield w
    w.close()


LSP_METHODS = [
    "autodoc/search.query",
    "autodoc/doc.read",
    "autodoc/index.status",
    "autodoc/workspace.list",
    "workspace/symbol",
    "workspace/executeCommand",
    "textDocument/didSave",
    "autodoc/nope",
    "$/cancelRequest",
    "shutdown-not",
]
frames = st.one_of(
    st.binary(max_size=60).map(lambda b: ("raw", b)),
    json_value.map(lambda v: ("json", v)),
    st.tuples(st.sampled_from(LSP_METHODS), json_value).map(lambda mp: ("request", mp)),
)


@FUZZ
@given(frame=frames)
def test_the_server_answers_any_frame_and_stays_up(wire, frame):
    kind, value = frame
    wire.counter = getattr(wire, "counter", 100) + 1
    rid = wire.counter
    if kind == "raw":
        wire.send_raw(value)
    elif kind == "json":
        wire.send(value)
    else:
        method, params = value
        wire.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        reply = wire.answer(rid)
        assert "result" in reply or reply["error"]["code"] in DOCUMENTED, reply
        assert reply.get("error", {}).get("code") != INTERNAL_ERROR, reply
    # Whatever came before, a well-formed request is still answered.
    ok = wire.request(f"check-{rid}", "autodoc/workspace.list", [])
    assert "result" in ok, ok


@FUZZ
@given(
    paths=st.lists(
        st.sampled_from(["README.md", "../README.md", ""]) | query_text | json_value, max_size=5
    )
    | json_value
)
def test_doc_indexed_with_any_paths(rpc, paths):
    _documented(rpc.call, "doc.indexed", ["v", paths])

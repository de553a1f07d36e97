"""`autodoc mcp` end to end: the MCP SDK's own client over stdio against the real server."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from autodoc.serve.mcp.compact_answers import HIT_FIELDS
from autodoc.wire import protocol

from ..conftest import REPO, STAGE_SETS, long_count, snippet_in
from .test_fuzz import DOCUMENTED, json_value

API_VAULT = REPO / "tests" / "fixtures" / "api-vault"
WAIT_S = 60.0


class McpSession:
    """One server process and one SDK client, driven from sync tests: the client lives in a
    thread of its own with its own event loop (anyio contexts must open and close in one task)."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AUTODOC_")}
        self.params = StdioServerParameters(
            command=sys.executable, args=["-m", "autodoc", *args], env=env, cwd=str(cwd)
        )
        self.loop = asyncio.new_event_loop()
        self.ready = concurrent.futures.Future()
        self.stop: asyncio.Event | None = None
        self.client: Client | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        self.ready.result(timeout=WAIT_S)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self._main())

    async def _main(self) -> None:
        self.stop = asyncio.Event()
        try:
            async with Client(self.params, read_timeout_seconds=WAIT_S) as client:
                self.client = client
                self.ready.set_result(True)
                await self.stop.wait()
        except BaseException as exc:  # surfaced to the test that waits for readiness
            if not self.ready.done():
                self.ready.set_exception(exc)
            else:
                raise

    def run(self, coro_fn) -> Any:
        future = asyncio.run_coroutine_threadsafe(coro_fn(self.client), self.loop)
        return future.result(timeout=WAIT_S)

    def call(self, tool: str, args: dict[str, Any] | None = None):
        return self.run(lambda c: c.call_tool(tool, args or {}))

    def ok(self, tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
        result = self.call(tool, args)
        assert not result.is_error, result.content[0].text
        text = result.content[0].text
        assert json.loads(text) == result.structured_content  # the same answer, twice
        assert "\n" not in text  # compact for a model's context
        return result.structured_content

    def close(self) -> None:
        if self.stop is not None:
            self.loop.call_soon_threadsafe(self.stop.set)
        self.thread.join(timeout=WAIT_S)


def wait_until(check, timeout: float = WAIT_S, every: float = 0.2):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(every)


def first_state(session, key: str):
    """The first workspace's `key`, or None while the server has not added its folder yet (a
    status asked for right after the start may list no workspace)."""
    workspaces = session.ok("status")["workspaces"]
    return workspaces[0][key] if workspaces else None


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    base = tmp_path_factory.mktemp("mcp")
    root = base / "vault"
    shutil.copytree(API_VAULT, root)
    db = base / "store" / "autodoc.db"
    session = McpSession(["--db", str(db), "mcp", str(root)], cwd=base)
    wait_until(lambda: first_state(session, "indexing") == "ready")
    wait_until(lambda: first_state(session, "semantic") == "ready")
    yield session, root, db
    session.close()


def test_the_tools_are_listed_with_descriptions_for_a_model(served):
    session, _, _ = served
    tools = {t.name: t for t in session.run(lambda c: c.list_tools()).tools}
    assert set(tools) == {"search", "find", "read_span", "related", "status", "gaps"}
    for tool in tools.values():
        assert len(tool.description) > 150  # what it returns and when to use it
        assert tool.annotations.read_only_hint is True
    assert "read_span" in tools["search"].description and "find" in tools["search"].description
    props = tools["search"].input_schema["properties"]
    assert {"query", "workspace", "limit", "stages", "facets", "paths"} <= set(props)
    assert tools["search"].input_schema["required"] == ["query"]
    assert set(tools["read_span"].input_schema["properties"]) == {
        "path",
        "line_start",
        "line_end",
        "workspace",
    }
    assert {"name", "exact"} <= set(tools["find"].input_schema["properties"])


def test_status_names_the_served_workspace(served):
    session, root, _ = served
    status = session.ok("status")
    protocol.conform(status, protocol.Status)
    (ws,) = status["workspaces"]
    assert ws["root"] == str(root.resolve()) and ws["served"] is True
    assert ws["documents"] == 5 and ws["chunks"] > 5
    assert ws["semantic"] == "ready" and ws["semantic_coverage"]["embedded"] == ws["chunks"]
    assert ws["rank"]["state"] == "off" and status["refused"] == []
    assert status["server"]["writer"] is True and status["server"]["watching"] is True


def test_search_returns_compact_spans_to_read(served):
    session, root, _ = served
    answer = session.ok("search", {"query": "how do I cancel an order before it ships", "limit": 3})
    assert 1 <= len(answer["hits"]) <= 3
    top = answer["hits"][0]
    assert set(top) == set(HIT_FIELDS)
    assert top["path"] == "api/orders.md" and top["line_start"] <= 29 <= top["line_end"]
    assert answer["stages"]["performed"] == ["lexical", "semantic"]
    assert answer["stages"]["skipped"] == {"rerank": "no ranker configured"}
    # read just that span: exactly the file's lines
    span = session.ok(
        "read_span",
        {"path": top["path"], "line_start": top["line_start"], "line_end": top["line_end"]},
    )
    lines = (root / top["path"]).read_text().split("\n")
    assert span["text"] == "\n".join(lines[top["line_start"] - 1 : top["line_end"]])
    assert span["lines_total"] == len(lines) - 1  # the file ends with a newline
    assert "cancel_order" in span["text"]


def test_search_answers_as_the_cli_does(served):
    """One dispatcher behind every front end: the CLI on the same store gives the same hits."""
    session, _, db = served
    query = "passkey sign in session challenge"
    answer = session.ok("search", {"query": query, "limit": 5})
    params = json.dumps(["vault", query, {"limit": 5}])
    out = subprocess.run(
        [sys.executable, "-m", "autodoc", "--db", str(db), "--call", "search.query", params],
        capture_output=True,
        text=True,
        check=True,
    )
    cli = json.loads(out.stdout)
    assert [(h["path"], h["line_start"], h["line_end"]) for h in answer["hits"]] == [
        (h["path"], h["line_start"], h["line_end"]) for h in cli["hits"]
    ]
    assert answer["hits"][0]["path"] == "api/auth.md"


def test_search_filters_and_stages(served):
    session, _, _ = served
    answer = session.ok("search", {"query": "order", "paths": ["guides/"], "stages": ["lexical"]})
    assert answer["hits"] and all(h["path"].startswith("guides/") for h in answer["hits"])
    assert answer["stages"]["performed"] == ["lexical"]
    tagged = session.ok("search", {"query": "tag:api order"})
    assert {h["path"] for h in tagged["hits"]} == {"api/orders.md"}
    assert tagged["filter"]


def test_a_documents_title_comes_first(served):
    session, _, _ = served
    answer = session.ok("search", {"query": "Authentication", "limit": 3})
    assert answer["hits"][0]["path"] == "api/auth.md" and "exact" in answer["hits"][0]["via"]


def test_find_then_read_the_section(served):
    session, _, _ = served
    found = session.ok("find", {"name": "orderRequest"})
    match = next(m for m in found["matches"] if m["name"] == "placeOrderRequest")
    assert match["match"] == "partial" and match["path"] == "api/orders.md"
    span = session.ok(
        "read_span",
        {"path": match["path"], "line_start": match["line_start"], "line_end": match["line_end"]},
    )
    assert span["text"].startswith("## placeOrderRequest")
    assert "interface placeOrderRequest {" in span["text"]
    exact = session.ok("find", {"name": "GetWebAuthnSession", "exact": True})
    assert [m["path"] for m in exact["matches"]] == ["api/auth.md"]


def test_related_sections_of_a_document_with_their_reasons(served):
    session, _, _ = served
    answer = session.ok("related", {"path": "api/orders.md", "limit": 3})
    assert answer["path"] == "api/orders.md" and answer["semantic"] == "ready"
    assert 1 <= len(answer["hits"]) <= 3
    for hit in answer["hits"]:
        assert set(hit) == {"path", "line_start", "line_end", "breadcrumb", "snippet",
                            "similarity", "reasons"}  # fmt: skip
        assert hit["path"] != "api/orders.md" and "similar" in hit["reasons"]
        assert 0.0 < hit["similarity"] < 1.0
    sims = [h["similarity"] for h in answer["hits"]]
    assert sims == sorted(sims, reverse=True)  # no links here: meaning alone orders them
    section = session.ok("related", {"path": "api/orders.md", "line": 5, "limit": 2})
    assert section["line_start"] <= 5 <= section["line_end"] or section["line_start"] > 5
    bad = session.call("related", {"path": "../../etc/passwd"})
    assert bad.is_error and bad.content[0].text.startswith("error -32602:")
    bad = session.call("related", {"path": "api/orders.md", "line": 0})
    assert bad.is_error and bad.content[0].text.startswith("error -32602:")


def test_errors_are_tool_errors_with_the_json_rpc_code(served):
    session, _, _ = served
    cases = [
        ("read_span", {"path": "../../etc/passwd"}, "error -32602: path is outside"),
        ("read_span", {"path": "api/orders.md", "line_start": 500}, "error -32602: line_start"),
        ("search", {"query": "x", "workspace": "nope"}, "error -32602: unknown workspace"),
        ("search", {"query": "status:accepted"}, None),  # undeclared field: words, no error
        ("search", {"query": "x", "limit": 0}, "error -32602: invalid arguments for search"),
        ("search", {"query": "x", "limit": "many"}, "error -32602: invalid arguments"),
        ("search", {}, "error -32602: invalid arguments for search: query"),
        ("find", {"name": "::"}, "error -32602: name has no letters"),
        ("no_such_tool", {}, "error -32601: unknown tool"),
    ]
    for tool, args, expected in cases:
        result = session.call(tool, args)
        if expected is None:
            assert not result.is_error
            continue
        assert result.is_error, (tool, args)
        assert result.content[0].text.startswith(expected), result.content[0].text
    # the server is still up
    assert session.ok("status")["workspaces"][0]["indexing"] == "ready"


def test_edits_on_disk_reach_the_agent(served):
    session, root, _ = served
    (root / "api" / "payments.md").write_text(
        "# Payments\n\n## captureFundsRequest\n\nCaptures an authorised payment.\n"
    )

    def found():
        answer = session.ok("find", {"name": "capture funds"})
        return answer["matches"]

    match = wait_until(found)[0]
    assert (match["name"], match["path"], match["match"]) == (
        "captureFundsRequest",
        "api/payments.md",
        "prefix",
    )


def test_a_span_served_to_an_agent_is_never_stale(served):
    """A file rewritten on disk after the server started: whichever stages answer, no hit
    points at its old lines, and `read_span` of every hit holds the hit's snippet."""
    session, root, _ = served
    path = root / "guides" / "checkout.md"
    path.write_text("# Moved\n\n" + "padding line\n" * 30 + path.read_text())

    def spans_hold(stages: list[str]) -> bool:
        answer = session.ok("search", {"query": "test card staging", "stages": stages})
        assert answer["stages"]["performed"] == stages
        for hit in answer["hits"]:
            args = {k: hit[k] for k in ("path", "line_start", "line_end")}
            assert snippet_in(hit["snippet"], session.ok("read_span", args)["text"]), (stages, hit)
        return any(h["path"] == "guides/checkout.md" for h in answer["hits"])

    for stages in STAGE_SETS:
        spans_hold(stages)
    # the new text is indexed (and embedded) in the background, then found at its new lines
    for stages in STAGE_SETS:
        wait_until(lambda s=stages: spans_hold(s))


def test_a_file_found_stale_is_reindexed_without_a_watcher(tmp_path):
    """With no file watcher, an answer that finds a file changed since it was indexed drops
    its hits and has it re-indexed: the next answers serve its new text, no restart."""
    root = tmp_path / "vault"
    shutil.copytree(API_VAULT, root)
    args = ["--db", str(tmp_path / "store" / "autodoc.db"), "mcp", "--no-watch", str(root)]
    session = McpSession(args, cwd=tmp_path)
    try:
        wait_until(lambda: first_state(session, "indexing") == "ready")
        query = {"query": "passkey challenge", "stages": ["lexical"]}
        assert session.ok("search", query)["hits"][0]["path"] == "api/auth.md"
        (root / "api" / "auth.md").write_text("# Auth\n\n## Tokens\n\nzebracorn rotation.\n")
        new = {"query": "zebracorn", "stages": ["lexical"]}
        assert session.ok("search", new)["hits"] == []  # not indexed yet: the watcher is off
        assert all(h["path"] != "api/auth.md" for h in session.ok("search", query)["hits"])
        hits = wait_until(lambda: session.ok("search", new)["hits"], timeout=20)
        assert [(h["path"], h["line_start"]) for h in hits] == [("api/auth.md", 3)]
    finally:
        session.close()


def test_a_second_server_on_a_held_store_serves_reads(served):
    """Another process (the module's server) holds the writer lease: this one answers from
    the index that process keeps, and says it is read-only."""
    _, root, db = served
    second = McpSession(["--db", str(db), "mcp", str(root)], cwd=root.parent)
    try:
        status = wait_until(
            lambda: (
                (s := second.ok("status"))["workspaces"][0]["indexing"].startswith("read-only")
                and s
            )
        )
        protocol.conform(status, protocol.Status)
        assert status["server"]["writer"] is False
        assert status["server"]["holder"].startswith("pid ")
        hits = second.ok("search", {"query": "passkey challenge", "limit": 1})["hits"]
        assert hits[0]["path"] == "api/auth.md"
    finally:
        second.close()


def test_a_folder_that_does_not_exist_is_refused(tmp_path):
    missing = str(tmp_path / "missing")
    out = subprocess.run(
        [sys.executable, "-m", "autodoc", "--db", str(tmp_path / "db"), "mcp", missing],
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.startswith("autodoc: ") and missing in out.stderr


# -- fuzzing the tools: only documented codes, and the server stays up ----------------------

ARGUMENTS = {
    "search": ["query", "workspace", "limit", "stages", "facets", "paths"],
    "find": ["name", "workspace", "exact", "limit"],
    "read_span": ["path", "line_start", "line_end", "workspace"],
    "status": [],
    "gaps": ["workspace", "since"],
}


@settings(
    max_examples=long_count(150, 5_000),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,
)
@given(data=st.data())
def test_tools_with_any_arguments_answer_documented_codes(served, data):
    session, _, _ = served
    tool = data.draw(st.sampled_from([*ARGUMENTS, "bogus"]))
    names = ARGUMENTS.get(tool, [])
    args = data.draw(
        st.dictionaries(st.sampled_from([*names, "extra"]) if names else st.just("extra"),
                        json_value, max_size=4)
    )  # fmt: skip
    result = session.call(tool, args)
    if result.is_error:
        code = int(re.match(r"error (-\d+): ", result.content[0].text).group(1))
        assert code in DOCUMENTED and code != -32603, result.content[0].text
    else:
        assert json.loads(result.content[0].text) == result.structured_content


def test_read_span_under_a_racing_swap_for_a_link_to_outside_never_leaks(tmp_path):
    """Issue 22's race through the SDK's own client: while a thread swaps the file an agent
    reads for a link to outside the vault, every `read_span` is the vault's text or a -32602."""
    from ..unit.test_confine import SECRET, _swapper

    root, out = tmp_path / "vault", tmp_path / "outside"
    (root / "d").mkdir(parents=True)
    (root / "d" / "a.md").write_text("# A\n\ninside\n")
    out.mkdir()
    (out / "a.md").write_text(SECRET.decode() + "\n")
    (root / "d" / "a.md.other").symlink_to(out / "a.md")
    session = McpSession(
        ["--db", str(tmp_path / "store" / "autodoc.db"), "mcp", str(root)], tmp_path
    )
    stop = threading.Event()
    swapper = threading.Thread(target=_swapper, args=(root / "d" / "a.md", stop))
    answered = refused = 0
    try:
        wait_until(lambda: first_state(session, "indexing") == "ready")
        swapper.start()
        for _ in range(long_count(100, 3000)):
            result = session.call("read_span", {"path": "d/a.md"})
            text = result.content[0].text
            assert SECRET.decode() not in text
            if result.is_error:
                assert text.startswith("error -32602: "), text
                refused += 1
            else:
                answered += 1
    finally:
        stop.set()
        if swapper.is_alive():
            swapper.join()
        session.close()
    print(f"read_span race: {answered + refused} calls, {answered} answered, {refused} refused")
    assert answered > 0 and refused > 0, (answered, refused)


def _lease_free(db: Path) -> bool:
    """Nobody holds the writer lease: a shared flock is taken and dropped at once."""
    import fcntl

    fd = os.open(str(db) + ".lock", os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)  # drops the shared lock, if taken
    return True


def test_status_tells_the_truth_about_the_lease_before_during_and_after_a_takeover(tmp_path):
    """A second server on a held store is read-only and names the holder; once the holder is
    killed its status never says read-only again: `taking over`, then `writer` and ready."""
    import signal

    root = tmp_path / "vault"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nalpha\n")
    db = tmp_path / "store" / "autodoc.db"
    first = McpSession(["--db", str(db), "mcp", str(root)], tmp_path)
    second = None
    try:
        wait_until(lambda: first_state(first, "indexing") == "ready")
        holder = first.ok("status")["server"]
        assert (holder["writer"], holder["lease"]) == (True, "writer")
        second = McpSession(["--db", str(db), "mcp", str(root)], tmp_path)
        before = wait_until(lambda: first_state(second, "indexing") and second.ok("status"))
        protocol.conform(before, protocol.Status)
        assert before["server"]["lease"] == "read-only" and before["server"]["writer"] is False
        assert before["server"]["holder"].startswith(f"pid {holder['pid']} ")
        assert before["workspaces"][0]["indexing"].startswith("read-only")
        os.kill(holder["pid"], signal.SIGKILL)
        wait_until(lambda: _lease_free(db), every=0.01)  # its last thread closed its files
        seen = []
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            status = second.ok("status")
            protocol.conform(status, protocol.Status)
            server, state = status["server"], status["workspaces"][0]["indexing"]
            seen.append(server["lease"])
            assert server["lease"] != "read-only" and not state.startswith("read-only"), (
                server,
                state,
                seen,
            )
            if server["lease"] == "writer" and state == "ready":
                break
            assert server["lease"] == "taking over" and server["holder"] == ""
            time.sleep(0.05)
        assert seen[-1] == "writer", seen
        hits = second.ok("search", {"query": "alpha"})["hits"]  # and it serves as the writer
        assert hits[0]["path"] == "a.md"
    finally:
        first.close()
        if second is not None:
            second.close()

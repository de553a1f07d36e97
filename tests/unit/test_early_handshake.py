"""The early handshake's parts in one process (issue 45): what is read is read again by the
SDK byte for byte, only recorded answers are sent early, the SDK's answers to them are dropped
and recorded, and anything unexpected ends the early part. The servers' own runs, with the SDK
held until the answers came, are in test_startup.py."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from autodoc.serve.early_handshake import (
    LSP_SCRIPT,
    MCP_SCRIPT,
    MISSING,
    AnswerBook,
    EarlyHandshake,
    ReplayReader,
    SdkOutput,
)


def lsp_frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\nContent-Type: x\r\n\r\n" % len(body) + body


def mcp_line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"processId": 42, "rootUri": "file:///a", "capabilities": {"x": 1}}}  # fmt: skip
INITIALIZED = {"jsonrpc": "2.0", "method": "initialized", "params": {}}
SEARCH = {"jsonrpc": "2.0", "id": 2, "method": "autodoc/search.query", "params": ["v", "q"]}
RESULT = {"capabilities": {"hoverProvider": True}, "serverInfo": {"name": "autodoc"}}


class Untouchable(io.RawIOBase):
    """A stream that must not be read (the head still holds what is asked for)."""

    def readline(self, *_: Any) -> bytes:
        raise AssertionError("read past the head")

    read = read1 = readline  # type: ignore[assignment]


def test_the_replay_gives_the_head_then_the_stream_as_one():
    reader = ReplayReader(b"ab\ncd", io.BufferedReader(io.BytesIO(b"ef\ngh")))
    assert reader.readline() == b"ab\n"
    assert reader.readline() == b"cdef\n"  # a line split between the head and the stream
    assert reader.read(1) == b"g"
    assert reader.read(5) == b"h"
    reader = ReplayReader(b"abcd", io.BufferedReader(io.BytesIO(b"efgh")))
    assert reader.read(6) == b"abcdef"
    assert reader.readline(1) == b"g"


def test_the_replay_never_waits_on_the_stream_while_the_head_has_bytes():
    reader = ReplayReader(b"abc\ndef", Untouchable())  # type: ignore[arg-type]
    assert reader.read1(1 << 16) == b"abc\ndef"  # a block read returns what it has
    reader = ReplayReader(b"abc\ndef", Untouchable())  # type: ignore[arg-type]
    assert reader.readline(2) == b"ab"
    assert reader.read(3) == b"c\nd"


@pytest.fixture
def book(tmp_path: Path) -> AnswerBook:
    return AnswerBook(tmp_path / "answers" / "lsp.json", "fp")


def key_of(message: dict[str, Any]) -> str:
    method = message["method"]
    return AnswerBook.key(method, message["params"], LSP_SCRIPT.ignored.get(method, frozenset()))


def test_where_and_who_do_not_change_the_key_what_is_asked_does():
    moved = {**INIT["params"], "processId": 7, "rootUri": "file:///b", "workspaceFolders": []}
    assert key_of({**INIT, "params": moved}) == key_of(INIT)
    other = {**INIT["params"], "capabilities": {"x": 2}}
    assert key_of({**INIT, "params": other}) != key_of(INIT)


def test_the_book_keeps_answers_for_its_fingerprint_only(book, tmp_path):
    book.record("k", RESULT)
    assert AnswerBook(book.path, "fp").get("k") == RESULT
    assert AnswerBook(book.path, "other").get("k") is MISSING  # another version's answers
    book.path.write_text("{not json")
    assert AnswerBook(book.path, "fp").get("k") is MISSING


def test_two_starts_recording_at_once_keep_both_answers(book):
    other = AnswerBook(book.path, "fp")  # loaded before `book` records
    book.record("a", 1)
    other.record("b", 2)
    assert AnswerBook(book.path, "fp").answers == {"a": 1, "b": 2}


def test_the_book_keeps_the_newest_answers(book):
    for n in range(AnswerBook.LIMIT + 3):
        book.record(f"k{n}", n)
    kept = AnswerBook(book.path, "fp").answers
    assert len(kept) == AnswerBook.LIMIT and "k0" not in kept and f"k{AnswerBook.LIMIT + 2}" in kept


def run_early(script, book, stream: bytes) -> tuple[EarlyHandshake, bytes, bytes]:
    """(the handshake, what it wrote, what the SDK reads after it)."""
    stdin, stdout = io.BufferedReader(io.BytesIO(stream)), io.BytesIO()
    handshake = EarlyHandshake(script, book)
    handshake.answer_first(stdin, stdout)
    return handshake, stdout.getvalue(), handshake.replayed(stdin).read()


def test_a_recorded_initialize_is_answered_and_the_sdk_reads_everything(book):
    book.record(key_of(INIT), RESULT)
    stream = lsp_frame(INIT) + lsp_frame(INITIALIZED) + lsp_frame(SEARCH)
    handshake, wrote, replayed = run_early(LSP_SCRIPT, book, stream)
    body = wrote.partition(b"\r\n\r\n")[2]
    assert json.loads(body) == {"jsonrpc": "2.0", "id": 1, "result": RESULT}
    assert wrote.startswith(b"Content-Length: %d\r\n\r\n" % len(body))
    assert replayed == stream  # from the start
    # it stopped at `initialized`: after it a client may send nothing for a while, and the
    # server has work to start (ask the settings, open the folders)
    assert handshake.read_so_far == lsp_frame(INIT) + lsp_frame(INITIALIZED)
    # the SDK's own answer to initialize is dropped; its answer to the search passes
    out = io.BytesIO()
    sdk = SdkOutput(out, handshake)  # type: ignore[arg-type]
    sdk.write(lsp_frame({"jsonrpc": "2.0", "id": 1, "result": RESULT}))
    sdk.write(lsp_frame({"jsonrpc": "2.0", "id": 2, "result": []}))
    assert out.getvalue() == lsp_frame({"jsonrpc": "2.0", "id": 2, "result": []})
    assert not handshake.pending


def test_an_initialize_not_recorded_is_left_to_the_sdk_and_its_answer_recorded(book):
    handshake, wrote, replayed = run_early(LSP_SCRIPT, book, lsp_frame(INIT) + lsp_frame(SEARCH))
    assert wrote == b"" and replayed == lsp_frame(INIT) + lsp_frame(SEARCH)
    assert handshake.read_so_far == lsp_frame(INIT)  # the early part ended at the miss
    out = io.BytesIO()
    SdkOutput(out, handshake).write(lsp_frame({"jsonrpc": "2.0", "id": 1, "result": RESULT}))  # type: ignore[arg-type]
    assert json.loads(out.getvalue().partition(b"\r\n\r\n")[2])["result"] == RESULT  # sent
    assert AnswerBook(book.path, "fp").get(key_of(INIT)) == RESULT


def test_an_sdk_answer_that_differs_is_recorded_and_still_dropped(book):
    book.record(key_of(INIT), RESULT)
    handshake, _, _ = run_early(LSP_SCRIPT, book, lsp_frame(INIT) + lsp_frame(INITIALIZED))
    newer = {**RESULT, "serverInfo": {"name": "autodoc", "version": "2"}}
    assert handshake.sdk_answered({"jsonrpc": "2.0", "id": 1, "result": newer})
    assert AnswerBook(book.path, "fp").get(key_of(INIT)) == newer


@pytest.mark.parametrize(
    "first",
    [
        b"Content-Length: 5\r\n\r\n{not ",  # not JSON
        b"Content-Length: 99999999999\r\n\r\n",  # longer than a request may be
        b"Content-Type: x\r\n\r\n{}",  # no length
        lsp_frame(SEARCH),  # a request the script does not answer
        lsp_frame({**INIT, "id": None}),  # an id no answer can name
    ],
)
def test_anything_unexpected_first_goes_to_the_sdk_unanswered(book, first):
    book.record(key_of(INIT), RESULT)
    stream = first + lsp_frame(INIT)
    _, wrote, replayed = run_early(LSP_SCRIPT, book, stream)
    assert wrote == b"" and replayed == stream


def test_mcp_answers_initialize_and_tools_list_and_stops_there(tmp_path):
    book = AnswerBook(tmp_path / "mcp.json", "fp")
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "x"}}
    tools = {
        "jsonrpc": "2.0",
        "id": "t",
        "method": "tools/list",
        "params": {"_meta": {"progressToken": 1}},
    }
    session = AnswerBook.key("initialize", init["params"])
    book.record(session, {"v": 1})
    # a progress token changes nothing; the session's initialize does
    book.record(AnswerBook.key("tools/list", {}, session=session), {"tools": []})
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {}}
    stream = mcp_line(init) + mcp_line({"jsonrpc": "2.0", "method": "notifications/initialized"})
    stream += mcp_line(tools) + mcp_line(call)
    handshake, wrote, replayed = run_early(MCP_SCRIPT, book, stream)
    assert [json.loads(line) for line in wrote.splitlines()] == [
        {"jsonrpc": "2.0", "id": 0, "result": {"v": 1}},
        {"jsonrpc": "2.0", "id": "t", "result": {"tools": []}},
    ]
    assert replayed == stream and not handshake.read_so_far.endswith(mcp_line(call))


def test_the_book_lives_in_the_cache_folder_never_the_working_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("AUTODOC_CACHE", "")  # set empty: unset, as XDG's variables are
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = AnswerBook.for_server(LSP_SCRIPT).path
    assert path is not None and path.parent == tmp_path / "autodoc" / "answers"
    assert path.name.startswith("lsp-")
    monkeypatch.setenv("AUTODOC_CACHE", str(tmp_path / "mine"))
    path = AnswerBook.for_server(MCP_SCRIPT).path
    assert path is not None and path.parent == tmp_path / "mine" / "answers"


def test_a_start_that_missed_initialize_records_tools_list_from_what_the_sdk_reads(tmp_path):
    book = AnswerBook(tmp_path / "mcp.json", "fp")
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    tools = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    session = AnswerBook.key("initialize", {})
    book.record(AnswerBook.key("tools/list", None, session=session), {"tools": ["old"]})
    handshake, wrote, _ = run_early(MCP_SCRIPT, book, mcp_line(init))
    assert wrote == b""  # nothing recorded: the SDK answers initialize
    for line in (mcp_line(init), mcp_line({"jsonrpc": "2.0", "method": "n"}), mcp_line(tools)):
        handshake.sdk_reads(line)  # the replayed initialize is not asked twice
    assert handshake.sdk_answered({"jsonrpc": "2.0", "id": 1, "result": {"v": 1}}) is False
    assert handshake.sdk_answered({"jsonrpc": "2.0", "id": 2, "result": {"tools": []}}) is False
    kept = AnswerBook(book.path, "fp")
    assert kept.get(session) == {"v": 1}
    assert kept.get(AnswerBook.key("tools/list", None, session=session)) == {"tools": []}


def mcp_session(version: str) -> bytes:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}}}  # fmt: skip
    return mcp_line(init) + mcp_line({"jsonrpc": "2.0", "method": "notifications/initialized"})


TOOLS_LIST = mcp_line({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})


def test_tools_list_is_answered_for_the_protocol_version_its_session_agreed(tmp_path):
    book = AnswerBook(tmp_path / "mcp.json", "fp")
    older, _, _ = run_early(MCP_SCRIPT, book, mcp_session("2025-06-18"))
    older.sdk_answered({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-06-18"}})
    older, _, _ = run_early(MCP_SCRIPT, book, mcp_session("2025-06-18") + TOOLS_LIST)
    assert not older.sdk_answered({"jsonrpc": "2.0", "id": 2, "result": {"tools": ["2025"]}})
    # a session of another version, its initialize recorded: its tools/list is the SDK's
    newer, _, _ = run_early(MCP_SCRIPT, book, mcp_session("2026-07-28"))
    newer.sdk_answered({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2026-07-28"}})
    _, wrote, _ = run_early(MCP_SCRIPT, book, mcp_session("2026-07-28") + TOOLS_LIST)
    assert [json.loads(line)["id"] for line in wrote.splitlines()] == [1]
    # the older version's session gets its own tools/list again
    _, wrote, _ = run_early(MCP_SCRIPT, book, mcp_session("2025-06-18") + TOOLS_LIST)
    assert json.loads(wrote.splitlines()[1])["result"] == {"tools": ["2025"]}


def test_a_request_of_a_session_never_opened_is_neither_answered_nor_recorded(tmp_path):
    book = AnswerBook(tmp_path / "mcp.json", "fp")
    handshake, _, _ = run_early(MCP_SCRIPT, book, b"")
    handshake.sdk_reads(TOOLS_LIST)
    assert not handshake.pending
    assert not handshake.sdk_answered({"jsonrpc": "2.0", "id": 2, "result": {"tools": []}})
    assert AnswerBook(book.path, "fp").answers == {}


def test_each_installation_keeps_its_own_book_and_old_ones_go(tmp_path):
    folder = tmp_path / "answers"
    for n in range(AnswerBook.FILES + 2):
        AnswerBook(folder / f"mcp-{n:016d}.json", str(n)).record("k", n)
    kept = sorted(f.name for f in folder.glob("mcp-*.json"))
    assert kept == [f"mcp-{n:016d}.json" for n in range(2, AnswerBook.FILES + 2)]
    assert (
        AnswerBook(folder / f"mcp-{AnswerBook.FILES + 1:016d}.json", str(AnswerBook.FILES + 1)).get(
            "k"
        )
        == AnswerBook.FILES + 1
    )


def test_an_answer_is_sent_when_the_bookkeeping_fails(book, monkeypatch):
    handshake, _, _ = run_early(LSP_SCRIPT, book, lsp_frame(INIT))

    def broken(key: str, result: Any) -> None:
        raise RuntimeError("planted")

    monkeypatch.setattr(handshake.book, "record", broken)
    out = io.BytesIO()
    frame = lsp_frame({"jsonrpc": "2.0", "id": 1, "result": RESULT})
    SdkOutput(out, handshake).write(frame)  # type: ignore[arg-type]
    assert out.getvalue() == frame

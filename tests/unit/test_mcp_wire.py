"""The MCP stdin guard on its own: any lines, any block boundaries. Every line within the size
limit passes exactly as sent (when the SDK can read it); every longer one is refused once, in
order, without being kept; a line the SDK cannot read is answered to its id instead."""

from __future__ import annotations

import io
import json

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from autodoc.serve.mcp import mcp_framing

from ..conftest import long_count


class _Sent:
    def __init__(self) -> None:
        self.messages: list = []

    async def send(self, message) -> None:
        self.messages.append(message.message)


def _run(
    data: bytes, limit: int, block: int, monkeypatch, read_as_sdk: bool = True
) -> tuple[list[str], list]:
    """The lines passed on and the answers sent; `read_as_sdk=False`: the blocks and the size
    limit alone (every line within it taken for one the SDK reads)."""
    if not read_as_sdk:
        monkeypatch.setattr(mcp_framing, "unreadable_message", lambda body: None)
    monkeypatch.setattr(mcp_framing, "MAX_REQUEST_BYTES", limit)
    monkeypatch.setattr(mcp_framing, "BLOCK", block)
    guard = mcp_framing.LineStdin(io.BytesIO(data))
    sent = _Sent()
    guard.write = sent  # type: ignore[assignment]

    async def collect() -> list[str]:
        return [line async for line in guard]

    return anyio.run(collect), sent.messages


@settings(max_examples=long_count(300, 3000), deadline=None)
@given(
    lengths=st.lists(st.integers(0, 20), max_size=12),
    limit=st.integers(1, 12),
    block=st.integers(1, 9),
    final_newline=st.booleans(),
)
def test_lines_pass_or_are_refused_whatever_the_blocks(lengths, limit, block, final_newline):
    import pytest

    lines = [(f'{{"id":{n},"x":"' + "a" * k)[:k] for n, k in enumerate(lengths)]
    data = "\n".join(lines).encode() + (b"\n" if final_newline and lines else b"")
    with pytest.MonkeyPatch.context() as mp:
        passed, refused = _run(data, limit, block, mp, read_as_sdk=False)
    pieces = data.split(b"\n")
    if pieces[-1] == b"":  # what follows the last newline: not a line
        pieces.pop()
    assert passed == [p.decode() for p in pieces if len(p) <= limit]
    assert len(refused) == sum(len(p) > limit for p in pieces)
    for error in refused:
        assert error.error.code == -32602 and error.error.data == {"limit": limit}


def test_a_deep_line_is_refused_to_its_id_and_the_next_line_passes(monkeypatch):
    deep = json.dumps({"jsonrpc": "2.0", "id": 4, "params": json.loads("[" * 70 + "]" * 70)})
    ping = '{"jsonrpc":"2.0","id":5,"method":"ping"}'
    passed, refused = _run((deep + "\n" + ping + "\n").encode(), 10_000, 64, monkeypatch)
    assert passed == [ping]
    assert refused[0].id == 4 and refused[0].error.message == "params nest deeper than 64 levels"


def test_a_line_the_sdk_cannot_read_is_answered_to_its_id_and_one_without_is_not(monkeypatch):
    """Issue 56: bad JSON -32700, a string that is not text -32602 naming it, JSON that is no
    message -32600; a line with no id is only logged; every line the SDK reads passes."""
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": "\ud800"}}}  # fmt: skip
    lines = [
        '{"jsonrpc":"2.0","id":1,"method":"ping"}',
        '{"jsonrpc":"2.0","id":2,"method":"ping"',
        json.dumps(call),
        '{"jsonrpc":"2.0","id":"four"}',
        "{not json",
        '{"jsonrpc":"2.0","method":"notifications/initialized"}',
        '{"jsonrpc":"2.0","id":6,"result":{}}',
    ]
    passed, refused = _run("\n".join(lines).encode() + b"\n", 10_000, 64, monkeypatch)
    assert passed == [lines[0], lines[5], lines[6]]
    assert [(r.id, r.error.code) for r in refused] == [(2, -32700), (3, -32602), ("four", -32600)]
    assert refused[1].error.data == {"param": "query", "at": "message.params.arguments.query"}

"""The MCP stdin guard on its own: any lines, any block boundaries. Every line within the size
limit passes exactly as sent; every longer one is refused once, in order, without being kept."""

from __future__ import annotations

import io
import json

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from autodoc.serve.mcp import mcp_framing

from .conftest import long_count


class _Sent:
    def __init__(self) -> None:
        self.messages: list = []

    async def send(self, message) -> None:
        self.messages.append(message.message)


def _run(data: bytes, limit: int, block: int, monkeypatch) -> tuple[list[str], list]:
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
        passed, refused = _run(data, limit, block, mp)
    pieces = data.split(b"\n")
    if pieces[-1] == b"":  # what follows the last newline: not a line
        pieces.pop()
    assert passed == [p.decode() for p in pieces if len(p) <= limit]
    assert len(refused) == sum(len(p) > limit for p in pieces)
    for error in refused:
        assert error.error.code == -32602 and error.error.data == {"limit": limit}


def test_a_deep_line_is_refused_to_its_id_and_the_next_line_passes(monkeypatch):
    deep = json.dumps({"jsonrpc": "2.0", "id": 4, "params": json.loads("[" * 70 + "]" * 70)})
    passed, refused = _run((deep + "\n" + '{"id":5}\n').encode(), 10_000, 64, monkeypatch)
    assert passed == ['{"id":5}']
    assert refused[0].id == 4 and refused[0].error.message == "params nest deeper than 64 levels"

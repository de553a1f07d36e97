"""The MCP wire's edge: every line measured before the SDK parses it. Used by `mcp_server.py`.

The SDK reads a whole line, however long, and parses it; a line it cannot parse (arguments
nested ~200 deep) is dropped with no answer, so the client waits forever (issue 22). Here stdin
is read in blocks: a line longer than MAX_REQUEST_BYTES is discarded as it arrives (only its
head is kept, to find its id), a line nested deeper than MAX_DEPTH is not parsed, and both are
answered with -32602 naming the limit, on the SDK's own write stream. Other lines pass as sent.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any, BinaryIO

import anyio
import anyio.to_thread
from anyio.abc import ObjectSendStream
from mcp.shared.message import SessionMessage
from mcp_types import ErrorData, JSONRPCError

from autodoc.serve.early_handshake import EarlyHandshake
from autodoc.wire.errors import RpcError
from autodoc.wire.limits import (
    MAX_DEPTH,
    MAX_REQUEST_BYTES,
    nested_too_deep,
    request_id,
    request_too_long,
    text_depth,
)

log = logging.getLogger(__name__)

BLOCK = 1 << 16
HEAD = 4096  # of a line too long to keep: enough to find its id


class LineStdin:
    """An async iterable of stdin's lines for `mcp.server.stdio.stdio_server(stdin=...)`."""

    def __init__(self, raw: BinaryIO, handshake: EarlyHandshake | None = None) -> None:
        self.raw = raw
        self.write: ObjectSendStream[SessionMessage] | None = None  # set once the server runs
        self.handshake = handshake  # told the first lines, for the answers it records

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        pending = bytearray()
        dropped = 0  # bytes of the current line thrown away (it is too long)
        head = b""
        while True:
            block = await anyio.to_thread.run_sync(self._read)
            if not block:
                break
            start = 0
            while (end := block.find(b"\n", start)) >= 0:
                piece = block[start:end]
                start = end + 1
                if not dropped and len(pending) + len(piece) > MAX_REQUEST_BYTES:
                    head, dropped = bytes((pending + piece)[:HEAD]), 1  # over in its last block
                if dropped:
                    dropped, pending = 0, bytearray()
                    await self._refuse(head, request_too_long(MAX_REQUEST_BYTES))
                    continue
                pending += piece
                line, pending = bytes(pending), bytearray()
                text = await self._checked(line)
                if text is not None:
                    yield text
            rest = block[start:]
            if dropped:
                dropped += len(rest)
            elif len(pending) + len(rest) > MAX_REQUEST_BYTES:
                head = bytes((pending + rest)[:HEAD])
                dropped, pending = len(pending) + len(rest), bytearray()
            else:
                pending += rest
        if dropped:  # the last line, too long, and no newline after it
            await self._refuse(head, request_too_long(MAX_REQUEST_BYTES))
        elif pending:
            text = await self._checked(bytes(pending))
            if text is not None:
                yield text

    def _read(self) -> bytes:
        read1 = getattr(self.raw, "read1", None)
        return read1(BLOCK) if read1 is not None else self.raw.read(BLOCK)

    async def _checked(self, line: bytes) -> str | None:
        """The line as text when it may be parsed; None (and an answer sent) when not."""
        text = line.decode("utf-8", "replace")
        if text_depth(text) > MAX_DEPTH:
            await self._refuse(line, nested_too_deep())
            return None
        if self.handshake is not None:
            self.handshake.sdk_reads(line)
        return text

    async def _refuse(self, line: bytes, refusal: RpcError) -> None:
        """`refusal` (a -32602 naming the limit), to the request's id when it can be read (null
        if not)."""
        rid = request_id(line.decode("utf-8", "replace"))
        log.warning("refused a request (id %r): %s", rid, refusal.message)
        if self.write is None:
            return
        error = ErrorData(code=refusal.code, message=refusal.message, data=refusal.data)
        await self.write.send(SessionMessage(JSONRPCError(jsonrpc="2.0", id=rid, error=error)))


class EarlyAnswered:
    """The SDK's write stream: its answers to what the early handshake answered already are
    dropped (and recorded, `EarlyHandshake.sdk_answered`); everything else passes as sent."""

    def __init__(self, stream: ObjectSendStream[SessionMessage], handshake: EarlyHandshake) -> None:
        self.stream, self.handshake = stream, handshake

    async def send(self, item: SessionMessage) -> None:
        if self.handshake.pending and self._answered_early(item):
            return
        await self.stream.send(item)

    def _answered_early(self, item: SessionMessage) -> bool:
        message = item.message
        if getattr(message, "method", None) is not None:
            return False
        try:
            if getattr(message, "id", None) not in self.handshake.pending:
                return False
            answer = json.loads(message.model_dump_json(by_alias=True, exclude_unset=True))
            return self.handshake.sdk_answered(answer)
        except Exception:  # never lose an answer to the bookkeeping: send it
            log.exception("could not check an answer against the early handshake")
            return False

    async def aclose(self) -> None:
        await self.stream.aclose()

    async def __aenter__(self) -> EarlyAnswered:
        await self.stream.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.stream.__aexit__(*exc)

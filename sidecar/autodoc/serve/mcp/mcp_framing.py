"""The MCP wire's edge: every message measured, and read as the SDK would, before the SDK
parses it. Used by `mcp_server.py` (stdio) and the HTTP servers (`CheckedBodies`).

The SDK reads a whole line, however long, and parses it; a line it cannot parse (arguments
nested ~200 deep, bad JSON, a lone UTF-16 surrogate its JSON parser rejects) is dropped with no
answer, so the client waits forever (issues 22, 56). Here stdin is read in blocks: a line longer
than MAX_REQUEST_BYTES is discarded as it arrives (only its head is kept, to find its id), a
line nested deeper than MAX_DEPTH is not parsed (-32602 naming the limit), and a line the SDK
could not read is answered as JSON-RPC says (`unreadable_message`): -32700 for bad JSON, -32602
naming the string that is not text, -32600 for JSON that is no message; on the SDK's own write
stream, to the line's id (a line with none is logged, not answered). Other lines pass as sent.
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
from mcp_types import ErrorData, JSONRPCError, jsonrpc_message_adapter
from pydantic import ValidationError
from starlette.responses import JSONResponse

from autodoc.serve.early_handshake import EarlyHandshake
from autodoc.wire.errors import INVALID_REQUEST, PARSE_ERROR, RpcError
from autodoc.wire.limits import (
    MAX_REQUEST_BYTES,
    lone_surrogate_at,
    not_text,
    request_id,
    request_too_long,
    unreadable,
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
        """The line as text when the SDK can read it; None (and an answer sent) when not."""
        refusal = unreadable(line)
        if refusal is not None:
            await self._refuse(line, refusal)
            return None
        text = line.decode("utf-8", "replace")
        if text.strip():
            found = unreadable_message(line)
            if found is not None:
                rid, why = found
                await self._refuse(line, why, rid, answer_null=False)
                return None
        if self.handshake is not None:
            self.handshake.sdk_reads(line)
        return text

    async def _refuse(
        self, line: bytes, refusal: RpcError, rid: Any = None, *, answer_null: bool = True
    ) -> None:
        """`refusal`, to the request's id (`rid`, else read from the line); with none found,
        answered with a null id when `answer_null` (a limit's refusal), else only logged."""
        rid = rid if rid is not None else request_id(line.decode("utf-8", "replace"))
        log.warning("refused a request (id %r): %s", rid, refusal.message)
        if self.write is None or (rid is None and not answer_null):
            return
        error = ErrorData(code=refusal.code, message=refusal.message, data=refusal.data)
        await self.write.send(SessionMessage(JSONRPCError(jsonrpc="2.0", id=rid, error=error)))


def unreadable_message(body: bytes) -> tuple[int | str | None, RpcError] | None:
    """Why the SDK could not read this message (already within the size and nesting limits),
    as the answer it owes and the id to send it to (None: the message carries none); None when
    the SDK reads it. The SDK's own reading decides, so nothing it accepts is refused here."""
    try:
        jsonrpc_message_adapter.validate_json(body, by_name=False)
        return None
    except ValidationError as exc:
        first = exc.errors()[0].get("msg", "") if exc.errors() else str(exc)
    text = body.decode("utf-8", "replace")
    try:
        message = json.loads(body)
    except ValueError as exc:
        return request_id(text), RpcError(PARSE_ERROR, f"parse error: {exc}")
    rid = message.get("id") if isinstance(message, dict) else None
    if not isinstance(rid, (int, str)) or isinstance(rid, bool):
        rid = None
    at = lone_surrogate_at(message)
    if at is not None:
        parts = at.split(".")
        name = parts[3] if parts[1:3] == ["params", "arguments"] and len(parts) > 3 else None
        return rid, not_text(at, name, root="message")
    return rid, RpcError(INVALID_REQUEST, f"not a JSON-RPC 2.0 message: {first}")


class CheckedBodies:
    """ASGI middleware in front of the SDK's streamable HTTP app: each POSTed body passes the
    size and nesting guard and is read as the SDK would before the SDK parses it, so a body it
    could not read gets a JSON-RPC answer (HTTP 400) naming why, as `LineStdin` answers a line."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.router = app.router  # the SDK app's: a host app runs its lifespan through it

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        body, more = bytearray(), True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client went away mid-body
                log.info("a client closed its connection before its request's body arrived")
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > MAX_REQUEST_BYTES:
                break
        data = bytes(body)
        refusal = unreadable(data)
        found = (
            (request_id(data[:4096].decode("utf-8", "replace")), refusal)
            if refusal
            else (unreadable_message(data) if data.strip() else None)
        )
        if found is not None:
            rid, why = found
            log.warning("refused a request (id %r): %s", rid, why.message)
            answer = {"jsonrpc": "2.0", "id": rid, "error": why.to_dict()}
            await JSONResponse(answer, status_code=400)(scope, receive, send)
            return
        sent = False

        async def replay() -> Any:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": data, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


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

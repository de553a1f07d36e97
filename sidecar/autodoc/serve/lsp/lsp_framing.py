"""The LSP wire's edges: every body measured before it is parsed, every malformed message
answered (never dropped), our errors as JSON-RPC errors, logs to the client, settings read
safely (URIs: `file_uris`). Used by `lsp_server.py` and `lsp_entry.py`; it knows no server class."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from typing import Any, BinaryIO

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.protocol import JsonRPCRequestMessage, LanguageServerProtocol

from autodoc.serve.early_handshake import LspWire
from autodoc.wire import workspace_options
from autodoc.wire.errors import INVALID_PARAMS, INVALID_REQUEST, RpcError
from autodoc.wire.limits import (
    MAX_REQUEST_BYTES,
    request_id,
    request_too_long,
    unreadable,
)


class _Invalid:
    """A request whose params could not be read: answered with -32602, never dispatched."""

    def __init__(self, msg_id: Any, method: str, reason: str) -> None:
        self.id, self.method, self.reason = msg_id, method, reason


class _Refused:
    """A request the wire guard measured and refused before parsing: answered, not dispatched."""

    def __init__(self, msg_id: Any, error: dict[str, Any]) -> None:
        self.id, self.error = msg_id, error


# The method name the guard gives a refused body; no client can send it (it starts with `$/`
# and a space, which no LSP method has).
REFUSED = "$/ refused"


class FramedStdin:
    """stdin as pygls reads it (`readline`, `read(n)`), each body measured before it is parsed:
    one longer than MAX_REQUEST_BYTES is read in blocks and thrown away, one nested deeper than
    MAX_DEPTH is not handed on; pygls gets a small stand-in naming the request's id, which
    `AutodocProtocol` answers with -32602 and the limit."""

    HEADER_LIMIT = LspWire.HEADER_LIMIT

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw

    def readline(self) -> bytes:
        return self.raw.readline(self.HEADER_LIMIT)

    def read(self, n: int) -> bytes:
        if n > MAX_REQUEST_BYTES:
            head = self.raw.read(min(n, 4096))
            left = n - len(head)
            while left > 0:
                block = self.raw.read(min(left, 1 << 20))
                if not block:
                    break
                left -= len(block)
            return self._stand_in(head, request_too_long())
        body = self.raw.read(n)
        refusal = unreadable(body)
        if refusal is not None:
            return self._stand_in(body, refusal)
        return body

    @staticmethod
    def _stand_in(body: bytes, refusal: RpcError) -> bytes:
        rid = request_id(body.decode("utf-8", "replace"))
        stand_in = {"jsonrpc": "2.0", "id": rid, "method": REFUSED, "params": refusal.to_dict()}
        return json.dumps(stand_in).encode()


class AutodocProtocol(LanguageServerProtocol):
    def structure_message(self, data: dict[str, Any]):
        if "jsonrpc" not in data:
            return data  # a nested object, or a top-level one that is not JSON-RPC
        method = data.get("method")
        if method == REFUSED:
            return _Refused(data.get("id"), data.get("params") or {})
        if isinstance(method, str) and method.startswith("autodoc/") and "id" in data:
            # Our methods take a JSON array: keep it as sent (pygls would make tuples of objects).
            return JsonRPCRequestMessage(
                id=data["id"], method=method, jsonrpc=data["jsonrpc"], params=data.get("params")
            )
        try:
            return super().structure_message(data)
        except Exception as exc:
            if isinstance(method, str) and "id" in data:
                return _Invalid(data["id"], method, str(exc).splitlines()[0])
            raise

    def handle_message(self, message) -> None:
        if isinstance(message, _Refused):
            self._send_data({"jsonrpc": "2.0", "id": message.id, "error": message.error})
            return
        if isinstance(message, _Invalid):
            self._send_error(message.id, INVALID_PARAMS, f"invalid params for {message.method}")
            return
        if not hasattr(message, "jsonrpc"):  # valid JSON, but not a JSON-RPC 2.0 message
            msg_id = message.get("id") if isinstance(message, dict) else None
            if not isinstance(msg_id, (int, str)):
                msg_id = None
            self._send_error(msg_id, INVALID_REQUEST, "invalid request: not a JSON-RPC message")
            return
        super().handle_message(message)

    def _execute_handler(self, msg_id, handler, callback, args=None, kwargs=None) -> None:
        """pygls 2.1 keeps a handler's future in `_request_futures` and drops only a request's
        once answered: a notification's (a fresh id per didChange, didOpen, didClose) stayed
        for the whole session, ~8 objects a keystroke that every full collection then walked
        (a 20 s typing run: 6,600 futures, full collections 70 → 150 ms). Dropped when done,
        on the event loop: `shutdown` cancels the futures while it iterates over them, and a
        thread's future runs its callbacks inside `cancel()` (dropped there, the iteration
        failed and `shutdown` was answered with an error)."""
        super()._execute_handler(msg_id, handler, callback, args, kwargs)
        futures = self._request_futures
        future = futures.get(msg_id)
        if future is None:
            return
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None

        def drop(done: Any) -> None:
            if futures.get(msg_id) is done:
                futures.pop(msg_id, None)

        def dropped_later(done: Any) -> None:
            if loop is None:
                drop(done)
                return
            with contextlib.suppress(RuntimeError):  # the loop is closed: nothing to keep
                loop.call_soon_threadsafe(drop, done)

        future.add_done_callback(dropped_later)

    def _send_error(self, msg_id: Any, code: int, message: str) -> None:
        # Sent as is: pygls would drop `"id": null`, which JSON-RPC requires when no id is known.
        error = {"code": code, "message": message}
        self._send_data({"jsonrpc": "2.0", "id": msg_id, "error": error})


def rpc_exception(err: RpcError) -> JsonRpcException:
    return JsonRpcException(message=err.message, code=err.code, data=err.data)


def clean_options(raw: Any) -> tuple[dict[str, Any], list[str]]:
    """Valid options, and a message for each invalid one (which keeps its default)."""
    if raw is None:
        return {}, []
    if not isinstance(raw, dict):
        return {}, [f"options must be an object, got {type(raw).__name__}; using defaults"]
    clean: dict[str, Any] = {}
    problems = []
    for key, value in raw.items():
        if key == "db":
            continue  # read by `autodoc serve` at start-up
        try:
            clean.update(workspace_options.validate({key: value}))
        except RpcError as err:
            problems.append(f"option {key!r}: {err.message}; using the default")
    return clean, problems


class LogToClient(logging.Handler):
    """Our log lines reach the editor as `window/logMessage` of the matching type (error,
    warning, info, log): `send(kind, text)` (the server's `log_message`) sends it from any
    thread. Stderr keeps only warnings and above, which an editor shows as errors."""

    def __init__(self, send: Callable[[types.MessageType, str], None]) -> None:
        super().__init__(logging.DEBUG)
        self.send = send

    def emit(self, record: logging.LogRecord) -> None:
        self.send(message_type(record.levelno), self.format(record))


def message_type(level: int) -> types.MessageType:
    """LSP's message type for a logging level."""
    if level >= logging.ERROR:
        return types.MessageType.Error
    if level >= logging.WARNING:
        return types.MessageType.Warning
    return types.MessageType.Info if level >= logging.INFO else types.MessageType.Log


class AnsweredErrors(logging.Filter):
    """pygls logs a traceback for every error response; ours are deliberate answers (bad
    params, a superseded search), so only unexpected exceptions keep theirs."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, JsonRpcException)

"""`autodoc serve --http HOST:PORT`: the dispatcher as JSON-RPC 2.0 over HTTP, for a team's
shared server: one process indexes the docs repository once and answers every editor and tool
that reaches it.

Every client is treated as possibly hostile:
- a bearer token is required (from `--token-file` or an environment variable), compared in
  constant time and never logged; a token may be read-only; without any token the server only
  listens on a loopback address;
- only the folders the server was started on are workspaces: no method that adds, removes or
  reconfigures a workspace is served, and a request naming another workspace is refused;
- a body over MAX_REQUEST_BYTES is refused before it is read whole, as is a batch; at most
  `max_concurrent` requests run at once, the rest are told to retry (503).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
import os
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route

from autodoc.serve import method_table
from autodoc.serve.host.askers import ASKER, MAY_WRITE
from autodoc.serve.host.serving import Host
from autodoc.serve.http.tokens import Token, TokenLimits, Tokens
from autodoc.wire import limits
from autodoc.wire.errors import (
    FORBIDDEN,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    RpcError,
)

log = logging.getLogger(__name__)

UNAUTHORIZED = -32001  # no token, or not one of the server's: HTTP 401
BUSY = -32004  # too many requests at once (503), or a token's limit reached (429): retry
# Requests one worker runs at once; the rest wait their turn. A worker has about one core: 50
# clients on 2 workers answered 149 queries/s with 4 at once, 130 with 16 (doc/benchmarks/server.md)
DEFAULT_MAX_CONCURRENT = 4
QUEUE_WAIT_S = 10.0  # how long a request waits for one of the slots before a 503
EPOCH_HEADER = "Autodoc-Epoch"  # `name=text.vector` per served workspace, read before answering
WORKER_HEADER = "Autodoc-Worker"  # `pid writer|reader`: which process answered


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _error(status: int, rid: Any, err: RpcError, headers: dict[str, str] | None = None):
    body = {"jsonrpc": "2.0", "id": rid, "error": err.to_dict()}
    return JSONResponse(body, status_code=status, headers=headers)


class HttpApp:
    """POST /rpc (JSON-RPC 2.0) and GET /healthz over a `Host`; `asgi()` puts them behind the
    `Gate` (tokens, limits, stamps), with the MCP tools at /mcp when given."""

    def __init__(
        self,
        host: Host,
        tokens: Tokens,
        *,
        max_concurrent: int,
        token_limits: TokenLimits | None = None,
    ) -> None:
        self.host = host
        self.tokens = tokens
        self.token_limits = token_limits
        self.slots = asyncio.Semaphore(max_concurrent)
        # the reads this server runs at once: as many as it takes requests at once
        self.readers = ThreadPoolExecutor(max_concurrent, thread_name_prefix="autodoc-http")

    def asgi(self, mcp_app: Any = None) -> Any:
        """The whole app: a Starlette app for /rpc, /healthz and (given) the MCP app's /mcp,
        run inside that app's lifespan, behind the gate."""
        routes: list[Any] = [
            Route("/rpc", self.rpc, methods=["POST"]),
            Route("/healthz", self.healthz, methods=["GET"]),
        ]
        if mcp_app is not None:
            routes.append(Mount("/", app=mcp_app))

        @contextlib.asynccontextmanager
        async def lifespan(app: Any) -> AsyncIterator[None]:
            inner = mcp_app.router.lifespan_context(mcp_app) if mcp_app is not None else None
            async with inner or contextlib.nullcontext():
                yield
            await run_in_threadpool(self.host.close)  # the writer's last batch committed
            self.readers.shutdown(wait=False)

        app = Starlette(routes=routes, lifespan=lifespan)
        return Gate(app, self.tokens, token_limits=self.token_limits, host=self.host)

    async def healthz(self, request: Request) -> Response:
        return JSONResponse({"ok": True})  # nothing about the workspaces: no token asked

    async def rpc(self, request: Request) -> Response:
        token: Token = request.scope[TOKEN_KEY]
        size = request.headers.get("content-length")
        if size is not None and (not size.isdigit() or int(size) > limits.MAX_REQUEST_BYTES):
            return _error(413, None, limits.request_too_long())
        try:
            body = await _read_limited(request)
        except ClientDisconnect:  # gone mid-body: nothing to answer, one line to say so
            log.info("a client closed its connection before its request's body arrived")
            return Response(status_code=400)
        if body is None:
            return _error(413, None, limits.request_too_long())
        try:  # a request waits its turn a while, then is told to come back
            await asyncio.wait_for(self.slots.acquire(), QUEUE_WAIT_S)
        except TimeoutError:
            err = RpcError(BUSY, "too many requests at once; retry shortly")
            return _error(503, None, err, {"Retry-After": "1"})
        try:
            return await self._answer(body, token)
        finally:
            self.slots.release()

    async def _answer(self, body: bytes, token: Token) -> Response:
        refusal = limits.unreadable(body)
        if refusal is not None:
            return _error(400, None, refusal)
        try:
            request = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return _error(400, None, RpcError(PARSE_ERROR, f"parse error: {exc}"))
        if not isinstance(request, dict) or not isinstance(request.get("method"), str):
            return _error(400, None, RpcError(INVALID_REQUEST, "one JSON-RPC request object"))
        rid, method, params = request.get("id"), request["method"], request.get("params", [])
        facts = method_table.BY_NAME.get(method)
        if facts is None or facts.http == "none":
            served = sorted(m.name for m in method_table.METHODS if m.http != "none")
            err = RpcError(METHOD_NOT_FOUND, f"{method!r} is not served over HTTP",
                           {"methods": served})  # fmt: skip
            return _error(200, rid, err)
        if facts.http in ("write", "log") and token.read_only:
            return _error(403, rid, RpcError(FORBIDDEN, f"{method} needs a token that may write"))
        try:
            self.host.dispatcher.checked(method, params)  # the door's checks come first
            self._check_workspace(method, params)
            result = await asyncio.wrap_future(self.host.call(method, params, reads=self.readers))
        except RpcError as err:
            if err.code == BUSY:  # no writer at the moment: come back
                return _error(503, rid, err, {"Retry-After": "1"})
            return _error(200, rid, err)
        if method == "workspace.list":  # the store may hold others: their names stay private
            result = [w for w in result if w["name"] in self.host.served]
        return JSONResponse({"jsonrpc": "2.0", "id": rid, "result": result})

    def _check_workspace(self, method: str, params: Any) -> None:
        """A method's first param names a workspace: one this server was started on."""
        if method != "workspace.list" and isinstance(params, list) and params:
            if params[0] is None and method == "gaps.report":
                return  # every workspace of the server's own log
            self.host.check_served(params[0])


TOKEN_KEY = "autodoc.token"  # where the gate leaves the request's token for the app


class Gate:
    """ASGI middleware in front of every route but `/healthz`: one of the server's bearer
    tokens (401), within that token's limits (429 with `Retry-After`); each answer says which
    process gave it and, with a host, the epochs of the served workspaces read before the
    request ran (so the answer reflects at least those)."""

    def __init__(
        self,
        app: Any,
        tokens: Tokens,
        *,
        token_limits: TokenLimits | None = None,
        host: Host | None = None,
    ) -> None:
        self.app = app
        self.tokens = tokens
        self.token_limits = token_limits
        self.host = host

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("path") == "/healthz":
            await self.app(scope, receive, send)
            return
        header = dict(scope.get("headers") or []).get(b"authorization", b"")
        token = self.tokens.check(header.decode("latin-1"))
        if token is None:
            err = RpcError(UNAUTHORIZED, "a bearer token of this server is required")
            response = _error(401, None, err, {"WWW-Authenticate": 'Bearer realm="autodoc"'})
            await response(scope, receive, send)
            return
        refusal = self.token_limits.enter(token) if self.token_limits is not None else None
        if refusal is not None:
            err = RpcError(BUSY, f"this token's limit: {refusal.why}; retry later",
                           {"retry_after": refusal.retry_after})  # fmt: skip
            response = _error(429, None, err, {"Retry-After": str(refusal.retry_after)})
            await response(scope, receive, send)
            return
        stamps = self._stamps()

        async def stamped(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *stamps]}
            await send(message)

        ASKER.set(token.label)  # this request's context: the question log's asker, and
        MAY_WRITE.set(not token.read_only)  # whether it may read the log's report (MCP `gaps`)
        try:
            await self.app({**scope, TOKEN_KEY: token}, receive, stamped)
        finally:
            if self.token_limits is not None:
                self.token_limits.leave(token)

    def _stamps(self) -> list[tuple[bytes, bytes]]:
        if self.host is None:
            return []
        role = "writer" if self.host.engine.store.lease.fd is not None else "reader"
        stamps = [(WORKER_HEADER.encode(), f"{os.getpid()} {role}".encode())]
        try:
            epochs = self.host.epochs()
        except RpcError:
            return stamps
        text = ", ".join(f"{name}={t}.{v}" for name, (t, v) in sorted(epochs.items()))
        return [*stamps, (EPOCH_HEADER.encode(), text.encode())]


def listen_settings(
    address: str, token_file: str | None, token_env: str | None
) -> tuple[str, int, Tokens]:
    """(host, port, tokens) for `--http HOST:PORT`; -32602 for a bad address, for no token
    on an address beyond loopback, or for a weak token."""
    bind, _, port_text = address.rpartition(":")
    if not bind or not port_text.isdigit():
        raise RpcError(INVALID_PARAMS, f"--http takes HOST:PORT, got {address!r}")
    tokens = Tokens.load(token_file, token_env)
    if not tokens.tokens and not is_loopback(bind):
        why = "(--token-file or --token-env): any machine could read the docs"
        raise RpcError(INVALID_PARAMS, f"refusing to listen on {bind} without a token {why}")
    return bind, int(port_text), tokens


async def _read_limited(request: Request) -> bytes | None:
    """The body, or None once it passes MAX_REQUEST_BYTES (a chunked body has no length)."""
    out = bytearray()
    async for chunk in request.stream():
        out += chunk
        if len(out) > limits.MAX_REQUEST_BYTES:
            return None
    return bytes(out)

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
import hmac
import ipaddress
import json
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from autodoc.serve.dispatcher import WRITES
from autodoc.serve.host import Host
from autodoc.wire import limits
from autodoc.wire.errors import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    RpcError,
)

log = logging.getLogger(__name__)

# Served over HTTP: reading, and re-indexing the configured folders (a token that may write).
READS = frozenset(
    {
        "workspace.list",
        "index.status",
        "search.query",
        "search.find",
        "doc.read",
        "doc.indexed",
        "doc.outline",
        "doc.actions",
        "doc.lenses",
        "related",
        "changes.since",
        "links.definition",
        "links.hover",
        "links.references",
        "links.document",
        "links.diagnostics",
        "links.complete",
        "links.preview",
        "links.prepare_rename",
        "links.rename",
        "links.file_renamed",
    }
)
HTTP_WRITES = frozenset({"index.run", "index.check"})
UNAUTHORIZED = -32001  # no token, or not one of the server's: HTTP 401
FORBIDDEN = -32003  # a read-only token asked for a write: HTTP 403
BUSY = -32004  # too many requests at once: HTTP 503, retry shortly
DEFAULT_MAX_CONCURRENT = 16
QUEUE_WAIT_S = 10.0  # how long a request waits for one of the slots before a 503
MIN_TOKEN_CHARS = 16


@dataclass(frozen=True)
class Token:
    secret: str
    read_only: bool


class Tokens:
    """The server's bearer tokens: a file of `TOKEN [read-only]` lines (`#` comments), and/or
    one read-write token from an environment variable."""

    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens

    @classmethod
    def load(cls, file: str | None, env: str | None) -> Tokens:
        tokens: list[Token] = []
        if file:
            for n, raw in enumerate(Path(file).read_text(encoding="utf-8").splitlines(), 1):
                words = raw.split("#", 1)[0].split()
                if not words:
                    continue
                if len(words) > 2 or (len(words) == 2 and words[1] != "read-only"):
                    raise ValueError(f"{file}:{n}: a line is TOKEN or TOKEN read-only")
                tokens.append(Token(words[0], len(words) == 2))
        if env and os.environ.get(env):
            tokens.append(Token(os.environ[env], False))
        weak = [t for t in tokens if len(t.secret) < MIN_TOKEN_CHARS]
        if weak:
            raise ValueError(f"a token must have at least {MIN_TOKEN_CHARS} characters")
        return cls(tokens)

    def check(self, header: str | None) -> Token | None:
        """The token an `Authorization: Bearer …` header carries, None when it is none of
        ours; every token is compared, in constant time, whatever matched first."""
        if not header or not header.startswith("Bearer "):
            return None
        given = header[len("Bearer ") :].strip().encode()
        found = None
        for token in self.tokens:
            if hmac.compare_digest(given, token.secret.encode()):
                found = token
        return found


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
    """The Starlette app over a `Host`: POST /rpc (JSON-RPC 2.0), GET /healthz."""

    def __init__(self, host: Host, tokens: Tokens, *, max_concurrent: int) -> None:
        self.host = host
        self.tokens = tokens
        self.slots = asyncio.Semaphore(max_concurrent)
        self.app = Starlette(
            routes=[
                Route("/rpc", self.rpc, methods=["POST"]),
                Route("/healthz", self.healthz, methods=["GET"]),
            ]
        )

    async def healthz(self, request: Request) -> Response:
        return JSONResponse({"ok": True})  # nothing about the workspaces: no token asked

    async def rpc(self, request: Request) -> Response:
        token = self.tokens.check(request.headers.get("authorization"))
        if token is None:
            err = RpcError(UNAUTHORIZED, "a bearer token of this server is required")
            return _error(401, None, err, {"WWW-Authenticate": 'Bearer realm="autodoc"'})
        size = request.headers.get("content-length")
        if size is not None and (not size.isdigit() or int(size) > limits.MAX_REQUEST_BYTES):
            return _error(413, None, limits.request_too_long())
        body = await _read_limited(request)
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
        if limits.text_depth(body.decode("utf-8", "replace")) > limits.MAX_DEPTH:
            return _error(400, None, limits.nested_too_deep())
        try:
            request = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return _error(400, None, RpcError(PARSE_ERROR, f"parse error: {exc}"))
        if not isinstance(request, dict) or not isinstance(request.get("method"), str):
            return _error(400, None, RpcError(INVALID_REQUEST, "one JSON-RPC request object"))
        rid, method, params = request.get("id"), request["method"], request.get("params", [])
        if method not in READS | HTTP_WRITES:
            served = sorted(READS | HTTP_WRITES)
            err = RpcError(METHOD_NOT_FOUND, f"{method!r} is not served over HTTP",
                           {"methods": served})  # fmt: skip
            return _error(200, rid, err)
        if method in HTTP_WRITES and token.read_only:
            return _error(403, rid, RpcError(FORBIDDEN, f"{method} needs a token that may write"))
        try:
            self._check_workspace(method, params)
            if method in WRITES:
                result = await asyncio.wrap_future(self.host.write(method, params))
            else:
                result = await run_in_threadpool(self.host.dispatcher.call, method, params)
        except RpcError as err:
            return _error(200, rid, err)
        if method == "workspace.list":  # the store may hold others: their names stay private
            result = [w for w in result if w["name"] in self.host.served]
        return JSONResponse({"jsonrpc": "2.0", "id": rid, "result": result})

    def _check_workspace(self, method: str, params: Any) -> None:
        """A method's first param names a workspace: one this server was started on."""
        if method != "workspace.list" and isinstance(params, list) and params:
            self.host.check_served(params[0])


class BearerAuth:
    """ASGI middleware: every HTTP request but `/healthz` carries one of the server's tokens
    (the MCP transport's app, whose tools are all read-only, is wrapped in it)."""

    def __init__(self, app: Any, tokens: Tokens) -> None:
        self.app = app
        self.tokens = tokens

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope.get("path") != "/healthz":
            header = dict(scope.get("headers") or []).get(b"authorization", b"")
            if self.tokens.check(header.decode("latin-1")) is None:
                err = RpcError(UNAUTHORIZED, "a bearer token of this server is required")
                response = _error(401, None, err, {"WWW-Authenticate": 'Bearer realm="autodoc"'})
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


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


def serve_http(
    db: str | None,
    roots: list[str],
    address: str,
    *,
    token_file: str | None,
    token_env: str | None,
    max_concurrent: int = DEFAULT_MAX_CONCURRENT,
) -> int:
    """Index the folders, then serve until interrupted. Exit 2 on a refused configuration."""
    import uvicorn

    from autodoc.engine import Engine

    bind, port, tokens = listen_settings(address, token_file, token_env)
    if not roots:
        raise RpcError(INVALID_PARAMS, "name the folders: autodoc serve --http HOST:PORT PATH ...")
    host = Host(Engine(db), watch=True)
    for root in roots:
        host.open(Path(root).expanduser().resolve())
    app = HttpApp(host, tokens, max_concurrent=max_concurrent)
    print(f"autodoc: serving http://{bind}:{port}/rpc for {len(roots)} folder(s),"
          f" {len(tokens.tokens)} token(s)", flush=True, file=sys.stderr)  # fmt: skip
    try:
        uvicorn.run(app.app, host=bind, port=port, log_level="warning")
    finally:
        host.close()
    return 0


def serve_mcp_http(server: Any, bind: str, port: int, tokens: Tokens) -> None:
    """The same tools over the SDK's streamable HTTP transport at `/mcp`, every request
    carrying one of the server's bearer tokens (http_server.py's rules)."""
    import uvicorn

    app = BearerAuth(server.streamable_http_app(host=bind), tokens)
    print(f"autodoc: MCP at http://{bind}:{port}/mcp, {len(tokens.tokens)} token(s)",
          file=sys.stderr, flush=True)  # fmt: skip
    uvicorn.run(app, host=bind, port=port, log_level="warning")

"""The one door: every method of `method_table.METHODS` with positional JSON params, shared by
the CLI, LSP, MCP and HTTP servers and tests.

Every front end (the CLI, the LSP, MCP and HTTP servers) reaches the engine through
`Dispatcher.call`. With `AUTODOC_TRACE_METHODS=FILE` in its environment, a process appends each
method it calls there, one name a line: how tests/integration/test_front_ends.py sees that one
dispatcher
method answered each front end's request.
"""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from autodoc.serve import method_table
from autodoc.wire.errors import (
    INTERNAL_ERROR,
    METHOD_NOT_FOUND,
    CancelToken,
    RpcError,
    invalid_params,
)
from autodoc.wire.limits import check_params

if TYPE_CHECKING:  # the caller opens the engine: `--help` and a server's `initialize` need none
    from autodoc.engine import Engine

log = logging.getLogger(__name__)


TRACE_ENV = "AUTODOC_TRACE_METHODS"


@dataclass(frozen=True)
class Reports:
    """What a one-shot `index.run` tells its caller as it goes (the CLI's bars and lines):
    `progress(done, total, path)` per file, `embed_progress(done, total)` per batch of vectors,
    `notice(text)` for a person, `indexed(summary)` once the files are in. They are the
    caller's code: what one of them raises reaches the caller as raised (Ctrl-C, a closed
    pipe), not as an internal error."""

    progress: Callable[[int, int, str], None] | None = None
    embed_progress: Callable[[int, int], None] | None = None
    notice: Callable[[str], None] | None = None
    indexed: Callable[[dict[str, Any]], None] | None = None

    def guarded(self, raised: list[BaseException]) -> dict[str, Any]:
        """The listeners as keyword arguments, each noting in `raised` what it raised."""

        def guard(fn: Callable[..., None]) -> Callable[..., None]:
            def listener(*args: Any) -> None:
                try:
                    fn(*args)
                except BaseException as exc:
                    raised.append(exc)
                    raise

            return listener

        return {k: guard(fn) for k, fn in vars(self).items() if fn is not None}


class Dispatcher:
    """`long_lived`: embeddings fill in the background instead of inside `index.run` (a
    server answers lexically meanwhile; a one-shot CLI call waits for them)."""

    def __init__(self, engine: Engine, *, long_lived: bool = False) -> None:
        self.engine = engine
        self.methods: dict[str, Callable[..., Any]] = {}
        for m in method_table.METHODS:
            handler = m.handler(engine)
            background = m.waits and long_lived  # embeddings fill in after the answer
            self.methods[m.name] = partial(handler, wait=False) if background else handler
        self._names = {name: _positional(fn) for name, fn in self.methods.items()}
        self._trace = os.environ.get(TRACE_ENV) or None

    def call(
        self,
        method: Any,
        params: Any = None,
        *,
        cancel: CancelToken | None = None,
        reports: Reports | None = None,
    ) -> Any:
        """Run a method; every failure is an RpcError with a documented code (but what a
        caller's own `reports` raise)."""
        fn = self.checked(method, params)
        params = params if params is not None else []
        if self._trace is not None:
            with open(self._trace, "a", encoding="utf-8") as trace:
                trace.write(method + "\n")
        raised: list[BaseException] = []
        try:
            facts = method_table.BY_NAME[method]
            if cancel is not None and facts.cancellable:
                return fn(*params, cancel=cancel)
            if reports is not None and facts.reports:
                return fn(*params, **reports.guarded(raised))
            return fn(*params)
        except RpcError:
            raise
        except Exception as exc:  # a bug, not bad input: report it and keep serving
            if any(exc is r for r in raised):  # the caller's own listener's: theirs to handle
                raise
            log.exception("internal error in %s", method)
            raise RpcError(INTERNAL_ERROR, f"internal error: {exc}", {"method": method}) from exc

    def checked(self, method: Any, params: Any) -> Callable[..., Any]:
        """The door's checks, before anything else looks at a request (a front end's own
        checks come after them): the method exists, its params are an array of as many as it
        takes, nested within MAX_DEPTH, every string text (a lone surrogate is -32602 naming
        the parameter). Its handler."""
        fn = self.methods.get(method) if isinstance(method, str) else None
        if fn is None:
            raise RpcError(
                METHOD_NOT_FOUND, f"unknown method {method!r}", {"methods": sorted(self.methods)}
            )
        if params is None:
            params = []
        if not isinstance(params, list):
            raise invalid_params("params must be a JSON array of positional arguments")
        names = self._names[method]
        check_params(params, [p.name for p in names])  # before any method walks them
        low, high = sum(1 for p in names if p.default is p.empty), len(names)
        if not low <= len(params) <= high:
            want = str(low) if low == high else f"{low} to {high}"
            raise invalid_params(f"{method} takes {want} params, got {len(params)}", method=method)
        return fn

    def handle(self, request: Any) -> dict[str, Any]:
        """A JSON-RPC 2.0 request object in, a response object out."""
        rid = request.get("id") if isinstance(request, dict) else None
        try:
            if not isinstance(request, dict) or "method" not in request:
                raise RpcError(-32600, "invalid request")
            result = self.call(request["method"], request.get("params"))
            return {"jsonrpc": "2.0", "id": rid, "result": result}
        except RpcError as err:
            return {"jsonrpc": "2.0", "id": rid, "error": err.to_dict()}


def _positional(fn: Callable[..., Any]) -> list[inspect.Parameter]:
    """The method's positional parameters: how many params it takes, and their names."""
    return [
        p
        for p in inspect.signature(fn).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]

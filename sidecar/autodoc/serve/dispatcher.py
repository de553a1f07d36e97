"""One table of named methods with positional JSON params, shared by the CLI, LSP and tests."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from functools import partial
from typing import Any

from autodoc.engine import Engine
from autodoc.wire.errors import (
    INTERNAL_ERROR,
    METHOD_NOT_FOUND,
    CancelToken,
    RpcError,
    invalid_params,
)
from autodoc.wire.limits import check_params

log = logging.getLogger(__name__)


# Methods that change the store: a long-lived server runs them on its one writer thread.
WRITES = frozenset(
    {
        "workspace.add",
        "workspace.remove",
        "workspace.section_size",
        "workspace.configure",
        "index.run",
        "index.check",
    }
)
# Methods that take a cancel token and check it between stages.
CANCELLABLE = frozenset({"search.query"})


class Dispatcher:
    """`long_lived`: embeddings fill in the background instead of inside `index.run` (a
    server answers lexically meanwhile; a one-shot CLI call waits for them)."""

    def __init__(self, engine: Engine, *, long_lived: bool = False) -> None:
        self.engine = engine
        e = engine
        index_run = partial(e.index_run, wait=False) if long_lived else e.index_run
        configure = (
            partial(e.workspace_configure, wait=False) if long_lived else e.workspace_configure
        )
        self.methods: dict[str, Callable[..., Any]] = {
            "workspace.add": e.workspace_add,
            "workspace.list": e.workspace_list,
            "workspace.remove": e.workspace_remove,
            "workspace.section_size": e.workspace_section_size,
            "workspace.configure": configure,
            "index.run": index_run,
            "index.status": e.index_status,
            "index.check": e.index_check,
            "search.query": e.search,
            "search.find": e.find,
            "related": e.related,
            "doc.read": e.doc_read,
            "changes.since": e.changes_since,
        }
        self._arity = {name: _arity(fn) for name, fn in self.methods.items()}

    def call(self, method: Any, params: Any = None, *, cancel: CancelToken | None = None) -> Any:
        """Run a method; every failure is an RpcError with a documented code."""
        fn = self.methods.get(method) if isinstance(method, str) else None
        if fn is None:
            raise RpcError(
                METHOD_NOT_FOUND, f"unknown method {method!r}", {"methods": sorted(self.methods)}
            )
        if params is None:
            params = []
        if not isinstance(params, list):
            raise invalid_params("params must be a JSON array of positional arguments")
        check_params(params)  # before any method walks them
        low, high = self._arity[method]
        if not low <= len(params) <= high:
            want = str(low) if low == high else f"{low} to {high}"
            raise invalid_params(f"{method} takes {want} params, got {len(params)}", method=method)
        try:
            if cancel is not None and method in CANCELLABLE:
                return fn(*params, cancel=cancel)
            return fn(*params)
        except RpcError:
            raise
        except Exception as exc:  # a bug, not bad input: report it and keep serving
            log.exception("internal error in %s", method)
            raise RpcError(INTERNAL_ERROR, f"internal error: {exc}", {"method": method}) from exc

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


def _arity(fn: Callable[..., Any]) -> tuple[int, int]:
    params = [
        p
        for p in inspect.signature(fn).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    required = sum(1 for p in params if p.default is p.empty)
    return required, len(params)

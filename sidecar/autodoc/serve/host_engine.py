"""The engine a long-lived server's host serves: given, or opened on a thread of its own.

`autodoc serve` and `autodoc mcp` build their host over a store that opens on a thread of its
own (`Host.over_store`): the server answers `initialize` (and MCP's `tools/list`) while the
engine's imports (~0.15 s) and the store open, and a request that needs the engine waits for it
(`opened`); the indexes and the model open when first used. Once open, the engine is served by
its dispatcher, the one writer thread and, when asked for, the file watcher; work for the writer
thread queues behind the opening without waiting (`_on_writer`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, TypeVar

from autodoc.serve.deferred import after
from autodoc.serve.dispatcher import Dispatcher
from autodoc.serve.refresh import Refresher
from autodoc.wire.errors import INTERNAL_ERROR, RpcError

if TYPE_CHECKING:
    from autodoc.engine import Engine
    from autodoc.serve.watch import Watcher

log = logging.getLogger("autodoc.serve.host")
_Result = TypeVar("_Result")


class EngineHost:
    """The engine part of a `Host`: `opened` holds the engine once it is open; `engine`,
    `dispatcher` and `refresher` wait for it."""

    def __init__(self, *, watch: bool) -> None:
        self.opened: Future[Engine] = Future()
        self._dispatcher: Dispatcher | None = None
        self._refresher: Refresher | None = None
        self._watch = watch
        self.watcher: Watcher | None = None

    def _serve_engine(
        self, engine: Engine | None, open_engine: Callable[[], Engine] | None
    ) -> None:
        """Serve `engine` now, or the one `open_engine` makes on a thread of its own (the last
        step of a host's set-up: the engine's hooks may call it at once)."""
        if engine is not None:
            self._adopt(engine)
        elif open_engine is not None:
            threading.Thread(
                target=self._open_engine, args=(open_engine,), name="autodoc-open", daemon=True
            ).start()
        else:
            raise ValueError("a Host needs an engine or open_engine")

    def _open_engine(self, open_engine: Callable[[], Engine]) -> None:
        try:
            engine = open_engine()
        except BaseException as exc:  # every request that needs it says why, with a JSON-RPC code
            log.error("cannot open the store: %s", getattr(exc, "message", exc))
            if not isinstance(exc, RpcError):
                exc = RpcError(INTERNAL_ERROR, f"cannot open the store: {exc}")
            self.opened.set_exception(exc)
            self._opening_failed()
            return
        self._adopt(engine)

    def _adopt(self, engine: Engine) -> None:
        """Serve `engine`: its dispatcher, the writer thread and the watcher, then `opened`."""
        self._dispatcher = Dispatcher(engine, long_lived=True)
        self._refresher = Refresher(
            self._dispatcher, on_indexed=self._indexed, on_lease=self._lease
        )
        if self._watch:
            from autodoc.serve.watch import Watcher  # watchdog: not on `initialize`'s path

            self.watcher = Watcher(self._refresher)
        engine.on_stale = self._stale
        engine.on_embedded = self._embedded
        engine.on_embedding = self._embedding
        self.opened.set_result(engine)

    @property
    def engine(self) -> Engine:
        """The engine, once open (waits for it; raises what opening it raised)."""
        return self.opened.result()

    @property
    def dispatcher(self) -> Dispatcher:
        self.opened.result()
        assert self._dispatcher is not None
        return self._dispatcher

    @property
    def refresher(self) -> Refresher:
        self.opened.result()
        assert self._refresher is not None
        return self._refresher

    def _on_writer(self, job: Callable[[], _Result]) -> Future[_Result]:
        """`job` on the writer thread, once the engine is open: the caller never waits here."""
        return after(self.opened, lambda: self.refresher.submit(job))

    def _close_engine(self) -> None:
        """The watcher, the writer thread and the engine, closed (an opening still under way
        is waited for; one that failed left nothing to close)."""
        try:
            engine = self.opened.result()
        except BaseException:
            return
        if self.watcher is not None:
            self.watcher.close()
        self.refresher.close()
        engine.close()

    # -- what the engine and the writer thread tell the host (`Host` answers) ----------------

    def _opening_failed(self) -> None:
        """The engine could not open: whoever waits for a folder stops waiting."""

    def _indexed(self, workspace: str, summary: dict[str, Any]) -> None:
        raise NotImplementedError

    def _lease(self, writer: bool, holder: str) -> None:
        raise NotImplementedError

    def _stale(self, workspace: str, paths: list[str]) -> None:
        raise NotImplementedError

    def _embedded(self, workspace: str) -> None:
        raise NotImplementedError

    def _embedding(self, workspace: str, done: int, total: int) -> None:
        raise NotImplementedError


def engine_at(db: str | None) -> Engine:
    """The engine over the store at `db`, imported with it (on the host's thread)."""
    from autodoc.engine import Engine

    return Engine(db)

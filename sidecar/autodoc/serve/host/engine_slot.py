"""The engine a long-lived server's host serves: given, or opened on a thread of its own.

`autodoc serve` and `autodoc mcp` build their host over a store that opens on a thread of its
own (`Host.over_store`): the server answers `initialize` (and MCP's `tools/list`) while the
engine's imports (~0.15 s) and the store open, and a request that needs the engine waits for it
(`opened`); the indexes and the model open when first used. Once open, the engine is served by
its dispatcher, the one writer thread and, when asked for, the file watcher; work for the writer
thread queues behind the opening without waiting (`on_writer`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from autodoc.serve.dispatcher import Dispatcher
from autodoc.serve.host.deferred import after
from autodoc.serve.host.refresh import Refresher
from autodoc.wire.errors import INTERNAL_ERROR, RpcError

if TYPE_CHECKING:
    from autodoc.engine import Engine
    from autodoc.serve.host.watch import Watcher

log = logging.getLogger("autodoc.serve.host.serving")
_Result = TypeVar("_Result")


@dataclass(frozen=True)
class EngineEvents:
    """What the engine and the writer thread tell the host that serves them."""

    opening_failed: Callable[[], None]  # whoever waits for a folder stops waiting
    indexed: Callable[[str, dict[str, Any]], None]  # a save or a watcher's batch, indexed
    lease: Callable[[bool, str], None]  # the writer lease taken, or found held elsewhere
    stale: Callable[[str, list[str]], None]  # an answer found these files changed
    embedded: Callable[[str], None]  # a workspace's vectors filled
    embedding: Callable[[str, int, int], None]  # how far a fill has got


class EngineSlot:
    """Where a host's engine sits: `opened` holds it once it is open; `engine`, `dispatcher`
    and `refresher` wait for it; `watcher` is the file watcher, when one was asked for."""

    def __init__(self, events: EngineEvents, *, watch: bool) -> None:
        self.events = events
        self.opened: Future[Engine] = Future()
        self._dispatcher: Dispatcher | None = None
        self._refresher: Refresher | None = None
        self._watch = watch
        self.watcher: Watcher | None = None

    def serve(self, engine: Engine | None, open_engine: Callable[[], Engine] | None) -> None:
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
            self.events.opening_failed()
            return
        self._adopt(engine)

    def _adopt(self, engine: Engine) -> None:
        """Serve `engine`: its dispatcher, the writer thread and the watcher, then `opened`."""
        events = self.events
        self._dispatcher = Dispatcher(engine, long_lived=True)
        self._refresher = Refresher(
            self._dispatcher.call, on_indexed=events.indexed, on_lease=events.lease
        )
        if self._watch:
            from autodoc.serve.host.watch import Watcher  # watchdog: not on `initialize`'s path

            self.watcher = Watcher(self._refresher)
        engine.on_stale = events.stale
        engine.on_embedded = events.embedded
        engine.on_embedding = events.embedding
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

    def on_writer(self, job: Callable[[], _Result]) -> Future[_Result]:
        """`job` on the writer thread, once the engine is open: the caller never waits here."""
        return after(self.opened, lambda: self.refresher.submit(job))

    def close(self) -> None:
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


def engine_at(db: str | None, question_log: str | None = None) -> Engine:
    """The engine over the store at `db` (logging questions to `question_log`, when given),
    imported with it (on the host's thread)."""
    from autodoc.engine import Engine

    return Engine(db, question_log=question_log)

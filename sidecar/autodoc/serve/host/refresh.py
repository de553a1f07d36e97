"""Keep a long-lived process's index fresh: one writer thread, debounced per document, batched.

Editors save, watchers fire several events per write, and `git checkout` touches hundreds of
files at once. Every source calls `touch` (or `rescan` when only a full walk can tell what
changed); the writer thread waits until a document has been quiet for its delay, then
re-indexes everything due in one run per workspace. Jobs (a full index, a client's write
request) run on the same thread, so writes never race each other.

When another process holds the store's writer lease, pending work is kept and retried: this
process keeps serving reads and says so through `on_lease`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from autodoc.wire.errors import StoreBusyError

# A dispatcher's `call(method, params)`: all the refresher can ask of the engine.
Call = Callable[[str, Any], Any]

log = logging.getLogger(__name__)

SAVE_DELAY_S = 0.02  # an editor's save: re-index at once, but coalesce a burst (`:wall`)
WATCH_DELAY_S = 0.2  # a watcher sees several events per write: gather them into one run
RETRY_S = 2.0  # how often to try for the writer lease while another process holds it


@dataclass
class _Pending:
    paths: dict[str, float] = field(default_factory=dict)  # path -> due time
    rescan_at: float | None = None


class Refresher:
    def __init__(
        self,
        call: Call,
        *,
        on_indexed: Callable[[str, dict[str, Any]], None] | None = None,
        on_lease: Callable[[bool, str], None] | None = None,
    ) -> None:
        self.call = call  # a dispatcher's `call`: the engine only by the method table's names
        self.on_indexed = on_indexed
        self.on_lease = on_lease
        self._pending: dict[str, _Pending] = {}
        self._jobs: list[tuple[Callable[[], Any], Future]] = []
        self._cond = threading.Condition()
        self._closed = False
        self._busy_until = 0.0
        self.writer = True  # False while another process holds the lease
        self.holder = ""
        self._thread = threading.Thread(target=self._loop, name="autodoc-writer", daemon=True)
        self._thread.start()

    # -- what callers use --------------------------------------------------------------------

    def touch(self, workspace: str, path: str, delay: float = WATCH_DELAY_S) -> None:
        """This root-relative path may have changed (or gone): re-index it within `delay`.
        A path already waiting keeps the earlier time: the watcher's echo of a save must not
        postpone it, and a file written continuously is still picked up every `delay`."""
        with self._cond:
            pending = self._pending.setdefault(workspace, _Pending())
            due = time.monotonic() + delay
            pending.paths[path] = min(due, pending.paths.get(path, due))
            self._cond.notify()

    def rescan(self, workspace: str, delay: float = WATCH_DELAY_S) -> None:
        """Something changed that only a walk of the whole root can tell (a folder moved)."""
        with self._cond:
            pending = self._pending.setdefault(workspace, _Pending())
            due = time.monotonic() + delay
            pending.rescan_at = due if pending.rescan_at is None else min(due, pending.rescan_at)
            self._cond.notify()

    def submit(self, fn: Callable[[], Any]) -> Future[Any]:
        """Run `fn` on the writer thread, after the jobs before it."""
        future: Future[Any] = Future()
        with self._cond:
            self._jobs.append((fn, future))
            self._cond.notify()
        return future

    def pending(self) -> int:
        with self._cond:
            return sum(len(p.paths) + (p.rescan_at is not None) for p in self._pending.values())

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join(timeout=30)

    # -- the writer thread -------------------------------------------------------------------

    def _loop(self) -> None:
        while True:
            with self._cond:
                job = self._next_job()
                while job is None and not self._closed:
                    due = self._due()
                    if due:
                        break
                    self._cond.wait(timeout=self._wait())
                    job = self._next_job()
                if self._closed:
                    for _, future in self._jobs:
                        future.cancel()
                    return
                batch = {} if job is not None else self._take_due()
            if job is not None:
                fn, future = job
                if future.set_running_or_notify_cancel():
                    try:
                        future.set_result(fn())
                    except BaseException as exc:  # the caller sees it
                        future.set_exception(exc)
                continue
            for workspace, (paths, rescan) in batch.items():
                self._run(workspace, paths, rescan)

    def _next_job(self):
        return self._jobs.pop(0) if self._jobs else None

    def _due(self) -> bool:
        now = time.monotonic()
        if now < self._busy_until:
            return False
        for p in self._pending.values():
            if (p.rescan_at is not None and p.rescan_at <= now) or any(
                t <= now for t in p.paths.values()
            ):
                return True
        return False

    def _wait(self) -> float | None:
        times = [t for p in self._pending.values() for t in p.paths.values()]
        times += [p.rescan_at for p in self._pending.values() if p.rescan_at is not None]
        if not times:
            return None
        return max(0.0, max(min(times), self._busy_until) - time.monotonic())

    def _take_due(self) -> dict[str, tuple[list[str], bool]]:
        """Due paths per workspace; a path still settling waits for the next round."""
        now = time.monotonic()
        batch: dict[str, tuple[list[str], bool]] = {}
        for workspace, p in list(self._pending.items()):
            rescan = p.rescan_at is not None and p.rescan_at <= now
            due = [path for path, t in p.paths.items() if t <= now or rescan]
            if not due and not rescan:
                continue
            for path in due:
                del p.paths[path]
            if rescan:
                p.rescan_at = None
            if not p.paths and p.rescan_at is None:
                del self._pending[workspace]
            batch[workspace] = (due, rescan)
        return batch

    def _run(self, workspace: str, paths: list[str], rescan: bool) -> None:
        try:
            if rescan:  # a long-lived dispatcher's: embeddings fill in after
                summary = self.call("index.run", [workspace])
            else:
                summary = self.call("index.paths", [workspace, paths])
        except StoreBusyError as err:
            self._requeue(workspace, paths, rescan)
            self.note_lease(False, (err.data or {}).get("holder", ""))
            return
        except Exception:
            if not self._workspace_exists(workspace):
                return  # removed meanwhile: nothing left to refresh
            log.exception("re-indexing %s failed", workspace)
            return
        self.note_lease(True, "")
        if self.on_indexed is not None:
            self.on_indexed(workspace, summary)

    def _requeue(self, workspace: str, paths: list[str], rescan: bool) -> None:
        with self._cond:
            self._busy_until = time.monotonic() + RETRY_S
            pending = self._pending.setdefault(workspace, _Pending())
            for path in paths:
                pending.paths.setdefault(path, 0.0)
            if rescan and pending.rescan_at is None:
                pending.rescan_at = 0.0

    def note_lease(self, writer: bool, holder: str) -> None:
        """Record whether this process holds the writer lease; tell `on_lease` on a change."""
        if writer == self.writer and holder == self.holder:
            return
        self.writer, self.holder = writer, holder
        if self.on_lease is not None:
            self.on_lease(writer, holder)

    def _workspace_exists(self, workspace: str) -> bool:
        try:
            return any(w["name"] == workspace for w in self.call("workspace.list", []))
        except Exception:
            return False

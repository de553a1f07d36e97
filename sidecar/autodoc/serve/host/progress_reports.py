"""How far a served folder's indexing has got, told to clients as `autodoc/indexProgress`:
the files of a walk, then the vectors of its embedding, each with the chunks indexed so far;
at most every PROGRESS_EVERY_S a workspace and phase, and always at the end of a phase."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from autodoc.wire import protocol
from autodoc.wire.errors import RpcError

INDEX_PROGRESS = "autodoc/indexProgress"
PROGRESS_EVERY_S = 0.25  # at most this often per workspace, and always at the end of a phase
COUNT_EVERY_S = 1.0  # the chunks a progress report gives are counted at most this often

Notify = Callable[[str, Any], None]
Progress = Callable[[int, int, str], None]
Phase = Literal["files", "embedding"]


class ProgressReports:
    """`notify` sends an event to clients; `chunks(workspace)` counts its chunks (a method of
    the table, through the host: ~1 ms per 5k chunks, so counted at most every COUNT_EVERY_S)."""

    def __init__(self, notify: Notify, chunks: Callable[[str], int]) -> None:
        self.notify = notify
        self.chunks = chunks
        self._reported: dict[tuple[str, str], float] = {}  # (workspace, phase) -> last sent
        self._counted: dict[str, tuple[float, int]] = {}  # workspace -> (counted at, chunks)

    def files(self, name: str, root: Path, progress: Progress | None) -> Progress:
        """The indexer's file progress, passed on to `progress` and sent to clients; the last
        report is the caller's (`report(..., final=True)`, once the run published it all)."""

        def report(done: int, total: int, rel: str) -> None:
            if progress is not None:
                progress(done, total, rel)
            if done < total:
                self.report(name, root, "files", done, total)

        return report

    def report(
        self, name: str, root: Path, phase: Phase, done: int, total: int, *, final: bool = False
    ) -> None:
        now = time.monotonic()
        if not final and now - self._reported.get((name, phase), 0.0) < PROGRESS_EVERY_S:
            return
        self._reported[(name, phase)] = now
        counted_at, chunks = self._counted.get(name, (-1.0, 0))
        if final or now - counted_at >= COUNT_EVERY_S:
            try:
                chunks = self.chunks(name)
            except RpcError:  # removed meanwhile
                return
            self._counted[name] = (now, chunks)
        event = protocol.IndexProgress(
            workspace=name, root=str(root), phase=phase, done=done, total=total, chunks=chunks
        )
        self.notify(INDEX_PROGRESS, event)

"""The questions a server was asked (opt-in, `Engine(question_log=PATH)`): noted as answers go
out, and reported as what the docs do not answer (`gaps.gap_report`)."""

from __future__ import annotations

import datetime as dt
import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autodoc.engine.reading import checked_path
from autodoc.gaps.gap_report import gap_report, mark_new, record_baseline
from autodoc.gaps.question_log import QuestionLog, checked_log_path
from autodoc.wire.errors import INVALID_PARAMS, RpcError, invalid_params
from autodoc.wire.gap_answers import GapReport

if TYPE_CHECKING:
    import numpy as np

    from autodoc.engine.core import EngineCore

log = logging.getLogger(__name__)

NO_LOG = "no question log: start the server with --log-questions PATH (doc/gaps.md)"


class Questions:
    """The question log's writer (started with the first note) and its report."""

    def __init__(self, core: EngineCore, log_path: Path | str | None) -> None:
        self.core = core
        self.path = Path(log_path).expanduser().resolve() if log_path else None
        self._writer: QuestionLog | None = None
        self._writer_failed = False  # said once; the answers go on without the log
        self._closed = False
        self._embed: Any = None
        self._writer_lock = threading.Lock()  # apart from the model's: a report loading it
        self._embed_lock = threading.Lock()  # never holds a search's note up

    def log_state(self) -> str | None:
        """Where the log is written, or None when it is off."""
        return str(self.path) if self.path is not None else None

    def refuse_inside(self, root: Path) -> None:
        """A log inside a served folder would be indexed and read as a note: refused."""
        if self.path is not None:
            checked_log_path(str(self.path), [root])

    def note(self, method: str, params: Any, result: Any, asker: str) -> None:
        """After an answer went out: a search is a question, a span read or a hit opened is
        an opening (nothing when the log is off)."""
        if self.path is None or not isinstance(result, dict):
            return
        writer = self._writer or self._writer_now()
        if writer is None:
            return
        if method == "search.query":
            if str(result.get("query", "")).strip() and "matched" not in result:
                writer.asked(asker, result)  # not an empty query, nor a filters-only listing
        elif method in ("doc.read", "search.opened"):
            line = result.get("line") or result.get("line_start") or 1
            writer.opened(asker, result["workspace"], result["path"], int(line))

    def search_opened(self, name: Any, path: Any, line: Any = None) -> dict[str, Any]:
        """A reader opened a hit (the plugin's jump): the workspace, path and line as noted."""
        ws = self.core.workspace(name)
        rel = checked_path(path)
        if line is not None and (isinstance(line, bool) or not isinstance(line, int) or line < 1):
            raise invalid_params("line must be a positive integer", field="line")
        return {"workspace": ws.name, "path": rel, "line": line or 1,
                "logged": self.path is not None}  # fmt: skip

    def gaps_report(self, name: Any = None, options: Any = None) -> GapReport:
        """The questions the docs did not answer, grouped (doc/gaps.md); `options`: `since`
        (ISO date or time), `record` (make it the baseline `check --gaps` counts from)."""
        if self.path is None:
            raise RpcError(INVALID_PARAMS, NO_LOG)
        options = options or {}
        if not isinstance(options, dict) or set(options) - {"since", "record"}:
            raise invalid_params("options are {since, record}", field="options")
        if name is not None and (not isinstance(name, str) or not name):
            raise invalid_params("workspace is a name, or null for every one", field="workspace")
        workspace = name  # as the log names it: the store asking need not hold it (CI)
        since = _since(options.get("since"))
        report, centroids = gap_report(self.path, self._embedder(), since=since,
                                       workspace=workspace)  # fmt: skip
        mark_new(report, centroids, self.path)
        if options.get("record"):
            record_baseline(report, centroids, self.path)
        return report

    def _embedder(self) -> Any:
        with self._embed_lock:
            if self._embed is None:
                from autodoc.models.embedders import bundled_embedder

                model = bundled_embedder()

                def embed(texts: list[str]) -> np.ndarray:
                    return model.embed(texts)

                self._embed = embed
            return self._embed

    def _writer_now(self) -> QuestionLog | None:
        """The writer, started by the first note; None once closed, or when it cannot start
        (a folder in the log's place, no room): said once, not at every search."""
        with self._writer_lock:
            if self._writer is None and not (self._closed or self._writer_failed):
                assert self.path is not None
                try:
                    self._writer = QuestionLog(self.path)
                except OSError as exc:
                    self._writer_failed = True
                    log.error("the question log %s cannot be written: %s", self.path, exc)
            return self._writer

    def close(self) -> None:
        with self._writer_lock:
            self._closed = True  # a late answer starts no writer again
            writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()


def _since(value: Any) -> float | None:
    """`since` as epoch seconds: an ISO date (`2026-12-01`) or time, in UTC unless it says."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise invalid_params("since is an ISO date or time, e.g. 2026-12-01", field="since")
    try:
        when = dt.datetime.fromisoformat(value)
    except ValueError:
        raise invalid_params(f"since: not an ISO date or time: {value!r}", field="since") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return when.timestamp()

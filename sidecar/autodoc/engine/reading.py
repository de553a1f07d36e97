"""Reading: search, name lookup, the read path confined to the workspace root, the change log,
and the stage state a picker shows."""

from __future__ import annotations

import os
import time
from typing import Any

from autodoc import store as sql
from autodoc.engine.core import EngineCore
from autodoc.files.confine import NotInWorkspace, OutsideRoot, read_lines
from autodoc.query import find
from autodoc.query.pipeline import run_search
from autodoc.query.related import related as related_sections
from autodoc.query.stages import SearchTrace
from autodoc.wire import limits, protocol
from autodoc.wire.errors import CancelToken, invalid_params


class Reading:
    """What a search, a name lookup or a read answers: nothing here writes the store."""

    def __init__(self, core: EngineCore) -> None:
        self.core = core

    def search(
        self,
        name: Any,
        query: Any,
        opts: Any = None,
        *,
        cancel: CancelToken | None = None,
        trace: SearchTrace | None = None,
    ) -> protocol.Answer:
        """`search.query`; a `trace` passed in is filled with how the answer was found (training
        asks it for the candidates' features)."""
        ws = self.core.workspace(name)
        answer = run_search(
            self.core.store,
            self.core.lexical(ws),
            ws,
            query,
            opts,
            self.core.semantic_plan(ws),
            cancel,
            self.core.rank_plan(ws),
            trace,
        )
        if answer["stale"] and self.core.on_stale is not None:
            self.core.on_stale(ws.name, answer["stale"])
        return answer

    def counts(self, name: Any) -> tuple[int, int]:
        """(live documents, live chunks) of a workspace, as stored now."""
        ws = self.core.workspace(name)
        with self.core.store.snapshot() as conn:
            return sql.workspace_counts(conn, ws.id)

    def epochs(self, names: list[str]) -> dict[str, tuple[int, int]]:
        """(text epoch, vector epoch) of each named workspace, read in one snapshot: a team
        server stamps every answer with them, so a client can tell no worker went back."""
        with self.core.store.snapshot() as conn:  # one statement, whatever the number served
            return sql.epochs_by_name(conn, names)

    def warm(self, name: Any) -> None:
        """Open what the first search of `name` opens, and nothing more: the lexical index,
        the embedding model's query session and the vector index caught up with the store's
        snapshot. A long-lived server runs it on a thread once a folder is named, so a client's
        first question finds them open (issue 57: an agent's first search waited ~0.3 s for
        them after it was asked)."""
        ws = self.core.workspace(name)
        lexical = self.core.lexical(ws)
        plan = self.core.semantic_plan(ws)
        with self.core.store.snapshot() as conn:
            epochs = sql.read_epochs(conn, ws.id)
            if epochs is None:  # removed meanwhile
                return
            lexical.refresh(epochs[0])
            signs = plan.signs
            if signs is not None and plan.model_fp is not None:
                signs.refresh(conn, ws.id, plan.model_fp, epochs[1])
        warm_model = getattr(plan.embedder, "warm", None)  # a provider's API has nothing to open
        if warm_model is not None:
            warm_model()

    def related(
        self, name: Any, path: Any, line: Any = None, opts: Any = None
    ) -> protocol.RelatedAnswer:
        """The sections related to `path:line` (or the whole document): stored vectors and
        links, nothing embedded."""
        ws = self.core.workspace(name)
        return related_sections(self.core.store, ws, self.core.semantic_plan(ws), path, line, opts)

    def find(self, name: Any, query: Any, opts: Any = None) -> protocol.FindAnswer:
        """Documents by a name they hold: title, alias, heading or code identifier."""
        ws = self.core.workspace(name)
        started = time.perf_counter()
        with self.core.store.snapshot() as conn:
            matches, exact, truncated = find.answer(conn, ws.id, query, opts)
        return protocol.FindAnswer(
            name=query,
            exact=exact,
            matches=matches,
            truncated=truncated,
            workspace=ws.name,
            took_ms=round((time.perf_counter() - started) * 1000, 2),
        )

    def semantic_state(self, name: Any) -> protocol.StageState:
        """What a picker shows beside its stage toggles; cheap (coverage is cached per epoch)."""
        ws = self.core.workspace(name)
        return self.core.stage_state(ws, self.core.semantic_plan(ws))

    def changes_since(self, name: Any, cursor: Any = 0) -> protocol.Changes:
        ws = self.core.workspace(name)
        if isinstance(cursor, bool) or not isinstance(cursor, int) or cursor < 0:
            raise invalid_params("cursor must be a non-negative integer", field="cursor")
        return self.core.store.changes_since(ws, cursor)

    def doc_read(
        self, name: Any, path: Any, line_start: Any = None, line_end: Any = None
    ) -> protocol.Span:
        """Lines line_start..line_end (1-based, inclusive) of a file inside the workspace; a
        null line_start is the first line, a null line_end the last."""
        ws = self.core.workspace(name)
        rel = checked_path(path)
        for field, value in (("line_start", line_start), ("line_end", line_end)):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise invalid_params(f"{field} must be a positive integer", field=field)
        if line_start is None:
            line_start = 1
        if line_end is not None and line_end < line_start:
            raise invalid_params("line_end is before line_start", field="line_end")
        try:
            got = read_lines(
                ws.root,
                rel,
                line_start,
                line_end,
                max_file_bytes=ws.options["max_file_mb"] * 1_000_000,
                max_lines=limits.READ_MAX_LINES,
                max_bytes=limits.READ_MAX_BYTES,
            )
        except OutsideRoot as exc:
            raise invalid_params(str(exc), path=path) from None
        except NotInWorkspace as exc:
            raise invalid_params(f"{exc}: {path}", path=path) from None
        except (OSError, ValueError) as exc:
            raise invalid_params(f"cannot read {path}: {exc}", path=path) from None
        if line_start > got.total:
            raise invalid_params(
                f"line_start {line_start} is past the end ({got.total} lines)", field="line_start"
            )
        rel = got.path
        with self.core.store.snapshot() as conn:
            generation = sql.document_generation(conn, ws.id, rel)
        span = protocol.Span(
            workspace=ws.name,
            path=rel,
            line_start=line_start,
            line_end=line_start + len(got.lines) - 1,
            lines_total=got.total,
            text="\n".join(got.lines),
            generation=generation,
        )
        if got.cut:
            span["truncated"] = True
            span["next_line"] = span["line_end"] + 1
        return span

    def doc_indexed(self, name: Any, paths: Any) -> protocol.DocsIndexed:
        """Which of these root-relative paths are live documents of the index (an evaluation's
        golden targets, say): a typo there would count as a miss and look like bad ranking."""
        ws = self.core.workspace(name)
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            raise invalid_params("paths must be an array of strings", field="paths")
        indexed: list[str] = []
        absent: list[str] = []
        with self.core.store.snapshot() as conn:
            for path in dict.fromkeys(paths):
                held = _utf8(path) and sql.document_generation(conn, ws.id, path) is not None
                (indexed if held else absent).append(path)
        return protocol.DocsIndexed(workspace=ws.name, indexed=indexed, absent=absent)


def _utf8(text: str) -> bool:
    """Whether UTF-8 can carry `text` (a lone surrogate from `\\ud800` in JSON cannot, and no
    stored path holds one)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def checked_path(path: Any) -> str:
    """A client's path as the read path takes it: a non-empty relative string; -32602 else.
    Where it leads is `confine.read_inside`'s to check, on the open descriptors."""
    if not isinstance(path, str) or not path or "\x00" in path:
        raise invalid_params("path must be a non-empty string", field="path")
    if os.path.isabs(path) or path.startswith("\\"):
        raise invalid_params("path must be relative to the workspace root", path=path)
    return path

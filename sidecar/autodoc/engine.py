"""The engine: one store, its workspaces' lexical indexes, and the operations on them.

The dispatcher validates and routes requests here; the CLI, the LSP server and tests all go
through the dispatcher, so there is one implementation of every operation.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import config, facets, lookup, protocol
from . import store as queries
from .check import check_workspace
from .embed import Embedder, key_status, load_embedder
from .errors import SWITCHING, UNSUPPORTED, CancelToken, StoreBusyError, invalid_params
from .indexer import Indexer, Progress
from .lexical import LexicalIndex
from .rerank import NO_RANKER, RankPlan, load_ranker
from .search import run_search
from .semantic import SemanticPlan, SignIndex, collect_unused, fill
from .stages.semantic import semantic_coverage, semantic_missing
from .store import Store, Workspace, read_epochs
from .walker import read_markdown

log = logging.getLogger(__name__)

NO_EMBEDDER = "no embedding model configured"
COLLECT_EVERY_S = 600.0  # a long-lived process drops unused vectors at most this often
FILLING = "a new embedding model is filling"


class Engine:
    def __init__(self, db_path: Path | str | None = None) -> None:
        self.store = Store(db_path)
        self._lexical: dict[int, LexicalIndex] = {}
        self._signs: dict[tuple[int, str], SignIndex] = {}
        self._lock = threading.RLock()
        self._workers: dict[str, threading.Thread] = {}
        self._again: set[str] = set()
        self._stop = threading.Event()
        self._write = threading.RLock()  # one writer at a time among this process's threads
        self._collected: dict[int, float] = {}  # workspace id -> when unused vectors went
        # Hooks for long-lived front ends (the LSP server): files that changed since they were
        # indexed were dropped from an answer; a background embedding round finished.
        self.on_stale: Callable[[str, list[str]], None] | None = None
        self.on_embedded: Callable[[str], None] | None = None

    def close(self) -> None:
        self._stop.set()
        for worker in list(self._workers.values()):
            worker.join(timeout=60)
        for lex in self._lexical.values():
            lex.close()
        self._lexical.clear()
        self.store.close()

    def lexical(self, ws: Workspace) -> LexicalIndex:
        with self._lock:
            lex = self._lexical.get(ws.id)
            if lex is None:
                lex = self._lexical[ws.id] = LexicalIndex(self.store.lexical_root / str(ws.id))
            return lex

    def workspace(self, name: Any) -> Workspace:
        return self.store.workspace(name)

    # -- the semantic stage ------------------------------------------------------------------

    def embedder(self, ws: Workspace) -> tuple[Embedder | None, str]:
        """The configured embedder, or None and why not."""
        return self._load(ws.options["embedding"])

    @staticmethod
    def _load(spec: dict[str, Any]) -> tuple[Embedder | None, str]:
        if spec.get("provider") == "none":
            return None, NO_EMBEDDER
        try:
            return load_embedder(spec), ""
        except Exception as exc:  # a missing file or an unreachable server: lexical goes on
            return None, f"embedding model unavailable: {getattr(exc, 'message', exc)}"

    def rank_plan(self, ws: Workspace) -> RankPlan:
        """The configured ranker, or why there is none (a missing model folder, say)."""
        spec = ws.options["ranker"]
        if spec.get("provider", "none") == "none":
            return RankPlan(None, spec, NO_RANKER)
        try:
            return RankPlan(load_ranker(spec), spec)
        except Exception as exc:  # rerank is optional: the search goes on without it
            return RankPlan(None, spec, f"ranker unavailable: {getattr(exc, 'message', exc)}")

    def signs(self, ws: Workspace, embedder: Embedder) -> SignIndex:
        with self._lock:
            key = (ws.id, embedder.model_fp)
            index = self._signs.get(key)
            if index is None:
                path = self.store.vectors_root / f"{ws.id}-{embedder.model_fp}.usearch"
                index = self._signs[key] = SignIndex(embedder.dim, path, self.store.store_id)
            return index

    def semantic_plan(self, ws: Workspace) -> SemanticPlan:
        """Which vector set answers: the configured model's, or during a switch the old one's."""
        target, why = self.embedder(ws)
        if target is None:
            return SemanticPlan(None, None, state="off", reason=why, code=UNSUPPORTED)
        if ws.active_model_fp in (None, target.model_fp):
            return SemanticPlan(target, target.model_fp, signs=self.signs(ws, target))
        old = self._load(ws.active_embedding)[0] if ws.active_embedding else None
        if old is None or old.model_fp != ws.active_model_fp:
            return SemanticPlan(None, None, state="switching", reason=FILLING, code=SWITCHING)
        return SemanticPlan(old, old.model_fp, state="switching", signs=self.signs(ws, old))

    def embed_run(self, name: Any, *, progress=None, incremental: bool = False) -> dict[str, Any]:
        """Fill the configured model's vectors; switch to them once complete.

        `incremental` (the background worker after a save): only the chunks the cached
        coverage knows to be missing are embedded, and unused vectors are collected at most
        every COLLECT_EVERY_S, so a save costs milliseconds, not whole-workspace scans."""
        ws = self.workspace(name)
        target, why = self.embedder(ws)
        if target is None:
            return {"model": None, "embedded": 0, "reason": why}
        self.store.writer()
        spec = ws.options["embedding"]
        if ws.active_model_fp is None:
            self._activate(ws, target, spec)
        started = time.perf_counter()
        error = ""
        among = None
        if incremental:
            with self.store.snapshot() as conn:
                among = sorted(semantic_missing(conn, self.store, ws, target.model_fp))
        try:
            done = fill(self.store, ws, target, progress, self._stop, among)
        except Exception as exc:  # the provider failed: the lexical index stands, say why
            error = str(getattr(exc, "message", exc))
            done = -1  # unknown: the batches stored before the error are counted in coverage
        with self.store.snapshot() as conn:
            embedded, total = semantic_coverage(conn, self.store, ws, target.model_fp)
        switched = embedded >= total and ws.active_model_fp not in (None, target.model_fp)
        if switched:
            self._activate(ws, target, spec)  # the new set is complete: it answers from now on
        due = time.monotonic() - self._collected.get(ws.id, -COLLECT_EVERY_S) >= COLLECT_EVERY_S
        current = ws.active_model_fp in (None, target.model_fp)  # mid-switch, the old set stays
        if not error and (switched or (current and (not incremental or due))):
            collect_unused(self.store, ws, {target.model_fp})
            self._collected[ws.id] = time.monotonic()
        with self.store.snapshot() as conn:  # bring the saved sign index up to date
            signs = self.signs(ws, target)
            epochs = read_epochs(conn, ws.id)
            assert epochs is not None  # the workspace exists: this run holds the writer
            signs.refresh(conn, ws.id, target.model_fp, epochs[1])
        signs.save()
        seconds = time.perf_counter() - started
        return {
            "model": target.name,
            "model_fp": target.model_fp,
            "error": error,
            "embedded": max(done, 0),
            "coverage": {"embedded": embedded, "total": total},
            "seconds": round(seconds, 3),
            "per_second": round(done / seconds, 1) if done > 0 and seconds else None,
        }

    def _activate(self, ws: Workspace, embedder: Embedder, spec: dict[str, Any]) -> None:
        with self.store.transaction() as conn:
            queries.set_active_embedding(
                conn, ws.id, embedder.model_fp, json.dumps(spec, sort_keys=True)
            )

    # -- workspaces --------------------------------------------------------------------------

    def _describe(self, ws: Workspace) -> protocol.WorkspaceInfo:
        with self.store.snapshot() as conn:
            docs, chunks = queries.workspace_counts(conn, ws.id)
        return protocol.WorkspaceInfo(
            name=ws.name,
            root=str(ws.root),
            documents=docs,
            chunks=chunks,
            indexed_at=ws.indexed_at,
            options=ws.options,
        )

    def workspace_add(self, name: Any, root: Any) -> protocol.WorkspaceAdded:
        with self._write:
            ws, created = self.store.add_workspace(name, root)
        return protocol.WorkspaceAdded(**self._describe(ws), created=created)

    def workspace_at(self, root: Path) -> str | None:
        """The workspace whose root is this folder, if any."""
        real = root.resolve()
        for ws in self.store.workspaces():
            if Path(ws.root) == real:
                return ws.name
        return None

    def workspace_for_root(self, root: Path) -> str:
        """The workspace on this folder: the existing one, or a new one named after it."""
        existing = self.workspace_at(root)
        if existing is not None:
            return existing
        real = root.resolve()
        base = re.sub(r"[^A-Za-z0-9._-]+", "-", real.name).strip("-.")[:56] or "workspace"
        taken = {ws.name for ws in self.store.workspaces()}
        name, n = base, 2
        while name in taken:
            name, n = f"{base}-{n}", n + 1
        self.workspace_add(name, str(real))
        return name

    def workspace_list(self) -> list[protocol.WorkspaceInfo]:
        return [self._describe(ws) for ws in self.store.workspaces()]

    def workspace_remove(self, name: Any) -> dict[str, Any]:
        with self._write:
            return self._workspace_remove(name)

    def _workspace_remove(self, name: Any) -> dict[str, Any]:
        self.store.writer()  # take the lease before touching anything
        ws = self.store.remove_workspace(name)
        with self._lock:
            lex = self._lexical.pop(ws.id, None)
            if lex is not None:
                lex.close()
        LexicalIndex.destroy(self.store.lexical_root / str(ws.id))
        with self._lock:
            for key in [k for k in self._signs if k[0] == ws.id]:
                del self._signs[key]
        for path in self.store.vectors_root.glob(f"{ws.id}-*"):
            path.unlink(missing_ok=True)
        return {"name": ws.name, "removed": True}

    def workspace_configure(self, name: Any, changes: Any, *, wait: bool = True) -> dict[str, Any]:
        """Set options in one transaction; re-chunk when a chunking option changed."""
        with self._write:
            return self._workspace_configure(name, changes, wait)

    def _workspace_configure(self, name: Any, changes: Any, wait: bool) -> dict[str, Any]:
        ws = self.workspace(name)
        clean = config.validate(changes)
        rechunk = any(
            config.OPTIONS[k].rechunk and ws.options.get(k) != v for k, v in clean.items()
        )
        ws = self.store.set_options(ws, clean)
        summary = None
        if rechunk and ws.indexed_at is not None:
            summary = self.index_run(ws.name, wait=wait)
        elif "embedding" in clean and ws.indexed_at is not None:
            if wait:
                summary = {"embedding": self.embed_run(ws.name)}
            else:
                self.embed_in_background(ws.name)
                summary = {"embedding": {"background": True}}
        return {**self._describe(self.workspace(ws.name)), "reindexed": summary}

    def workspace_section_size(self, name: Any, tokens: Any) -> dict[str, Any]:
        return self.workspace_configure(name, {"section_tokens": tokens})

    # -- indexing ----------------------------------------------------------------------------

    def index_run(
        self,
        name: Any,
        *,
        progress: Progress | None = None,
        embed_progress=None,
        wait: bool = True,
    ) -> dict[str, Any]:
        """Index the files; then wait for their embeddings (one-shot processes), or let a
        background worker fill them while lexical answers are served (long-lived ones)."""
        ws = self.workspace(name)
        with self._write:
            self.store.writer()
            indexer = Indexer(self.store, self.lexical(ws), ws)
            summary = indexer.run(progress=progress).to_dict()
        if wait:
            summary["embedding"] = self.embed_run(name, progress=embed_progress)
        else:
            self.embed_in_background(name)
            summary["embedding"] = {"background": True}
        return summary

    def index_paths(self, name: Any, paths: list[str]) -> dict[str, Any]:
        """Re-index only these root-relative paths (an editor's save, a watcher's batch)."""
        ws = self.workspace(name)
        with self._write:
            self.store.writer()
            summary = Indexer(self.store, self.lexical(ws), ws).run(paths=paths).to_dict()
        if summary["added"] or summary["modified"]:
            self.embed_in_background(ws.name)
        return summary

    def index_check(self, name: Any, *, progress: Progress | None = None) -> dict[str, Any]:
        """Bring the index up to date (no embedding), then check every document's frontmatter
        against the schema and every link. When another process writes the store, the index
        is checked as that process keeps it."""
        ws = self.workspace(name)
        indexed = True
        try:
            with self._write:
                self.store.writer()
                Indexer(self.store, self.lexical(ws), ws).run(progress=progress)
        except StoreBusyError:
            indexed = False
        shown, _ = facets.schema_location(ws.root, ws.options.get("schema"))
        report = check_workspace(self.store, ws, shown)
        report["indexed"] = indexed
        return report

    def embed_in_background(self, name: str) -> threading.Thread:
        """One worker per workspace; a request while it runs makes it go round once more."""
        with self._lock:
            worker = self._workers.get(name)
            if worker is not None and worker.is_alive():
                self._again.add(name)
                return worker
            worker = threading.Thread(
                target=self._embed_worker, args=(name,), name=f"autodoc-embed-{name}", daemon=True
            )
            self._workers[name] = worker
            worker.start()
            return worker

    def _embed_worker(self, name: str) -> None:
        while not self._stop.is_set():
            try:
                self.embed_run(name, incremental=True)
            except Exception:  # logged; the next request starts a new worker
                log.exception("background embedding of %s failed", name)
                return
            if self.on_embedded is not None:
                self.on_embedded(name)
            with self._lock:
                if name not in self._again:
                    return
                self._again.discard(name)

    def _rank_state(self, ws: Workspace) -> protocol.RankerState:
        plan = self.rank_plan(ws)
        if plan.ranker is None:
            return protocol.RankerState(state="off", model="", error=plan.reason)
        state = protocol.RankerState(
            state="ready",
            model=plan.ranker.name,
            error="",
            window=plan.window,
            meter=plan.ranker.meter.to_dict(),
        )
        if (key := key_status(plan.ranker)) is not None:
            state["api_key"] = key
        return state

    def index_status(self, name: Any) -> protocol.IndexStatus:
        ws = self.workspace(name)
        with self.store.snapshot() as conn:
            problems = [
                protocol.Problem(path=path, kind=kind, message=message)
                for path, kind, message in queries.problems(conn, ws.id, limit=200)
            ]
            n_problems = queries.problem_count(conn, ws.id)
            links, resolved = queries.link_counts(conn, ws.id)
        plan = self.semantic_plan(ws)
        state = self._semantic_state(ws, plan)
        info = protocol.IndexStatus(
            **self._describe(ws),
            db=str(self.store.path),
            writer=self.store.is_writer,
            links=protocol.LinkCounts(total=links, resolved=resolved),
            problems=problems,
            problem_count=n_problems,
            lexical=protocol.LexicalInfo(engine="tantivy", entries=self.lexical(ws).num_docs()),
            semantic=state["semantic"],
            semantic_reason=state["semantic_reason"],
            rank=state["rank"],
        )
        if plan.embedder is not None and plan.model_fp is not None:
            info["semantic_coverage"] = state["semantic_coverage"]
            info["embedding"] = protocol.EmbeddingInfo(
                model=plan.embedder.name,
                model_fp=plan.model_fp,
                dim=plan.embedder.dim,
                meter=plan.embedder.meter.to_dict(),
            )
            if (key := key_status(plan.embedder)) is not None:
                info["embedding"]["api_key"] = key
        return info

    # -- reading -----------------------------------------------------------------------------

    def search(
        self, name: Any, query: Any, opts: Any = None, *, cancel: CancelToken | None = None
    ) -> protocol.Answer:
        ws = self.workspace(name)
        answer = run_search(
            self.store,
            self.lexical(ws),
            ws,
            query,
            opts,
            self.semantic_plan(ws),
            cancel,
            self.rank_plan(ws),
        )
        if answer["stale"] and self.on_stale is not None:
            self.on_stale(ws.name, answer["stale"])
        return answer

    def find(self, name: Any, query: Any, opts: Any = None) -> dict[str, Any]:
        """Documents by a name they hold: title, alias, heading or code identifier."""
        ws = self.workspace(name)
        started = time.perf_counter()
        with self.store.snapshot() as conn:
            answer = lookup.answer(conn, ws.id, query, opts)
        answer["workspace"] = ws.name
        answer["took_ms"] = round((time.perf_counter() - started) * 1000, 2)
        return answer

    def semantic_state(self, name: Any) -> protocol.StageState:
        """What a picker shows beside its stage toggles; cheap (coverage is cached per epoch)."""
        ws = self.workspace(name)
        return self._semantic_state(ws, self.semantic_plan(ws))

    def _semantic_state(self, ws: Workspace, plan: SemanticPlan) -> protocol.StageState:
        state: protocol.SemanticStateName = plan.state or "off"
        coverage = None
        if plan.embedder is not None and plan.model_fp is not None:
            with self.store.snapshot() as conn:
                embedded, total = semantic_coverage(conn, self.store, ws, plan.model_fp)
            coverage = protocol.Coverage(embedded=embedded, total=total)
            if not plan.state:
                state = "ready" if embedded >= total else "partial"
        return protocol.StageState(
            workspace=ws.name,
            semantic=state,
            semantic_reason=plan.reason,
            semantic_coverage=coverage,
            model=plan.embedder.name if plan.embedder is not None else "",
            rank=self._rank_state(ws),
        )

    def changes_since(self, name: Any, cursor: Any = 0) -> dict[str, Any]:
        ws = self.workspace(name)
        if isinstance(cursor, bool) or not isinstance(cursor, int) or cursor < 0:
            raise invalid_params("cursor must be a non-negative integer", field="cursor")
        return self.store.changes_since(ws, cursor)

    def doc_read(
        self, name: Any, path: Any, line_start: Any = None, line_end: Any = None
    ) -> dict[str, Any]:
        """Lines line_start..line_end (1-based, inclusive) of a file inside the workspace; a
        null line_start is the first line, a null line_end the last."""
        ws = self.workspace(name)
        target = resolve_inside(ws.root, path)
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
            data = read_markdown(str(target), ws.options["max_file_mb"] * 1_000_000)
        except (OSError, ValueError) as exc:
            raise invalid_params(f"cannot read {path}: {exc}", path=path) from None
        lines = data.decode("utf-8", "replace").split("\n")
        if data.endswith(b"\n"):
            lines.pop()
        if line_start > max(1, len(lines)):
            raise invalid_params(
                f"line_start {line_start} is past the end ({len(lines)} lines)", field="line_start"
            )
        end = len(lines) if line_end is None else min(line_end, len(lines))
        rel = target.relative_to(ws.root.resolve()).as_posix()
        with self.store.snapshot() as conn:
            generation = queries.document_generation(conn, ws.id, rel)
        return {
            "workspace": ws.name,
            "path": rel,
            "line_start": line_start,
            "line_end": end,
            "lines_total": len(lines),
            "text": "\n".join(lines[line_start - 1 : end]),
            "generation": generation,
        }


def resolve_inside(root: Path, path: Any) -> Path:
    """`path` under `root`, symlinks resolved; -32602 when it would leave the root."""
    if not isinstance(path, str) or not path or "\x00" in path:
        raise invalid_params("path must be a non-empty string", field="path")
    if os.path.isabs(path):
        raise invalid_params("path must be relative to the workspace root", path=path)
    root_real = root.resolve()
    target = (root_real / path).resolve()
    if target != root_real and root_real not in target.parents:
        raise invalid_params("path is outside the workspace root", path=path)
    if not target.is_file():
        raise invalid_params(f"no such file in the workspace: {path}", path=path)
    return target

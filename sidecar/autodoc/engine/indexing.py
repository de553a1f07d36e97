"""Indexing: files into the store and the lexical index, embeddings filled (in the foreground
for one-shot processes, by a background worker for long-lived ones), and the index's status."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from autodoc import store as sql
from autodoc.engine.core import COLLECT_EVERY_S, MIRROR_EVERY_S, EngineCore, lexical_store, log
from autodoc.models.embedders import Embedder, key_status
from autodoc.parse import frontmatter_schema
from autodoc.store import Workspace, read_epochs
from autodoc.vectors.coverage import note_coverage_now, semantic_coverage, semantic_missing
from autodoc.wire import protocol
from autodoc.wire.errors import StoreBusyError, invalid_params

if TYPE_CHECKING:  # the indexer and the fill are imported by what writes: a search loads neither
    from autodoc.index.indexer import Progress


class Indexing:
    """Files into the store and the lexical index, and their vectors: in the foreground or
    by a background fill this object owns (its threads stop with the engine)."""

    def __init__(self, core: EngineCore) -> None:
        self.core = core
        self._workers: dict[str, threading.Thread] = {}  # the background fill, by workspace
        self._again: set[str] = set()  # workspaces saved again while their fill ran
        self._stop = threading.Event()
        self._collected: dict[int, float] = {}  # workspace id -> when unused vectors went

    def embed_run(
        self, name: Any, *, progress=None, incremental: bool = False, notice=None
    ) -> dict[str, Any]:
        """Fill the configured model's vectors; switch to them once complete.

        `incremental` (the background worker after a save): only the chunks the cached
        coverage knows to be missing are embedded, and unused vectors are collected at most
        every COLLECT_EVERY_S, so a save costs milliseconds, not whole-workspace scans."""
        from autodoc.vectors.embedding_cache import collect_unused, fill

        ws = self.core.workspace(name)
        target, why = self.core.embedder(ws)
        if target is None:
            return {"model": None, "embedded": 0, "reason": why}
        self.core.store.writer()
        spec = ws.options["embedding"]
        if ws.active_model_fp is None:
            self._activate(ws, target, spec)
        started = time.perf_counter()
        error = ""
        among = self._to_embed(ws, target, incremental, notice)
        try:
            done = fill(
                self.core.store, ws, target, progress, self._stop, among, self._mirror(ws, target)
            )
        except Exception as exc:  # the provider failed: the lexical index stands, say why
            error = str(getattr(exc, "message", exc))
            done = -1  # unknown: the batches stored before the error are counted in coverage
        with self.core.store.snapshot() as conn:
            embedded, total = semantic_coverage(conn, self.core.store, ws, target.model_fp)
            texts = sql.distinct_text_count(conn, ws.id)
        switched = embedded >= total and ws.active_model_fp not in (None, target.model_fp)
        if switched:
            self._activate(ws, target, spec)  # the new set is complete: it answers from now on
        due = time.monotonic() - self._collected.get(ws.id, -COLLECT_EVERY_S) >= COLLECT_EVERY_S
        current = ws.active_model_fp in (None, target.model_fp)  # mid-switch, the old set stays
        if not error and (switched or (current and (not incremental or due))):
            collect_unused(self.core.store, ws, {target.model_fp})
            self._collected[ws.id] = time.monotonic()
        self._catch_up(ws, target)  # bring the saved vector index up to date
        self.core.signs(ws, target).save()
        note_coverage_now(self.core.store, ws, target.model_fp)  # what a new process reads
        seconds = time.perf_counter() - started
        return {
            "model": target.name,
            "model_fp": target.model_fp,
            "error": error,
            "embedded": max(done, 0),
            "coverage": {"embedded": embedded, "total": total},
            "texts": texts,  # distinct visible texts: one vector serves every chunk holding one
            "seconds": round(seconds, 3),
            "per_second": round(done / seconds, 1) if done > 0 and seconds else None,
        }

    def _to_embed(
        self, ws: Workspace, target: Embedder, incremental: bool, notice
    ) -> list[int] | None:
        """The chunks a fill may find missing (None: any); a notice of what is left."""
        if incremental:
            with self.core.store.snapshot() as conn:
                return sorted(semantic_missing(conn, self.core.store, ws, target.model_fp))
        if notice is not None:  # say what is left, and what an earlier run already stored
            with self.core.store.snapshot() as conn:
                embedded, total = semantic_coverage(conn, self.core.store, ws, target.model_fp)
            if embedded < total:
                kept = f" ({embedded:,} already stored)" if embedded else ""
                notice(f"embedding {total - embedded:,} of {total:,} chunks{kept}")
        return None

    def _catch_up(self, ws: Workspace, target: Embedder) -> None:
        """The writer's refresh of the vector index: rows added, a graph built, a mirror."""
        with self.core.store.snapshot() as conn:
            epochs = read_epochs(conn, ws.id)
            assert epochs is not None  # the workspace exists: this run holds the writer
            self.core.signs(ws, target).refresh(conn, ws.id, target.model_fp, epochs[1], build=True)

    def _mirror(self, ws: Workspace, target: Embedder) -> Callable[[], None] | None:
        """For a remote vector store, a call that mirrors what a fill stored so far, at most
        every MIRROR_EVERY_S: readers in other processes see vectors as they are stored, not
        only when a long fill ends. (The embedded index's readers read SQLite's rows since.)"""
        signs = self.core.signs(ws, target)
        if not signs.remote:
            return None
        last = time.monotonic()

        def mirror() -> None:
            nonlocal last
            if time.monotonic() - last >= MIRROR_EVERY_S:
                self._catch_up(ws, target)
                last = time.monotonic()

        return mirror

    def _activate(self, ws: Workspace, embedder: Embedder, spec: dict[str, Any]) -> None:
        with self.core.store.transaction() as conn:
            sql.set_active_embedding(
                conn, ws.id, embedder.model_fp, json.dumps(spec, sort_keys=True)
            )

    def index_run(
        self,
        name: Any,
        *,
        progress: Progress | None = None,
        embed_progress=None,
        wait: bool = True,
        notice=None,
        indexed=None,
    ) -> dict[str, Any]:
        """Index the files; then wait for their embeddings (one-shot processes), or let a
        background worker fill them while lexical answers are served (long-lived ones).
        `notice(text)` hears what to tell a person before the run goes on; `indexed(summary)`
        the files' summary, before the embedding starts."""
        from autodoc.index.indexer import Indexer

        ws = self.core.workspace(name)
        with self.core.writing:
            self.core.store.writer()
            indexer = Indexer(self.core.store, self.core.lexical(ws), ws)
            summary = indexer.run(progress=progress, notice=notice).to_dict()
        if indexed is not None:
            indexed(summary)
        if wait:
            summary["embedding"] = self.embed_run(name, progress=embed_progress, notice=notice)
        else:
            self.embed_in_background(name)
            summary["embedding"] = {"background": True}
        return summary

    def index_paths(self, name: Any, paths: Any) -> dict[str, Any]:
        """Re-index only these root-relative paths (an editor's save, a watcher's batch)."""
        from autodoc.index.indexer import Indexer

        ws = self.core.workspace(name)
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            raise invalid_params("paths must be a list of root-relative paths", field="paths")
        with self.core.writing:
            self.core.store.writer()
            summary = Indexer(self.core.store, self.core.lexical(ws), ws).run(paths=paths).to_dict()
        if summary["added"] or summary["modified"]:
            self.embed_in_background(ws.name)
        return summary

    def index_check(self, name: Any, *, progress: Progress | None = None) -> dict[str, Any]:
        """Bring the index up to date (no embedding), then check every document's frontmatter
        against the schema and every link. When another process writes the store, the index
        is checked as that process keeps it."""
        from autodoc.index.check import check_workspace
        from autodoc.index.indexer import Indexer

        ws = self.core.workspace(name)
        busy: StoreBusyError | None = None
        try:
            with self.core.writing:
                self.core.store.writer()
                Indexer(self.core.store, self.core.lexical(ws), ws).run(progress=progress)
        except StoreBusyError as err:
            busy = err
        shown, _ = frontmatter_schema.schema_location(ws.root, ws.options.get("schema"))
        report = check_workspace(self.core.store, ws, shown)
        report["indexed"] = busy is None
        if busy is not None:  # why not: who writes the store (the CLI says so, in words)
            report["not_indexed"] = busy.to_dict()
        return report

    def embed_in_background(self, name: str) -> threading.Thread:
        """One worker per workspace; a request while it runs makes it go round once more."""
        with self.core.lock:
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
        hook = self.core.on_embedding
        progress = None if hook is None else (lambda done, total: hook(name, done, total))
        while not self._stop.is_set():
            try:
                self.embed_run(name, progress=progress, incremental=True)
            except Exception:  # logged; the next request starts a new worker
                log.exception("background embedding of %s failed", name)
                return
            if self.core.on_embedded is not None:
                self.core.on_embedded(name)
            with self.core.lock:
                if name not in self._again:
                    return
                self._again.discard(name)

    def stop(self) -> None:
        """End the background fills: each stops between batches, and is waited for."""
        self._stop.set()
        for worker in list(self._workers.values()):
            worker.join(timeout=60)

    def index_status(self, name: Any) -> protocol.IndexStatus:
        ws = self.core.workspace(name)
        with self.core.store.snapshot() as conn:
            problems = [
                protocol.Problem(path=path, kind=kind, message=message)
                for path, kind, message in sql.problems(conn, ws.id, limit=200)
            ]
            n_problems = sql.problem_count(conn, ws.id)
            links, resolved = sql.link_counts(conn, ws.id)
        plan = self.core.semantic_plan(ws)
        state = self.core.stage_state(ws, plan)
        info = protocol.IndexStatus(
            **self.core.describe(ws),
            db=str(self.core.store.path),
            writer=self.core.store.is_writer,
            links=protocol.LinkCounts(total=links, resolved=resolved),
            problems=problems,
            problem_count=n_problems,
            lexical=protocol.LexicalInfo(
                engine="tantivy" if lexical_store(ws) is None else "qdrant",
                entries=self.core.lexical(ws).num_docs(),
            ),
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

"""The engine's core: one store, its workspaces' lexical indexes and sign indexes, and the
plans each search takes (which embedder and vector set, which ranker), with the workspace
descriptions every other part reports."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from autodoc import store as sql
from autodoc.bm25.analyzer import Lexical
from autodoc.bm25.tantivy_index import LexicalIndex
from autodoc.models.embedders import Embedder, key_status, load_embedder
from autodoc.models.rankers import NO_RANKER, RankPlan, load_ranker
from autodoc.store import Store, Workspace
from autodoc.vectors.coverage import semantic_coverage
from autodoc.vectors.nearest import SemanticPlan, Vectors
from autodoc.vectors.usearch_index import VectorIndex
from autodoc.wire import protocol
from autodoc.wire.errors import SWITCHING, UNSUPPORTED

log = logging.getLogger("autodoc.engine")

NO_EMBEDDER = "no embedding model configured"
COLLECT_EVERY_S = 600.0  # a long-lived process drops unused vectors at most this often
MIRROR_EVERY_S = 2.0  # a fill mirrors to a remote vector store at most this often
FILLING = "a new embedding model is filling"


def store_spec(ws: Workspace) -> dict[str, Any]:
    """Where a workspace's vectors (and, for Qdrant, its lexical index) are kept."""
    return ws.options.get("embedding", {}).get("store") or {"kind": "embedded"}


def lexical_store(ws: Workspace) -> dict[str, Any] | None:
    """The Qdrant store a workspace's lexical index lives in (None: Tantivy on this machine)."""
    where = store_spec(ws)
    if where["kind"] != "qdrant" or where.get("lexical", "qdrant") != "qdrant":
        return None
    return where


def lexical_home(ws: Workspace) -> tuple[Any, ...] | None:
    """What picks a workspace's lexical index: Tantivy (None), or where its Qdrant collection
    is. Other store fields (a timeout, the key's variable) do not move it."""
    where = lexical_store(ws)
    if where is None:
        return None
    return (where.get("url"), where.get("path"), where.get("collection"))


class EngineCore:
    def __init__(self, db_path: Path | str | None = None) -> None:
        self.store = Store(db_path)
        self.lexical_indexes: dict[int, tuple[tuple[Any, ...] | None, Lexical]] = {}
        self.sign_indexes: dict[tuple[int, str], Vectors] = {}
        self.lock = threading.RLock()
        self.writing = threading.RLock()  # one writer at a time among this process's threads
        # Hooks for long-lived front ends (the LSP server): files that changed since they were
        # indexed were dropped from an answer; a background embedding round finished.
        self.on_stale: Callable[[str, list[str]], None] | None = None
        self.on_embedded: Callable[[str], None] | None = None
        # (workspace, chunks embedded, chunks to embed) as the background worker goes
        self.on_embedding: Callable[[str, int, int], None] | None = None

    def close(self) -> None:
        for _, lex in self.lexical_indexes.values():
            lex.close()
        self.lexical_indexes.clear()
        self.store.close()

    def lexical(self, ws: Workspace) -> Lexical:
        """The workspace's lexical index: Tantivy beside the store, or sparse vectors in the
        configured Qdrant (a changed store opens the other one)."""
        home = lexical_home(ws)
        with self.lock:
            held = self.lexical_indexes.get(ws.id)
            if held is not None and held[0] == home:
                return held[1]
            if held is not None:
                held[1].close()
            lex = self.open_lexical(ws)
            self.lexical_indexes[ws.id] = (home, lex)
            return lex

    def open_lexical(self, ws: Workspace) -> Lexical:
        where = lexical_store(ws)
        if where is None:
            return LexicalIndex(self.store.lexical_root / str(ws.id))
        from autodoc.bm25.qdrant_sparse import QdrantLexical  # the optional qdrant-client

        local = self.store.lexical_root / f"{ws.id}.qdrant"  # its lengths and format
        return QdrantLexical(where, local, self.store.store_id, ws.id)

    def workspace(self, name: Any) -> Workspace:
        return self.store.workspace(name)

    def embedder(self, ws: Workspace) -> tuple[Embedder | None, str]:
        """The configured embedder, or None and why not."""
        return self.load_embedder(ws.options["embedding"])

    @staticmethod
    def load_embedder(spec: dict[str, Any]) -> tuple[Embedder | None, str]:
        if spec.get("provider") == "none":
            return None, NO_EMBEDDER
        try:  # where the vectors are kept is not the model's business
            return load_embedder({k: v for k, v in spec.items() if k != "store"}), ""
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

    def signs(self, ws: Workspace, embedder: Embedder) -> Vectors:
        """The vector set's index: in-process beside the store, or the configured Qdrant."""
        with self.lock:
            key = (ws.id, embedder.model_fp)
            index = self.sign_indexes.get(key)
            if index is None:
                where = store_spec(ws)
                if where["kind"] == "qdrant":
                    from autodoc.vectors.qdrant_dense import (
                        QdrantVectors,  # the optional qdrant-client
                    )

                    index = QdrantVectors(
                        where, embedder.dim, self.store.store_id, ws.id, embedder.model_fp
                    )
                else:
                    path = self.store.vectors_root / f"{ws.id}-{embedder.model_fp}.usearch"
                    index = VectorIndex(embedder.dim, path, self.store.store_id)
                self.sign_indexes[key] = index
            return index

    def semantic_plan(self, ws: Workspace) -> SemanticPlan:
        """Which vector set answers: the configured model's, or during a switch the old one's."""
        target, why = self.embedder(ws)
        if target is None:
            return SemanticPlan(None, None, state="off", reason=why, code=UNSUPPORTED)
        if ws.active_model_fp in (None, target.model_fp):
            return SemanticPlan(target, target.model_fp, open_signs=partial(self.signs, ws, target))
        old = self.load_embedder(ws.active_embedding)[0] if ws.active_embedding else None
        if old is None or old.model_fp != ws.active_model_fp:
            return SemanticPlan(None, None, state="switching", reason=FILLING, code=SWITCHING)
        opened = partial(self.signs, ws, old)
        return SemanticPlan(old, old.model_fp, state="switching", open_signs=opened)

    def describe(self, ws: Workspace) -> protocol.WorkspaceInfo:
        with self.store.snapshot() as conn:
            docs, chunks = sql.workspace_counts(conn, ws.id)
        return protocol.WorkspaceInfo(
            name=ws.name,
            root=str(ws.root),
            documents=docs,
            chunks=chunks,
            indexed_at=ws.indexed_at,
            options=ws.options,
        )

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

    def stage_state(self, ws: Workspace, plan: SemanticPlan) -> protocol.StageState:
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

"""Stage 2, semantic: the query's vector against the workspace's, 1-bit prefilter then exact
float32 rescoring (spec §3; the vector cache and its index are `autodoc/semantic.py`)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import ClassVar

from ..errors import EMBED_FAILED, UNSUPPORTED
from ..semantic import semantic_candidates
from ..store import Store, Workspace, read_epochs
from .base import Phase, QueryContext, Skip


class SemanticStage:
    name: ClassVar[str] = "semantic"
    toggle: ClassVar[bool] = True
    retriever: ClassVar[bool] = True
    phase: ClassVar[Phase] = "snapshot"

    def unavailable(self, ctx: QueryContext) -> Skip | None:
        plan = ctx.semantic
        if plan.embedder is not None:
            return None
        return Skip(
            plan.reason,
            plan.code or UNSUPPORTED,
            f"semantic search unavailable: {plan.reason}",
            {"stage": "semantic", "reason": plan.reason},
        )

    def prepare(self, ctx: QueryContext) -> Skip | None:
        """Embed the query before the snapshot opens: a provider may take a while."""
        embedder = ctx.semantic.embedder
        if ctx.wordless or embedder is None:
            return None
        with ctx.timed("embed_ms"):
            try:
                ctx.qvec = embedder.embed([ctx.query.text])[0]
            except Exception as exc:  # a provider error: answer lexically and say so
                reason = f"embedding the query failed: {getattr(exc, 'message', exc)}"
                return Skip(reason, EMBED_FAILED, reason, {"stage": "semantic"})
        return None

    def run(self, ctx: QueryContext, conn: sqlite3.Connection | None) -> Skip | None:
        plan = ctx.semantic
        assert conn is not None and plan.signs is not None and plan.model_fp is not None
        with ctx.timed("semantic_ms"):
            plan.signs.refresh(conn, ctx.ws.id, plan.model_fp, ctx.epochs[1])
            plan.coverage = semantic_coverage(conn, ctx.store, ctx.ws, plan.model_fp, ctx.epochs)
            found: list[tuple[int, int]] = []
            if ctx.qvec is not None:
                embedded, total = plan.coverage
                scored, cut = semantic_candidates(
                    conn,
                    ctx.store,
                    plan.signs,
                    ctx.ws,
                    plan.model_fp,
                    ctx.qvec,
                    ctx.allowed,
                    complete=embedded >= total,
                    chunks=total,
                )
                found = [(c, d) for c, d, _ in scored]
                ctx.signals["semantic"] = [x for _, _, x in scored]
                ctx.truncated |= cut
            ctx.ranked.append(("semantic", found))
        return None

    def describe(self, ctx: QueryContext, conn: sqlite3.Connection | None, ran: bool) -> None:
        plan = ctx.semantic
        if not ran and conn is not None and plan.embedder is not None and plan.model_fp is not None:
            # Not asked for (a picker's box unchecked): still say how complete the vectors are.
            plan.coverage = semantic_coverage(conn, ctx.store, ctx.ws, plan.model_fp, ctx.epochs)


# -- coverage: how many visible chunks have a vector ---------------------------------------


@dataclass
class _Coverage:
    epochs: tuple[int, int] | None
    max_id: int  # the highest visible chunk id checked
    missing: set[int]  # visible chunks without a vector
    total: int
    vectors: int  # this model's vectors in the workspace: fewer means some were deleted


_COVERAGE: dict[tuple[str, int, str], _Coverage] = {}

_MISSING = (
    "SELECT c.id FROM chunks c LEFT JOIN embeddings e ON e.workspace_id = c.workspace_id"
    " AND e.model_fp = ? AND e.text_hash = c.text_hash"
    " WHERE c.workspace_id = ? AND c.state = 1 AND e.id IS NULL"
)


def semantic_coverage(
    conn: sqlite3.Connection,
    store: Store,
    ws: Workspace,
    model_fp: str,
    epochs: tuple[int, int] | None = None,
) -> tuple[int, int]:
    """(embedded, total) visible chunks, kept incrementally: after a change only the chunks
    published since (their ids are higher) and those still missing a vector are looked at,
    not the whole workspace (cpp-docs: ~350 ms for a full count on 2 cores)."""
    key = (str(store.path), ws.id, model_fp)
    epochs = read_epochs(conn, ws.id) if epochs is None else (epochs[0], epochs[1])
    c = _COVERAGE.get(key)
    if c is not None and c.epochs == epochs:
        return c.total - len(c.missing), c.total
    max_id = conn.execute(
        "SELECT coalesce(max(id), 0) FROM chunks WHERE workspace_id = ? AND state = 1", (ws.id,)
    ).fetchone()[0]
    vectors = conn.execute(
        "SELECT count(*) FROM embeddings WHERE workspace_id = ? AND model_fp = ?",
        (ws.id, model_fp),
    ).fetchone()[0]
    # Vectors normally only arrive (collection removes texts no chunk uses): a first look,
    # ids that went back (a rebuilt store) or vectors that went away mean a full count.
    if c is None or max_id < c.max_id or vectors < c.vectors:
        missing = {r[0] for r in conn.execute(_MISSING, (model_fp, ws.id))}
    else:
        missing = {
            r[0] for r in conn.execute(_MISSING + " AND c.id > ?", (model_fp, ws.id, c.max_id))
        }
        still = sorted(c.missing)
        for start in range(0, len(still), 900):
            part = still[start : start + 900]
            marks = ",".join("?" * len(part))
            missing.update(
                r[0]
                for r in conn.execute(
                    _MISSING + f" AND c.id IN ({marks})", (model_fp, ws.id, *part)
                )
            )
    total = conn.execute(
        "SELECT count(*) FROM chunks WHERE workspace_id = ? AND state = 1", (ws.id,)
    ).fetchone()[0]
    _COVERAGE[key] = _Coverage(epochs, max_id, missing, total, vectors)
    return total - len(missing), total


def semantic_missing(
    conn: sqlite3.Connection, store: Store, ws: Workspace, model_fp: str
) -> set[int]:
    """The visible chunk ids without a vector in this snapshot (from the kept coverage)."""
    semantic_coverage(conn, store, ws, model_fp)
    return set(_COVERAGE[(str(store.path), ws.id, model_fp)].missing)

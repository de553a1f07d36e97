"""Semantic coverage: how many of a workspace's visible chunks have a vector of a model, kept
incrementally per store, workspace and model (status, the answer's `semantic_coverage`, and
which chunks a fill must embed all read it).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from autodoc.store import (
    Store,
    Workspace,
    chunks_missing_vectors,
    live_chunk_stats,
    note_coverage,
    noted_coverage,
    read_epochs,
    vector_count,
)


@dataclass
class _Coverage:
    epochs: tuple[int, int] | None
    max_id: int  # the highest visible chunk id checked
    missing: set[int]  # visible chunks without a vector
    total: int
    vectors: int  # this model's vectors in the workspace: fewer means some were deleted


_COVERAGE: dict[tuple[str, int, str], _Coverage] = {}
# (epochs, embedded, total) last read from the writer's note, per store, workspace and model
_NOTED: dict[tuple[str, int, str], tuple[tuple[int, int], int, int]] = {}


def semantic_coverage(
    conn: sqlite3.Connection,
    store: Store,
    ws: Workspace,
    model_fp: str,
    epochs: tuple[int, int] | None = None,
    *,
    noted: bool = True,
) -> tuple[int, int]:
    """(embedded, total) visible chunks, kept incrementally: after a change only the chunks
    published since (their ids are higher) and those still missing a vector are looked at,
    not the whole workspace (cpp-docs: ~350 ms for a full count on 2 cores). Before counting,
    what the writer counted at these very epochs is read, when it did (`noted`): a one-shot
    search on cpp-docs reads one row instead of counting for ~150 ms."""
    key = (str(store.path), ws.id, model_fp)
    epochs = read_epochs(conn, ws.id) if epochs is None else (epochs[0], epochs[1])
    c = _COVERAGE.get(key)
    if c is not None and c.epochs == epochs:
        return c.total - len(c.missing), c.total
    if noted and epochs is not None:
        held = _NOTED.get(key)
        if held is not None and held[0] == epochs:
            return held[1], held[2]
        counted = noted_coverage(conn, ws.id, model_fp, epochs)
        if counted is not None:
            _NOTED[key] = (epochs, *counted)
            return counted
    total, max_id = live_chunk_stats(conn, ws.id)
    vectors = vector_count(conn, ws.id, model_fp)
    # Vectors normally only arrive (collection removes texts no chunk uses): a first look,
    # ids that went back (a rebuilt store) or vectors that went away mean a full count.
    if c is None or max_id < c.max_id or vectors < c.vectors:
        missing = chunks_missing_vectors(conn, ws.id, model_fp)
    else:
        missing = chunks_missing_vectors(conn, ws.id, model_fp, above=c.max_id)
        missing |= chunks_missing_vectors(conn, ws.id, model_fp, among=sorted(c.missing))
    _COVERAGE[key] = _Coverage(epochs, max_id, missing, total, vectors)
    return total - len(missing), total


def semantic_missing(
    conn: sqlite3.Connection, store: Store, ws: Workspace, model_fp: str
) -> set[int]:
    """The visible chunk ids without a vector in this snapshot (from the kept coverage)."""
    semantic_coverage(conn, store, ws, model_fp, noted=False)
    return set(_COVERAGE[(str(store.path), ws.id, model_fp)].missing)


def note_coverage_now(store: Store, ws: Workspace, model_fp: str) -> None:
    """The writer counts the coverage at the store's epochs now and keeps it in the store, so a
    new process (a one-shot `autodoc search`) reads it instead of counting."""
    with store.snapshot() as conn:
        epochs = read_epochs(conn, ws.id)
        if epochs is None:
            return
        embedded, total = semantic_coverage(conn, store, ws, model_fp, epochs, noted=False)
        if noted_coverage(conn, ws.id, model_fp, epochs) == (embedded, total):
            return  # noted already (a pass that embedded nothing): no write
    with store.transaction() as conn:
        note_coverage(conn, ws.id, model_fp, epochs, embedded, total)

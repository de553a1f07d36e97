"""The vector cache's rows: the sign index's reads, the cache's fill and collection, the
semantic stage's reads, and what a Qdrant mirror copies."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy as np

from autodoc.store.db import Store
from autodoc.store.schema import COVERAGE_NOTE, DEAD, LIVE


def vector_stats(conn: sqlite3.Connection, ws_id: int, model_fp: str) -> tuple[int, int]:
    """(this model's vectors in the workspace, the highest vector id the store ever gave).
    The id is AUTOINCREMENT's, never handed out twice: lower than one an index holds only in a
    rebuilt store. (The highest id held now falls whenever the newest vectors are collected: a
    reader that took that for a rebuilt store threw its graph away and answered unlike every
    other process.)"""
    count = conn.execute(
        "SELECT count(*) FROM embeddings WHERE workspace_id = ? AND model_fp = ?",
        (ws_id, model_fp),
    ).fetchone()[0]
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'embeddings'").fetchone()
    return count, row[0] if row is not None else 0


def vector_codes(
    conn: sqlite3.Connection, ws_id: int, model_fp: str, *, above: int = 0, upto: int | None = None
) -> list[tuple[int, str, bytes]]:
    """(vector id, text hash, sign code) of this model's vectors with ids above `above` (and
    at most `upto`), by id."""
    if upto is None:
        sql, args = " AND id > ?", (ws_id, model_fp, above)
    else:
        sql, args = " AND id <= ?", (ws_id, model_fp, upto)
    rows = conn.execute(
        "SELECT id, text_hash, bits FROM embeddings WHERE workspace_id = ? AND model_fp = ?"
        + sql
        + " ORDER BY id",
        args,
    ).fetchall()
    return [(r[0], r[1], r[2]) for r in rows]


def vector_rows(
    conn: sqlite3.Connection, ws_id: int, model_fp: str, *, above: int
) -> list[tuple[int, str, bytes, bytes]]:
    """(vector id, text hash, sign code, float32) of this model's vectors above `above`, by id."""
    return conn.execute(
        "SELECT id, text_hash, bits, f32 FROM embeddings WHERE workspace_id = ? AND model_fp = ?"
        " AND id > ? ORDER BY id",
        (ws_id, model_fp, above),
    ).fetchall()


def vector_ids(conn: sqlite3.Connection, ws_id: int, model_fp: str) -> np.ndarray:
    """Every id of this model's vectors in the workspace, ascending."""
    cur = conn.execute(
        "SELECT id FROM embeddings WHERE workspace_id = ? AND model_fp = ? ORDER BY id",
        (ws_id, model_fp),
    )
    return np.fromiter((r[0] for r in cur), dtype=np.uint64)


def chunks_to_mirror(
    conn: sqlite3.Connection,
    ws_id: int,
    model_fp: str,
    *,
    above: int = 0,
    limit: int = -1,
    among: Sequence[int] | None = None,
) -> list[tuple[int, int, int, int, str, bytes, int]]:
    """(chunk id, document id, generation, state, text hash, float32, vector id) of the chunks
    that are not retired and have a vector of this model: up to `limit` with ids above
    `above`, or those of `among`; by id. What a remote vector store mirrors."""
    scope = "" if among is None else f" AND c.id IN ({','.join(str(int(i)) for i in among)})"
    return conn.execute(
        "SELECT c.id, c.document_id, c.generation, c.state, c.text_hash, e.f32, e.id"
        " FROM chunks c"
        " JOIN embeddings e ON e.workspace_id = c.workspace_id AND e.model_fp = ?"
        f" AND e.text_hash = c.text_hash WHERE c.workspace_id = ? AND c.state != {DEAD}"
        f" AND c.id > ?{scope} ORDER BY c.id LIMIT ?",
        (model_fp, ws_id, above, limit),
    ).fetchall()


def retired_chunk_ids(conn: sqlite3.Connection, ws_id: int) -> list[int]:
    """Chunks retired and not yet purged (few: purged after a grace period)."""
    rows = conn.execute(
        f"SELECT id FROM chunks WHERE workspace_id = ? AND state = {DEAD} ORDER BY id", (ws_id,)
    )
    return [r[0] for r in rows]


def chunk_extent(conn: sqlite3.Connection, ws_id: int) -> tuple[int, int]:
    """(every chunk of the workspace, retired or not; the highest chunk id of the store): a
    remote store holding more of its points than the first holds orphans, and a point above
    the second was written after this snapshot."""
    count = conn.execute("SELECT count(*) FROM chunks WHERE workspace_id = ?", (ws_id,))
    highest = conn.execute("SELECT coalesce(max(id), 0) FROM chunks")
    return count.fetchone()[0], highest.fetchone()[0]


def existing_chunk_ids(conn: sqlite3.Connection, ids: Sequence[int]) -> set[int]:
    """Those of these chunk ids still in the store (retired or not)."""
    return set(Store.column(conn, "SELECT id FROM chunks WHERE id IN ({marks})", list(ids)))


def distinct_text_count(conn: sqlite3.Connection, ws_id: int) -> int:
    """Distinct visible chunk texts: the vectors a full set holds (chunks sharing a text, a
    repeated boilerplate section, share one)."""
    return conn.execute(
        f"SELECT count(DISTINCT text_hash) FROM chunks WHERE workspace_id = ? AND state = {LIVE}",
        (ws_id,),
    ).fetchone()[0]


def missing_text_count(conn: sqlite3.Connection, ws_id: int, model_fp: str) -> int:
    """Distinct visible chunk texts with no vector of this model."""
    return conn.execute(
        "SELECT count(DISTINCT c.text_hash) FROM chunks c WHERE c.workspace_id = ?"
        f" AND c.state = {LIVE} AND NOT EXISTS (SELECT 1 FROM embeddings e"
        " WHERE e.workspace_id = c.workspace_id AND e.model_fp = ? AND e.text_hash = c.text_hash)",
        (ws_id, model_fp),
    ).fetchone()[0]


def vector_coverage(conn: sqlite3.Connection, ws_id: int, model_fp: str) -> tuple[int, int]:
    """(visible chunks with a vector, visible chunks), counted."""
    total, embedded = conn.execute(
        "SELECT count(*), count(e.id) FROM chunks c LEFT JOIN embeddings e"
        " ON e.workspace_id = c.workspace_id AND e.model_fp = ? AND e.text_hash = c.text_hash"
        f" WHERE c.workspace_id = ? AND c.state = {LIVE}",
        (model_fp, ws_id),
    ).fetchone()
    return embedded, total


def note_coverage(
    conn: sqlite3.Connection,
    ws_id: int,
    model_fp: str,
    epochs: tuple[int, int],
    embedded: int,
    total: int,
) -> None:
    """Keep the coverage the writer counted at these (text, vector) epochs."""
    note = json.dumps({"epochs": list(epochs), "embedded": embedded, "total": total})
    conn.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?)"
        " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (f"{COVERAGE_NOTE}{ws_id}:{model_fp}", note),
    )


def noted_coverage(
    conn: sqlite3.Connection, ws_id: int, model_fp: str, epochs: tuple[int, int]
) -> tuple[int, int] | None:
    """(embedded, total) as the writer counted them at exactly these epochs, else None."""
    row = conn.execute(
        "SELECT value FROM meta WHERE key = ?", (f"{COVERAGE_NOTE}{ws_id}:{model_fp}",)
    ).fetchone()
    if row is None:
        return None
    try:
        note = json.loads(row[0])
        if tuple(note["epochs"]) == tuple(epochs):
            return int(note["embedded"]), int(note["total"])
    except (ValueError, KeyError, TypeError):
        pass  # unreadable: counted again
    return None


def texts_to_embed(
    conn: sqlite3.Connection, ws_id: int, model_fp: str, among: Sequence[int] | None, limit: int
) -> list[tuple[str, str, str]]:
    """(text hash, breadcrumb, text) of up to `limit` visible texts with no vector, in document
    order; `among`: only these chunk ids can be missing."""
    scope = "" if among is None else f" AND c.id IN ({','.join(str(int(i)) for i in among)})"
    rows = conn.execute(
        "SELECT c.text_hash, min(c.breadcrumb), min(c.text) FROM chunks c"
        f" WHERE c.workspace_id = ? AND c.state = {LIVE}{scope} AND NOT EXISTS ("
        " SELECT 1 FROM embeddings e WHERE e.workspace_id = c.workspace_id"
        " AND e.model_fp = ? AND e.text_hash = c.text_hash)"
        " GROUP BY c.text_hash ORDER BY min(c.document_id), min(c.ordinal) LIMIT ?",
        (ws_id, model_fp, limit),
    ).fetchall()
    return [(r[0], r[1], r[2]) for r in rows]


def add_vectors(conn: sqlite3.Connection, ws_id: int, rows: list[tuple[Any, ...]]) -> None:
    """Store (workspace, model, text hash, f32, bits) rows; the workspace's vectors moved on."""
    conn.executemany(
        "INSERT OR IGNORE INTO embeddings(workspace_id, model_fp, text_hash, f32, bits)"
        " VALUES (?, ?, ?, ?, ?)",
        rows,
    )
    conn.execute("UPDATE workspaces SET vector_epoch = vector_epoch + 1 WHERE id = ?", (ws_id,))


def collections(conn: sqlite3.Connection, ws_id: int) -> int:
    """How many times vectors were collected in this workspace."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (f"collected:{ws_id}",)).fetchone()
    return int(row[0]) if row else 0


def collect_vectors(conn: sqlite3.Connection, ws_id: int, keep: set[str]) -> int:
    """Drop vectors no visible chunk uses and every vector of models not in `keep`; count a
    collection when any went. Returns how many went."""
    marks = ",".join("?" * len(keep)) or "''"
    n = conn.execute(
        f"DELETE FROM embeddings WHERE workspace_id = ? AND (model_fp NOT IN ({marks})"
        " OR NOT EXISTS (SELECT 1 FROM chunks c WHERE c.workspace_id = embeddings.workspace_id"
        " AND c.text_hash = embeddings.text_hash AND c.state != 0))",
        (ws_id, *keep),
    ).rowcount
    if n:
        conn.execute("UPDATE workspaces SET vector_epoch = vector_epoch + 1 WHERE id = ?", (ws_id,))
        conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, '1') ON CONFLICT(key)"
            " DO UPDATE SET value = CAST(value AS INTEGER) + 1",
            (f"collected:{ws_id}",),
        )
    return n


def live_chunk_count_of(conn: sqlite3.Connection, document_ids: Sequence[int]) -> int:
    """Visible chunks of these documents (an index-only count)."""
    sql = f"SELECT count(*) FROM chunks WHERE document_id IN ({{marks}}) AND state = {LIVE}"
    return sum(Store.column(conn, sql, sorted(document_ids)))


def live_text_hashes_of(conn: sqlite3.Connection, document_ids: Sequence[int]) -> list[str]:
    sql = f"SELECT text_hash FROM chunks WHERE document_id IN ({{marks}}) AND state = {LIVE}"
    return Store.column(conn, sql, sorted(document_ids))


def live_chunks_with_texts(
    conn: sqlite3.Connection, ws_id: int, hashes: Sequence[str]
) -> list[tuple]:
    """(chunk id, document id, text hash) of the visible chunks holding these texts."""
    return Store.rows(
        conn,
        # INDEXED BY: without statistics SQLite would rather scan (workspace, state).
        "SELECT c.id, c.document_id, c.text_hash FROM chunks c INDEXED BY chunks_by_hash"
        f" WHERE c.text_hash IN ({{marks}}) AND c.workspace_id = ? AND c.state = {LIVE}",
        hashes,
        ws_id,
    )


def documents_missing_vectors(
    conn: sqlite3.Connection, document_ids: Sequence[int], model_fp: str
) -> set[int]:
    """Those of these documents with a visible chunk that has no vector of this model."""
    return {
        r[0]
        for r in Store.in_batches(
            conn,
            "SELECT DISTINCT c.document_id FROM chunks c WHERE c.document_id IN ({marks})"
            f" AND c.state = {LIVE} AND NOT EXISTS (SELECT 1 FROM embeddings e"
            " WHERE e.workspace_id = c.workspace_id AND e.model_fp = ?"
            " AND e.text_hash = c.text_hash)",
            document_ids,
            model_fp,
        )
    }

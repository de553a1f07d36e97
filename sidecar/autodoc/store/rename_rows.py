"""The rows a rename is planned from (`links.rename`, `links.prepare_rename`,
`links.file_renamed`): every link to a note, the names a link key could find, and the links
that look a key up. Reads only: the editor applies the edits, the indexer sees the files after."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from autodoc.store.db import Store


def links_to(conn: sqlite3.Connection, doc_id: int) -> list[tuple[str, int, str, str, str]]:
    """(source path, line, kind, target, heading) of every link from a live document to this
    one, record links (a guess from a status's number, never written as a link) aside."""
    rows = conn.execute(
        "SELECT d.path, l.line, l.kind, l.target, l.heading FROM links l"
        " JOIN documents d ON d.id = l.source_id"
        " WHERE l.target_id = ? AND d.deleted = 0 AND l.kind != 'record'"
        " ORDER BY d.path, l.line",
        (doc_id,),
    )
    return [(r[0], r[1], r[2], r[3], r[4]) for r in rows]


def name_holders(
    conn: sqlite3.Connection, ws_id: int, keys: Sequence[str]
) -> dict[str, list[tuple[int, int]]]:
    """{key: [(rank, document id), …]} of the live documents each name key finds, as the
    indexer resolves a link (`names`: path, stem, title, alias, …)."""
    out: dict[str, list[tuple[int, int]]] = {k: [] for k in keys}
    sql = (
        "SELECT n.key, n.rank, n.document_id FROM names n JOIN documents d"
        " ON d.id = n.document_id WHERE n.key IN ({marks}) AND n.workspace_id = ?"
        " AND d.deleted = 0"
    )
    for key, rank, doc_id in Store.rows(conn, sql, list(keys), ws_id):
        out[key].append((rank, doc_id))
    return out


def names_of(conn: sqlite3.Connection, doc_id: int) -> list[tuple[str, int]]:
    """(key, rank) of every name the document answers to."""
    rows = conn.execute("SELECT key, rank FROM names WHERE document_id = ?", (doc_id,))
    return [(r[0], r[1]) for r in rows]


def links_looking_up(
    conn: sqlite3.Connection, ws_id: int, keys: Sequence[str]
) -> list[tuple[str, int, str, str, str, int, int | None]]:
    """(source path, line, kind, target, key, reach, target id or None) of the links from live
    documents whose key is one of `keys`: those a new name could take over."""
    sql = (
        "SELECT d.path, l.line, l.kind, l.target, l.key, l.reach, l.target_id FROM links l"
        " JOIN documents d ON d.id = l.source_id WHERE l.key IN ({marks})"
        " AND l.workspace_id = ? AND d.deleted = 0 AND l.kind != 'record'"
    )
    return [tuple(r) for r in Store.rows(conn, sql, list(keys), ws_id)]


def document_paths_of(conn: sqlite3.Connection, ids: Sequence[int]) -> dict[int, str]:
    """{document id: path} of these documents."""
    sql = "SELECT id, path FROM documents WHERE id IN ({marks})"
    return {r[0]: r[1] for r in Store.rows(conn, sql, list(ids))}


def live_path_keys(conn: sqlite3.Connection, ws_id: int, key: str) -> list[str]:
    """Paths of the live documents whose path, without `.md` and lower-cased, is `key` (a
    new file name that only differs in case still collides: links are case-blind)."""
    rows = conn.execute(
        "SELECT d.path FROM names n JOIN documents d ON d.id = n.document_id"
        " WHERE n.workspace_id = ? AND n.key = ? AND n.rank = 0 AND d.deleted = 0",
        (ws_id, key),
    )
    return [r[0] for r in rows]


def note_row(conn: sqlite3.Connection, doc_id: int) -> tuple[str, str, list[str]]:
    """(path, title, aliases) of a document, as the index read them."""
    row = conn.execute("SELECT path, title, aliases FROM documents WHERE id = ?", (doc_id,))
    path, title, aliases = row.fetchone()
    found = json.loads(aliases) if aliases else []
    return path, title or "", [str(a) for a in found] if isinstance(found, list) else []

"""The name index's rows (`search.find`): the dictionary of names, their suffix-join keys and
their sites, and the section around a site."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from autodoc.store.db import Store
from autodoc.store.schema import LIVE


def detach_names(conn: sqlite3.Connection, document_ids: Sequence[int]) -> set[int]:
    """Delete these documents' name sites; the names they used (to check for orphans)."""
    sql = "SELECT DISTINCT symbol_id FROM symbol_sites WHERE document_id IN ({marks})"
    used = set(Store.column(conn, sql, document_ids))
    conn.executemany("DELETE FROM symbol_sites WHERE document_id = ?", [(d,) for d in document_ids])
    return used


def orphan_names(conn: sqlite3.Connection, symbol_ids: Sequence[int]) -> list[tuple[int, str]]:
    """(id, name) of these names that no site uses any more."""
    rows = Store.rows(
        conn,
        "SELECT id, name FROM symbols WHERE id IN ({marks}) AND NOT EXISTS"
        " (SELECT 1 FROM symbol_sites s WHERE s.symbol_id = symbols.id)",
        symbol_ids,
    )
    return [(r[0], r[1]) for r in rows]


def drop_names(
    conn: sqlite3.Connection, ws_id: int, names: list[tuple[int, list[tuple[int, str]]]]
) -> None:
    """Delete names, each with its (pos, key) suffix keys (deleted by primary key)."""
    conn.executemany(
        "DELETE FROM symbol_keys WHERE workspace_id = ? AND key = ? AND pos = ? AND symbol_id = ?",
        [(ws_id, key, pos, sid) for sid, keys in names for pos, key in keys],
    )
    conn.executemany("DELETE FROM symbols WHERE id = ?", [(sid,) for sid, _ in names])


def name_ids(conn: sqlite3.Connection, ws_id: int, names: Sequence[str]) -> dict[str, int]:
    sql = "SELECT name, id FROM symbols WHERE name IN ({marks}) AND workspace_id = ?"
    return {r[0]: r[1] for r in Store.rows(conn, sql, names, ws_id)}


def add_names(conn: sqlite3.Connection, ws_id: int, names: Sequence[str]) -> dict[str, int]:
    """Insert these new names; {name: id}."""
    conn.executemany(
        "INSERT INTO symbols(workspace_id, name) VALUES (?, ?)", [(ws_id, n) for n in names]
    )
    return name_ids(conn, ws_id, names)


def add_name_keys(conn: sqlite3.Connection, rows: list[tuple[int, str, int, int]]) -> None:
    """(workspace, key, pos, name id) rows; callers sort them so B-tree pages fill in sequence."""
    conn.executemany(
        "INSERT OR IGNORE INTO symbol_keys(workspace_id, key, pos, symbol_id) VALUES (?, ?, ?, ?)",
        rows,
    )


def add_name_sites(conn: sqlite3.Connection, rows: list[tuple[int, int, int, int, int]]) -> None:
    """(name id, document, kind, label, line) rows."""
    conn.executemany(
        "INSERT INTO symbol_sites(symbol_id, document_id, kind, label, line)"
        " VALUES (?, ?, ?, ?, ?)",
        rows,
    )


def find_names(
    conn: sqlite3.Connection, ws_id: int, key: str, *, exact: bool, limit: int, cap: int
) -> tuple[list[tuple[int, int, str, int, int]], bool]:
    """(tier, kind, name, document id, line) of the names whose suffix-join keys start with
    `key` (or are it, `exact`), best first, and whether more than `cap` keys matched."""
    if exact:
        cand = (
            "SELECT symbol_id, 0 AS tier FROM symbol_keys"
            " WHERE workspace_id = :ws AND key = :key AND pos = 0 LIMIT :cap"
        )
    else:
        cand = (
            "SELECT symbol_id, MIN(CASE WHEN pos > 0 THEN 2 WHEN key = :key THEN 0 ELSE 1 END)"
            " AS tier FROM (SELECT symbol_id, pos, key FROM symbol_keys"
            "  WHERE workspace_id = :ws AND key >= :key AND key < :high LIMIT :cap)"
            " GROUP BY symbol_id"
        )
    sql = (
        f"WITH cand AS ({cand})"
        " SELECT c.tier, st.kind, s.name, st.document_id, st.line"
        " FROM cand c JOIN symbols s ON s.id = c.symbol_id"
        " JOIN symbol_sites st ON st.symbol_id = c.symbol_id"
        " JOIN documents d ON d.id = st.document_id"
        " WHERE d.deleted = 0"
        " ORDER BY c.tier, st.kind, length(s.name), st.label, s.name, d.path LIMIT :limit"
    )
    params = {"ws": ws_id, "key": key, "high": key + "\U0010ffff", "cap": cap}
    rows = conn.execute(sql, {**params, "limit": limit}).fetchall()
    (read,) = conn.execute(
        "SELECT count(*) FROM (SELECT 1 FROM symbol_keys WHERE workspace_id = :ws"
        + (" AND key = :key AND pos = 0" if exact else " AND key >= :key AND key < :high")
        + " LIMIT :more)",
        {**params, "more": cap + 1},
    ).fetchone()
    return [(r[0], r[1], r[2], r[3], r[4]) for r in rows], read > cap


def document_title(conn: sqlite3.Connection, document_id: int) -> tuple[str, str]:
    """(path, title)."""
    row = conn.execute("SELECT path, title FROM documents WHERE id = ?", (document_id,)).fetchone()
    return row[0], row[1]


def section_at(
    conn: sqlite3.Connection, document_id: int, line: int
) -> tuple[int, int, int, str] | None:
    """(chunk id, line_start, line_end, breadcrumb) of the visible section holding `line`; for
    a heading with no text of its own (so no chunk), the first section after it, else the
    last."""
    row = (
        conn.execute(
            "SELECT id, line_start, line_end, breadcrumb FROM chunks WHERE document_id = ?"
            f" AND state = {LIVE} AND line_end >= ? ORDER BY line_start LIMIT 1",
            (document_id, line),
        ).fetchone()
        or conn.execute(
            "SELECT id, line_start, line_end, breadcrumb FROM chunks WHERE document_id = ?"
            f" AND state = {LIVE} ORDER BY line_start DESC LIMIT 1",
            (document_id,),
        ).fetchone()
    )
    return (row[0], row[1], row[2], row[3]) if row is not None else None

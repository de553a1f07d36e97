"""The indexer's write protocol, statement by statement: every SQL the indexer runs, with the reads
that decide what it writes, each named for what it does.

The indexer (`autodoc.index.indexer`) decides the order and the transactions: every function
here takes the connection it has open (a snapshot or the writer's transaction) and neither
begins nor ends one. Chunks go PENDING, then LIVE with the documents' new generation, then
DEAD, then away; see the indexer's docstring for why.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import Any

from autodoc.store.db import Store
from autodoc.store.schema import DEAD, LIVE, PENDING, RUN_STARTED

# -- the frontmatter schema --------------------------------------------------------------------


def loaded_schema(conn: sqlite3.Connection, ws_id: int) -> sqlite3.Row | None:
    """The schema as last loaded: its file's path and content hash, the schema, its error."""
    return conn.execute(
        "SELECT path, content_hash, schema, error FROM schemas WHERE workspace_id = ?",
        (ws_id,),
    ).fetchone()


def save_schema(
    conn: sqlite3.Connection,
    ws_id: int,
    path: str,
    content_hash: str,
    schema_json: str,
    error: str,
    loaded_at: float,
) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO schemas(workspace_id, path, content_hash, schema, error,"
        " loaded_at) VALUES (?, ?, ?, ?, ?, ?)",
        (ws_id, path, content_hash, schema_json, error, loaded_at),
    )


# -- crash recovery, the lexical index's refill, retired chunks' purge -------------------------


def pending_chunks(conn: sqlite3.Connection, ws_id: int) -> list[int]:
    """Chunks written but never published (an interrupted writer's)."""
    return [
        r[0]
        for r in conn.execute(
            "SELECT id FROM chunks WHERE workspace_id = ? AND state = ?",
            (ws_id, PENDING),
        )
    ]


def live_chunk_count(conn: sqlite3.Connection, ws_id: int) -> int:
    return conn.execute(
        "SELECT count(*) FROM chunks WHERE workspace_id = ? AND state = ?",
        (ws_id, LIVE),
    ).fetchone()[0]


def delete_chunks(conn: sqlite3.Connection, ids: Sequence[int]) -> None:
    conn.executemany("DELETE FROM chunks WHERE id = ?", [(i,) for i in ids])


def lexical_rows(conn: sqlite3.Connection, ws_id: int) -> sqlite3.Cursor:
    """What the lexical index holds of every chunk not PENDING: the chunk's id, document,
    breadcrumb and text, its document's title, aliases and tags (JSON), and path."""
    return conn.execute(
        "SELECT c.id, c.document_id, c.breadcrumb, c.text,"
        " d.title, d.aliases, d.tags, d.path FROM chunks c"
        " JOIN documents d ON d.id = c.document_id"
        " WHERE c.workspace_id = ? AND c.state != ?",
        (ws_id, PENDING),
    )


def retired_chunks(conn: sqlite3.Connection, ws_id: int, cutoff: float) -> list[int]:
    """Chunks retired before `cutoff`."""
    return [
        r[0]
        for r in conn.execute(
            # `state = 2` literally, so the partial index chunks_retired answers
            f"SELECT id FROM chunks WHERE workspace_id = ? AND state = {DEAD} AND retired_at < ?",
            (ws_id, cutoff),
        )
    ]


def bump_lexical_epoch(conn: sqlite3.Connection, ws_id: int) -> None:
    """Readers: reload the searcher, recount coverage."""
    conn.execute("UPDATE workspaces SET lexical_epoch = lexical_epoch + 1 WHERE id = ?", (ws_id,))


def optimize(conn: sqlite3.Connection) -> None:
    """Statistics for the query planner."""
    conn.execute("PRAGMA optimize")


# -- a run: what the store holds, step 1 (PENDING chunks) --------------------------------------


def known_documents(
    conn: sqlite3.Connection, ws_id: int, paths: list[str] | None
) -> dict[str, sqlite3.Row]:
    """{path: id, path, size, mtime_ns, content_hash, chunk_fp, deleted} of these paths (None:
    every path of the workspace)."""
    columns = "SELECT id, path, size, mtime_ns, content_hash, chunk_fp, deleted FROM documents"
    rows: Iterable[sqlite3.Row]
    if paths is None:
        rows = conn.execute(f"{columns} WHERE workspace_id = ?", (ws_id,))
    else:
        rows = Store.in_batches(
            conn,
            f"{columns} WHERE path IN ({{marks}}) AND workspace_id = ?",
            sorted(set(paths)),
            ws_id,
        )
    return {r["path"]: r for r in rows}


def documents_to_plan(
    conn: sqlite3.Connection, ws_id: int, paths: Sequence[str]
) -> dict[str, sqlite3.Row]:
    """{path: id, path, generation, deleted, meta_fp} of the documents these paths have."""
    return {
        r["path"]: r
        for r in Store.in_batches(
            conn,
            "SELECT id, path, generation, deleted, meta_fp FROM documents"
            " WHERE path IN ({marks}) AND workspace_id = ?",
            paths,
            ws_id,
        )
    }


def reusable_chunks(conn: sqlite3.Connection, document_ids: Sequence[int]) -> Iterator[Any]:
    """(id, document_id, kind, text_hash) of these documents' live chunks, in document order."""
    return Store.in_batches(
        conn,
        "SELECT id, document_id, kind, text_hash FROM chunks"
        " WHERE document_id IN ({marks}) AND state = 1 ORDER BY document_id, ordinal",
        document_ids,
    )


def add_placeholder_documents(conn: sqlite3.Connection, ws_id: int, paths: Sequence[str]) -> None:
    """Rows for new paths, deleted at generation 0 until step 3 publishes them."""
    conn.executemany(
        "INSERT INTO documents(workspace_id, path, generation, deleted) VALUES (?, ?, 0, 1)",
        [(ws_id, p) for p in paths],
    )


def document_ids(conn: sqlite3.Connection, ws_id: int, paths: Sequence[str]) -> dict[str, int]:
    """{path: document id}."""
    return {
        r["path"]: r["id"]
        for r in Store.in_batches(
            conn,
            "SELECT id, path FROM documents WHERE path IN ({marks}) AND workspace_id = ?",
            paths,
            ws_id,
        )
    }


def next_chunk_id(conn: sqlite3.Connection) -> int:
    """The id the next chunk will get (AUTOINCREMENT's sequence + 1)."""
    return (
        conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'chunks'").fetchone() or [0]
    )[0] + 1


def add_pending_chunks(conn: sqlite3.Connection, ws_id: int, rows: list[tuple[Any, ...]]) -> None:
    """(id, document, generation, kind, ordinal, breadcrumb, text, text_hash, byte_start,
    byte_end, line_start, line_end, line, headings JSON) rows, invisible to readers until
    step 3."""
    conn.executemany(
        "INSERT INTO chunks(id, document_id, workspace_id, state, generation, kind,"
        " ordinal, breadcrumb, text, text_hash, byte_start, byte_end, line_start,"
        f" line_end, line, headings) VALUES (?, ?, {ws_id}, {PENDING}, ?,?,?,?,?,?,?,?,?,?,?,?)",
        rows,
    )


# -- step 3: the switch -------------------------------------------------------------------------


def publish_documents(conn: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
    """(generation, size, mtime_ns, content_hash, chunk_fp, meta_fp, title, tags, aliases, meta,
    headings, indexed_at, id) rows: the documents live at their new generation (`headings`:
    JSON [[1-based line, level, text], …], every heading a reader sees)."""
    conn.executemany(
        "UPDATE documents SET generation=?, deleted=0, size=?, mtime_ns=?, content_hash=?,"
        " chunk_fp=?, meta_fp=?, title=?, tags=?, aliases=?, meta=?, headings=?, indexed_at=?"
        " WHERE id=?",
        rows,
    )


def retire_live_chunks(conn: sqlite3.Connection, document_ids: Sequence[int], now: float) -> None:
    """These documents' live chunks retired (DEAD) as of `now`."""
    conn.executemany(
        f"UPDATE chunks SET state = {DEAD}, retired_at = ? WHERE document_id = ?"
        f" AND state = {LIVE}",
        [(now, d) for d in document_ids],
    )


def make_chunks_live(conn: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
    """(generation, ordinal, byte_start, byte_end, line_start, line_end, line, headings JSON,
    id) rows: kept and new chunks live at their document's new generation and place."""
    conn.executemany(
        f"UPDATE chunks SET state = {LIVE}, generation = ?, ordinal = ?, byte_start = ?,"
        " byte_end = ?, line_start = ?, line_end = ?, line = ?, headings = ?,"
        " retired_at = NULL WHERE id = ?",
        rows,
    )


def log_changes(conn: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
    """(time, workspace, path, op, generation) rows into the change log."""
    conn.executemany(
        "INSERT INTO changes(time, workspace_id, path, op, generation) VALUES (?, ?, ?, ?, ?)",
        rows,
    )


# -- deleted files -------------------------------------------------------------------------------


def document_at(conn: sqlite3.Connection, ws_id: int, path: str) -> sqlite3.Row:
    """(id, generation) of the document at this path, deleted or not."""
    return conn.execute(
        "SELECT id, generation FROM documents WHERE workspace_id = ? AND path = ?",
        (ws_id, path),
    ).fetchone()


def mark_document_deleted(
    conn: sqlite3.Connection, document_id: int, generation: int, now: float
) -> None:
    """The document at a new generation with no content and no stat."""
    conn.execute(
        "UPDATE documents SET deleted = 1, generation = ?, size = NULL, mtime_ns = NULL,"
        " content_hash = NULL, indexed_at = ? WHERE id = ?",
        (generation, now, document_id),
    )


def retire_document_chunks(conn: sqlite3.Connection, document_id: int, now: float) -> None:
    """Every chunk of the document not yet retired (PENDING ones too) retired as of `now`."""
    conn.execute(
        f"UPDATE chunks SET state = {DEAD}, retired_at = ?"
        f" WHERE document_id = ? AND state != {DEAD}",
        (now, document_id),
    )


def delete_document_names(conn: sqlite3.Connection, document_ids: Sequence[int]) -> None:
    """These documents' names (path, stem, title, aliases) that links resolve against."""
    conn.executemany("DELETE FROM names WHERE document_id = ?", [(d,) for d in document_ids])


def delete_document_facets(conn: sqlite3.Connection, document_id: int) -> None:
    conn.execute("DELETE FROM facets WHERE document_id = ?", (document_id,))


def log_deletion(
    conn: sqlite3.Connection, ws_id: int, path: str, generation: int, now: float
) -> None:
    """A `delete` in the change log."""
    conn.execute(
        "INSERT INTO changes(time, workspace_id, path, op, generation)"
        " VALUES (?, ?, ?, 'delete', ?)",
        (now, ws_id, path, generation),
    )


# -- links and names -----------------------------------------------------------------------------


def add_links(conn: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
    """(source, workspace, kind, target, key, heading, line, relation, reach) rows, unresolved
    (`reach`: the name ranks the link may resolve by, a bit each)."""
    conn.executemany(
        "INSERT INTO links(source_id, workspace_id, kind, target, key, heading, line,"
        " relation, reach) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )


def save_link_dialect(conn: sqlite3.Connection, ws_id: int, dialect: str) -> None:
    """The dialect the workspace's links are read in (JSON), as the last full run decided."""
    conn.execute("UPDATE workspaces SET link_dialect = ? WHERE id = ?", (dialect, ws_id))


def add_document_names(conn: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
    """(workspace, key, document, rank) rows."""
    conn.executemany(
        "INSERT INTO names(workspace_id, key, document_id, rank) VALUES (?, ?, ?, ?)",
        rows,
    )


def link_targets(conn: sqlite3.Connection, source_ids: Sequence[int]) -> Iterator[int]:
    """The documents these documents' links resolve to."""
    return (
        r[0]
        for r in Store.in_batches(
            conn,
            "SELECT DISTINCT target_id FROM links WHERE source_id IN ({marks})"
            " AND target_id IS NOT NULL",
            source_ids,
        )
    )


def delete_links(conn: sqlite3.Connection, source_ids: Sequence[int]) -> None:
    """These documents' outgoing links."""
    conn.executemany("DELETE FROM links WHERE source_id = ?", [(i,) for i in source_ids])


# A link's document: the best-ranked name with its key among the ranks it may use (`reach`). A
# record link ("ADR 32" under "Superseded by") needs the one document of its folder with that
# number.
_TARGET = (
    "SELECT n.document_id FROM names n WHERE n.workspace_id = links.workspace_id"
    " AND n.key = links.key AND (links.reach >> n.rank) & 1"
    " AND (links.kind != 'record' OR NOT EXISTS (SELECT 1 FROM names m"
    " WHERE m.workspace_id = n.workspace_id AND m.key = n.key AND m.document_id != n.document_id))"
    " ORDER BY n.rank, n.document_id LIMIT 1"
)

# Who supersedes whom (workspace id the parameter): each relation link that resolves; a record
# link only where none of its document's links of the same relation resolves to another
# document (it is the fallback for a site-absolute link or a number in words).
_SUPERSESSIONS = (
    "INSERT OR IGNORE INTO supersessions(workspace_id, old_id, new_id)"
    " SELECT workspace_id, CASE relation WHEN 'superseded_by' THEN source_id"
    " ELSE target_id END, CASE relation WHEN 'superseded_by' THEN target_id"
    " ELSE source_id END FROM links WHERE workspace_id = ? AND relation != ''"
    " AND target_id IS NOT NULL AND target_id != source_id"
    " AND (kind != 'record' OR NOT EXISTS (SELECT 1 FROM links o"
    " WHERE o.source_id = links.source_id AND o.relation = links.relation"
    " AND o.kind != 'record' AND o.target_id IS NOT NULL AND o.target_id != o.source_id))"
)


# -- link resolution: around a few changed documents ---------------------------------------------


def name_keys_of(conn: sqlite3.Connection, document_ids: Sequence[int]) -> set[str]:
    """The keys of these documents' names."""
    return {
        r[0]
        for r in Store.in_batches(
            conn, "SELECT key FROM names WHERE document_id IN ({marks})", document_ids
        )
    }


def affected_links(
    conn: sqlite3.Connection, ws_id: int, document_ids: Sequence[int], keys: Sequence[str]
) -> dict[int, int | None]:
    """{link rowid: its target now} of the links from these documents, those to them, and those
    whose key is one of `keys`."""
    affected: dict[int, int | None] = {}
    for sql, ids in (
        ("SELECT rowid, target_id FROM links WHERE source_id IN ({marks})", document_ids),
        ("SELECT rowid, target_id FROM links WHERE target_id IN ({marks})", document_ids),
        (
            "SELECT rowid, target_id FROM links WHERE key IN ({marks}) AND workspace_id = ?",
            keys,
        ),
    ):
        tail = (ws_id,) if "workspace_id" in sql else ()
        affected.update((r[0], r[1]) for r in Store.in_batches(conn, sql, ids, *tail))
    return affected


def resolve_links_by_rowid(conn: sqlite3.Connection, link_ids: Sequence[int]) -> None:
    """Point these links at their document (path, stem, title, alias: the best rank)."""
    for start in range(0, len(link_ids), 900):
        part = link_ids[start : start + 900]
        conn.execute(
            f"UPDATE links SET target_id = ({_TARGET})"
            f" WHERE rowid IN ({','.join('?' * len(part))})",
            part,
        )


def targets_of_links(conn: sqlite3.Connection, link_ids: Sequence[int]) -> Iterator[int]:
    """The documents these links resolve to."""
    return (
        r[0]
        for r in Store.in_batches(
            conn,
            "SELECT DISTINCT target_id FROM links WHERE rowid IN ({marks})"
            " AND target_id IS NOT NULL",
            link_ids,
        )
    )


def recount_links_of(conn: sqlite3.Connection, ws_id: int, document_ids: list[int]) -> None:
    """These documents' inbound counts, and the supersessions they are part of, again from the
    links; 900 documents at a time."""
    for start in range(0, len(document_ids), 900):
        part = document_ids[start : start + 900]
        marks = ",".join("?" * len(part))
        conn.execute(
            "UPDATE documents SET inbound = (SELECT count(DISTINCT l.source_id) FROM links l"
            " WHERE l.target_id = documents.id AND l.source_id != documents.id)"
            f" WHERE id IN ({marks})",
            part,
        )
        conn.execute(
            f"DELETE FROM supersessions WHERE old_id IN ({marks}) OR new_id IN ({marks})",
            part + part,
        )
        conn.execute(
            f"{_SUPERSESSIONS} AND (source_id IN ({marks}) OR target_id IN ({marks}))",
            [ws_id, *part, *part],
        )


# -- link resolution: the whole workspace ---------------------------------------------------------


def resolve_all_links(conn: sqlite3.Connection, ws_id: int) -> None:
    """Point every link of the workspace at its document (path, stem, title, alias)."""
    conn.execute(
        f"UPDATE links SET target_id = ({_TARGET}) WHERE workspace_id = ?",
        (ws_id,),
    )


def recount_all_inbound(conn: sqlite3.Connection, ws_id: int) -> None:
    """Every document's inbound count: the other documents linking to it."""
    conn.execute(
        "UPDATE documents SET inbound = (SELECT count(DISTINCT l.source_id) FROM links l"
        " WHERE l.target_id = documents.id AND l.source_id != documents.id)"
        " WHERE workspace_id = ?",
        (ws_id,),
    )


def rebuild_supersessions(conn: sqlite3.Connection, ws_id: int) -> None:
    """Who supersedes whom, from "superseded_by"/"supersedes" fields and sentences."""
    conn.execute("DELETE FROM supersessions WHERE workspace_id = ?", (ws_id,))
    conn.execute(
        _SUPERSESSIONS,
        (ws_id,),
    )


# -- the end of a run -----------------------------------------------------------------------------


def update_document_stats(conn: sqlite3.Connection, rows: list[tuple[int, int, int]]) -> None:
    """(size, mtime_ns, id) rows: files whose stat changed but not their content."""
    conn.executemany("UPDATE documents SET size=?, mtime_ns=? WHERE id=?", rows)


def clear_problems(conn: sqlite3.Connection, ws_id: int, keep: Collection[str] = ()) -> int:
    """Every problem of the workspace (a run over all its files) but the parse warnings of
    `keep`: files the run found unchanged are not parsed again, so their warnings stand and
    `check` reports them on every run, not only the first. Returns how many were kept."""
    if not keep:
        conn.execute("DELETE FROM problems WHERE workspace_id = ?", (ws_id,))
        return 0
    rows = conn.execute(
        "SELECT rowid, path, kind FROM problems WHERE workspace_id = ?", (ws_id,)
    ).fetchall()
    gone = [(r[0],) for r in rows if not (r[2] == "warning" and r[1] in keep)]
    conn.executemany("DELETE FROM problems WHERE rowid = ?", gone)
    return len(rows) - len(gone)


def clear_problems_of(conn: sqlite3.Connection, ws_id: int, paths: Iterable[str]) -> None:
    """The problems of these paths, and the schema's (a run over a few files)."""
    conn.executemany(
        "DELETE FROM problems WHERE workspace_id = ? AND path = ?",
        [(ws_id, p) for p in set(paths)],
    )
    conn.execute("DELETE FROM problems WHERE workspace_id = ? AND kind = 'schema'", (ws_id,))


def add_problems(
    conn: sqlite3.Connection, ws_id: int, problems: Iterable[tuple[str, str, str]]
) -> None:
    """(path, kind, message) rows."""
    conn.executemany(
        "INSERT INTO problems(workspace_id, path, kind, message) VALUES (?, ?, ?, ?)",
        [(ws_id, *p) for p in problems],
    )


def mark_indexed(conn: sqlite3.Connection, ws_id: int, now: float, *, full: bool) -> None:
    """The workspace's last run's time; a run over all files (`full`) also finished."""
    conn.execute("UPDATE workspaces SET indexed_at = ? WHERE id = ?", (now, ws_id))
    if full:
        conn.execute("DELETE FROM meta WHERE key = ?", (f"{RUN_STARTED}{ws_id}",))


def start_run(conn: sqlite3.Connection, ws_id: int, now: float) -> bool:
    """Note that a run over all files began; True when the previous one never finished."""
    key = f"{RUN_STARTED}{ws_id}"
    interrupted = conn.execute("SELECT 1 FROM meta WHERE key = ?", (key,)).fetchone()
    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, repr(now)))
    return interrupted is not None

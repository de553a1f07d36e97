"""Named queries: the reads the query path, status and checks make, and the facet rows' small
writes, each named for what it answers or does. The vector cache's rows are in `embedding_rows`,
the name index's in `name_rows`, the indexer's write protocol in `writes`.

The modules that make them hold no SQL of their own (tests/integration/test_layout.py).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from autodoc.parse.chunking import BREADCRUMB_SEP
from autodoc.parse.frontmatter_schema import EMPTY, Schema, schema_of
from autodoc.store.db import Store
from autodoc.store.schema import (
    LIVE,
    NAME_ALIAS,
    NAME_LISTED,
    NAME_STEM,
    NAME_TITLE,
    REACH_ALL,
)


def document_paths(conn: sqlite3.Connection, ids: Sequence[int]) -> dict[int, str]:
    """{document id: path}."""
    sql = "SELECT id, path FROM documents WHERE id IN ({marks})"
    return {r[0]: r[1] for r in Store.rows(conn, sql, sorted(set(ids)))}


def first_live_chunks(conn: sqlite3.Connection, document_ids: Sequence[int]) -> list[int]:
    """Each document's first visible chunk (by ordinal)."""
    return list(first_live_chunk_of(conn, document_ids).values())


def first_live_chunk_of(conn: sqlite3.Connection, document_ids: Sequence[int]) -> dict[int, int]:
    """{document id: its first visible chunk (by ordinal)}."""
    rows = Store.rows(
        conn,
        "SELECT document_id, id FROM (SELECT c.id, c.document_id, row_number() OVER"
        " (PARTITION BY c.document_id ORDER BY c.ordinal) AS n FROM chunks c"
        f" WHERE c.document_id IN ({{marks}}) AND c.state = {LIVE}) WHERE n = 1",
        list(document_ids),
    )
    return {r[0]: r[1] for r in rows}


def boost_facts(
    conn: sqlite3.Connection, ids: Sequence[int], outbound: bool = False
) -> dict[int, tuple[int, str | None, int]]:
    """{document id: (resolved inbound links, tags JSON, links it holds)}: what fusion's boosts
    and the ranking's link features read (an index page links to many), in one read. The links
    a document holds are counted only with `outbound` (0 otherwise): about 0.15 ms for 50
    documents of cpp-docs, which a search by meaning alone does not use."""
    held = "(SELECT count(*) FROM links l WHERE l.source_id = d.id)" if outbound else "0"
    sql = f"SELECT d.id, d.inbound, d.tags, {held} FROM documents d WHERE d.id IN ({{marks}})"
    return {r[0]: (r[1], r[2], r[3]) for r in Store.rows(conn, sql, list(ids))}


def chunk_structure(
    conn: sqlite3.Connection, ids: Sequence[int]
) -> dict[int, tuple[int, int, int]]:
    """{chunk id: (its ordinal, how many visible chunks its document has, how many headings its
    breadcrumb has above its own)}: where a candidate stands in its document, for the
    ranking's section model. A document's live chunks are numbered 0..n-1 by the chunking that
    wrote them (a kept chunk takes its new place), so their count is the last ordinal + 1: one
    step of `chunks_by_document_place`, not a count of a long page's chunks."""
    sep = BREADCRUMB_SEP
    sql = (
        "SELECT c.id, c.ordinal, (SELECT max(o.ordinal) + 1 FROM chunks o WHERE o.document_id ="
        f" c.document_id AND o.state = {LIVE}), (length(c.breadcrumb) -"
        f" length(replace(c.breadcrumb, '{sep}', ''))) / {len(sep)} FROM chunks c"
        " WHERE c.id IN ({marks})"
    )
    return {r[0]: (r[1], r[2], r[3]) for r in Store.rows(conn, sql, list(ids))}


def chunk_place(row: sqlite3.Row) -> tuple[int, list[tuple[int, str]]]:
    """A `chunk_rows` row's line to show (the heading its breadcrumb ends with; `line_start`
    where the store does not know it) and the headings its span holds, (line, text)."""
    keys = row.keys()
    line = row["line"] if "line" in keys and row["line"] else row["line_start"]
    held = json.loads(row["headings"]) if "headings" in keys else []
    return line, [(n, t) for n, t in held]


def successors(conn: sqlite3.Connection, ids: Sequence[int]) -> list[tuple[int, int]]:
    """(old document, its successor) for these documents when they are superseded."""
    sql = "SELECT old_id, new_id FROM supersessions WHERE old_id IN ({marks})"
    return [(r[0], r[1]) for r in Store.rows(conn, sql, list(ids))]


def documents_named(conn: sqlite3.Connection, ws_id: int, key: str) -> list[int]:
    """Live documents whose title, an alias or a name the title lists, lower-cased and spaced,
    is `key`: titles first."""
    rows = conn.execute(
        "SELECT DISTINCT n.document_id FROM names n JOIN documents d ON d.id = n.document_id"
        " WHERE n.workspace_id = ? AND n.key = ? AND n.rank IN (?, ?, ?) AND d.deleted = 0"
        " ORDER BY n.rank, d.path",
        (ws_id, key, NAME_TITLE, NAME_ALIAS, NAME_LISTED),
    ).fetchall()
    return [r[0] for r in rows]


def documents_completed(conn: sqlite3.Connection, ws_id: int, prefix: str, limit: int) -> list[int]:
    """Live documents with a name `prefix` completes: a title, an alias, a name the title lists
    or a file stem (lower-cased) that is `prefix` and the rest of its last word (`looku`
    completes `lookup` and `lookups`, `lame du` completes `lame duck`; not `lookup schemas`
    or `lookup.create`). Read in the names' order, at most `limit` names."""
    rows = conn.execute(
        "SELECT DISTINCT n.document_id FROM names n JOIN documents d ON d.id = n.document_id"
        " WHERE n.workspace_id = ? AND n.key >= ? AND n.key < ? AND n.rank IN (?, ?, ?, ?)"
        " AND substr(n.key, ?) NOT GLOB '*[ ./_:(,-]*' AND d.deleted = 0 LIMIT ?",
        (ws_id, prefix, prefix + "\U0010ffff", NAME_STEM, NAME_TITLE, NAME_ALIAS, NAME_LISTED,
         len(prefix) + 1, limit),
    ).fetchall()  # fmt: skip
    return [r[0] for r in rows]


def first_live_chunk(conn: sqlite3.Connection, document_id: int) -> int | None:
    row = conn.execute(
        f"SELECT id FROM chunks WHERE document_id = ? AND state = {LIVE} ORDER BY ordinal LIMIT 1",
        (document_id,),
    ).fetchone()
    return row[0] if row is not None else None


_MISSING_VECTORS = (
    "SELECT c.id FROM chunks c LEFT JOIN embeddings e ON e.workspace_id = c.workspace_id"
    " AND e.model_fp = ? AND e.text_hash = c.text_hash"
    f" WHERE c.workspace_id = ? AND c.state = {LIVE} AND e.id IS NULL"
)


def chunks_missing_vectors(
    conn: sqlite3.Connection,
    ws_id: int,
    model_fp: str,
    *,
    above: int | None = None,
    among: Sequence[int] | None = None,
) -> set[int]:
    """Visible chunks with no vector of this model: all, those with ids `above`, or those of
    `among`."""
    if among is not None:
        return _missing_among(conn, ws_id, model_fp, list(among))
    if above is not None:
        rows = conn.execute(_MISSING_VECTORS + " AND c.id > ?", (model_fp, ws_id, above))
    else:
        rows = conn.execute(_MISSING_VECTORS, (model_fp, ws_id))
    return {r[0] for r in rows}


def _missing_among(conn: sqlite3.Connection, ws_id: int, model_fp: str, ids: list[int]) -> set[int]:
    found: set[int] = set()
    for start in range(0, len(ids), 900):
        part = ids[start : start + 900]
        marks = ",".join("?" * len(part))
        sql = _MISSING_VECTORS + f" AND c.id IN ({marks})"
        found.update(r[0] for r in conn.execute(sql, (model_fp, ws_id, *part)))
    return found


def live_chunk_stats(conn: sqlite3.Connection, ws_id: int) -> tuple[int, int]:
    """(visible chunks, the highest visible chunk id)."""
    row = conn.execute(
        "SELECT count(*), coalesce(max(id), 0) FROM chunks"
        f" WHERE workspace_id = ? AND state = {LIVE}",
        (ws_id,),
    ).fetchone()
    return row[0], row[1]


def vector_count(conn: sqlite3.Connection, ws_id: int, model_fp: str) -> int:
    return conn.execute(
        "SELECT count(*) FROM embeddings WHERE workspace_id = ? AND model_fp = ?", (ws_id, model_fp)
    ).fetchone()[0]


def workspace_counts(conn: sqlite3.Connection, ws_id: int) -> tuple[int, int]:
    """(live documents, visible chunks)."""
    row = conn.execute(
        "SELECT (SELECT count(*) FROM documents WHERE workspace_id = ?1 AND deleted = 0),"
        f" (SELECT count(*) FROM chunks WHERE workspace_id = ?1 AND state = {LIVE})",
        (ws_id,),
    ).fetchone()
    return row[0], row[1]


def set_active_embedding(conn: sqlite3.Connection, ws_id: int, model_fp: str, spec: str) -> None:
    conn.execute(
        "UPDATE workspaces SET active_model_fp = ?, active_embedding = ? WHERE id = ?",
        (model_fp, spec, ws_id),
    )


def problems(
    conn: sqlite3.Connection, ws_id: int, limit: int | None = None
) -> list[tuple[str, str, str]]:
    """(path, kind, message) of the files an index run reported, by path."""
    sql = "SELECT path, kind, message FROM problems WHERE workspace_id = ? ORDER BY path"
    args: tuple[Any, ...] = (ws_id,)
    if limit is not None:
        sql, args = sql + " LIMIT ?", (ws_id, limit)
    return [(r[0], r[1], r[2]) for r in conn.execute(sql, args)]


def problem_count(conn: sqlite3.Connection, ws_id: int) -> int:
    return conn.execute(
        "SELECT count(*) FROM problems WHERE workspace_id = ?", (ws_id,)
    ).fetchone()[0]


def link_counts(conn: sqlite3.Connection, ws_id: int) -> tuple[int, int]:
    """(links, links resolved to a document), record links (a guess, not written) aside."""
    row = conn.execute(
        "SELECT count(*), count(target_id) FROM links WHERE workspace_id = ? AND kind != 'record'",
        (ws_id,),
    ).fetchone()
    return row[0], row[1]


def document_generation(conn: sqlite3.Connection, ws_id: int, path: str) -> int | None:
    """The live document's generation at this path, None when it is not indexed."""
    row = conn.execute(
        "SELECT generation FROM documents WHERE workspace_id = ? AND path = ? AND deleted = 0",
        (ws_id, path),
    ).fetchone()
    return row[0] if row is not None else None


def schema_error(conn: sqlite3.Connection, ws_id: int) -> str:
    row = conn.execute("SELECT error FROM schemas WHERE workspace_id = ?", (ws_id,)).fetchone()
    return row[0] if row else ""


def documents_meta(conn: sqlite3.Connection, ws_id: int) -> list[tuple[str, str | None]]:
    """(path, frontmatter JSON) of every live document, by path."""
    rows = conn.execute(
        "SELECT path, meta FROM documents WHERE workspace_id = ? AND deleted = 0 ORDER BY path",
        (ws_id,),
    )
    return [(r[0], r[1]) for r in rows]


def unresolved_links(
    conn: sqlite3.Connection, ws_id: int, path: str | None = None
) -> list[tuple[str, int, str, str]]:
    """(path, line, kind, target) of links that resolve to no document (of one document), by
    path and line (a record link is a guess beside a relation's own link, not a link the
    author wrote)."""
    rows = conn.execute(
        "SELECT d.path, l.line, l.kind, l.target FROM links l"
        " JOIN documents d ON d.id = l.source_id"
        " WHERE l.workspace_id = ? AND l.target_id IS NULL AND d.deleted = 0"
        " AND l.kind != 'record' AND (? IS NULL OR d.path = ?)"
        " ORDER BY d.path, l.line",
        (ws_id, path, path),
    )
    return [(r[0], r[1], r[2], r[3]) for r in rows]


# -- facets: the filter's reads and the facet rows' writes --------------------------------------


def live_document_count(conn: sqlite3.Connection, ws_id: int) -> int:
    return conn.execute(
        "SELECT count(*) FROM documents WHERE workspace_id = ? AND deleted = 0", (ws_id,)
    ).fetchone()[0]


def live_documents(conn: sqlite3.Connection, ws_id: int) -> Iterator[int]:
    """Every live document's id, in path order (the (workspace, deleted, path) index)."""
    rows = conn.execute(
        "SELECT id FROM documents WHERE workspace_id = ? AND deleted = 0 ORDER BY path", (ws_id,)
    )
    return (r[0] for r in rows)


def documents_under(conn: sqlite3.Connection, ws_id: int, prefix: str) -> set[int]:
    """Live documents whose path starts with `prefix` (a range on the path index)."""
    rows = conn.execute(
        "SELECT id FROM documents WHERE workspace_id = ? AND deleted = 0"
        " AND path >= ? AND path < ?",
        (ws_id, prefix, prefix + "\U0010ffff"),
    )
    return {r[0] for r in rows}


def documents_with_facet(
    conn: sqlite3.Connection, ws_id: int, field: str, values: Sequence[str]
) -> set[int]:
    """Documents whose facet `field` holds one of these canonical values."""
    marks = ",".join("?" * len(values))
    rows = conn.execute(
        "SELECT document_id FROM facets WHERE workspace_id = ? AND field = ?"
        f" AND value IN ({marks})",
        (ws_id, field, *values),
    )
    return {r[0] for r in rows}


def documents_with_facet_under(
    conn: sqlite3.Connection, ws_id: int, field: str, value: str
) -> set[int]:
    """Documents whose facet is `value` or under it (a date's year or month: `value-*`; digits,
    nothing GLOB reads as a pattern)."""
    rows = conn.execute(
        "SELECT document_id FROM facets WHERE workspace_id = ? AND field = ?"
        " AND (value = ? OR value GLOB ?)",
        (ws_id, field, value, value + "-*"),
    )
    return {r[0] for r in rows}


def stored_schema_json(conn: sqlite3.Connection, ws_id: int) -> str | None:
    row = conn.execute("SELECT schema FROM schemas WHERE workspace_id = ?", (ws_id,)).fetchone()
    return row[0] if row is not None else None


def stored_schema(conn, ws_id: int) -> Schema:
    """The workspace's schema in this snapshot (EMPTY when it has none)."""
    stored = stored_schema_json(conn, ws_id)
    return schema_of(stored) if stored is not None else EMPTY


def replace_facets(
    conn: sqlite3.Connection, ws_id: int, document_ids: Sequence[int], rows: list[tuple[Any, ...]]
) -> None:
    """The facet rows of these documents, replaced by `rows` (workspace, document, field, value)."""
    conn.executemany("DELETE FROM facets WHERE document_id = ?", [(d,) for d in document_ids])
    conn.executemany(
        "INSERT INTO facets(workspace_id, document_id, field, value) VALUES (?, ?, ?, ?)", rows
    )


def clear_facets(conn: sqlite3.Connection, ws_id: int) -> None:
    conn.execute("DELETE FROM facets WHERE workspace_id = ?", (ws_id,))


def live_document_frontmatter(
    conn: sqlite3.Connection, ws_id: int
) -> list[tuple[int, str, str | None, str | None]]:
    """(id, path, meta JSON, tags JSON) of every live document."""
    rows = conn.execute(
        "SELECT id, path, meta, tags FROM documents WHERE workspace_id = ? AND deleted = 0",
        (ws_id,),
    )
    return [(r[0], r[1], r[2], r[3]) for r in rows]


# -- related sections: a section's neighbours by meaning and by links ---------------------------


def live_document_id(conn: sqlite3.Connection, ws_id: int, path: str) -> int | None:
    """The live document at this root-relative path, None when it is not indexed."""
    row = conn.execute(
        "SELECT id FROM documents WHERE workspace_id = ? AND path = ? AND deleted = 0",
        (ws_id, path),
    ).fetchone()
    return row[0] if row is not None else None


def document_chunk_ids(conn: sqlite3.Connection, doc_id: int) -> list[int]:
    """A document's visible chunks, in order."""
    rows = conn.execute(
        f"SELECT id FROM chunks WHERE document_id = ? AND state = {LIVE} ORDER BY ordinal",
        (doc_id,),
    )
    return [r[0] for r in rows]


def chunk_vectors(conn: sqlite3.Connection, model_fp: str, chunk_ids: Sequence[int]) -> list[bytes]:
    """The float32 vectors (as stored) of these chunks' texts under one model."""
    return Store.column(
        conn,
        "SELECT e.f32 FROM chunks c JOIN embeddings e ON e.workspace_id = c.workspace_id"
        " AND e.text_hash = c.text_hash WHERE c.id IN ({marks}) AND e.model_fp = ?",
        list(chunk_ids),
        model_fp,
    )


def backlinks(conn: sqlite3.Connection, doc_id: int) -> list[tuple[int, int]]:
    """(linking document, the link's line) of every live document that links to this one
    (record links, guesses from a status's number, left out)."""
    rows = conn.execute(
        "SELECT l.source_id, min(l.line) FROM links l JOIN documents d ON d.id = l.source_id"
        " WHERE l.target_id = ? AND l.source_id != l.target_id AND d.deleted = 0"
        " AND l.kind != 'record' GROUP BY l.source_id",
        (doc_id,),
    )
    return [(r[0], r[1]) for r in rows]


def outlinks(conn: sqlite3.Connection, doc_id: int) -> list[int]:
    """The live documents this one links to."""
    rows = conn.execute(
        "SELECT DISTINCT l.target_id FROM links l JOIN documents d ON d.id = l.target_id"
        " WHERE l.source_id = ? AND l.target_id != l.source_id AND d.deleted = 0"
        " AND l.kind != 'record'",
        (doc_id,),
    )
    return [r[0] for r in rows]


def shared_link_counts(conn: sqlite3.Connection, doc_id: int, limit: int) -> list[tuple[int, int]]:
    """(document, how many of this one's link targets it links to as well), most first."""
    rows = conn.execute(
        "SELECT o.source_id, count(DISTINCT o.target_id) AS n FROM links m"
        " JOIN links o ON o.target_id = m.target_id AND o.source_id != m.source_id"
        " JOIN documents d ON d.id = o.source_id"
        " WHERE m.source_id = ? AND m.target_id IS NOT NULL AND m.target_id != ?"
        " AND o.source_id != ? AND d.deleted = 0 AND m.kind != 'record' AND o.kind != 'record'"
        " GROUP BY o.source_id ORDER BY n DESC, o.source_id LIMIT ?",
        (doc_id, doc_id, doc_id, limit),
    )
    return [(r[0], r[1]) for r in rows]


# -- links in an editor: definition, references, document links, hover ---------------------------


def links_on(conn: sqlite3.Connection, doc_id: int, line: int | None = None) -> list[tuple]:
    """(line, kind, target, heading, target id or None) of a document's links (on one line)."""
    sql = (
        "SELECT line, kind, target, heading, target_id FROM links WHERE source_id = ?"
        " AND kind != 'record'"
    )
    args: tuple = (doc_id,)
    if line is not None:
        sql += " AND line = ?"
        args = (doc_id, line)
    return [tuple(r) for r in conn.execute(sql + " ORDER BY line", args)]


def links_into(conn: sqlite3.Connection, doc_id: int) -> list[tuple[str, int, str]]:
    """(source path, line, heading) of every link from a live document to this one."""
    return [(r[0], r[1], r[2]) for r in link_rows_into(conn, doc_id)]


def link_rows_into(conn: sqlite3.Connection, doc_id: int) -> list[tuple[str, int, str, str, str]]:
    """(source path, line, heading, kind, target as written) of every link from a live document
    to this one, by path and line (each link once: two on a line are two rows)."""
    rows = conn.execute(
        "SELECT d.path, l.line, l.heading, l.kind, l.target FROM links l"
        " JOIN documents d ON d.id = l.source_id"
        " WHERE l.target_id = ? AND d.deleted = 0 AND l.kind != 'record'"
        " ORDER BY d.path, l.line, l.rowid",
        (doc_id,),
    )
    return [(r[0], r[1], r[2], r[3], r[4]) for r in rows]


def document_by_key(
    conn: sqlite3.Connection, ws_id: int, key: str, reach: int = REACH_ALL
) -> int | None:
    """The one live document a link key names by the ranks `reach` allows (a bit each; None
    when none does, or several equally)."""
    rows = conn.execute(
        "SELECT n.document_id, n.rank FROM names n JOIN documents d ON d.id = n.document_id"
        " WHERE n.workspace_id = ? AND n.key = ? AND d.deleted = 0 AND (? >> n.rank) & 1"
        " ORDER BY n.rank LIMIT 2",
        (ws_id, key, reach),
    ).fetchall()
    if not rows or (len(rows) == 2 and rows[0][1] == rows[1][1] and rows[0][0] != rows[1][0]):
        return None
    return rows[0][0]


def document_headings(
    conn: sqlite3.Connection, doc_ids: Sequence[int]
) -> dict[int, list[tuple[int, int, str]]]:
    """{document: [(1-based line, level, text), …]} of every heading a reader sees in the
    documents, in order."""
    out: dict[int, list[tuple[int, int, str]]] = {d: [] for d in doc_ids}
    sql = "SELECT id, headings FROM documents WHERE id IN ({marks})"
    for doc_id, held in Store.rows(conn, sql, sorted(set(doc_ids))):
        out[doc_id] = [(line, level, text) for line, level, text in json.loads(held or "[]")]
    return out


def block_place(conn: sqlite3.Connection, doc_id: int, block: str) -> tuple[int, int] | None:
    """(1-based line, chunk id) of the line that ends with the block id `^block` (Obsidian's
    and Dendron's block anchors), None when no visible chunk of the document has it."""
    needle = f"^{block}"
    rows = conn.execute(
        f"SELECT id, line_start, text FROM chunks WHERE document_id = ? AND state = {LIVE}"
        " AND instr(text, ?) ORDER BY ordinal",
        (doc_id, needle),
    )
    for chunk_id, first, text in rows:
        for i, line in enumerate(text.split("\n")):
            if line.rstrip().endswith(needle) and line.rstrip()[: -len(needle)][-1:] in ("", " "):
                return first + i, chunk_id
    return None


def resolved_links_to_headings(
    conn: sqlite3.Connection, ws_id: int, path: str | None = None
) -> list[tuple[str, int, str, str, str, int]]:
    """(source path, line, kind, target, heading, target id) of the links from live documents
    (of one document) that lead to a note and name a heading or block in it."""
    rows = conn.execute(
        "SELECT d.path, l.line, l.kind, l.target, l.heading, l.target_id FROM links l"
        " JOIN documents d ON d.id = l.source_id"
        " WHERE l.workspace_id = ? AND l.target_id IS NOT NULL AND l.heading != ''"
        " AND d.deleted = 0 AND l.kind IN ('wiki', 'md') AND (? IS NULL OR d.path = ?)"
        " ORDER BY d.path, l.line",
        (ws_id, path, path),
    )
    return [(r[0], r[1], r[2], r[3], r[4], r[5]) for r in rows]


def document_sections(conn: sqlite3.Connection, doc_id: int) -> list[tuple[int, int, str, int]]:
    """(line_start, line_end, breadcrumb, chunk id) of a document's visible chunks, in order."""
    rows = conn.execute(
        f"SELECT line_start, line_end, breadcrumb, id FROM chunks WHERE document_id = ?"
        f" AND state = {LIVE} ORDER BY ordinal",
        (doc_id,),
    )
    return [(r[0], r[1], r[2], r[3]) for r in rows]


def documents_with_facet_range(
    conn: sqlite3.Connection, ws_id: int, field: str, low: str | None, high: str | None
) -> set[int]:
    """Documents whose facet value lies in [low, high) (ISO dates order as text)."""
    rows = conn.execute(
        "SELECT document_id FROM facets WHERE workspace_id = ? AND field = ?"
        " AND (? IS NULL OR value >= ?) AND (? IS NULL OR value < ?)",
        (ws_id, field, low, low, high, high),
    )
    return {r[0] for r in rows}


def documents_modified(
    conn: sqlite3.Connection, ws_id: int, low_ns: int | None, high_ns: int | None
) -> set[int]:
    """Live documents whose file was last modified in [low_ns, high_ns)."""
    rows = conn.execute(
        "SELECT id FROM documents WHERE workspace_id = ? AND deleted = 0"
        " AND (? IS NULL OR mtime_ns >= ?) AND (? IS NULL OR mtime_ns < ?)",
        (ws_id, low_ns, low_ns, high_ns, high_ns),
    )
    return {r[0] for r in rows}


def recency_facts(conn: sqlite3.Connection, ids: Sequence[int]) -> dict[int, tuple[int, str]]:
    """{document id: (mtime_ns, frontmatter JSON)}: what a recency boost dates a document by."""
    sql = "SELECT id, mtime_ns, meta FROM documents WHERE id IN ({marks})"
    return {r[0]: (r[1], r[2]) for r in Store.rows(conn, sql, list(ids))}


def known_name_keys(conn: sqlite3.Connection, ws_id: int, keys: Sequence[str]) -> set[str]:
    """Which of these link keys some live document answers to (by any rank)."""
    sql = (
        "SELECT DISTINCT n.key FROM names n JOIN documents d ON d.id = n.document_id"
        " WHERE n.key IN ({marks}) AND n.workspace_id = ? AND d.deleted = 0"
    )
    return {r[0] for r in Store.rows(conn, sql, list(keys), ws_id)}

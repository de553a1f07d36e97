"""The reads link completion makes (`links.complete`): notes by the start of a name, by a word
of their title or alias, by how often they are linked; folders and files under a path; tags
with their counts; and how the vault writes its links (counts by form), for the link style.

Each read is a range on an index (`names_by_key`, `symbol_keys`' primary key, `documents_live`,
`facets_by_value`) capped by a LIMIT, so a keystroke never scans a workspace.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from autodoc.store.db import Store
from autodoc.store.schema import NAME_ALIAS, NAME_PATH, NAME_STEM, NAME_TITLE

TOP = "\U0010ffff"  # above every character: `key >= p AND key < p || TOP` is a prefix range

# A note as completion shows it: id, path, title, aliases (JSON), resolved inbound links.
Note = tuple[int, str, str, str | None, int]
_NOTE = "d.id, d.path, d.title, d.aliases, d.inbound"


def notes_named_from(
    conn: sqlite3.Connection, ws_id: int, prefix: str, cap: int, limit: int
) -> tuple[list[tuple[int, int, str, int, str]], bool]:
    """(document, rank, name key, inbound links, path) of the live notes whose path, file
    name, title or alias (lower-cased, as links look them up) starts with `prefix`, of the
    first `cap` such names: the whole name first, then a name before a path (a folder's
    letters start every path in it), the most linked notes, a title before an alias and a
    file name, the shortest; at most `limit` rows. And whether more than `limit` matched."""
    rows = conn.execute(
        "SELECT n.document_id, n.rank, n.key, d.inbound, d.path FROM (SELECT document_id,"
        " rank, key FROM names WHERE workspace_id = ? AND key >= ? AND key < ?"
        " AND rank IN (?, ?, ?, ?) LIMIT ?) n"
        " JOIN documents d ON d.id = n.document_id WHERE d.deleted = 0"
        " ORDER BY n.key = ? DESC, n.rank = ?, d.inbound DESC,"
        " CASE n.rank WHEN ? THEN 0 WHEN ? THEN 1 WHEN ? THEN 2 ELSE 3 END,"
        " length(n.key), d.path LIMIT ?",
        (ws_id, prefix, prefix + TOP, NAME_PATH, NAME_STEM, NAME_TITLE, NAME_ALIAS, cap,
         prefix, NAME_PATH, NAME_TITLE, NAME_ALIAS, NAME_STEM, limit + 1),
    ).fetchall()  # fmt: skip
    return [(r[0], r[1], r[2], r[3], r[4]) for r in rows[:limit]], len(rows) > limit


def notes_by_title_word(
    conn: sqlite3.Connection, ws_id: int, key: str, cap: int
) -> tuple[list[tuple[int, int, str, int, int, str]], bool]:
    """(document, site kind, name, subword position, inbound links, path) of the live notes
    whose title or alias has a subword join starting with `key` (the name index: `searchp` and
    `pipeline` both find "Search pipeline"); and whether `cap` keys were read."""
    rows = conn.execute(
        "WITH cand AS (SELECT symbol_id, min(pos) AS pos, count(*) AS n FROM (SELECT"
        "  symbol_id, pos FROM symbol_keys WHERE workspace_id = ? AND key >= ? AND key < ?"
        "  LIMIT ?) GROUP BY symbol_id)"
        " SELECT st.document_id, st.kind, s.name, c.pos, d.inbound, d.path,"
        " (SELECT sum(n) FROM cand) FROM cand c"
        " JOIN symbols s ON s.id = c.symbol_id"
        " JOIN symbol_sites st ON st.symbol_id = c.symbol_id AND st.kind <= 1"
        " JOIN documents d ON d.id = st.document_id WHERE d.deleted = 0",
        (ws_id, key, key + TOP, cap),
    ).fetchall()
    read = rows[0][6] if rows else 0
    return [(r[0], r[1], r[2], r[3], r[4], r[5]) for r in rows], read >= cap


def notes(conn: sqlite3.Connection, ids: Sequence[int]) -> dict[int, Note]:
    """{document id: note} for these live documents."""
    sql = f"SELECT {_NOTE} FROM documents d WHERE d.id IN ({{marks}}) AND d.deleted = 0"
    return {r[0]: (r[0], r[1], r[2], r[3], r[4]) for r in Store.rows(conn, sql, list(ids))}


def note_names(conn: sqlite3.Connection, ids: Sequence[int]) -> list[tuple[int, int, str]]:
    """(document, rank, name key) of these documents' paths, file names, titles and aliases."""
    sql = (
        "SELECT document_id, rank, key FROM names WHERE document_id IN ({marks})"
        f" AND rank IN ({NAME_PATH}, {NAME_STEM}, {NAME_TITLE}, {NAME_ALIAS})"
    )
    return [(r[0], r[1], r[2]) for r in Store.rows(conn, sql, list(ids))]


def most_linked_notes(conn: sqlite3.Connection, ws_id: int, limit: int) -> list[Note]:
    """The live notes most linked to, most first (then by path)."""
    rows = conn.execute(
        f"SELECT {_NOTE} FROM documents d WHERE d.workspace_id = ? AND d.deleted = 0"
        " ORDER BY d.inbound DESC, d.path LIMIT ?",
        (ws_id, limit),
    )
    return [(r[0], r[1], r[2], r[3], r[4]) for r in rows]


def paths_from(
    conn: sqlite3.Connection, ws_id: int, prefix: str, after: str, limit: int
) -> list[str]:
    """Live document paths starting with `prefix`, from `after` on, in order, at most
    `limit`."""
    rows = conn.execute(
        "SELECT path FROM documents WHERE workspace_id = ? AND deleted = 0"
        " AND path >= ? AND path < ? ORDER BY path LIMIT ?",
        (ws_id, max(prefix, after), prefix + TOP, limit),
    )
    return [r[0] for r in rows]


def tags_from(
    conn: sqlite3.Connection, ws_id: int, field: str, prefix: str, limit: int
) -> tuple[list[tuple[str, int]], bool]:
    """(tag, documents holding it) of the tags starting with `prefix`, most used first, and
    whether more than `limit` matched."""
    rows = conn.execute(
        "SELECT value, count(*) AS n FROM facets WHERE workspace_id = ? AND field = ?"
        " AND value >= ? AND value < ? GROUP BY value ORDER BY n DESC, value LIMIT ?",
        (ws_id, field, prefix, prefix + TOP, limit + 1),
    ).fetchall()
    return [(r[0], r[1]) for r in rows[:limit]], len(rows) > limit


def link_form_counts(
    conn: sqlite3.Connection, ws_id: int, sample: int
) -> dict[str, tuple[int, int, int, int, int]]:
    """How the vault writes the links that resolve, over at most `sample` of them, per kind
    ("wiki", "md"): (links, with `.md`, with a folder, with a heading, headings written as
    words rather than slugs: an upper-case letter or a space)."""
    rows = conn.execute(
        "SELECT kind, count(*), sum(lower(target) LIKE '%.md'), sum(instr(target, '/') > 0),"
        " sum(heading != ''), sum(heading GLOB '*[A-Z ]*')"
        " FROM (SELECT kind, target, heading FROM links WHERE workspace_id = ?"
        "  AND kind IN ('wiki', 'md') AND target_id IS NOT NULL LIMIT ?) GROUP BY kind",
        (ws_id, sample),
    )
    return {r[0]: (r[1], r[2] or 0, r[3] or 0, r[4] or 0, r[5] or 0) for r in rows}


def shared_stems(conn: sqlite3.Connection, ws_id: int) -> frozenset[str]:
    """The file names (lower-cased, without `.md`) that more than one live note has: a wiki
    link by file name alone would not say which."""
    rows = conn.execute(
        "SELECT n.key FROM names n JOIN documents d ON d.id = n.document_id"
        " WHERE n.workspace_id = ? AND n.rank = ? AND d.deleted = 0"
        " GROUP BY n.key HAVING count(*) > 1",
        (ws_id, NAME_STEM),
    )
    return frozenset(r[0] for r in rows)

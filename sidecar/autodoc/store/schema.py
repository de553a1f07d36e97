"""The store's schema: its tables and indexes, the values its columns hold, and the one-time
migrations of stores an older version wrote.

Kept apart from the connection code so that what a row means (a chunk's state, a name's rank,
the change log's meta keys) is read in one place by every module that writes or reads rows.
"""

from __future__ import annotations

import posixpath
import sqlite3
from enum import IntEnum
from pathlib import PurePosixPath

from autodoc.parse.document import record_number
from autodoc.parse.names import record_key, title_names, without_md_suffix

SCHEMA_VERSION = 1


class ChunkState(IntEnum):
    """`chunks.state`: written but not yet visible, visible, retired (still in the lexical
    index)."""

    PENDING = 0
    LIVE = 1
    DEAD = 2


# The states as plain ints, as SQL text and parameters have always used them.
PENDING, LIVE, DEAD = int(ChunkState.PENDING), int(ChunkState.LIVE), int(ChunkState.DEAD)

CHANGE_LOG_DAYS = 7
CHANGE_LOG_MIN_ROWS = 100_000
PRUNED = "changes_pruned:"  # meta key prefix: + workspace id -> the newest change pruned
# meta key prefix: + workspace id -> when a run over all files began; gone when it finished, so
# one found at the start of a run means the last was interrupted (Ctrl-C, a crash)
RUN_STARTED = "run_started:"
# meta key prefix: + workspace id + ":" + model fp -> the semantic coverage the writer counted
# and the epochs it counted it at (JSON), read by a new process instead of counting again
COVERAGE_NOTE = "coverage:"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS workspaces(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL UNIQUE,
  root TEXT NOT NULL,
  options TEXT NOT NULL,
  created_at REAL NOT NULL,
  indexed_at REAL,
  lexical_epoch INTEGER NOT NULL DEFAULT 0,
  vector_epoch INTEGER NOT NULL DEFAULT 0,
  active_model_fp TEXT,
  active_embedding TEXT,
  link_dialect TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS documents(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  workspace_id INTEGER NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  path TEXT NOT NULL,
  generation INTEGER NOT NULL DEFAULT 0,
  deleted INTEGER NOT NULL DEFAULT 0,
  size INTEGER, mtime_ns INTEGER, content_hash TEXT, chunk_fp TEXT, meta_fp TEXT,
  title TEXT, tags TEXT, aliases TEXT, meta TEXT,
  inbound INTEGER NOT NULL DEFAULT 0,
  indexed_at REAL,
  headings TEXT NOT NULL DEFAULT '[]',
  UNIQUE(workspace_id, path)
);
-- live documents of a workspace by path: filters, counts and path prefixes without a table scan
CREATE INDEX IF NOT EXISTS documents_live ON documents(workspace_id, deleted, path);
CREATE TABLE IF NOT EXISTS chunks(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
  workspace_id INTEGER NOT NULL,
  state INTEGER NOT NULL,
  generation INTEGER NOT NULL,
  kind TEXT NOT NULL, ordinal INTEGER NOT NULL,
  breadcrumb TEXT NOT NULL, text TEXT NOT NULL, text_hash TEXT NOT NULL,
  byte_start INTEGER NOT NULL, byte_end INTEGER NOT NULL,
  line_start INTEGER NOT NULL, line_end INTEGER NOT NULL,
  retired_at REAL,
  line INTEGER NOT NULL DEFAULT 0,
  headings TEXT NOT NULL DEFAULT '[]'
);
-- chunks.line: the line of the heading the breadcrumb ends with (0: not known, line_start);
-- chunks.headings: every heading the span holds, a JSON list of [line, text] (a merged stub's)
-- a document's live chunks; with their text hashes, so a filtered vector scan reads no rows
CREATE INDEX IF NOT EXISTS chunks_by_document_hash ON chunks(document_id, state, text_hash);
-- a document's live chunks by place: how many it has (its last ordinal) in one index step, for
-- the section model's `position` (store.chunk_structure)
CREATE INDEX IF NOT EXISTS chunks_by_document_place ON chunks(document_id, state, ordinal);
DROP INDEX IF EXISTS chunks_by_document;
CREATE INDEX IF NOT EXISTS chunks_by_state ON chunks(workspace_id, state);
CREATE INDEX IF NOT EXISTS chunks_by_hash ON chunks(workspace_id, text_hash);
-- retired chunks waiting to be purged: few, looked up after every write
CREATE INDEX IF NOT EXISTS chunks_retired ON chunks(workspace_id, retired_at) WHERE state = 2;
CREATE TABLE IF NOT EXISTS embeddings(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  workspace_id INTEGER NOT NULL,
  model_fp TEXT NOT NULL,
  text_hash TEXT NOT NULL,
  f32 BLOB NOT NULL,
  bits BLOB NOT NULL,
  UNIQUE(workspace_id, model_fp, text_hash)
);
CREATE TABLE IF NOT EXISTS supersessions(
  workspace_id INTEGER NOT NULL,
  old_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
  new_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
  PRIMARY KEY(workspace_id, old_id, new_id)
);
CREATE TABLE IF NOT EXISTS links(
  source_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
  workspace_id INTEGER NOT NULL,
  kind TEXT NOT NULL, target TEXT NOT NULL, key TEXT NOT NULL, heading TEXT NOT NULL,
  line INTEGER NOT NULL,
  relation TEXT NOT NULL DEFAULT '',
  target_id INTEGER,
  reach INTEGER NOT NULL DEFAULT -1
);
CREATE INDEX IF NOT EXISTS links_by_source ON links(source_id);
CREATE INDEX IF NOT EXISTS links_by_target ON links(target_id);
CREATE INDEX IF NOT EXISTS links_by_key ON links(workspace_id, key);
CREATE TABLE IF NOT EXISTS names(
  workspace_id INTEGER NOT NULL,
  key TEXT NOT NULL,
  document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
  rank INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS names_by_key ON names(workspace_id, key, rank);
CREATE INDEX IF NOT EXISTS names_by_document ON names(document_id);
-- name lookup (index/name_index.py writes, query/find.py reads): the workspace's names, their
-- suffix-join keys, and where they occur
CREATE TABLE IF NOT EXISTS symbols(
  id INTEGER PRIMARY KEY,
  workspace_id INTEGER NOT NULL,
  name TEXT NOT NULL,
  UNIQUE(workspace_id, name)
);
CREATE TABLE IF NOT EXISTS symbol_keys(
  workspace_id INTEGER NOT NULL,
  key TEXT NOT NULL,
  pos INTEGER NOT NULL,
  symbol_id INTEGER NOT NULL,
  PRIMARY KEY(workspace_id, key, pos, symbol_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS symbol_sites(
  symbol_id INTEGER NOT NULL,
  document_id INTEGER NOT NULL,
  kind INTEGER NOT NULL,
  label INTEGER NOT NULL,
  line INTEGER NOT NULL,
  PRIMARY KEY(symbol_id, document_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS symbol_sites_by_document ON symbol_sites(document_id);
CREATE TABLE IF NOT EXISTS changes(
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  time REAL NOT NULL,
  workspace_id INTEGER NOT NULL,
  path TEXT NOT NULL,
  op TEXT NOT NULL,
  generation INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS changes_by_workspace ON changes(workspace_id, seq);
-- the workspace's frontmatter schema: the last good one, and the file as last seen
CREATE TABLE IF NOT EXISTS schemas(
  workspace_id INTEGER PRIMARY KEY REFERENCES workspaces(id) ON DELETE CASCADE,
  path TEXT NOT NULL,
  content_hash TEXT NOT NULL,
  schema TEXT NOT NULL,
  error TEXT NOT NULL DEFAULT '',
  loaded_at REAL NOT NULL
);
-- declared frontmatter fields and tags, normalised: what facet filters select documents by
CREATE TABLE IF NOT EXISTS facets(
  workspace_id INTEGER NOT NULL,
  document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
  field TEXT NOT NULL,
  value TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS facets_by_value ON facets(workspace_id, field, value);
CREATE INDEX IF NOT EXISTS facets_by_document ON facets(document_id);
CREATE TABLE IF NOT EXISTS problems(
  workspace_id INTEGER NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  path TEXT NOT NULL,
  kind TEXT NOT NULL,
  message TEXT NOT NULL
);
"""

# Name ranks used to resolve a link: a path beats a file stem beats a title beats an alias; a
# record's number (`record_key`) and a name the title lists (`title_names`) come last; a path's
# tail (`b/c` of `a/b/c.md`, Obsidian's shortest-path links) after them.
NAME_PATH, NAME_STEM, NAME_TITLE, NAME_ALIAS, NAME_RECORD, NAME_LISTED = 0, 1, 2, 3, 4, 5
NAME_SUFFIX = 6
# `links.reach`: a bit per rank a link may resolve by (`1 << NAME_PATH` for a Markdown link's
# path; the vault's dialect says which a wiki link may), -1 every rank.
REACH_ALL = -1


def document_names(path: str, title: str, aliases: list[str]) -> list[tuple[str, int]]:
    """(key, rank) of every name a document answers to in the `names` table: what the
    indexer writes and what a rename plans against."""
    p = PurePosixPath(path)
    found = [(without_md_suffix(path).lower(), NAME_PATH), (p.stem.lower(), NAME_STEM)]
    found.append((title.strip().lower(), NAME_TITLE))
    found.extend((a.strip().lower(), NAME_ALIAS) for a in aliases if a.strip())
    found.extend((n, NAME_LISTED) for n in title_names(title))
    if number := record_number(p.stem):
        found.append((record_key(posixpath.dirname(path), number), NAME_RECORD))
    return found


def _add_chunk_headings(conn: sqlite3.Connection) -> None:
    """A store written before chunks knew their headings gets the two columns (0 and `[]`:
    a hit shows its first line until the next index run cuts its document again, as the
    chunking format's change makes it). Done once per store."""
    columns = {r[1] for r in conn.execute("PRAGMA table_info(chunks)")}
    if "headings" in columns:
        return
    conn.execute("ALTER TABLE chunks ADD COLUMN line INTEGER NOT NULL DEFAULT 0")
    conn.execute("ALTER TABLE chunks ADD COLUMN headings TEXT NOT NULL DEFAULT '[]'")


def _add_link_dialect(conn: sqlite3.Connection) -> None:
    """A store written before links knew their vault's dialect gets `workspaces.link_dialect`
    ('': not decided yet, read as plain Markdown), `links.reach` (a Markdown link by its path
    only, the others by any name, as links resolved then) and `documents.headings` (filled as
    each document is read again: the reading format changed with them). Done once per store."""
    if "link_dialect" not in {r[1] for r in conn.execute("PRAGMA table_info(workspaces)")}:
        conn.execute("ALTER TABLE workspaces ADD COLUMN link_dialect TEXT NOT NULL DEFAULT ''")
    if "headings" not in {r[1] for r in conn.execute("PRAGMA table_info(documents)")}:
        conn.execute("ALTER TABLE documents ADD COLUMN headings TEXT NOT NULL DEFAULT '[]'")
    if "reach" not in {r[1] for r in conn.execute("PRAGMA table_info(links)")}:
        conn.execute("ALTER TABLE links ADD COLUMN reach INTEGER NOT NULL DEFAULT -1")
        conn.execute(f"UPDATE links SET reach = {1 << NAME_PATH} WHERE kind = 'md'")


def _remember_old_prunes(conn: sqlite3.Connection) -> None:
    """A store pruned before prunes were recorded per workspace: take each workspace's oldest
    kept change as the newest pruned one (a client with an older cursor resyncs, perhaps once
    needlessly, rather than miss what went). Done once per store."""
    if conn.execute("SELECT 1 FROM meta WHERE key = 'prunes_recorded'").fetchone():
        return
    conn.execute("BEGIN IMMEDIATE")
    if conn.execute("SELECT coalesce(min(seq), 1) FROM changes").fetchone()[0] > 1:
        conn.execute(
            "INSERT OR IGNORE INTO meta(key, value) SELECT ? || workspace_id, min(seq) - 1"
            " FROM changes WHERE true GROUP BY workspace_id",
            (PRUNED,),
        )
    conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('prunes_recorded', '1')")
    conn.execute("COMMIT")

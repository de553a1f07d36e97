"""The store: one SQLite file for every workspace, the source of truth for what is visible.

SQLite decides which chunks a reader sees (`chunks.state = LIVE` in the reader's snapshot); the
lexical index may hold more (chunks being written, chunks just retired) and its candidates are
filtered here. One process writes, under an exclusive lease on a file beside the db.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import config
from .errors import STORE_READ_ONLY, RpcError, StoreBusyError, StoreReadOnlyError, invalid_params

SCHEMA_VERSION = 1

# Chunk states: written but not yet visible, visible, retired (still in the lexical index).
PENDING, LIVE, DEAD = 0, 1, 2

READER_MMAP_BYTES = 1 << 30
CHANGE_LOG_DAYS = 7
CHANGE_LOG_MIN_ROWS = 100_000
PRUNED = "changes_pruned:"  # meta key prefix: + workspace id -> the newest change pruned

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
  active_embedding TEXT
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
  retired_at REAL
);
-- a document's live chunks; with their text hashes, so a filtered vector scan reads no rows
CREATE INDEX IF NOT EXISTS chunks_by_document_hash ON chunks(document_id, state, text_hash);
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
  target_id INTEGER
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
-- name lookup (lookup.py): the workspace's names, their suffix-join keys, and where they occur
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

# Name ranks used to resolve a link: a path beats a file stem beats a title beats an alias.
NAME_PATH, NAME_STEM, NAME_TITLE, NAME_ALIAS = 0, 1, 2, 3

WORKSPACE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")  # the whole name (fullmatch)


@dataclass(frozen=True)
class Workspace:
    id: int
    name: str
    root: Path
    options: dict[str, Any]
    indexed_at: float | None
    lexical_epoch: int
    vector_epoch: int = 0
    active_model_fp: str | None = None
    active_embedding: dict[str, Any] | None = None

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Workspace:
        options = config.defaults()
        options.update(json.loads(row["options"]))
        return cls(
            row["id"],
            row["name"],
            Path(row["root"]),
            options,
            row["indexed_at"],
            row["lexical_epoch"],
            row["vector_epoch"],
            row["active_model_fp"],
            json.loads(row["active_embedding"]) if row["active_embedding"] else None,
        )


def read_epochs(conn: sqlite3.Connection, ws_id: int) -> tuple[int, int] | None:
    """(lexical_epoch, vector_epoch): what cached views of a workspace are keyed by."""
    row = conn.execute(
        "SELECT lexical_epoch, vector_epoch FROM workspaces WHERE id = ?", (ws_id,)
    ).fetchone()
    return (row[0], row[1]) if row is not None else None


class WriterLease:
    """An exclusive flock on `<db>.lock`: the one process allowed to write the store."""

    def __init__(self, db_path: Path) -> None:
        self.path = Path(str(db_path) + ".lock")
        self.fd: int | None = None

    def acquire(self) -> None:
        if self.fd is not None:
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = ""
            with contextlib.suppress(OSError):
                holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise StoreBusyError(str(self.path), holder) from None
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}".encode(), 0)
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, 0)
            os.close(self.fd)  # closing drops the flock
            self.fd = None


def _connect(path: Path, *, immutable: bool = False) -> sqlite3.Connection:
    """`immutable`: a store in a folder nobody may write (a read-only mount), read without the
    WAL's shared-memory file, which SQLite could not create there."""
    target: Path | str = path
    if immutable:
        target = f"{path.resolve().as_uri()}?immutable=1"
    conn = sqlite3.connect(
        target, isolation_level=None, check_same_thread=False, timeout=30, uri=immutable
    )
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA busy_timeout=30000")
    return conn


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


class Store:
    """Opens the db, hands out snapshot readers, and owns the single writer connection."""

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path else config.default_db_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # A folder this process cannot write: serve the store as it is, never write it.
        self.frozen = self.path.exists() and not os.access(
            self.path.parent, os.W_OK, effective_ids=os.access in os.supports_effective_ids
        )
        self.lease = WriterLease(self.path)
        self._local = threading.local()
        self._writer: sqlite3.Connection | None = None
        self._write_lock = threading.RLock()
        wal = Path(str(self.path) + "-wal")
        if self.frozen and wal.exists() and wal.stat().st_size > 0:
            # Read immutable, SQLite would ignore the commits still in the log: refuse rather
            # than serve an older store than the lexical index beside it.
            raise RpcError(
                STORE_READ_ONLY,
                "the store's folder is read-only and its write-ahead log holds commits not yet"
                " in the database: open it once where it can be written",
                {"path": str(self.path)},
            )
        boot = _connect(self.path, immutable=self.frozen)
        if not self.frozen:
            boot.execute("PRAGMA journal_mode=WAL")
        try:
            boot.executescript(_SCHEMA)
        except sqlite3.OperationalError:
            # A read-only store (permissions, a read-only mount) still serves reads.
            if not boot.execute("SELECT 1 FROM sqlite_master WHERE name='chunks'").fetchone():
                raise
        with contextlib.suppress(sqlite3.OperationalError):  # read-only: already set
            boot.execute(
                "INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', ?),"
                " ('store_id', ?)",
                (str(SCHEMA_VERSION), uuid.uuid4().hex),
            )
            _remember_old_prunes(boot)
        row = boot.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
        # Files kept beside the db (saved sign indexes) name the store they belong to.
        self.store_id = row[0] if row else ""
        boot.close()

    @property
    def lexical_root(self) -> Path:
        return self.path.parent / (self.path.stem + ".lexical")

    @property
    def vectors_root(self) -> Path:
        return self.path.parent / (self.path.stem + ".vectors")

    # -- reading ---------------------------------------------------------------------------

    def _reader(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = _connect(self.path, immutable=self.frozen)
            conn.execute("PRAGMA query_only=ON")
            # Readers map the file instead of copying pages through read(): the float32
            # rescore (600 random vector rows) went from 3.4 to 1.9 ms on cpp-docs. Mapped pages
            # are the page cache's, shared and reclaimable, not the process's own memory.
            conn.execute(f"PRAGMA mmap_size={READER_MMAP_BYTES}")
            self._local.conn = conn
        return conn

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: every query inside sees the same committed state."""
        conn = self._reader()
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    # -- writing ---------------------------------------------------------------------------

    @property
    def is_writer(self) -> bool:
        return self._writer is not None

    def writer(self) -> sqlite3.Connection:
        """The writer connection; takes the lease on first use (StoreBusyError if held)."""
        with self._write_lock:
            if self._writer is None:
                if self.frozen:
                    raise StoreReadOnlyError(str(self.path), str(self.path.parent))
                self.lease.acquire()
                conn = _connect(self.path)
                conn.execute("PRAGMA synchronous=NORMAL")
                self._writer = conn
            return self._writer

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        with self._write_lock:
            conn = self.writer()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        self.lease.release()

    # -- workspaces --------------------------------------------------------------------------

    def workspace(self, name: Any, conn: sqlite3.Connection | None = None) -> Workspace:
        if not isinstance(name, str) or not name:
            raise invalid_params("workspace must be a non-empty string", value=name)
        db = conn or self._reader()
        row = db.execute("SELECT * FROM workspaces WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise invalid_params(f"unknown workspace {name!r}", workspace=name)
        return Workspace.from_row(row)

    def workspaces(self) -> list[Workspace]:
        rows = self._reader().execute("SELECT * FROM workspaces ORDER BY name").fetchall()
        return [Workspace.from_row(r) for r in rows]

    def add_workspace(self, name: Any, root: Any) -> tuple[Workspace, bool]:
        """(workspace, created). Adding the same name and root again is not an error."""
        if not isinstance(name, str) or not WORKSPACE_NAME.fullmatch(name):
            raise invalid_params(
                "workspace name must be 1-64 letters, digits, '.', '_' or '-'", value=name
            )
        if not isinstance(root, str) or not root:
            raise invalid_params("root must be a folder path", value=root)
        real = Path(root).expanduser().resolve()
        if not real.is_dir():
            raise invalid_params(f"root is not a folder: {root}", root=root)
        with self.transaction() as conn:
            row = conn.execute("SELECT * FROM workspaces WHERE name = ?", (name,)).fetchone()
            if row is not None:
                if Path(row["root"]) != real:
                    raise invalid_params(
                        f"workspace {name!r} already exists with root {row['root']}",
                        workspace=name,
                        root=row["root"],
                    )
                return Workspace.from_row(row), False
            conn.execute(
                "INSERT INTO workspaces(name, root, options, created_at) VALUES (?, ?, ?, ?)",
                (name, str(real), "{}", time.time()),
            )
            row = conn.execute("SELECT * FROM workspaces WHERE name = ?", (name,)).fetchone()
        return Workspace.from_row(row), True

    def remove_workspace(self, name: Any) -> Workspace:
        with self.transaction() as conn:
            ws = self.workspace(name, conn)
            conn.execute("DELETE FROM changes WHERE workspace_id = ?", (ws.id,))
            conn.execute("DELETE FROM meta WHERE key = ?", (f"{PRUNED}{ws.id}",))
            conn.execute("DELETE FROM links WHERE workspace_id = ?", (ws.id,))
            conn.execute("DELETE FROM names WHERE workspace_id = ?", (ws.id,))
            conn.execute(
                "DELETE FROM symbol_sites WHERE symbol_id IN"
                " (SELECT id FROM symbols WHERE workspace_id = ?)",
                (ws.id,),
            )
            conn.execute("DELETE FROM symbol_keys WHERE workspace_id = ?", (ws.id,))
            conn.execute("DELETE FROM symbols WHERE workspace_id = ?", (ws.id,))
            conn.execute("DELETE FROM chunks WHERE workspace_id = ?", (ws.id,))
            conn.execute("DELETE FROM embeddings WHERE workspace_id = ?", (ws.id,))
            conn.execute("DELETE FROM supersessions WHERE workspace_id = ?", (ws.id,))
            conn.execute("DELETE FROM facets WHERE workspace_id = ?", (ws.id,))
            conn.execute("DELETE FROM schemas WHERE workspace_id = ?", (ws.id,))
            conn.execute("DELETE FROM workspaces WHERE id = ?", (ws.id,))
        return ws

    def set_options(self, ws: Workspace, changes: dict[str, Any]) -> Workspace:
        with self.transaction() as conn:
            current = json.loads(
                conn.execute("SELECT options FROM workspaces WHERE id = ?", (ws.id,)).fetchone()[0]
            )
            current.update(changes)
            conn.execute(
                "UPDATE workspaces SET options = ? WHERE id = ?",
                (json.dumps(current, sort_keys=True), ws.id),
            )
            row = conn.execute("SELECT * FROM workspaces WHERE id = ?", (ws.id,)).fetchone()
        return Workspace.from_row(row)

    # -- change log --------------------------------------------------------------------------

    def changes_since(self, ws: Workspace, cursor: int, limit: int = 1000) -> dict[str, Any]:
        with self.snapshot() as conn:
            pruned = conn.execute(
                "SELECT value FROM meta WHERE key = ?", (f"{PRUNED}{ws.id}",)
            ).fetchone()
            rows = conn.execute(
                "SELECT seq, time, path, op, generation FROM changes"
                " WHERE workspace_id = ? AND seq > ? ORDER BY seq LIMIT ?",
                (ws.id, cursor, limit + 1),
            ).fetchall()
            head = conn.execute("SELECT max(seq) FROM changes").fetchone()[0] or 0
        more = len(rows) > limit
        rows = rows[:limit]
        return {
            "workspace": ws.name,
            "changes": [dict(r) for r in rows],
            "cursor": rows[-1]["seq"] if rows else max(cursor, head),
            "more": more,
            # A change of this workspace after the caller's cursor was pruned from the log: the
            # caller must resync in full (changes of other workspaces never count).
            "reset": pruned is not None and cursor < int(pruned[0]),
        }

    @staticmethod
    def prune_changes(conn: sqlite3.Connection, now: float) -> None:
        """Keep at least 7 days and the last 100,000 changes; remember, per workspace, the
        newest change pruned, so a client whose cursor is older knows to resync."""
        old = "time < ? AND seq <= (SELECT max(seq) FROM changes) - ?"
        args = (now - CHANGE_LOG_DAYS * 86400, CHANGE_LOG_MIN_ROWS)
        conn.execute(
            "INSERT INTO meta(key, value) SELECT ? || workspace_id, max(seq) FROM changes"
            f" WHERE {old} GROUP BY workspace_id"
            " ON CONFLICT(key) DO UPDATE SET"
            " value = max(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))",
            (PRUNED, *args),
        )
        conn.execute(f"DELETE FROM changes WHERE {old}", args)

    # -- reading chunks ----------------------------------------------------------------------

    @staticmethod
    def in_batches(conn: sqlite3.Connection, sql: str, ids: Sequence[int | str], *tail: Any):
        for start in range(0, len(ids), 900):  # SQLite's bound-parameter limit
            part = ids[start : start + 900]
            yield from conn.execute(sql.format(marks=",".join("?" * len(part))), (*part, *tail))

    @staticmethod
    def rows(
        conn: sqlite3.Connection, sql: str, ids: Sequence[int | str], *tail: Any
    ) -> list[tuple]:
        """`in_batches` as plain tuples in one list, for the hot queries of the query path:
        no Row object and no generator step per row (the float32 rescore read 600 rows in
        ~10 ms through Row objects)."""
        cur = conn.cursor()
        cur.row_factory = None
        out: list[tuple] = []
        for start in range(0, len(ids), 900):
            part = ids[start : start + 900]
            cur.execute(sql.format(marks=",".join("?" * len(part))), (*part, *tail))
            out += cur.fetchall()
        return out

    @classmethod
    def column(
        cls, conn: sqlite3.Connection, sql: str, ids: Sequence[int | str], *tail: Any
    ) -> list[Any]:
        """The first column of `rows`."""
        return [r[0] for r in cls.rows(conn, sql, ids, *tail)]

    @classmethod
    def visible_chunks(cls, conn: sqlite3.Connection, ws_id: int, ids: list[int]) -> dict[int, int]:
        """{chunk_id: document_id} for the live chunks among `ids` in this snapshot."""
        sql = (
            "SELECT id, document_id FROM chunks"
            " WHERE id IN ({marks}) AND state = 1 AND workspace_id = ?"
        )
        return dict(cls.rows(conn, sql, ids, ws_id))

    @classmethod
    def chunk_rows(cls, conn: sqlite3.Connection, ids: list[int]) -> dict[int, sqlite3.Row]:
        """What a hit shows, for the few chunks that made the answer."""
        sql = (
            "SELECT c.id, c.document_id, c.generation, c.kind, c.breadcrumb, c.text,"
            " c.byte_start, c.byte_end, c.line_start, c.line_end, c.text_hash,"
            " d.path, d.title, d.tags, d.inbound, d.meta, d.size, d.mtime_ns, d.content_hash"
            " FROM chunks c JOIN documents d ON d.id = c.document_id WHERE c.id IN ({marks})"
        )
        return {r["id"]: r for r in cls.in_batches(conn, sql, ids)}


# -- named queries: the reads the query path, status and checks make ---------------------------
# Every SQL string of those modules lives here, named for what it answers; the indexer's write
# protocol still holds its own (issue 20, next step).


def document_paths(conn: sqlite3.Connection, ids: Sequence[int]) -> dict[int, str]:
    """{document id: path}."""
    sql = "SELECT id, path FROM documents WHERE id IN ({marks})"
    return {r[0]: r[1] for r in Store.rows(conn, sql, sorted(set(ids)))}


def first_live_chunks(conn: sqlite3.Connection, document_ids: Sequence[int]) -> list[int]:
    """Each document's first visible chunk (by ordinal)."""
    return Store.column(
        conn,
        "SELECT id FROM (SELECT c.id, c.document_id, row_number() OVER"
        " (PARTITION BY c.document_id ORDER BY c.ordinal) AS n FROM chunks c"
        f" WHERE c.document_id IN ({{marks}}) AND c.state = {LIVE}) WHERE n = 1",
        list(document_ids),
    )


def boost_facts(conn: sqlite3.Connection, ids: Sequence[int]) -> dict[int, tuple[int, str | None]]:
    """{document id: (resolved inbound links, tags JSON)}: what fusion's boosts read."""
    sql = "SELECT id, inbound, tags FROM documents WHERE id IN ({marks})"
    return {r[0]: (r[1], r[2]) for r in Store.rows(conn, sql, list(ids))}


def successors(conn: sqlite3.Connection, ids: Sequence[int]) -> list[tuple[int, int]]:
    """(old document, its successor) for these documents when they are superseded."""
    sql = "SELECT old_id, new_id FROM supersessions WHERE old_id IN ({marks})"
    return [(r[0], r[1]) for r in Store.rows(conn, sql, list(ids))]


def documents_named(conn: sqlite3.Connection, ws_id: int, key: str) -> list[int]:
    """Live documents whose title or an alias, lower-cased and spaced, is `key`: titles first."""
    rows = conn.execute(
        "SELECT DISTINCT n.document_id FROM names n JOIN documents d ON d.id = n.document_id"
        " WHERE n.workspace_id = ? AND n.key = ? AND n.rank IN (?, ?) AND d.deleted = 0"
        " ORDER BY n.rank, d.path",
        (ws_id, key, NAME_TITLE, NAME_ALIAS),
    ).fetchall()
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
    """(links, links resolved to a document)."""
    row = conn.execute(
        "SELECT count(*), count(target_id) FROM links WHERE workspace_id = ?", (ws_id,)
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


def unresolved_links(conn: sqlite3.Connection, ws_id: int) -> list[tuple[str, int, str, str]]:
    """(path, line, kind, target) of links that resolve to no document, by path and line."""
    rows = conn.execute(
        "SELECT d.path, l.line, l.kind, l.target FROM links l"
        " JOIN documents d ON d.id = l.source_id"
        " WHERE l.workspace_id = ? AND l.target_id IS NULL AND d.deleted = 0"
        " ORDER BY d.path, l.line",
        (ws_id,),
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


# -- vectors: the sign index's reads, the cache's fill and collection, the semantic stage's reads


def vector_stats(conn: sqlite3.Connection, ws_id: int, model_fp: str) -> tuple[int, int]:
    """(this model's vectors in the workspace, the highest vector id)."""
    row = conn.execute(
        "SELECT count(*), coalesce(max(id), 0) FROM embeddings"
        " WHERE workspace_id = ? AND model_fp = ?",
        (ws_id, model_fp),
    ).fetchone()
    return row[0], row[1]


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


def vectors_by_id(conn: sqlite3.Connection, ids: Sequence[int]) -> list[tuple]:
    """(id, text hash, f32) of these vectors (plain tuples: the float32 rescore's hot read)."""
    return Store.rows(conn, "SELECT id, text_hash, f32 FROM embeddings WHERE id IN ({marks})", ids)


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


# -- names (lookup.py): the dictionary of names, their suffix-join keys, and their sites ---------


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
) -> tuple[int, int, str] | None:
    """(line_start, line_end, breadcrumb) of the visible section holding `line`; for a heading
    with no text of its own (so no chunk), the first section after it, else the last."""
    row = (
        conn.execute(
            "SELECT line_start, line_end, breadcrumb FROM chunks WHERE document_id = ?"
            f" AND state = {LIVE} AND line_end >= ? ORDER BY line_start LIMIT 1",
            (document_id, line),
        ).fetchone()
        or conn.execute(
            "SELECT line_start, line_end, breadcrumb FROM chunks WHERE document_id = ?"
            f" AND state = {LIVE} ORDER BY line_start DESC LIMIT 1",
            (document_id,),
        ).fetchone()
    )
    return (row[0], row[1], row[2]) if row is not None else None

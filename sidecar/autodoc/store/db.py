"""The store's connections: one SQLite file for every workspace, the source of truth for what is
visible.

SQLite decides which chunks a reader sees (`chunks.state = LIVE` in the reader's snapshot); the
lexical index may hold more (chunks being written, chunks just retired) and its candidates are
filtered here. One process writes, under an exclusive lease on a file beside the db. `Store`
opens the db, hands out snapshot readers and the writer's transactions, and keeps the
workspaces and the change log; the batched `IN (...)` helpers every query module uses are here.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from autodoc.store.lease import WriterLease
from autodoc.store.schema import (
    _SCHEMA,
    CHANGE_LOG_DAYS,
    CHANGE_LOG_MIN_ROWS,
    COVERAGE_NOTE,
    PRUNED,
    RUN_STARTED,
    SCHEMA_VERSION,
    _add_chunk_headings,
    _add_link_dialect,
    _remember_old_prunes,
)
from autodoc.store.workspace import WORKSPACE_NAME, Workspace
from autodoc.wire import protocol, workspace_options
from autodoc.wire.errors import STORE_READ_ONLY, RpcError, StoreReadOnlyError, invalid_params

READER_MMAP_BYTES = 1 << 30


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


class Store:
    """Opens the db, hands out snapshot readers, and owns the single writer connection."""

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path else workspace_options.default_db_path()
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
            _add_chunk_headings(boot)
            _add_link_dialect(boot)
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
            for prefix in (PRUNED, RUN_STARTED):
                conn.execute("DELETE FROM meta WHERE key = ?", (f"{prefix}{ws.id}",))
            conn.execute("DELETE FROM meta WHERE key LIKE ?", (f"{COVERAGE_NOTE}{ws.id}:%",))
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

    def changes_since(self, ws: Workspace, cursor: int, limit: int = 1000) -> protocol.Changes:
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
        return protocol.Changes(
            workspace=ws.name,
            changes=[
                protocol.Change(
                    seq=r["seq"],
                    time=r["time"],
                    path=r["path"],
                    op=r["op"],
                    generation=r["generation"],
                )
                for r in rows
            ],
            cursor=rows[-1]["seq"] if rows else max(cursor, head),
            more=more,
            # A change of this workspace after the caller's cursor was pruned from the log: the
            # caller must resync in full (changes of other workspaces never count).
            reset=pruned is not None and cursor < int(pruned[0]),
        )

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
        """What a hit shows, for the few chunks that made the answer (a read-only store an
        older version wrote has no `line` and `headings`: read without them)."""
        columns = (
            "c.id, c.document_id, c.generation, c.kind, c.breadcrumb, c.text, c.byte_start,"
            " c.byte_end, c.line_start, c.line_end, c.text_hash, {place}"
            " d.path, d.title, d.tags, d.inbound, d.meta, d.size, d.mtime_ns, d.content_hash"
        )
        sql = (
            "SELECT " + columns.format(place="c.line, c.headings,") + " FROM chunks c"
            " JOIN documents d ON d.id = c.document_id WHERE c.id IN ({marks})"
        )
        try:
            return {r["id"]: r for r in cls.in_batches(conn, sql, ids)}
        except sqlite3.OperationalError:
            sql = sql.replace("c.line, c.headings,", "")
        return {r["id"]: r for r in cls.in_batches(conn, sql, ids)}

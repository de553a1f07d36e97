"""The store on its own: workspaces, the change log, batched reads, the writer lease, and how
its connections are set up. Effect tests with exact expected values, against a real SQLite file.
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import fcntl
import os
import re
import shutil
import socket
import sqlite3
import stat
import tempfile
import threading
import time
from pathlib import Path

import pytest

from autodoc.store import DEAD, LIVE, PENDING, Store, Workspace, WriterLease
from autodoc.store.lease import command_line
from autodoc.wire import workspace_options
from autodoc.wire.errors import (
    INVALID_PARAMS,
    STORE_BUSY,
    STORE_READ_ONLY,
    RpcError,
    StoreBusyError,
)

DAY = 86400.0
NAME_ERROR = "workspace name must be 1-64 letters, digits, '.', '_' or '-'"


@pytest.fixture
def store(db_path: Path):
    s = Store(db_path)
    yield s
    s.close()


def folder(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    path.mkdir(parents=True)
    return path.resolve()


def error(excinfo: pytest.ExceptionInfo) -> tuple:
    err = excinfo.value
    return err.code, err.message, err.data


def add_changes(store: Store, rows: list[tuple]) -> None:
    """Change-log rows (seq, time, workspace_id, path): explicit seqs, op 'add'."""
    with store.transaction() as conn:
        conn.executemany(
            "INSERT INTO changes(seq, time, workspace_id, path, op, generation)"
            " VALUES (?, ?, ?, ?, 'add', 1)",
            rows,
        )


def change(seq: int, path: str, time: float = 1.0) -> dict:
    return {"seq": seq, "time": time, "path": path, "op": "add", "generation": 1}


# -- opening the store ------------------------------------------------------------------------


def test_store_without_a_path_uses_the_default_db_path(tmp_path, monkeypatch):
    target = tmp_path / "env" / "deeper" / "x.db"
    monkeypatch.setenv("AUTODOC_DB", str(target))
    for arg in (None, ""):
        s = Store(arg)
        assert s.path == target
        assert s.lease.path == Path(str(target) + ".lock")
        s.close()
    assert target.is_file()


def test_store_creates_missing_parent_folders_and_names_its_side_files(tmp_path):
    db = tmp_path / "a" / "b" / "c" / "my.db"
    s = Store(db)
    assert db.is_file()
    assert s.path == db
    assert s.lease.path == tmp_path / "a" / "b" / "c" / "my.db.lock"
    assert s.lexical_root == tmp_path / "a" / "b" / "c" / "my.lexical"
    assert s.vectors_root == tmp_path / "a" / "b" / "c" / "my.vectors"
    s.close()


def test_meta_rows_are_written_once_and_the_store_id_is_stable(db_path):
    first = Store(db_path)
    sid = first.store_id
    first.close()
    assert re.fullmatch(r"[0-9a-f]{32}", sid)
    second = Store(db_path)
    assert second.store_id == sid
    second.close()
    conn = sqlite3.connect(db_path)
    assert dict(conn.execute("SELECT key, value FROM meta")) == {
        "schema_version": "1",
        "store_id": sid,
        "prunes_recorded": "1",
    }
    conn.close()
    other = Store(db_path.parent / "other.db")
    assert other.store_id != sid
    other.close()


def test_a_store_pruned_before_prunes_were_recorded_still_resets_old_cursors(db_path, tmp_path):
    """Opened once by this version, a store whose log an older one pruned takes each
    workspace's oldest kept change as its newest pruned one: an older cursor resyncs."""
    s = Store(db_path)
    a, _ = s.add_workspace("a", str(folder(tmp_path, "a")))
    b, _ = s.add_workspace("b", str(folder(tmp_path, "b")))
    add_changes(s, [(5, 1.0, a.id, "a5"), (6, 1.0, b.id, "b6"), (9, 1.0, a.id, "a9")])
    with s.transaction() as conn:  # as an older version left it: pruned, nothing recorded
        conn.execute(
            "DELETE FROM meta WHERE key LIKE 'changes_pruned:%' OR key = 'prunes_recorded'"
        )
    s.close()
    s = Store(db_path)
    try:
        assert [s.changes_since(a, c)["reset"] for c in (0, 3, 4, 5)] == [True, True, False, False]
        assert [s.changes_since(b, c)["reset"] for c in (4, 5)] == [True, False]
    finally:
        s.close()


def test_the_visibility_reads_of_the_query_path_look_chunks_up_by_id(store):
    """The lexical stage's visibility read (ids from the index, per answer) must look each id
    up, never range over the workspace's chunks: an index that covered (workspace, ...) once
    made SQLite scan all 108k of cpp-docs' chunks for it, 1.5 -> 20 ms a search."""
    ran: list[str] = []
    with store.snapshot() as conn:
        conn.set_trace_callback(ran.append)  # the statement as run, its values bound
        assert Store.visible_chunks(conn, 1, [3, 5, 8]) == {}
        conn.set_trace_callback(None)
        (sql,) = [q for q in ran if "chunks" in q]
        plan = " ".join(r[-1] for r in conn.execute("EXPLAIN QUERY PLAN " + sql))
    assert "rowid=?" in plan, plan


def test_reader_connection_pragmas(store):
    with store.snapshot() as conn:
        got = {
            p: conn.execute(f"PRAGMA {p}").fetchone()[0]
            for p in ("query_only", "mmap_size", "foreign_keys", "busy_timeout", "journal_mode")
        }
        assert conn.isolation_level is None
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            conn.execute("DELETE FROM meta")
    assert got == {
        "query_only": 1,
        "mmap_size": 1 << 30,
        "foreign_keys": 1,
        "busy_timeout": 30000,
        "journal_mode": "wal",
    }


def test_writer_connection_pragmas(store):
    conn = store.writer()
    got = {
        p: conn.execute(f"PRAGMA {p}").fetchone()[0]
        for p in ("synchronous", "foreign_keys", "busy_timeout", "query_only", "journal_mode")
    }
    # synchronous 1 is NORMAL (the default in WAL mode would be FULL, 2)
    assert got == {
        "synchronous": 1,
        "foreign_keys": 1,
        "busy_timeout": 30000,
        "query_only": 0,
        "journal_mode": "wal",
    }
    assert store.is_writer
    assert store.writer() is conn


def test_transaction_rolls_back_and_reraises(store, tmp_path):
    root = folder(tmp_path, "v")
    with pytest.raises(KeyError), store.transaction() as conn:
        conn.execute(
            "INSERT INTO workspaces(name, root, options, created_at) VALUES ('x', ?, '{}', 0)",
            (str(root),),
        )
        raise KeyError("boom")
    assert store.workspaces() == []
    store.add_workspace("y", str(root))  # the writer is usable again after the rollback
    assert [w.name for w in store.workspaces()] == ["y"]


# -- snapshots and closing ----------------------------------------------------------------------


def test_a_snapshot_is_one_state_for_every_read_inside_it(store, tmp_path):
    store.add_workspace("a", str(folder(tmp_path, "a")))
    with store.snapshot() as conn:
        assert [w.name for w in store.workspaces()] == ["a"]  # pins the snapshot
        store.add_workspace("b", str(folder(tmp_path, "b")))
        # the store's own reads on this thread run on the snapshot's connection
        assert [w.name for w in store.workspaces()] == ["a"]
        assert store.workspace("a").name == "a"
        with pytest.raises(RpcError, match="unknown workspace 'b'"):
            store.workspace("b")
        assert conn.execute("SELECT count(*) FROM workspaces").fetchone()[0] == 1
        # another thread has its own reader, outside this snapshot
        seen: list[list[str]] = []
        t = threading.Thread(target=lambda: seen.append([w.name for w in store.workspaces()]))
        t.start()
        t.join()
        assert seen == [["a", "b"]]
    assert [w.name for w in store.workspaces()] == ["a", "b"]


def test_close_closes_both_connections_and_releases_the_lease(db_path, tmp_path):
    s = Store(db_path)
    s.add_workspace("a", str(folder(tmp_path, "a")))
    with s.snapshot() as reader:
        reader.execute("SELECT 1")
    writer = s.writer()
    assert s.is_writer
    s.close()
    assert not s.is_writer
    assert s.lease.fd is None
    with pytest.raises(sqlite3.ProgrammingError):
        reader.execute("SELECT 1")
    with pytest.raises(sqlite3.ProgrammingError):
        writer.execute("SELECT 1")
    assert s.lease.path.read_bytes() == b""
    other = Store(db_path)
    other.writer()  # the lease is free
    other.close()
    # a closed store opens fresh connections on its next use
    assert [w.name for w in s.workspaces()] == ["a"]
    with s.snapshot() as again:
        assert again is not reader
    s.close()
    s.close()  # closing twice is harmless


# -- read-only stores ---------------------------------------------------------------------------

NOBODY = 65534


@contextlib.contextmanager
def unprivileged(where: Path):
    """Run the block without the right to write files we own (as root: as uid 65534)."""
    if os.geteuid() != 0:
        yield
        return
    try:
        os.seteuid(NOBODY)
    except PermissionError:
        pytest.skip("running as root without CAP_SETUID: file modes cannot make a store read-only")
    try:
        try:
            os.listdir(where)
        except PermissionError:
            pytest.skip(f"uid {NOBODY} cannot reach {where}")
        yield
    finally:
        os.seteuid(0)


@pytest.fixture
def ro_dir():
    """A folder outside pytest's private tmp tree (uid 65534 must reach it), owned by whoever
    will read the read-only store."""
    path = Path(tempfile.mkdtemp(prefix="autodoc-ro-"))
    os.chmod(path, 0o755)
    if os.geteuid() == 0:
        os.chown(path, NOBODY, -1)
    yield path
    os.chmod(path, 0o755)
    shutil.rmtree(path, ignore_errors=True)


def make_read_only(db: Path, dir_writable: bool) -> None:
    for f in db.parent.iterdir():
        if f.is_file():
            os.chmod(f, 0o444)
    os.chmod(db.parent, 0o755 if dir_writable else 0o555)


@pytest.mark.parametrize("schema", ["current", "older"])
def test_a_read_only_store_still_serves_reads(ro_dir, schema):
    db = ro_dir / "autodoc.db"
    s = Store(db)
    s.add_workspace("a", str(ro_dir))
    sid = s.store_id
    s.close()
    if schema == "older":  # written before a table and an index were added: the schema fails
        conn = sqlite3.connect(db)
        conn.execute("DROP TABLE problems")
        conn.execute("DROP INDEX facets_by_document")
        conn.close()
    make_read_only(db, dir_writable=True)
    with unprivileged(ro_dir):
        ro = Store(db)
        try:
            assert ro.store_id == sid
            assert [w.name for w in ro.workspaces()] == ["a"]
            assert ro.workspace("a").root == ro_dir.resolve()
        finally:
            ro.close()


def test_a_read_only_store_from_before_store_ids_has_an_empty_store_id(ro_dir):
    db = ro_dir / "autodoc.db"
    Store(db).close()
    conn = sqlite3.connect(db)
    conn.execute("DELETE FROM meta WHERE key = 'store_id'")
    conn.commit()
    conn.close()
    make_read_only(db, dir_writable=True)
    with unprivileged(ro_dir):
        ro = Store(db)
        try:
            assert ro.store_id == ""
            assert ro.workspaces() == []
        finally:
            ro.close()


def test_a_read_only_file_that_is_not_a_store_is_refused(ro_dir):
    db = ro_dir / "foreign.db"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE notes(x)")
    conn.close()
    make_read_only(db, dir_writable=True)
    with unprivileged(ro_dir), pytest.raises(sqlite3.OperationalError) as exc:
        Store(db)
    assert str(exc.value) == "attempt to write a readonly database"


def test_a_store_on_a_read_only_folder_still_serves_reads(ro_dir):
    db = ro_dir / "autodoc.db"
    s = Store(db)
    s.add_workspace("a", str(ro_dir))
    s.close()
    assert sorted(p.name for p in ro_dir.iterdir()) == ["autodoc.db", "autodoc.db.lock"]
    make_read_only(db, dir_writable=False)
    with unprivileged(ro_dir):
        ro = Store(db)
        try:
            assert [w.name for w in ro.workspaces()] == ["a"]
            with ro.snapshot() as conn:
                assert conn.execute("SELECT count(*) FROM workspaces").fetchone()[0] == 1
            with pytest.raises(RpcError) as exc:  # a documented error, not PermissionError
                ro.add_workspace("b", str(ro_dir))
            assert error(exc) == (
                STORE_READ_ONLY,
                f"the store's folder is read-only: {ro_dir}",
                {"path": str(db)},
            )
        finally:
            ro.close()
    assert sorted(p.name for p in ro_dir.iterdir()) == ["autodoc.db", "autodoc.db.lock"]


def test_a_read_only_store_with_commits_left_in_its_log_is_refused(ro_dir):
    """Read immutable, SQLite would ignore the commits in the write-ahead log: say so."""
    db = ro_dir / "autodoc.db"
    s = Store(db)
    s.add_workspace("a", str(ro_dir))
    s.close()
    wal = Path(str(db) + "-wal")
    wal.write_bytes(b"\0" * 64)  # a log a crashed or copied-while-live writer left behind
    make_read_only(db, dir_writable=False)
    with unprivileged(ro_dir), pytest.raises(RpcError) as exc:
        Store(db)
    code, message, data = error(exc)
    assert (code, data) == (STORE_READ_ONLY, {"path": str(db)})
    assert "write-ahead log holds commits" in message


# -- workspaces ---------------------------------------------------------------------------------


def test_add_workspace_creates_with_defaults(store, tmp_path):
    root = folder(tmp_path, "vault")
    ws, created = store.add_workspace("v", str(root))
    assert created is True
    assert ws == Workspace(1, "v", root, workspace_options.defaults(), None, 0, 0, None, None)
    assert store.workspace("v") == ws
    assert store.workspaces() == [ws]


def test_add_workspace_again_same_root_is_not_an_error(store, tmp_path, monkeypatch):
    root = folder(tmp_path, "vault")
    first, _ = store.add_workspace("v", str(root))
    for spelling in (str(root), str(root) + "/", str(root / "sub" / "..")):
        (root / "sub").mkdir(exist_ok=True)
        again, created = store.add_workspace("v", spelling)
        assert (again, created) == (first, False)
    monkeypatch.setenv("HOME", str(tmp_path))
    again, created = store.add_workspace("v", "~/vault")
    assert (again, created) == (first, False)
    assert len(store.workspaces()) == 1


def test_add_workspace_expands_the_home_folder(store, tmp_path, monkeypatch):
    root = folder(tmp_path, "home-vault")
    monkeypatch.setenv("HOME", str(tmp_path))
    ws, created = store.add_workspace("h", "~/home-vault")
    assert created and ws.root == root


def test_add_workspace_with_another_root_is_refused(store, tmp_path):
    first = folder(tmp_path, "one")
    store.add_workspace("v", str(first))
    other = folder(tmp_path, "two")
    with pytest.raises(RpcError) as exc:
        store.add_workspace("v", str(other))
    assert error(exc) == (
        INVALID_PARAMS,
        f"workspace 'v' already exists with root {first}",
        {"workspace": "v", "root": str(first)},
    )
    assert store.workspace("v").root == first


@pytest.mark.parametrize(
    "name", [5, None, "", "-a", ".a", "_a", "a b", "a/b", "é", "a" * 65, ["a"]]
)
def test_add_workspace_bad_names(store, tmp_path, name):
    root = folder(tmp_path, "v")
    with pytest.raises(RpcError) as exc:
        store.add_workspace(name, str(root))
    assert error(exc) == (INVALID_PARAMS, NAME_ERROR, {"value": name})
    assert store.workspaces() == []


@pytest.mark.parametrize("name", ["a", "A9", "a" * 64, "a.b_c-d", "9"])
def test_add_workspace_good_names(store, tmp_path, name):
    ws, created = store.add_workspace(name, str(folder(tmp_path, "v")))
    assert (ws.name, created) == (name, True)


@pytest.mark.parametrize("name", ["v\n", "a" * 64 + "\n"])
def test_add_workspace_refuses_a_name_ending_in_a_newline(store, tmp_path, name):
    with pytest.raises(RpcError) as exc:
        store.add_workspace(name, str(folder(tmp_path, "v")))
    assert error(exc) == (INVALID_PARAMS, NAME_ERROR, {"value": name})


@pytest.mark.parametrize("root", ["", 5, None, ["/tmp"]])
def test_add_workspace_bad_root_values(store, root):
    with pytest.raises(RpcError) as exc:
        store.add_workspace("v", root)
    assert error(exc) == (INVALID_PARAMS, "root must be a folder path", {"value": root})
    assert store.workspaces() == []


def test_add_workspace_root_that_is_not_a_folder(store, tmp_path):
    missing = str(tmp_path / "missing")
    a_file = tmp_path / "file.md"
    a_file.write_text("x")
    for root in (missing, str(a_file)):
        with pytest.raises(RpcError) as exc:
            store.add_workspace("v", root)
        assert error(exc) == (INVALID_PARAMS, f"root is not a folder: {root}", {"root": root})
    assert store.workspaces() == []


@pytest.mark.parametrize("name", ["", 5, None, ["v"]])
def test_workspace_lookup_needs_a_non_empty_string(store, tmp_path, name):
    store.add_workspace("v", str(folder(tmp_path, "v")))
    with pytest.raises(RpcError) as exc:
        store.workspace(name)
    assert error(exc) == (INVALID_PARAMS, "workspace must be a non-empty string", {"value": name})


def test_workspace_lookup_unknown_name(store, tmp_path):
    store.add_workspace("v", str(folder(tmp_path, "v")))
    with pytest.raises(RpcError) as exc:
        store.workspace("nope")
    assert error(exc) == (INVALID_PARAMS, "unknown workspace 'nope'", {"workspace": "nope"})


def test_workspace_lookup_on_a_given_connection(store, tmp_path):
    root = folder(tmp_path, "v")
    with pytest.raises(KeyError), store.transaction() as conn:
        conn.execute(
            "INSERT INTO workspaces(name, root, options, created_at) VALUES ('w', ?, '{}', 0)",
            (str(root),),
        )
        assert store.workspace("w", conn).root == root  # sees its own uncommitted row
        with pytest.raises(RpcError, match="unknown workspace 'w'"):
            store.workspace("w")  # the reader does not
        raise KeyError("roll back")
    assert store.workspaces() == []


def test_workspaces_are_listed_by_name(store, tmp_path):
    for name in ("m", "b", "z", "a"):
        store.add_workspace(name, str(folder(tmp_path, name)))
    assert [w.name for w in store.workspaces()] == ["a", "b", "m", "z"]
    assert [w.id for w in store.workspaces()] == [4, 2, 1, 3]


def test_workspace_from_row_reads_every_field(store):
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO workspaces(name, root, options, created_at, indexed_at, lexical_epoch,"
            " vector_epoch, active_model_fp, active_embedding) VALUES"
            " ('w', '/some/root', '{\"section_tokens\": 500, \"extra\": [1]}', 1.0, 12.5, 3, 4,"
            ' \'fp1\', \'{"provider": "onnx", "dim": 8}\'),'
            " ('e', '/e', '{}', 1.0, NULL, 0, 0, NULL, '')"
        )
    expected = Workspace(
        1,
        "w",
        Path("/some/root"),
        {**workspace_options.defaults(), "section_tokens": 500, "extra": [1]},
        12.5,
        3,
        4,
        "fp1",
        {"provider": "onnx", "dim": 8},
    )
    assert store.workspace("w") == expected
    assert store.workspace("e") == Workspace(
        2, "e", Path("/e"), workspace_options.defaults(), None, 0, 0, None, None
    )
    with store.snapshot() as conn:
        row = conn.execute("SELECT * FROM workspaces WHERE name = 'w'").fetchone()
    assert Workspace.from_row(row) == expected
    # each Workspace has its own options: defaults are copied, not shared
    a, b = store.workspaces()
    a.options["embedding"]["provider"] = "changed"
    assert b.options["embedding"] == {"provider": "bundled"}


def test_set_options_merges_and_stores_sorted_keys(store, tmp_path):
    ws, _ = store.add_workspace("v", str(folder(tmp_path, "v")))
    ws = store.set_options(ws, {"section_tokens": 500, "abstract_chunk": False})
    ws = store.set_options(ws, {"section_tokens": 600, "embedding": {"provider": "none"}})
    assert ws.options == {
        **workspace_options.defaults(),
        "section_tokens": 600,
        "abstract_chunk": False,
        "embedding": {"provider": "none"},
    }
    assert store.workspace("v") == ws
    with store.snapshot() as conn:
        raw = conn.execute("SELECT options FROM workspaces WHERE id = ?", (ws.id,)).fetchone()[0]
    assert raw == (
        '{"abstract_chunk": false, "embedding": {"provider": "none"}, "section_tokens": 600}'
    )


# -- removing a workspace -----------------------------------------------------------------------


def populate(conn: sqlite3.Connection, ws_id: int, base: int) -> None:
    """One or more rows of workspace `ws_id` in every table that holds a workspace's data."""
    d1, d2, sym = base + 1, base + 2, base + 1
    conn.executemany(
        "INSERT INTO documents(id, workspace_id, path) VALUES (?, ?, ?)",
        [(d1, ws_id, "one.md"), (d2, ws_id, "two.md")],
    )
    conn.execute(
        "INSERT INTO chunks(document_id, workspace_id, state, generation, kind, ordinal,"
        " breadcrumb, text, text_hash, byte_start, byte_end, line_start, line_end)"
        " VALUES (?, ?, 1, 1, 'section', 0, 'One', 'text', 'h', 0, 4, 1, 1)",
        (d1, ws_id),
    )
    conn.execute(
        "INSERT INTO embeddings(workspace_id, model_fp, text_hash, f32, bits)"
        " VALUES (?, 'fp', 'h', x'00', x'00')",
        (ws_id,),
    )
    conn.execute("INSERT INTO supersessions VALUES (?, ?, ?)", (ws_id, d1, d2))
    conn.execute(
        "INSERT INTO links(source_id, workspace_id, kind, target, key, heading, line)"
        " VALUES (?, ?, 'wiki', 'two', 'two', '', 1)",
        (d1, ws_id),
    )
    conn.execute("INSERT INTO names VALUES (?, 'one', ?, 0)", (ws_id, d1))
    conn.execute("INSERT INTO symbols(id, workspace_id, name) VALUES (?, ?, 'Sym')", (sym, ws_id))
    conn.execute("INSERT INTO symbol_keys VALUES (?, 'sym', 0, ?)", (ws_id, sym))
    conn.execute("INSERT INTO symbol_sites VALUES (?, ?, 1, 0, 3)", (sym, d1))
    conn.execute(
        "INSERT INTO changes(time, workspace_id, path, op, generation) VALUES (1, ?, 'one.md',"
        " 'add', 1)",
        (ws_id,),
    )
    conn.execute("INSERT INTO schemas VALUES (?, 's.yaml', 'h', '{}', '', 1)", (ws_id,))
    conn.execute("INSERT INTO facets VALUES (?, ?, 'tag', 'x')", (ws_id, d1))
    conn.execute("INSERT INTO problems VALUES (?, 'one.md', 'schema', 'bad')", (ws_id,))


def workspace_tables(conn: sqlite3.Connection) -> list[str]:
    names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    return sorted(
        t
        for t in names
        if "workspace_id" in {c[1] for c in conn.execute(f"PRAGMA table_info({t})")}
    )


def counts(conn: sqlite3.Connection, ws_id: int, sym: int) -> dict[str, int]:
    out = {
        t: conn.execute(f"SELECT count(*) FROM {t} WHERE workspace_id = ?", (ws_id,)).fetchone()[0]
        for t in workspace_tables(conn)
    }
    # cascade-only tables: no workspace column
    out["symbol_sites"] = conn.execute(
        "SELECT count(*) FROM symbol_sites WHERE symbol_id = ?", (sym,)
    ).fetchone()[0]
    out["workspaces"] = conn.execute(
        "SELECT count(*) FROM workspaces WHERE id = ?", (ws_id,)
    ).fetchone()[0]
    return out


def test_remove_workspace_leaves_no_row_of_it_and_keeps_the_others(store, tmp_path):
    a, _ = store.add_workspace("a", str(folder(tmp_path, "a")))
    b, _ = store.add_workspace("b", str(folder(tmp_path, "b")))
    with store.transaction() as conn:
        populate(conn, a.id, 100)
        populate(conn, b.id, 200)
    with store.snapshot() as conn:
        tables = workspace_tables(conn)
        before_b = counts(conn, b.id, 201)
        before_a = counts(conn, a.id, 101)
    # every table with a workspace column is populated above: a new one must be added there
    assert set(tables) == {
        "changes",
        "chunks",
        "documents",
        "embeddings",
        "facets",
        "links",
        "names",
        "problems",
        "schemas",
        "supersessions",
        "symbol_keys",
        "symbols",
    }
    assert all(n >= 1 for n in before_a.values()), before_a
    assert before_a == before_b
    assert store.remove_workspace("a") == a
    with store.snapshot() as conn:
        assert counts(conn, a.id, 101) == dict.fromkeys(before_a, 0)
        assert counts(conn, b.id, 201) == before_b
    assert store.workspaces() == [b]
    with pytest.raises(RpcError) as exc:
        store.remove_workspace("a")
    assert error(exc) == (INVALID_PARAMS, "unknown workspace 'a'", {"workspace": "a"})


def test_remove_workspace_reads_it_in_its_own_transaction(store, tmp_path):
    store.add_workspace("a", str(folder(tmp_path, "a")))
    with store.snapshot():
        assert [w.name for w in store.workspaces()] == ["a"]  # an older snapshot is open
        b, _ = store.add_workspace("b", str(folder(tmp_path, "b")))
        assert store.remove_workspace("b") == b
    assert [w.name for w in store.workspaces()] == ["a"]


# -- the change log -----------------------------------------------------------------------------


def test_changes_since_on_an_empty_log(store, tmp_path):
    ws, _ = store.add_workspace("v", str(folder(tmp_path, "v")))
    assert store.changes_since(ws, 0) == {
        "workspace": "v",
        "changes": [],
        "cursor": 0,
        "more": False,
        "reset": False,
    }
    assert store.changes_since(ws, 7)["cursor"] == 7


def test_changes_since_pages_by_limit_and_skips_other_workspaces(store, tmp_path):
    a, _ = store.add_workspace("a", str(folder(tmp_path, "a")))
    b, _ = store.add_workspace("b", str(folder(tmp_path, "b")))
    add_changes(
        store,
        [
            (1, 1.0, a.id, "a1"),
            (2, 1.0, a.id, "a2"),
            (3, 1.0, b.id, "b3"),
            (4, 1.0, b.id, "b4"),
            (5, 1.0, a.id, "a5"),
        ],
    )
    page = store.changes_since(a, 0, limit=2)
    assert page == {
        "workspace": "a",
        "changes": [change(1, "a1"), change(2, "a2")],
        "cursor": 2,
        "more": True,
        "reset": False,
    }
    # exactly the limit left: no more
    assert store.changes_since(a, 0, limit=3) == {
        "workspace": "a",
        "changes": [change(1, "a1"), change(2, "a2"), change(5, "a5")],
        "cursor": 5,
        "more": False,
        "reset": False,
    }
    assert store.changes_since(a, 2, limit=1) == {
        "workspace": "a",
        "changes": [change(5, "a5")],
        "cursor": 5,
        "more": False,
        "reset": False,
    }
    # nothing of this workspace after the cursor: the cursor moves to the log's head
    assert store.changes_since(a, 5) == {
        "workspace": "a",
        "changes": [],
        "cursor": 5,
        "more": False,
        "reset": False,
    }
    assert store.changes_since(b, 4)["cursor"] == 5
    assert store.changes_since(b, 2) == {
        "workspace": "b",
        "changes": [change(3, "b3"), change(4, "b4")],
        "cursor": 4,
        "more": False,
        "reset": False,
    }


def test_changes_since_on_a_workspace_without_changes_moves_to_the_head(store, tmp_path):
    a, _ = store.add_workspace("a", str(folder(tmp_path, "a")))
    b, _ = store.add_workspace("b", str(folder(tmp_path, "b")))
    add_changes(store, [(1, 1.0, a.id, "x"), (2, 1.0, a.id, "y"), (3, 1.0, a.id, "z")])
    assert store.changes_since(b, 0) == {
        "workspace": "b",
        "changes": [],
        "cursor": 3,
        "more": False,
        "reset": False,
    }
    assert store.changes_since(b, 9)["cursor"] == 9


def test_changes_since_default_limit_is_1000(store, tmp_path):
    ws, _ = store.add_workspace("v", str(folder(tmp_path, "v")))
    add_changes(store, [(i, 1.0, ws.id, f"p{i}") for i in range(1, 1002)])
    first = store.changes_since(ws, 0)
    assert [c["seq"] for c in first["changes"]] == list(range(1, 1001))
    assert (first["cursor"], first["more"], first["reset"]) == (1000, True, False)
    rest = store.changes_since(ws, first["cursor"])
    assert rest["changes"] == [change(1001, "p1001")]
    assert (rest["cursor"], rest["more"]) == (1001, False)


def test_changes_since_resets_a_cursor_older_than_the_oldest_kept_change(store, tmp_path):
    ws, _ = store.add_workspace("v", str(folder(tmp_path, "v")))
    now = 1e9
    old = [(i, now - 8 * DAY, ws.id, f"p{i}") for i in range(1, 5)]
    new = [(100_000 + i, now, ws.id, f"p{100_000 + i}") for i in range(1, 5)]
    add_changes(store, old + new)
    with store.transaction() as conn:
        Store.prune_changes(conn, now)  # seqs 1-4: older than 7 days, beyond the last 100000
    kept = [change(100_000 + i, f"p{100_000 + i}", now) for i in range(1, 5)]
    assert store.changes_since(ws, 0) == {
        "workspace": "v",
        "changes": kept,
        "cursor": 100_004,
        "more": False,
        "reset": True,
    }
    assert store.changes_since(ws, 3)["reset"] is True  # seq 4 is lost
    assert store.changes_since(ws, 4)["reset"] is False  # the next one is kept
    assert store.changes_since(ws, 4)["changes"] == kept
    assert store.changes_since(ws, 100_004)["reset"] is False


def test_changes_since_resets_when_all_of_a_workspaces_changes_were_pruned(store, tmp_path):
    a, _ = store.add_workspace("a", str(folder(tmp_path, "a")))
    b, _ = store.add_workspace("b", str(folder(tmp_path, "b")))
    now = 1e9
    add_changes(store, [(1, now - 8 * DAY, a.id, "seen"), (2, now - 8 * DAY, a.id, "missed")])
    assert store.changes_since(a, 0)["cursor"] == 2
    add_changes(store, [(100_003, now, b.id, "b")])
    with store.transaction() as conn:
        Store.prune_changes(conn, now)
    # the client saw seq 1 only; seq 2 (a change to a) is gone from the log
    assert store.changes_since(a, 1)["reset"] is True


def test_changes_since_does_not_reset_for_other_workspaces_changes(store, tmp_path):
    a, _ = store.add_workspace("a", str(folder(tmp_path, "a")))
    b, _ = store.add_workspace("b", str(folder(tmp_path, "b")))
    add_changes(store, [(1, 1.0, a.id, "x"), (2, 1.0, a.id, "y")])
    cursor = store.changes_since(b, 0)["cursor"]
    assert cursor == 2
    add_changes(store, [(3, 1.0, a.id, "z"), (4, 1.0, b.id, "first")])
    answer = store.changes_since(b, cursor)
    assert answer["changes"] == [change(4, "first")]
    assert answer["reset"] is False


def test_prune_changes_keeps_seven_days_and_the_last_100000(store, tmp_path):
    a, _ = store.add_workspace("a", str(folder(tmp_path, "a")))
    b, _ = store.add_workspace("b", str(folder(tmp_path, "b")))
    now = 1e9
    week = now - 7 * DAY
    add_changes(
        store,
        [
            (1, week - 3, a.id, "older than 7 days by 3 s"),
            (2, week, a.id, "exactly 7 days old"),
            (3, now - 8 * DAY, b.id, "old, the newest row beyond the last 100000"),
            (4, now - 8 * DAY, a.id, "old, the oldest of the last 100000"),
            (100_003, now, b.id, "new"),
        ],
    )
    with store.transaction() as conn:
        Store.prune_changes(conn, now)
        kept = [r[0] for r in conn.execute("SELECT seq FROM changes ORDER BY seq")]
    assert kept == [2, 4, 100_003]
    with store.transaction() as conn:
        Store.prune_changes(conn, now + 3 * DAY)  # now all are old; the last 100000 stay
        kept = [r[0] for r in conn.execute("SELECT seq FROM changes ORDER BY seq")]
    assert kept == [4, 100_003]


# -- batched reads ------------------------------------------------------------------------------


@pytest.fixture
def symbols(store, tmp_path):
    """Workspace a's symbols 1..1801 and workspace b's 5001..5003."""
    a, _ = store.add_workspace("a", str(folder(tmp_path, "a")))
    b, _ = store.add_workspace("b", str(folder(tmp_path, "b")))
    with store.transaction() as conn:
        conn.executemany(
            "INSERT INTO symbols(id, workspace_id, name) VALUES (?, ?, ?)",
            [(i, a.id, f"s{i}") for i in range(1, 1802)]
            + [(i, b.id, f"s{i}") for i in range(5001, 5004)],
        )
    return a, b


SIZES = [0, 1, 899, 900, 901, 1799, 1800, 1801]


@pytest.mark.parametrize("n", SIZES)
def test_in_batches_returns_every_row_once(store, symbols, n):
    a, _ = symbols
    ids = [*range(1, n + 1), 5001, 9999]
    sql = "SELECT id, name FROM symbols WHERE id IN ({marks}) AND workspace_id = ?"
    with store.snapshot() as conn:
        got = list(Store.in_batches(conn, sql, ids, a.id))
        every = list(Store.in_batches(conn, "SELECT id FROM symbols WHERE id IN ({marks})", ids))
    assert all(isinstance(r, sqlite3.Row) for r in got)
    assert sorted((r["id"], r["name"]) for r in got) == [(i, f"s{i}") for i in range(1, n + 1)]
    assert sorted(r[0] for r in every) == [*range(1, n + 1), 5001]


@pytest.mark.parametrize("n", SIZES)
def test_rows_and_column_return_every_row_once(store, symbols, n):
    a, b = symbols
    ids = [*range(1, n + 1), 5001, 9999]
    sql = "SELECT id, name FROM symbols WHERE id IN ({marks}) AND workspace_id = ?"
    with store.snapshot() as conn:
        rows = Store.rows(conn, sql, ids, a.id)
        col = Store.column(conn, sql, ids, a.id)
        col_b = Store.column(conn, sql, ids, b.id)
        # the plain tuples are the cursor's: the connection still hands out Rows
        assert isinstance(conn.execute("SELECT 1").fetchone(), sqlite3.Row)
    assert all(type(r) is tuple for r in rows)
    assert sorted(rows) == [(i, f"s{i}") for i in range(1, n + 1)]
    assert sorted(col) == list(range(1, n + 1))
    assert col_b == [5001]


def test_visible_chunks_and_chunk_rows(store, tmp_path):
    a, _ = store.add_workspace("a", str(folder(tmp_path, "a")))
    b, _ = store.add_workspace("b", str(folder(tmp_path, "b")))
    insert = (
        "INSERT INTO chunks(id, document_id, workspace_id, state, generation, kind, ordinal,"
        " breadcrumb, text, text_hash, byte_start, byte_end, line_start, line_end)"
        " VALUES (?, ?, ?, ?, 2, 'section', 0, 'Doc > Part', ?, 'th', 10, 20, 3, 4)"
    )
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO documents(id, workspace_id, path, title, tags, inbound, meta, size,"
            " mtime_ns, content_hash) VALUES (7, ?, 'doc.md', 'Doc', '[\"t\"]', 2, '{}', 99,"
            " 123, 'ch'), (8, ?, 'other.md', NULL, NULL, 0, NULL, NULL, NULL, NULL)",
            (a.id, b.id),
        )
        conn.executemany(
            insert,
            [
                (1, 7, a.id, PENDING, "pending"),
                (2, 7, a.id, LIVE, "live"),
                (3, 7, a.id, DEAD, "dead"),
                (4, 8, b.id, LIVE, "b's"),
            ],
        )
    with store.snapshot() as conn:
        assert Store.visible_chunks(conn, a.id, [1, 2, 3, 4, 5]) == {2: 7}
        assert Store.visible_chunks(conn, b.id, [1, 2, 3, 4, 5]) == {4: 8}
        assert Store.visible_chunks(conn, a.id, []) == {}
        rows = Store.chunk_rows(conn, [2, 4, 99])
    assert sorted(rows) == [2, 4]
    assert dict(rows[2]) == {
        "id": 2,
        "document_id": 7,
        "generation": 2,
        "kind": "section",
        "breadcrumb": "Doc > Part",
        "text": "live",
        "byte_start": 10,
        "byte_end": 20,
        "line_start": 3,
        "line_end": 4,
        "text_hash": "th",
        "line": 0,  # written without: not known, the hit shows line_start
        "headings": "[]",
        "path": "doc.md",
        "title": "Doc",
        "tags": '["t"]',
        "inbound": 2,
        "meta": "{}",
        "size": 99,
        "mtime_ns": 123,
        "content_hash": "ch",
    }
    assert (rows[4]["path"], rows[4]["text"], rows[4]["title"]) == ("other.md", "b's", None)


# -- the writer lease ---------------------------------------------------------------------------


def holder_text() -> str:
    return f"pid {os.getpid()} on {socket.gethostname()}"


def written(lock: Path) -> str:
    """The first line of a lease file this process wrote (`pid N on HOST`), after checking the
    lines that follow it: this process's command line and when it took the lease."""
    lines = lock.read_text().splitlines()
    assert lines[1] == f"command {command_line()}" and lines[2].startswith("since ")
    since = datetime.datetime.fromisoformat(lines[2].removeprefix("since "))
    assert abs(time.time() - since.timestamp()) < 600  # written now, with its UTC offset
    return lines[0]


def busy(lock: Path, holder: str) -> tuple:
    """A store-busy error as a foreign holder that wrote only `holder` makes it."""
    message = "the store is being written by another process"
    message += f", {holder}," if holder else ""
    data: dict = {"lock": str(lock), "holder": holder}
    if holder.startswith("pid 42 on "):
        data.update(pid=42, host=holder.removeprefix("pid 42 on "))
    return STORE_BUSY, f"{message} which holds its writer lease {lock}", data


def busy_here(lock: Path, err: StoreBusyError) -> None:
    """A store-busy error naming this process as the holder: pid, host, command and since."""
    assert err.code == STORE_BUSY
    assert err.data["lock"] == str(lock) and err.data["holder"] == holder_text()
    assert (err.data["pid"], err.data["host"]) == (os.getpid(), socket.gethostname())
    assert err.data["command"] == command_line() and err.data["since"]
    assert err.message.startswith(f"the store is being written by another process, "
                                  f"{holder_text()} (`{command_line()}`, since ")  # fmt: skip
    assert err.message.endswith(f"), which holds its writer lease {lock}")


def test_lease_writes_its_holder_into_a_new_lock_file(db_path):
    db_path.parent.mkdir(parents=True)
    lease = WriterLease(db_path)
    assert lease.path == Path(str(db_path) + ".lock")
    assert lease.fd is None
    old = os.umask(0)
    try:
        lease.acquire()
    finally:
        os.umask(old)
    try:
        assert stat.S_IMODE(os.stat(lease.path).st_mode) == 0o644
        assert written(lease.path) == holder_text()
        fd = lease.fd
        lease.acquire()  # already held: a no-op
        assert lease.fd == fd
    finally:
        lease.release()
    assert lease.fd is None
    assert lease.path.read_bytes() == b""
    lease.release()  # releasing twice is harmless


def test_second_store_is_busy_and_names_the_holder(db_path):
    first = Store(db_path)
    second = Store(db_path)
    try:
        first.writer()
        lock = Path(str(db_path) + ".lock")
        with pytest.raises(StoreBusyError) as exc:
            second.writer()
        busy_here(lock, exc.value)
        assert not second.is_writer
        assert second.lease.fd is None
        # reads need no lease
        assert second.workspaces() == []
        first.close()
        assert lock.read_bytes() == b""  # release truncates the lock file
        second.writer()  # the lease is free again
        assert written(lock) == holder_text()
        with pytest.raises(StoreBusyError) as exc:
            first.writer()
        busy_here(lock, exc.value)
    finally:
        second.close()
        first.close()


def test_an_old_holder_text_is_replaced_not_overwritten(db_path):
    db_path.parent.mkdir(parents=True)
    lock = Path(str(db_path) + ".lock")
    lock.write_text("pid 123456789 on a-much-longer-host-name-than-this-one.example.org\n")
    lease = WriterLease(db_path)
    lease.acquire()
    try:
        assert written(lock) == holder_text()
    finally:
        lease.release()


@contextlib.contextmanager
def foreign_holder(lock: Path, content: bytes):
    """Another holder of the lease that wrote `content` into the lock file."""
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.pwrite(fd, content, 0)
    try:
        yield
    finally:
        os.close(fd)


@pytest.mark.parametrize(
    "content, holder",
    [
        (b"  pid 42 on elsewhere\n", "pid 42 on elsewhere"),
        (b"pid 42 on \xff\xfehost", "pid 42 on \ufffd\ufffdhost"),
        (b"x" * 300, "x" * 200),
        (b"", ""),
    ],
)
def test_busy_error_reads_the_holder_text(db_path, content, holder):
    db_path.parent.mkdir(parents=True)
    lease = WriterLease(db_path)
    with foreign_holder(lease.path, content):
        with pytest.raises(StoreBusyError) as exc:
            lease.acquire()
        assert error(exc) == busy(lease.path, holder)
        assert lease.fd is None
    lease.acquire()  # the holder is gone
    lease.release()


def test_busy_error_says_the_holders_command_and_since_when(db_path):
    """What a refused process says in words: which process writes the store, running what,
    since when (the lines the holder wrote after `pid N on HOST`)."""
    db_path.parent.mkdir(parents=True)
    lease = WriterLease(db_path)
    record = b"pid 42 on elsewhere\ncommand autodoc serve --http 127.0.0.1:8080 docs\n" \
             b"since 2026-03-05T10:02:11+01:00\n"  # fmt: skip
    with foreign_holder(lease.path, record):
        with pytest.raises(StoreBusyError) as exc:
            lease.acquire()
        assert lease.holder() == "pid 42 on elsewhere"  # what editors show, as before
    assert error(exc) == (
        STORE_BUSY,
        "the store is being written by another process, pid 42 on elsewhere (`autodoc serve"
        f" --http 127.0.0.1:8080 docs`, since 2026-03-05 10:02:11), which holds its writer lease"
        f" {lease.path}",
        {"lock": str(lease.path), "holder": "pid 42 on elsewhere", "pid": 42, "host": "elsewhere",
         "command": "autodoc serve --http 127.0.0.1:8080 docs",
         "since": "2026-03-05T10:02:11+01:00"},
    )  # fmt: skip


def test_the_command_line_is_written_as_typed():
    assert command_line(["/venv/bin/autodoc", "index", "my docs"]) == "autodoc index 'my docs'"
    assert command_line(["/src/autodoc/__main__.py", "serve"]) == "autodoc serve"
    long = command_line(["autodoc", "--call", "search.query", "x" * 500])
    assert len(long) == 200 and long.endswith("…")


def test_busy_error_when_the_lock_file_cannot_be_read(db_path):
    db_path.parent.mkdir(parents=True)
    lock = Path(str(db_path) + ".lock")
    os.mkfifo(lock)  # pread on a FIFO fails (ESPIPE): the holder is unknown
    fd = os.open(lock, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        with pytest.raises(StoreBusyError) as exc:
            WriterLease(db_path).acquire()
        assert error(exc) == busy(lock, "")
    finally:
        os.close(fd)


def test_release_still_frees_the_lease_when_truncating_fails(db_path, monkeypatch):
    db_path.parent.mkdir(parents=True)
    lease = WriterLease(db_path)
    lease.acquire()

    def refuse(fd: int, length: int) -> None:
        raise OSError(errno.EIO, "injected")

    monkeypatch.setattr(os, "ftruncate", refuse)
    lease.release()
    monkeypatch.undo()
    assert lease.fd is None
    assert written(lease.path) == holder_text()  # not truncated
    other = WriterLease(db_path)
    other.acquire()  # the flock was dropped all the same
    other.release()


# -- a hit's line: the heading its label ends with ---------------------------------------------

MERGED = """# 42. State sync

## Changelog

- 2021-03-01: proposed

## Context

Nodes that fall behind need a fast way to catch up without replaying every block.

## Decision

We snapshot the application state every 1000 blocks.
"""


def test_a_hit_that_starts_at_a_merged_stub_lands_on_the_heading_it_names(tmp_path: Path):
    """`adr-042:3` labelled `› Context` used to point at `## Changelog`: the row's line is the
    heading of the section the stub joined, and the span still names every heading it holds.
    The label names the stub's heading too (issue 55: its text is not under Context)."""
    from autodoc.engine import Engine
    from autodoc.serve.dispatcher import Dispatcher

    from ..conftest import lexical_workspace, write

    root = tmp_path / "v"
    write(root, "adr-042.md", MERGED)
    rpc = Dispatcher(Engine(tmp_path / "s.db"))
    lexical_workspace(rpc, root)
    hit = rpc.call("search.query", ["v", "catch up without replaying", {"fusion": "rrf"}])["hits"][
        0
    ]
    assert hit["breadcrumb"] == "42. State sync › Changelog · Context"
    lines = MERGED.splitlines()
    assert lines[hit["line"] - 1] == "## Context"
    assert lines[hit["line_start"] - 1] == "## Changelog"  # the span still starts at the stub
    assert hit["headings"] == [{"line": 3, "text": "Changelog"}, {"line": 7, "text": "Context"}]


def test_a_store_without_chunk_headings_gets_them_and_shows_first_lines(tmp_path: Path):
    """A store an older version wrote (no `line`, `headings`) is migrated when opened; its
    chunks show their first line until their documents are cut again."""
    from autodoc.engine import Engine
    from autodoc.serve.dispatcher import Dispatcher

    from ..conftest import lexical_workspace, write

    root = tmp_path / "v"
    write(root, "adr-042.md", MERGED)
    rpc = Dispatcher(Engine(tmp_path / "s.db"))
    lexical_workspace(rpc, root)
    rpc.engine.close()
    with contextlib.closing(sqlite3.connect(tmp_path / "s.db")) as conn:
        conn.execute("ALTER TABLE chunks DROP COLUMN line")
        conn.execute("ALTER TABLE chunks DROP COLUMN headings")
        conn.commit()
    rpc = Dispatcher(Engine(tmp_path / "s.db"))
    hit = rpc.call("search.query", ["v", "catch up without replaying", {"fusion": "rrf"}])["hits"][
        0
    ]
    assert (hit["line"], hit["headings"]) == (hit["line_start"], [])

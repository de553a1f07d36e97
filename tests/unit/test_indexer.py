"""Incremental indexing, generations, crash reconciliation and hostile files."""

from __future__ import annotations

import os
import shutil
import sqlite3

import pytest
import tantivy

from autodoc.bm25.analyzer import LexicalDoc
from autodoc.engine import Engine
from autodoc.index.indexer import Indexer
from autodoc.store import PENDING

from ..conftest import STAGE_SETS, write

DOC = """
# Design

Intro paragraph about the design.

## Storage
The store keeps alpha rows.

## Network
The network sends beta packets.

## Limits
Gamma limits apply.
"""


def live_chunks(engine, path):
    with engine.store.snapshot() as conn:
        return [
            dict(r)
            for r in conn.execute(
                "SELECT c.id, c.text_hash, c.generation, c.breadcrumb, c.line_start, c.text"
                " FROM chunks c JOIN documents d ON d.id = c.document_id"
                " WHERE d.path = ? AND c.state = 1 ORDER BY c.ordinal",
                (path,),
            )
        ]


def paths(rpc, query):
    """Lexical hits only: the semantic stage always returns the nearest chunks, wanted or not."""
    return [
        h["path"] for h in rpc.call("search.query", ["v", query, {"stages": ["lexical"]}])["hits"]
    ]


def add(rpc, vault, embedding="none"):
    """A workspace; these tests are about files and generations, so no embedding by default."""
    rpc.call("workspace.add", ["v", str(vault)])
    rpc.call("workspace.configure", ["v", {"embedding": embedding}])


@pytest.fixture
def indexed(rpc, vault):
    write(vault, "design.md", DOC)
    write(vault, "other.md", "# Other\n\nUnrelated alpha text.\n")
    add(rpc, vault)
    first = rpc.call("index.run", ["v"])
    assert first["added"] == 2 and first["chunks"] > 0
    return rpc


def test_unchanged_rerun_only_checks_stat(indexed, vault):
    again = indexed.call("index.run", ["v"])
    assert again["unchanged"] == 2 and again["added"] == again["modified"] == 0
    assert again["chunks_written"] == 0
    # touching without changing content re-hashes but writes nothing
    os.utime(vault / "design.md", ns=(1, 1))
    again = indexed.call("index.run", ["v"])
    assert again["unchanged"] == 2 and again["chunks_written"] == 0


def test_editing_one_paragraph_rewrites_only_its_chunk(indexed, engine, vault):
    before = live_chunks(engine, "design.md")
    (vault / "design.md").write_text(
        DOC.lstrip("\n").replace("beta packets", "beta packets and delta frames")
    )
    summary = indexed.call("index.run", ["v"])
    assert summary["modified"] == 1 and summary["chunks_written"] == 1
    after = live_chunks(engine, "design.md")
    changed = [a for a, b in zip(after, before, strict=True) if a["id"] != b["id"]]
    assert len(changed) == 1 and "delta frames" in changed[0]["text"]
    for a, b in zip(after, before, strict=True):
        if a["id"] == b["id"]:
            assert a["text_hash"] == b["text_hash"]
    assert {c["generation"] for c in after} == {before[0]["generation"] + 1}
    assert "design.md" in paths(indexed, "delta frames")


def test_line_spans_follow_an_edit_above_them(indexed, engine, vault):
    (vault / "design.md").write_text(
        DOC.lstrip("\n").replace("Intro paragraph", "Intro\n\nparagraph\n\n")
    )
    indexed.call("index.run", ["v"])
    data = (vault / "design.md").read_bytes()
    with engine.store.snapshot() as conn:
        for r in conn.execute(
            "SELECT byte_start, byte_end, line_start, text FROM chunks WHERE state = 1"
            " AND document_id = (SELECT id FROM documents WHERE path = 'design.md')"
        ):
            assert data[r["byte_start"] : r["byte_end"]].decode() == r["text"]
            assert data[: r["byte_start"]].count(b"\n") + 1 == r["line_start"]


def test_deleted_file_leaves_results_at_once(indexed, vault):
    assert "design.md" in paths(indexed, "gamma")
    (vault / "design.md").unlink()
    summary = indexed.call("index.run", ["v"])
    assert summary["deleted"] == 1
    assert "design.md" not in paths(indexed, "gamma")
    # and it comes back with a higher generation
    write(vault, "design.md", DOC)
    indexed.call("index.run", ["v"])
    log = indexed.call("changes.since", ["v", 0])["changes"]
    ops = [(c["path"], c["op"], c["generation"]) for c in log if c["path"] == "design.md"]
    assert ops == [("design.md", "add", 1), ("design.md", "delete", 2), ("design.md", "add", 3)]


def test_changes_since_cursor(indexed, vault):
    first = indexed.call("changes.since", ["v", 0])
    assert {c["path"] for c in first["changes"]} == {"design.md", "other.md"}
    assert first["reset"] is False
    write(vault, "new.md", "# New\n\ntext\n")
    indexed.call("index.run", ["v"])
    nxt = indexed.call("changes.since", ["v", first["cursor"]])
    assert [(c["path"], c["op"]) for c in nxt["changes"]] == [("new.md", "add")]
    assert indexed.call("changes.since", ["v", nxt["cursor"]])["changes"] == []


def test_change_log_retention_keeps_seven_days_and_100k(engine):
    store = engine.store
    now = 1e10
    insert = (
        "INSERT INTO changes(time, workspace_id, path, op, generation) VALUES (?, 1, 'p', 'add', 1)"
    )
    with store.transaction() as conn:
        conn.executemany(insert, [(now - 8 * 86400,)] * 100_010 + [(now,)] * 5)
        store.prune_changes(conn, now=now)
        # old rows beyond the newest 100,000 go; the newest 100,000 stay even when old
        assert conn.execute("SELECT count(*) FROM changes").fetchone()[0] == 100_000
        conn.execute("DELETE FROM changes")
        conn.executemany(insert, [(now - 6 * 86400,)] * 100_010)
        store.prune_changes(conn, now=now)
        # nothing younger than 7 days goes, however many there are
        assert conn.execute("SELECT count(*) FROM changes").fetchone()[0] == 100_010


def test_crash_leftovers_are_reconciled(indexed, engine, vault):
    ws = engine.workspace("v")
    lex = engine.lexical(ws)
    # a writer died after writing PENDING rows and committing them to Tantivy
    with engine.store.transaction() as conn:
        doc_id = conn.execute("SELECT id FROM documents WHERE path='design.md'").fetchone()[0]
        cid = conn.execute(
            "INSERT INTO chunks(document_id, workspace_id, state, generation, kind, ordinal,"
            " breadcrumb, text, text_hash, byte_start, byte_end, line_start, line_end)"
            " VALUES (?, ?, ?, 99, 'section', 0, 'X', 'zombie words', 'h', 0, 1, 1, 1)",
            (doc_id, ws.id, PENDING),
        ).lastrowid
    lex.add([LexicalDoc(cid, doc_id, "X", "X", [], [], "zombie words")])
    lex.commit()
    assert paths(indexed, "zombie") == []  # invisible: SQLite says PENDING
    report = Indexer(engine.store, lex, ws).reconcile()
    assert report["pending_removed"] == 1
    assert cid not in lex.all_chunk_ids()
    with engine.store.snapshot() as conn:
        assert conn.execute("SELECT count(*) FROM chunks WHERE id=?", (cid,)).fetchone()[0] == 0


def test_lost_lexical_index_is_rebuilt_from_sqlite(indexed, engine):
    ws = engine.workspace("v")
    lex = engine.lexical(ws)
    lex.delete_all()
    lex.commit()
    assert paths(indexed, "gamma") == []
    report = Indexer(engine.store, lex, ws).reconcile()
    assert report["rebuilt"] > 0
    assert "design.md" in paths(indexed, "gamma")


def test_reader_snapshot_never_mixes_generations(indexed, engine, vault):
    """A reader holding a snapshot keeps the old generation while the writer publishes."""
    ws = engine.workspace("v")
    reader = sqlite3.connect(engine.store.path)
    reader.execute("BEGIN")
    old = reader.execute(
        "SELECT DISTINCT c.generation FROM chunks c JOIN documents d ON d.id = c.document_id"
        " WHERE d.path='design.md' AND c.state=1"
    ).fetchall()
    (vault / "design.md").write_text(DOC.lstrip("\n").replace("alpha", "omega"))
    indexed.call("index.run", ["v"])
    again = reader.execute(
        "SELECT DISTINCT c.generation FROM chunks c JOIN documents d ON d.id = c.document_id"
        " WHERE d.path='design.md' AND c.state=1"
    ).fetchall()
    assert old == again and len(old) == 1
    reader.execute("COMMIT")
    # the retired chunks are still in Tantivy during the grace period, but never visible
    lex = engine.lexical(ws)
    hits = indexed.call("search.query", ["v", "alpha rows", {"stages": ["lexical"]}])["hits"]
    assert all("omega" in h["snippet"] or h["path"] != "design.md" for h in hits)
    assert len(lex.all_chunk_ids()) > engine.workspaces.workspace_list()[0]["chunks"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads unreadable files")
def test_unreadable_file_is_skipped(rpc, vault):
    p = write(vault, "secret.md", "# S\n")
    p.chmod(0)
    add(rpc, vault)
    summary = rpc.call("index.run", ["v"])
    assert [s["path"] for s in summary["skipped"]] == ["secret.md"]


def test_hostile_files_are_indexed_or_skipped_with_a_reason(rpc, vault, tmp_path):
    write(vault, "good.md", "# Good\n\nfine words\n")
    (vault / "binary.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00IHDR" + bytes(range(256)))
    (vault / "latin1.md").write_bytes(b"# Caf\xe9\n\nna\xefve text\n")
    (vault / "empty.md").write_bytes(b"")
    with open(vault / "huge.md", "wb") as f:
        f.truncate(50 * 1024 * 1024)
    outside = tmp_path / "outside"
    outside.mkdir()
    write(outside, "escape.md", "# Escape\n\nsecret outside words\n")
    (vault / "escape.md").symlink_to(outside / "escape.md")
    (vault / "escape-dir").symlink_to(outside)
    (vault / "loop").mkdir()
    (vault / "loop" / "again").symlink_to(vault / "loop")
    (vault / "inside-link.md").symlink_to(vault / "good.md")
    (vault / "dangling.md").symlink_to(vault / "missing.md")
    os.mkfifo(vault / "pipe.md")
    write(vault, "bad-yaml.md", "---\ntitle: [oops\n---\n# Bad yaml\n\nstill searchable\n")
    add(rpc, vault, embedding="bundled")  # hostile files go through the embedder too
    summary = rpc.call("index.run", ["v"])
    skipped = {s["path"]: s["reason"] for s in summary["skipped"]}
    assert "binary" in skipped["binary.md"]
    assert "too large" in skipped["huge.md"]
    assert "outside" in skipped["escape.md"] and "outside" in skipped["escape-dir"]
    assert "loop" in skipped["loop/again"]
    assert "broken" in skipped["dangling.md"]
    assert "regular" in skipped["pipe.md"]
    warnings = {w["path"]: w["message"] for w in summary["warnings"]}
    assert "UTF-8" in warnings["latin1.md"] and "frontmatter" in warnings["bad-yaml.md"]
    assert "good.md" in paths(rpc, "fine") and "inside-link.md" in paths(rpc, "fine")
    assert paths(rpc, "still searchable") == ["bad-yaml.md"]
    assert paths(rpc, "naive") == ["latin1.md"] or paths(rpc, "text") == ["latin1.md"]
    assert paths(rpc, "secret outside") == []
    status = rpc.call("index.status", ["v"])
    assert status["problem_count"] == len(skipped) + len(warnings)


def test_retired_chunks_leave_tantivy_after_the_grace_period(indexed, engine, vault):
    ws = engine.workspace("v")
    lex = engine.lexical(ws)
    (vault / "design.md").write_text(DOC.lstrip("\n").replace("Gamma", "Epsilon"))
    indexed.call("index.run", ["v"])
    with engine.store.snapshot() as conn:
        dead = [r[0] for r in conn.execute("SELECT id FROM chunks WHERE state = 2")]
    assert dead and set(dead) <= lex.all_chunk_ids()
    assert Indexer(engine.store, lex, ws).purge_retired(grace=0) == len(dead)
    assert not set(dead) & lex.all_chunk_ids()
    with engine.store.snapshot() as conn:
        live = {r[0] for r in conn.execute("SELECT id FROM chunks")}
    assert lex.all_chunk_ids() == live


def test_file_vanishing_between_scan_and_read_is_skipped(engine, vault):
    write(vault, "a.md", "# A\n\nalpha\n")
    write(vault, "b.md", "# B\n\nbeta\n")
    engine.workspaces.workspace_add("v", str(vault))
    engine.workspaces.workspace_configure("v", {"embedding": "none"})

    def vanish(done, total, path):
        if path == "b.md":
            (vault / "b.md").unlink()  # gone after the scan saw it, before it is read

    summary = engine.indexing.index_run("v", progress=vanish)
    assert summary["added"] == 1
    assert [s["path"] for s in summary["skipped"]] == ["b.md"]
    assert summary["skipped"][0]["reason"] == "no such file in the workspace"


def test_an_index_of_another_format_is_rebuilt(indexed, engine):
    ws = engine.workspace("v")
    lex = engine.lexical(ws)
    (lex.path / "autodoc-format").write_text("0")  # as an older AutoDoc would have left it
    report = Indexer(engine.store, lex, ws).reconcile()
    assert report["rebuilt"] > 0 and lex.format_ok
    assert "design.md" in paths(indexed, "gamma")


def test_an_index_with_another_schema_is_replaced(indexed, engine, db_path):
    ws = engine.workspace("v")
    path = engine.store.lexical_root / str(ws.id)
    engine.close()

    shutil.rmtree(path)
    path.mkdir()
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("something_else")
    tantivy.Index(sb.build(), str(path))  # a foreign schema where ours should be
    again = Engine(db_path)
    try:
        assert again.indexing.index_run("v")["chunks"] > 0
        hits = again.reading.search("v", "gamma", {"stages": ["lexical"]})["hits"]
        assert [h["path"] for h in hits] == ["design.md"]
    finally:
        again.close()


@pytest.mark.parametrize(
    "stages, where",
    [(s, "embedded") for s in STAGE_SETS] + [(s, "qdrant") for s in STAGE_SETS[1:]],
    ids=["lexical", "semantic", "hybrid", "semantic-qdrant", "hybrid-qdrant"],
)
def test_hits_from_files_changed_since_indexing_are_dropped_at_answer_time(
    engine, vault, stages, where
):
    """Never a stale span, whichever stages answer and wherever the vectors are: the check is
    on the answer, not a stage."""
    write(vault, "a.md", "# A\n\nmarmoset facts, first version.\n")
    write(vault, "b.md", "# B\n\nmarmoset facts elsewhere.\n")
    engine.workspaces.workspace_add("v", str(vault))
    if stages == ["lexical"]:
        engine.workspaces.workspace_configure("v", {"embedding": "none"})
    if where == "qdrant":
        pytest.importorskip("qdrant_client", reason="the qdrant extra is not installed")
        store = {"kind": "qdrant", "url": ":memory:"}
        engine.workspaces.workspace_configure(
            "v", {"embedding": {"provider": "bundled", "store": store}}
        )
    engine.indexing.index_run("v")
    seen: list[tuple[str, list[str]]] = []
    engine.on_stale = lambda ws, paths: seen.append((ws, paths))

    def answer():
        got = engine.reading.search(
            "v", "marmoset", {"stages": stages, "fusion": "rrf"}
        )  # every hit
        assert got["stages"]["performed"] == stages
        return got

    assert {h["path"] for h in answer()["hits"]} == {"a.md", "b.md"}
    os.utime(vault / "a.md", ns=(1, 1))  # the stat differs, the bytes do not: still fresh
    got = answer()
    assert {h["path"] for h in got["hits"]} == {"a.md", "b.md"} and got["stale"] == []
    (vault / "a.md").write_text("# A\n\nrewritten: the span moved.\n\nmarmoset facts.\n")
    got = answer()
    assert [h["path"] for h in got["hits"]] == ["b.md"] and got["stale"] == ["a.md"]
    (vault / "b.md").unlink()
    got = answer()
    assert got["hits"] == [] and got["stale"] == ["a.md", "b.md"]
    assert seen[-1] == ("v", ["a.md", "b.md"])
    engine.indexing.index_paths("v", ["a.md", "b.md"])  # what a server does with the stale paths
    engine.indexing.embed_run("v", incremental=True)  # the vectors of the new text, now
    got = answer()
    assert [h["path"] for h in got["hits"]] == ["a.md"] and got["stale"] == []
    hit = got["hits"][0]
    span = (vault / "a.md").read_text().split("\n")[hit["line_start"] - 1 : hit["line_end"]]
    assert "marmoset facts." in span


def test_hidden_patterns_let_in_the_same_paths_for_the_walker_saves_and_the_watcher(tmp_path):
    from autodoc.files.ignore_rules import RuleOptions, Rules
    from autodoc.files.walker import find
    from autodoc.serve.host.watch import _Handler

    include = (".notes", "*/.drafts")
    rules = Rules(str(tmp_path), RuleOptions(include_hidden=include))
    assert rules.judge_path("a/b.md") is None
    assert rules.judge_path(".git/x.md") is not None
    assert rules.judge_path(".notes/x.md") is None and rules.judge_path("a/.drafts/x.md") is None
    assert rules.judge_path(".notes/.swap.md") is not None  # each hidden part needs a pattern
    assert rules.judge_path("a/b/.drafts/x.md") is None  # fnmatch: * crosses slashes
    for rel in (".notes/x.md", "a/.drafts/y.md", ".git/z.md"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("# x\n")
    found, _ = find(tmp_path, [".notes/x.md", "a/.drafts/y.md", ".git/z.md"], 10**6, include)
    assert [f.rel for f in found] == [".notes/x.md", "a/.drafts/y.md"]
    handler = _Handler("ws", tmp_path, None, RuleOptions(include_hidden=include))  # type: ignore[arg-type]
    assert handler.rules.judge_path(".notes/x.md") is None
    assert handler.rules.judge_path(".git/z.md") is not None

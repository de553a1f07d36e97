"""The in-process vector index (vector_index.py): float32 rows memory-mapped beside the sign
index, so rescoring reads no vector from SQLite; the HNSW graph past HNSW_ABOVE, built by the
writer, saved, loaded and kept in step (rows added, vectors collected); and saves a killed
writer cannot leave half-named."""

from __future__ import annotations

import json

import numpy as np
import pytest

from autodoc.engine import Engine
from autodoc.store import read_epochs
from autodoc.vectors import usearch_index, vector_rows

from ..conftest import write
from ..fake_openai import FakeOpenAI
from .test_semantic_stage import brute_force, candidates, plan, same, small_engine, traced


def test_rows_are_gathered_from_the_mapped_part_and_the_part_added_since():
    rows = vector_rows.Rows.empty(4)
    first = np.eye(4, dtype=np.float32)
    rows.extend(np.array([2, 5, 9, 11], np.uint64), np.array([b"a" * 64] * 4), first)
    rows.base, rows.tail = rows.tail, np.zeros((0, 4), np.float32)  # as after a save
    rows.extend(np.array([12], np.uint64), np.array([b"b" * 64]), np.ones((1, 4), np.float32))
    ids, hashes, matrix = rows.gather(np.array([12, 3, 9, 40, 2], np.uint64))
    assert ids.tolist() == [12, 9, 2]  # 3 and 40 are not held: left out, not misread
    assert hashes.tolist() == [b"b" * 64, b"a" * 64, b"a" * 64]
    assert matrix.tolist() == [[1, 1, 1, 1], [0, 0, 1, 0], [1, 0, 0, 0]]
    assert rows.vectors(3, 5).tolist() == [[0, 0, 0, 1], [1, 1, 1, 1]]  # across both parts


def test_a_new_process_rescores_from_the_mapped_rows_not_sqlite(tmp_path):
    with FakeOpenAI(dim=32) as server:
        engine, _ = small_engine(tmp_path, server)
        db = engine.store.path
        engine.close()
        engine = Engine(db)
        try:
            plan(engine)  # the saved index loaded and refreshed
            with traced(engine) as statements:
                found, _ = candidates(engine, "lease writer")
            assert found and same(found, brute_force(engine, "lease writer", None))
            assert not [s for s in statements if "f32" in s]  # no float32 read from SQLite
        finally:
            engine.close()


@pytest.fixture
def graphed(tmp_path, monkeypatch):
    """A 12-note workspace past a lowered HNSW_ABOVE: the writer builds and saves a graph."""
    monkeypatch.setattr(usearch_index, "HNSW_ABOVE", 10)
    with FakeOpenAI(dim=32) as server:
        engine, root = small_engine(tmp_path, server)
        yield engine, root
        engine.close()


def graph_keys(engine) -> set[int]:
    _, p = plan(engine)
    graph = p.signs.graph
    assert graph is not None
    return {int(k) for k in graph.keys}


def searched(engine) -> set[int]:
    """What a search reaches: the graph's vectors still held, and the tail past the graph."""
    _, p = plan(engine)
    signs = p.signs
    held = {k for k in graph_keys(engine) if k in signs.index}
    return held | {int(k) for k in signs.rows.ids[signs._tail_start() :] if k in signs.index}


def vector_ids(engine) -> set[int]:
    with engine.store.snapshot() as conn:
        return {r[0] for r in conn.execute("SELECT id FROM embeddings")}


def test_the_writer_builds_the_graph_past_the_threshold_and_searches_use_it(graphed, monkeypatch):
    engine, _ = graphed
    _, p = plan(engine)
    assert graph_keys(engine) == vector_ids(engine) and len(vector_ids(engine)) > 10
    graph = p.signs.graph
    walks = []
    search = type(graph).search
    # Counted on the class, so the graph's walks only: the sign index is an Index too, and it
    # answers after a walk that came back short (a multithreaded build can leave a node of a
    # graph this small unreachable; test_a_walk_that_comes_back_short_gives_way_...).
    monkeypatch.setattr(
        type(graph), "search", lambda s, *a, **k: walks.append(s is graph) or search(s, *a, **k)
    )
    for text in ("lease writer", "vector index query"):
        found, _ = candidates(engine, text)
        assert same(found, brute_force(engine, text, None))  # a small graph is walked whole
    assert walks.count(True) == 2  # one walk a search


def test_a_saved_graph_is_loaded_and_kept_in_step(graphed, monkeypatch):
    engine, root = graphed
    db = engine.store.path
    ws = engine.workspace("v")
    _, p = plan(engine)
    saved = json.loads(p.signs.path.with_suffix(".json").read_text())
    assert saved["graph"] and p.signs.path.with_suffix(f".{saved['graph_seq']}.hnsw").is_file()
    engine.close()
    engine = Engine(db)
    try:
        assert graph_keys(engine) == vector_ids(engine)  # loaded, not rebuilt by a reader
        before = vector_ids(engine)
        write(root, "n00.md", "# Note 0\n\nrewritten zebra okapi\n")  # its old texts go unused
        write(root, "late.md", "# Late\n\nzebra okapi giraffe\n")
        engine.indexing.index_run("v")
        from autodoc.index.indexer import Indexer

        Indexer(engine.store, engine.lexical(ws), ws).purge_retired(grace=0)
        engine.indexing.embed_run("v")  # collects the unused vectors
        now = vector_ids(engine)
        assert before - now and now - before  # some collected, some added
        assert graph_keys(engine) == now == searched(engine)  # a new graph saved
        found, _ = candidates(engine, "zebra okapi giraffe")
        assert same(found, brute_force(engine, "zebra okapi giraffe", None))
        monkeypatch.setattr(usearch_index, "RESAVE_SHARE", 100.0)  # the graph file is kept...
        write(root, "later.md", "# Later\n\nadded after the graph was saved\n")
        engine.indexing.index_run("v")
        now = vector_ids(engine)
        saved = json.loads(p.signs.path.with_suffix(".json").read_text())
        assert saved["graph_rows"] < saved["rows"]  # ...so it misses the newest rows
        assert graph_keys(engine) < now == searched(engine)  # searched past it, exactly
        found, _ = candidates(engine, "added after the graph was saved")
        assert same(found, brute_force(engine, "added after the graph was saved", None))
    finally:
        engine.close()
    reopened = Engine(db)  # the same graph file, the same tail past it: the same answers
    try:
        assert graph_keys(reopened) < now == searched(reopened)
        found, _ = candidates(reopened, "added after the graph was saved")
        assert same(found, brute_force(reopened, "added after the graph was saved", None))
    finally:
        reopened.close()


def test_a_reader_searches_the_graph_the_writer_saved_last(graphed):
    """Every process searches the graph file the writer saved last (never a graph of its own
    that rows were added to), so two processes answer alike: a reader that started before the
    writer saved a new graph follows it at its next refresh."""
    engine, root = graphed
    reader = Engine(engine.store.path)
    try:
        _, mine = plan(reader)
        first = mine.signs._graph_seq
        assert first is not None and graph_keys(reader) == graph_keys(engine)
        for i in range(4):  # a third of the vectors new: past RESAVE_SHARE
            write(root, f"new{i}.md", f"# New {i}\n\nfresh words {i}\n")
        engine.indexing.index_run("v")
        engine.indexing.embed_run("v")
        _, theirs = plan(engine)
        saved = json.loads(theirs.signs.path.with_suffix(".json").read_text())
        assert saved["graph_seq"] > first and saved["graph_rows"] == saved["rows"]
        _, mine = plan(reader)  # refreshed to the new epoch
        assert mine.signs._graph_seq == saved["graph_seq"] == theirs.signs._graph_seq
        assert graph_keys(reader) == graph_keys(engine) == vector_ids(engine)
        for text in ("fresh words 2", "lease writer"):
            assert candidates(reader, text)[0] == candidates(engine, text)[0]
    finally:
        reader.close()


def test_a_graph_saved_with_other_build_settings_is_built_again_and_saved(graphed):
    """A graph an older version built (its .json names no build settings, or others) is not
    loaded: readers use the exact scan until the writer builds and saves one as this version
    builds it."""
    engine, _ = graphed
    db = engine.store.path
    _, p = plan(engine)
    meta = p.signs.path.with_suffix(".json")
    saved = json.loads(meta.read_text())
    assert saved["graph_build"] == usearch_index.GRAPH_BUILD
    del saved["graph_build"]  # as an older version wrote it
    meta.write_text(json.dumps(saved))
    engine.close()
    engine = Engine(db)
    try:
        _, p = plan(engine)
        assert p.signs.graph is None  # not loaded
        found, _ = candidates(engine, "lease writer")
        assert same(found, brute_force(engine, "lease writer", None))  # the exact scan
        engine.indexing.embed_run("v")  # the writer catches up: builds the graph, saves it
        assert graph_keys(engine) == vector_ids(engine)
        again = json.loads(meta.read_text())
        assert again["graph"] and again["graph_build"] == usearch_index.GRAPH_BUILD
        assert again["graph_seq"] > saved["graph_seq"]  # a new graph file, not the old one
    finally:
        engine.close()
    reopened = Engine(db)
    try:
        _, p = plan(reopened)
        assert p.signs.graph is not None  # this one is loaded
    finally:
        reopened.close()


def test_a_writer_killed_before_its_json_leaves_the_last_complete_set(tmp_path, monkeypatch):
    """The files of a save are written first and the .json naming them last: killed between,
    the old .json still names complete files (the new ones are left unnamed), and the next
    process loads them and adds what SQLite holds since, once each."""
    with FakeOpenAI(dim=32) as server:
        engine, root = small_engine(tmp_path, server)
        db = engine.store.path
        _, p = plan(engine)
        meta = p.signs.path.with_suffix(".json")
        old = meta.read_text()
        monkeypatch.setattr(usearch_index.VectorIndex, "_drop_old", lambda self, saved: None)
        for i in range(4):
            write(root, f"k{i}.md", f"# K{i}\n\nkilled text {i}\n")
        engine.indexing.index_run("v")  # rows appended, new index files, new .json...
        engine.close()
        meta.write_text(old)  # ...as if killed before the .json was replaced
        monkeypatch.undo()
        engine = Engine(db)
        try:
            ws, p = plan(engine)
            assert sorted(int(k) for k in p.signs.index.keys) == sorted(vector_ids(engine))
            assert len(p.signs.rows) == len(vector_ids(engine))  # no row twice
            p.signs.save()  # the row files are cut back to what the old .json named, then grown
            gen = json.loads(meta.read_text())["rows_gen"]
            f32 = p.signs.path.with_suffix(f".r{gen}.f32")
            assert f32.stat().st_size == len(vector_ids(engine)) * 32 * 4
            reloaded = usearch_index.VectorIndex(32, p.signs.path, p.signs.owner)
            with engine.store.snapshot() as conn:
                reloaded.refresh(conn, ws.id, p.model_fp, read_epochs(conn, ws.id)[1])
            assert reloaded.rows.ids.tolist() == sorted(vector_ids(engine))
            ids, _, matrix = reloaded.rows.gather(reloaded.rows.ids)
            with engine.store.snapshot() as conn:
                stored = dict(conn.execute("SELECT id, f32 FROM embeddings").fetchall())
            assert all(matrix[i].tobytes() == stored[int(k)] for i, k in enumerate(ids))
        finally:
            engine.close()


def test_a_writer_that_read_the_rows_before_another_grew_them_never_cuts_them(
    tmp_path, monkeypatch
):
    """A process that loaded the row files at n rows, and saves after another writer appended
    to them (it took the lease when that one died), writes new files: readers of the newer
    .json map the old ones past n, and cutting them back would fault those readers."""
    with FakeOpenAI(dim=32) as server:
        engine, root = small_engine(tmp_path, server)
        try:
            ws, p = plan(engine)
            stale = usearch_index.VectorIndex(32, p.signs.path, p.signs.owner)
            with engine.store.snapshot() as conn:
                stale.refresh(conn, ws.id, p.model_fp, read_epochs(conn, ws.id)[1])
            monkeypatch.setattr(usearch_index.VectorIndex, "_drop_old", lambda self, saved: None)
            for i in range(4):
                write(root, f"g{i}.md", f"# G{i}\n\ngrown text {i}\n")
            engine.indexing.index_run("v")  # the writer appends 4 rows to the same files
            meta = json.loads(p.signs.path.with_suffix(".json").read_text())
            grown = p.signs.path.with_suffix(f".r{meta['rows_gen']}.f32")
            before = grown.stat().st_size, grown.stat().st_mtime_ns
            assert before[0] == meta["rows"] * 32 * 4
            with engine.store.snapshot() as conn:
                stale.refresh(conn, ws.id, p.model_fp, read_epochs(conn, ws.id)[1])
            stale.save()
            assert (grown.stat().st_size, grown.stat().st_mtime_ns) == before  # untouched
            now = json.loads(p.signs.path.with_suffix(".json").read_text())
            assert now["rows_gen"] > meta["rows_gen"] and now["rows"] == meta["rows"]
            assert stale.rows.ids.tolist() == sorted(vector_ids(engine))
        finally:
            engine.close()


def test_a_walk_that_comes_back_short_gives_way_to_the_exact_scan(graphed, monkeypatch):
    """A small graph can leave vectors unreachable (the walk returns fewer than asked): the
    shortlist is then the exact sign scan's, so nothing the set holds is missed."""
    engine, _ = graphed
    _, p = plan(engine)
    signs = p.signs
    walk = signs.graph.search

    def short(q, k, *a, **kw):  # this graph only: the sign index is an Index too
        got = walk(q, k, *a, **kw)
        half = len(got.keys) // 2
        return type(got)(got.keys[:half], got.distances[:half])

    qvec = p.embedder.embed(["lease writer"])[0]
    everything = sorted(int(k) for k in signs.index.keys)
    monkeypatch.setattr(signs.graph, "search", short)
    got = signs.shortlist(qvec, usearch_index.sign_bits(qvec), 400)
    assert sorted(int(k) for k in got) == everything
    found, _ = candidates(engine, "lease writer")
    assert same(found, brute_force(engine, "lease writer", None))


def test_the_graphs_shortlist_widens_as_it_grows_to_its_cap():
    """300 up to HNSW_WIDEN_FROM, growing with the graph (its recall for the same effort falls
    with size), 800 at a million vectors and no more past it."""
    widths = [usearch_index.hnsw_shortlist(n) for n in (10_000, 250_000, 500_000, 1_000_000)]
    assert widths[0] == widths[1] == usearch_index.HNSW_SHORTLIST == 300
    assert 450 < widths[2] < 530 and widths[3] == usearch_index.HNSW_SHORTLIST_MAX == 800
    assert usearch_index.hnsw_shortlist(3_000_000) == 800


def test_the_stage_asks_a_large_graph_for_its_wider_shortlist(graphed, monkeypatch):
    engine, _ = graphed
    signs = plan(engine)[1].signs
    assert signs.graph is not None and signs.shortlist_size(50) == 300
    monkeypatch.setattr(usearch_index, "HNSW_WIDEN_FROM", 3)  # this graph is "large" now
    assert signs.shortlist_size(50) > 300
    assert signs.shortlist_size(50) == usearch_index.hnsw_shortlist(len(signs.graph))


def test_the_newest_vectors_collected_are_not_taken_for_a_rebuilt_store(graphed):
    """Collecting the newest vectors lowers the highest id held, not the highest id ever given:
    a reader keeps its graph through it (one that took this for a rebuilt store started over
    from SQLite, without the graph, and answered unlike the writer)."""
    from autodoc.index.indexer import Indexer

    engine, root = graphed
    ws = engine.workspace("v")
    write(root, "newest.md", "# Newest\n\nthe last words written here\n")
    engine.indexing.index_run("v")
    engine.indexing.embed_run("v")
    newest = max(vector_ids(engine))
    reader = Engine(engine.store.path)
    try:
        _, mine = plan(reader)
        assert mine.signs.graph is not None and mine.signs.max_id == newest
        (root / "newest.md").unlink()
        engine.indexing.index_run("v")
        Indexer(engine.store, engine.lexical(ws), ws).purge_retired(grace=0)
        engine.indexing.embed_run("v")  # collects the unused vectors, the newest among them
        assert max(vector_ids(engine)) < newest
        _, mine = plan(reader)  # refreshed: the same index, what was collected left out
        _, theirs = plan(engine)
        assert mine.signs.graph is not None and mine.signs.max_id == newest
        assert mine.signs._graph_seq == theirs.signs._graph_seq
        assert searched(reader) == vector_ids(engine) == searched(engine)
        for text in ("lease writer", "the last words written here"):
            assert candidates(reader, text)[0] == candidates(engine, text)[0]
    finally:
        reader.close()

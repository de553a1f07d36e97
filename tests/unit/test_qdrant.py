"""The Qdrant vector store (qdrant_store.py) in qdrant-client's local mode: the same answers as
the embedded store, a reader's snapshot never mixing generations while the collection moves
on, the writer's mirror (new chunks, retired ones marked, purged ones deleted, a removed
workspace's points gone), and the option's errors. The semantic stage's own tests run on it
too (tests/unit/test_semantic_stage.py, the `sem` fixture)."""

from __future__ import annotations

import contextlib
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("qdrant_client", reason="the qdrant extra is not installed")

from autodoc.engine import Engine
from autodoc.index.indexer import Indexer
from autodoc.store import read_epochs
from autodoc.vectors.nearest import semantic_candidates
from autodoc.vectors.qdrant_dense import QdrantVectors
from autodoc.wire.errors import RpcError

from ..conftest import EXAMPLE_VAULT, fake_openai_engine, write
from ..fake_openai import FakeOpenAI

LOCAL = {"kind": "qdrant", "url": ":memory:"}


def in_qdrant(engine: Engine, name: str = "v", where: dict | None = None) -> None:
    spec = engine.workspace(name).options["embedding"]
    engine.workspaces.workspace_configure(name, {"embedding": {**spec, "store": where or LOCAL}})


def points(engine: Engine, name: str = "v") -> dict[int, dict]:
    ws = engine.workspace(name)
    vectors = engine.semantic_plan(ws).signs
    assert isinstance(vectors, QdrantVectors)
    got, _ = vectors.client.scroll(vectors.name, limit=10_000, with_payload=True)
    return {int(p.id): p.payload for p in got if p.payload["ws"] == ws.id}


@contextlib.contextmanager
def qdrant_vault(tmp_path, files: dict[str, str]) -> Iterator[tuple[Engine, Path]]:
    """These files indexed into a workspace "v" whose vectors (from the local OpenAI-protocol
    server) are in a local-mode Qdrant collection; the engine is closed after."""
    root = tmp_path / "vault"
    for rel, text in files.items():
        write(root, rel, text)
    with FakeOpenAI(dim=32) as server:
        engine = fake_openai_engine(tmp_path / "store" / "autodoc.db", root, server.url)
        in_qdrant(engine)
        engine.indexing.index_run("v")
        try:
            yield engine, root
        finally:
            engine.close()


def live_chunks(engine: Engine, name: str = "v") -> set[int]:
    ws = engine.workspace(name)
    with engine.store.snapshot() as conn:
        return {
            r[0]
            for r in conn.execute(
                "SELECT id FROM chunks WHERE state = 1 AND workspace_id = ?", (ws.id,)
            )
        }


def test_the_same_answers_as_the_embedded_store(tmp_path):
    """The example vault under the bundled model, in both vector stores: every query's hits,
    scores and stages record agree (local mode is exact, as the sign scan is at this size)."""
    engines = []
    for where in ("embedded", "qdrant"):
        vault = tmp_path / where
        shutil.copytree(EXAMPLE_VAULT, vault)
        engine = Engine(tmp_path / f"{where}.db")
        engine.workspaces.workspace_add("v", str(vault))
        if where == "qdrant":  # the vectors' store alone: the lexical stage stays on Tantivy
            in_qdrant(engine, where={**LOCAL, "lexical": "tantivy"})
        engine.indexing.index_run("v")
        engines.append(engine)
    try:
        for text in ("why did we pick sqlite", "writer lease", "how are documents split"):
            for stages in (["semantic"], ["lexical", "semantic"]):
                a, b = (e.reading.search("v", text, {"stages": stages}) for e in engines)
                assert [(h["path"], h["line_start"]) for h in a["hits"]] == [
                    (h["path"], h["line_start"]) for h in b["hits"]
                ]
                assert [h["score"] for h in a["hits"]] == pytest.approx(
                    [h["score"] for h in b["hits"]], abs=1e-4
                )
                assert a["semantic"] == b["semantic"] == "ready"
                # the same stages ran, and each answer names the store that ran each
                assert {**a["stages"], "engines": {}} == {**b["stages"], "engines": {}}
                lexical = {"lexical": "tantivy"} if "lexical" in stages else {}
                assert a["stages"]["engines"] == {**lexical, "semantic": "usearch"}
                assert b["stages"]["engines"] == {**lexical, "semantic": "qdrant:memory"}
    finally:
        for e in engines:
            e.close()


def test_a_reader_snapshot_never_mixes_generations_while_the_collection_moves_on(tmp_path):
    files = {"a.md": "# A\n\n## Old\n\nzebra okapi first version\n",
             "b.md": "# B\n\nunrelated giraffe notes\n"}  # fmt: skip
    with qdrant_vault(tmp_path, files) as (engine, root):
        ws = engine.workspace("v")
        plan = engine.semantic_plan(ws)
        qvec = plan.embedder.embed(["zebra okapi version"])[0]
        old = live_chunks(engine)

        def found(conn) -> set[int]:
            hits, _ = semantic_candidates(
                conn,
                engine.store,
                plan.signs,
                ws,
                plan.model_fp,
                qvec,
                complete=False,
                chunks=10,
            )
            return {c for c, _, _ in hits}

        with engine.store.snapshot() as reader:  # a search under way...
            before = found(reader)
            write(root, "a.md", "# A\n\n## New\n\nzebra okapi second version\n")

            def publish() -> None:  # ...while a writer publishes and mirrors
                engine.indexing.index_paths("v", ["a.md"])
                engine.indexing.embed_run("v", incremental=True)

            writer = threading.Thread(target=publish)  # its own reader connection
            writer.start()
            writer.join()
            assert set(points(engine)) - old  # the new generation's points are there
            assert found(reader) == before and before <= old  # the reader sees its own
        new = live_chunks(engine)
        with engine.store.snapshot() as conn:
            after = found(conn)
        assert after <= new and after & (new - old)  # a new snapshot: only the new one


def test_the_mirror_marks_retired_chunks_and_deletes_purged_ones(tmp_path):
    files = {f"d{i}.md": f"# D{i}\n\nfirst version of document {i}\n" for i in range(3)}
    with qdrant_vault(tmp_path, files) as (engine, root):
        first = live_chunks(engine)
        assert set(points(engine)) == first
        assert {p["state"] for p in points(engine).values()} == {1}
        write(root, "d0.md", "# D0\n\nsecond version of document 0\n")
        engine.indexing.index_run("v")
        now = points(engine)
        retired = first - live_chunks(engine)
        assert retired and {now[c]["state"] for c in retired} == {2}  # marked, still there
        assert {now[c]["gen"] for c in live_chunks(engine) - first} == {2}
        ws = engine.workspace("v")
        Indexer(engine.store, engine.lexical(ws), ws).purge_retired(grace=0)
        engine.indexing.embed_run("v")
        assert set(points(engine)) == live_chunks(engine)  # purged: deleted
        model_fp = ws.active_model_fp
        engine.close()  # removed by a process that never opened the collection
        other = Engine(tmp_path / "store" / "autodoc.db")
        try:
            other.workspaces.workspace_remove("v")
            vectors = QdrantVectors(LOCAL, 32, other.store.store_id, ws.id, model_fp)
        finally:
            other.close()
        held, _ = vectors.client.scroll(vectors.name, limit=100)
        assert not [p for p in held if p.payload["ws"] == ws.id]  # the workspace's went


@pytest.mark.parametrize(
    "store, field",
    [
        ({"kind": "elastic"}, "embedding.store"),
        ({"kind": "qdrant"}, "embedding.store.url"),
        ({"kind": "qdrant", "url": "http://q:6333", "api_key": "k"}, "embedding.store.api_key"),
        ({"kind": "qdrant", "url": "http://q:6333", "sharding": 3}, "embedding.store.sharding"),
        ({"kind": "qdrant", "url": "http://q:6333", "shards": 0}, "embedding.store.shards"),
        ({"kind": "qdrant", "url": "http://q:6333", "replicas": "2"}, "embedding.store.replicas"),
    ],
)
def test_a_bad_store_option_is_refused_naming_its_field(tmp_path, store, field):
    engine = Engine(tmp_path / "autodoc.db")
    try:
        engine.workspaces.workspace_add("v", str(tmp_path))
        with pytest.raises(RpcError) as err:
            engine.workspaces.workspace_configure(
                "v", {"embedding": {"provider": "bundled", "store": store}}
            )
        assert err.value.code == -32602 and err.value.data["field"] == field
    finally:
        engine.close()


def test_a_chunk_whose_vector_comes_after_a_later_ones_is_mirrored_then(tmp_path):
    """The mirror moves a watermark over chunk ids; a chunk below it still waiting for its
    vector (a fill that stopped part-way, texts embedded out of id order) is kept aside and
    mirrored once its vector is stored."""
    files = {f"d{i}.md": f"# D{i}\n\nnotes on document {i}\n" for i in range(3)}
    with qdrant_vault(tmp_path, files) as (engine, _):
        ws = engine.workspace("v")
        first = min(live_chunks(engine))
        with engine.store.transaction() as conn:  # the first chunk's vector is not stored
            [(h,)] = conn.execute("SELECT text_hash FROM chunks WHERE id = ?", (first,)).fetchall()
            saved = conn.execute("SELECT * FROM embeddings WHERE text_hash = ?", (h,)).fetchall()
            conn.execute("DELETE FROM embeddings WHERE text_hash = ?", (h,))
        fresh = QdrantVectors(LOCAL, 32, "elsewhere", ws.id, ws.active_model_fp)
        with engine.store.snapshot() as conn:
            fresh.refresh(conn, ws.id, ws.active_model_fp, read_epochs(conn, ws.id)[1], build=True)
        assert fresh.pending == {first} and fresh.mirrored == max(live_chunks(engine))
        with engine.store.transaction() as conn:
            marks = ",".join("?" * len(saved[0]))
            conn.executemany(f"INSERT INTO embeddings VALUES ({marks})", saved)
        with engine.store.snapshot() as conn:
            assert fresh.mirror(conn) == 1 and fresh.pending == set()
        held, _ = fresh.client.scroll(fresh.name, limit=100)
        assert {int(p.id) for p in held} == live_chunks(engine)


def test_points_are_mirrored_as_a_fill_stores_them_not_only_after(tmp_path, monkeypatch):
    """A reader in another process sees a long fill's vectors as their batches are stored:
    the writer mirrors between batches (at most every MIRROR_EVERY_S), not only at the end."""
    monkeypatch.setattr("autodoc.vectors.embedding_cache.FILL_BATCH", 2)
    monkeypatch.setattr("autodoc.engine.indexing.MIRROR_EVERY_S", 0.0)
    files = {f"d{i}.md": f"# D{i}\n\nnotes on document {i}\n" for i in range(3)}
    with qdrant_vault(tmp_path, files) as (engine, root):
        for i in range(3, 9):
            write(root, f"d{i}.md", f"# D{i}\n\nnotes on document {i}\n")
        seen: list[tuple[int, int]] = []
        engine.indexing.index_run("v", embed_progress=lambda done, total: seen.append(
            (done, len(points(engine)))))  # fmt: skip
        assert len(seen) >= 3
        for done, held in seen:  # every stored batch is a point by the next one's report
            assert held >= 3 + done
        assert set(points(engine)) == live_chunks(engine)


def test_points_of_chunks_purged_before_a_mirror_marked_them_are_swept(tmp_path):
    """A chunk mirrored, then retired and purged before any mirror marked it (a writer
    killed between its purge and its mirror) leaves a point no chunk owns: the next mirror
    sees more points than chunks and deletes it."""
    files = {f"d{i}.md": f"# D{i}\n\nfirst version of document {i}\n" for i in range(3)}
    with qdrant_vault(tmp_path, files) as (engine, root):
        ws = engine.workspace("v")
        first = live_chunks(engine)
        write(root, "d0.md", "# D0\n\nsecond version of document 0\n")
        Indexer(engine.store, engine.lexical(ws), ws).run(paths=["d0.md"])  # no mirror yet
        Indexer(engine.store, engine.lexical(ws), ws).purge_retired(grace=0)
        orphans = first - live_chunks(engine)
        assert orphans and orphans <= set(points(engine))  # their points outlived them
        engine.indexing.embed_run("v")
        assert set(points(engine)) == live_chunks(engine)


def test_a_sweep_from_an_older_snapshot_keeps_the_points_written_since(tmp_path):
    """A mirror reading an older snapshot than another's writes (two fills in one process)
    sees more points than its chunks; it must not take the newer chunks' points for orphans."""
    files = {f"d{i}.md": f"# D{i}\n\nnotes on document {i}\n" for i in range(2)}
    with qdrant_vault(tmp_path, files) as (engine, root):
        ws = engine.workspace("v")
        vectors = engine.semantic_plan(ws).signs
        with engine.store.snapshot() as older:
            assert older.execute("SELECT count(*) FROM chunks").fetchone()[0]  # pinned here
            write(root, "d9.md", "# D9\n\nnotes written after that snapshot\n")
            writer = threading.Thread(target=lambda: engine.indexing.index_run("v"))
            writer.start()  # indexed, embedded and mirrored meanwhile (its own connection)
            writer.join()
            swept = vectors._sweep(older)
        assert swept == 0 and set(points(engine)) == live_chunks(engine)

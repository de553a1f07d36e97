"""The lexical index as BM25 sparse vectors in Qdrant (qdrant_lexical.py), in qdrant-client's
local mode: no Tantivy index on the machine, edits and purges reaching the collection, a
reader's snapshot never showing another generation's chunks, a lost collection rebuilt from
SQLite, a workspace moved to Qdrant and back, and the option's error. The lexical stage's own
tests run on it too (tests/unit/test_lexical.py, the `rpc` fixture)."""

from __future__ import annotations

import threading

import pytest

pytest.importorskip("qdrant_client", reason="the qdrant extra is not installed")

from autodoc.bm25.qdrant_sparse import QdrantLexical
from autodoc.engine import Engine
from autodoc.index.indexer import Indexer
from autodoc.parse.query_parser import parse_query
from autodoc.query.stages.lexical import lexical_candidates
from autodoc.wire.errors import RpcError

from ..conftest import write

LOCAL = {"kind": "qdrant", "url": ":memory:"}
LEXICAL_ONLY = {"embedding": {"provider": "none", "store": LOCAL}}


@pytest.fixture
def kb(tmp_path):
    root = tmp_path / "vault"
    write(root, "a.md", "# Alpha\n\n## Old\n\nzebra okapi first version\n")
    write(root, "b.md", "# Beta\n\nunrelated giraffe notes\n")
    engine = Engine(tmp_path / "store" / "autodoc.db")
    engine.workspaces.workspace_add("v", str(root))
    engine.workspaces.workspace_configure("v", LEXICAL_ONLY)
    engine.indexing.index_run("v")
    yield engine, root
    engine.close()


def paths(engine: Engine, text: str) -> list[str]:
    hits = engine.reading.search("v", text, {"stages": ["lexical"]})["hits"]
    return [h["path"] for h in hits]


def lexical_of(engine: Engine) -> QdrantLexical:
    lex = engine.lexical(engine.workspace("v"))
    assert isinstance(lex, QdrantLexical)
    return lex


def point_ids(engine: Engine) -> set[int]:
    lex = lexical_of(engine)
    got, _ = lex.client.scroll(lex.name, limit=10_000, with_payload=False)
    return {int(p.id) for p in got}


def live(engine: Engine) -> set[int]:
    ws = engine.workspace("v")
    with engine.store.snapshot() as conn:
        rows = conn.execute("SELECT id FROM chunks WHERE state = 1 AND workspace_id = ?", (ws.id,))
        return {r[0] for r in rows}


def test_no_tantivy_index_is_kept_and_the_status_says_qdrant(kb):
    engine, _ = kb
    ws = engine.workspace("v")
    local = engine.store.lexical_root / str(ws.id)
    assert not (local / "meta.json").exists()  # Tantivy's
    status = engine.indexing.index_status("v")
    assert status["lexical"] == {"engine": "qdrant", "entries": len(live(engine))}
    assert point_ids(engine) == live(engine)
    assert paths(engine, "okapi") == ["a.md"]


def test_an_edit_retires_the_old_words_and_a_purge_deletes_their_points(kb):
    engine, root = kb
    first = live(engine)
    write(root, "a.md", "# Alpha\n\n## New\n\nzebra okapi second edition\n")
    engine.indexing.index_run("v")
    assert paths(engine, "edition") == ["a.md"]
    assert paths(engine, "first") == []  # its chunk is retired: the snapshot hides it
    assert point_ids(engine) >= first | live(engine)  # still held until the purge
    ws = engine.workspace("v")
    Indexer(engine.store, engine.lexical(ws), ws).purge_retired(grace=0)
    assert point_ids(engine) == live(engine)


def test_a_reader_snapshot_never_sees_another_generation(kb):
    engine, root = kb
    ws = engine.workspace("v")
    query = parse_query("zebra okapi")

    def found(conn) -> set[int]:
        rows, _, _ = lexical_candidates(conn, engine.store, engine.lexical(ws), ws, query)
        return {c for c, _ in rows}

    old = live(engine)
    with engine.store.snapshot() as reader:  # a search under way...
        before = found(reader)
        write(root, "a.md", "# Alpha\n\n## New\n\nzebra okapi second version\n")
        writer = threading.Thread(target=lambda: engine.indexing.index_paths("v", ["a.md"]))
        writer.start()  # ...while a writer publishes the new generation's points
        writer.join()
        assert point_ids(engine) - old  # the new chunks' points are in the collection
        assert before and before <= old and found(reader) == before
    with engine.store.snapshot() as conn:
        after = found(conn)
    assert after and after <= live(engine) and not after & old


def test_a_lost_collection_is_rebuilt_from_sqlite(kb):
    engine, _ = kb
    lex = lexical_of(engine)
    lex.client.delete_collection(lex._current())  # a server wiped, dropped by hand
    lex._ensure()
    assert paths(engine, "okapi") == []
    engine.indexing.index_run("v")  # the reconcile sees fewer entries than live chunks
    assert point_ids(engine) == live(engine)
    assert paths(engine, "okapi") == ["a.md"]


@pytest.fixture
def on_tantivy(tmp_path):
    """One note indexed into workspace "v" on Tantivy (no embeddings): a workspace to move."""
    root = tmp_path / "vault"
    write(root, "a.md", "# Alpha\n\nzebra okapi notes\n")
    engine = Engine(tmp_path / "autodoc.db")
    engine.workspaces.workspace_add("v", str(root))
    engine.workspaces.workspace_configure("v", {"embedding": "none"})
    engine.indexing.index_run("v")
    yield engine, root
    engine.close()


def engines(engine: Engine) -> dict[str, str]:
    """The stores an answer names as its stages'."""
    return engine.reading.search("v", "okapi", {"stages": ["lexical"]})["stages"]["engines"]


def test_a_workspace_moves_to_qdrant_and_back_answering_at_once(on_tantivy):
    engine, root = on_tantivy
    assert engine.indexing.index_status("v")["lexical"]["engine"] == "tantivy"
    assert engines(engine) == {"lexical": "tantivy"}
    engine.workspaces.workspace_configure("v", LEXICAL_ONLY)
    assert engine.indexing.index_status("v")["lexical"] == {"engine": "qdrant", "entries": 1}
    assert engines(engine) == {"lexical": "qdrant-sparse:memory"}
    assert paths(engine, "okapi") == ["a.md"]
    write(root, "b.md", "# Beta\n\nokapi again\n")
    engine.indexing.index_run("v")
    engine.workspaces.workspace_configure("v", {"embedding": "none"})  # back: Tantivy refilled
    assert engine.indexing.index_status("v")["lexical"] == {"engine": "tantivy", "entries": 2}
    assert engines(engine) == {"lexical": "tantivy"}
    assert sorted(paths(engine, "okapi")) == ["a.md", "b.md"]


def test_a_removed_workspace_takes_its_collection(kb):
    engine, _ = kb
    lex = lexical_of(engine)
    held = lex._current()
    assert held is not None and lex.client.collection_exists(held)
    engine.workspaces.workspace_remove("v")
    assert not lex.client.collection_exists(held) and lex._aliased() is None


def test_the_lexical_option_is_checked(tmp_path):
    engine = Engine(tmp_path / "autodoc.db")
    try:
        engine.workspaces.workspace_add("v", str(tmp_path))
        bad = {"embedding": {"provider": "none", "store": {**LOCAL, "lexical": "lucene"}}}
        with pytest.raises(RpcError) as err:
            engine.workspaces.workspace_configure("v", bad)
        assert err.value.code == -32602 and err.value.data["field"] == "embedding.store.lexical"
        engine.workspaces.workspace_configure(
            "v", {"embedding": {"provider": "none", "store": {**LOCAL, "lexical": "tantivy"}}}
        )
        assert engine.indexing.index_status("v")["lexical"]["engine"] == "tantivy"
    finally:
        engine.close()


def test_a_query_of_prefixes_alone_finds_the_words_they_start(kb):
    engine, _ = kb
    assert paths(engine, "oka*") == ["a.md"] and paths(engine, "gira*") == ["b.md"]
    # No chunk holds both: the any-word pass, the scored word's chunk first.
    assert paths(engine, "giraffe zeb*") == ["b.md", "a.md"]


@pytest.mark.parametrize("page", [1, 2, 64])
def test_missing_words_are_found_over_pages_of_chunks(kb, monkeypatch, page):
    """A word is missing only when no chunk holds it, however many pages the chunks holding
    the other words take (one page of `page` chunks a request)."""
    engine, root = kb
    for i in range(3):
        write(root, f"c{i}.md", f"# C{i}\n\nzebra notes {i}\n")
    engine.indexing.index_run("v")
    monkeypatch.setattr("autodoc.bm25.qdrant_sparse.MISSING_PAGE", page)
    words = [("zebra", False), ("giraffe", False), ("nothere", False), ("oka", True),
             ("gnu", True), ("notes", False)]  # fmt: skip
    assert lexical_of(engine).missing(words) == ["nothere", "gnu"]


def collections_of(lex: QdrantLexical) -> list[str]:
    return sorted(c.name for c in lex.client.get_collections().collections
                  if c.name.startswith(lex.name + "-g"))  # fmt: skip


def test_a_rebuild_fills_a_new_collection_while_readers_keep_the_old_one(kb):
    engine, _ = kb
    ws = engine.workspace("v")
    lex = lexical_of(engine)
    before = collections_of(lex)
    lex.delete_all()  # a rebuild under way: nothing is added yet
    assert paths(engine, "okapi") == ["a.md"]  # the alias still names the full collection
    lex.close()  # abandoned (a writer's rollback): its collection goes
    assert collections_of(lex) == before
    Indexer(engine.store, lex, ws).rebuild_lexical()
    after = collections_of(lex)
    assert len(after) == 1 and after != before  # the new one took the alias, the old went
    assert point_ids(engine) == live(engine) and paths(engine, "okapi") == ["a.md"]


def test_a_move_drops_the_index_it_leaves_so_a_cut_short_move_back_is_refilled(
    on_tantivy, monkeypatch
):
    engine, root = on_tantivy
    tantivy = engine.store.lexical_root / str(engine.workspace("v").id)
    assert (tantivy / "meta.json").exists()
    engine.workspaces.workspace_configure("v", LEXICAL_ONLY)
    assert not tantivy.exists()  # left: gone, not kept stale beside the store
    lex = lexical_of(engine)
    write(root, "a.md", "# Alpha\n\nzebra quokka notes\n")
    engine.indexing.index_run("v")

    def cut_short(self):
        raise RuntimeError("killed during the move back")

    monkeypatch.setattr(Indexer, "rebuild_lexical", cut_short)
    with pytest.raises(RuntimeError):
        engine.workspaces.workspace_configure("v", {"embedding": "none"})
    monkeypatch.undo()
    assert collections_of(lex) == [] and lex._aliased() is None  # the collection went
    engine.indexing.index_run("v")  # the reconcile finds Tantivy short of the live chunks
    assert paths(engine, "quokka") == ["a.md"] and paths(engine, "okapi") == []


def test_a_store_field_that_does_not_move_the_index_does_not_rebuild_it(kb, monkeypatch):
    engine, _ = kb
    rebuilt = []
    original = Indexer.rebuild_lexical
    monkeypatch.setattr(Indexer, "rebuild_lexical", lambda s: rebuilt.append(1) or original(s))
    engine.workspaces.workspace_configure(
        "v", {"embedding": {"provider": "none", "store": {**LOCAL, "timeout": 30}}}
    )
    assert rebuilt == [] and paths(engine, "okapi") == ["a.md"]

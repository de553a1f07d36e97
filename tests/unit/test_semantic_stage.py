"""The semantic stage on its own: its candidates against a brute-force cosine ranking over the
same stored vectors, on both paths (the whole-workspace shortlist, a filter's own vectors),
filters that share a text with documents outside them, incomplete documents, the read-deeper
loop and its `truncated`, and the in-memory sign codes as the vector set grows."""

from __future__ import annotations

import contextlib
import json
from fractions import Fraction

import numpy as np
import pytest

from autodoc.engine import Engine
from autodoc.store import LIVE, DocumentSet, read_epochs
from autodoc.vectors import embedding_cache, usearch_index
from autodoc.vectors import nearest as nearest_module

from ..conftest import fake_openai_engine, write
from ..fake_openai import FakeOpenAI

WORDS = ["lease", "writer", "store", "vector", "index", "query", "chunk", "section", "heading",
         "filter", "token", "model"]  # fmt: skip
LICENCE = "## Licence\n\nCopyright the authors, released under the MIT licence terms.\n"


def note(i: int) -> str:
    a, b, c = WORDS[i % 12], WORDS[(i * 5 + 1) % 12], WORDS[(i * 7 + 3) % 12]
    return f"# Note {i}\n\n## {a.title()}\n\n{a} {b} {c} {a}\n\n## More\n\n{c} {b} number{i}\n"


@pytest.fixture(scope="module", params=["scan", "graph", "qdrant"])
def sem(tmp_path_factory, request):
    """The vector set searched by the exact sign scan, (past HNSW_ABOVE, here 1) by the HNSW
    graph, or in a Qdrant collection (qdrant-client's local mode): every test of the stage runs
    on all three."""
    if request.param == "qdrant":
        pytest.importorskip("qdrant_client", reason="the qdrant extra is not installed")
    base = tmp_path_factory.mktemp("sem")
    root = base / "vault"
    for i in range(40):
        write(root, f"topics/t{i:02}.md", note(i))
    # One title, so one breadcrumb: the licence sections have one text, so one vector.
    write(root, "shared/a.md", "# Common\n\nalpha page words\n\n" + LICENCE)
    write(root, "other/b.md", "# Common\n\nbeta page words\n\n" + LICENCE)
    with FakeOpenAI(dim=32) as server:
        engine = fake_openai_engine(base / "store" / "autodoc.db", root, server.url)
        if request.param == "qdrant":
            spec = engine.workspace("v").options["embedding"]
            where = {"kind": "qdrant", "url": ":memory:"}
            engine.workspaces.workspace_configure("v", {"embedding": {**spec, "store": where}})
        with pytest.MonkeyPatch.context() as mp:
            if request.param == "graph":
                mp.setattr(usearch_index, "HNSW_ABOVE", 1)
            engine.indexing.index_run("v")
        assert searched_by(plan(engine)[1].signs) == request.param
        engine.searched_by = request.param  # checked by candidates_for
        yield engine, root
        engine.close()


def searched_by(signs) -> str:
    if not isinstance(signs, usearch_index.VectorIndex):
        return "qdrant"
    return "scan" if signs.graph is None else "graph"


def plan(engine):
    ws = engine.workspace("v")
    p = engine.semantic_plan(ws)
    with engine.store.snapshot() as conn:
        p.signs.refresh(conn, ws.id, p.model_fp, read_epochs(conn, ws.id)[1])
    return ws, p


def doc_ids(engine, *prefixes: str) -> set[int]:
    with engine.store.snapshot() as conn:
        rows = conn.execute("SELECT id, path FROM documents WHERE deleted = 0").fetchall()
    return {i for i, path in rows if path.startswith(prefixes)}


def candidates(engine, text: str, allowed=None, need: int = 10, complete: bool = True):
    _, p = plan(engine)
    return candidates_for(engine, p.embedder.embed([text])[0], allowed, need, complete)


def brute_force(engine, text: str, docs: set[int] | None, need: int = 10):
    """Every visible chunk of `docs` ranked by exact cosine, ties by vector id then chunk id."""
    ws, p = plan(engine)
    qvec = p.embedder.embed([text])[0]
    with engine.store.snapshot() as conn:
        rows = conn.execute(
            "SELECT c.id, c.document_id, e.id, e.f32 FROM chunks c JOIN embeddings e"
            " ON e.workspace_id = c.workspace_id AND e.text_hash = c.text_hash"
            f" AND e.model_fp = ? WHERE c.workspace_id = ? AND c.state = {LIVE}",
            (p.model_fp, ws.id),
        ).fetchall()
    rows = [r for r in rows if docs is None or r[1] in docs]
    if not rows:
        return []
    matrix = np.frombuffer(b"".join(r[3] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    scores = matrix @ qvec  # as the stage computes them, so ties are ties in both
    ranked = sorted((-float(s), r[2], r[0], r[1]) for s, r in zip(scores, rows, strict=True))
    return [(cid, did, -neg) for neg, _, cid, did in ranked[:need]]


def same(found, expected, engine=None) -> bool:
    """The same chunks in the same order, each with its cosine to float32 precision. Qdrant
    orders equal cosines as it pleases, and cuts a run of them where it likes: for an engine
    searching there, each run of equal cosines is compared as a set, the last one by its
    cosines only."""
    if len(found) != len(expected) or any(
        abs(f[2] - e[2]) >= 1e-5 for f, e in zip(found, expected, strict=True)
    ):
        return False
    if getattr(engine, "searched_by", None) != "qdrant":
        return [f[:2] for f in found] == [e[:2] for e in expected]
    runs = [round(e[2], 5) for e in expected]
    last = runs[-1] if runs else None
    return all(
        {f[:2] for f, r in zip(found, runs, strict=True) if r == run}
        == {e[:2] for e, r in zip(expected, runs, strict=True) if r == run}
        for run in set(runs) - {last}
    )


QUERIES = ["lease writer", "vector index query", "MIT licence copyright", "number7 heading"]


@pytest.mark.parametrize("text", QUERIES)
def test_the_whole_workspace_ranking_is_the_exact_cosine_ranking(sem, text):
    engine, _ = sem
    found, truncated = candidates(engine, text)
    assert same(found, brute_force(engine, text, None), engine) and truncated is False


@pytest.mark.parametrize("text", QUERIES)
@pytest.mark.parametrize("prefixes", [("topics/t0",), ("shared/",), ("topics/", "shared/")])
def test_a_filtered_ranking_is_the_exact_cosine_ranking_of_the_kept_documents(sem, text, prefixes):
    """("shared/",) keeps 4 of the 82 chunks: its own vectors are scanned; ("topics/t0",)
    keeps 20 and the third most: the whole-workspace shortlist, filtered."""
    engine, _ = sem
    keep = doc_ids(engine, *prefixes)
    found, _ = candidates(engine, text, DocumentSet(len(keep), keep=keep))
    assert same(found, brute_force(engine, text, keep), engine)
    drop = doc_ids(engine, "") - keep
    found, _ = candidates(engine, text, DocumentSet(len(keep), drop=drop))
    assert same(found, brute_force(engine, text, keep), engine)


def test_a_text_shared_with_a_document_outside_the_filter_stays_outside(sem):
    """Both licence sections have one text, so one vector: the filter decides by document."""
    engine, _ = sem
    with engine.store.snapshot() as conn:
        shared = conn.execute(
            "SELECT count(*), count(DISTINCT text_hash) FROM chunks"
            " WHERE breadcrumb = 'Common › Licence' AND state = 1"
        ).fetchone()
    assert tuple(shared) == (2, 1)
    for inside, outside in (("shared/", "other/"), ("other/", "shared/")):
        keep = doc_ids(engine, inside)
        found, _ = candidates(engine, "MIT licence copyright", DocumentSet(len(keep), keep=keep))
        assert found and {d for _, d, _ in found} == keep
        assert not {d for _, d, _ in found} & doc_ids(engine, outside)
    found, _ = candidates(engine, "MIT licence copyright", need=2)
    assert {d for _, d, _ in found} == doc_ids(engine, "shared/", "other/")


def test_an_empty_filter_scans_nothing(sem):
    engine, _ = sem
    assert candidates(engine, "lease", DocumentSet(0, keep=set())) == ([], False)


def test_a_document_with_a_chunk_lacking_its_vector_answers_only_when_complete(sem):
    engine, _ = sem
    target = min(doc_ids(engine, "topics/t03"))
    with engine.store.transaction() as conn:
        [(h,)] = conn.execute(
            "SELECT text_hash FROM chunks WHERE document_id = ? AND state = 1 ORDER BY ordinal"
            " LIMIT 1",
            (target,),
        ).fetchall()
        saved = conn.execute(
            "SELECT id, workspace_id, model_fp, text_hash, f32, bits FROM embeddings"
            " WHERE text_hash = ?",
            (h,),
        ).fetchall()
        conn.execute("DELETE FROM embeddings WHERE text_hash = ?", (h,))
    try:
        keep = doc_ids(engine, "topics/")
        allowed = DocumentSet(len(keep), keep=keep)
        partial, _ = candidates(engine, note(3), allowed, need=80, complete=False)
        assert partial and target not in {d for _, d, _ in partial}
        assert {d for _, d, _ in partial} == keep - {target}
    finally:
        with engine.store.transaction() as conn:
            conn.executemany(  # under its own id, as the sign index still holds it
                "INSERT INTO embeddings(id, workspace_id, model_fp, text_hash, f32, bits)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                saved,
            )
            conn.execute("UPDATE workspaces SET vector_epoch = vector_epoch + 1")


def test_an_exact_match_leads_even_when_the_shortlist_is_short(sem, monkeypatch):
    """A shortlist of 4 sign codes: the chunk whose text is the query is at Hamming distance 0
    and cosine 1, on both paths."""
    engine, _ = sem
    monkeypatch.setattr(usearch_index, "SHORTLIST", 4)
    text = "Note 12 › More\n\n## More\n\n" + note(12).split("## More\n\n")[1]
    target = doc_ids(engine, "topics/t12")
    for keep in (doc_ids(engine, "topics/t1"), doc_ids(engine, "topics/", "shared/")):
        found, _ = candidates(engine, text, DocumentSet(len(keep), keep=keep), need=3)
        assert found[0][1] in target and found[0][2] == pytest.approx(1.0, abs=1e-5)


def test_reading_deeper_fills_a_starved_answer_and_says_when_it_could_not(sem, monkeypatch):
    engine, _ = sem
    monkeypatch.setattr(usearch_index, "SHORTLIST", 4)
    monkeypatch.setattr(nearest_module, "MAX_READ", 8)
    # Most documents excluded: the shortlist cannot fill the answer, the kept ones are scanned.
    keep = doc_ids(engine, "shared/", "other/")
    drop = doc_ids(engine, "") - keep
    found, truncated = candidates(engine, "lease writer", DocumentSet(len(keep), drop=drop), 4)
    assert same(found, brute_force(engine, "lease writer", keep, 4), engine)
    assert truncated is False
    found, truncated = candidates(engine, "lease writer", None, need=3)
    assert truncated is False and len(found) == 3  # a 6-code shortlist: approximate, not short


def test_the_sign_codes_grow_with_the_vectors_after_a_filtered_scan(tmp_path):
    root = tmp_path / "vault"
    for i in range(12):
        write(root, f"n{i:02}.md", note(i))
    with FakeOpenAI(dim=32) as server:
        engine = fake_openai_engine(tmp_path / "store" / "autodoc.db", root, server.url)
        try:
            engine.indexing.index_run("v")
            old = doc_ids(engine, "n00")
            found, _ = candidates(engine, note(0), DocumentSet(len(old), keep=old))
            assert {d for _, d, _ in found} == old  # the codes are now held in memory
            write(root, "late.md", "# Late\n\nzebra okapi giraffe\n")
            engine.indexing.index_run("v")
            both = old | doc_ids(engine, "late")
            for text in ("zebra okapi giraffe", note(0)):
                found, _ = candidates(engine, text, DocumentSet(len(both), keep=both))
                assert same(found, brute_force(engine, text, both))
        finally:
            engine.close()


def _codes(pairs: list[tuple[int, str]]) -> usearch_index._Codes:
    return usearch_index._Codes.of([(i, h, bytes([i % 256, 7])) for i, h in pairs])


def test_sign_codes_are_looked_up_by_text_hash():
    h = {n: f"{n:016x}" + "0" * 48 for n in (5, 9, 2**63 + 3, 2**64 - 1)}
    codes = _codes([(11, h[9]), (12, h[5]), (13, h[2**64 - 1]), (14, h[2**63 + 3])])
    keys, bits = codes.lookup([h[5], h[2**64 - 1], h[5]])  # a text asked twice counts once
    assert sorted(keys.tolist()) == [12, 13] and keys.dtype == np.uint64
    assert sorted(bits[:, 0].tolist()) == [12, 13]
    for absent in ("0" * 64, f"{7:016x}" + "0" * 48, "f" * 15 + "e" + "0" * 48):
        assert len(codes.lookup([absent])[0]) == 0  # below, between, next to the top key
    assert len(_codes([(11, h[9]), (12, h[5])]).lookup(["f" * 64])[0]) == 0  # above every key
    empty, no_bits = codes.lookup([])
    assert (len(empty), empty.dtype, no_bits.shape[0]) == (0, np.uint64, 0)
    nothing, _ = _codes([]).lookup([h[5]])
    assert len(nothing) == 0 and nothing.dtype == np.uint64
    grown = _codes([]).extend(codes).extend(_codes([(15, "ab" * 32)]))
    keys, _ = grown.lookup([h[9], "ab" * 32, h[2**63 + 3]])
    assert sorted(keys.tolist()) == [11, 14, 15]


def test_a_filtered_search_before_any_vector_exists_answers(tmp_path):
    """Regression: a narrow filter while a workspace had no vectors yet (a first fill under
    way, a new process) failed the whole search with -32603: the in-memory sign codes could
    not be built from no rows."""
    root = tmp_path / "vault"
    for i in range(30):
        write(root, f"t/n{i}.md", f"# N{i}\n\nword{i} lease\n")
    write(root, "x/only.md", "# Only\n\nlease here\n")
    db = tmp_path / "store" / "autodoc.db"
    with FakeOpenAI(dim=32) as server:
        engine = fake_openai_engine(db, root, server.url)
        engine.indexing.index_run("v")
        with engine.store.transaction() as conn:  # as before the first fill
            conn.execute("DELETE FROM embeddings")
            conn.execute("UPDATE workspaces SET vector_epoch = vector_epoch + 1")
        engine.close()
        engine = Engine(db)  # a new process: no sign codes in memory
        try:
            answer = engine.reading.search("v", "lease", {"paths": ["x/"]})
            assert [h["path"] for h in answer["hits"]] == ["x/only.md"]
            assert answer["stages"]["performed"] == ["lexical", "semantic"]
            assert answer["semantic"] == "partial"
        finally:
            engine.close()


def test_a_sign_bit_is_set_only_for_a_positive_component():
    vectors = np.array(
        [[0.5, -0.1, 0.0, 2.0, 1.0, -3.0, 0.25, 1e-9], [-0.5] * 4 + [0.5] * 4], dtype=np.float32
    )
    assert usearch_index.sign_bits(vectors).tolist() == [[0b10011011], [0b00001111]]


# -- the narrow filter's own scan, the saved sign index, filling and collecting ---------------


def vectors(engine, docs: set[int]):
    """(chunk id, document id, vector id, text hash, f32, bits) of the docs' visible chunks."""
    ws, p = plan(engine)
    with engine.store.snapshot() as conn:
        rows = conn.execute(
            "SELECT c.id, c.document_id, e.id, c.text_hash, e.f32, e.bits FROM chunks c"
            " JOIN embeddings e ON e.workspace_id = c.workspace_id AND e.text_hash = c.text_hash"
            f" AND e.model_fp = ? WHERE c.workspace_id = ? AND c.state = {LIVE}",
            (p.model_fp, ws.id),
        ).fetchall()
    return [r for r in rows if r[1] in docs]


@pytest.mark.parametrize("text", QUERIES)
def test_a_narrow_filter_rescores_only_its_sign_codes_nearest_the_query(sem, monkeypatch, text):
    """The filter's own scan keeps the SHORTLIST vectors nearest the query by Hamming distance
    and ranks their chunks by exact cosine: recomputed here with numpy from the stored codes,
    with the shortlist set where the k-th and (k+1)-th distances differ, so the set is defined."""
    engine, _ = sem
    keep = doc_ids(engine, "topics/t0")  # 10 documents, 20 chunks, 20 texts
    monkeypatch.setattr(nearest_module, "SUBSET_SHARE", 0.5)  # served by their own vectors
    rows = vectors(engine, keep)
    _, p = plan(engine)
    qbits = usearch_index.sign_bits(p.embedder.embed([text])[0])
    distance = {r[3]: int(np.unpackbits(np.frombuffer(r[5], np.uint8) ^ qbits).sum()) for r in rows}
    ordered = sorted(distance.values())
    k = next(k for k in range(3, len(ordered)) if ordered[k - 1] < ordered[k])
    monkeypatch.setattr(usearch_index, "SHORTLIST", k)
    nearest = {h for h, d in distance.items() if d <= ordered[k - 1]}
    assert len(nearest) == k < len(distance)
    expected = brute_force(engine, text, keep, need=100)
    if engine.searched_by != "qdrant":  # Qdrant filters on the server: exact over them all
        expected = [e for e in expected if e[0] in {r[0] for r in rows if r[3] in nearest}]
    found, truncated = candidates(
        engine, text, DocumentSet(len(keep), keep=keep), need=100, complete=False
    )
    assert same(found, expected, engine) and truncated is False


@pytest.mark.parametrize("at_edge", [True, False])
def test_a_filter_holding_exactly_the_subset_share_scans_its_own_vectors(sem, monkeypatch, at_edge):
    engine, _ = sem
    keep = doc_ids(engine, "topics/t0")
    (total,) = {len(vectors(engine, doc_ids(engine, "")))}
    share = Fraction(len(vectors(engine, keep)) - (0 if at_edge else 1), total)
    monkeypatch.setattr(nearest_module, "SUBSET_SHARE", share)  # exact: chunks * share is a count
    scans = []
    real = nearest_module._subset
    monkeypatch.setattr(nearest_module, "_subset", lambda *a: scans.append(a[7]) or real(*a))
    found, _ = candidates(engine, "lease writer", DocumentSet(len(keep), keep=keep))
    assert scans == ([keep] if at_edge else [])
    assert same(found, brute_force(engine, "lease writer", keep), engine)


def small_engine(tmp_path, server, n: int = 12):
    root = tmp_path / "vault"
    for i in range(n):
        write(root, f"n{i:02}.md", note(i))
    engine = fake_openai_engine(tmp_path / "store" / "autodoc.db", root, server.url)
    engine.indexing.index_run("v")
    return engine, root


def add_vectors(engine, vecs: np.ndarray) -> None:
    """Vectors no chunk uses (as after an edit, before they are collected)."""
    ws, p = plan(engine)
    with engine.store.transaction() as conn:
        conn.executemany(
            "INSERT INTO embeddings(workspace_id, model_fp, text_hash, f32, bits)"
            " VALUES (?, ?, ?, ?, ?)",
            [
                (
                    ws.id,
                    p.model_fp,
                    f"{i:064x}",
                    v.tobytes(),
                    usearch_index.sign_bits(v).tobytes(),
                )
                for i, v in enumerate(vecs.astype(np.float32))
            ],
        )
        conn.execute("UPDATE workspaces SET vector_epoch = vector_epoch + 1")


def test_an_answer_the_deepest_read_cannot_fill_says_it_is_truncated(tmp_path, monkeypatch):
    """Ten unused vectors equal to each query fill every shortlist: with no filter the stage
    answers what it found and `truncated`; with one, the kept documents' own vectors answer
    (and a vector shared with a dropped document does not let it in)."""
    monkeypatch.setattr(usearch_index, "SHORTLIST", 4)
    monkeypatch.setattr(nearest_module, "MAX_READ", 8)
    with FakeOpenAI(dim=32) as server:
        root = tmp_path / "vault"
        write(root, "x/a.md", "# Common\n\n" + LICENCE)  # its licence shares a vector
        write(root, "y/b.md", "# Common\n\n" + LICENCE)  # with this dropped document's
        engine, _ = small_engine(tmp_path, server)
        try:
            _, p = plan(engine)
            qvecs = p.embedder.embed(["lease writer", "MIT licence copyright"])
            add_vectors(engine, np.repeat(qvecs, 10, axis=0))
            assert candidates(engine, "lease writer", need=3) == ([], True)
            keep = doc_ids(engine, "n00", "x/")  # 3 chunks: fewer than SHORTLIST, so exact
            drop = doc_ids(engine, "") - keep
            for text in ("lease writer", "MIT licence copyright"):
                found, truncated = candidates(engine, text, DocumentSet(len(keep), drop=drop))
                assert same(found, brute_force(engine, text, keep)) and truncated is False
        finally:
            engine.close()


def test_a_narrow_filter_whose_documents_have_no_vectors_is_not_truncated(sem):
    engine, _ = sem
    keep = doc_ids(engine, "shared/")
    with engine.store.transaction() as conn:
        marks = ",".join(map(str, keep))
        saved = conn.execute(
            "SELECT * FROM embeddings WHERE text_hash IN (SELECT text_hash FROM chunks"
            f" WHERE document_id IN ({marks}))"
        ).fetchall()
        conn.executemany("DELETE FROM embeddings WHERE id = ?", [(r[0],) for r in saved])
        conn.execute("UPDATE workspaces SET vector_epoch = vector_epoch + 1")
    try:
        # a Qdrant collection is not told (only the writer mirrors): the stage's coverage is
        complete = engine.searched_by != "qdrant"
        allowed = DocumentSet(len(keep), keep=keep)
        assert candidates(engine, "alpha", allowed, complete=complete) == ([], False)
    finally:
        with engine.store.transaction() as conn:
            marks = ",".join("?" * len(saved[0]))
            conn.executemany(f"INSERT INTO embeddings VALUES ({marks})", saved)
            conn.execute("UPDATE workspaces SET vector_epoch = vector_epoch + 1")


def test_chunks_sharing_a_text_come_in_chunk_order(tmp_path):
    """Two documents share a section's text: one vector, two chunks at one cosine, in chunk id
    order. The first document gains the section last, so chunk order is not document order."""
    with FakeOpenAI(dim=32) as server:
        root = tmp_path / "vault"
        write(root, "a.md", "# Common\n\nalpha page words\n")
        engine = fake_openai_engine(tmp_path / "store" / "autodoc.db", root, server.url)
        try:
            engine.indexing.index_run("v")
            write(root, "b.md", "# Common\n\nbeta page words\n\n" + LICENCE)
            engine.indexing.index_run("v")
            write(root, "a.md", "# Common\n\nalpha page words\n\n" + LICENCE)
            engine.indexing.index_run("v")
            (a,), (b,) = doc_ids(engine, "a.md"), doc_ids(engine, "b.md")
            found, _ = candidates(engine, LICENCE, need=2)
            with engine.store.snapshot() as conn:
                hashes = conn.execute("SELECT DISTINCT text_hash FROM chunks WHERE id IN (?, ?)",
                                      (found[0][0], found[1][0])).fetchall()  # fmt: skip
            assert len(hashes) == 1  # one vector
            assert a < b and [d for _, d, _ in found] == [b, a] and found[0][0] < found[1][0]
            assert found[0][2] == found[1][2]
        finally:
            engine.close()


def signs_of(engine):
    """The engine's sign index for the workspace, as a new process has it before a search."""
    ws = engine.workspace("v")
    p = engine.semantic_plan(ws)
    return ws, p, p.signs


@contextlib.contextmanager
def traced(engine):
    """The statements this thread's reads run meanwhile: its reader connection, reused by
    every snapshot it takes."""
    with engine.store.snapshot() as conn:
        pass
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        yield statements
    finally:
        conn.set_trace_callback(None)


def test_a_new_process_reuses_the_saved_sign_index(tmp_path):
    """The sign index saved after a fill is loaded by the next process and kept by its first
    refresh (not rebuilt from SQLite); a refresh at an unchanged epoch reads nothing; a vector
    SQLite lost (a crash between the two files) makes it rebuild; one added is appended."""
    with FakeOpenAI(dim=32) as server:
        engine, root = small_engine(tmp_path, server)
        db = engine.store.path
        engine.close()
        engine = Engine(db)
        try:
            ws, p, signs = signs_of(engine)
            loaded = signs.index
            with traced(engine) as statements, engine.store.snapshot() as conn:
                ids = [r[0] for r in conn.execute("SELECT id FROM embeddings ORDER BY id")]
                assert len(loaded) == len(ids) and signs.max_id == ids[-1]
                epoch = read_epochs(conn, ws.id)[1]
                signs.refresh(conn, ws.id, p.model_fp, epoch)
                assert signs.index is loaded and len(signs.index) == len(ids)
                statements.clear()
                signs.refresh(conn, ws.id, p.model_fp, epoch)
                assert statements == []
            keep = doc_ids(engine, "n03")
            found, _ = candidates(engine, note(3), DocumentSet(len(keep), keep=keep))
            assert {d for _, d, _ in found} == keep  # the codes, read once, now in memory
            with engine.store.transaction() as conn:  # lost without a collection
                conn.execute("DELETE FROM embeddings WHERE id = ?", (ids[0],))
                conn.execute("UPDATE workspaces SET vector_epoch = vector_epoch + 1")
            plan(engine)
            assert len(signs.index) == len(ids) - 1 and not signs.index.contains(ids[0])
            rebuilt = signs.index
            found, _ = candidates(engine, note(3), DocumentSet(len(keep), keep=keep))
            assert {d for _, d, _ in found} == keep  # the codes read again, once
            write(root, "late.md", "# Late\n\nzebra okapi giraffe\n")
            engine.indexing.index_run("v")
            plan(engine)
            assert signs.index is rebuilt and len(rebuilt) == len(ids) + 1
            with traced(engine) as statements, engine.store.snapshot() as conn:
                signs.codes_for(conn, ws.id, p.model_fp, [])
            assert statements == ["BEGIN", "COMMIT"]  # the in-memory codes grew with the index
            both = keep | doc_ids(engine, "late")
            found, _ = candidates(engine, "zebra okapi giraffe", DocumentSet(len(both), keep=both))
            assert same(found, brute_force(engine, "zebra okapi giraffe", both))
        finally:
            engine.close()


def test_a_saved_sign_index_of_another_store_or_dimension_is_ignored(tmp_path):
    with FakeOpenAI(dim=32) as server:
        engine, _ = small_engine(tmp_path, server)
        try:
            _, _, signs = signs_of(engine)
            path, owner, n = signs.path, signs.owner, len(signs.index)
            assert n and path.with_suffix(".json").is_file()
            assert len(usearch_index.VectorIndex(32, path, owner).index) == n
            for dim, who in ((32, owner + "x"), (64, owner), (16, owner)):
                other = usearch_index.VectorIndex(dim, path, who)
                assert (len(other.index), other.index.ndim, other.max_id) == (0, dim, 0)
            # A .json naming files that are gone (or cut short): nothing is trusted.
            meta = path.with_suffix(".json")
            saved = json.loads(meta.read_text())
            for broken in ({"seq": saved["seq"] + 7}, {"rows": saved["rows"] + 1}):
                meta.write_text(json.dumps({**saved, **broken}))
                gone = usearch_index.VectorIndex(32, path, owner)
                assert (len(gone.index), gone.max_id, gone.collected) == (0, 0, None)
            meta.write_text(json.dumps(saved))
            assert usearch_index.VectorIndex(32, path, owner).collected == saved["collected"]
        finally:
            engine.close()


def test_filling_embeds_the_breadcrumb_and_text_and_reports_progress(tmp_path):
    """Two documents lose their vectors: a fill embeds exactly their texts, each as
    breadcrumb, blank line, text, and reports (done, total) over the missing texts; given the
    chunk ids that can be missing, it does not count the whole workspace."""
    with FakeOpenAI(dim=32) as server:
        engine, _ = small_engine(tmp_path, server)
        try:
            ws, p, _ = signs_of(engine)
            lost = doc_ids(engine, "n04", "n07")
            marks = ",".join(map(str, sorted(lost)))
            with engine.store.transaction() as conn:
                chunks = conn.execute(
                    f"SELECT id, breadcrumb, text FROM chunks WHERE document_id IN ({marks})"
                    " AND state = 1 ORDER BY document_id, ordinal"
                ).fetchall()
                conn.execute(
                    "DELETE FROM embeddings WHERE text_hash IN (SELECT text_hash FROM chunks"
                    f" WHERE document_id IN ({marks}))"
                )
            assert embedding_cache.fill(engine.store, ws, p.embedder, among=[]) == 0
            server.requests.clear()
            seen = []
            done = embedding_cache.fill(
                engine.store, ws, p.embedder, lambda d, t: seen.append((d, t))
            )
            assert done == len(chunks) and seen == [(len(chunks), len(chunks))]
            [request] = server.requests
            assert request["body"]["input"] == [f"{bc}\n\n{text}" for _, bc, text in chunks]
            with engine.store.transaction() as conn:
                conn.execute(
                    "DELETE FROM embeddings WHERE text_hash IN (SELECT text_hash FROM chunks"
                    f" WHERE document_id IN ({marks}))"
                )
            seen.clear()
            with traced(engine) as statements:
                done = embedding_cache.fill(
                    engine.store, ws, p.embedder, lambda d, t: seen.append((d, t)),
                    among=[c[0] for c in chunks],
                )  # fmt: skip
            assert done == len(chunks) and seen == [(len(chunks), len(chunks))]
            assert statements and not [s for s in statements if "count(DISTINCT" in s]
        finally:
            engine.close()


def test_collecting_keeps_the_named_models_and_drops_every_other(tmp_path):
    with FakeOpenAI(dim=32) as server:
        engine, _ = small_engine(tmp_path, server)
        try:
            ws, p, _ = signs_of(engine)
            with engine.store.snapshot() as conn:
                (n,) = conn.execute("SELECT count(*) FROM embeddings").fetchone()
            assert (
                n and embedding_cache.collect_unused(engine.store, ws, {p.model_fp, "other"}) == 0
            )
            assert embedding_cache.collect_unused(engine.store, ws, set()) == n
        finally:
            engine.close()


def test_a_ready_workspace_reports_no_reason(sem):
    engine, _ = sem
    state = engine.reading.semantic_state("v")
    assert (state["semantic"], state["semantic_reason"]) == ("ready", "")


def candidates_for(engine, qvec: np.ndarray, allowed, need: int, complete: bool = True):
    ws, p = plan(engine)
    if getattr(engine, "searched_by", None) is not None:
        assert searched_by(p.signs) == engine.searched_by  # still, after what a test did
    with engine.store.snapshot() as conn:
        (total,) = conn.execute(
            f"SELECT count(*) FROM chunks WHERE workspace_id = ? AND state = {LIVE}", (ws.id,)
        ).fetchone()
        return nearest_module.semantic_candidates(
            conn, engine.store, p.signs, ws, p.model_fp, qvec, allowed, need,
            complete=complete, chunks=total,
        )  # fmt: skip


@pytest.mark.parametrize("seed", range(2))
def test_the_filters_own_scan_keeps_exactly_the_nearest_sign_codes(tmp_path, monkeypatch, seed):
    """24 one-chunk documents whose vectors are set so the i-th differs from the query's signs
    in i bits, and whose cosine order is not their Hamming order: a shortlist of 8 keeps
    exactly the eight nearest, whatever order the scan meets them in (two shufflings)."""
    monkeypatch.setattr(nearest_module, "SUBSET_SHARE", 1.0)
    monkeypatch.setattr(usearch_index, "SHORTLIST", 8)
    with FakeOpenAI(dim=64) as server:
        root = tmp_path / "vault"
        for i in range(24):
            write(root, f"d{i:02}.md", f"# D{i}\n\nword{i}\n")
        engine = fake_openai_engine(tmp_path / "store" / "autodoc.db", root, server.url)
        try:
            engine.indexing.index_run("v")
            ws, p = plan(engine)
            fp = p.model_fp
            with engine.store.snapshot() as conn:
                chunks = conn.execute(
                    "SELECT c.id, c.document_id, c.text_hash FROM chunks c WHERE c.state = 1"
                    " ORDER BY c.id"
                ).fetchall()
            assert len(chunks) == 24
            order = np.random.default_rng(seed).permutation(24)
            wanted = {}
            with engine.store.transaction() as conn:
                for (cid, did, h), i in zip(chunks, order, strict=True):
                    v = np.full(64, 1.0, dtype=np.float32)
                    v[:i] = -0.01  # i bits off the query's; the larger i, the larger the rest
                    v[i:] = 1.0 + i / 10
                    v[(i + 1) % 64] *= 40 if i % 3 == 0 else 1  # cosine not in Hamming order
                    v /= np.linalg.norm(v)
                    wanted[cid] = (did, int(i), v)
                    # the text's vector replaced: collected, then embedded anew
                    conn.execute("DELETE FROM embeddings WHERE text_hash = ?", (h,))
                    conn.execute(
                        "INSERT INTO embeddings(workspace_id, model_fp, text_hash, f32, bits)"
                        " VALUES (?, ?, ?, ?, ?)",
                        (ws.id, fp, h, v.tobytes(), usearch_index.sign_bits(v).tobytes()),
                    )
                conn.execute(  # as a collection does: the saved vectors are stale
                    "INSERT INTO meta(key, value) VALUES (?, '1') ON CONFLICT(key)"
                    " DO UPDATE SET value = CAST(value AS INTEGER) + 1",
                    (f"collected:{ws.id}",),
                )
                conn.execute("UPDATE workspaces SET vector_epoch = vector_epoch + 1")
            qvec = np.full(64, 1 / 8, dtype=np.float32)
            keep = doc_ids(engine, "")
            found, truncated = candidates_for(engine, qvec, DocumentSet(24, keep=keep), 24)
            nearest = sorted(
                ((-float(v @ qvec), cid, did) for cid, (did, i, v) in wanted.items() if i < 8)
            )
            assert [(c, d) for _, c, d in nearest] == [(c, d) for c, d, _ in found]
            hamming = [wanted[c][1] for c, _, _ in found]
            assert hamming != sorted(hamming) and truncated is False
        finally:
            engine.close()


def test_a_query_without_words_embeds_nothing_and_finds_nothing(sem):
    engine, _ = sem
    for stages in (["semantic"], ["lexical", "semantic"]):
        answer = engine.reading.search("v", "*** !!!", {"stages": stages})
        assert answer["hits"] == [] and "embed_ms" not in answer["timings"], stages

"""The semantic stage on its own: its candidates against a brute-force cosine ranking over the
same stored vectors, on both paths (the whole-workspace shortlist, a filter's own vectors),
filters that share a text with documents outside them, incomplete documents, the read-deeper
loop and its `truncated`, and the in-memory sign codes as the vector set grows."""

from __future__ import annotations

import numpy as np
import pytest

from autodoc import semantic
from autodoc.engine import Engine
from autodoc.facets import DocumentSet
from autodoc.search import read_epochs
from autodoc.store import LIVE

from .conftest import fake_openai_engine, write
from .fake_openai import FakeOpenAI

WORDS = ["lease", "writer", "store", "vector", "index", "query", "chunk", "section", "heading",
         "filter", "token", "model"]  # fmt: skip
LICENCE = "## Licence\n\nCopyright the authors, released under the MIT licence terms.\n"


def note(i: int) -> str:
    a, b, c = WORDS[i % 12], WORDS[(i * 5 + 1) % 12], WORDS[(i * 7 + 3) % 12]
    return f"# Note {i}\n\n## {a.title()}\n\n{a} {b} {c} {a}\n\n## More\n\n{c} {b} number{i}\n"


@pytest.fixture(scope="module")
def sem(tmp_path_factory):
    base = tmp_path_factory.mktemp("sem")
    root = base / "vault"
    for i in range(40):
        write(root, f"topics/t{i:02}.md", note(i))
    write(root, "shared/a.md", "# A\n\nalpha page words\n\n" + LICENCE)
    write(root, "other/b.md", "# B\n\nbeta page words\n\n" + LICENCE)
    with FakeOpenAI(dim=32) as server:
        engine = fake_openai_engine(base / "store" / "autodoc.db", root, server.url)
        engine.index_run("v")
        yield engine, root
        engine.close()


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
    ws, p = plan(engine)
    qvec = p.embedder.embed([text])[0]
    with engine.store.snapshot() as conn:
        (total,) = conn.execute(
            f"SELECT count(*) FROM chunks WHERE workspace_id = ? AND state = {LIVE}", (ws.id,)
        ).fetchone()
        return semantic.semantic_candidates(
            conn, engine.store, p.signs, ws, p.model_fp, qvec, allowed, need,
            complete=complete, chunks=total,
        )  # fmt: skip


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


def same(found, expected) -> bool:
    """The same chunks in the same order, each with its cosine to float32 precision."""
    return [f[:2] for f in found] == [e[:2] for e in expected] and all(
        abs(f[2] - e[2]) < 1e-5 for f, e in zip(found, expected, strict=True)
    )


QUERIES = ["lease writer", "vector index query", "MIT licence copyright", "number7 heading"]


@pytest.mark.parametrize("text", QUERIES)
def test_the_whole_workspace_ranking_is_the_exact_cosine_ranking(sem, text):
    engine, _ = sem
    found, truncated = candidates(engine, text)
    assert same(found, brute_force(engine, text, None)) and truncated is False


@pytest.mark.parametrize("text", QUERIES)
@pytest.mark.parametrize("prefixes", [("topics/t0",), ("shared/",), ("topics/", "shared/")])
def test_a_filtered_ranking_is_the_exact_cosine_ranking_of_the_kept_documents(sem, text, prefixes):
    """("topics/t0",) and ("shared/",) keep few chunks: their own vectors are scanned; the
    third keeps most: the whole-workspace shortlist, filtered."""
    engine, _ = sem
    keep = doc_ids(engine, *prefixes)
    found, _ = candidates(engine, text, DocumentSet(len(keep), keep=keep))
    assert same(found, brute_force(engine, text, keep))
    drop = doc_ids(engine, "") - keep
    found, _ = candidates(engine, text, DocumentSet(len(keep), drop=drop))
    assert same(found, brute_force(engine, text, keep))


def test_a_text_shared_with_a_document_outside_the_filter_stays_outside(sem):
    """Both licence sections have one text, so one vector: the filter decides by document."""
    engine, _ = sem
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
            "SELECT workspace_id, model_fp, text_hash, f32, bits FROM embeddings"
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
            conn.executemany(
                "INSERT INTO embeddings(workspace_id, model_fp, text_hash, f32, bits)"
                " VALUES (?, ?, ?, ?, ?)",
                saved,
            )
            conn.execute("UPDATE workspaces SET vector_epoch = vector_epoch + 1")


def test_an_exact_match_leads_even_when_the_shortlist_is_short(sem, monkeypatch):
    """A shortlist of 4 sign codes: the chunk whose text is the query is at Hamming distance 0
    and cosine 1, on both paths."""
    engine, _ = sem
    monkeypatch.setattr(semantic, "SHORTLIST", 4)
    text = "Note 12 › More\n\n## More\n\n" + note(12).split("## More\n\n")[1]
    target = doc_ids(engine, "topics/t12")
    for keep in (doc_ids(engine, "topics/t1"), doc_ids(engine, "topics/", "shared/")):
        found, _ = candidates(engine, text, DocumentSet(len(keep), keep=keep), need=3)
        assert found[0][1] in target and found[0][2] == pytest.approx(1.0, abs=1e-5)


def test_reading_deeper_fills_a_starved_answer_and_says_when_it_could_not(sem, monkeypatch):
    engine, _ = sem
    monkeypatch.setattr(semantic, "SHORTLIST", 4)
    monkeypatch.setattr(semantic, "MAX_READ", 8)
    # Most documents excluded: the shortlist cannot fill the answer, the kept ones are scanned.
    keep = doc_ids(engine, "shared/", "other/")
    drop = doc_ids(engine, "") - keep
    found, truncated = candidates(engine, "lease writer", DocumentSet(len(keep), drop=drop), 4)
    assert same(found, brute_force(engine, "lease writer", keep, 4))
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
            engine.index_run("v")
            old = doc_ids(engine, "n00")
            found, _ = candidates(engine, note(0), DocumentSet(len(old), keep=old))
            assert {d for _, d, _ in found} == old  # the codes are now held in memory
            write(root, "late.md", "# Late\n\nzebra okapi giraffe\n")
            engine.index_run("v")
            both = old | doc_ids(engine, "late")
            for text in ("zebra okapi giraffe", note(0)):
                found, _ = candidates(engine, text, DocumentSet(len(both), keep=both))
                assert same(found, brute_force(engine, text, both))
        finally:
            engine.close()


def _codes(pairs: list[tuple[int, str]]) -> semantic._Codes:
    return semantic._Codes.of([(i, h, bytes([i % 256, 7])) for i, h in pairs])


def test_sign_codes_are_looked_up_by_text_hash():
    h = {n: f"{n:016x}" + "0" * 48 for n in (5, 9, 2**63 + 3, 2**64 - 1)}
    codes = _codes([(11, h[9]), (12, h[5]), (13, h[2**64 - 1]), (14, h[2**63 + 3])])
    keys, bits = codes.lookup([h[5], h[2**64 - 1], h[5]])  # a text asked twice counts once
    assert sorted(keys.tolist()) == [12, 13] and keys.dtype == np.uint64
    assert sorted(bits[:, 0].tolist()) == [12, 13]
    for absent in ("0" * 64, f"{7:016x}" + "0" * 48, "f" * 15 + "e" + "0" * 48):
        assert len(codes.lookup([absent])[0]) == 0  # below, between, above every key
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
        engine.index_run("v")
        with engine.store.transaction() as conn:  # as before the first fill
            conn.execute("DELETE FROM embeddings")
            conn.execute("UPDATE workspaces SET vector_epoch = vector_epoch + 1")
        engine.close()
        engine = Engine(db)  # a new process: no sign codes in memory
        try:
            answer = engine.search("v", "lease", {"paths": ["x/"]})
            assert [h["path"] for h in answer["hits"]] == ["x/only.md"]
            assert answer["stages"]["performed"] == ["lexical", "semantic"]
            assert answer["semantic"] == "partial"
        finally:
            engine.close()


def test_a_sign_bit_is_set_only_for_a_positive_component():
    vectors = np.array(
        [[0.5, -0.1, 0.0, 2.0, 1.0, -3.0, 0.25, 1e-9], [-0.5] * 4 + [0.5] * 4], dtype=np.float32
    )
    assert semantic.sign_bits(vectors).tolist() == [[0b10011011], [0b00001111]]

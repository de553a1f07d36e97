"""The sign index mapped from its saved file (vectors/sign_index.py): it answers as the file read
back did, it is copied before its first change (a change to a mapped usearch index crashes the
process), and a reader of a saved vector index maps it until rows arrive past it."""

from __future__ import annotations

import numpy as np
from usearch.index import Index

from autodoc.engine import Engine
from autodoc.vectors.sign_index import SignIndex
from autodoc.vectors.usearch_index import sign_bits

from ..conftest import write
from ..fake_openai import FakeOpenAI
from .test_semantic_stage import brute_force, candidates, plan, same, small_engine

DIM = 384


def _codes(rng: np.random.Generator, n: int) -> np.ndarray:
    return sign_bits(rng.standard_normal((n, DIM)).astype(np.float32))


def _answers(index, queries: np.ndarray, k: int) -> tuple[list, list]:
    found = index.search(queries, k, exact=True)
    return found.keys.tolist(), found.distances.tolist()


def _answers_up_to_ties(index, queries: np.ndarray, k: int) -> list:
    """Each query's distances, and its keys nearer than the k-th: codes added on several
    threads take their slots in the order the threads ran, and an exact scan lists equal
    distances in slot order (so does an index read back from its file and added to)."""
    found = index.search(queries, k, exact=True)
    out = []
    for keys, distances in zip(found.keys.tolist(), found.distances.tolist(), strict=True):
        inside = sorted(key for key, d in zip(keys, distances, strict=True) if d < distances[-1])
        out.append((distances, inside))
    return out


def test_a_mapped_index_answers_as_the_file_read_back_and_is_copied_before_a_change(tmp_path):
    rng = np.random.default_rng(7)
    saved = SignIndex.empty(DIM)
    keys = np.arange(1, 3001, dtype=np.uint64)
    saved.add(keys, _codes(rng, 3000))
    saved.remove(keys[10:200])  # collected before the save: held by neither
    path = tmp_path / "signs.usearch"
    saved.save(str(path))
    read_back = Index.restore(str(path))  # what a reader did before
    mapped = SignIndex.mapped_from(path)
    assert read_back is not None and mapped is not None and mapped.mapped
    assert mapped.memory_usage * 10 < read_back.memory_usage  # the codes are the file's pages
    queries = _codes(rng, 20)
    probe = np.arange(0, 3200, dtype=np.uint64)
    assert len(mapped) == len(read_back) == 2810
    assert _answers(mapped, queries, 600) == _answers(read_back, queries, 600)
    assert mapped.contains(probe).tolist() == read_back.contains(probe).tolist()
    assert 5 in mapped and 50 not in mapped

    path.unlink()  # the writer's next save drops the file; the mapping holds its pages
    more = np.arange(3001, 3101, dtype=np.uint64)
    codes = _codes(rng, 100)
    for index in (mapped, read_back):
        index.add(more, codes)
        index.remove(keys[500:520])
    assert not mapped.mapped  # the first change went to a copy
    assert mapped.memory_usage * 2 > read_back.memory_usage
    assert len(mapped) == len(read_back) == 2890
    assert _answers_up_to_ties(mapped, queries, 600) == _answers_up_to_ties(read_back, queries, 600)
    assert mapped.contains(probe).tolist() == read_back.contains(probe).tolist()


def test_a_reader_maps_the_saved_index_until_rows_arrive_past_it(tmp_path):
    with FakeOpenAI(dim=32) as server:
        engine, root = small_engine(tmp_path, server)
        db = engine.store.path
        engine.close()
        reader = Engine(db)
        try:
            _, p = plan(reader)
            assert p.signs.index.mapped  # nothing past the saved file: never copied
            saved = p.signs.path.with_name(f"{p.signs.path.stem}.{p.signs._saved['seq']}.usearch")
            read_back = Index.restore(str(saved))
            assert read_back is not None
            assert p.signs.index.memory_usage * 10 < read_back.memory_usage  # not read back
            for text in ("lease writer", "vector index query"):
                found, _ = candidates(reader, text)
                assert found and same(found, brute_force(reader, text, None))
            writer = Engine(db)
            try:
                write(root, "late.md", "# Late\n\nzebra okapi giraffe\n")
                writer.indexing.index_run("v")
            finally:
                writer.close()
            _, p = plan(reader)  # the rows since are added: to a copy
            assert not p.signs.index.mapped
            found, _ = candidates(reader, "zebra okapi giraffe")
            assert found and same(found, brute_force(reader, "zebra okapi giraffe", None))
        finally:
            reader.close()

"""The lexical index on its own (no store): the analyzer, which words a query requires, prefix
and commit-prefix matching, paging, tie order, deletes in batches and reader refresh."""

from __future__ import annotations

import pytest

from autodoc.bm25.analyzer import (
    FIELD_WEIGHTS,
    STEMMED,
    UNSTEMMED,
    LexicalDoc,
    _analyzer,
    analyze,
    is_stopword,
)
from autodoc.bm25.tantivy_index import LexicalIndex
from autodoc.parse.query_parser import parse_query


def doc(
    chunk_id: int, body: str, *, title="", breadcrumb="", aliases=(), tags=(), document_id=None
):
    return LexicalDoc(
        chunk_id=chunk_id,
        document_id=chunk_id if document_id is None else document_id,
        title=title,
        breadcrumb=breadcrumb,
        aliases=list(aliases),
        tags=list(tags),
        body=body,
    )


@pytest.fixture
def index(tmp_path):
    idx = LexicalIndex(tmp_path / "lex")
    yield idx
    idx.close()


def filled(index: LexicalIndex, *docs: LexicalDoc) -> LexicalIndex:
    index.add(docs)
    index.commit()
    return index


def ids(index: LexicalIndex, text: str, *, all_words: bool = True, limit: int = 50) -> list[int]:
    q = index.build(parse_query(text), all_words)
    return [] if q is None else [cid for cid, _ in index.search(q, limit)]


def test_the_analyzer_lowercases_folds_stems_and_drops_words_of_100_bytes():
    text = "Storing STORES Über-länge café " + "a" * 99 + " " + "b" * 100
    expected = ["store", "store", "uber", "lang", "cafe", "a" * 99]
    assert _analyzer(stem=True).analyze(text) == STEMMED.analyze(text) == expected
    assert analyze(text) == expected
    unstemmed = ["storing", "stores", "uber", "lange", "cafe", "a" * 99]
    assert _analyzer(stem=False).analyze(text) == UNSTEMMED.analyze(text) == unstemmed


def test_stopwords_are_the_english_list_and_never_an_empty_word():
    assert [is_stopword(w) for w in ("the", "The", "of", "is")] == [True] * 4
    assert [is_stopword(w) for w in ("lease", "why", "!!!", "")] == [False] * 4


def test_every_word_is_required_and_stopwords_are_optional(index):
    filled(
        index,
        doc(1, "the writer lease is renewed"),
        doc(2, "a lease without its holder"),
        doc(3, "writer lease"),
        doc(4, "the unrelated of page"),
    )
    assert sorted(ids(index, "writer lease")) == [1, 3]
    assert sorted(ids(index, "the writer lease")) == [1, 3]  # "the": optional, not required
    assert ids(index, "the writer lease")[0] == 1  # ... but it still counts
    assert sorted(ids(index, "writer lease", all_words=False)) == [1, 2, 3]
    assert sorted(ids(index, "the of")) == [4]  # only stopwords: all of them required
    assert sorted(ids(index, "!!! writer")) == [1, 3]  # a word with no tokens is passed over
    assert ids(index, "!!! ???") == []
    assert index.build(parse_query("!!!"), True) is None


def test_a_quoted_or_prefixed_stopword_is_required(index):
    filled(index, doc(1, "the lease"), doc(2, "lease holder"))
    assert ids(index, '"the" lease') == [1]
    assert ids(index, "lease th*") == [1]


def test_a_prefix_completes_the_last_word_of_a_phrase_and_nothing_else(index):
    filled(
        index,
        doc(1, "write ahead logging"),
        doc(2, "ahead of the writer"),
        doc(3, "catalog of writes"),
    )
    assert ids(index, "write-ahe*") == [1]
    assert sorted(ids(index, "writ*")) == [1, 2, 3]
    assert ids(index, "cat") == []  # a whole word is not a prefix
    assert ids(index, "cat*") == [3]


def test_a_commit_prefix_finds_the_full_hash_and_a_word_does_not_become_one(index):
    filled(
        index,
        doc(1, "landed in 3f2a9c1e8b7d4a60b2c5d9e8f1a2b3c4d5e6f708"),
        doc(2, "the deadbeef1234 marker and the cafebabe word"),
    )
    assert ids(index, "3f2a9c1") == [1]
    assert ids(index, "deadbee") == []  # no digit: not a hash prefix
    assert ids(index, "cafeba") == []  # six characters: too short for a commit


def test_search_takes_the_top_limit_and_breaks_ties_by_chunk_id(index):
    filled(index, *(doc(cid, "identical words here") for cid in (17, 5, 11, 3, 8, 1, 14)))
    filled(index, *(doc(cid, "identical words here") for cid in (20, 9, 30, 2, 25, 12, 22)))
    q = index.build(parse_query("identical"), True)
    everything = index.search(q, 50)
    assert [cid for cid, _ in everything] == sorted(cid for cid, _ in everything)
    assert len(everything) == 14 and len({s for _, s in everything}) == 1
    assert len(index.search(q, 12)) == 12
    assert index.search(index.build(parse_query("absent"), True), 5) == []


def test_deletes_go_in_batches_and_miss_nothing(index):
    n = 2600
    filled(index, *(doc(cid, f"word{cid % 7} common") for cid in range(1, n + 1)))
    assert index.num_docs() == n and index.all_chunk_ids() == set(range(1, n + 1))
    assert index.delete(range(1, n)) == n - 1
    index.commit()
    assert index.all_chunk_ids() == {n} and index.num_docs() == 1
    index.delete([n])
    index.commit()
    assert index.all_chunk_ids() == set()


def test_a_reader_reloads_when_the_epoch_moves_and_only_then(index, tmp_path):
    reader = LexicalIndex(tmp_path / "lex")
    try:
        filled(index, doc(1, "first"))
        reader.refresh(1)
        assert reader.num_docs() == 1
        filled(index, doc(2, "second"))
        reader.refresh(1)  # the same epoch: the searcher it has
        assert reader.num_docs() == 1
        reader.refresh(2)
        assert reader.num_docs() == 2
    finally:
        reader.close()


def test_only_documents_keeps_or_drops_whole_documents(index):
    filled(
        index,
        doc(1, "lease one", document_id=10),
        doc(2, "lease two", document_id=10),
        doc(3, "lease three", document_id=20),
    )
    q = parse_query("lease")
    keep = index.build(q, True, index.only_documents(keep=[10]))
    drop = index.build(q, True, index.only_documents(drop=[10]))
    assert sorted(c for c, _ in index.search(keep, 10)) == [1, 2]
    assert [c for c, _ in index.search(drop, 10)] == [3]
    nothing_dropped = index.build(q, True, index.only_documents())
    assert sorted(c for c, _ in index.search(nothing_dropped, 10)) == [1, 2, 3]


def test_destroy_removes_the_index_folder_and_tolerates_a_missing_one(tmp_path):
    path = tmp_path / "lex"
    LexicalIndex(path).close()
    assert path.is_dir()
    LexicalIndex.destroy(path)
    assert not path.exists()
    LexicalIndex.destroy(path)  # already gone: nothing to do, no error


def test_a_new_index_is_marked_with_the_format_and_an_old_one_is_not(tmp_path):
    path = tmp_path / "lex"
    fresh = LexicalIndex(path)
    assert fresh.format_ok
    filled(fresh, doc(1, "kept words"))
    fresh.close()
    (path / "autodoc-format").write_text("1")  # an index written by an older AutoDoc
    reopened = LexicalIndex(path)
    try:
        assert not reopened.format_ok  # left for the indexer to rebuild from SQLite
        assert ids(reopened, "kept") == [1]
        reopened.mark_format()
        assert reopened.format_ok
    finally:
        reopened.close()


def test_an_index_of_another_schema_starts_over_on_disk(tmp_path):
    import tantivy

    path = tmp_path / "lex"
    path.mkdir()
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("other", stored=True)
    foreign = tantivy.Index(sb.build(), str(path))
    writer = foreign.writer(heap_size=15_000_000, num_threads=1)
    writer.add_document(tantivy.Document(other="old"))
    writer.commit()
    writer.wait_merging_threads()
    index = LexicalIndex(path)
    assert index.format_ok and index.num_docs() == 0
    filled(index, doc(1, "new words"))
    index.close()
    again = LexicalIndex(path)  # what it wrote is on disk, not in memory
    try:
        assert ids(again, "new") == [1] and again.format_ok
    finally:
        again.close()


def zebra_scores(index: LexicalIndex, *where: tuple[str, str, str]) -> dict[int, float]:
    """BM25 of "zebra" for documents 1, 2, ... holding (body, title, breadcrumb)."""
    filled(index, *(doc(i, b, title=t, breadcrumb=c) for i, (b, t, c) in enumerate(where, 1)))
    return dict(index.search(index.build(parse_query("zebra"), True), 10))


def test_a_word_scores_by_its_best_field_times_that_fields_weight(index):
    f, z = "filler", "zebra"
    scores = zebra_scores(index, (f, z, f), (f, f, z), (z, f, f))
    assert list(scores) == [1, 2, 3]  # every field has one word: only the weights differ
    assert scores[1] / scores[3] == pytest.approx(FIELD_WEIGHTS["title"], rel=1e-5)
    assert scores[2] / scores[3] == pytest.approx(FIELD_WEIGHTS["breadcrumb"], rel=1e-5)


def test_aliases_are_scored_as_title_words_and_tags_as_breadcrumb_words(index):
    filled(
        index,
        doc(1, "filler", title="filler", breadcrumb="filler", aliases=["okapi"]),
        doc(2, "filler", title="filler", breadcrumb="filler", tags=["okapi"]),
        doc(3, "okapi", title="filler", breadcrumb="filler"),
    )
    assert sorted(ids(index, "okapi")) == [1, 2, 3]


def test_add_counts_what_it_added_and_a_closed_writer_opens_again(index):
    assert index.add([doc(1, "one"), doc(2, "two")]) == 2
    assert index.add([]) == 0
    index.commit()
    index.close()  # the writer's uncommitted work is dropped, the index stays usable
    assert index.add([doc(3, "three")]) == 1
    index.commit()
    assert index.all_chunk_ids() == {1, 2, 3}


def test_a_word_in_two_fields_scores_by_the_best_one_alone(index):
    """Max, not sum (TIE_BREAKER 0): the body's copy of a title word adds nothing. Each field
    holds the word in two of three one-word documents, so a field's BM25 is the same b."""
    f, z = "filler", "zebra"
    scores = zebra_scores(index, (z, z, f), (f, z, f), (z, f, f))
    assert scores[1] == pytest.approx(scores[2], rel=1e-6)  # 1.2 b, not 1.2 b + b
    assert scores[3] / scores[2] == pytest.approx(1 / FIELD_WEIGHTS["title"], rel=1e-5)

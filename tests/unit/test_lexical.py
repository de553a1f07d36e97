"""Stage 1 through `search.query`: safe parsing, code tokens, field weights, fallback, caps."""

from __future__ import annotations

import re

import pytest

from autodoc.bm25.analyzer import FIELD_WEIGHTS
from autodoc.parse.query_parser import parse_query
from autodoc.serve.dispatcher import Dispatcher
from autodoc.wire.errors import INVALID_PARAMS, UNSUPPORTED, RpcError

from ..conftest import lexical_workspace, write

QDRANT = {"kind": "qdrant", "url": ":memory:"}


class InQdrant(Dispatcher):
    """A dispatcher whose workspaces keep their lexical index (and vectors) in local-mode
    Qdrant (qdrant_lexical.py): every embedding option a test sets gains the store."""

    def call(self, method, params=None, **kw):
        if method == "workspace.configure" and "embedding" in params[1]:
            spec = params[1]["embedding"]
            spec = {"provider": spec} if isinstance(spec, str) else spec
            params = [params[0], {**params[1], "embedding": {**spec, "store": QDRANT}}]
        out = super().call(method, params, **kw)
        if method == "workspace.add":
            self.call("workspace.configure", [params[0], {"embedding": "bundled"}])
        return out


@pytest.fixture(params=["tantivy", "qdrant"])
def rpc(request, engine):
    """Every test here runs on both lexical indexes: Tantivy, and BM25 as Qdrant sparse
    vectors (where qdrant-client is installed)."""
    if request.param == "tantivy":
        return Dispatcher(engine)
    pytest.importorskip("qdrant_client", reason="the qdrant extra is not installed")
    return InQdrant(engine)


@pytest.fixture
def kb(rpc, vault):
    write(
        vault,
        "adr/0001-lease.md",
        """
        ---
        title: Writer lease
        tags: [storage]
        ---
        # Writer lease

        The writer takes an exclusive lease beside the store. reclaimBatch retries.

        ## Errors
        A switch in progress answers -32069 to semantic-only callers.

        ## History
        Introduced in commit 3f2a9c1e8b7d4a60b2c5d9e8f1a2b3c4d5e6f708 after the outage.
        """,
    )
    write(
        vault,
        "notes/cpp.md",
        """
        # C++ notes

        Prefer std::vector over raw arrays. The helper is called snake_case_name.

        ## Operators
        Searching for AND OR NOT NEAR title: (parens) must not break anything.
        """,
    )
    write(
        vault,
        "notes/mention.md",
        """
        # Misc

        This page mentions the lease once, in passing.
        """,
    )
    write(
        vault,
        "notes/migrations.md",
        """
        # Schema changes

        Migrations run at startup; migrating twice is safe.
        """,
    )
    rpc.call("workspace.add", ["kb", str(vault)])
    rpc.call("index.run", ["kb"])
    return rpc


def top(rpc, query, **opts):
    """Stage 1 alone, unless the test asks for other stages."""
    opts.setdefault("stages", ["lexical"])
    answer = rpc.call("search.query", ["kb", query, opts])
    return [(h["path"], h["breadcrumb"]) for h in answer["hits"]], answer


@pytest.mark.parametrize(
    "query, path, crumb",
    [
        ("reclaimBatch", "adr/0001-lease.md", "Writer lease"),
        ("-32069", "adr/0001-lease.md", "Writer lease › Errors"),
        ("3f2a9c1", "adr/0001-lease.md", "Writer lease › History"),
        ("std::vector", "notes/cpp.md", "C++ notes"),
        ("snake_case_name", "notes/cpp.md", "C++ notes"),
    ],
)
def test_code_tokens_are_findable(kb, query, path, crumb):
    hits, _ = top(kb, query)
    assert hits and hits[0] == (path, crumb)


def test_title_match_outranks_the_same_word_in_a_body(kb):
    hits, _ = top(kb, "lease")
    assert hits[0][0] == "adr/0001-lease.md"
    assert FIELD_WEIGHTS["title"] > FIELD_WEIGHTS["body"]


def test_the_same_words_score_higher_in_a_title_than_in_a_body(rpc, vault):
    for i in range(20):  # enough other documents for BM25's statistics to mean something
        write(vault, f"filler{i}.md", f"---\ntitle: Filler {i}\n---\nUnrelated text number {i}.\n")
    write(vault, "a.md", "---\ntitle: Quota policy\n---\nRules for teams and their limits.\n")
    write(vault, "b.md", "---\ntitle: Team rules\n---\nRules on quota policy and limits.\n")
    write(vault, "c.md", "---\ntitle: Aliased\naliases: [storage decision]\n---\nOther words.\n")
    write(vault, "d.md", "---\ntitle: Plain\n---\nAbout the storage decision here.\n")
    write(vault, "e.md", "---\ntitle: Tagged\ntags: [billing]\n---\nMonthly runs of jobs.\n")
    write(vault, "f.md", "---\ntitle: Untagged\n---\nMonthly billing runs of jobs.\n")
    lexical_workspace(rpc, vault, "kb")
    for query, structural, body in (
        ("quota policy", "a.md", "b.md"),  # title
        ("storage decision", "c.md", "d.md"),  # alias
        ("billing", "e.md", "f.md"),  # tag (the tag boost adds to it after fusion)
    ):
        hits = [h["path"] for h in rpc.call("search.query", ["kb", query])["hits"]]
        assert hits.index(structural) < hits.index(body), query
    lexical_only = rpc.call("search.query", ["kb", "billing", {"stages": ["lexical"]}])
    assert lexical_only["hits"][0]["path"] == "e.md"


def test_operators_and_punctuation_are_plain_words(kb):
    # Every operator-looking query is words: the note that has those words answers it; `c*`
    # is a prefix scan; punctuation alone has no words and finds nothing rather than failing.
    for q, expected in [("AND OR NOT", "notes/cpp.md"), ("title: (parens)", "notes/cpp.md"),
                        ("NEAR(", "notes/cpp.md"), ('"must not', "notes/cpp.md")]:  # fmt: skip
        answer = kb.call("search.query", ["kb", q, {"stages": ["lexical"]}])
        assert answer["stages"]["performed"] == ["lexical"], q
        assert answer["hits"] and answer["hits"][0]["path"] == expected, q
    prefix = kb.call("search.query", ["kb", "a:b c* *", {"stages": ["lexical"]}])["hits"]
    words = [re.findall(r"\w+", f"{h['breadcrumb']} {h['snippet']}".lower()) for h in prefix]
    assert prefix and all(any(w.startswith("c") for w in ws) for ws in words)
    assert kb.call("search.query", ["kb", "(((", {"stages": ["lexical"]}])["hits"] == []
    hits, _ = top(kb, "AND OR NOT NEAR")
    assert hits[0][0] == "notes/cpp.md"


def test_phrase_needs_adjacent_words_in_order(kb):
    hits, _ = top(kb, '"exclusive lease"')
    assert hits and hits[0][0] == "adr/0001-lease.md"
    hits, _ = top(kb, '"lease exclusive"')  # the same words, out of order
    assert hits == []


def test_stemming_and_trailing_prefix(kb):
    hits, _ = top(kb, "migration")  # stems: migrations, migrating
    assert hits[0][0] == "notes/migrations.md"
    hits, _ = top(kb, "startu*")
    assert hits[0][0] == "notes/migrations.md"
    assert parse_query("migr*").items[-1].prefix
    # A whole word typed as a prefix finds its own stem too (`migrations` → `migrat`).
    assert top(kb, "migrations*")[0][0][0] == "notes/migrations.md"
    assert top(kb, "retries*")[0][0][0] == "adr/0001-lease.md"


def test_all_words_first_then_any_word_fallback(kb):
    hits, _ = top(kb, "lease outage zebra")  # 'zebra' is nowhere: still answers
    assert hits and hits[0] == ("adr/0001-lease.md", "Writer lease › History")
    hits, _ = top(kb, "why did we pick the lease")  # stopwords are not required
    assert hits[0][0] == "adr/0001-lease.md"


def test_per_document_cap_and_limit(rpc, vault):
    sections = "".join(f"## Part {i}\nkeyword here\n\n" for i in range(8))
    write(vault, "big.md", "# Big\n\n" + sections)
    write(vault, "small.md", "# Small\n\nkeyword once\n")
    rpc.call("workspace.add", ["kb", str(vault)])
    rpc.call("index.run", ["kb"])
    answer = rpc.call("search.query", ["kb", "keyword"])  # hybrid: both stages are capped
    paths = [h["path"] for h in answer["hits"]]
    assert paths.count("big.md") == 3 and "small.md" in paths
    assert len(rpc.call("search.query", ["kb", "keyword", {"limit": 2}])["hits"]) == 2


def test_path_prefix_filter(kb):
    hits, _ = top(kb, "lease", paths=["notes/"])
    assert hits and all(p.startswith("notes/") for p, _ in hits)


def test_answer_shape_is_honest_about_stages(kb):
    _, answer = top(kb, "lease", stages=["lexical"])
    assert answer["mode_used"] == "lexical"
    # the store that ran the stage is named (issue 57)
    engine = "qdrant-sparse:memory" if isinstance(kb, InQdrant) else "tantivy"
    assert answer["stages"] == {
        "requested": ["lexical"],
        "performed": ["lexical"],
        "skipped": {},
        "engines": {"lexical": engine},
    }
    hit = answer["hits"][0]
    for key in (
        "path",
        "breadcrumb",
        "snippet",
        "byte_start",
        "byte_end",
        "line_start",
        "line_end",
        "relevance",
        "score",
        "via",
        "generation",
    ):
        assert key in hit
    assert hit["via"] == ["lexical"]
    # the learned probability that it answers, the column's top
    assert 0.0 < hit["relevance"] <= 1.0 and hit["relevance"] == max(
        h["relevance"] for h in answer["hits"]
    )
    _, plain = top(kb, "lease", stages=["lexical"], fusion="rrf")
    assert plain["hits"][0]["relevance"] >= 1.0 - 1e-9  # first in the only stage that ran
    assert "lease" in hit["snippet"].lower()
    a, b = hit["highlights"][0]
    assert hit["snippet"][a:b].lower().startswith("lease")
    answer = kb.call("search.query", ["kb", "lease"])  # no stages: all of them
    assert answer["stages"]["requested"] == ["lexical", "semantic", "rerank"]
    assert answer["stages"]["performed"] == ["lexical", "semantic"]
    assert answer["stages"]["skipped"] == {"rerank": "no ranker configured"}
    assert answer["mode_used"] == "hybrid" and answer["semantic"] == "ready"
    assert answer["rank"]["state"] == "off"


def test_semantic_only_is_refused_not_substituted(kb):
    kb.call("workspace.configure", ["kb", {"embedding": "none"}])
    with pytest.raises(RpcError) as err:
        kb.call("search.query", ["kb", "lease", {"stages": ["semantic"]}])
    assert err.value.code == UNSUPPORTED
    answer = kb.call("search.query", ["kb", "lease"])
    assert answer["stages"]["skipped"]["semantic"] == "no embedding model configured"
    assert answer["semantic"] == "off" and answer["mode_used"] == "lexical"


@pytest.mark.parametrize(
    "opts",
    [
        {"limit": 0},
        {"limit": 101},
        {"limit": "5"},
        {"stages": ["rerank"]},
        {"stages": ["x"]},
        {"bogus": 1},
        {"paths": "notes"},
        [1],
    ],
)
def test_bad_options_are_invalid_params(kb, opts):
    with pytest.raises(RpcError) as err:
        kb.call("search.query", ["kb", "lease", opts])
    assert err.value.code == INVALID_PARAMS


def test_empty_query_returns_no_hits(kb):
    for q in ["   ", "*** ::: !!!", ""]:
        assert kb.call("search.query", ["kb", q])["hits"] == []


def test_a_file_left_by_a_killed_writer_does_not_block_the_next_commit(tmp_path):
    """Regression (found by tests/integration/test_reliability.py): a writer killed between writing
    a
    delete file and committing left `<segment>.<opstamp>.del`; the next writer committing the
    same opstamp failed with FileAlreadyExists."""
    import shutil

    from autodoc.bm25.analyzer import LexicalDoc
    from autodoc.bm25.tantivy_index import LexicalIndex

    def docs(n):
        return [LexicalDoc(i, i, "T", "T", [], [], f"word {i}")
                for i in range(1, n + 1)]  # fmt: skip

    a = LexicalIndex(tmp_path / "a")
    a.add(docs(5))
    a.commit()
    a.close()
    shutil.copytree(tmp_path / "a", tmp_path / "b")  # b: the state the killed writer left
    a = LexicalIndex(tmp_path / "a")
    a.delete([1, 2])
    a.commit()  # writes <segment>.<opstamp>.del and a new meta.json
    a.close()
    before = {p.name for p in (tmp_path / "b").iterdir()}
    for leftover in (tmp_path / "a").glob("*.del"):
        shutil.copy(leftover, tmp_path / "b")  # written, never committed...
    # ...but registered: Tantivy lists a file as managed before it creates it.
    shutil.copy(tmp_path / "a" / ".managed.json", tmp_path / "b" / ".managed.json")
    assert {p.name for p in (tmp_path / "b").iterdir()} - before
    b = LexicalIndex(tmp_path / "b")
    b.delete([1, 2])
    b.commit()  # the same opstamp: must not fail on the leftover
    assert b.all_chunk_ids() == {3, 4, 5}


@pytest.fixture
def records(rpc, vault):
    """Decision records numbered the ways projects number them: in the file name, padded."""
    write(vault, "adr/0042-use-kafka.md", "# Use Kafka\n\nEvents go through a broker.\n")
    write(vault, "adr/0007-use-postgres.md", "# Use Postgres\n\nOne database. See ADR 0042.\n")
    write(vault, "decisions/ADR-5-logging.md", "# Logging\n\nStructured logs to stdout.\n")
    write(vault, "other/queue_retention.md", "# Retention\n\nHow long events are kept.\n")
    for c in "abcdefgh":
        write(vault, f"filler/note-{c}.md", f"# Note {c}\n\nUnrelated text about {c}.\n")
    lexical_workspace(rpc, vault, "kb")
    return rpc


@pytest.mark.parametrize(
    "query, path",
    [
        ("adr 42", "adr/0042-use-kafka.md"),  # the number is only in the file name, padded
        ("ADR-0042", "adr/0042-use-kafka.md"),
        ("adr_42", "adr/0042-use-kafka.md"),
        ("0007", "adr/0007-use-postgres.md"),
        ("adr 5", "decisions/ADR-5-logging.md"),
        ("queue retention", "other/queue_retention.md"),  # folder and stem words
        ("decisions logging", "decisions/ADR-5-logging.md"),
    ],
)
def test_a_files_path_is_searchable_and_numbers_meet_without_their_zeros(records, query, path):
    answer = records.call("search.query", ["kb", query, {"stages": ["lexical"]}])
    assert answer["hits"][0]["path"] == path


def test_a_padded_number_in_the_text_is_found_and_marked_by_the_plain_number(records):
    answer = records.call("search.query", ["kb", "see adr 42", {"stages": ["lexical"]}])
    hit = next(h for h in answer["hits"] if h["path"] == "adr/0007-use-postgres.md")
    marked = [hit["snippet"][a:b] for a, b in hit["highlights"]]
    assert "0042" in marked and "See" in marked
    # A decimal keeps its digits: 1.05 is not 1.5.
    from autodoc.bm25.analyzer import analyze

    assert analyze("ADR-0042 v1.05 2022-03-28") == ["adr", "42", "v1", "05", "2022", "3", "28"]


@pytest.fixture
def cjk(rpc, vault):
    write(vault, "zh.md", "# 存储方案\n\n我们选择了数据库检索方案，因为它简单。\n")
    write(vault, "ja.md", "# 検索エンジン\n\n全文検索エンジンを使うことにした。\n")
    write(vault, "ko.md", "# 저장소\n\n데이터베이스를 하나만 사용한다.\n")
    write(vault, "en.md", "# Storage\n\nWe picked one database for search.\n")
    lexical_workspace(rpc, vault, "kb")
    return rpc


@pytest.mark.parametrize(
    "query, path",
    [
        ("数据库", "zh.md"),  # inside a run of seven characters
        ("案", "zh.md"),  # one character: a bigram that starts with it
        ("检索方案", "zh.md"),
        ("検索", "ja.md"),  # Han in a Japanese run
        ("エンジン", "ja.md"),  # Katakana
        ("데이터베이스", "ko.md"),  # Hangul
        ("database 数据库", "zh.md"),  # any word: the CJK one is there (all words: none is)
    ],
)
def test_chinese_japanese_and_korean_words_are_found_inside_runs(cjk, query, path):
    answer = cjk.call("search.query", ["kb", query, {"stages": ["lexical"]}])
    assert [h["path"] for h in answer["hits"]][:1] == [path], query
    if " " not in query:
        assert [h["path"] for h in answer["hits"]] == [path]  # nothing else holds it
        assert answer["missing"] == [] and answer["confidence"] == "high"


def test_a_cjk_word_is_marked_inside_its_run(cjk):
    hit = cjk.call("search.query", ["kb", "数据库 简单", {"stages": ["lexical"]}])["hits"][0]
    marked = [hit["snippet"][a:b] for a, b in hit["highlights"]]
    assert marked == ["数据库", "简单"]
    hit = cjk.call("search.query", ["kb", "エンジン 検索", {"stages": ["lexical"]}])["hits"][0]
    assert "全文検索エンジンを" in hit["snippet"]
    assert [hit["snippet"][a:b] for a, b in hit["highlights"]] == ["検索", "エンジン"]  # in order


def test_every_cjk_run_of_a_word_is_required_and_a_name_is_not_a_run(rpc, vault):
    """`数据库-检索` is one word of two runs: a chunk holding one run is not a match. A
    one-character word is found inside a run of the text, not inside an alias."""
    write(vault, "both.md", "# 甲\n\n数据库的检索。\n")
    write(vault, "one.md", "# 乙\n\n只有数据库。\n")
    write(vault, "alias.md", "---\naliases: [数据库]\n---\n# Alias only\n\nnothing here\n")
    lexical_workspace(rpc, vault, "kb")

    def paths(query):
        hits = rpc.call("search.query", ["kb", query, {"stages": ["lexical"]}])["hits"]
        return sorted({h["path"] for h in hits})

    assert paths("数据库-检索") == ["both.md"]
    assert paths("库") == ["both.md", "one.md"]


def test_a_cjk_word_found_nowhere_is_missing(cjk):
    answer = cjk.call("search.query", ["kb", "数据仓库", {"stages": ["lexical"]}])
    assert answer["hits"] == [] and answer["missing"] == ["数据仓库"]


def test_a_code_in_a_sentence_names_the_document_titled_with_it(rpc, vault):
    """`c1083 cannot open include file`: C1068's page holds every word (it mentions C1083),
    C1083's says it otherwise, but the code names C1083's; a bare number does not (`sha256` is
    not record 256)."""
    write(vault, "fatal-error-c1083.md", "# Fatal Error C1083\n\nThe header was not found.\n")
    write(
        vault,
        "fatal-error-c1068.md",
        "# Fatal Error C1068\n\ncannot open include file: unlike C1083, the file exists.\n",
    )
    write(vault, "adr/0256-use-blake3.md", "# Use Blake3\n\nFaster than the old hash.\n")
    write(vault, "hashing.md", "# Hashing\n\nWe compute sha256 digests of every artifact.\n")
    for c in "abcdefgh":
        write(vault, f"filler/note-{c}.md", f"# Note {c}\n\nUnrelated text about {c}.\n")
    lexical_workspace(rpc, vault, "kb")
    answer = rpc.call("search.query", ["kb", "c1083 cannot open include file"])
    assert answer["fusion"]["intent"] == "words"
    assert answer["hits"][0]["path"] == "fatal-error-c1083.md"
    answer = rpc.call("search.query", ["kb", "how do we compute sha256 digests"])
    assert answer["hits"][0]["path"] == "hashing.md"
    assert "adr/0256-use-blake3.md" not in [h["path"] for h in answer["hits"]]


def test_what_the_names_pass_did_not_find_scores_below_it(rpc, vault):
    """The blend with the semantic stage keeps a code's document ahead: every later hit's
    lexical score is at most NAMED_GAP × the names pass's last one."""
    from autodoc.query.intent import code_words
    from autodoc.query.stages.lexical import NAMED_GAP, lexical_candidates

    write(vault, "fatal-error-c1083.md", "# Fatal Error C1083\n\nCannot open include file.\n")
    write(vault, "c1068.md", "# C1068\n\n" + "cannot open include file. " * 8 + "\n")
    lexical_workspace(rpc, vault, "kb")
    engine, query = rpc.engine, parse_query("c1083 cannot open include file")
    ws = engine.workspace("kb")
    with engine.store.snapshot() as conn:
        rows, _, scores = lexical_candidates(
            conn, engine.store, engine.lexical(ws), ws, query, names=code_words(query), whole=True
        )
    named = [i for i, (_, doc) in enumerate(rows) if doc == rows[0][1]]
    assert named == [0] and len(rows) == 2
    assert scores[1] <= NAMED_GAP * scores[0] + 1e-9


def test_a_name_the_title_lists_or_glosses_is_found_exactly(rpc, vault):
    """One page for a family of functions (`strcpy_s, wcscpy_s`) or an option and its gloss
    (`/Zc:__cplusplus (Enable updated __cplusplus macro)`): each name finds its page first,
    above a page whose examples use the name more often."""
    family = "---\ntitle: strcpy_s, wcscpy_s, _mbscpy_s\n---\nCopies a string.\n"
    write(vault, "strcpy-s.md", family)
    write(vault, "strcat-s.md", "# strcat_s\n\n" + "strcpy_s(buf, n, src); " * 6 + "\n")
    write(vault, "zc.md", "# /Zc:__cplusplus (Enable updated __cplusplus macro)\n\nThe macro.\n")
    write(vault, "std.md", "# /std\n\nSee /Zc:__cplusplus and /Zc:__cplusplus again.\n")
    lexical_workspace(rpc, vault, "kb")
    for query, path in (("strcpy_s", "strcpy-s.md"), ("wcscpy_s", "strcpy-s.md"),
                        ("/Zc:__cplusplus", "zc.md")):  # fmt: skip
        hit = rpc.call("search.query", ["kb", query])["hits"][0]
        assert hit["path"] == path and "exact" in hit["via"], query
    # a title that is one name, or a sentence with commas, lists nothing
    from autodoc.parse.names import title_names

    assert title_names("Context, Reach & Prioritization") == []
    assert title_names("Use Kafka") == []
    assert title_names("/MD, /MT, /LD (Use run-time library)") == ["/md", "/mt", "/ld"]


def test_a_line_that_is_only_a_link_scores_below_the_page_it_names(rpc, vault):
    """A "See also" list repeats other pages' titles: a title query finds the page, not the
    list (LINKS_WEIGHT), and the list's words are still found."""
    from autodoc.bm25.analyzer import LINKS_WEIGHT, link_lines

    write(vault, "walkthrough.md", "# Walkthrough: compiling a native program\n\nOpen a prompt.\n")
    see_also = "".join(
        f"- [Walkthrough: compiling a {w} program](w{i}.md)\n"
        for i, w in enumerate(["native", "managed", "portable"])
    )
    write(vault, "building.md", f"# Building\n\nUse the tools.\n\n## See also\n\n{see_also}")
    for c in "abcdefgh":
        write(vault, f"filler/note-{c}.md", f"# Note {c}\n\nUnrelated text about {c}.\n")
    lexical_workspace(rpc, vault, "kb")
    hits = rpc.call("search.query", ["kb", "walkthrough compiling a native program"])["hits"]
    assert hits[0]["path"] == "walkthrough.md"
    assert "building.md" in [h["path"] for h in hits]
    assert LINKS_WEIGHT < 1.0
    lines = "- [A b](a.md)\n* [[c.d|C d]]\nSee [e](e.md) here.\n1. [F](f.md).\n[G](g.md)<br/>"
    assert link_lines(lines) == ("See [e](e.md) here.", "A b\nC d\nF\nG")


def test_the_other_words_beside_a_code_choose_its_section(rpc, vault):
    """The code names the page; the rest of the query picks the section the editor opens."""
    write(
        vault,
        "linker-tools-error-lnk2019.md",
        "# Linker Tools Error LNK2019\n\nunresolved external symbol\n\n## Possible causes\n\n"
        "A missing library.\n\n## Mixed architectures\n\nLinking a 32-bit library into 64-bit"
        " code fails.\n\n## Another cause\n\nA typo in a name.\n",
    )
    write(vault, "lnk2001.md", "# Linker Tools Error LNK2001\n\nSee LNK2019 for 64-bit code.\n")
    lexical_workspace(rpc, vault, "kb")
    hit = rpc.call("search.query", ["kb", "lnk2019 linking 32-bit library into 64-bit code"])[
        "hits"
    ][0]
    assert hit["path"] == "linker-tools-error-lnk2019.md"
    assert hit["breadcrumb"].endswith("Mixed architectures")

"""The stage registry drives every answer's `stages` record, skip reasons, errors and
`mode_used`: every combination of toggles against every availability of the semantic stage (a
model, none, a provider failing) and the ranker (configured, none, failing), checked against the
rules written out here, not against the registry itself."""

from __future__ import annotations

import itertools
import re
import shutil
import time

import pytest

from autodoc.evaluation import beir
from autodoc.query import stages
from autodoc.query.stages.semantic import SemanticStage
from autodoc.wire import protocol
from autodoc.wire.errors import EMBED_FAILED, INVALID_PARAMS, UNSUPPORTED, RpcError

from ..conftest import REPO, fake_openai_engine
from ..fake_openai import FakeOpenAI
from ..fake_rankers import FakeRanker

API_VAULT = REPO / "tests" / "fixtures" / "api-vault"
TOGGLES = ["lexical", "semantic", "rerank"]
SUBSETS = [list(c) for n in range(4) for c in itertools.combinations(TOGGLES, n)]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """Four workspaces on one vault: with or without a model, with or without a ranker."""
    base = tmp_path_factory.mktemp("stages")
    root = base / "vault"
    shutil.copytree(API_VAULT, root)
    with FakeOpenAI(dim=32) as embedder, FakeRanker("tei") as ranker:
        engine = fake_openai_engine(base / "store" / "autodoc.db", root, embedder.url, "s-r")
        for name in ("s-n", "n-r", "n-n"):
            engine.workspaces.workspace_add(name, str(root))
        engine.workspaces.workspace_configure(
            "s-n", {"embedding": engine.workspace("s-r").options["embedding"]}
        )
        for name in ("n-r", "n-n"):
            engine.workspaces.workspace_configure(name, {"embedding": "none"})
        spec = {"provider": "tei", "base_url": ranker.url, "model": "rr"}
        for name in ("s-r", "n-r"):
            engine.workspaces.workspace_configure(name, {"ranker": spec})
        for name in ("s-r", "s-n", "n-r", "n-n"):
            engine.indexing.index_run(name)
        yield engine, embedder, ranker
        embedder.mode = ranker.mode = "ok"
        engine.close()


@pytest.mark.parametrize("toggles", SUBSETS, ids=lambda t: "+".join(t) or "default")
@pytest.mark.parametrize("semantic", ["model", "none", "failing"])
@pytest.mark.parametrize("ranker", ["configured", "none", "failing"])
def test_the_stages_record_follows_toggles_and_availability(served, toggles, semantic, ranker):
    engine, embedder, fake_ranker = served
    name = ("n" if semantic == "none" else "s") + "-" + ("n" if ranker == "none" else "r")
    embedder.mode = "fail" if semantic == "failing" else "ok"
    fake_ranker.mode = "fail" if ranker == "failing" else "ok"
    requested = toggles or TOGGLES  # none given: every stage
    sem_ok, rank_ok = semantic == "model", ranker == "configured"
    if not set(requested) & {"lexical", "semantic"}:
        with pytest.raises(RpcError) as err:
            engine.reading.search(name, "passkey challenge", {"stages": toggles})
        assert err.value.code == INVALID_PARAMS and err.value.data == {"field": "stages"}
        return
    if "lexical" not in requested and not sem_ok:  # never silently lexical instead
        with pytest.raises(RpcError) as err:
            engine.reading.search(name, "passkey challenge", {"stages": toggles})
        assert err.value.code == (UNSUPPORTED if semantic == "none" else EMBED_FAILED)
        assert err.value.data["stage"] == "semantic"
        return
    t0 = time.perf_counter()
    answer = engine.reading.search(name, "passkey challenge", {"stages": toggles})
    wall_ms = (time.perf_counter() - t0) * 1000
    protocol.conform(answer, protocol.Answer)
    ran = {
        "lexical": "lexical" in requested,
        "semantic": "semantic" in requested and sem_ok,
        "rerank": "rerank" in requested and rank_ok,
    }
    record = answer["stages"]
    assert record["requested"] == requested
    assert record["performed"] == [s for s in TOGGLES if ran[s]]
    expect_skipped = {s for s in requested if not ran[s]}
    assert set(record["skipped"]) == expect_skipped
    if "semantic" in expect_skipped:
        reason = record["skipped"]["semantic"]
        if semantic == "none":
            assert reason == engine.reading.semantic_state(name)["semantic_reason"] != ""
        else:
            assert reason.startswith("embedding the query failed: ")
    if "rerank" in expect_skipped:
        assert record["skipped"]["rerank"] == answer["rank"]["error"] != ""
        assert answer["rank"]["state"] == ("failed" if ranker == "failing" else "off")
    both = ran["lexical"] and ran["semantic"]
    mode = "hybrid" if both else "lexical" if ran["lexical"] else "semantic"
    assert answer["mode_used"] == mode
    assert all(set(h["via"]) <= {"lexical", "semantic", "rank", "exact"} for h in answer["hits"])
    assert any("rank" in h["via"] for h in answer["hits"]) == ran["rerank"]
    assert set(answer["fusion"]["weights"]) == {s for s in ("lexical", "semantic") if ran[s]}
    # each stage that ran (or tried to) timed under its own key
    timed = {"total_ms"} | {f"{s}_ms" for s in ("lexical", "semantic") if ran[s]}
    if "semantic" in requested and semantic != "none":
        timed.add("embed_ms")  # the query was embedded, or embedding it failed
        if "lexical" in requested and SemanticStage.overlap:  # on a worker, then waited for
            timed.add("embed_wait_ms")
    if "rerank" in requested and ranker != "none":
        timed.add("rank_ms")
    timings_are_milliseconds(answer, wall_ms, timed)


def test_named_modes_are_the_evaluations_stage_sets(served):
    engine, embedder, fake_ranker = served
    embedder.mode = fake_ranker.mode = "ok"
    assert beir.STAGE_SETS == {
        "lexical": ["lexical"],
        "semantic": ["semantic"],
        "hybrid": ["lexical", "semantic"],
        "rerank": ["lexical", "semantic", "rerank"],
    }
    for mode, expected in beir.STAGE_SETS.items():
        answer = engine.reading.search("s-r", "passkey", {"mode": mode})
        assert answer["stages"]["performed"] == expected
        assert answer["mode_used"] == ("hybrid" if mode in ("hybrid", "rerank") else mode)
    with pytest.raises(RpcError) as err:
        engine.reading.search("s-r", "passkey", {"mode": "bm25"})
    assert err.value.message == "mode must be one of lexical, semantic, hybrid, rerank"


def test_the_registry_is_the_one_list_of_stages():
    """In pipeline order; the wire's StageName and the Neovim plugin's stage list (the one the
    picker, the sources and every adapter derive their toggles from) are the registry's."""
    assert [s.name for s in stages.REGISTRY] == ["lexical", "semantic", "fuse", "rerank"]
    assert stages.TOGGLES == ("lexical", "semantic", "rerank") == protocol.StageName.__args__
    assert stages.RETRIEVERS == ("lexical", "semantic")
    lua = (REPO / "lua" / "autodoc" / "stages.lua").read_text()
    table = re.search(r"^return \{\n(.*?)^\}\n\Z", lua, re.S | re.M)
    assert table is not None
    rows = table.group(1).splitlines()
    entry = re.compile(r'  \{ name = "(\w+)", toggle = (true|false), retriever = (true|false) \},')
    listed = [m.groups() if (m := entry.fullmatch(row)) else row for row in rows]
    assert listed == [
        (s.name, str(s.toggle).lower(), str(s.retriever).lower()) for s in stages.REGISTRY
    ]
    assert lua == stages.lua_stage_list(), (
        "run: python -m autodoc.query.stages lua > lua/autodoc/stages.lua"
    )


@pytest.mark.parametrize("name", ["s-r", "s-n", "n-r", "n-n"])
@pytest.mark.parametrize("limit", [1, 10])
def test_a_filters_only_query_browses_the_matching_files_in_path_order(served, name, limit):
    """No words, a path filter: each matching file once, by its first section, in path order;
    nothing ran, every requested stage says why, the ranker's record says it was left out."""
    engine, embedder, fake_ranker = served
    embedder.mode = fake_ranker.mode = "ok"
    t0 = time.perf_counter()
    answer = engine.reading.search(name, "  ", {"paths": ["api/", "guides/"], "limit": limit})
    wall_ms = (time.perf_counter() - t0) * 1000
    protocol.conform(answer, protocol.Answer)
    ws = engine.workspace(name)
    with engine.store.snapshot() as conn:
        firsts = conn.execute(
            "SELECT d.path, min(c.line_start) FROM chunks c JOIN documents d"
            " ON d.id = c.document_id WHERE d.workspace_id = ? AND c.state = 1"
            " AND (d.path LIKE 'api/%' OR d.path LIKE 'guides/%') GROUP BY d.path ORDER BY d.path",
            (ws.id,),
        ).fetchall()
    assert [(h["path"], h["line_start"]) for h in answer["hits"]] == [tuple(r) for r in firsts][
        :limit
    ]
    assert all(
        (h["relevance"], h["score"], h["via"]) == (0.0, 0.0, ["facet"]) for h in answer["hits"]
    )
    assert answer["matched"] == len(firsts) == 3
    assert (answer["mode_used"], answer["fusion"], answer["truncated"], answer["stale"]) == (
        "facet", None, False, [],
    )  # fmt: skip
    assert (answer["workspace"], answer["root"], answer["query"]) == (name, str(ws.root), "  ")
    assert answer["stages"] == {
        "requested": list(stages.TOGGLES),
        "performed": [],
        "skipped": {s: "the query has only facet filters" for s in stages.TOGGLES},
        "engines": {},  # no store searched
    }
    if name.endswith("-r"):
        assert answer["rank"] == {
            "state": "skipped", "model": "rr", "error": "the query has only facet filters",
        }  # fmt: skip
    else:
        assert answer["rank"] == {"state": "off", "model": "", "error": "no ranker configured"}
    if name.startswith("s-"):
        assert answer["semantic"] == "ready" and answer["model"] != ""
        chunks = engine.workspaces.workspace_list()[0]["chunks"]
        assert answer["semantic_coverage"] == {"embedded": chunks, "total": chunks}
    else:
        assert (answer["semantic"], answer["semantic_coverage"], answer["model"]) == (
            "off",
            None,
            "",
        )
    timings_are_milliseconds(answer, wall_ms, {"filter_ms", "total_ms"})


def timings_are_milliseconds(answer: dict, wall_ms: float, keys: set[str]) -> None:
    """Each timing in ms to 2 decimals, within the call's own wall time; the total most of it."""
    timings = answer["timings"]
    assert set(timings) == keys and answer["took_ms"] == timings["total_ms"]
    for value in timings.values():
        assert isinstance(value, float) and round(value, 2) == value
        assert 0 <= value <= timings["total_ms"] <= wall_ms
    assert timings["total_ms"] >= 0.1 * wall_ms

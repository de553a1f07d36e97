"""Stage 3: a cross-encoder reorders the top of the fused list, or leaves it and says why."""

from __future__ import annotations

import itertools

import pytest

from autodoc.models.rankers import HttpRanker, RankFailed
from autodoc.wire.errors import RpcError

from ..conftest import lexical_workspace, write
from ..fake_rankers import FakeRanker, tiny_cross_encoder

ANIMALS = {
    "savanna-zebra.md": "# Zebra\n\nThe savanna zebra grazes in herds on the savanna.\n",
    "savanna-giraffe.md": "# Giraffe\n\nThe savanna giraffe browses on tall savanna trees.\n",
}


@pytest.fixture
def kb(rpc, vault):
    """A vault where BM25 puts plain 'savanna' notes first and the animals further down."""
    for i in range(14):
        write(vault, f"plain-{i:02d}.md", f"# Plain {i}\n\nsavanna savanna savanna note {i}.\n")
    for rel, text in ANIMALS.items():
        write(vault, rel, text)
    lexical_workspace(rpc, vault, "kb")
    return rpc


def search(rpc, query="savanna", **opts):
    return rpc.call("search.query", ["kb", query, {"limit": 16, **opts}])


def use_tiny_model(rpc, tmp_path, window=10, **extra):
    folder = tiny_cross_encoder(tmp_path / "tiny-ce", {"zebra": 5.0, "giraffe": 0.5})
    spec = {"provider": "onnx", "path": str(folder), "window": window, **extra}
    rpc.call("workspace.configure", ["kb", {"ranker": spec}])
    return folder


def test_without_a_ranker_rerank_is_off_and_says_why(kb):
    answer = search(kb)
    assert answer["rank"] == {"state": "off", "model": "", "error": "no ranker configured"}
    assert answer["stages"]["skipped"]["rerank"] == "no ranker configured"
    assert "rerank" not in answer["stages"]["performed"]


@pytest.mark.parametrize("bad", [9, 101, "40", True])
def test_window_bounds(kb, tmp_path, bad):
    with pytest.raises(RpcError) as err:
        search(kb, window=bad)
    assert err.value.code == -32602
    with pytest.raises(RpcError) as err:
        kb.call(
            "workspace.configure",
            ["kb", {"ranker": {"provider": "onnx", "path": "x", "window": bad}}],
        )
    assert err.value.code == -32602


def test_the_onnx_ranker_reorders_the_window_and_keeps_the_rest(kb, tmp_path):
    fused = [h["chunk_id"] for h in search(kb, stages=["lexical"])["hits"]]
    use_tiny_model(kb, tmp_path, window=16)
    answer = search(kb)
    assert answer["rank"]["state"] == "ready" and answer["rank"]["model"] == "tiny-ce"
    assert answer["stages"]["performed"] == ["lexical", "rerank"]
    paths = [h["path"] for h in answer["hits"]]
    assert paths[:2] == ["savanna-zebra.md", "savanna-giraffe.md"]  # by the model's weights
    scores = [h["rank_score"] for h in answer["hits"]]
    assert scores == sorted(scores, reverse=True)
    assert all(h["via"][-1] == "rank" for h in answer["hits"])
    assert sorted(h["chunk_id"] for h in answer["hits"]) == sorted(fused)
    # A smaller window: only its hits are re-sorted; the ones below keep their fused order.
    answer = search(kb, window=10)
    ids = [h["chunk_id"] for h in answer["hits"]]
    assert sorted(ids[:10]) == sorted(fused[:10]) and ids[10:] == fused[10:]
    assert all("rank" not in h["via"] and "rank_score" not in h for h in answer["hits"][10:])
    # Ties on rank_score fall back to the stable chunk id.
    top = answer["hits"][:10]
    for a, b in itertools.pairwise(top):
        assert (a["rank_score"], -a["chunk_id"]) >= (b["rank_score"], -b["chunk_id"])


def test_a_search_that_leaves_rerank_out_is_never_ranked(kb, tmp_path):
    use_tiny_model(kb, tmp_path)
    status = kb.call("index.status", ["kb"])
    before = status["rank"]["meter"]["texts"]
    answer = search(kb, stages=["lexical"])
    assert answer["rank"] == {"state": "skipped", "model": "tiny-ce", "error": "not requested"}
    assert kb.call("index.status", ["kb"])["rank"]["meter"]["texts"] == before
    search(kb)  # with rerank: the window is scored and metered
    meter = kb.call("index.status", ["kb"])["rank"]["meter"]
    assert meter["texts"] == before + 10 and meter["calls"] >= 1 and meter["tokens"] > 0


def test_a_missing_model_folder_leaves_the_fused_order(kb, tmp_path):
    kb.call(
        "workspace.configure",
        ["kb", {"ranker": {"provider": "onnx", "path": str(tmp_path / "nope")}}],
    )
    answer = search(kb)
    assert answer["rank"]["state"] == "off"
    assert answer["rank"]["error"].startswith("ranker unavailable")
    assert answer["stages"]["skipped"]["rerank"] == answer["rank"]["error"]


@pytest.mark.parametrize("kind", ["tei", "cohere"])
def test_http_rankers_round_trip(kb, monkeypatch, kind):
    monkeypatch.setenv("AUTODOC_RANK_API_KEY", "sekrit")
    with FakeRanker(kind) as server:
        spec = {"provider": kind, "base_url": server.url, "model": "rr-1", "window": 10}
        kb.call("workspace.configure", ["kb", {"ranker": spec}])
        answer = search(kb, "zebra savanna herds")
        assert answer["rank"]["state"] == "ready"
        assert answer["hits"][0]["path"] == "savanna-zebra.md"
        [req] = server.requests
        assert req["headers"]["Authorization"] == "Bearer sekrit"
        body = req["body"]
        assert body["query"] == "zebra savanna herds"
        texts = body["texts"] if kind == "tei" else body["documents"]
        assert len(texts) == min(
            10, len(search(kb, "zebra savanna herds", stages=["lexical"])["hits"])
        )
        assert all("\n" in t for t in texts)  # breadcrumb + body
        if kind == "cohere":
            assert req["path"] == "/v1/rerank" and body["model"] == "rr-1"
            assert body["top_n"] == len(texts)
        else:
            assert req["path"] == "/rerank"
        # The key is never logged or echoed in the answer.
        assert "sekrit" not in repr(answer) and "sekrit" not in repr(
            kb.call("index.status", ["kb"])
        )


@pytest.mark.parametrize("mode", ["fail", "slow", "partial"])
def test_a_failing_or_slow_ranker_keeps_the_fused_order(kb, mode):
    fused = [h["chunk_id"] for h in search(kb, stages=["lexical"])["hits"]]
    with FakeRanker("tei") as server:
        server.mode = mode
        spec = {"provider": "tei", "base_url": server.url, "timeout": 0.5}
        kb.call("workspace.configure", ["kb", {"ranker": spec}])
        answer = search(kb)
    assert [h["chunk_id"] for h in answer["hits"]] == fused
    assert answer["rank"]["state"] == "failed"
    assert answer["stages"]["skipped"]["rerank"] == answer["rank"]["error"]
    assert "rerank" not in answer["stages"]["performed"]
    expected = {"fail": "answered 500", "slow": "timed out", "partial": "scored"}[mode]
    assert expected in answer["rank"]["error"]


def test_http_ranker_errors_are_rank_failed():
    ranker = HttpRanker("tei", "http://127.0.0.1:9", timeout=0.5)  # nothing listens there
    with pytest.raises(RankFailed):
        ranker.score("q", ["a"])
    assert ranker.meter.errors == 1


def test_the_default_window_depends_on_where_the_ranker_runs(kb, tmp_path):
    folder = tiny_cross_encoder(tmp_path / "tiny-ce", {"zebra": 5.0})
    kb.call("workspace.configure", ["kb", {"ranker": {"provider": "onnx", "path": str(folder)}}])
    assert kb.call("index.status", ["kb"])["rank"]["window"] == 10  # a local CPU model
    with FakeRanker("tei") as server:
        kb.call(
            "workspace.configure", ["kb", {"ranker": {"provider": "tei", "base_url": server.url}}]
        )
        assert kb.call("index.status", ["kb"])["rank"]["window"] == 40

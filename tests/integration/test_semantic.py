"""Stage 2 and fusion: the bundled model, the vector cache, two-phase search, states, errors."""

from __future__ import annotations

import shutil
import subprocess
import sys

import numpy as np
import pytest

from autodoc.engine import Engine
from autodoc.index.indexer import Indexer
from autodoc.models.embedders import HttpEmbedder, bundled_embedder, load_embedder
from autodoc.query import fusion, ranking
from autodoc.query.stages.fuse import FuseStage
from autodoc.query.stages.semantic import SemanticStage
from autodoc.store import read_epochs
from autodoc.vectors import embedding_cache, nearest, usearch_index
from autodoc.vectors.embedding_cache import collect_unused, fill
from autodoc.wire.errors import EMBED_FAILED, SWITCHING, UNSUPPORTED, RpcError

from ..conftest import (
    EXAMPLE_VAULT,
    STAGE_SETS,
    corpus,
    fake_openai_engine,
    lexical_workspace,
    write,
)
from ..fake_openai import FakeOpenAI


def search(rpc, ws, query, **opts):
    return rpc.call("search.query", [ws, query, opts])


@pytest.fixture
def sample(rpc, tmp_path):
    root = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, root)
    rpc.call("workspace.add", ["kb", str(root)])
    rpc.call("index.run", ["kb"])
    return rpc, root


def embedder_of(rpc, ws="kb"):
    return rpc.engine.semantic_plan(rpc.engine.workspace(ws)).embedder


# -- the bundled model -------------------------------------------------------------------------


def test_bundled_model_meaning_and_optimised_graph():
    e = bundled_embedder()
    v = e.embed(["why did we pick SQLite", "we chose an embedded relational store", "a cat"])
    assert v.shape == (3, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > 0.3 > v[0] @ v[2] + 0.2
    plain = bundled_embedder(optimise=False)
    cos = (plain.embed(["why did we pick SQLite"]) * e.embed(["why did we pick SQLite"])).sum()
    assert cos > 0.98
    assert e.model_fp == plain.model_fp  # the fingerprint names the shipped weights


def test_usearch_and_onnxruntime_import_in_either_order():
    for first, second in (("usearch.index", "onnxruntime"), ("onnxruntime", "usearch.index")):
        code = f"import {first}, {second}; print('ok')"
        proc = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0 and proc.stdout.strip() == "ok", (first, proc.stderr[-500:])


# -- hybrid on the sample vault ----------------------------------------------------------------


def test_meaning_finds_the_decision_and_exact_tokens_still_win(sample):
    rpc, _ = sample
    answer = search(rpc, "kb", "why did we pick SQLite", limit=3)
    assert answer["mode_used"] == "hybrid" and answer["semantic"] == "ready"
    top = answer["hits"][0]
    assert top["path"] == "adr/0003-embedded-sqlite-store.md"
    assert "semantic" in top["via"]
    semantic_only = search(
        rpc, "kb", "which embedded relational database did we choose", stages=["semantic"], limit=3
    )
    assert semantic_only["mode_used"] == "semantic"
    assert semantic_only["hits"][0]["path"] == "adr/0003-embedded-sqlite-store.md"
    for token in ("reclaimBatch", "-32069", "3f2a9c1"):
        hit = search(rpc, "kb", token)["hits"][0]
        assert hit["path"] == "adr/0003-embedded-sqlite-store.md"
        assert "lexical" in hit["via"], token


def test_answer_carries_states_coverage_and_relevance(sample):
    rpc, _ = sample
    answer = search(rpc, "kb", "writer lease")
    cov = answer["semantic_coverage"]
    assert cov["embedded"] == cov["total"] > 0
    assert all(0 < h["relevance"] <= 1 for h in answer["hits"])
    both = [h for h in answer["hits"] if h["via"] == ["lexical", "semantic"]]
    assert both, "some hits are found by both stages"
    assert answer["stages"]["performed"] == ["lexical", "semantic"]
    assert "embed_ms" in answer["timings"]


def test_a_search_that_leaves_a_stage_out_never_runs_it(sample):
    rpc, _ = sample
    meter = embedder_of(rpc).meter
    before = meter.texts
    answer = search(rpc, "kb", "lease", stages=["lexical"])
    assert meter.texts == before and answer["mode_used"] == "lexical"
    assert all(h["via"] == ["lexical"] for h in answer["hits"])


# -- the vector cache --------------------------------------------------------------------------


def test_identical_texts_share_a_vector_and_an_edit_reembeds_one_section(rpc, vault):
    same = "## Shared\nThe same boilerplate paragraph in every file.\n"
    for name in ("a", "b", "c"):
        write(vault, f"{name}.md", f"# Doc\n\n{same}\n## Own\nText unique to {name}.\n")
    rpc.call("workspace.add", ["kb", str(vault)])
    first = rpc.call("index.run", ["kb"])
    # 3 files x 2 sections, but the shared section (same breadcrumb and text) is embedded once
    assert first["chunks"] == 6 and first["embedding"]["embedded"] == 4
    meter = embedder_of(rpc).meter
    before = meter.texts
    (vault / "b.md").write_text(f"# Doc\n\n{same}\n## Own\nText unique to b, edited.\n")
    again = rpc.call("index.run", ["kb"])
    assert again["embedding"]["embedded"] == 1 and meter.texts - before == 1

    def vectors():
        with rpc.engine.store.snapshot() as conn:
            return conn.execute("SELECT count(*) FROM embeddings").fetchone()[0]

    assert vectors() == 5  # the replaced chunk's vector stays while readers may still see it
    ws = rpc.engine.workspace("kb")
    Indexer(rpc.engine.store, rpc.engine.lexical(ws), ws).purge_retired(grace=0)
    collect_unused(rpc.engine.store, ws, {ws.active_model_fp})
    assert vectors() == 4


def test_a_document_answers_lexically_until_every_chunk_has_a_vector(sample):
    rpc, _ = sample
    engine = rpc.engine
    with engine.store.transaction() as conn:  # one section of ADR 0003 loses its vector
        conn.execute(
            "DELETE FROM embeddings WHERE text_hash = (SELECT c.text_hash FROM chunks c"
            " JOIN documents d ON d.id = c.document_id WHERE d.path = ? AND c.state = 1"
            " ORDER BY c.ordinal DESC LIMIT 1)",
            ("adr/0003-embedded-sqlite-store.md",),
        )
        conn.execute("UPDATE workspaces SET vector_epoch = vector_epoch + 1")
    answer = search(rpc, "kb", "embedded relational store decision", limit=20)
    assert answer["semantic"] == "partial"
    cov = answer["semantic_coverage"]
    assert cov["embedded"] == cov["total"] - 1
    adr = [h for h in answer["hits"] if h["path"] == "adr/0003-embedded-sqlite-store.md"]
    assert adr and all("semantic" not in h["via"] for h in adr)  # lexical only, for now
    assert rpc.call("index.run", ["kb"])["embedding"]["embedded"] == 1  # resumes, 1 text
    assert search(rpc, "kb", "embedded relational store")["semantic"] == "ready"


def test_an_interrupted_fill_resumes_without_recomputing(rpc, vault, monkeypatch):
    monkeypatch.setattr(embedding_cache, "FILL_BATCH", 32)  # several transactions for 150 texts
    for i in range(5):
        write(vault, f"n{i}.md", "".join(f"## S{j}\nnote {i} section {j}\n\n" for j in range(30)))
    lexical_workspace(rpc, vault, "kb")
    store = rpc.engine.store
    ws = store.set_options(rpc.engine.workspace("kb"), {"embedding": {"provider": "bundled"}})
    # a fill stopped after its first batch, as a killed process would leave it
    import threading

    stop = threading.Event()
    done = fill(rpc.engine.store, ws, embedder_of(rpc), lambda d, t: stop.set(), stop)
    assert 0 < done < 150
    meter = embedder_of(rpc).meter
    before = meter.texts
    rest = rpc.call("index.run", ["kb"])["embedding"]
    assert rest["embedded"] == 150 - done and meter.texts - before == 150 - done
    assert rest["coverage"] == {"embedded": 150, "total": 150}


# -- two-phase vector search -------------------------------------------------------------------


def test_binary_prefilter_then_float_rescore_matches_exact_search(rpc, vault):
    for i in range(60):
        write(vault, f"doc{i:02}.md", f"# Topic {i}\n\nParagraph {i} about subject {i % 7}.\n")
    rpc.call("workspace.add", ["kb", str(vault)])
    rpc.call("index.run", ["kb"])
    engine = rpc.engine
    ws = engine.workspace("kb")
    emb = embedder_of(rpc)
    with engine.store.snapshot() as conn:
        rows = conn.execute(
            "SELECT c.id, e.f32 FROM chunks c JOIN embeddings e ON e.text_hash = c.text_hash"
            " WHERE c.state = 1"
        ).fetchall()
    matrix = np.stack([np.frombuffer(r[1], dtype=np.float32) for r in rows])
    q = emb.embed(["subject 3 paragraph"])[0]
    exact = [rows[i][0] for i in np.argsort(-(matrix @ q), kind="stable")[:10]]
    answer = search(rpc, "kb", "subject 3 paragraph", stages=["semantic"], limit=10)
    got = [h["chunk_id"] for h in answer["hits"]]
    assert len(set(got) & set(exact)) >= 9
    assert ws.active_model_fp is not None


def _bulk_and_rare(rpc, vault) -> None:
    for i in range(150):
        write(vault, f"bulk/n{i:03}.md", f"# Deploy {i}\n\nDeployment pipeline step {i}.\n")
    for i in range(3):
        write(vault, f"rare/r{i}.md", f"# Cake {i}\n\nA recipe for lemon cake {i}.\n")
    rpc.call("workspace.add", ["kb", str(vault)])
    rpc.call("index.run", ["kb"])


def _spy(monkeypatch, owner, name: str) -> list:
    calls = []
    original = getattr(owner, name)

    def spy(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, spy)
    return calls


def test_a_narrow_filter_scans_only_its_documents(rpc, vault, monkeypatch):
    _bulk_and_rare(rpc, vault)
    shortlists = _spy(monkeypatch, usearch_index.VectorIndex, "shortlist")
    subsets = _spy(monkeypatch, nearest, "_subset")
    # the stage's own order (a fixed fusion lists every hit; the learned one floors them)
    answer = search(
        rpc, "kb", "deployment pipeline", stages=["semantic"], paths=["rare/"], fusion="rrf"
    )
    assert sorted(h["path"] for h in answer["hits"]) == ["rare/r0.md", "rare/r1.md", "rare/r2.md"]
    assert not shortlists and len(subsets) == 1  # 3 of 153 documents: their vectors only
    assert answer["truncated"] is False


def test_a_wide_filter_that_starves_the_shortlist_scans_its_documents(rpc, vault, monkeypatch):
    _bulk_and_rare(rpc, vault)
    monkeypatch.setattr(nearest, "SUBSET_SHARE", 0.0)  # as if the filter kept many documents
    monkeypatch.setattr(usearch_index, "SHORTLIST", 20)
    monkeypatch.setattr(nearest, "MAX_READ", 120)
    shortlists = _spy(monkeypatch, usearch_index.VectorIndex, "shortlist")
    subsets = _spy(monkeypatch, nearest, "_subset")
    # the stage's own order (a fixed fusion lists every hit; the learned one floors them)
    answer = search(
        rpc, "kb", "deployment pipeline", stages=["semantic"], paths=["rare/"], fusion="rrf"
    )
    assert sorted(h["path"] for h in answer["hits"]) == ["rare/r0.md", "rare/r1.md", "rare/r2.md"]
    assert [c[3] for c in shortlists] == [100, 120]  # read, then deeper: still no cake
    assert len(subsets) == 1  # then only the kept documents' vectors
    assert answer["truncated"] is False


# -- fusion ------------------------------------------------------------------------------------


def test_rrf_arithmetic_from_the_peer_spec():
    fused = fusion.rrf(
        [
            ("lexical", [(1, 1), (2, 2)]),
            ("semantic", [(1, 1), (3, 3), (2, 2)]),
        ]
    )
    scores = {f.chunk_id: round(f.score, 4) for f in fused}
    assert scores == {1: 0.0328, 2: 0.032, 3: 0.0161}
    assert [f.chunk_id for f in fused] == [1, 2, 3]
    assert fused[0].via == ["lexical", "semantic"]
    assert fusion.relevance(fused[0].score, 2) == 1.0
    assert round(fusion.relevance(fused[2].score, 2), 3) == round((1 / 62) / (2 / 61), 3)
    tie = fusion.rrf([("lexical", [(9, 1)]), ("semantic", [(4, 2)])])
    # Equal scores: the better lexical rank first, whatever the ids (they differ between two
    # stores of the same files; ranks do not).
    assert [f.chunk_id for f in tie] == [9, 4]


def test_boosts():
    hits = fusion.rrf([("lexical", [(1, 1), (2, 2)])])
    boosted = fusion.apply_boosts(hits, {2}, {})
    assert [h.chunk_id for h in boosted] == [2, 1]  # x1.2 lifts rank 2 over rank 1
    assert fusion.link_factor(0) == 1.0
    assert (
        fusion.link_factor(1)
        < fusion.link_factor(10)
        < fusion.link_factor(31)
        == pytest.approx(1.1)
    )
    assert fusion.link_factor(1000) == pytest.approx(1.1)


def test_tag_boost_in_a_real_answer(rpc, vault):
    write(vault, "tagged.md", "---\ntags: [billing]\n---\n# Invoices\n\nMonthly billing runs.\n")
    write(vault, "plain.md", "# Invoices too\n\nMonthly billing runs.\n")
    lexical_workspace(rpc, vault, "kb")
    hits = search(rpc, "kb", "billing", fusion="rrf")["hits"]  # the fixed fusions' tag boost
    assert hits[0]["path"] == "tagged.md"
    assert hits[0]["score"] == pytest.approx(1.2 / 61, rel=1e-3)


def test_superseded_document_moves_below_its_successor(sample):
    rpc, _ = sample
    hits = search(rpc, "kb", "store documents postgres embedded relational store", limit=20)["hits"]
    paths = [h["path"] for h in hits]
    old, new = "adr/0002-store-documents-in-postgres.md", "adr/0003-embedded-sqlite-store.md"
    assert old in paths and new in paths
    # the older record's hits sit directly below its successor's last hit (issue 55, spec §4;
    # issue 41: they only move down, the successor's hits are not gathered up)
    last_new = max(i for i, p in enumerate(paths) if p == new)
    assert paths.index(old) == last_new + 1
    assert all(h["superseded_by"] == new for h in hits if h["path"] == old)
    off = search(rpc, "kb", "store documents in postgres", retrieval={"demote_superseded": False})
    assert off["hits"][0]["path"] == old and "superseded_by" not in off["hits"][0]


@pytest.mark.corpus
def test_superseded_demotion_on_real_adrs(rpc):
    root = corpus("adr") / "alphagov__govuk-aws"
    rpc.call("workspace.add", ["gov", str(root)])
    rpc.call("index.run", ["gov"])
    old = "docs/architecture/decisions/0004-dns-definitions-for-hosts-and-services.md"
    new = "docs/architecture/decisions/0015-dns-infrastructure.md"
    hits = search(rpc, "gov", "DNS definitions for hosts and services", limit=30)["hits"]
    paths = [h["path"] for h in hits]
    assert old in paths and new in paths
    assert paths.index(old) > paths.index(new)  # below the successor's best hit
    assert {h.get("superseded_by") for h in hits if h["path"] == old} == {new}
    # a sentence about part of a decision does not make it superseded
    with rpc.engine.store.snapshot() as conn:
        olds = {
            r[0]
            for r in conn.execute(
                "SELECT d.path FROM supersessions s JOIN documents d ON d.id = s.old_id"
            )
        }
    assert old in olds
    assert "docs/architecture/decisions/0003-aws-networking-outline.md" not in olds


@pytest.mark.corpus
def test_the_decision_in_force_comes_first_for_the_old_decisions_words(rpc):
    root = corpus("adr") / "ministryofjustice__modernisation-platform"
    lexical_workspace(rpc, root, "mp")
    old = "architecture-decision-record/0004-use-bash-node-python-as-core-languages.md"
    # 0004's status line: "⌛️ Superseded [0019](0019-use-bash-go-as-core-languages.md)"
    new = "architecture-decision-record/0019-use-bash-go-as-core-languages.md"
    hits = search(rpc, "mp", "core languages bash nodejs python")["hits"]
    paths = [h["path"] for h in hits]
    plain = search(rpc, "mp", "core languages bash nodejs python",
                   retrieval={"demote_superseded": False})["hits"]  # fmt: skip
    assert plain[0]["path"] == old  # the old decision's own words rank it first...
    # ...it goes right below the decision in force, all of its hits (issue 55), which is not
    # lifted over the hits between
    assert paths.index(old) == max(i for i, p in enumerate(paths) if p == new) + 1
    assert {h.get("superseded_by") for h in hits if h["path"] == old} == {new}
    named = search(rpc, "mp", '"bash, nodejs, and python"')["hits"]  # a quoted phrase: kept
    assert named[0]["path"] == old


@pytest.mark.corpus
def test_a_successor_named_by_number_comes_first(rpc):
    """Hydra's statuses link the site (`Superseded by [ADR 32](/adr/32)`, not a file) and
    Decentraland's frontmatter says `deprecated-reason: … See ADR-293.`: the record numbers
    find the successors, and a query in the old record's words gets the one in force first."""
    root = corpus("adr")
    for name in ("cardano-scaling__hydra", "decentraland__adr"):
        lexical_workspace(rpc, root / name, name)
    hydra = "docs/adr/2025-02-12_032-network-properties-etcd.md"
    hits = search(rpc, "cardano-scaling__hydra", "hydra networking over udp")["hits"]
    assert hits[0]["path"] == hydra
    old = {h["path"]: h.get("superseded_by") for h in hits if h.get("superseded_by")}
    assert old["docs/adr/2022-03-28_017-udp-networking.md"] == hydra
    hits = search(rpc, "decentraland__adr", "emotes system for the unity renderer")["hits"]
    assert hits[0]["path"] == "content/ADR-293-explorer-emotes-system.md"
    first_old = next(h for h in hits if h.get("superseded_by"))
    assert first_old["path"] == "content/ADR-66-emotes-system-for-renderer.md"


# -- providers, switching and errors -----------------------------------------------------------


def test_openai_protocol_round_trip_and_key_handling(monkeypatch, caplog):
    monkeypatch.setenv("TEST_EMBED_KEY", "sk-secret-123")
    with FakeOpenAI(dim=64) as server:
        e = HttpEmbedder(
            server.url, "text-embedding-3-small", dimensions=32, api_key_env="TEST_EMBED_KEY"
        )
        v = e.embed(["alpha beta", "gamma", "alpha beta"])
        assert v.shape == (3, 32) and np.allclose(v[0], v[2])
        req = server.requests[-1]
        assert req["path"] == "/v1/embeddings"
        assert req["body"]["model"] == "text-embedding-3-small"
        assert req["body"]["input"] == ["alpha beta", "gamma", "alpha beta"]
        assert req["body"]["dimensions"] == 32
        assert req["headers"]["Authorization"] == "Bearer sk-secret-123"
        assert e.meter.to_dict()["texts"] == 3 and e.meter.tokens > 0
        for mode, needle in (
            ("fail", "500"),
            ("garbage", "invalid JSON"),
            ("wrong-count", "expected"),
        ):
            server.mode = mode
            with pytest.raises(RpcError) as err:
                e.embed(["x", "y"])
            assert err.value.code == EMBED_FAILED and needle in err.value.message
        server.mode = "slow"
        slow = HttpEmbedder(server.url, "m", dimensions=8, timeout=0.5)
        with pytest.raises(RpcError) as err:
            slow.embed(["x"])
        assert err.value.code == EMBED_FAILED
    assert "sk-secret-123" not in caplog.text
    with pytest.raises(RpcError) as err:
        load_embedder({"provider": "openai", "base_url": "http://x", "model": "m", "api_key": "k"})
    assert "environment" in err.value.message


def test_model_switch_fills_in_the_background_of_the_old_set(sample):
    rpc, _ = sample
    with FakeOpenAI(dim=64) as server:
        spec = {"provider": "openai", "base_url": server.url, "model": "fake", "dimensions": 64}
        server.mode = "fail"  # the new model fails part-way: nothing of it is complete
        out = rpc.call("workspace.configure", ["kb", {"embedding": spec}])
        assert (
            out["reindexed"]["embedding"]["error"] or out["reindexed"]["embedding"]["embedded"] == 0
        )
        answer = search(rpc, "kb", "why did we pick SQLite")
        assert answer["semantic"] == "switching"  # the old, complete set still answers
        assert answer["mode_used"] == "hybrid"
        assert answer["hits"][0]["path"] == "adr/0003-embedded-sqlite-store.md"
        server.mode = "ok"
        done = rpc.call("index.run", ["kb"])["embedding"]
        assert done["coverage"]["embedded"] == done["coverage"]["total"]
        answer = search(rpc, "kb", "writer lease")
        assert answer["semantic"] == "ready" and answer["model"] == "fake"
        assert rpc.engine.workspace("kb").active_model_fp == done["model_fp"]
        with rpc.engine.store.snapshot() as conn:  # the old model's vectors were collected
            fps = {r[0] for r in conn.execute("SELECT DISTINCT model_fp FROM embeddings")}
        assert fps == {done["model_fp"]}


def test_semantic_only_errors(sample, monkeypatch):
    rpc, _ = sample
    with FakeOpenAI(dim=16) as server:
        spec = {"provider": "openai", "base_url": server.url, "model": "q", "dimensions": 16}
        rpc.call("workspace.configure", ["kb", {"embedding": spec}])
        server.mode = "fail"  # the query cannot be embedded
        with pytest.raises(RpcError) as err:
            search(rpc, "kb", "lease", stages=["semantic"])
        assert err.value.code == EMBED_FAILED
        answer = search(rpc, "kb", "lease")
        assert "embedding the query failed" in answer["stages"]["skipped"]["semantic"]
        assert answer["mode_used"] == "lexical" and answer["hits"]
    # a switch with no usable old set: the old spec can no longer load
    with rpc.engine.store.transaction() as conn:
        conn.execute(
            "UPDATE workspaces SET active_embedding = ?, active_model_fp = 'gone'",
            ('{"provider": "onnx", "model": "/nonexistent.onnx", "tokenizer": "/x.json"}',),
        )
    rpc.call("workspace.configure", ["kb", {"embedding": "bundled"}])
    with rpc.engine.store.transaction() as conn:  # as if the fill had not finished yet
        conn.execute(
            "UPDATE workspaces SET active_embedding = ?, active_model_fp = 'gone'",
            ('{"provider": "onnx", "model": "/nonexistent.onnx", "tokenizer": "/x.json"}',),
        )
    with pytest.raises(RpcError) as err:
        search(rpc, "kb", "lease", stages=["semantic"])
    assert err.value.code == SWITCHING
    answer = search(rpc, "kb", "lease")
    assert answer["stages"]["skipped"]["semantic"] == "a new embedding model is filling"
    assert answer["semantic"] == "switching"
    rpc.call("workspace.configure", ["kb", {"embedding": "none"}])
    with pytest.raises(RpcError) as err:
        search(rpc, "kb", "lease", stages=["semantic"])
    assert err.value.code == UNSUPPORTED


def test_status_reports_the_model_and_its_meter(sample):
    rpc, _ = sample
    status = rpc.call("index.status", ["kb"])
    assert status["semantic"] == "ready"
    assert status["embedding"]["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert status["embedding"]["dim"] == 384
    assert status["semantic_coverage"]["embedded"] == status["chunks"]
    assert set(status["embedding"]["meter"]) == {"calls", "texts", "tokens", "ms", "errors"}


def test_sign_index_is_saved_and_reloaded_incrementally(sample):
    rpc, _ = sample
    engine = rpc.engine
    ws = engine.workspace("kb")
    emb = embedder_of(rpc)
    saved = engine.store.vectors_root / f"{ws.id}-{emb.model_fp}.usearch"
    assert saved.with_suffix(".json").is_file()
    fresh = usearch_index.VectorIndex(emb.dim, saved, engine.store.store_id)
    with engine.store.snapshot() as conn:
        n = conn.execute("SELECT count(*) FROM embeddings").fetchone()[0]
        assert len(fresh.index) == n and fresh.max_id > 0  # loaded, not rebuilt
        fresh.refresh(conn, ws.id, emb.model_fp, 10**6)
    assert len(fresh.index) == n
    stranger = usearch_index.VectorIndex(emb.dim, saved, "another-store")
    assert len(stranger.index) == 0  # a file from another store is never trusted
    rpc.call("workspace.remove", ["kb"])
    assert not list(saved.parent.glob(f"{saved.stem}.*"))


def test_background_embedding_serves_lexical_answers_meanwhile(rpc, vault):
    for i in range(40):
        write(
            vault, f"n{i:02}.md", "".join(f"## Part {j}\nnotes {i} part {j}\n\n" for j in range(8))
        )
    engine = rpc.engine
    engine.workspaces.workspace_add("kb", str(vault))
    summary = engine.indexing.index_run("kb", wait=False)  # returns after the lexical write
    assert summary["embedding"] == {"background": True}
    early = search(rpc, "kb", "notes part")
    assert early["hits"] and early["semantic"] == "partial"  # 320 texts take seconds to embed
    engine.indexing._workers["kb"].join(timeout=120)
    done = search(rpc, "kb", "notes part")
    assert done["semantic"] == "ready"
    assert done["semantic_coverage"]["embedded"] == done["semantic_coverage"]["total"] == 320


def test_the_semantic_state_is_reported_when_the_stage_is_left_out(sample):
    rpc, _ = sample
    full = rpc.call("search.query", ["kb", "embedded store"])
    lexical = rpc.call("search.query", ["kb", "embedded store", {"stages": ["lexical"]}])
    assert full["semantic"] == lexical["semantic"] == "ready"
    assert lexical["semantic_coverage"] == full["semantic_coverage"]
    assert lexical["stages"]["performed"] == ["lexical"]


def test_coverage_is_kept_incrementally_and_matches_a_full_count(sample):
    """After edits only new and still-missing chunks are looked at; the counts must equal a
    full count at every step (before and after the background fill)."""
    from autodoc.store import vector_coverage as coverage

    rpc, root = sample
    engine = rpc.engine
    ws = engine.workspace("kb")
    fp = embedder_of(rpc).model_fp

    def reported():
        return rpc.call("search.query", ["kb", "store", {"stages": ["lexical"]}])[
            "semantic_coverage"
        ]

    def truth():
        with engine.store.snapshot() as conn:
            embedded, total = coverage(conn, ws.id, fp)
        return {"embedded": embedded, "total": total}

    assert reported() == truth()
    for i in range(3):
        (root / f"new-{i}.md").write_text(f"# New {i}\n\nfresh text number {i} about stores.\n")
        with engine.writing:  # index without the background fill, so vectors are missing
            from autodoc.index.indexer import Indexer

            Indexer(engine.store, engine.lexical(ws), ws).run(paths=[f"new-{i}.md"])
        got = reported()
        assert got == truth() and got["embedded"] < got["total"]
    (root / "new-0.md").unlink()
    engine.indexing.index_paths("kb", ["new-0.md"])
    engine.indexing.embed_run("kb")
    got = reported()
    assert got == truth() and got["embedded"] == got["total"]


def test_the_sign_index_forgets_collected_vectors_even_when_more_arrive(tmp_path):
    """Regression (found by tests/integration/test_reliability.py): vectors collected while more
    new ones
    were added left the count unchanged, so a sign index kept ids SQLite no longer had."""
    root = tmp_path / "vault"
    for i in range(3):
        write(root, f"d{i}.md", f"# D{i}\n\nfirst version of document {i}\n")
    with FakeOpenAI(dim=32) as server:
        engine = fake_openai_engine(tmp_path / "store" / "autodoc.db", root, server.url)
        engine.indexing.index_run("v")
        for i in range(3):  # every old text becomes unused...
            write(root, f"d{i}.md", f"# D{i}\n\nsecond version of document {i}\n")
        engine.indexing.index_run("v")
        ws = engine.workspace("v")
        Indexer(engine.store, engine.lexical(ws), ws).purge_retired(grace=0)
        for i in range(6):  # ...and more new texts arrive than old ones go
            write(root, f"n{i}.md", f"# N{i}\n\na new note {i}\n")
        summary = engine.indexing.index_run("v")  # collects the 3 old vectors, adds 6

        def stale(e: Engine) -> set[int]:
            embedder, _ = e.embedder(ws)
            signs = e.signs(ws, embedder)
            with e.store.snapshot() as conn:  # as a search refreshes it
                signs.refresh(conn, ws.id, ws.active_model_fp, read_epochs(conn, ws.id)[1])
                known = {r[0] for r in conn.execute("SELECT id FROM embeddings")}
            return {int(k) for k in signs.index.keys} - known

        assert summary["embedding"]["coverage"]["embedded"] == summary["chunks"]
        assert stale(engine) == set()
        engine.close()
        reopened = Engine(tmp_path / "store" / "autodoc.db")  # loads the saved index
        assert stale(reopened) == set()
        reopened.close()


def test_a_sign_index_saved_halfway_loads_without_adding_rows_twice(tmp_path):
    """Regression (found by tests/integration/test_reliability.py): the index file and its .json are
    replaced one after the other; a process killed between the two left a newer index beside
    an older max_id, and the next refresh added those rows again (USearch: duplicate keys)."""
    root = tmp_path / "vault"
    write(root, "a.md", "# A\n\nfirst text\n")
    with FakeOpenAI(dim=32) as server:
        engine = fake_openai_engine(tmp_path / "store" / "autodoc.db", root, server.url)
        engine.indexing.index_run("v")
        ws = engine.workspace("v")
        embedder, _ = engine.embedder(ws)
        meta = engine.signs(ws, embedder).path.with_suffix(".json")
        old_meta = meta.read_text()
        for i in range(4):
            write(root, f"n{i}.md", f"# N{i}\n\nnew text {i}\n")
        engine.indexing.index_run("v")  # saves the index with the new rows...
        engine.close()
        meta.write_text(old_meta)  # ...but the .json was never replaced
        reopened = Engine(tmp_path / "store" / "autodoc.db")
        signs = reopened.signs(ws, embedder)
        with reopened.store.snapshot() as conn:
            signs.refresh(conn, ws.id, ws.active_model_fp, read_epochs(conn, ws.id)[1])
            known = {r[0] for r in conn.execute("SELECT id FROM embeddings")}
        assert {int(k) for k in signs.index.keys} == known
        found = reopened.reading.search("v", "new text", {"stages": ["semantic"], "fusion": "rrf"})
        assert len(found["hits"]) == 5
        reopened.close()


# -- confidence fusion (issue 10) ----------------------------------------------------------------


def test_confidence_weights_follow_each_lists_own_scores():
    sharp_lexical = [12.0, 3.0, 2.0]  # few matches, the first far ahead
    flat_lexical = [10.0, 9.8, 9.7, 9.6, 9.5, 9.4, 9.3, 9.2, 9.1, 9.0]
    w_lex, w_sem = fusion.confidence_weights(sharp_lexical, [0.35])
    assert w_lex + w_sem == pytest.approx(2.0) and w_lex > 1.9  # an identifier-like query
    w_lex, w_sem = fusion.confidence_weights(flat_lexical, [0.75])
    assert w_sem > 1.9  # a paraphrase: no word stands out, the meaning does
    assert sum(fusion.confidence_weights([], [])) == pytest.approx(2.0)  # no signal: finite
    # Weighted, relevance keeps its meaning: first in every stage that ran is 1.0.
    fused = fusion.rrf([("lexical", [(1, 1), (2, 2)]), ("semantic", [(1, 1)])], 20, (1.5, 0.5))
    assert fusion.relevance(fused[0].score, 2.0, 20) == 1.0


def test_the_answer_says_which_fusion_ran_and_the_spec_cases_still_come_first(sample):
    rpc, _ = sample
    answer = search(rpc, "kb", "why did we pick sqlite")
    assert answer["fusion"]["method"] == "learned" and answer["fusion"]["k"] == 0
    assert answer["fusion"]["model"] == ranking.active_model().version
    assert answer["hits"][0]["path"] == "adr/0003-embedded-sqlite-store.md"
    convex = search(rpc, "kb", "why did we pick sqlite", fusion="convex")
    assert convex["fusion"]["method"] == "convex" and convex["fusion"]["k"] == 0
    assert convex["fusion"]["weights"] == {"lexical": 0.5, "semantic": 0.5}
    assert convex["hits"][0]["path"] == "adr/0003-embedded-sqlite-store.md"
    weighted = search(rpc, "kb", "why did we pick sqlite", fusion="confidence")
    assert weighted["fusion"]["k"] == 20
    assert sum(weighted["fusion"]["weights"].values()) == pytest.approx(2.0)
    assert weighted["hits"][0]["path"] == "adr/0003-embedded-sqlite-store.md"
    plain = search(rpc, "kb", "why did we pick sqlite", fusion="rrf")
    assert plain["fusion"] == {"method": "rrf", "k": 60, "weights": {"lexical": 1.0,
                               "semantic": 1.0}, "intent": "question"}  # fmt: skip
    assert plain["hits"][0]["relevance"] <= 1.0
    for needle in ("reclaimBatch", "-32069", "3f2a9c1"):  # identifiers, error codes, hex
        top = search(rpc, "kb", needle)["hits"][0]
        text = rpc.call("doc.read", ["kb", top["path"], top["line_start"], top["line_end"]])
        assert needle in text["text"], (needle, top["path"], top["breadcrumb"])
    with pytest.raises(RpcError) as err:
        search(rpc, "kb", "sqlite", fusion="max")
    assert err.value.code == -32602 and err.value.data["field"] == "fusion"


# -- exact names (issue 11, first step) -----------------------------------------------------------


def test_a_documents_exact_title_or_alias_comes_first(sample):
    rpc, _ = sample
    adr = "adr/0003-embedded-sqlite-store.md"
    for query, stages in (
        ("storage decision", None),  # an alias
        ("STORAGE   Decision", ["lexical"]),  # case and spacing do not matter
        ("ADR 0003: Embedded relational store", None),  # the title
    ):
        answer = search(rpc, "kb", query, **({"stages": stages} if stages else {}))
        top = answer["hits"][0]
        assert top["path"] == adr and "exact" in top["via"] and top["relevance"] == 1.0, query
        assert sum(h["path"] == adr for h in answer["hits"]) <= 3  # the cap still holds
    # Semantic only: no lexical tier, no exact pin.
    semantic_only = search(rpc, "kb", "storage decision", stages=["semantic"])
    assert all("exact" not in h["via"] for h in semantic_only["hits"])
    # A filter that leaves the document out leaves its pin out too.
    filtered = search(rpc, "kb", "storage decision", paths=["notes/"])
    assert all(h["path"].startswith("notes/") for h in filtered["hits"])


@pytest.mark.parametrize("stages", STAGE_SETS)
def test_an_answer_after_an_edit_never_shows_the_retired_generation(rpc, vault, stages):
    """Retired chunks stay in the store for a grace period (readers mid-query may still hold
    them): no stage may hand them out."""
    old = "# Retention\n\nKafka keeps events for seven days before compaction removes them.\n"
    new = "# Retention\n\nThe archive keeps invoices for ten years in cold storage.\n"
    write(vault, "a.md", old)
    write(vault, "b.md", "# Other\n\nSomething unrelated about gardening and tomatoes.\n")
    rpc.call("workspace.add", ["kb", str(vault)])
    rpc.call("index.run", ["kb"])
    write(vault, "a.md", new)
    assert rpc.call("index.run", ["kb"])["modified"] == 1
    with rpc.engine.store.snapshot() as conn:  # the old chunk is still there, retired
        states = conn.execute(
            "SELECT c.state, count(*) FROM chunks c JOIN documents d ON d.id = c.document_id"
            " WHERE d.path = 'a.md' GROUP BY c.state"
        ).fetchall()
        generation = conn.execute("SELECT generation FROM documents WHERE path = 'a.md'")
        generation = generation.fetchone()[0]
    assert dict(map(tuple, states)) == {1: 1, 2: 1}
    for query in ("Kafka keeps events for seven days", "archive keeps invoices for ten years"):
        answer = search(rpc, "kb", query, stages=stages, limit=10)
        assert answer["stages"]["performed"] == stages, answer["stages"]
        hits = [h for h in answer["hits"] if h["path"] == "a.md"]
        assert all(h["generation"] == generation for h in hits), hits
        assert not any("Kafka" in h["snippet"] for h in hits)
    assert any(h["path"] == "a.md" for h in answer["hits"])  # the new text is found


FUSION_NOTES = {
    "kafka.md": "Kafka keeps the event log; consumers read the log at their own pace.",
    "postgres.md": "Postgres stores the orders; a nightly job copies the log of changes.",
    "sqlite.md": "SQLite holds the index beside the vault, one file, no server to run.",
    "redis.md": "Redis caches sessions for a day; nothing durable lives there.",
    "s3.md": "Object storage keeps the nightly backups and the audit log for a year.",
    "logging.md": "Application logging goes to stdout; the collector ships each log line.",
    "retention.md": "Retention: events are deleted after seven days, backups after a year.",
    "queue.md": "A message queue decouples the writers from the slow consumers.",
}


@pytest.fixture
def fusion_vault(rpc, vault):
    """One section a document (no tags, links or supersession): nothing but fusion orders."""
    for name, text in FUSION_NOTES.items():
        write(vault, name, f"# {name[:-3].title()} notes\n\n{text}\n")
    rpc.call("workspace.add", ["kb", str(vault)])
    rpc.call("index.run", ["kb"])
    return rpc


@pytest.mark.parametrize("fusion", ["confidence", "rrf"])
def test_fused_order_and_relevance_follow_the_reported_weights_and_k(fusion_vault, fusion):
    """The hybrid answer is recomputed by hand from each stage's own ranking with the weights
    and k the answer reports: scores, order and relevance must all match."""
    rpc, query = fusion_vault, "where is the log kept"
    ranks = {}
    for stage in ("lexical", "semantic"):
        alone = search(rpc, "kb", query, stages=[stage], limit=50, fusion=fusion)["hits"]
        ranks[stage] = {h["chunk_id"]: n for n, h in enumerate(alone, 1)}
    assert len(ranks["lexical"]) >= 4 and len(ranks["semantic"]) == len(FUSION_NOTES)
    answer = search(rpc, "kb", query, fusion=fusion, limit=50)
    k, weights = answer["fusion"]["k"], answer["fusion"]["weights"]
    assert k == (20 if fusion == "confidence" else 60)
    if fusion == "confidence":  # a query where the votes differ, or the test proves nothing
        assert abs(weights["lexical"] - weights["semantic"]) > 0.2, weights
    expected = {
        cid: sum(weights[s] / (k + ranks[s][cid]) for s in ranks if cid in ranks[s])
        for cid in set(ranks["lexical"]) | set(ranks["semantic"])
    }
    got = [h["chunk_id"] for h in answer["hits"]]
    assert got == sorted(expected, key=lambda c: (-expected[c], got.index(c)))
    top_possible = sum(weights.values()) / (k + 1)
    for h in answer["hits"]:
        assert h["score"] == pytest.approx(expected[h["chunk_id"]], abs=1e-6)
        assert h["relevance"] == pytest.approx(min(1.0, h["score"] / top_possible), abs=1e-4)


def test_convex_order_and_scores_follow_each_stages_scaled_scores(fusion_vault, monkeypatch):
    """The default fusion recomputed by hand from what each stage handed it (its chunks and raw
    scores: BM25, cosines) with the shares the answer reports."""
    seen: dict = {}
    run = FuseStage.run

    def spy(self, ctx, conn):
        seen.update(
            ranked=[(s, list(i)) for s, i in ctx.results.ranked], signals=dict(ctx.results.signals)
        )
        return run(self, ctx, conn)

    monkeypatch.setattr(FuseStage, "run", spy)
    answer = search(fusion_vault, "kb", "where is the log kept", limit=50, fusion="convex")
    assert (answer["fusion"]["method"], answer["fusion"]["k"]) == ("convex", 0)
    weights = answer["fusion"]["weights"]
    assert weights == {"lexical": 0.5, "semantic": 0.5}
    floors = {"lexical": 0.0, "semantic": 0.1}
    expected: dict[int, float] = {}
    for stage, items in seen["ranked"]:
        scores = seen["signals"][stage]
        assert len(scores) == len(items) >= 4
        capped = [min(scores[: i + 1]) for i in range(len(scores))]  # the stage's order stands
        top = capped[0]
        for (cid, _), x in zip(items, capped, strict=True):
            part = weights[stage] * max(0.0, x - floors[stage]) / (top - floors[stage])
            expected[cid] = expected.get(cid, 0.0) + part
    got = [h["chunk_id"] for h in answer["hits"]]
    assert sorted(got) == sorted(expected)
    assert got == sorted(expected, key=lambda c: (-expected[c], got.index(c)))
    for h in answer["hits"]:
        assert h["score"] == pytest.approx(expected[h["chunk_id"]], abs=1e-6)
        assert h["relevance"] == pytest.approx(min(1.0, expected[h["chunk_id"]]), abs=1e-4)


@pytest.mark.parametrize(
    "query, intent",
    [("log*", "prefix"), ('"the audit log"', "phrase"), ("retention 7", "number")],
)
def test_a_query_that_names_its_words_is_answered_lexical_first(fusion_vault, query, intent):
    """Number, identifier, path, phrase and prefix queries: under a fixed fusion the lexical
    order stands and a hit only meaning found comes below every lexical hit, in its semantic
    order; under the learned one, every hit the words found still comes first."""
    rpc = fusion_vault

    def order(**opts):
        return [h["chunk_id"] for h in search(rpc, "kb", query, **opts)["hits"]]

    lexical = order(stages=["lexical"], fusion="convex")
    semantic = order(stages=["semantic"], fusion="convex")
    learned = order(limit=len(FUSION_NOTES))
    found = [c in lexical for c in learned]
    assert found == sorted(found, reverse=True) and found[0]  # the words' hits first
    answer = search(rpc, "kb", query, limit=len(FUSION_NOTES), fusion="convex")
    assert answer["fusion"]["intent"] == intent
    assert answer["fusion"]["weights"] == {"lexical": 1.0, "semantic": 0.0}
    assert lexical and set(semantic) - set(lexical)  # both stages have something to say
    got = [h["chunk_id"] for h in answer["hits"]]
    assert got == lexical + [c for c in semantic if c not in lexical][: len(got) - len(lexical)]
    # A question in words is fused by both stages' votes.
    asked = search(rpc, "kb", "where is the log kept", fusion="convex")
    assert asked["fusion"]["intent"] == "question" and asked["fusion"]["weights"]["semantic"] > 0


def test_a_query_embedded_beside_the_lexical_stage_gives_the_same_answer(sample, monkeypatch):
    """SemanticStage.overlap (off by default: no gain measured on 2 cores): the query is
    embedded on a worker while the lexical stage runs; the answer is the same, the wait is
    timed, a semantic-only search still embeds first, and a provider error answers lexically."""
    rpc, _ = sample
    text = "why did we pick SQLite"
    plain = search(rpc, "kb", text)
    monkeypatch.setattr(SemanticStage, "overlap", True)
    beside = search(rpc, "kb", text)
    assert [(h["path"], h["line_start"]) for h in beside["hits"]] == [
        (h["path"], h["line_start"]) for h in plain["hits"]
    ]
    assert [h["score"] for h in beside["hits"]] == pytest.approx(
        [h["score"] for h in plain["hits"]], abs=1e-4
    )
    assert "embed_wait_ms" in beside["timings"] and "embed_wait_ms" not in plain["timings"]
    alone = search(rpc, "kb", text, stages=["semantic"])
    assert "embed_wait_ms" not in alone["timings"] and alone["mode_used"] == "semantic"
    with FakeOpenAI(dim=16) as server:
        spec = {"provider": "openai", "base_url": server.url, "model": "q", "dimensions": 16}
        rpc.call("workspace.configure", ["kb", {"embedding": spec}])
        server.mode = "fail"
        answer = search(rpc, "kb", "lease")
        assert "embedding the query failed" in answer["stages"]["skipped"]["semantic"]
        assert answer["mode_used"] == "lexical" and answer["hits"]

"""Runs over the real Markdown corpora in ../shared/corpora (skipped when absent)."""

from __future__ import annotations

import pytest

from ..conftest import corpus_workspace

pytestmark = pytest.mark.corpus


@pytest.fixture(scope="module")
def adr(tmp_path_factory):
    # Lexical only here: embedding 8,000 chunks on 2 cores takes minutes (test_semantic embeds
    # one project of this corpus).
    rpc, root = corpus_workspace(tmp_path_factory, "adr", {"embedding": "none"})
    engine = rpc.engine
    summary = rpc.call("index.run", ["adr"])
    yield rpc, root, summary
    engine.close()


def test_every_adr_is_indexed_and_problems_reported(adr):
    rpc, root, summary = adr
    visible = [p for p in root.rglob("*.md") if not any(x.startswith(".") for x in p.parts)]
    assert summary["files"] == len(visible)  # dot-files (templates, editor state) are skipped
    assert summary["added"] == summary["files"] and not summary["skipped"]
    bad = {w["path"]: w["message"] for w in summary["warnings"]}
    known = "decentraland__adr/content/ADR-45-entities-v4.md"
    assert known in bad and "frontmatter" in bad[known]
    again = rpc.call("index.run", ["adr"])
    assert again["unchanged"] == summary["files"] and again["chunks_written"] == 0


def test_every_span_matches_the_file_on_disk(adr):
    rpc, root, _ = adr
    engine = rpc.engine
    with engine.store.snapshot() as conn:
        rows = conn.execute(
            "SELECT d.path, c.kind, c.text, c.byte_start, c.byte_end, c.line_start, c.line_end"
            " FROM chunks c JOIN documents d ON d.id = c.document_id WHERE c.state = 1"
        ).fetchall()
    assert len(rows) > 2000
    cache: dict[str, bytes] = {}
    for r in rows:
        data = cache.setdefault(r["path"], (root / r["path"]).read_bytes())
        assert data[: r["byte_start"]].count(b"\n") + 1 == r["line_start"]
        assert data[: r["byte_end"]].count(b"\n") + 1 == r["line_end"]
        if r["kind"] == "section":
            assert data[r["byte_start"] : r["byte_end"]].decode("utf-8", "replace") == r["text"]


def test_links_resolve_and_inbound_counts(adr):
    rpc, _, _ = adr
    status = rpc.call("index.status", ["adr"])
    assert status["links"]["resolved"] > 100
    with rpc.engine.store.snapshot() as conn:
        top = conn.execute(
            "SELECT path, inbound FROM documents ORDER BY inbound DESC LIMIT 1"
        ).fetchone()
        counted = conn.execute(
            "SELECT count(DISTINCT source_id) FROM links WHERE target_id ="
            " (SELECT id FROM documents WHERE path = ?) AND source_id !="
            " (SELECT id FROM documents WHERE path = ?)",
            (top["path"], top["path"]),
        ).fetchone()[0]
    assert top["inbound"] == counted > 1


def test_searching_real_adrs(adr):
    rpc, _, _ = adr
    hits = rpc.call("search.query", ["adr", "logging framework slf4j"])["hits"]
    assert hits[0]["path"].startswith("JabRef__jabref/")
    hits = rpc.call(
        "search.query", ["adr", "terraform state", {"paths": ["alphagov__govuk-aws/"]}]
    )["hits"]
    assert hits and all(h["path"].startswith("alphagov__govuk-aws/") for h in hits)
    superseded = rpc.call("search.query", ["adr", "superseded", {"limit": 20}])["hits"]
    assert len(superseded) == 20

"""`autodoc eval`: metrics, a BEIR-layout dataset through the real pipeline, and a golden-file
gate over a vault."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from autodoc.evaluation import golden
from autodoc.evaluation.beir import mrr_at, ndcg_at, recall_at
from autodoc.serve.cli.main import main

from ..conftest import EXAMPLE_VAULT, write
from ..fake_rankers import tiny_cross_encoder


def test_metrics_on_known_rankings():
    rel = {"a": 1, "b": 2}
    assert recall_at(["x", "a", "y", "b"], rel, 3) == 0.5
    assert recall_at(["b", "a"], rel, 3) == 1.0
    assert mrr_at(["x", "y", "a"], rel) == pytest.approx(1 / 3)
    assert mrr_at(["x"] * 10 + ["a"], rel) == 0.0  # beyond @10
    assert ndcg_at(["b", "a"], rel) == pytest.approx(1.0)  # the ideal order
    worse = ndcg_at(["a", "b"], rel)
    assert worse == pytest.approx((1 + 3 / 1.5849625) / (3 + 1 / 1.5849625))


@pytest.fixture
def beir(tmp_path: Path) -> Path:
    """Five documents, four judged queries; q4's answer shares no word with it."""
    root = tmp_path / "tiny"
    docs = [
        ("d1", "Lease recovery", "A stale writer lease is taken over after the heartbeat ages."),
        ("d2", "Vector prefilter", "Sign bits shortlist candidates before float rescoring."),
        ("d3", "Tokenizer", "Byte pair encoding splits rare words into pieces."),
        ("d4", "Snapshots", "Readers keep one SQLite transaction for a whole answer."),
        ("d:5", "Chunking", "Headings cut documents into sections of about 350 tokens."),
    ]
    write(root, "corpus.jsonl", "\n".join(
        json.dumps({"_id": i, "title": t, "text": x}) for i, t, x in docs) + "\n")  # fmt: skip
    queries = [("q1", "stale writer lease heartbeat"), ("q2", "sign bits shortlist"),
               ("q3", "sections from headings"), ("q4", "quokka marsupial habitat")]  # fmt: skip
    write(root, "queries.jsonl", "\n".join(
        json.dumps({"_id": i, "text": t}) for i, t in queries) + "\n")  # fmt: skip
    write(root, "qrels/dev.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n"
          "q3\td:5\t2\nq4\td3\t1\nq9\td4\t1\n")  # fmt: skip
    return root


def test_eval_on_a_beir_dataset(beir, tmp_path, capsys):
    code = main(["eval", str(beir), "--options", '{"embedding": "none"}', "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert report["split"] == "dev" and report["queries"] == 4  # q9 has no query text
    assert report["documents"] == 5 and list(report["results"]) == ["lexical"]
    lexical = report["results"]["lexical"]
    # q1..q3 find their document first; q4 cannot: 3 of 4.
    assert lexical["recall@3"] == pytest.approx(0.75) and lexical["mrr@10"] == pytest.approx(0.75)
    assert lexical["ndcg@10"] == pytest.approx(0.75)
    assert lexical["p50_ms"] > 0 and lexical["p95_ms"] >= lexical["p50_ms"]
    # The text form; a kept work folder is reused without indexing again.
    work = tmp_path / "work"
    assert main(["eval", str(beir), "--options", '{"embedding": "none"}', "--work", str(work),
                 "--k", "1,5"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "| stages | nDCG@10 | Recall@1 | Recall@5 | MRR@10 |" in out
    assert (work / "names.json").exists() and (work / "vault" / "d000004.md").exists()


def test_eval_adds_the_rerank_set_with_a_ranker(beir, tmp_path, capsys):
    folder = tiny_cross_encoder(tmp_path / "tiny-ce", {"lease": 5.0})
    options = {"embedding": "none", "ranker": {"provider": "onnx", "path": str(folder)}}
    assert main(["eval", str(beir), "--options", json.dumps(options), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert list(report["results"]) == ["lexical", "rerank"] and report["ranker"]
    assert report["results"]["rerank"]["p50_ms"] > 0


def test_eval_errors(beir, tmp_path, capsys):
    """An eval that cannot run exits 2 with a sentence (1 is a failed gate)."""
    assert main(["eval", str(beir), "--split", "test"]) == 2
    assert capsys.readouterr().err.startswith("autodoc: no qrels/test.tsv")
    assert (
        main(["eval", str(beir), "--options", '{"embedding": "none"}', "--stages", "hybrid"]) == 2
    )
    assert capsys.readouterr().err.startswith("autodoc: cannot run 'hybrid' here")
    assert main(["eval", str(tmp_path)]) == 2  # neither a BEIR folder nor --golden
    assert capsys.readouterr().err == (
        "autodoc: eval takes a BEIR folder, or a vault with --golden FILE\n"
    )


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, root)
    return root


def test_a_golden_file_gates_recall_at_3(vault, tmp_path, capsys):
    golden = tmp_path / "golden.jsonl"
    golden.write_text(
        '{"query": "why did we pick sqlite", "path": "adr/0003-embedded-sqlite-store.md"}\n'
        '{"query": "recovering a stale writer lease", "path": "adr/0004-lease-recovery.md"}\n'
    )
    db = str(tmp_path / "store" / "a.db")
    code = main(["--db", db, "eval", str(vault), "--golden", str(golden), "--min-recall3", "0.9",
                 "--json"])  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["gate"] == {
        "set": "hybrid", "recall@3": 1.0, "min": 0.9, "passed": True
    }  # fmt: skip
    assert set(report["results"]) == {"lexical", "semantic", "hybrid"}  # the bundled model
    # A target no search finds lowers recall@3 below the bar: exit 1.
    with golden.open("a") as fh:
        fh.write('{"query": "quokka marsupial habitat", "path": "notes/onboarding.md"}\n')
    code = main(["--db", db, "eval", str(vault), "--golden", str(golden), "--min-recall3", "0.9",
                 "--stages", "lexical"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 1 and "gate: Recall@3 0.667 (lexical) >= 0.9: FAILED" in out


def test_golden_entries_group_by_query_with_kinds_and_negatives(tmp_path, capsys):
    path = tmp_path / "g.jsonl"
    path.write_text(
        '{"query": "q", "path": "a.md", "line": 12, "kind": "section"}\n'
        '{"query": "q", "path": "./b.md"}\n'
        '{"query": "kafka", "path": ""}\n'
        '{"query": "r", "path": "c.md"}\n'
    )
    queries = golden.load(path)
    assert [(q.query, q.kind, q.targets) for q in queries] == [
        ("q", "section", [("a.md", 12), ("b.md", None)]),
        ("kafka", "negative", []),
        ("r", "unkinded", [("c.md", None)]),
    ]
    assert queries[0].has_line and not queries[2].has_line and queries[1].negative
    bad = [
        '{"query": "q"}',
        '{"query": "q", "path": "", "line": 3}',
        '{"query": " ", "path": "a.md"}',
        '{"query": "q", "path": "a.md", "line": true}',
    ]
    for entry in bad:
        path.write_text(entry + "\n")
        assert (
            main(["--db", str(tmp_path / "s.db"), "eval", str(tmp_path), "--golden", str(path)])
            == 2
        )  # fmt: skip (the gate's input is wrong: a usage error)
        assert "entry 1 needs a query, a path" in capsys.readouterr().err


def test_a_missing_golden_file_or_paths_not_in_the_vault_are_usage_errors(vault, tmp_path, capsys):
    """Exit 2 with a sentence naming the problem (and with --json, -32602 as JSON on stdout),
    never a traceback, never silent zeros."""
    db = str(tmp_path / "store" / "a.db")
    missing = tmp_path / "nope.jsonl"
    said = f"cannot read the golden file {missing}: No such file or directory"
    assert main(["--db", db, "eval", str(vault), "--golden", str(missing)]) == 2
    assert capsys.readouterr() == ("", f"autodoc: {said}\n")
    assert main(["--db", db, "eval", str(vault), "--golden", str(missing), "--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["code"] == -32602 and error["data"] == {"path": str(missing)}
    assert error["message"] == said
    path = tmp_path / "g.jsonl"
    path.write_text(
        '{"query": "why did we pick sqlite", "path": "adr/0003-embedded-sqlite-store.md"}\n'
        '{"query": "a typo", "path": "adr/0003-embeded-sqlite-store.md"}\n'
        '{"query": "another", "path": "notes/gone.md"}\n'
        '{"query": "the typo again", "path": "adr/0003-embeded-sqlite-store.md"}\n'
    )
    assert main(["--db", db, "eval", str(vault), "--golden", str(path), "--stages", "lexical",
                 "--json"]) == 2  # fmt: skip
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["data"] == {"absent": ["adr/0003-embeded-sqlite-store.md", "notes/gone.md"]}
    assert error["message"].startswith("2 golden path(s) not in the vault: adr/0003-embeded")


def test_a_golden_rank_is_the_row_the_picker_shows():
    """Rows that answer nothing count: a target under two other files is at rank 3 (the first
    version ranked only the answering hits and called it rank 1)."""
    q = golden.GoldenQuery("q", "section", [("a.md", 12), ("b.md", None)])
    hits = [
        {"path": "x.md", "line_start": 1, "line_end": 9},
        {"path": "y.md", "line_start": 1, "line_end": 9},
        {"path": "a.md", "line_start": 1, "line_end": 10},  # the file, not the line
        {"path": "z.md", "line_start": 1, "line_end": 9},
        {"path": "a.md", "line_start": 11, "line_end": 20},
    ]
    assert golden.ranks(q, hits) == (3, 5)
    assert golden.ranks(q, hits[:4]) == (3, None)
    assert golden.ranks(golden.GoldenQuery("q", "title", [("b.md", None)]), hits) == (None, None)
    records = [
        golden.judge(q, {"hits": hits}),
        golden.judge(golden.GoldenQuery("n", "title", [("y.md", None)]), {"hits": hits}),
        golden.judge(golden.GoldenQuery("k", "negative", []), {"hits": hits, "missing": ["k"]}),
        golden.judge(golden.GoldenQuery("m", "negative", []), {"hits": [], "confidence": "low"}),
    ]
    s = golden.summarise(records)
    assert (s["queries"], s["negatives"], s["with_line"]) == (2, 2, 1)
    assert (s["recall@1"], s["recall@3"], s["section_recall@3"]) == (0.0, 1.0, 0.0)
    assert s["mrr@10"] == pytest.approx((1 / 3 + 1 / 2) / 2)
    assert s["negatives_flagged"] == 0.5  # `missing` says it; confidence low does not
    assert records[0]["top"] == "x.md:1-9" and records[3]["top"] == ""

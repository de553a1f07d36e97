"""BM25 as Qdrant sparse vectors against AutoDoc's Tantivy lexical stage: nDCG@10 (issue 26).

For each visible BEIR set, the corpus indexed twice by AutoDoc (lexical only): once on Tantivy,
once with `embedding.store: {kind: qdrant}` so the lexical stage runs on sparse vectors in a
Qdrant collection (qdrant_lexical.py; qdrant-client's local mode, in-process). Both are queried
through `search.query` with the lexical stage alone, the same queries and qrels, documents
counted once at their best chunk. Local mode is exact brute force in Python, not a server: its
latency says nothing about one (seconds a query at 10k chunks: `--queries` takes the first N).

    python bench/qdrant_sparse.py ../shared/bench/scifact ../shared/bench/emanual \
        [--queries 100] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from autodoc.engine import Engine
from autodoc.evaluation.beir import DEPTH, beir_split, load_beir, ndcg_at, write_corpus
from autodoc.wire.limits import MAX_QUERY_WORDS

LOCAL = {"kind": "qdrant", "url": ":memory:"}


def served(engine: Engine, name: str, judged, names) -> tuple[list[float], list[float]]:
    """Each query's nDCG@10 and latency (ms) through the lexical stage of workspace `name`."""
    scores, ms = [], []
    for q in judged:
        t0 = time.perf_counter()
        hits = engine.reading.search(name, q.text, {"stages": ["lexical"], "limit": DEPTH})["hits"]
        ms.append((time.perf_counter() - t0) * 1000)
        ranked = list(dict.fromkeys(names[h["path"]] for h in hits))
        scores.append(ndcg_at(ranked, q.relevant))
    return scores, ms


def run(dataset: Path, work: Path, most: int | None = None) -> dict:
    split = beir_split(dataset, None)
    corpus, judged = load_beir(dataset, split)
    judged = judged[:most] if most else judged  # local mode costs seconds a query on 10k chunks
    names = write_corpus(corpus, work / "vault")
    engine = Engine(work / "autodoc.db")
    refused = [q for q in judged if len(q.text.split()) > MAX_QUERY_WORDS]
    judged = [q for q in judged if q not in refused]  # -32602 from the search: both skip them
    out: dict = {"dataset": dataset.name, "split": split, "queries": len(judged),
                 "refused": len(refused)}  # fmt: skip
    for name, embedding in (("tantivy", "none"), ("sparse", {"provider": "none", "store": LOCAL})):
        engine.workspaces.workspace_add(name, str(work / "vault"))
        engine.workspaces.workspace_configure(name, {"embedding": embedding})
        t0 = time.perf_counter()
        engine.indexing.index_run(name)
        out[f"{name}_index_s"] = time.perf_counter() - t0
        scores, ms = served(engine, name, judged, names)
        out[f"{name}_ndcg10"] = statistics.fmean(scores)
        out[f"{name}_p50_ms"] = statistics.median(ms)
    out["chunks"] = engine.reading.counts("tantivy")[1]
    engine.close()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("datasets", type=Path, nargs="+")
    ap.add_argument("--queries", type=int, help="the first N judged queries of each set")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    out = []
    print("| set | queries | chunks | Tantivy stage nDCG@10 | Qdrant sparse stage nDCG@10 | ratio |"
          " index s Tantivy / Qdrant local | p50 ms Tantivy / Qdrant local |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for dataset in args.datasets:
        with tempfile.TemporaryDirectory() as tmp:
            r = run(dataset, Path(tmp), args.queries)
        out.append(r)
        print(
            f"| {r['dataset']} ({r['split']}) | {r['queries']}"
            + (f" ({r['refused']} over {MAX_QUERY_WORDS} words left out)" if r["refused"] else "")
            + f" | {r['chunks']:,} |"
            f" {r['tantivy_ndcg10']:.3f} | {r['sparse_ndcg10']:.3f} |"
            f" {r['sparse_ndcg10'] / max(r['tantivy_ndcg10'], 1e-9):.2f}× |"
            f" {r['tantivy_index_s']:.1f} / {r['sparse_index_s']:.1f} |"
            f" {r['tantivy_p50_ms']:.2f} / {r['sparse_p50_ms']:.2f} |",
            flush=True,
        )
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The hybrid query path step by step, every step measured in the same run (issue 26).

On an indexed, fully embedded workspace (cpp-docs), the same queries through `search.query`
(lexical + semantic, `limit` 10) under five settings, interleaved query by query so the
machine's drift touches each alike:

1. before: the query embedded first, then the exact sign scan, rescoring read from SQLite (the
   code before issue 26, kept here as a patch);
2. + the float32 rows memory-mapped (vector_index.py), rescoring a numpy gather;
3. + the HNSW graph the writer builds past HNSW_ABOVE vectors, as first shipped (ef_add 128,
   400 neighbours rescored);
4. + the graph built with the shipped settings (GRAPH_BUILD: ef_add 256), 400 neighbours;
5. the same graph with the shipped shortlist (HNSW_SHORTLIST: 300), what ships;
6. and 7. + the query embedded on a worker while the lexical stage runs, on the query session's
   two threads, then on a one-thread session (SemanticStage.overlap: off by default).

Reports p50/p95 per step, the ratio to step 1, the stage medians, and how many of step 1's
top-10 hits each step keeps (the graph is approximate).

    python bench/query_path.py --db /tmp/cpp --workspace cpp [--queries 200] [--golden FILE]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hybrid_latency import pct
from lexical_latency import live_chunks, make_queries

from autodoc.engine import Engine
from autodoc.query.stages.semantic import SemanticStage
from autodoc.store import read_epochs
from autodoc.vectors import usearch_index
from autodoc.vectors.usearch_index import VectorIndex

SHIPPED = usearch_index.HNSW_SHORTLIST
# (label, rows mapped, query embedded beside the lexical stage, graph, graph shortlist)
STEPS = [
    ("before: embed, then sign scan, rescore read from SQLite", False, False, None, 0),
    ("+ float32 rows memory-mapped", True, False, None, 0),
    ("+ HNSW graph, ef_add 128, shortlist 400 (first shipped)", True, False, "first", 400),
    ("+ HNSW graph, ef_add 256, shortlist 400", True, False, "shipped", 400),
    ("+ ... shortlist 300 (shipped)", True, False, "shipped", SHIPPED),
    ("+ query embedded beside the lexical stage, two threads", True, "two", "shipped", SHIPPED),
    ("+ ... on one thread", True, True, "shipped", SHIPPED),
]
PARTS = ("embed_ms", "embed_wait_ms", "lexical_ms", "semantic_ms")


def sqlite_rescore(db: Path):
    """The rescoring before issue 26: the shortlist's float32 rows read from SQLite."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, check_same_thread=False)
    conn.execute("PRAGMA mmap_size = 1073741824")  # as reader connections map the file

    def rescore(self, keys, qvec):
        ids = [int(k) for k in keys]
        marks = ",".join("?" * len(ids))
        rows = conn.execute(
            f"SELECT id, text_hash, f32 FROM embeddings WHERE id IN ({marks})", ids
        ).fetchall()
        if not rows:
            return []
        matrix = np.frombuffer(b"".join(r[2] for r in rows), np.float32).reshape(len(rows), -1)
        scores = matrix @ qvec
        rid = np.fromiter((r[0] for r in rows), np.int64, len(rows))
        order = np.lexsort((rid, -scores))
        return [(rows[i][1], float(scores[i])) for i in order]

    return rescore


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, required=True, help="folder holding autodoc.db")
    ap.add_argument("--workspace", default="cpp-docs")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--golden", type=Path, help="a golden .jsonl: its queries instead")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    db = args.db / "autodoc.db"
    engine = Engine(db)
    ws = engine.workspace(args.workspace)
    plan = engine.semantic_plan(ws)
    signs = plan.signs
    assert signs is not None and plan.model_fp is not None
    if args.golden:
        queries = [json.loads(line)["query"] for line in args.golden.open() if line.strip()]
    else:
        chunks = live_chunks(db, args.workspace)
        queries = [q["query"] for q in make_queries(chunks, args.queries, args.seed)]
    with engine.store.snapshot() as conn:
        epoch = read_epochs(conn, ws.id)[1]
        signs.refresh(conn, ws.id, plan.model_fp, epoch)  # loaded, or read from SQLite
        loaded = signs.graph is not None  # the writer saved one
        t0 = time.perf_counter()
        signs.refresh(conn, ws.id, plan.model_fp, epoch, build=True)  # as the writer does
    built = None if loaded else time.perf_counter() - t0
    graphs = {"shipped": signs.graph, "first": first_graph(signs)}
    mapped, old = VectorIndex.rescore, sqlite_rescore(db)
    opts = {"stages": ["lexical", "semantic"], "limit": 10}

    def run(step, q: str) -> tuple[float, dict]:
        _, rows, overlap, use_graph, shortlist = step
        VectorIndex.rescore = mapped if rows else old  # type: ignore[method-assign]
        SemanticStage.overlap = bool(overlap)
        SemanticStage.beside = overlap is True
        signs.graph = graphs[use_graph] if use_graph else None
        if signs.graph is not None:  # the stage asks for, and walks, this many
            usearch_index.HNSW_SHORTLIST = shortlist
            signs.graph.expansion_search = shortlist  # type: ignore[misc]
        times = []
        for _ in range(3):
            t1 = time.perf_counter()
            answer = engine.reading.search(args.workspace, q, opts)
            times.append((time.perf_counter() - t1) * 1000)
        return statistics.median(times), answer

    for q in queries[:20]:  # warm-up: model, rows, page cache
        for step in STEPS:
            run(step, q)
    total = {s[0]: [] for s in STEPS}
    parts = {s[0]: {k: [] for k in PARTS} for s in STEPS}
    kept = {s[0]: [] for s in STEPS}
    for q in queries:
        first = None
        for step in STEPS:
            ms, answer = run(step, q)
            total[step[0]].append(ms)
            for k in PARTS:
                parts[step[0]][k].append(answer["timings"].get(k, 0.0))
            top = [(h["path"], h["line_start"]) for h in answer["hits"]]
            first = top if first is None else first
            kept[step[0]].append(len(set(top) & set(first)) / max(len(first), 1))
    report(args, ws, queries, signs, built, total, parts, kept)
    return 0


def first_graph(signs: VectorIndex):
    """The graph as first shipped (ef_add 128), built here over the same rows."""
    shipped, settings = signs.graph, usearch_index.GRAPH_BUILD
    usearch_index.GRAPH_BUILD = {**settings, "expansion_add": 128}
    try:
        signs.graph = None
        signs._build_graph(len(signs.rows))
        return signs.graph
    finally:
        usearch_index.GRAPH_BUILD, signs.graph = settings, shipped


def report(args, ws, queries, signs, built, total, parts, kept) -> None:
    base = statistics.median(total[STEPS[0][0]])
    print(
        f"### Hybrid query path on {args.workspace}: {len(signs.index):,} vectors, "
        f"{len(queries)} queries, median of 3 each\n"
    )
    print("| step | p50 ms | p95 ms | p50 / before | embed / wait / lexical / semantic ms"
          " | top-10 kept |")  # fmt: skip
    print("|---|---:|---:|---:|---|---:|")
    out = {}
    for label, values in total.items():
        p50, p95 = statistics.median(values), pct(values, 0.95)
        med = {k: statistics.median(v) for k, v in parts[label].items()}
        keep = statistics.fmean(kept[label])
        print(
            f"| {label} | {p50:.2f} | {p95:.2f} | {p50 / base:.2f}× | "
            + " / ".join(f"{med[k]:.2f}" for k in PARTS)
            + f" | {keep:.3f} |"
        )
        out[label] = {"p50": p50, "p95": p95, "parts": med, "kept": keep}
    graph = signs.graph
    mem = graph.memory_usage / 2**20 if graph is not None else 0
    how = "loaded as the writer saved it" if built is None else f"built in-process in {built:.1f} s"
    print(f"\nHNSW graph {how}, {mem:.0f} MB (USearch memory_usage)")
    if args.json:
        args.json.write_text(json.dumps({"steps": out, "graph_build_s": built}, indent=2))


if __name__ == "__main__":
    sys.exit(main())

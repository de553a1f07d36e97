"""Phase 2a + 2b against exact float32: recall@50 and latency, per shortlist size.

Two vector sets, each searched three ways in the same run:
- exact float32 with numpy (the baseline: a matrix-vector product and a partial sort);
- AutoDoc's two phases: a USearch `b1` Hamming scan over the sign codes, then exact float32
  cosine on the shortlist (numpy gather + dot);
- (for scale) USearch's float32 HNSW index, to show what an approximate graph costs and gives.

Sets: SciFact (the real bundled-model vectors of a store built by `autodoc eval --work`, queried
with the real queries) and N synthetic 384-d unit vectors drawn around one cluster centre per
~500 vectors.

    python bench/vector_recall.py --scifact-db /tmp/scifact [--synthetic 1000000] [--json OUT]
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
import onnxruntime  # noqa: F401 - before usearch (see autodoc.models.embedders)
from usearch.index import Index

from autodoc.models.embedders import bundled_embedder
from autodoc.vectors.nearest import sign_bits

K = 50


def exact_top(matrix: np.ndarray, q: np.ndarray, k: int = K) -> np.ndarray:
    scores = matrix @ q
    top = np.argpartition(-scores, k)[:k]
    return top[np.argsort(-scores[top], kind="stable")]


def sign_index(bits: np.ndarray, dim: int) -> tuple[Index, float]:
    t0 = time.perf_counter()
    index = Index(ndim=dim, metric="hamming", dtype="b1", connectivity=2, expansion_add=1)
    index.add(np.arange(len(bits), dtype=np.uint64), bits)
    return index, time.perf_counter() - t0


def two_phase(index: Index, matrix: np.ndarray, q: np.ndarray, shortlist: int) -> np.ndarray:
    keys = index.search(sign_bits(q), shortlist, exact=True).keys.astype(np.int64)
    scores = matrix[keys] @ q
    order = np.argsort(-scores, kind="stable")[:K]
    return keys[order]


def timed(fn, queries, repeat=3):
    per_query = []
    out = []
    for q in queries:
        runs = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            r = fn(q)
            runs.append((time.perf_counter() - t0) * 1000)
        per_query.append(statistics.median(runs))
        out.append(r)
    per_query.sort()
    return out, statistics.median(per_query), per_query[int(0.95 * (len(per_query) - 1))]


def evaluate(label, matrix, queries, shortlists, hnsw=True):
    rows = []
    truth, p50, p95 = timed(lambda q: exact_top(matrix, q), queries)
    base = p50
    rows.append(("numpy exact float32 (baseline)", 1.0, p50, p95, 1.0, 0.0))
    bits = sign_bits(matrix)
    index, build = sign_index(bits, matrix.shape[1])
    for s in shortlists:
        got, p50, p95 = timed(lambda q, s=s: two_phase(index, matrix, q, s), queries)
        recall = statistics.fmean(len(set(g) & set(t)) / K for g, t in zip(got, truth, strict=True))
        rows.append((f"b1 scan + rescore, shortlist {s}", recall, p50, p95, p50 / base, build))
    if hnsw:
        t0 = time.perf_counter()
        f32 = Index(ndim=matrix.shape[1], metric="cos", dtype="f32")
        f32.add(np.arange(len(matrix), dtype=np.uint64), matrix)
        build = time.perf_counter() - t0
        got, p50, p95 = timed(lambda q: f32.search(q, K).keys.astype(np.int64), queries)
        recall = statistics.fmean(len(set(g) & set(t)) / K for g, t in zip(got, truth, strict=True))
        rows.append(("USearch float32 HNSW (approximate)", recall, p50, p95, p50 / base, build))
    print(f"\n### {label}: {len(matrix):,} vectors × {matrix.shape[1]}, {len(queries)} queries\n")
    print("| method | recall@50 vs exact | p50 ms | p95 ms | p50 / numpy | index build s |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, recall, p50, p95, ratio, build in rows:
        print(f"| {name} | {recall:.3f} | {p50:.2f} | {p95:.2f} | {ratio:.2f}× | {build:.1f} |")
    return [
        dict(zip(["method", "recall", "p50", "p95", "ratio", "build"], r, strict=True))
        for r in rows
    ]


def scifact(db: Path, queries_file: Path, n_queries: int):
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = conn.execute("SELECT f32 FROM embeddings ORDER BY id").fetchall()
    matrix = np.stack([np.frombuffer(r[0], dtype=np.float32) for r in rows])
    texts = [json.loads(line)["text"] for line in queries_file.open()][:n_queries]
    return matrix, list(bundled_embedder().embed(texts))


def synthetic(n: int, dim: int, n_queries: int, seed: int = 7):
    rng = np.random.default_rng(seed)
    # about 500 vectors a topic, each at cosine ~0.55 to its centre, like related passages
    centres = rng.standard_normal((max(10, n // 500), dim)).astype(np.float32)
    matrix = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, 100_000):
        m = min(100_000, n - start)
        c = centres[rng.integers(0, len(centres), m)]
        matrix[start : start + m] = c + 0.9 * rng.standard_normal((m, dim)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    picks = matrix[rng.integers(0, n, n_queries)]
    queries = picks + 0.5 * rng.standard_normal(picks.shape).astype(np.float32) / np.sqrt(dim)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    # float32 like the stored vectors: a float64 query would make numpy convert the whole
    # matrix on every product (it did, until 2026-11-30: the exact baseline read 5x slower)
    return matrix, list(queries.astype(np.float32))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scifact-db", type=Path, help="the --work folder of autodoc eval on SciFact")
    ap.add_argument(
        "--queries",
        type=Path,
        default=Path(__file__).resolve().parents[1] / "../shared/bench/scifact/queries.jsonl",
    )
    ap.add_argument("--synthetic", type=int, default=1_000_000)
    ap.add_argument("--n-queries", type=int, default=200)
    ap.add_argument("--shortlists", default="50,100,200,400,800")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    shortlists = [int(s) for s in args.shortlists.split(",")]
    report = {}
    if args.scifact_db:
        matrix, queries = scifact(args.scifact_db / "autodoc.db", args.queries, args.n_queries)
        report["scifact"] = evaluate(
            "SciFact (bundled MiniLM vectors)", matrix, queries, shortlists
        )
    if args.synthetic:
        matrix, queries = synthetic(args.synthetic, 384, args.n_queries)
        report["synthetic"] = evaluate(
            "Synthetic clustered unit vectors",
            matrix,
            queries,
            shortlists,
            hnsw=args.synthetic <= 200_000,
        )
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Stage latency against corpus size: 10k, 100k and 1M chunks.

Lexical: AutoDoc's own Tantivy index (`LexicalIndex`: analyzers, field weights, query builder)
filled with N chunks made from cpp-docs' real chunks: the first 111k as they are, every further
copy perturbed (a sixth of its words swapped for random words of the corpus, a copy marker
added), so postings grow like a bigger corpus instead of repeating. Queries: the seeded
generator of bench/lexical_latency.py; each timed as build + search(top 50).

Semantic: phase 2a + 2b (a USearch `b1` exact Hamming scan for a 600-code shortlist, float32
rescoring in numpy) over N vectors: the real bundled-model vectors of the cpp-docs store up to
its size, clustered random unit vectors beyond (the 1M vector-only case); queries embedded by
the bundled model (real) or drawn near stored vectors (synthetic).

The SQLite steps of a real search (visibility, snippets) are left out at every size: they scale
with the hits, not the corpus (cpp-docs end to end: bench/hybrid_latency.py). Ratios are to the
smallest size, measured in the same run.

    python bench/scale_latency.py --source /tmp/lspb-cpp/store/autodoc.db \
        [--sizes 10000,100000,1000000]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime  # noqa: F401 - before usearch (see autodoc.models.embedders)
from usearch.index import Index

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hybrid_latency import pct
from lexical_latency import make_queries
from vector_recall import synthetic

from autodoc.bm25.analyzer import LexicalDoc
from autodoc.bm25.tantivy_index import LexicalIndex
from autodoc.models.embedders import bundled_embedder
from autodoc.parse.query_parser import parse_query
from autodoc.vectors.nearest import SHORTLIST, sign_bits

TOP = 50


def timed(fn, runs: int = 3) -> float:
    best = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        best.append((time.perf_counter() - t0) * 1000)
    return statistics.median(best)


def source_rows(db: Path, workspace: str):
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    chunks = conn.execute(
        "SELECT c.id, coalesce(d.title, ''), c.breadcrumb, c.text, c.text_hash"
        " FROM chunks c JOIN documents d ON d.id = c.document_id"
        " JOIN workspaces w ON w.id = c.workspace_id"
        " WHERE c.state = 1 AND w.name = ? ORDER BY d.path, c.ordinal, c.id",
        (workspace,),
    ).fetchall()
    fp = conn.execute("SELECT active_model_fp FROM workspaces WHERE name = ?", (workspace,))
    model_fp = fp.fetchone()[0]
    vectors = conn.execute(
        "SELECT f32 FROM embeddings e JOIN workspaces w ON w.id = e.workspace_id"
        " WHERE w.name = ? AND e.model_fp = ? ORDER BY e.id",
        (workspace, model_fp),
    ).fetchall()
    conn.close()
    matrix = np.frombuffer(b"".join(r[0] for r in vectors), dtype=np.float32)
    return chunks, matrix.reshape(len(vectors), -1)


def perturbed(chunks, n: int, seed: int, vocab: list[str]):
    """N LexicalDocs: the real chunks, then perturbed copies of them."""
    rng = random.Random(seed)
    for i in range(n):
        _, title, crumb, text, _ = chunks[i % len(chunks)]
        copy = i // len(chunks)
        if copy:
            words = text.split()
            for j in range(0, len(words), 6):
                words[j] = rng.choice(vocab)
            text = " ".join(words) + f" copy{copy}"
        yield LexicalDoc(i + 1, i // 10 + 1, title, crumb, [], [], text)


def lexical_at(chunks, n: int, queries: list[str], seed: int) -> dict:
    vocab = [w for c in chunks[:20000] for w in c[3].split() if w.isalpha() and len(w) > 3]
    work = Path(tempfile.mkdtemp(prefix="autodoc-scale-"))
    try:
        lex = LexicalIndex(work / "lexical")
        t0 = time.perf_counter()
        size = 0
        batch = []
        for doc in perturbed(chunks, n, seed, vocab):
            size += len(doc.body.encode()) + len(doc.title) + len(doc.breadcrumb)
            batch.append(doc)
            if len(batch) >= 50_000:
                lex.add(batch)
                batch = []
        lex.add(batch)
        lex.commit()
        build_s = time.perf_counter() - t0
        disk = sum(p.stat().st_size for p in (work / "lexical").rglob("*") if p.is_file())
        times = [
            timed(lambda q=q: lex.search(lex.build(parse_query(q), True), TOP)) for q in queries
        ]
        lex.close()
        return {"p50": statistics.median(times), "p95": pct(times, 0.95), "build_s": build_s,
                "mb_per_s": size / 1e6 / build_s, "disk_mb": disk / 1e6}  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)


def semantic_at(matrix: np.ndarray, queries: list[np.ndarray]) -> dict:
    t0 = time.perf_counter()
    index = Index(ndim=matrix.shape[1], metric="hamming", dtype="b1", connectivity=2,
                  expansion_add=1)  # fmt: skip
    keys = np.arange(len(matrix), dtype=np.uint64)
    index.add(keys, sign_bits(matrix))
    build_s = time.perf_counter() - t0

    def search(q: np.ndarray) -> None:
        short = index.search(sign_bits(q), SHORTLIST, exact=True).keys.astype(np.int64)
        scores = matrix[short] @ q
        short[np.argsort(-scores, kind="stable")[:TOP]]

    times = [timed(lambda q=q: search(q)) for q in queries]
    return {"p50": statistics.median(times), "p95": pct(times, 0.95), "build_s": build_s}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=Path, required=True, help="an embedded cpp-docs autodoc.db")
    ap.add_argument("--workspace", default="cpp-docs")
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    chunks, real = source_rows(args.source, args.workspace)
    query_rows = [(c[0], c[1], c[2], c[3]) for c in chunks]
    queries = [q["query"] for q in make_queries(query_rows, args.queries, args.seed)]
    embedder = bundled_embedder()
    real_queries = list(embedder.embed(queries))
    rows = []
    for n in sizes:
        lexical = lexical_at(chunks, n, queries, args.seed)
        if n <= len(real):
            semantic = semantic_at(real[:n], real_queries)
            kind = "real (bundled model)"
        else:
            matrix, synth_queries = synthetic(n, real.shape[1], args.queries, args.seed)
            semantic = semantic_at(matrix, synth_queries)
            kind = "synthetic unit vectors"
            del matrix
        rows.append({"n": n, "lexical": lexical, "semantic": semantic, "vectors": kind})
        print(f"{n:,}: lexical {lexical['p50']:.2f} ms, semantic {semantic['p50']:.2f} ms",
              file=sys.stderr)  # fmt: skip
    base_l, base_s = rows[0]["lexical"]["p50"], rows[0]["semantic"]["p50"]
    print(
        f"### Stage latency against corpus size ({len(queries)} queries, top {TOP}, median of 3)\n"
    )
    print("| chunks | lexical p50 ms | p95 | × smallest | index build s | MB/s | index MB |"
          " semantic p50 ms | p95 | × smallest | b1 build s | vectors |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        lx, se = r["lexical"], r["semantic"]
        print(f"| {r['n']:,} | {lx['p50']:.2f} | {lx['p95']:.2f} | {lx['p50'] / base_l:.1f}× | "
              f"{lx['build_s']:.1f} | {lx['mb_per_s']:.1f} | {lx['disk_mb']:.0f} | "
              f"{se['p50']:.2f} | {se['p95']:.2f} | {se['p50'] / base_s:.1f}× | "
              f"{se['build_s']:.1f} | {r['vectors']} |")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

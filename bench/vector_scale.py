"""The semantic stage's vector search at 111k, 1M and 3M vectors: the exact sign scan against
the HNSW graph, each followed by float32 rescoring, as `VectorIndex` runs them (issue 26).

Vectors: the real bundled-model vectors of a store (cpp-docs: 108k), then, past them, copies of
random real vectors each moved by Gaussian noise (σ 0.035 a dimension, cosine ~0.8 to its
source) and renormalised, so a larger set keeps the real set's clusters rather than random
directions. Queries: real queries embedded by the bundled model (`--golden` files), searched
for their top 50; truth: exact float32 over the whole set (numpy). Both methods run on the same
VectorIndex code the stage uses (no SQLite: visibility costs the same on both).

    python bench/vector_scale.py --db /tmp/cpp --golden bench/golden/cpp-docs.jsonl \
        --sizes 111000,1000000,3000000 [--hnsw-shortlists auto,800] [--expansion-add 128,256]
        [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import resource
import sqlite3
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from autodoc.models.embedders import bundled_embedder
from autodoc.vectors import usearch_index
from autodoc.vectors.usearch_index import VectorIndex, sign_bits

K = 50


def real_vectors(db: Path) -> np.ndarray:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    blobs = [r[0] for r in conn.execute("SELECT f32 FROM embeddings ORDER BY id")]
    return np.frombuffer(b"".join(blobs), np.float32).reshape(len(blobs), -1)


def grown(real: np.ndarray, n: int, seed: int = 7) -> np.ndarray:
    if n <= len(real):
        return real[:n]
    rng = np.random.default_rng(seed)
    out = np.empty((n, real.shape[1]), np.float32)
    out[: len(real)] = real
    for start in range(len(real), n, 200_000):
        m = min(200_000, n - start)
        part = real[rng.integers(0, len(real), m)]
        part = part + 0.035 * rng.standard_normal(part.shape).astype(np.float32)
        out[start : start + m] = part / np.linalg.norm(part, axis=1, keepdims=True)
    return out


def queries_of(files: list[Path], limit: int) -> np.ndarray:
    texts = []
    for f in files:
        texts += [json.loads(line)["query"] for line in f.open() if line.strip()]
    return bundled_embedder().embed(texts[:limit])


def truth(matrix: np.ndarray, qs: np.ndarray) -> list[set[int]]:
    out = []
    for q in qs:
        s = matrix @ q
        out.append({int(i) for i in np.argpartition(-s, K)[:K]})
    return out


def index_of(matrix: np.ndarray, graph: bool) -> tuple[VectorIndex, float]:
    vi = VectorIndex(matrix.shape[1], None, "bench")
    ids = np.arange(len(matrix), dtype=np.uint64)
    t0 = time.perf_counter()
    for start in range(0, len(matrix), 200_000):
        part = matrix[start : start + 200_000]
        vi.index.add(ids[start : start + len(part)], sign_bits(part))
    hashes = np.full(len(matrix), b"0" * 64, dtype="S64")
    vi.rows.extend(ids, hashes, matrix)
    if graph:
        vi._build_graph(len(vi.rows))
    return vi, time.perf_counter() - t0


def measure_all(
    configs: list[tuple[VectorIndex, int]], qs: np.ndarray, want: list[set[int]]
) -> list[dict]:
    """Each (index, shortlist) on every query, interleaved query by query (the order turned
    each query) so the machine's drift touches them alike: four searches each, the first the
    cold one (the graph's pages not yet warm for that query), the median of the rest warm."""
    lat: list[list[float]] = [[] for _ in configs]
    cold: list[list[float]] = [[] for _ in configs]
    rec: list[list[float]] = [[] for _ in configs]
    for n, (q, t) in enumerate(zip(qs, want, strict=True)):
        bits = sign_bits(q)
        turn = n % len(configs)
        for c in [*range(turn, len(configs)), *range(turn)]:
            vi, k = configs[c]
            if vi.graph is not None:
                vi.graph.expansion_search = k  # type: ignore[misc]
            runs = []
            for _ in range(4):
                t0 = time.perf_counter()
                keys = vi.shortlist(q, bits, k)
                ids, _, m = vi.rows.gather(np.asarray(keys, np.uint64))
                top = ids[np.argsort(-(m @ q), kind="stable")[:K]]
                runs.append((time.perf_counter() - t0) * 1000)
            cold[c].append(runs[0])
            lat[c].append(statistics.median(runs[1:]))
            rec[c].append(len({int(i) for i in top} & t) / K)
    out = []
    for c in range(len(configs)):
        lat[c].sort()
        out.append({
            "p50": statistics.median(lat[c]),
            "p95": lat[c][int(0.95 * (len(lat[c]) - 1))],
            "cold_p50": statistics.median(cold[c]),
            "recall": statistics.fmean(rec[c]),
        })  # fmt: skip
    return out


def qdrant_local(matrix: np.ndarray, qs: np.ndarray, want: list[set[int]]) -> tuple[dict, float]:
    """The same search in qdrant-client's local mode, as the Qdrant store sends it (binary
    quantization asked for, rescoring): exact brute force in-process, not a server's HNSW."""
    import warnings

    from qdrant_client import QdrantClient, models

    client = QdrantClient(":memory:")
    client.create_collection(
        "v",
        vectors_config=models.VectorParams(size=matrix.shape[1], distance=models.Distance.COSINE),
        quantization_config=models.BinaryQuantization(binary=models.BinaryQuantizationConfig()),
    )
    t0 = time.perf_counter()
    for start in range(0, len(matrix), 2000):
        part = matrix[start : start + 2000]
        client.upload_collection("v", part, ids=list(range(start, start + len(part))))
    build = time.perf_counter() - t0
    params = models.SearchParams(quantization=models.QuantizationSearchParams(rescore=True))
    lat, rec = [], []
    for q, t in zip(qs, want, strict=True):
        runs = []
        for _ in range(3):
            t1 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = client.query_points("v", query=q, limit=K, search_params=params).points
            runs.append((time.perf_counter() - t1) * 1000)
        lat.append(statistics.median(runs))
        rec.append(len({int(p.id) for p in got} & t) / K)
    lat.sort()
    out = {"p50": statistics.median(lat), "p95": lat[int(0.95 * (len(lat) - 1))]}
    return out | {"recall": statistics.fmean(rec)}, build


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, required=True, help="folder holding autodoc.db")
    ap.add_argument("--golden", type=Path, action="append", required=True)
    ap.add_argument("--sizes", default="111000,1000000,3000000")
    ap.add_argument("--n-queries", type=int, default=200)
    ap.add_argument(
        "--hnsw-shortlists",
        type=lambda v: [x if x == "auto" else int(x) for x in v.split(",")],
        default=["auto", 800],
        help="graph neighbours rescored, one row each; auto: the shipped rule (hnsw_shortlist)",
    )
    ap.add_argument(
        "--expansion-add",
        type=lambda v: [int(x) for x in v.split(",")],
        default=[usearch_index.GRAPH_BUILD["expansion_add"]],
        help="graphs to build, one for each (the build's candidate list); default: the shipped",
    )
    ap.add_argument(
        "--connectivity",
        type=lambda v: [int(x) for x in v.split(",")],
        default=[usearch_index.GRAPH_BUILD["connectivity"]],
        help="graphs to build, one for each (M, times each --expansion-add); default: shipped",
    )
    ap.add_argument("--qdrant-upto", type=int, default=200_000, help="local mode up to this size")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    real = real_vectors(args.db / "autodoc.db")
    qs = queries_of(args.golden, args.n_queries)
    rows = []
    print(
        f"HNSW: i8, M {args.connectivity}, ef_add {args.expansion_add}, ef"
        f" {usearch_index.HNSW_EXPANSION_SEARCH}, shortlist {usearch_index.HNSW_SHORTLIST};"
        f" sign scan shortlist {usearch_index.SHORTLIST}; {len(qs)} queries",
        flush=True,
    )
    print("| vectors | method | recall@50 | p50 ms | p95 ms | p50 / scan | cold p50 ms | build s |"
          " index MB |")  # fmt: skip
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    shipped_build = dict(usearch_index.GRAPH_BUILD)
    for n in (int(s) for s in args.sizes.split(",")):
        matrix = grown(real, n)
        want = truth(matrix, qs)
        built = [(*index_of(matrix, False), "exact sign scan + f32 (baseline)", 0)]
        graphs = [(m, e) for m in args.connectivity for e in args.expansion_add]
        for m, ef_add in graphs:
            usearch_index.GRAPH_BUILD = {"connectivity": m, "expansion_add": ef_add}
            label = "HNSW + f32"
            if len(args.connectivity) > 1:
                label = f"HNSW M {m}, ef_add {ef_add} + f32"
            elif len(args.expansion_add) > 1:
                label = f"HNSW ef_add {ef_add} + f32"
            built.append((*index_of(matrix, True), label, ef_add))
        usearch_index.GRAPH_BUILD = shipped_build
        configs, names = [], []
        for vi, build, label, _ in built:
            mb = (vi.graph.memory_usage if vi.graph else vi.index.memory_usage) / 2**20
            if vi.graph is None:
                configs.append((vi, vi.shortlist_size(K)))
                names.append((f"{label}, shortlist {configs[-1][1]}", build, mb))
                continue
            for short in args.hnsw_shortlists:
                k = usearch_index.hnsw_shortlist(len(vi.graph)) if short == "auto" else short
                configs.append((vi, max(k, 2 * K)))
                rule = " (rule)" if short == "auto" else ""
                names.append((f"{label}, shortlist {configs[-1][1]}{rule}", build, mb))
        base = None
        for (name, build, mb), got in zip(names, measure_all(configs, qs, want), strict=True):
            base = base or got["p50"]
            rows.append({"n": n, "method": name, "build_s": build, "index_mb": mb, **got})
            print(
                f"| {n:,} | {name} | {got['recall']:.3f} | {got['p50']:.2f} |"
                f" {got['p95']:.2f} | {got['p50'] / base:.2f}× | {got['cold_p50']:.2f} |"
                f" {build:.1f} | {mb:.0f} |",
                flush=True,
            )
        del built, configs
        if n <= args.qdrant_upto:
            got, build = qdrant_local(matrix, qs, want)
            label = "Qdrant local mode (in-process, exact: not a server)"
            rows.append({"n": n, "method": label, "build_s": build, **got})
            print(
                f"| {n:,} | {label} | {got['recall']:.3f} | {got['p50']:.2f} | {got['p95']:.2f} |"
                f" {got['p50'] / base:.2f}× | – | {build:.1f} | – |",
                flush=True,
            )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak RSS {peak:,.0f} MB (float32 rows: {n * real.shape[1] * 4 / 2**20:,.0f} MB)")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

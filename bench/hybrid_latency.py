"""Query latency per stage set on an indexed and fully embedded workspace (cpp-docs).

Runs the same seeded queries as bench/lexical_latency.py through `search.query` with stages
lexical (the baseline), semantic, and hybrid (lexical + semantic, query embedding included),
and reports p50/p95 and the ratio to lexical measured in the same run, with the hybrid path's
breakdown (embedding the query, lexical stage, semantic stage).

    autodoc --db /tmp/cppemb/autodoc.db index ../shared/corpora/cpp-docs   # index + embed once
    python bench/hybrid_latency.py --db /tmp/cppemb [--queries 200] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lexical_latency import live_chunks, make_queries

from autodoc.engine import Engine

SETS = {"lexical": ["lexical"], "semantic": ["semantic"], "hybrid": ["lexical", "semantic"]}
# The same hybrid search under the spec's plain RRF: the cost of confidence fusion beside it.
PLAIN = "hybrid, plain RRF"


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[int(p * (len(values) - 1))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, required=True, help="folder holding autodoc.db")
    ap.add_argument("--workspace", default="cpp-docs")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    db = args.db / "autodoc.db"
    engine = Engine(db)
    status = engine.indexing.index_status(args.workspace)
    cov = status.get("semantic_coverage") or {}
    if status["semantic"] != "ready":
        print(f"semantic is {status['semantic']} ({cov}): embed every chunk first", file=sys.stderr)
        return 1
    queries = [
        q["query"] for q in make_queries(live_chunks(db, args.workspace), args.queries, args.seed)
    ]
    for q in queries[:20]:  # warm-up: model, sign index, page cache
        engine.reading.search(args.workspace, q, {"stages": SETS["hybrid"]})
    timings: dict[str, list[float]] = {k: [] for k in [*SETS, PLAIN]}
    parts: dict[str, list[float]] = {"embed_ms": [], "lexical_ms": [], "semantic_ms": []}
    for q in queries:
        for label, stages in [*SETS.items(), (PLAIN, SETS["hybrid"])]:
            opts = {"stages": stages, "limit": 10, **({"fusion": "rrf"} if label == PLAIN else {})}
            runs = []
            for _ in range(3):
                t0 = time.perf_counter()
                answer = engine.reading.search(args.workspace, q, opts)
                runs.append((time.perf_counter() - t0) * 1000)
            timings[label].append(statistics.median(runs))
            if label == "hybrid":
                for k in parts:
                    parts[k].append(answer["timings"].get(k, 0.0))
    base = statistics.median(timings["lexical"])
    print(
        f"### search.query latency on {args.workspace}: {status['chunks']:,} chunks, "
        f"{cov.get('embedded', 0):,} embedded, {len(queries)} queries\n"
    )
    print("| stages | p50 ms | p95 ms | p50 / lexical |")
    print("|---|---:|---:|---:|")
    for label, values in timings.items():
        p50 = statistics.median(values)
        print(f"| {label} | {p50:.2f} | {pct(values, 0.95):.2f} | {p50 / base:.2f}× |")
    print(
        "\nHybrid breakdown (median of per-query medians): "
        + ", ".join(
            f"{k.removesuffix('_ms')} {statistics.median(v):.2f} ms" for k, v in parts.items()
        )
    )
    if args.json:
        args.json.write_text(json.dumps({"timings": timings, "parts": parts}, indent=2))
    engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

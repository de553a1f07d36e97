"""Facet-filtered search against the same search unfiltered, on an indexed and embedded store.

Runs seeded queries (the generator of bench/lexical_latency.py) through `search.query`, each
plain and with inline facet filters of different reach (from ~0.5% of the documents to ~96%),
with stages hybrid (lexical + semantic, query embedding included) and lexical. Reports p50 and
p95, the ratio to the unfiltered query measured in the same run, how often the filtered answer
still filled its limit, and the filter's own cost (the SQLite document set).

    autodoc --db /tmp/cppemb/autodoc.db index ../shared/corpora/cpp-docs   # index + embed once
    python bench/facet_latency.py --db /tmp/cppemb [--queries 100] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hybrid_latency import pct
from lexical_latency import live_chunks, make_queries

from autodoc.engine import Engine

SCHEMA = Path(__file__).resolve().parent / "schemas" / "cpp-docs.yaml"
# (label, inline filter, structured options)
FILTERS = [
    ("none", "", {}),
    ("ms.topic:error-reference", "ms.topic:error-reference", {}),
    ("ms.topic:reference", "ms.topic:reference", {}),
    ("api_type:DLLExport", "api_type:DLLExport", {}),
    ("paths docs/mfc/", "", {"paths": ["docs/mfc/"]}),
    ("-ms.topic:reference", "-ms.topic:reference", {}),
]
SETS = {"hybrid": ["lexical", "semantic"], "lexical": ["lexical"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, required=True, help="folder holding autodoc.db")
    ap.add_argument("--workspace", default="cpp-docs")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    db = args.db / "autodoc.db"
    engine = Engine(db)
    ws = args.workspace
    t0 = time.perf_counter()
    engine.workspaces.workspace_configure(ws, {"schema": str(SCHEMA)})
    summary = engine.indexing.index_run(ws)  # loads the schema, fills the facets table
    load_s = time.perf_counter() - t0
    status = engine.indexing.index_status(ws)
    if status["semantic"] != "ready":
        print(f"semantic is {status['semantic']}: embed every chunk first", file=sys.stderr)
        return 1
    documents = status["documents"]
    queries = [q["query"] for q in make_queries(live_chunks(db, ws), args.queries, args.seed)]
    reach = {}
    for label, inline, opts in FILTERS:
        if label == "none":
            reach[label] = documents
            continue
        browse = engine.reading.search(ws, inline, {**opts, "limit": 1})
        reach[label] = browse["matched"]
    for q in queries[:10]:  # warm-up: model, sign index, page cache
        engine.reading.search(ws, q, {"stages": SETS["hybrid"]})
    results: dict[str, dict[str, dict]] = {}
    for set_name, stages in SETS.items():
        for label, inline, opts in FILTERS:
            runs_ms, filled, filter_ms, parts = [], 0, [], {"lexical_ms": [], "semantic_ms": []}
            for q in queries:
                text = f"{q} {inline}".strip()
                runs = []
                for _ in range(3):
                    t = time.perf_counter()
                    answer = engine.reading.search(
                        ws, text, {**opts, "stages": stages, "limit": 10}
                    )
                    runs.append((time.perf_counter() - t) * 1000)
                runs_ms.append(statistics.median(runs))
                filled += len(answer["hits"]) == 10
                filter_ms.append(answer["timings"].get("filter_ms", 0.0))
                for k in parts:
                    parts[k].append(answer["timings"].get(k, 0.0))
            results.setdefault(set_name, {})[label] = {
                "p50": statistics.median(runs_ms),
                "p95": pct(runs_ms, 0.95),
                "filled": filled / len(queries),
                "filter_ms": statistics.median(filter_ms),
                **{k: statistics.median(v) for k, v in parts.items()},
            }
    print(
        f"### Facet filters on {ws}: {documents:,} documents, {status['chunks']:,} chunks "
        f"(all embedded), {len(queries)} queries, limit 10, median of 3 runs each\n"
    )
    print(f"Schema {SCHEMA.name} loaded and facets written in {load_s:.1f} s "
          f"(index run {summary['seconds']:.1f} s).\n")  # fmt: skip
    for set_name, rows in results.items():
        base = rows["none"]["p50"]
        print(f"**{set_name}**\n")
        print("| filter | documents kept | p50 ms | p95 ms | p50 / unfiltered | filled 10 |"
              " filter ms | lexical ms | semantic ms |")  # fmt: skip
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for label, r in rows.items():
            kept = reach[label]
            print(
                f"| {label} | {kept:,} ({kept / documents:.1%}) | {r['p50']:.2f} | "
                f"{r['p95']:.2f} | {r['p50'] / base:.2f}× | {r['filled']:.0%} | "
                f"{r['filter_ms']:.2f} | {r['lexical_ms']:.2f} | {r['semantic_ms']:.2f} |"
            )
        print()
    if args.json:
        args.json.write_text(json.dumps({"reach": reach, "results": results}, indent=2))
    engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

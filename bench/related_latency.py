"""Latency of `related` (a section's neighbours from the stored vectors and the links) on an
indexed, fully embedded store, against a semantic-only search for the section's breadcrumb in
the same run (the baseline: the same vector search, plus embedding the query).

    python bench/related_latency.py --db STORE --workspace cpp --samples 200 --json out.json
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time

from autodoc.engine import Engine


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(p * len(xs)))], 2)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--db", required=True)
    p.add_argument("--workspace", required=True)
    p.add_argument("--samples", type=int, default=200)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--json")
    args = p.parse_args()
    engine = Engine(args.db)
    ws = engine.workspace(args.workspace)
    with engine.store.snapshot() as conn:
        rows = conn.execute(
            "SELECT d.path, c.line_start, c.line_end, c.breadcrumb FROM chunks c"
            " JOIN documents d ON d.id = c.document_id WHERE c.workspace_id = ? AND c.state = 1"
            " AND d.deleted = 0",
            (ws.id,),
        ).fetchall()
    picks = random.Random(args.seed).sample(rows, min(args.samples, len(rows)))
    engine.reading.related(ws.name, picks[0][0], picks[0][1])  # warm: the sign index, the model
    engine.reading.search(ws.name, picks[0][3], {"stages": ["semantic"]})
    section, document, baseline, hits = [], [], [], []
    for path, start, end, crumb in picks:  # interleaved, so drift hits all three alike
        t = time.perf_counter()
        answer = engine.reading.related(ws.name, path, (start + end) // 2)
        section.append((time.perf_counter() - t) * 1000)
        hits.append(len(answer["hits"]))
        t = time.perf_counter()
        engine.reading.related(ws.name, path)
        document.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        engine.reading.search(ws.name, crumb, {"stages": ["semantic"], "limit": 10})
        baseline.append((time.perf_counter() - t) * 1000)
    base = statistics.median(baseline)
    report = {
        "workspace": ws.name,
        "chunks": len(rows),
        "samples": len(picks),
        "related_section_ms": {"p50": round(statistics.median(section), 2),
                               "p95": pct(section, 0.95),
                               "ratio_p50": round(statistics.median(section) / base, 2)},
        "related_document_ms": {"p50": round(statistics.median(document), 2),
                                "p95": pct(document, 0.95),
                                "ratio_p50": round(statistics.median(document) / base, 2)},
        "baseline_semantic_search_ms": {"p50": round(base, 2), "p95": pct(baseline, 0.95)},
        "hits_median": statistics.median(hits),
    }  # fmt: skip
    engine.close()
    print(json.dumps(report, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()

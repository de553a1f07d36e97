"""Embedding throughput (chunks/s) and query-embedding latency of the bundled model, 2 cores.

Measures the shipped graph (int8 weights computed in fp32: the baseline) and the derived
per-channel int8 graph AutoDoc uses, in the same run, on real chunks sampled from a store, in
the same length-sorted batches the indexer uses; and their agreement (cosine).

    python bench/embed_speed.py --db /tmp/cppemb [--sample 512] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from autodoc.models.embedders import bundled_embedder


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, required=True, help="folder holding autodoc.db")
    ap.add_argument("--sample", type=int, default=512)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    conn = sqlite3.connect(f"file:{args.db / 'autodoc.db'}?mode=ro", uri=True)
    rows = conn.execute(
        "SELECT breadcrumb, text FROM chunks WHERE state = 1 ORDER BY id"
    ).fetchall()
    texts = [f"{b}\n\n{t}" for b, t in random.Random(args.seed).sample(rows, args.sample)]
    queries = [t.split("\n", 1)[0][:60] for t in texts[:100]]
    report = {}
    vectors = {}
    for label, optimise in (("shipped graph (baseline)", False), ("derived int8 graph", True)):
        e = bundled_embedder(optimise=optimise)
        e.embed(texts[:32])  # warm-up
        t0 = time.perf_counter()
        vectors[label] = e.embed(texts)
        seconds = time.perf_counter() - t0
        lat = []
        for q in queries:
            t1 = time.perf_counter()
            e.embed([q])
            lat.append((time.perf_counter() - t1) * 1000)
        report[label] = {
            "per_s": args.sample / seconds,
            "query_p50_ms": statistics.median(lat),
            "tokens": e.meter.tokens,
        }
    a, b = vectors.values()
    cos = (a * b).sum(axis=1)
    base = report["shipped graph (baseline)"]["per_s"]
    print(f"### Bundled all-MiniLM-L6-v2, {args.sample} chunks sampled from {args.db}\n")
    print("| graph | chunks/s | ratio | query embedding p50 ms |")
    print("|---|---:|---:|---:|")
    for label, r in report.items():
        print(
            f"| {label} | {r['per_s']:.1f} | {r['per_s'] / base:.2f}× | {r['query_p50_ms']:.2f} |"
        )
    print(
        f"\ncosine(derived, shipped) over the sample: mean {cos.mean():.4f}, "
        f"min {cos.min():.4f}, 1st percentile {np.percentile(cos, 1):.4f}"
    )
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

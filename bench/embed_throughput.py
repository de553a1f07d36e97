"""Embedding throughput of the bundled model by thread layout: today's settings against candidates.

Real chunks sampled from a store are embedded in groups of 256 (semantic.FILL_BATCH, as the
vector fill does). Every setting runs in its own process (onnxruntime's arena keeps its peak for
a session's life), interleaved A B C A B C for `--rounds` rounds; medians are printed with peak
RSS, the query-embedding p50 (`embed([q])` for each golden query, all settings in one process,
interleaved pass by pass), and the cosine of each setting's
vectors to the baseline's (a text's vector depends on the texts sharing its call, so a setting
that regroups texts changes vectors; one that only runs the same batches at once does not).

    flock /tmp/autodoc-bench.lock python bench/embed_throughput.py --db /tmp/cpp [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

GROUP = 256  # texts per embed() call: semantic.FILL_BATCH
# label -> bundled_embedder settings, plus "query_1_thread": queries on the workers' one-thread
# session too (one session, no second copy of the graph), and "batch_tokens" per call. (One run on
# two threads with onnxruntime's spinning off measured 1.00-1.29x the baseline, below two runs.)
SETTINGS: dict[str, dict] = {
    "1 run × 2 threads (baseline: before)": {"threads": 2, "workers": 1},
    "2 runs × 1 thread, queries on 1 thread": {"threads": 2, "workers": 2, "query_1_thread": True},
    "2 runs × 1 thread, queries on 2 (shipped)": {"threads": 2, "workers": 2},
    "2 runs × 1 thread, 512 tokens/call": {"threads": 2, "workers": 2, "batch_tokens": 512},
}
BASELINE = next(iter(SETTINGS))
# Real queries: the golden sets' (203), each embedded alone as search.query does.
QUERIES = [
    json.loads(line)["query"]
    for path in sorted((Path(__file__).parent / "golden").glob("*.jsonl"))
    for line in path.read_text().splitlines()
    if line.strip()
]


def sample(db: Path, n: int, seed: int) -> list[str]:
    conn = sqlite3.connect(f"file:{db / 'autodoc.db'}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT breadcrumb, text FROM chunks WHERE state = 1 ORDER BY id"
        ).fetchall()
    finally:
        conn.close()
    return [f"{b}\n\n{t}" for b, t in random.Random(seed).sample(rows, n)]


def build(label: str):
    """The bundled embedder with one setting applied."""
    from autodoc.models.embedders import bundled_embedder

    cfg = dict(SETTINGS[label])
    batch_tokens = cfg.pop("batch_tokens", None)
    query_1_thread = cfg.pop("query_1_thread", False)
    e = bundled_embedder(**cfg)
    if batch_tokens:
        e.batch_tokens = batch_tokens
    if query_1_thread:
        e.session = e.batch_session()
    return e


def child(label: str, texts_file: Path, vectors_file: Path) -> dict:
    """One setting in this process: chunks/s over the texts and peak RSS."""
    e = build(label)
    texts = json.loads(texts_file.read_text())
    e.embed(texts[:32])  # warm-up
    t0 = time.perf_counter()
    vectors = np.concatenate([e.embed(texts[i : i + GROUP]) for i in range(0, len(texts), GROUP)])
    seconds = time.perf_counter() - t0
    np.save(vectors_file, vectors)
    return {
        "per_s": len(texts) / seconds,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def query_latency(texts_file: Path) -> dict[str, float]:
    """Query-embedding p50 per setting, all in this process, interleaved pass by pass (a
    per-process figure varies by more than the settings differ; query by query, one session's
    spinning threads would slow the next session's query)."""
    texts = json.loads(texts_file.read_text())[:GROUP]
    embedders = {label: build(label) for label in SETTINGS}
    for e in embedders.values():
        e.embed(texts)  # as after a fill: the workers' session exists
    lat: dict[str, list[float]] = {label: [] for label in SETTINGS}
    for rep in range(4):  # the first pass warms up
        for label, e in embedders.items():
            for q in QUERIES:
                t0 = time.perf_counter()
                e.embed([q])
                if rep:
                    lat[label].append((time.perf_counter() - t0) * 1000)
    return {label: statistics.median(v) for label, v in lat.items()}


def run_child(label: str, texts_file: Path, vectors_file: Path) -> dict:
    argv = [sys.executable, __file__, "--child", label, "--texts-file", str(texts_file)]
    out = subprocess.run(
        [*argv, "--vectors-file", str(vectors_file)], check=True, capture_output=True, text=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, default=Path("/tmp/cpp"), help="folder holding autodoc.db")
    ap.add_argument("--sample", type=int, default=768)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--texts-file", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--vectors-file", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child == "latency":
        print(json.dumps(query_latency(args.texts_file)))
        return 0
    if args.child:
        print(json.dumps(child(args.child, args.texts_file, args.vectors_file)))
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="autodoc-embed-"))
    texts_file = tmp / "texts.json"
    texts_file.write_text(json.dumps(sample(args.db, args.sample, args.seed)))
    runs: dict[str, list[dict]] = {label: [] for label in SETTINGS}
    vectors: dict[str, np.ndarray] = {}
    for _ in range(args.rounds):
        for k, label in enumerate(SETTINGS):
            runs[label].append(run_child(label, texts_file, tmp / f"{k}.npy"))
            vectors.setdefault(label, np.load(tmp / f"{k}.npy"))
    latency = run_child("latency", texts_file, tmp / "unused.npy")
    report(args, runs, vectors, latency)
    return 0


def report(
    args, runs: dict[str, list[dict]], vectors: dict[str, np.ndarray], latency: dict[str, float]
) -> None:
    base = statistics.median(r["per_s"] for r in runs[BASELINE])
    print(
        f"{args.sample} chunks sampled (seed {args.seed}) from {args.db}, groups of {GROUP}, "
        f"{args.rounds} rounds interleaved, medians; cpus={os.cpu_count()}\n"
    )
    print("| setting | chunks/s | ratio | query p50 ms | peak RSS MB | cosine mean | cosine min |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    summary = {}
    for label, rs in runs.items():
        cos = (vectors[label] * vectors[BASELINE]).sum(axis=1)
        row = {
            "per_s": statistics.median(r["per_s"] for r in rs),
            "query_p50_ms": latency[label],
            "peak_mb": statistics.median(r["peak_mb"] for r in rs),
            "cos_mean": float(cos.mean()),
            "cos_min": float(cos.min()),
            "rounds": [round(r["per_s"], 1) for r in rs],
        }
        summary[label] = row
        print(
            f"| {label} | {row['per_s']:.1f} | {row['per_s'] / base:.2f}× "
            f"| {row['query_p50_ms']:.2f} | {row['peak_mb']:.0f} "
            f"| {row['cos_mean']:.4f} | {row['cos_min']:.4f} |"
        )
    print("\nper round chunks/s: " + "; ".join(f"{k}: {v['rounds']}" for k, v in summary.items()))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    sys.exit(main())

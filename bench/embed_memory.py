"""Embedding speed and memory by batch shape: padded tokens per onnxruntime call.

Each setting runs in its own process (onnxruntime's arena keeps its peak for the life of a
session, so settings must not share one): the bundled model embeds the same real chunks in
groups of 256 (as the vector fill does) and reports chunks/s, RSS after the run and peak RSS.
`--runs` repeats the settings round-robin; medians are printed.

    python bench/embed_memory.py --corpus ../shared/corpora/adr --texts 768 --runs 3
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# (label, batch_tokens, max_batch): "32 texts" is the old fixed batch of 32 (256-token texts).
SETTINGS = [
    ("32 texts/call (before)", 32 * 256, 32),
    ("8 texts/call", 8 * 256, 8),
    ("4 texts/call", 4 * 256, 4),
    ("256 tokens/call (shipped)", 256, 32),
]


def texts_from(corpus: Path, n: int) -> list[str]:
    from autodoc.parse.chunking import Chunker
    from autodoc.parse.document import parse_document
    from autodoc.wire import workspace_options

    options = workspace_options.defaults()
    chunker = Chunker(options["section_tokens"], options["abstract_chunk"])
    out: list[str] = []
    for path in sorted(corpus.rglob("*.md")):
        parsed = parse_document(path.read_bytes(), path.relative_to(corpus).as_posix())
        out.extend(c.embed_text for c in chunker.chunk(parsed))
        if len(out) >= n:
            break
    return out[:n]


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def child(args) -> None:
    from autodoc.models.embedders import load_embedder

    texts = json.loads(Path(args.texts_file).read_text())
    embedder = load_embedder({"provider": "bundled"})
    embedder.batch_tokens, embedder.max_batch = args.batch_tokens, args.max_batch
    before = rss_mb()
    t0 = time.perf_counter()
    for i in range(0, len(texts), 256):
        embedder.embed(texts[i : i + 256])
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps(
            {
                "per_s": len(texts) / seconds,
                "rss_before_mb": before,
                "rss_after_mb": rss_mb(),
                "peak_mb": peak,
            }
        )
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--corpus", default=str(REPO.parent / "shared" / "corpora" / "adr"))
    p.add_argument("--texts", type=int, default=768)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--texts-file", help=argparse.SUPPRESS)
    p.add_argument("--batch-tokens", type=int, help=argparse.SUPPRESS)
    p.add_argument("--max-batch", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args)
        return
    texts = texts_from(Path(args.corpus), args.texts)
    texts_file = Path(os.environ.get("TMPDIR", "/tmp")) / "autodoc-embed-memory-texts.json"
    texts_file.write_text(json.dumps(texts))
    results: dict[str, list[dict]] = {label: [] for label, _, _ in SETTINGS}
    for _ in range(args.runs):
        for label, tokens, cap in SETTINGS:
            out = subprocess.run(
                [sys.executable, __file__, "--child", "--texts-file", str(texts_file),
                 "--batch-tokens", str(tokens), "--max-batch", str(cap)],
                check=True, capture_output=True, text=True,
            ).stdout  # fmt: skip
            results[label].append(json.loads(out.strip().splitlines()[-1]))
    base = statistics.median(r["per_s"] for r in results[SETTINGS[0][0]])
    print(f"{len(texts)} chunks from {args.corpus}, {args.runs} runs, cpus={os.cpu_count()}")
    print(f"{'setting':28} {'chunks/s':>9} {'vs before':>9} {'RSS after':>10} {'peak RSS':>9}")
    for label, _, _ in SETTINGS:
        rs = results[label]
        per_s = statistics.median(r["per_s"] for r in rs)
        after = statistics.median(r["rss_after_mb"] for r in rs)
        peak = statistics.median(r["peak_mb"] for r in rs)
        print(f"{label:28} {per_s:9.1f} {per_s / base:8.2f}x {after:8.0f}MB {peak:7.0f}MB")


if __name__ == "__main__":
    main()

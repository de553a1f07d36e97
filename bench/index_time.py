"""Indexing time and peak memory: `autodoc index` on a corpus, fresh and unchanged.

Each run is a separate `autodoc index` process on a fresh store (peak RSS from wait4), then the
same command again on the unchanged vault. The baseline, measured in the same run, is the I/O
floor: reading and hashing every Markdown file once.

    python bench/index_time.py [--corpus ../shared/corpora/cpp-docs] [--runs 3]
        [--embedding none|bundled] [--json OUT]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_index(corpus: Path, db: Path, embedding: str) -> tuple[float, int, dict]:
    exe = shutil.which("autodoc", path=os.path.dirname(sys.executable)) or "autodoc"
    if not db.exists():  # the embedding choice is made before the first run
        name = corpus.name
        for method, params in (
            ("workspace.add", [name, str(corpus)]),
            ("workspace.configure", [name, {"embedding": embedding}]),
        ):
            subprocess.run(
                [exe, "--db", str(db), "--call", method, json.dumps(params)],
                check=True,
                capture_output=True,
            )
    started = time.perf_counter()
    proc = subprocess.Popen(
        [exe, "--db", str(db), "index", str(corpus), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"autodoc index failed with {status}")
    return wall, usage.ru_maxrss, json.loads(out)


def read_and_hash(corpus: Path) -> float:
    started = time.perf_counter()
    for path in sorted(corpus.rglob("*.md")):
        hashlib.sha256(path.read_bytes()).digest()
    return time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default="../shared/corpora/cpp-docs", help="relative to the repo")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument(
        "--embedding",
        default="none",
        help="none (the lexical index alone: the default) or bundled (include embedding)",
    )
    ap.add_argument("--json", help="write the raw numbers here")
    args = ap.parse_args()
    corpus = (REPO / args.corpus).resolve()
    fresh, again, floor = [], [], []
    summary = summary_again = None
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "autodoc.db"
            floor.append((read_and_hash(corpus), 0))
            wall, rss, summary = run_index(corpus, db, args.embedding)
            fresh.append((wall, rss))
            wall, rss, summary_again = run_index(corpus, db, args.embedding)
            again.append((wall, rss))
    mb = sum(p.stat().st_size for p in corpus.rglob("*.md")) / 1e6

    def med(rows, i):
        return statistics.median(r[i] for r in rows)

    base = med(floor, 0)
    print(f"### `autodoc index` on {args.corpus} ({summary['files']} files, {mb:.1f} MB)\n")
    print("| run | median wall s | ratio to read+hash | peak RSS MB | MB/s |")
    print("|---|---:|---:|---:|---:|")
    print(f"| baseline: read + sha256 every file | {base:.2f} | 1.0× | – | {mb / base:.0f} |")
    for label, rows in (("fresh index", fresh), ("re-run, unchanged vault", again)):
        w = med(rows, 0)
        print(f"| {label} | {w:.2f} | {w / base:.1f}× | {med(rows, 1) / 1024:.0f} | {mb / w:.1f} |")
    print(
        f"\nfresh: {summary['files']} files, {summary['chunks']} chunks, "
        f"{len(summary['skipped'])} skipped, {len(summary['warnings'])} warnings; "
        f"re-run: {summary_again['unchanged']} unchanged, {summary_again['chunks_written']} "
        f"chunks written. {args.runs} runs, median; os.cpu_count() = {os.cpu_count()}."
    )
    if summary["skipped"]:
        print(
            "\nskipped:", *(f"- {s['path']}: {s['reason']}" for s in summary["skipped"]), sep="\n"
        )
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {"fresh": fresh, "again": again, "floor": floor, "summary": summary}, indent=2
            )
        )


if __name__ == "__main__":
    main()

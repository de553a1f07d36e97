"""Indexing time and peak memory: `autodoc index` on a corpus, fresh and unchanged.

Each run is a separate `autodoc index` process on a fresh store (peak RSS from wait4), then the
same command again on the unchanged vault. The baseline, measured in the same run, is the I/O
floor: reading and hashing every Markdown file once.

    python bench/index_time.py [--corpus ../shared/corpora/cpp-docs] [--runs 3]
        [--embedding none|bundled] [--json OUT] [--before REV]

With `--before REV` the same runs are made, interleaved (order alternating run by run), with
the code of another git revision (checked out into a temporary worktree), and the table
compares the two: medians and the ratio after/before, measured in one run.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_index(
    corpus: Path, db: Path, embedding: str, src: Path | None = None
) -> tuple[float, int, dict, float]:
    """One `autodoc index` process: wall seconds, peak RSS, its summary, CPU seconds (user +
    system, all threads). `src`: a checkout whose sidecar/ to run instead."""
    exe = [shutil.which("autodoc", path=os.path.dirname(sys.executable)) or "autodoc"]
    env = None
    if src is not None:
        exe = [sys.executable, "-m", "autodoc"]
        env = {**os.environ, "PYTHONPATH": str(src / "sidecar")}
    if not db.exists():  # the embedding choice is made before the first run
        name = corpus.name
        for method, params in (
            ("workspace.add", [name, str(corpus)]),
            ("workspace.configure", [name, {"embedding": embedding}]),
        ):
            subprocess.run(
                [*exe, "--db", str(db), "--call", method, json.dumps(params)],
                check=True,
                capture_output=True,
                env=env,
            )
    started = time.perf_counter()
    proc = subprocess.Popen(
        [*exe, "--db", str(db), "index", str(corpus), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"autodoc index failed with {status}")
    return wall, usage.ru_maxrss, json.loads(out), usage.ru_utime + usage.ru_stime


def read_and_hash(corpus: Path) -> float:
    started = time.perf_counter()
    for path in sorted(corpus.rglob("*.md")):
        hashlib.sha256(path.read_bytes()).digest()
    return time.perf_counter() - started


@contextlib.contextmanager
def checkout(rev: str | None) -> Iterator[Path | None]:
    """The repository at another revision, in a temporary git worktree (None: no revision)."""
    if rev is None:
        yield None
        return
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        git = ["git", "-C", str(REPO), "worktree"]
        subprocess.run([*git, "add", "--detach", str(src), rev], check=True, capture_output=True)
        try:
            yield src
        finally:
            subprocess.run([*git, "remove", "--force", str(src)], check=False)


def measure(corpus: Path, embedding: str, src: Path | None) -> tuple[tuple, tuple, dict, dict]:
    """A fresh index on a new store, then the same command on the unchanged vault."""
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "autodoc.db"
        wall, rss, summary, cpu = run_index(corpus, db, embedding, src)
        wall2, rss2, summary_again, cpu2 = run_index(corpus, db, embedding, src)
    return (wall, rss, cpu), (wall2, rss2, cpu2), summary, summary_again


def med(rows: list[tuple], i: int) -> float:
    return statistics.median(r[i] for r in rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default="../shared/corpora/cpp-docs", help="relative to the repo")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument(
        "--embedding",
        default="none",
        help="none (the lexical index alone: the default) or bundled (include embedding)",
    )
    ap.add_argument("--before", help="also run this git revision, interleaved, and compare")
    ap.add_argument("--json", help="write the raw numbers here")
    args = ap.parse_args()
    corpus = (REPO / args.corpus).resolve()
    with checkout(args.before) as old_src:
        results = collect(args, corpus, old_src)
    report(args, corpus, results)


def collect(args, corpus: Path, old_src: Path | None) -> dict[str, dict]:
    """{"after": ..., "before": ...}: each with fresh and re-run (wall, rss) rows, summaries."""
    versions = {"after": None} if old_src is None else {"before": old_src, "after": REPO}
    results: dict[str, dict] = {v: {"fresh": [], "again": []} for v in versions}
    floor = []
    for run in range(args.runs):
        floor.append((read_and_hash(corpus), 0))
        order = list(versions) if run % 2 == 0 else list(reversed(versions))
        for version in order:
            r = results[version]
            fresh, again, r["summary"], r["summary_again"] = measure(
                corpus, args.embedding, versions[version]
            )
            r["fresh"].append(fresh)
            r["again"].append(again)
    results["floor"] = {"rows": floor}
    return results


def report(args, corpus: Path, results: dict[str, dict]) -> None:
    mb = sum(p.stat().st_size for p in corpus.rglob("*.md")) / 1e6
    base = med(results["floor"]["rows"], 0)
    summary, summary_again = results["after"]["summary"], results["after"]["summary_again"]
    print(f"### `autodoc index` on {args.corpus} ({summary['files']} files, {mb:.1f} MB)\n")
    print("| run | median wall s | ratio to read+hash | CPU s | peak RSS MB | MB/s |")
    print("|---|---:|---:|---:|---:|---:|")
    print(f"| baseline: read + sha256 every file | {base:.2f} | 1.0× | – | – | {mb / base:.0f} |")
    for version in [v for v in ("before", "after") if v in results]:
        label = f"{version} ({args.before}): " if version == "before" else ""
        if version == "after" and args.before:
            label = "after (working tree): "
        for kind, name in (("fresh", "fresh index"), ("again", "re-run, unchanged vault")):
            rows = results[version][kind]
            w = med(rows, 0)
            print(
                f"| {label}{name} | {w:.2f} | {w / base:.1f}× | {med(rows, 2):.2f} "
                f"| {med(rows, 1) / 1024:.0f} | {mb / w:.1f} |"
            )
    if args.before:
        for kind in ("fresh", "again"):
            ratio = med(results["after"][kind], 0) / med(results["before"][kind], 0)
            cpu = med(results["after"][kind], 2) / med(results["before"][kind], 2)
            print(f"\n{kind}: after / before = **{ratio:.2f}×** wall, {cpu:.2f}× CPU", end="")
        walls = {v: [round(r[0], 2) for r in results[v]["fresh"]] for v in ("before", "after")}
        print(f"\n\nfresh walls, run by run: {walls}")
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
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()

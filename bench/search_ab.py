"""Search latency of the working tree against another git revision, interleaved in one run.

A refactor must leave the query path as fast as it was. This indexes (and embeds) a corpus once
with the working tree, copies the store and brings the copy up to date with the other revision
(its chunker and its lexical index format: a revision never reads an index another format
wrote), then runs the same seeded queries (bench/lexical_latency.py's generator) through
`search.query` for each stage set, alternating the two revisions round by round in fresh
processes, each on its own store, and reports per stage set the median over queries of each
query's median, for both, and the ratio after / before.

    python bench/search_ab.py --before REV [--corpus ../shared/corpora/adr] [--queries 100]
        [--rounds 6] [--embedding bundled|none] [--json OUT] [--work DIR] [--workspace NAME]

With `--work DIR`, the stores are kept (DIR for the working tree, DIR-before for REV) and reused;
both are brought up to date first, so neither hashes files whose stat moved since (a corpus
unpacked again) while the other does not.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from index_time import checkout

REPO = Path(__file__).resolve().parents[1]
SETS = {"lexical": ["lexical"], "semantic": ["semantic"], "hybrid": ["lexical", "semantic"]}


def child(db: Path, queries_file: Path, workspace: str, sets: list[str]) -> None:
    """One pass: every query once untimed, then once timed, per stage set; ms as JSON."""
    from autodoc.engine import Engine

    engine = Engine(db)
    reading = getattr(engine, "reading", engine)  # a revision before the engine's concerns
    queries = json.loads(queries_file.read_text())
    out: dict[str, list[float]] = {}
    for label in sets:
        opts = {"stages": SETS[label], "limit": 10}
        for q in queries:
            reading.search(workspace, q, opts)
        times = []
        for q in queries:
            t0 = time.perf_counter()
            reading.search(workspace, q, opts)
            times.append((time.perf_counter() - t0) * 1000)
        out[label] = times
    engine.close()
    print(json.dumps(out))


def run(
    src: Path, db: Path, queries_file: Path, workspace: str, sets: list[str]
) -> dict[str, list[float]]:
    env = {**os.environ, "PYTHONPATH": str(src / "sidecar")}
    env.pop("AUTODOC_DB", None)
    args = [sys.executable, __file__, "--child", str(db), str(queries_file), workspace, *sets]
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def call(src: Path, db: Path, method: str, params: list) -> None:
    """One dispatcher call with `src`'s code on `db`."""
    env = {**os.environ, "AUTODOC_DB": str(db), "PYTHONPATH": str(src / "sidecar")}
    args = [sys.executable, "-m", "autodoc", "--call", method, json.dumps(params)]
    subprocess.run(args, env=env, check=True, capture_output=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="the git revision to compare with")
    ap.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpora" / "adr")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--embedding", choices=("bundled", "none"), default="bundled")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--work", type=Path, help="keep the indexed store here (reused when present)")
    ap.add_argument("--workspace", default="bench", help="the workspace name in the store")
    args = ap.parse_args()
    # here, not at the top: a child runs the other revision, whose modules may live elsewhere
    from lexical_latency import live_chunks, make_queries

    sets = ["lexical"] + (["semantic", "hybrid"] if args.embedding == "bundled" else [])
    with tempfile.TemporaryDirectory() as tmp, checkout(args.before) as old:
        assert old is not None
        work = args.work or Path(tmp) / "store"
        work.mkdir(parents=True, exist_ok=True)
        db = work / "autodoc.db"
        ws = args.workspace
        setup = [
            ["workspace.add", [ws, str(args.corpus.resolve())]],
            ["workspace.configure", [ws, {"embedding": args.embedding}]],
            ["index.run", [ws]],
        ]
        for method, params in setup if not db.exists() else setup[-1:]:
            call(REPO, db, method, params)  # a kept store re-reads files whose stat moved
        before_work = work.with_name(work.name + "-before")
        if not before_work.exists():
            shutil.copytree(work, before_work)
        call(old, before_work / "autodoc.db", "index.run", [ws])  # its chunks, its index format
        made = make_queries(live_chunks(db, ws), args.queries, args.seed)
        queries = [q["query"] for q in made]
        queries_file = Path(tmp) / "queries.json"
        queries_file.write_text(json.dumps(queries))
        per: dict[str, dict[str, list[list[float]]]] = {"before": {}, "after": {}}
        for r in range(args.rounds):
            order = [("before", old, before_work / "autodoc.db"), ("after", REPO, db)]
            for version, src, store in order if r % 2 == 0 else order[::-1]:
                for label, times in run(src, store, queries_file, ws, sets).items():
                    per[version].setdefault(label, []).append(times)
    summary = {}
    print(
        f"corpus {args.corpus.name}, {len(queries)} queries, {args.rounds} rounds,"
        f" {os.cpu_count()} cores; before = {args.before}, after = the working tree\n"
    )
    print("| stages | before p50 ms | after p50 ms | after / before | before p95 | after p95 |")
    print("|---|---:|---:|---:|---:|---:|")
    for label in sets:
        row = {}
        for version in ("before", "after"):
            rounds = per[version][label]
            medians = [statistics.median(q) for q in zip(*rounds, strict=True)]
            medians.sort()
            row[version] = (statistics.median(medians), medians[int(0.95 * (len(medians) - 1))])
        ratio = row["after"][0] / row["before"][0]
        summary[label] = {"before": row["before"], "after": row["after"], "ratio": ratio}
        print(f"| {label} | {row['before'][0]:.2f} | {row['after'][0]:.2f} | **{ratio:.2f}×** "
              f"| {row['before'][1]:.2f} | {row['after'][1]:.2f} |")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "per": per}))
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4], sys.argv[5:])
    else:
        sys.exit(main())

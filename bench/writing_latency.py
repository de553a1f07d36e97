"""The writing methods an editor asks for as a note opens and as the cursor moves: `doc.lenses`
(code lenses: backlink counts) and `doc.actions` on the note's first heading (code actions),
against `links.document` (the document links asked for on the same open), in one run.

Over the workspace's most-linked notes (the ones whose lenses count the most links) and the
`--sample` others at random, each method `--rounds` times per file, alternating, in process
through the dispatcher (what the LSP handlers call).

    python bench/writing_latency.py --db STORE/autodoc.db --workspace cpp [--top 100 --sample 300]
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import sys
import time
from pathlib import Path

from autodoc.engine import Engine
from autodoc.serve.dispatcher import Dispatcher

METHODS = ("doc.lenses", "doc.actions", "links.document")


def _notes(db: Path, workspace: str, top: int, sample: int, seed: int) -> list[str]:
    """The `top` most-linked live notes, then `sample` others at random."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute(
            "SELECT d.path FROM documents d JOIN workspaces w ON w.id = d.workspace_id"
            " WHERE w.name = ? AND d.deleted = 0 ORDER BY d.inbound DESC, d.path",
            (workspace,),
        ).fetchall()
    paths = [r[0] for r in rows]
    rest = paths[top:]
    random.Random(seed).shuffle(rest)
    return paths[:top] + rest[:sample]


def _params(method: str, workspace: str, rel: str, first_heading: int) -> list:
    opts = {"units": "utf-16"}
    if method == "doc.actions":
        return [workspace, rel, first_heading, 2, opts]
    return [workspace, rel, opts]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--workspace", required=True)
    ap.add_argument("--top", type=int, default=100)
    ap.add_argument("--sample", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    rels = _notes(args.db, args.workspace, args.top, args.sample, args.seed)
    rpc = Dispatcher(Engine(args.db))
    times: dict[str, list[float]] = {m: [] for m in METHODS}
    links = 0
    for rel in rels:
        outline = rpc.call("doc.outline", [args.workspace, rel])["headings"]
        first = outline[0]["line"] if outline else 1
        best: dict[str, float] = {}
        for r in range(args.rounds):
            for m in METHODS if r % 2 == 0 else METHODS[::-1]:
                t0 = time.perf_counter()
                got = rpc.call(m, _params(m, args.workspace, rel, first))
                ms = (time.perf_counter() - t0) * 1000
                best[m] = min(best.get(m, ms), ms)
                if m == "doc.lenses" and r == 0:
                    links += got["lenses"][0]["links"]
        for m in METHODS:
            times[m].append(best[m])
    print(f"{len(rels)} notes ({args.top} most linked, {len(rels) - args.top} at random),"
          f" {links} backlinks counted, best of {args.rounds}\n")  # fmt: skip
    print("| method | p50 ms | p95 ms | max ms | p50 vs links.document |")
    print("|---|---:|---:|---:|---:|")
    base = statistics.median(times["links.document"])
    for m in METHODS:
        t = sorted(times[m])
        p50 = statistics.median(t)
        print(f"| `{m}` | {p50:.2f} | {t[int(0.95 * (len(t) - 1))]:.2f} | {t[-1]:.2f} "
              f"| {p50 / base:.2f}× |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

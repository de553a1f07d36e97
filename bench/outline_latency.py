"""`doc.outline` (an editor's outline: textDocument/documentSymbol) against `links.document`
(the document links an editor asks for on the same open), per document, in one run.

Both read the file confined to the root and answer in the client's units; the outline parses
it with the index's CommonMark parser, document links read the store. Over every Markdown file
of a workspace already in the store (or the `--largest` N), each method called `--rounds`
times per file, alternating, in process through the dispatcher (what the LSP handler calls).

    python bench/outline_latency.py --db STORE/autodoc.db --workspace cpp [--largest 200]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from autodoc.engine import Engine
from autodoc.serve.dispatcher import Dispatcher


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--workspace", required=True)
    ap.add_argument("--largest", type=int, default=0, help="only the N largest files (0: all)")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    rpc = Dispatcher(Engine(args.db))
    root = Path(rpc.call("index.status", [args.workspace])["root"])
    files = sorted(root.rglob("*.md"), key=lambda p: -p.stat().st_size)
    if args.largest:
        files = files[: args.largest]
    rels = [p.relative_to(root).as_posix() for p in files]
    methods = ("doc.outline", "links.document")
    times: dict[str, list[float]] = {m: [] for m in methods}
    headings = 0
    for rel in rels:
        best = {}
        for r in range(args.rounds):
            for m in methods if r % 2 == 0 else methods[::-1]:
                t0 = time.perf_counter()
                got = rpc.call(m, [args.workspace, rel, {"units": "utf-16"}])
                ms = (time.perf_counter() - t0) * 1000
                best[m] = min(best.get(m, ms), ms)
                if m == "doc.outline" and r == 0:
                    headings += len(got["headings"])
        for m in methods:
            times[m].append(best[m])
    size = sum(p.stat().st_size for p in files) / len(files) / 1024
    print(f"{len(rels)} files (mean {size:.1f} KiB), {headings} headings, best of {args.rounds}\n")
    print("| method | p50 ms | p95 ms | max ms |")
    print("|---|---:|---:|---:|")
    for m in methods:
        t = sorted(times[m])
        print(f"| `{m}` | {statistics.median(t):.2f} | {t[int(0.95 * (len(t) - 1))]:.2f} "
              f"| {t[-1]:.2f} |")  # fmt: skip
    ratio = statistics.median(times["doc.outline"]) / statistics.median(times["links.document"])
    print(f"\noutline / document links, p50: {ratio:.2f}×")
    return 0


if __name__ == "__main__":
    sys.exit(main())

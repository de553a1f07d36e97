"""Name lookup (`search.find`) latency and hit rate on an indexed workspace (cpp-docs).

Seeded names are drawn from the workspace's own dictionary (titles, aliases, headings, code
identifiers) and asked in the forms an agent or a person types them:

- exact:   the whole name, `{"exact": true}`              (`strcpy_s`)
- whole:   the whole name, default mode                    (`strcpy_s`)
- words:   its subwords, lower case, spaced                (`strcpy s`)
- later:   the subwords from the second on, camel-joined   (`WindowText` for GetWindowText)
- typed:   the first 60% of its characters                 (`GetWind`)

Each form runs through the dispatcher as a client's call would. Baselines in the same run: a
lexical `search.query` on the same text (what an agent would otherwise ask), and a scan of the
dictionary (`name LIKE '%text%'`, case-insensitive: what lookup without the key index costs).
Hit rate: the drawn name is among the first 20 matches.

    autodoc --db /tmp/cpp/autodoc.db index ../shared/corpora/cpp-docs   # once
    python bench/find_latency.py --db /tmp/cpp [--names 200] [--seed 7]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hybrid_latency import pct

from autodoc.engine import Engine
from autodoc.parse import names
from autodoc.serve.dispatcher import Dispatcher

WORDS_ONLY = {"stages": ["lexical"]}
FIXED = ["strcpy_s", "CWnd", "CWnd::Create", "GetWindowText", "malloc", "CString", "printf"]


def forms(name: str) -> dict[str, tuple[str, dict]]:
    words = names.subwords(name)
    out = {
        "exact": (name, {"exact": True}),
        "whole": (name, {}),
        "words": (" ".join(words), {}),
        "typed": (name[: max(2, round(len(name) * 0.6))], {}),
    }
    if len(words) >= 2:
        out["later"] = (words[1] + "".join(w.capitalize() for w in words[2:]), {})
    return out


def timed(fn, runs: int = 3) -> tuple[float, object]:
    best = []
    result = None
    for _ in range(runs):
        t0 = time.perf_counter()
        result = fn()
        best.append((time.perf_counter() - t0) * 1000)
    return statistics.median(best), result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, required=True, help="folder holding autodoc.db")
    ap.add_argument("--workspace", default="cpp-docs")
    ap.add_argument("--names", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    engine = Engine(args.db / "autodoc.db")
    rpc = Dispatcher(engine)
    ws = engine.workspace(args.workspace)
    with engine.store.snapshot() as conn:
        all_names = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM symbols WHERE workspace_id = ? ORDER BY id", (ws.id,)
            )
        ]
        sites = conn.execute(
            "SELECT count(*) FROM symbol_sites st JOIN symbols s ON s.id = st.symbol_id"
            " WHERE s.workspace_id = ?",
            (ws.id,),
        ).fetchone()[0]
        keys = conn.execute(
            "SELECT count(*) FROM symbol_keys WHERE workspace_id = ?", (ws.id,)
        ).fetchone()[0]
    rng = random.Random(args.seed)
    drawn = FIXED + rng.sample([n for n in all_names if len(n) >= 3], args.names)
    for name in drawn[:20]:  # warm-up: page cache, statements
        rpc.call("search.find", [args.workspace, name])
        rpc.call("search.query", [args.workspace, name, {"stages": ["lexical"]}])
    times: dict[str, list[float]] = {}
    hits: dict[str, list[bool]] = {}
    lexical: list[float] = []
    scan: list[float] = []
    for name in drawn:
        for form, (text, opts) in forms(name).items():
            ms, answer = timed(lambda t=text, o=opts: rpc.call("search.find", [ws.name, t, o]))
            times.setdefault(form, []).append(ms)
            hits.setdefault(form, []).append(any(m["name"] == name for m in answer["matches"]))
        ms, _ = timed(lambda n=name: rpc.call("search.query", [ws.name, n, WORDS_ONLY]))
        lexical.append(ms)
        with engine.store.snapshot() as conn:
            ms, _ = timed(
                lambda n=name, c=conn: c.execute(
                    "SELECT id FROM symbols WHERE workspace_id = ? AND name LIKE ? LIMIT 20",
                    (ws.id, f"%{n}%"),
                ).fetchall()
            )
        scan.append(ms)
    base = statistics.median(lexical)
    print(
        f"### search.find on {ws.name}: {len(all_names):,} names, {keys:,} keys, {sites:,} sites;"
        f" {len(drawn)} names ({len(FIXED)} fixed + {args.names} drawn, seed {args.seed})\n"
    )
    print("| query form | p50 ms | p95 ms | p50 / lexical search | name in top 20 |")
    print("|---|---:|---:|---:|---:|")
    for form, values in times.items():
        p50 = statistics.median(values)
        rate = sum(hits[form]) / len(hits[form])
        print(
            f"| find, {form} | {p50:.2f} | {pct(values, 0.95):.2f} | {p50 / base:.2f}× "
            f"| {rate:.1%} ({len(values)}) |"
        )
    print(f"| baseline: lexical search.query | {base:.2f} | {pct(lexical, 0.95):.2f} | 1.00× | |")
    print(
        f"| baseline: dictionary scan (LIKE) | {statistics.median(scan):.2f} |"
        f" {pct(scan, 0.95):.2f} | {statistics.median(scan) / base:.2f}× | |"
    )
    engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

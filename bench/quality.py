"""Retrieval quality on every BEIR dataset in ../shared/bench (visible splits), per stage set.

Runs `autodoc eval DATASET --json` for each dataset (indexing it through the real pipeline into
`--work-root/<name>`, reused on the next run) and prints one table: nDCG@10, Recall@3,
Recall@10, MRR@10 and query p50 per stage set, then the best single stage and what hybrid
gains over it.

    python bench/quality.py [--bench ../shared/bench] [--work-root /tmp/autodoc-eval] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", type=Path, default=REPO.parent / "shared" / "bench")
    ap.add_argument("--work-root", type=Path, default=Path("/tmp/autodoc-eval"))
    ap.add_argument("--datasets", help="comma-separated folder names (default: all)")
    ap.add_argument("--options", help="workspace options JSON passed to autodoc eval")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    names = (
        args.datasets.split(",")
        if args.datasets
        else sorted(p.name for p in args.bench.iterdir() if (p / "corpus.jsonl").is_file())
    )
    reports = {}
    for name in names:
        cmd = [sys.executable, "-m", "autodoc", "eval", str(args.bench / name), "--json",
               "--work", str(args.work_root / name)]  # fmt: skip
        if args.options:
            cmd += ["--options", args.options]
        t0 = time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode:
            print(f"{name}: autodoc eval failed:\n{out.stderr}", file=sys.stderr)
            return 1
        reports[name] = json.loads(out.stdout)
        print(f"{name}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    print("| dataset (split, queries, docs) | stages | nDCG@10 | Recall@3 | Recall@10 | MRR@10 |"
          " p50 ms |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, rep in reports.items():
        where = f"{name} ({rep['split']}, {rep['queries']}, {rep['documents']:,})"
        for label, r in rep["results"].items():
            print(f"| {where} | {label} | {r['ndcg@10']:.3f} | {r['recall@3']:.3f} | "
                  f"{r['recall@10']:.3f} | {r['mrr@10']:.3f} | {r['p50_ms']:.1f} |")  # fmt: skip
            where = ""
    print("\n| dataset | best single stage | its nDCG@10 | hybrid nDCG@10 | hybrid - best |")
    print("|---|---|---:|---:|---:|")
    for name, rep in reports.items():
        res = rep["results"]
        singles = {s: res[s]["ndcg@10"] for s in ("lexical", "semantic") if s in res}
        if "hybrid" not in res or not singles:
            continue
        best = max(singles, key=singles.get)
        gain = res["hybrid"]["ndcg@10"] - singles[best]
        print(f"| {name} | {best} | {singles[best]:.3f} | {res['hybrid']['ndcg@10']:.3f} | "
              f"{gain:+.3f} |")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(reports, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A plain word query: AutoDoc (lexical, hybrid) against ripgrep over the same files.

ripgrep is the reference for "instant" in an editor: `rg -l -i -w -F WORD ROOT` lists the files
holding the word (page cache warm, a process per query, as an editor plugin runs it). AutoDoc
answers in-process with ranked, snippeted hits (`search.query`, limit 10). Words: seeded picks
from the corpus's own vocabulary, spread over document frequencies. Medians of 3 runs per word;
ratios to rg in the same run.

    python bench/rg_compare.py --db /tmp/lspb-cpp/store [--words 50] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hybrid_latency import pct

from autodoc.engine import Engine


def pick_words(root: Path, n: int, seed: int) -> list[str]:
    """Words spread over document frequency: from rare (a few files) to common (thousands)."""
    df: Counter[str] = Counter()
    files = sorted(root.rglob("*.md"))
    for path in files:
        words = set(re.findall(r"[a-z]{4,}", path.read_text(errors="replace").lower()))
        df.update(words)
    ranked = [w for w, c in df.most_common() if c >= 2]
    rng = random.Random(seed)
    # log-spaced ranks: as many common words as rare ones
    picks = []
    for i in range(n):
        rank = int(len(ranked) ** (i / max(n - 1, 1))) - 1
        picks.append(ranked[min(rank + rng.randint(0, 3), len(ranked) - 1)])
    return list(dict.fromkeys(picks))


def run_rg(rg: str, word: str, root: Path) -> tuple[float, int]:
    t0 = time.perf_counter()
    out = subprocess.run([rg, "-l", "-i", "-w", "-F", word, str(root)], capture_output=True)
    return (time.perf_counter() - t0) * 1000, out.stdout.count(b"\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, required=True, help="folder of an indexed autodoc.db")
    ap.add_argument("--workspace", default="cpp-docs")
    ap.add_argument("--words", type=int, default=50)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rg = shutil.which("rg")
    if rg is None:
        print("ripgrep (rg) is not installed", file=sys.stderr)
        return 1
    engine = Engine(args.db / "autodoc.db")
    ws = engine.workspace(args.workspace)
    words = pick_words(ws.root, args.words, args.seed)
    sets = {"lexical": ["lexical"], "hybrid": ["lexical", "semantic"]}
    for w in words[:5]:  # warm: page cache, model, indexes
        run_rg(rg, w, ws.root)
        engine.reading.search(args.workspace, w, {"stages": sets["hybrid"]})
    times: dict[str, list[float]] = {"rg": [], **{k: [] for k in sets}}
    files: list[int] = []
    for w in words:
        runs = [run_rg(rg, w, ws.root) for _ in range(3)]
        times["rg"].append(statistics.median(r[0] for r in runs))
        files.append(runs[0][1])
        for label, stages in sets.items():
            runs_ms = []
            for _ in range(3):
                t0 = time.perf_counter()
                engine.reading.search(args.workspace, w, {"stages": stages, "limit": 10})
                runs_ms.append((time.perf_counter() - t0) * 1000)
            times[label].append(statistics.median(runs_ms))
    base = statistics.median(times["rg"])
    n_files = sum(1 for _ in ws.root.rglob("*.md"))
    print(
        f"### One plain word on {args.workspace} ({n_files:,} files): {len(words)} words, "
        f"matching 1 to {max(files):,} files (median {statistics.median(files):.0f})\n"
    )
    print("| search | p50 ms | p95 ms | p50 / rg |")
    print("|---|---:|---:|---:|")
    labels = {"rg": "rg -l -i -w (a process per query)", "lexical": "AutoDoc lexical",
              "hybrid": "AutoDoc hybrid (query embedded)"}  # fmt: skip
    for key, label in labels.items():
        p50 = statistics.median(times[key])
        print(f"| {label} | {p50:.2f} | {pct(times[key], 0.95):.2f} | {p50 / base:.2f}× |")
    if args.json:
        args.json.write_text(json.dumps({"words": words, "files": files, "times": times}))
    engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

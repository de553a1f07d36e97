"""Fusion sweep (issue 21): every fusion method and setting through the real pipeline, on every
visible benchmark split and golden set at once, so one setting is chosen for all of them.

Each query runs through the dispatcher's `search.query` as `autodoc eval` sends it (intent,
boosts, the per-document cap, exact-name pins included), on stores that are already indexed:
the `--work` folders `autodoc eval DATASET --work DIR` leaves, and the stores of the golden
vaults. Query vectors are computed once per query and reused across settings. Prints nDCG@10 per
BEIR set and Recall@3 / Recall@1 per golden set for each setting, and the worst gap of each to
the better of plain RRF and the best single stage.

    python bench/fusion_sweep.py --beir-root /tmp/gold/beir \
        --golden adr=/tmp/gold/adr-store/autodoc.db:bench \
        --golden dendron=/tmp/gold/dendron-store/autodoc.db:dendron --alphas 0.3,0.4,0.5
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

from autodoc.engine import Engine
from autodoc.evaluation import beir as ev
from autodoc.evaluation import golden
from autodoc.query import fusion
from autodoc.serve.dispatcher import Dispatcher

REPO = Path(__file__).resolve().parents[1]
DATASETS = ["scifact", "emanual", "cosqa", "gorilla-huggingface", "gorilla-torchhub"]
GOLDEN_FILES = {"adr": "adr.jsonl", "dendron": "dendron.jsonl", "cpp": "cpp-docs.jsonl"}


def settings(alphas: list[float], floors: list[float]):
    """(label, fusion, {module constant: value}) for every setting swept, after the baselines:
    plain RRF, the confidence fusion, each stage alone."""
    yield "rrf k=60", "rrf", {}
    yield "confidence", "confidence", {}
    yield "lexical alone", "lexical", {}
    yield "semantic alone", "semantic", {}
    for a, f in itertools.product(alphas, floors):
        consts = {"CONVEX_SEMANTIC": a, "CONVEX_FLOORS": {"lexical": 0.0, "semantic": f}}
        yield f"convex α={a}, cosine floor {f}", "convex", consts


def _wrap(plan) -> None:
    embedder = plan.embedder
    if embedder is None or getattr(embedder, "_cached", False):
        return
    inner, memo = embedder.embed, {}

    def embed(texts):
        key = tuple(texts)
        if key not in memo:
            memo[key] = inner(texts)
        return memo[key]

    embedder.embed = embed
    embedder._cached = True


def stage_set(fusion: str) -> tuple[str, str | None]:
    """A single stage is its own set (no fusion); a fusion method runs the hybrid set."""
    return (fusion, None) if fusion in ("lexical", "semantic") else ("hybrid", fusion)


class Target:
    def __init__(self, label: str, db: Path, workspace: str, run) -> None:
        self.label, self.workspace, self.run = label, workspace, run
        self.engine = Engine(db)
        self.dispatcher = Dispatcher(self.engine)
        self.engine.indexing.index_run(
            workspace
        )  # up to date with this revision's chunker and index
        _wrap(self.engine.semantic_plan(self.engine.workspace(workspace)))


def beir_target(root: Path, bench: Path, name: str) -> Target:
    work = root / name
    names = json.loads((work / "names.json").read_text())
    split = ev.beir_split(bench / name, None)
    corpus, judged = ev.load_beir(bench / name, split)
    data = ev.Dataset(name, split, judged, len(corpus), ev.documents_of(names))

    def run(t: Target, fusion: str) -> dict[str, float]:
        label, fusion_ = stage_set(fusion)
        r = ev.evaluate(t.dispatcher.call, t.workspace, data, [label], [3], fusion=fusion_)
        return {"ndcg@10": r[label]["ndcg@10"]}

    return Target(name, work / "autodoc.db", name, run)


def golden_target(spec: str) -> Target:
    label, rest = spec.split("=", 1)
    db, workspace = rest.rsplit(":", 1)
    queries = golden.load(REPO / "bench" / "golden" / GOLDEN_FILES[label])

    def run(t: Target, fusion: str) -> dict[str, float]:
        label, fusion_ = stage_set(fusion)
        r = golden.evaluate(t.dispatcher.call, t.workspace, queries, [label], fusion=fusion_)
        a = r[label]["all"]
        return {"recall@3": a["recall@3"], "recall@1": a["recall@1"], "mrr@10": a["mrr@10"]}

    return Target(label, Path(db), workspace, run)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--beir-root", type=Path)
    ap.add_argument("--bench", type=Path, default=REPO.parent / "shared" / "bench")
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument(
        "--golden", action="append", default=[], help="LABEL=DB:WORKSPACE (adr, dendron, cpp)"
    )
    ap.add_argument("--alphas", default="0.3,0.4,0.5,0.6,0.7", help="the semantic shares")
    ap.add_argument("--floors", default="0.0,0.2", help="the cosine floors")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    targets = []
    if args.beir_root:
        targets += [beir_target(args.beir_root, args.bench, n) for n in args.datasets.split(",")]
    targets += [golden_target(g) for g in args.golden]
    alphas = [float(a) for a in args.alphas.split(",")]
    floors = [float(f) for f in args.floors.split(",")]
    rows: dict[str, dict[str, dict[str, float]]] = {}
    defaults = {k: getattr(fusion, k) for k in ("CONVEX_SEMANTIC", "CONVEX_FLOORS")}
    for label, method, consts in settings(alphas, floors):
        t0 = time.perf_counter()
        for k, v in {**defaults, **consts}.items():
            setattr(fusion, k, v)
        rows[label] = {t.label: t.run(t, method) for t in targets}
        print(f"{label}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    for t in targets:
        t.engine.close()
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    print_table(rows, [t.label for t in targets])
    return 0


def print_table(rows: dict[str, dict[str, dict[str, float]]], labels: list[str]) -> None:
    metric = {lab: ("ndcg@10" if lab in DATASETS else "recall@3") for lab in labels}
    head = [f"{lab} {'nDCG@10' if metric[lab] == 'ndcg@10' else 'R@3 (R@1)'}" for lab in labels]
    print("| setting | " + " | ".join(head) + " | worst gap to RRF |")
    print("|---" + "|---:" * (len(labels) + 1) + "|")
    base = rows["rrf k=60"]
    for label, row in rows.items():
        cells, gaps = [], []
        for lab in labels:
            m = row[lab][metric[lab]]
            cell = f"{m:.3f}"
            if "recall@1" in row[lab]:
                cell += f" ({row[lab]['recall@1']:.3f})"
            cells.append(cell)
            gaps.append(m - base[lab][metric[lab]])
        print(f"| {label} | " + " | ".join(cells) + f" | {min(gaps):+.3f} |")


if __name__ == "__main__":
    sys.exit(main())

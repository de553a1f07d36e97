"""Retrieval quality on a BEIR-layout dataset, through the real pipeline, per stage set.

Each corpus entry becomes one Markdown document (`# title` then the text) in a workspace; the
queries run through `search.query` with stages lexical, semantic and both, and hits are mapped
back to corpus ids (first chunk of a document wins). Prints nDCG@10, Recall@10, Recall@3 and
MRR@10 with query latency p50/p95 per stage set.

    python bench/beir_eval.py ../shared/bench/scifact --split train [--db DIR] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

from autodoc.engine import Engine

REPO = Path(__file__).resolve().parents[1]
STAGE_SETS = {"lexical": ["lexical"], "semantic": ["semantic"], "hybrid": ["lexical", "semantic"]}


def load(dataset: Path, split: str):
    corpus = [json.loads(line) for line in (dataset / "corpus.jsonl").open()]
    queries = {q["_id"]: q["text"] for q in map(json.loads, (dataset / "queries.jsonl").open())}
    qrels: dict[str, dict[str, int]] = {}
    with (dataset / "qrels" / f"{split}.tsv").open() as f:
        next(f)
        for line in f:
            qid, did, score = line.rstrip("\n").split("\t")[:3]
            if int(score) > 0:
                qrels.setdefault(qid, {})[did] = int(score)
    return corpus, {q: queries[q] for q in qrels if q in queries}, qrels


def write_vault(corpus: list[dict], root: Path) -> dict[str, str]:
    """One file per entry, named by position (ids may hold any character)."""
    names = {}
    for i, doc in enumerate(corpus):
        name = f"d{i:06}.md"
        title = " ".join((doc.get("title") or "").split()) or doc["_id"]
        (root / name).write_text(f"# {title}\n\n{doc.get('text') or ''}\n", encoding="utf-8")
        names[name] = doc["_id"]
    return names


def ndcg_at(ranked: list[str], rel: dict[str, int], k: int = 10) -> float:
    dcg = sum((2 ** rel.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(rel.values(), reverse=True)[:k]
    idcg = sum((2**r - 1) / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: list[str], rel: dict[str, int], k: int) -> float:
    return len(set(ranked[:k]) & set(rel)) / len(rel)


def mrr_at(ranked: list[str], rel: dict[str, int], k: int = 10) -> float:
    return next((1 / (i + 1) for i, d in enumerate(ranked[:k]) if d in rel), 0.0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset", type=Path)
    ap.add_argument("--split", default="test")
    ap.add_argument("--db", type=Path, help="store folder to reuse (indexed only if needed)")
    ap.add_argument("--stages", default="lexical,semantic,hybrid")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    dataset = args.dataset if args.dataset.is_absolute() else (REPO / args.dataset).resolve()
    corpus, queries, qrels = load(dataset, args.split)
    work = args.db or Path(tempfile.mkdtemp(prefix="autodoc-beir-"))
    vault = work / "vault"
    engine = Engine(work / "autodoc.db")
    name = dataset.name.replace("_", "-")[:60]
    names_file = work / "names.json"
    setup: dict[str, float] = {}
    if not names_file.exists():
        vault.mkdir(parents=True, exist_ok=True)
        names = write_vault(corpus, vault)
        names_file.write_text(json.dumps(names))
        engine.workspace_add(name, str(vault))
        t0 = time.perf_counter()
        summary = engine.index_run(name)
        setup["index_s"] = time.perf_counter() - t0
        setup["embed_s"] = summary["embedding"]["seconds"]
        setup["embed_per_s"] = summary["embedding"]["per_second"] or 0
        print(
            f"indexed {summary['files']} docs, {summary['chunks']} chunks in "
            f"{setup['index_s']:.0f} s ({setup['embed_per_s']}/s embedding)",
            file=sys.stderr,
        )
    names = json.loads(names_file.read_text())
    results = {}
    for label in args.stages.split(","):
        stages = STAGE_SETS[label]
        scores = {"ndcg@10": [], "recall@10": [], "recall@3": [], "mrr@10": []}
        times = []
        for qid, text in queries.items():
            t0 = time.perf_counter()
            answer = engine.search(name, text, {"stages": stages, "limit": 100})
            times.append((time.perf_counter() - t0) * 1000)
            ranked = list(dict.fromkeys(names[h["path"]] for h in answer["hits"]))
            rel = qrels[qid]
            scores["ndcg@10"].append(ndcg_at(ranked, rel))
            scores["recall@10"].append(recall_at(ranked, rel, 10))
            scores["recall@3"].append(recall_at(ranked, rel, 3))
            scores["mrr@10"].append(mrr_at(ranked, rel))
        times.sort()
        results[label] = {k: statistics.fmean(v) for k, v in scores.items()}
        results[label]["p50_ms"] = statistics.median(times)
        results[label]["p95_ms"] = times[int(0.95 * (len(times) - 1))]
    print(f"### {dataset.name} ({args.split}: {len(queries)} queries, {len(corpus)} docs)\n")
    print("| stages | nDCG@10 | Recall@10 | Recall@3 | MRR@10 | p50 ms | p95 ms |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, r in results.items():
        print(
            f"| {label} | {r['ndcg@10']:.3f} | {r['recall@10']:.3f} | {r['recall@3']:.3f} | "
            f"{r['mrr@10']:.3f} | {r['p50_ms']:.1f} | {r['p95_ms']:.1f} |"
        )
    if args.json:
        args.json.write_text(json.dumps({"setup": setup, "results": results}, indent=2))
    engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`autodoc eval`: retrieval quality and query latency per stage set, through the real pipeline.

A BEIR-layout dataset (`corpus.jsonl`, `queries.jsonl`, `qrels/<split>.tsv`): each corpus entry
becomes one Markdown document (`# title`, then the text) in a workspace of its own; hits map back
to corpus ids, a document counted once at its best hit (graded nDCG as BEIR does). A vault's own
golden file is golden.py's.

Every query goes through the dispatcher's `search.query`, as the CLI, the LSP server and the
picker send it; nothing here ranks on its own.
"""

from __future__ import annotations

import json
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autodoc.query.stages import STAGE_SETS
from autodoc.wire import limits
from autodoc.wire.errors import invalid_params

# STAGE_SETS (the registry's): each retriever alone, "hybrid" (every retriever, fused), "rerank"
# (hybrid, then the ranker), named as tables show them and as `opts.mode` takes them.
DEPTH = 100  # hits read per query: deep enough for nDCG@10 after folding chunks into documents


@dataclass
class Judged:
    """One query: its text and what counts as a right answer."""

    qid: str
    text: str
    relevant: dict[str, int]  # target id -> grade (>0)


@dataclass
class Dataset:
    name: str
    split: str
    queries: list[Judged]
    documents: int = 0
    # hits of one answer -> the target ids they answer, best first (each once)
    targets: Callable[[list[dict[str, Any]]], list[str]] = field(default=lambda hits: [])


# -- metrics ---------------------------------------------------------------------------------


def ndcg_at(ranked: list[str], rel: dict[str, int], k: int = 10) -> float:
    dcg = sum((2 ** rel.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(rel.values(), reverse=True)[:k]
    idcg = sum((2**r - 1) / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: list[str], rel: dict[str, int], k: int) -> float:
    return len(set(ranked[:k]) & set(rel)) / len(rel) if rel else 0.0


def mrr_at(ranked: list[str], rel: dict[str, int], k: int = 10) -> float:
    return next((1 / (i + 1) for i, d in enumerate(ranked[:k]) if d in rel), 0.0)


# -- BEIR datasets ---------------------------------------------------------------------------


def is_beir(path: Path) -> bool:
    return (path / "corpus.jsonl").is_file() and (path / "queries.jsonl").is_file()


def beir_split(dataset: Path, split: str | None) -> str:
    """The split to read: the one asked for, else `test`, else the only one there is."""
    qrels = dataset / "qrels"
    names = sorted(p.stem for p in qrels.glob("*.tsv")) if qrels.is_dir() else []
    if split:
        if split not in names:
            raise invalid_params(f"no qrels/{split}.tsv in {dataset}", splits=names)
        return split
    if "test" in names:
        return "test"
    if len(names) == 1:
        return names[0]
    raise invalid_params(f"which split of {dataset}? pass --split", splits=names)


def load_beir(dataset: Path, split: str) -> tuple[list[dict[str, Any]], list[Judged]]:
    corpus = [json.loads(line) for line in (dataset / "corpus.jsonl").open(encoding="utf-8")]
    texts = {}
    for line in (dataset / "queries.jsonl").open(encoding="utf-8"):
        q = json.loads(line)
        # A search takes at most MAX_QUERY_WORDS words (wire/limits.py); a longer query (some of
        # Gorilla's generated instructions) is asked by its first ones, as a client must.
        texts[str(q["_id"])] = " ".join(q["text"].split()[: limits.MAX_QUERY_WORDS])
    qrels: dict[str, dict[str, int]] = {}
    with (dataset / "qrels" / f"{split}.tsv").open(encoding="utf-8") as fh:
        for n, line in enumerate(fh):
            parts = line.rstrip("\n").split("\t")
            if n == 0 and not parts[-1].lstrip("-").isdigit():
                continue  # the header
            qid, did, grade = parts[0], parts[1], int(parts[2])
            if grade > 0:
                qrels.setdefault(qid, {})[did] = grade
    judged = [Judged(q, texts[q], rel) for q, rel in qrels.items() if q in texts]
    return corpus, judged


def write_corpus(corpus: list[dict[str, Any]], root: Path) -> dict[str, str]:
    """One Markdown file per entry, named by position (ids may hold any character);
    returns {path: corpus id}."""
    root.mkdir(parents=True, exist_ok=True)
    names = {}
    for i, doc in enumerate(corpus):
        name = f"d{i:06}.md"
        title = " ".join(str(doc.get("title") or "").split()) or str(doc["_id"])
        (root / name).write_text(f"# {title}\n\n{doc.get('text') or ''}\n", encoding="utf-8")
        names[name] = str(doc["_id"])
    return names


def documents_of(names: dict[str, str]) -> Callable[[list[dict[str, Any]]], list[str]]:
    def targets(hits: list[dict[str, Any]]) -> list[str]:
        return list(dict.fromkeys(names[h["path"]] for h in hits if h["path"] in names))

    return targets


# -- running ---------------------------------------------------------------------------------


def available_sets(status: dict[str, Any]) -> list[str]:
    """The stage sets a workspace can run: semantic ones with a model, rerank with a ranker."""
    sets = ["lexical"]
    if status.get("semantic") not in (None, "off"):
        sets += ["semantic", "hybrid"]
    if (status.get("rank") or {}).get("state") not in (None, "off"):
        sets.append("rerank")  # without a model: lexical, then the ranker
    return sets


def evaluate(
    call: Callable[..., Any],
    workspace: str,
    data: Dataset,
    sets: list[str],
    ks: list[int],
    limit: int = DEPTH,
    fusion: str | None = None,
) -> dict[str, dict[str, float]]:
    """{stage set: {metric: mean, p50_ms, p95_ms}}; `call` is the dispatcher's; `fusion`:
    the search option (default: the search's own)."""
    extra = {"fusion": fusion} if fusion else {}
    results: dict[str, dict[str, float]] = {}
    for label in sets:
        scores: dict[str, list[float]] = {"ndcg@10": [], "mrr@10": []}
        scores.update({f"recall@{k}": [] for k in ks})
        times: list[float] = []
        for q in data.queries:
            t0 = time.perf_counter()
            answer = call(
                "search.query",
                [workspace, q.text, {"stages": STAGE_SETS[label], "limit": limit, **extra}],
            )
            times.append((time.perf_counter() - t0) * 1000)
            ranked = data.targets(answer["hits"])
            scores["ndcg@10"].append(ndcg_at(ranked, q.relevant))
            scores["mrr@10"].append(mrr_at(ranked, q.relevant))
            for k in ks:
                scores[f"recall@{k}"].append(recall_at(ranked, q.relevant, k))
        times.sort()
        row = {k: statistics.fmean(v) if v else 0.0 for k, v in scores.items()}
        row["p50_ms"] = statistics.median(times) if times else 0.0
        row["p95_ms"] = times[int(0.95 * (len(times) - 1))] if times else 0.0
        results[label] = row
    return results


def gate_set(results: dict[str, Any]) -> str:
    """The set a CI gate judges: the fullest search that ran (what a user gets by default)."""
    return next(s for s in reversed(STAGE_SETS) if s in results)


def table(results: dict[str, dict[str, float]], ks: list[int]) -> list[str]:
    recalls = [f"recall@{k}" for k in ks]
    head = ["stages", "nDCG@10", *[f"Recall@{k}" for k in ks], "MRR@10", "p50 ms", "p95 ms"]
    lines = ["| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
    for label, r in results.items():
        cells = [label, f"{r['ndcg@10']:.3f}", *[f"{r[m]:.3f}" for m in recalls]]
        cells += [f"{r['mrr@10']:.3f}", f"{r['p50_ms']:.1f}", f"{r['p95_ms']:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines

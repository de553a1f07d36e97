"""BM25 as Qdrant sparse vectors against AutoDoc's Tantivy lexical stage: nDCG@10 (issue 26).

For each visible BEIR set: the corpus indexed by AutoDoc (lexical only), queried through
`search.query` with the lexical stage (Tantivy: field-weighted dis-max BM25, the all-words pass
first); then the same chunks as sparse vectors in a Qdrant collection (qdrant-client's local
mode) with the IDF modifier, the term weights from AutoDoc's own analyzer (stemming, number
normalising) and its field weights (the best field's BM25 term frequency part, times its
weight, as the dis-max does), queried with the query's analyzed words. Same queries, same
qrels, documents counted once at their best chunk.

    python bench/qdrant_sparse.py ../shared/bench/scifact ../shared/bench/emanual [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import warnings
import zlib
from collections import Counter
from pathlib import Path

from qdrant_client import QdrantClient, models

from autodoc.engine import Engine
from autodoc.evaluate import DEPTH, beir_split, load_beir, ndcg_at, write_corpus
from autodoc.lexical import FIELD_WEIGHTS, analyze, link_lines, name_words, path_words
from autodoc.limits import MAX_QUERY_WORDS

K1, B = 1.2, 0.75  # Tantivy's BM25 constants


def term_id(word: str) -> int:
    return zlib.crc32(word.encode())


def fields_of(row) -> dict[str, list[str]]:
    """The chunk's words per field, as LexicalIndex.add indexes them."""
    title, aliases, tags, breadcrumb, text, path = row
    prose, links = link_lines(text)
    return {
        "title": [w for t in [title, *aliases] for w in analyze(name_words(t))],
        "path": analyze(path_words(path)),
        "breadcrumb": [w for t in [breadcrumb, *tags] for w in analyze(t)],
        "body": analyze(prose),
        "links": analyze(links),
    }


def encode(fields: dict[str, list[str]], avg: dict[str, float]) -> models.SparseVector:
    weight: dict[int, float] = {}
    for name, words in fields.items():
        norm = K1 * (1 - B + B * len(words) / max(avg[name], 1e-9))
        for word, tf in Counter(words).items():
            w = FIELD_WEIGHTS[name] * tf * (K1 + 1) / (tf + norm)
            key = term_id(word)
            weight[key] = max(weight.get(key, 0.0), w)
    keys = sorted(weight)
    return models.SparseVector(indices=keys, values=[weight[k] for k in keys])


def chunks(db: Path) -> list[tuple[int, str, tuple]]:
    import sqlite3

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = conn.execute(
        "SELECT c.id, d.path, d.title, d.aliases, d.tags, c.breadcrumb, c.text FROM chunks c"
        " JOIN documents d ON d.id = c.document_id WHERE c.state = 1 ORDER BY c.id"
    ).fetchall()
    return [
        (r[0], r[1], (r[2] or "", json.loads(r[3]), json.loads(r[4]), r[5], r[6], r[1]))
        for r in rows
    ]


def run(dataset: Path, work: Path) -> dict:
    split = beir_split(dataset, None)
    corpus, judged = load_beir(dataset, split)
    names = write_corpus(corpus, work / "vault")
    engine = Engine(work / "autodoc.db")
    engine.workspace_add("b", str(work / "vault"))
    engine.workspace_configure("b", {"embedding": "none"})
    engine.index_run("b")
    tantivy_scores, tantivy_ms = [], []
    refused = [q for q in judged if len(q.text.split()) > MAX_QUERY_WORDS]
    judged = [q for q in judged if q not in refused]  # -32602 from the search: both skip them
    for q in judged:
        t0 = time.perf_counter()
        hits = engine.search("b", q.text, {"stages": ["lexical"], "limit": DEPTH})["hits"]
        tantivy_ms.append((time.perf_counter() - t0) * 1000)
        ranked = list(dict.fromkeys(names[h["path"]] for h in hits))
        tantivy_scores.append(ndcg_at(ranked, q.relevant))
    engine.close()
    rows = chunks(work / "autodoc.db")
    words = [fields_of(r[2]) for r in rows]
    avg = {f: statistics.fmean(len(w[f]) for w in words) for f in FIELD_WEIGHTS}
    client = QdrantClient(":memory:")
    client.create_collection(
        "s",
        vectors_config={},
        sparse_vectors_config={"bm25": models.SparseVectorParams(modifier=models.Modifier.IDF)},
    )
    path_of = {r[0]: r[1] for r in rows}
    for start in range(0, len(rows), 1000):
        part = range(start, min(start + 1000, len(rows)))
        client.upsert(
            "s",
            [
                models.PointStruct(id=rows[i][0], vector={"bm25": encode(words[i], avg)})
                for i in part
            ],
        )
    sparse_scores, sparse_ms = [], []
    for q in judged:
        counts = Counter(term_id(w) for w in analyze(q.text))
        if not counts:
            sparse_scores.append(0.0)
            continue
        keys = sorted(counts)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            points = client.query_points(
                "s",
                query=models.SparseVector(indices=keys, values=[float(counts[k]) for k in keys]),
                using="bm25",
                limit=DEPTH,
            ).points
        sparse_ms.append((time.perf_counter() - t0) * 1000)
        ranked = list(dict.fromkeys(names[path_of[int(p.id)]] for p in points))
        sparse_scores.append(ndcg_at(ranked, q.relevant))
    return {
        "dataset": dataset.name,
        "split": split,
        "queries": len(judged),
        "refused": len(refused),
        "chunks": len(rows),
        "tantivy_ndcg10": statistics.fmean(tantivy_scores),
        "sparse_ndcg10": statistics.fmean(sparse_scores),
        "tantivy_p50_ms": statistics.median(tantivy_ms),
        "sparse_local_p50_ms": statistics.median(sparse_ms) if sparse_ms else 0.0,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("datasets", type=Path, nargs="+")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    out = []
    print("| set | queries | chunks | Tantivy stage nDCG@10 | Qdrant sparse nDCG@10 | ratio |"
          " Tantivy p50 ms | Qdrant local p50 ms |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for dataset in args.datasets:
        with tempfile.TemporaryDirectory() as tmp:
            r = run(dataset, Path(tmp))
        out.append(r)
        print(
            f"| {r['dataset']} ({r['split']}) | {r['queries']}"
            + (f" ({r['refused']} over {MAX_QUERY_WORDS} words left out)" if r["refused"] else "")
            + f" | {r['chunks']:,} |"
            f" {r['tantivy_ndcg10']:.3f} | {r['sparse_ndcg10']:.3f} |"
            f" {r['sparse_ndcg10'] / max(r['tantivy_ndcg10'], 1e-9):.2f}× |"
            f" {r['tantivy_p50_ms']:.2f} | {r['sparse_local_p50_ms']:.2f} |",
            flush=True,
        )
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

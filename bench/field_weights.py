"""How the lexical stage combines its fields: nDCG@10 per variant on the visible BEIR splits.

Each dataset is indexed once, lexically only (no embeddings), through the real pipeline; then
every variant re-scores the same queries by swapping how a query word's per-field clauses are
combined (summed, or the best field) and the field weights. The shipped variant is marked.

    python bench/field_weights.py [--datasets scifact:train,emanual:dev,cosqa:dev] [--queries 400]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

from tantivy import Occur, Query

from autodoc.bm25 import analyzer
from autodoc.engine import Engine
from autodoc.evaluation.beir import load_beir, ndcg_at, write_corpus

sys.path.insert(0, str(Path(__file__).resolve().parent))

REPO = Path(__file__).resolve().parents[1]

VARIANTS = [
    ("sum", {"title": 3.0, "breadcrumb": 2.0, "body": 1.0}),
    ("sum", {"title": 1.5, "breadcrumb": 1.2, "body": 1.0}),
    ("max", {"title": 2.0, "breadcrumb": 1.5, "body": 1.0}),
    ("max", {"title": 1.5, "breadcrumb": 1.2, "body": 1.0}),
    ("max", dict(analyzer.FIELD_WEIGHTS)),  # shipped
    ("max", {"title": 1.1, "breadcrumb": 1.05, "body": 1.0}),
    ("sum", {"body": 1.0}),
]


def item_query(combine: str):
    def build(self, item):
        tokens = analyzer.analyze(item.text)
        if not tokens:
            return None
        per_field = []
        for name, weight in analyzer.FIELD_WEIGHTS.items():
            if len(tokens) == 1:
                q = Query.term_query(self.schema, name, tokens[0])
            else:
                q = Query.phrase_query(self.schema, name, tokens)
            per_field.append(Query.boost_query(q, weight))
        if combine == "max":
            return Query.disjunction_max_query(per_field, 0.0)
        return Query.boolean_query([(Occur.Should, q) for q in per_field])

    return build


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="scifact:train,emanual:dev,cosqa:dev")
    ap.add_argument("--queries", type=int, default=400, help="first N queries of each split")
    args = ap.parse_args()
    shipped = dict(analyzer.FIELD_WEIGHTS)
    work = Path(tempfile.mkdtemp(prefix="autodoc-fields-"))
    sets = {}
    for spec in args.datasets.split(","):
        name, split = spec.split(":")
        corpus, judged = load_beir(REPO / "../shared/bench" / name, split)
        queries = {q.qid: q.text for q in judged}
        qrels = {q.qid: q.relevant for q in judged}
        vault = work / name
        names = write_corpus(corpus, vault)
        engine = Engine(work / f"{name}.db")
        engine.workspaces.workspace_add(name, str(vault))
        engine.workspaces.workspace_configure(name, {"embedding": "none"})
        engine.indexing.index_run(name)
        sets[name] = (engine, list(queries.items())[: args.queries], qrels, names)
    print(
        "| combine | weights (title / breadcrumb / body) | "
        + " | ".join(f"{n} nDCG@10" for n in sets)
        + " |"
    )
    print("|---|---|" + "---:|" * len(sets))
    original = analyzer.LexicalIndex._item_query
    for combine, weights in VARIANTS:
        analyzer.FIELD_WEIGHTS.clear()
        analyzer.FIELD_WEIGHTS.update(weights)
        analyzer.LexicalIndex._item_query = item_query(combine)
        cells = []
        for name, (engine, queries, qrels, names) in sets.items():
            scores = []
            for qid, text in queries:
                hits = engine.reading.search(name, text, {"stages": ["lexical"], "limit": 100})[
                    "hits"
                ]
                ranked = list(dict.fromkeys(names[h["path"]] for h in hits))
                scores.append(ndcg_at(ranked, qrels[qid]))
            cells.append(f"{statistics.fmean(scores):.3f}")
        label = " / ".join(f"{weights.get(f, 0):g}" for f in ("title", "breadcrumb", "body"))
        mark = " (shipped)" if combine == "max" and weights == shipped else ""
        print(f"| {combine}{mark} | {label} | " + " | ".join(cells) + " |", flush=True)
    analyzer.LexicalIndex._item_query = original
    print(json.dumps({"queries_per_set": args.queries}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Fusion lab (issue 10): each stage's ranked list with its raw scores, captured once per query,
then fusion methods compared offline on the same lists.

Capture reads the stores `autodoc eval --work` built (bench/quality.py leaves them under
/tmp/autodoc-eval/<name>): for every judged query, the lexical top 50 (BM25 scores, and whether
any chunk held every word) and the semantic top 50 (cosines), exactly as `search.query` sees
them (visible chunks, mapped to corpus ids). Evaluation folds chunks into documents and reports
nDCG@10 per method next to each stage alone, so a method's constants are chosen on all the
visible splits at once, never per dataset.

    python bench/fusion_lab.py capture [--work-root /tmp/autodoc-eval] \
        [--out /tmp/fusion-lists.json]
    python bench/fusion_lab.py compare [--lists /tmp/fusion-lists.json]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

from autodoc.evaluation.beir import beir_split, load_beir, ndcg_at

DATASETS = ["scifact", "emanual", "cosqa", "gorilla-huggingface", "gorilla-torchhub"]
TOP = 50


def capture(work_root: Path, bench: Path, out: Path) -> None:
    from autodoc.engine import Engine
    from autodoc.parse.query_parser import parse_query
    from autodoc.store import read_epochs
    from autodoc.vectors.coverage import semantic_coverage
    from autodoc.vectors.nearest import _visible, sign_bits

    lists = {}
    for name in DATASETS:
        work = work_root / name
        names = json.loads((work / "names.json").read_text())
        split = beir_split(bench / name, None)
        _, judged = load_beir(bench / name, split)
        engine = Engine(work / "autodoc.db")
        ws = engine.workspace(name)
        lexical = engine.lexical(ws)
        plan = engine.semantic_plan(ws)
        rows = []
        with engine.store.snapshot() as conn:
            epochs = read_epochs(conn, ws.id)
            lexical.refresh(epochs[0])
            plan.signs.refresh(conn, ws.id, plan.model_fp, epochs[1])
            semantic_coverage(conn, engine.store, ws, plan.model_fp, epochs)
            paths = {r[0]: r[1] for r in conn.execute("SELECT id, path FROM documents")}
            for q in judged:
                query = parse_query(q.text)
                lex, all_words = [], False
                for mode in (True, False):
                    built = lexical.build(query, all_words=mode)
                    if built is None:
                        break
                    pairs = lexical.search(built, TOP * 2)
                    visible = engine.store.visible_chunks(conn, ws.id, [c for c, _ in pairs])
                    got = [(c, visible[c], s) for c, s in pairs if c in visible]
                    if mode and got:
                        all_words = True
                    seen = {c for c, _, _ in lex}
                    lex += [g for g in got if g[0] not in seen]
                    if len(lex) >= TOP:
                        break
                lex = lex[:TOP]
                qvec = plan.embedder.embed([query.text])[0]
                keys = plan.signs.shortlist(qvec, sign_bits(qvec), 600)
                ranked = plan.signs.rescore(keys, qvec)
                found = _visible(conn, engine.store, ws.id, plan.model_fp, ranked, None, TOP, True)
                sem = found[:TOP]  # (chunk, document, cosine)
                rows.append({
                    "rel": q.relevant,
                    "all_words": all_words,
                    "words": len(query.items),
                    "lex": [(c, names[paths[d]], s) for c, d, s in lex],
                    "sem": [(c, names[paths[d]], x) for c, d, x in sem],
                })  # fmt: skip
        engine.close()
        lists[name] = rows
        print(f"{name}: {len(rows)} queries", file=sys.stderr)
    out.write_text(json.dumps(lists))


# -- methods: (lex list, sem list, query row) -> [chunk ids best first] -----------------------


def _docs(fused: dict, docof: dict) -> list[str]:
    order = sorted(fused, key=lambda c: -fused[c])
    return list(dict.fromkeys(docof[c] for c in order))


def rrf(row, k=60, w_lex=1.0, w_sem=1.0, depth_lex=TOP, depth_sem=TOP):
    fused, docof = {}, {}
    for w, items, depth in ((w_lex, row["lex"], depth_lex), (w_sem, row["sem"], depth_sem)):
        for rank, (c, d, _) in enumerate(items[:depth], 1):
            fused[c] = fused.get(c, 0.0) + w / (k + rank)
            docof[c] = d
    return _docs(fused, docof)


def single(row, which):
    return list(dict.fromkeys(d for _, d, _ in row[which]))


def weights_from_scores(row, sharp=4.0, base=0.5):
    """Per query: each list's confidence from how far its top stands above its tenth,
    relative to its own scale; RRF weighted by the two confidences."""

    def spread(items):
        if len(items) < 2:
            return 0.0
        s = [x for _, _, x in items[:10]]
        top, tail = s[0], s[-1]
        scale = abs(top) or 1.0
        return max(0.0, (top - tail) / scale)

    a, b = spread(row["lex"]), spread(row["sem"])
    w_lex = base + (1 - base) * math.tanh(sharp * a)
    w_sem = base + (1 - base) * math.tanh(sharp * b)
    return rrf(row, w_lex=w_lex, w_sem=w_sem)


def confidence_weighted(row):
    """The shipped method (`fuse.confidence_weights`, k = `fuse.CONFIDENCE_K`): RRF with
    per-query weights from the semantic top cosine and the lexical BM25 gap."""
    from autodoc.query import fusion

    w_lex, w_sem = fusion.confidence_weights(
        [x for _, _, x in row["lex"]], [x for _, _, x in row["sem"]]
    )
    return rrf(row, k=fusion.CONFIDENCE_K, w_lex=w_lex, w_sem=w_sem)


def all_words_gate(row, weak=0.3):
    """Lexical counts in full only when some chunk holds every query word."""
    return rrf(row, w_lex=1.0 if row["all_words"] else weak)


METHODS = {
    "lexical": lambda r: single(r, "lex"),
    "semantic": lambda r: single(r, "sem"),
    "rrf k=60": rrf,
    "rrf, lexical gated on all words (0.3)": all_words_gate,
    "rrf weighted by score spread": weights_from_scores,
    "confidence (shipped: top cosine and BM25 gap, k 20)": confidence_weighted,
}


def compare(lists_path: Path) -> None:
    lists = json.loads(lists_path.read_text())
    print("| method | " + " | ".join(lists) + " | worst gap to the better stage |")
    print("|---" + "|---:" * (len(lists) + 1) + "|")
    singles = {
        name: {
            s: statistics.fmean(ndcg_at(METHODS[s](r), r["rel"]) for r in rows)
            for s in ("lexical", "semantic")
        }
        for name, rows in lists.items()
    }
    for label, method in METHODS.items():
        cells, gaps = [], []
        for name, rows in lists.items():
            score = statistics.fmean(ndcg_at(method(r), r["rel"]) for r in rows)
            cells.append(f"{score:.3f}")
            gaps.append(score - max(singles[name].values()))
        print(f"| {label} | " + " | ".join(cells) + f" | {min(gaps):+.3f} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    cap = sub.add_parser("capture")
    cap.add_argument("--work-root", type=Path, default=Path("/tmp/autodoc-eval"))
    cap.add_argument(
        "--bench", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "bench"
    )
    cap.add_argument("--out", type=Path, default=Path("/tmp/fusion-lists.json"))
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("--lists", type=Path, default=Path("/tmp/fusion-lists.json"))
    args = ap.parse_args()
    if args.cmd == "capture":
        capture(args.work_root, args.bench, args.out)
    else:
        compare(args.lists)
    return 0


if __name__ == "__main__":
    sys.exit(main())

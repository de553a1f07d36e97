"""Train the ranking model (sidecar/autodoc/query/ranking.py) and cross-validate it.

Three steps, each reusing the last one's files under `--work`:

1. `capture`: every judged query of every visible set (the BEIR splits in `--beir-root`, the
   golden vaults given by `--golden`) through the real engine, once a stage set (hybrid,
   lexical, semantic); the search's trace holds the fuse stage's candidates and their features,
   and the store says where each lies, so each candidate is labelled: it answers (its document
   is judged relevant; for a golden query with a line, its span holds that line) or not.
2. `folds`: leave one set out at a time. For each model family and setting, fit on the other
   sets and rank the left-out one's candidates; the table says which is best on sets it did not
   see (nDCG@10 for BEIR, Recall@1/@3 and section Recall@3 for the golden sets), next to the
   captured plain-RRF order. The choice is made on these figures only.
3. `ship`: fit the chosen setting on every set and write the model file, with the floor and
   the confidence thresholds chosen on the left-out folds' probabilities; `--fold-models DIR`
   also writes each fold's model (trained without that set), for `autodoc eval` with
   AUTODOC_RANKING_MODEL=<fold model> on the left-out set: the table in
   doc/benchmarks/retrieval.md.

Needs the `[train]` extra (scikit-learn, LightGBM): build time only; the sidecar reads the JSON.

    python bench/train_ranking.py capture --beir-root /tmp/l2r/beir \\
        --golden adr=/tmp/l2r/adr/autodoc.db:bench:bench/golden/adr.jsonl ... --work /tmp/l2r/cap
    python bench/train_ranking.py folds --work /tmp/l2r/cap
    python bench/train_ranking.py ship --work /tmp/l2r/cap --fold-models /tmp/l2r/folds
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import math
import os
import pickle
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "sidecar"))

from autodoc.engine import Engine  # noqa: E402
from autodoc.evaluation import beir, golden  # noqa: E402
from autodoc.query import ranking  # noqa: E402
from autodoc.query.stages import SearchTrace  # noqa: E402

STAGE_SETS = {"hybrid": ["lexical", "semantic"], "lexical": ["lexical"], "semantic": ["semantic"]}
LIMIT = 10


@dataclass
class Captured:
    """One query's candidates under one stage set, in plain RRF's order."""

    query: str
    kind: str  # a golden query's kind; "beir"
    x: np.ndarray
    label: np.ndarray  # 1: answers; 0: does not; -1: the right document, another section
    doc: list[str]  # the document each candidate is in (a path, or a BEIR corpus id)
    grade: dict[str, int]  # the judged documents and their grades
    section_ok: np.ndarray  # its span holds a golden line (or the query has none)
    tier: np.ndarray  # lexical-first order: 0 named, 1 lexical, 2 meaning only; all 0 otherwise
    negative: bool = False
    has_line: bool = False  # a golden query whose target names a line: section Recall counts it


@dataclass
class SetCapture:
    name: str
    kind: str  # "beir" or "golden"
    queries: dict[str, list[Captured]] = field(default_factory=dict)  # by stage set
    features: tuple[str, ...] = ranking.FEATURES  # the captured columns' names


# -- 1. capture ----------------------------------------------------------------------------------


def _run(engine: Engine, ws: str, text: str, stages: list[str]) -> Any:
    """The candidates as the fuse stage saw them (the search's trace), their spans, and the
    promise tiers it keeps (`stages.fuse.promise_tiers`, the one place they are worked out)."""
    trace = SearchTrace(capture=True)
    engine.reading.search(
        ws, text, {"stages": stages, "limit": LIMIT, "fusion": "rrf"}, trace=trace
    )
    got = trace.candidates
    if got is None:
        return np.zeros((0, len(ranking.FEATURES))), [], np.zeros(0, dtype=int)
    with engine.store.snapshot() as conn:
        rows = engine.store.chunk_rows(conn, got.chunk_ids)
    spans = [(rows[c]["path"], rows[c]["line_start"], rows[c]["line_end"]) for c in got.chunk_ids]
    return got.features, spans, np.asarray(got.tiers, dtype=int)


def _capture(db: Path, ws: str, name: str, kind: str, queries: list[Any], judge) -> SetCapture:
    """Every query under every stage set; `judge(query, spans, x, tier)` makes its Captured."""
    engine = Engine(db)
    out = SetCapture(name, kind)
    try:
        for label, stages in STAGE_SETS.items():
            got = out.queries.setdefault(label, [])
            for q in queries:
                x, spans, tier = _run(engine, ws, q.query if kind == "golden" else q.text,
                                      stages)  # fmt: skip
                got.append(judge(q, spans, x, tier))
    finally:
        engine.close()
    return out


def capture_beir(root: Path, bench: Path, name: str) -> SetCapture:
    dataset = bench / name
    _, judged = beir.load_beir(dataset, beir.beir_split(dataset, None))
    names = json.loads((root / name / "names.json").read_text())

    def judge(q, spans, x, tier) -> Captured:
        doc = [names.get(p, p) for p, _, _ in spans]
        y = np.array([1 if d in q.relevant else 0 for d in doc])
        ok = np.ones(len(doc), dtype=bool)
        return Captured(q.text, "beir", x, y, doc, dict(q.relevant), ok, tier)

    return _capture(root / name / "autodoc.db", name, name, "beir", judged, judge)


def capture_golden(name: str, db: Path, ws: str, gold: Path) -> SetCapture:
    def judge(q, spans, x, tier) -> Captured:
        targets = dict(q.targets)
        y, ok = [], []
        for path, start, end in spans:
            line = targets.get(path, 0)
            section = path in targets and (line is None or start <= line <= end)
            y.append(1 if section else -1 if path in targets else 0)
            ok.append(section)
        doc = [p for p, _, _ in spans]
        return Captured(q.query, q.kind, x, np.array(y), doc, {p: 1 for p in targets},
                        np.array(ok, dtype=bool), tier, negative=q.negative,
                        has_line=q.has_line)  # fmt: skip

    return _capture(db, ws, name, "golden", golden.load(gold), judge)


def cmd_capture(args: argparse.Namespace) -> None:
    args.work.mkdir(parents=True, exist_ok=True)
    names = args.beir.split(",") if args.beir else []
    for name in names:
        cap = capture_beir(args.beir_root, args.bench, name)
        (args.work / f"{name}.pkl").write_bytes(pickle.dumps(cap))
        print(f"{name}: {len(cap.queries['hybrid'])} queries", file=sys.stderr)
    for spec in args.golden or []:
        name, rest = spec.split("=", 1)
        db, ws, gold = rest.split(":")
        cap = capture_golden(name, Path(db), ws, Path(gold))
        (args.work / f"{name}.pkl").write_bytes(pickle.dumps(cap))
        print(f"{name}: {len(cap.queries['hybrid'])} queries", file=sys.stderr)


def load_sets(work: Path) -> list[SetCapture]:
    """The captures, their interaction columns computed anew (cheap: a change to them needs no
    new capture)."""
    sets = [pickle.loads(p.read_bytes()) for p in sorted(work.glob("*.pkl"))]
    for sc in sets:
        names = list(getattr(sc, "features", ranking.BASE_FEATURES))
        for caps in sc.queries.values():
            for c in caps:
                x = np.zeros((len(c.x), len(ranking.FEATURES)))
                for j, name in enumerate(ranking.BASE_FEATURES):
                    if name in names:  # a capture from before a feature existed: 0
                        x[:, j] = c.x[:, names.index(name)]
                c.x = ranking.derive(x)
    return sets


# -- ranking a captured query --------------------------------------------------------------------


def order(c: Captured, scores: np.ndarray, section: Any = None) -> list[int]:
    """The candidates' indexes as the pipeline lists them: lexical-first tiers, then the score
    (ties: plain RRF's order, the capture's), each document's candidates trading places by the
    section model's score (`section`, a ranking.SectionModel) when there is one, at most
    PER_DOCUMENT a document."""
    idx = sorted(range(len(scores)), key=lambda i: (c.tier[i], -scores[i], i))
    if section is not None and len(scores):
        idx = ranking.within_documents(idx, c.doc, c.tier.tolist(), section.scores(c.x, scores))
    seen: dict[str, int] = {}
    out = []
    for i in idx:
        n = seen.get(c.doc[i], 0)
        if n < 3:
            out.append(i)
            seen[c.doc[i]] = n + 1
    return out[:LIMIT]


def metrics(
    sc: SetCapture, stage_set: str, scores: list[np.ndarray], section: Any = None
) -> dict[str, float]:
    """BEIR: nDCG@10 on the documents in order; golden: Recall@1/@3 (rows) and section
    Recall@3, over answerable queries (`section`: the section model the list is ordered by)."""
    rows: dict[str, list[float]] = {}
    for c, s in zip(sc.queries[stage_set], scores, strict=True):
        if c.negative:
            continue
        ranked = order(c, s, section)
        if sc.kind == "beir":
            docs = list(dict.fromkeys(c.doc[i] for i in ranked))
            rows.setdefault("ndcg@10", []).append(beir.ndcg_at(docs, c.grade))
            continue
        doc_rank = next((r for r, i in enumerate(ranked, 1) if c.doc[i] in c.grade), None)
        sec_rank = next((r for r, i in enumerate(ranked, 1) if c.label[i] == 1), None)
        rows.setdefault("recall@1", []).append(float(doc_rank == 1))
        rows.setdefault("recall@3", []).append(float(doc_rank is not None and doc_rank <= 3))
        if c.has_line:
            rows.setdefault("section@3", []).append(float(sec_rank is not None and sec_rank <= 3))
    return {k: statistics.fmean(v) for k, v in rows.items()}


def headline(sc: SetCapture, m: dict[str, float]) -> float:
    return m["ndcg@10"] if sc.kind == "beir" else m["recall@3"]


# -- 2. models -----------------------------------------------------------------------------------


def training_arrays(sets: list[SetCapture], stage_set: str, section_weight: float):
    """X, y and weights over every candidate of every query of `sets`: each set weighs the square
    root of its query count (a small golden set still counts, a large split does not drown the
    rest), shared evenly over its queries and their candidates. A candidate in the right
    document but another section is a negative of weight `section_weight`."""
    xs, ys, ws = [], [], []
    for sc in sets:
        caps = [c for c in sc.queries[stage_set] if len(c.x)]
        per_query = math.sqrt(len(caps)) / max(len(caps), 1)
        for c in caps:
            w = np.full(len(c.x), per_query / len(c.x))
            w[c.label == -1] *= section_weight
            xs.append(c.x)
            ys.append((c.label == 1).astype(int))
            ws.append(w)
    return np.vstack(xs), np.concatenate(ys), np.concatenate(ws)


FAMILIES = {
    "lr-c0.1": ("lr", {"C": 0.1}),
    "lr-c1": ("lr", {"C": 1.0}),
    "lr-c10": ("lr", {"C": 10.0}),
    "gbdt": ("gbdt", {}),
}


def fit(family: str, x: np.ndarray, y: np.ndarray, w: np.ndarray, columns: list[int]):
    kind, params = FAMILIES[family]
    xs = x[:, columns]
    if kind == "lr":
        from sklearn.linear_model import LogisticRegression

        model = LogisticRegression(max_iter=2000, **params)
        model.fit(xs, y, sample_weight=w / w.mean())
        return model
    import lightgbm

    model = lightgbm.LGBMClassifier(
        n_estimators=200, num_leaves=15, learning_rate=0.05, min_child_samples=50, verbose=-1
    )
    model.fit(xs, y, sample_weight=w / w.mean())
    return model


def predict(model, c: Captured, columns: list[int]) -> np.ndarray:
    if not len(c.x):
        return np.zeros(0)
    return model.predict_proba(c.x[:, columns])[:, 1]


_RELATIVE = (
    "lex_found",
    "lex_rank",
    "lex_z",
    "lex_all_words",
    "lex_named",
    "lex_rare_words",
    "sem_found",
    "sem_rank",
    "sem_z",
    "sem_gap",
    "idf_cover",
    "rarest_held",
    "rare_cover",
    "q_lexical_first",
    "links",
    "outlinks",
    "tag",
    "q_missing",
    "q_absent",
)
FEATURE_SETS = {
    "relative": list(_RELATIVE),
    "relative+cos": [*_RELATIVE, "sem_cos", "lex_norm"],
    "relative+q": [
        *_RELATIVE,
        "sem_cos",
        "lex_norm",
        "q_top_cos_x_sem_cos",
        "q_lex_gap_x_lex_norm",
        "q_question_x_sem_cos",
        "q_question_x_lex_norm",
        "q_lexical_first_x_lex_norm",
    ],
    # A candidate's place in its record as a ranking feature (issue 55; the section model reads
    # it instead: retrieval.md)
    "relative+place": [*_RELATIVE, "position", "depth"],
    "all": list(ranking.FEATURES),
    "no-interactions": [f for f in ranking.FEATURES if "_x_" not in f],
    "no-list": [
        f
        for f in ranking.FEATURES
        if f not in ranking.LIST_FEATURES and not any(q in f for q in ("q_agree", "q_sem_spread"))
    ],
    # The ablation that chose the shipped set: without the candidates' term coverage (which
    # costs a second index search a query), and with only its rare-word form.
    "relative-no-coverage": [f for f in _RELATIVE if f not in ranking.COVERAGE_FEATURES],
    "relative-rare-coverage": [f for f in _RELATIVE if f not in ("idf_cover", "rarest_held")],
    "no-terms": [f for f in ranking.FEATURES if f not in ("idf_cover", "rarest_held")],
    "no-doc": [f for f in ranking.FEATURES if f not in ("links", "tag")],
}
# A search with one stage switched off is ranked by the other's evidence alone. Meaning only
# keeps the cosine's order: its features are each affine in the cosine within a query (and
# the query's own), so the probability is calibrated and the order is the stage's; neither
# word matches nor links lift a hit a person who asked for meaning did not rank first.
_COSINE_ONLY = (
    "q_absent",
    "sem_cos",
    "sem_z",
    "sem_gap",
    "q_top_cos",
    "q_sem_spread",
    "q_missing",
    "q_lexical_first",
    "q_question",
)
STAGE_FEATURES = {
    "hybrid": lambda f: True,
    "lexical": lambda f: "sem_" not in f and "q_top_cos" not in f,
    "semantic": lambda f: f in _COSINE_ONLY,
}


def columns_for(feature_set: str, stage_set: str) -> list[int]:
    keep = STAGE_FEATURES[stage_set]
    return [ranking.FEATURES.index(f) for f in FEATURE_SETS[feature_set] if keep(f)]


def fold_scores(sets, held: SetCapture, stage_set, family, feature_set, section_weight):
    train = [s for s in sets if s.name != held.name]
    cols = columns_for(feature_set, stage_set)
    x, y, w = training_arrays(train, stage_set, section_weight)
    model = fit(family, x, y, w, cols)
    return [predict(model, c, cols) for c in held.queries[stage_set]]


def rrf_scores(sc: SetCapture, stage_set: str) -> list[np.ndarray]:
    """The captured order itself (plain RRF): a falling score."""
    return [-np.arange(len(c.x), dtype=float) for c in sc.queries[stage_set]]


def cmd_folds(args: argparse.Namespace) -> None:
    sets = load_sets(args.work)
    stage_set = args.stage_set
    configs = [
        (fam, fs, sw)
        for fam in args.families.split(",")
        for fs in args.feature_sets.split(",")
        for sw in (0.0, 1.0)
    ]
    head = "| setting | " + " | ".join(s.name for s in sets) + " | mean gap to RRF |"
    print(head)
    print("|---|" + "---:|" * (len(sets) + 1))
    base = {s.name: metrics(s, stage_set, rrf_scores(s, stage_set)) for s in sets}
    print(
        "| plain RRF (captured) | "
        + " | ".join(f"{headline(s, base[s.name]):.3f}" for s in sets)
        + " | +0.000 |"
    )
    for fam, fs, sw in configs:
        cells, gaps = [], []
        preds = {s.name: fold_scores(sets, s, stage_set, fam, fs, sw) for s in sets}
        for s in sets:
            section = fit_section(sets, preds, leave_out=s.name) if args.section else None
            m = metrics(s, stage_set, preds[s.name], section)
            cells.append(
                f"{headline(s, m):.3f}"
                + (f" ({m.get('section@3', 0):.3f})" if s.kind == "golden" else "")
            )
            gaps.append(headline(s, m) - headline(s, base[s.name]))
        print(
            f"| {fam} {fs} section-weight {sw} | "
            + " | ".join(cells)
            + f" | {statistics.fmean(gaps):+.3f} (worst {min(gaps):+.3f}) |"
        )
        sys.stdout.flush()


# -- 3. ship -------------------------------------------------------------------------------------


def model_file(
    models: dict[str, tuple[Any, list[int]]],
    floor: float,
    low: float,
    high: float,
    trained_on: list[str],
    document: dict[str, float],
    section: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON the sidecar reads: every stage set's weights over one feature list."""
    feats = list(ranking.FEATURES)
    out: dict[str, Any] = {}
    for key, (model, cols) in models.items():
        coef = dict(zip([ranking.FEATURES[i] for i in cols], model.coef_[0].tolist(), strict=True))
        out[key] = {
            "coef": [round(coef.get(f, 0.0), 6) for f in feats],
            "intercept": round(float(model.intercept_[0]), 6),
        }
    stamp = datetime.date.today().isoformat()
    digest = hashlib.sha256(json.dumps(out, sort_keys=True).encode()).hexdigest()[:6]
    return {
        "version": f"lr-{stamp}-{digest}",  # two models of one day differ by their weights
        "features": feats,
        "models": out,
        "floor": floor,
        "confidence": {"low": low, "high": high},
        "document": document,
        "section": section,
        "trained_on": trained_on,
    }


def fold_predictions(sets, stage_set, family, feature_set, section_weight):
    """{set name: [each query's left-out probabilities]}: every set scored by the model trained
    without it."""
    return {
        s.name: fold_scores(sets, s, stage_set, family, feature_set, section_weight) for s in sets
    }


def calibration(sets, preds) -> list[str]:
    """Predicted vs observed share of answering hits among the hits listed (top 10 after the
    per-document cap), in bins of predicted probability, over every left-out fold."""
    edges = [0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0001]
    got: list[list[tuple[float, int]]] = [[] for _ in edges[:-1]]
    for sc in sets:
        for c, p in zip(sc.queries["hybrid"], preds[sc.name], strict=True):
            for i in order(c, p):
                b = next(k for k in range(len(edges) - 1) if p[i] < edges[k + 1])
                got[b].append((p[i], int(c.doc[i] in c.grade)))
    lines = [
        "| predicted | hits | mean predicted | observed (answering document) |",
        "|---|---:|---:|---:|",
    ]
    for k, cell in enumerate(got):
        if cell:
            mp = statistics.fmean(v for v, _ in cell)
            ob = statistics.fmean(y for _, y in cell)
            lines.append(
                f"| {edges[k]:.2f}–{min(edges[k + 1], 1):.2f} | {len(cell)} | {mp:.3f} | {ob:.3f} |"
            )
    return lines


def choose_floor(sets, preds, loss: float) -> float:
    """The highest floor that leaves out at most `loss` of the answering hits listed in the top
    10 of the left-out folds."""
    kept = []
    for sc in sets:
        for c, p in zip(sc.queries["hybrid"], preds[sc.name], strict=True):
            kept += [p[i] for i in order(c, p) if c.doc[i] in c.grade]
    kept.sort()
    return round(float(kept[int(loss * len(kept))]) * 0.999, 4) if kept else 0.0


def document_rows(c: Captured, p: np.ndarray) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(each candidate document, the logit of its best candidate's probability, log2 of how
    many of its chunks are candidates): the document calibration's inputs."""
    best: dict[str, float] = {}
    hits: dict[str, int] = {}
    for d, v in zip(c.doc, p.tolist(), strict=True):
        best[d] = max(best.get(d, 0.0), v)
        hits[d] = hits.get(d, 0) + 1
    docs = list(best)
    b = np.clip(np.array([best[d] for d in docs]), 1e-6, 1 - 1e-6)
    return docs, np.log(b / (1 - b)), np.log2(np.array([hits[d] for d in docs], dtype=float))


def fit_document_calibration(sets, preds) -> dict[str, float]:
    """P(a document answers) from its candidates' left-out probabilities: a logistic over the
    logit of its best candidate's and log2 of its candidate count, every set weighing the square
    root of its queries (as the ranking model's training), negatives' documents answering none."""
    from sklearn.linear_model import LogisticRegression

    xs, ys, ws = [], [], []
    for sc in sets:
        caps = [(c, p) for c, p in zip(sc.queries["hybrid"], preds[sc.name], strict=True)
                if len(c.x)]  # fmt: skip
        per_query = math.sqrt(len(caps)) / max(len(caps), 1)
        for c, p in caps:
            docs, logit, hits = document_rows(c, p)
            xs.append(np.column_stack([logit, hits]))
            ys.append(np.array([int(d in c.grade and not c.negative) for d in docs]))
            ws.append(np.full(len(docs), per_query / len(docs)))
    x, y, w = np.vstack(xs), np.concatenate(ys), np.concatenate(ws)
    model = LogisticRegression(max_iter=2000).fit(x, y, sample_weight=w / w.mean())
    a, b = model.coef_[0].tolist()
    c = float(model.intercept_[0])
    return {"best": round(a, 6), "hits": round(b, 6), "intercept": round(c, 6)}


SECTION_C = 1.0  # the section model's regularisation, chosen in the golden folds (retrieval.md)
SECTION_DROPPED: set[str] = set()  # section inputs left out (`--section-drop`), weighed 0


def fit_section(sets, preds, leave_out: str = ""):
    """The section model (ranking.SectionModel) from the golden sets but `leave_out`: over each
    answerable query's candidates in its judged document, when that document has several and
    one is the judged section, the section or not; their left-out probabilities as an input.
    None where no golden set is left to learn from."""
    from sklearn.linear_model import LogisticRegression

    xs, ys = [], []
    for sc in sets:
        if sc.kind != "golden" or sc.name == leave_out:
            continue
        for c, p in zip(sc.queries["hybrid"], preds[sc.name], strict=True):
            right = np.flatnonzero(c.label != 0)
            if c.negative or not c.has_line or len(right) < 2 or not (c.label == 1).any():
                continue
            xs.append(ranking.section_inputs(c.x[right], p[right]))
            ys.append((c.label[right] == 1).astype(int))
    if not xs:
        return None
    kept = [i for i, n in enumerate(ranking.SECTION_INPUTS) if n not in SECTION_DROPPED]
    model = LogisticRegression(C=SECTION_C, max_iter=2000)
    model.fit(np.vstack(xs)[:, kept], np.concatenate(ys))
    weights = np.zeros(len(ranking.SECTION_INPUTS))
    weights[kept] = model.coef_[0]
    return ranking.SectionModel(weights, float(model.intercept_[0]))


def section_json(model) -> dict[str, Any] | None:
    if model is None:
        return None
    coef = dict(zip(ranking.SECTION_INPUTS, model.weights.tolist(), strict=True))
    return {"coef": {k: round(v, 6) for k, v in coef.items()},
            "intercept": round(model.intercept, 6)}  # fmt: skip


def top_document_probability(c: Captured, p: np.ndarray, calib: dict[str, float]) -> float:
    """The calibrated probability that the document of the query's top listed hit answers."""
    if not len(p):
        return 0.0
    docs, logit, hits = document_rows(c, p)
    top = c.doc[order(c, p)[0]]
    z = calib["best"] * logit + calib["hits"] * hits + calib["intercept"]
    return float(1 / (1 + np.exp(-z[docs.index(top)])))


def choose_confidence(sets, preds, doubt: float, dismiss: float, calib: dict[str, float]):
    """From the golden sets' left-out top document probabilities (`calib`: the document
    calibration): `high` at or above the value that
    leaves at most `doubt` of the answerable queries below it, `none` below the value that
    leaves at most `dismiss` of them below it (`low` between); and the figures that chose
    them: each negative query's top probability and whether `missing` names a word of it."""
    answerable, negative = [], []
    for sc in sets:
        if sc.kind != "golden":
            continue
        for c, p in zip(sc.queries["hybrid"], preds[sc.name], strict=True):
            top = top_document_probability(c, p, calib)
            missing = bool(len(c.x)) and c.x[0, ranking.FEATURES.index("q_missing")] > 0
            (negative if c.negative else answerable).append((top, missing, c.query))
    tops = sorted(t for t, _, _ in answerable)
    # a rare word found nowhere caps an answer at `low`: those doubts count first
    sure = sorted(t for t, missing, _ in answerable if not missing)
    room = max(0, int(doubt * len(tops)) - (len(tops) - len(sure)))
    high = round(sure[room] * 0.999, 4)
    low = round(tops[int(dismiss * len(tops))] * 0.999, 4)
    notes = [
        f"golden answerable queries: {len(tops)}, top probability min {tops[0]:.3f}, "
        f"p5 {tops[int(0.05 * len(tops))]:.3f}, median {statistics.median(tops):.3f}",
        f"golden negatives: {len(negative)}",
    ]
    for top, missing, query in sorted(negative):
        level = "none" if top < low else "high" if top >= high and not missing else "low"
        notes.append(f"  {top:.3f} {level:4s} missing={'yes' if missing else 'no '} {query}")
    return low, high, notes


def cmd_ship(args: argparse.Namespace) -> None:
    sets = load_sets(args.work)
    fam, fs, sw = args.family, args.feature_set, args.section_weight
    assert FAMILIES[fam][0] == "lr", "the sidecar reads logistic models"
    names = [s.name for s in sets]

    def fitted(train: list[SetCapture]) -> dict[str, tuple[Any, list[int]]]:
        out = {}
        for key in STAGE_SETS:
            cols = columns_for(fs, key)
            x, y, w = training_arrays(train, key, sw)
            out[key] = (fit(fam, x, y, w, cols), cols)
        return out

    preds = fold_predictions(sets, "hybrid", fam, fs, sw)
    if args.section_only:  # the shipped ranking stands; only its section model is refitted
        target = args.model_out or REPO / "sidecar" / "autodoc" / "query" / ranking.MODEL_FILE
        shipped = json.loads((REPO / "sidecar" / "autodoc" / "query" / ranking.MODEL_FILE)
                             .read_text(encoding="utf-8"))  # fmt: skip
        if args.fold_models:
            args.fold_models.mkdir(parents=True, exist_ok=True)
            for s in sets:
                fold = shipped | {"section": section_json(fit_section(sets, preds, s.name))}
                (args.fold_models / f"without-{s.name}.json").write_text(json.dumps(fold, indent=1))
        shipped["section"] = section_json(fit_section(sets, preds))
        target.write_text(json.dumps(shipped, indent=1) + "\n")
        print(f"section model {shipped['section']} -> {target}", file=sys.stderr)
        return
    print("\n".join(calibration(sets, preds)))
    floor = choose_floor(sets, preds, args.floor_loss)
    calib = fit_document_calibration(sets, preds)
    low, high, notes = choose_confidence(sets, preds, args.doubt, args.dismiss, calib)
    print("\n".join(notes))
    print(f"floor {floor}, document calibration {calib}, confidence low {low}, high {high}")
    if args.fold_models:
        args.fold_models.mkdir(parents=True, exist_ok=True)
        for s in sets:
            rest = [t for t in sets if t.name != s.name]
            section = None if args.no_section else section_json(fit_section(sets, preds, s.name))
            data = model_file(fitted(rest), floor, low, high, [t.name for t in rest], calib,
                              section)  # fmt: skip
            (args.fold_models / f"without-{s.name}.json").write_text(json.dumps(data, indent=1))
    section = None if args.no_section else fit_section(sets, preds)
    print(f"section model {section_json(section)}")
    data = model_file(fitted(sets), floor, low, high, names, calib, section_json(section))
    target = args.model_out or REPO / "sidecar" / "autodoc" / "query" / ranking.MODEL_FILE
    target.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {target}", file=sys.stderr)


# -- 4. report: the left-out folds through the real pipeline ----------------------------------


def _eval(args: list[str], model: Path | None) -> dict[str, Any]:
    """`autodoc eval ... --json` in a fresh process; `model`: the fold's model file."""
    env = dict(os.environ)
    env.pop(ranking.MODEL_ENV, None)
    if model is not None:
        env[ranking.MODEL_ENV] = str(model)
    cmd = [sys.executable, "-m", "autodoc", *args, "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if out.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout)


def _fmt(v: Any) -> str:
    return f"{v:.3f}" if isinstance(v, float) else (v or "–")


def cmd_report(args: argparse.Namespace) -> None:
    """For each visible set: the model trained without it (`--folds`), plain RRF and each
    stage alone, all through `autodoc eval` on the same store; `--before` adds the default of
    another revision (its `autodoc eval --json` reports, one per set, NAME=FILE)."""
    before = dict(spec.split("=", 1) for spec in args.before or [])
    rows = []
    for name in args.beir.split(",") if args.beir else []:
        common = ["eval", str(args.bench / name), "--work", str(args.beir_root / name)]
        learned = _eval([*common, "--stages", "hybrid"], args.folds / f"without-{name}.json")
        plain = _eval([*common, "--stages", "lexical,semantic,hybrid", "--fusion", "rrf"], None)
        old = json.loads(Path(before[name]).read_text()) if name in before else None
        cell = {k: plain["results"][k]["ndcg@10"] for k in ("lexical", "semantic", "hybrid")}
        cell["learned"] = learned["results"]["hybrid"]["ndcg@10"]
        cell["before"] = old["results"]["hybrid"]["ndcg@10"] if old else None
        rows.append((name, "nDCG@10", cell))
    for spec in args.golden or []:
        name, rest = spec.split("=", 1)
        db, ws, gold = rest.split(":")
        common = ["--db", db, "eval", args.vaults[name], "-w", ws, "--golden", gold]
        learned = _eval([*common, "--stages", "hybrid"], args.folds / f"without-{name}.json")
        plain = _eval([*common, "--stages", "lexical,semantic,hybrid", "--fusion", "rrf"], None)
        old = json.loads(Path(before[name]).read_text()) if name in before else None

        def golden_cell(report: dict[str, Any], label: str) -> str:
            a = report["results"][label]["all"]
            return f"{a['recall@1']:.3f} / {a['recall@3']:.3f} / {a['section_recall@3']:.3f}"

        cell = {k: golden_cell(plain, k) for k in ("lexical", "semantic", "hybrid")}
        cell["learned"] = golden_cell(learned, "hybrid")
        cell["before"] = golden_cell(old, "hybrid") if old else None
        q = learned["results"]["hybrid"]
        questions = q["kinds"].get("question", {})
        cell["questions"] = (
            f"{questions.get('recall@3', 0):.3f} / {questions.get('section_recall@3', 0):.3f}"
        )
        cell["flagged"] = f"{q['all']['negatives_flagged'] or 0:.2f}"
        cell["doubted"] = f"{q['all']['answerable_doubted'] or 0:.3f}"
        rows.append((name, "R@1 / R@3 / section R@3", cell))
        if old:
            oq = old["results"]["hybrid"]["kinds"].get("question", {})
            cell["questions before"] = (
                f"{oq.get('recall@3', 0):.3f} / {oq.get('section_recall@3', 0):.3f}"
            )
        (args.out / f"{name}-learned.json").write_text(json.dumps(learned))
    print(
        "| set | metric | learned, trained without it | default before | plain RRF | lexical"
        " | semantic |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, metric, c in rows:
        print(
            f"| {name} | {metric} | **{_fmt(c['learned'])}** | {_fmt(c['before'])} | "
            f"{_fmt(c['hybrid'])} | {_fmt(c['lexical'])} | {_fmt(c['semantic'])} |"
        )
    print()
    for name, _, c in rows:
        if "questions" in c:
            print(
                f"- {name}: questions R@3 / section R@3 {c['questions']} (before "
                f"{c.get('questions before', '–')}); negatives flagged {c['flagged']}, "
                f"answerable marked low or none {c['doubted']}"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("capture")
    c.add_argument("--beir-root", type=Path, default=Path("/tmp/l2r/beir"))
    c.add_argument("--bench", type=Path, default=REPO.parent / "shared" / "bench")
    c.add_argument("--beir", default="cosqa,emanual,gorilla-huggingface,gorilla-torchhub,scifact")
    c.add_argument("--golden", action="append", help="NAME=DB:WORKSPACE:GOLDEN_FILE")
    f = sub.add_parser("folds")
    f.add_argument("--stage-set", default="hybrid", choices=list(STAGE_SETS))
    f.add_argument("--families", default="lr-c1")
    f.add_argument("--feature-sets", default="all")
    f.add_argument("--section", action="store_true",
                   help="order each document's candidates by a section model fitted without the"
                   " left-out set")  # fmt: skip
    s = sub.add_parser("ship")
    s.add_argument("--family", default="lr-c1")
    s.add_argument("--feature-set", default="all")
    s.add_argument("--section-weight", type=float, default=1.0)
    s.add_argument(
        "--floor-loss",
        type=float,
        default=0.005,
        help="share of answering top-10 hits the floor may leave out",
    )
    s.add_argument(
        "--doubt",
        type=float,
        default=0.04,
        help="share of golden answerable queries confidence may doubt",
    )
    s.add_argument(
        "--dismiss",
        type=float,
        default=0.01,
        help="share of golden answerable queries confidence may call unanswered",
    )
    s.add_argument("--fold-models", type=Path)
    s.add_argument("--no-section", action="store_true", help="ship no section model")
    s.add_argument("--section-only", action="store_true",
                   help="keep the shipped ranking; refit only its section model")  # fmt: skip
    s.add_argument("--model-out", type=Path, help="write the model here, not into the package")
    r = sub.add_parser("report")
    r.add_argument("--beir-root", type=Path, default=Path("/tmp/l2r/beir"))
    r.add_argument("--bench", type=Path, default=REPO.parent / "shared" / "bench")
    r.add_argument("--beir", default="cosqa,emanual,gorilla-huggingface,gorilla-torchhub,scifact")
    r.add_argument("--golden", action="append", help="NAME=DB:WORKSPACE:GOLDEN_FILE")
    r.add_argument("--vault", action="append", default=[], help="NAME=VAULT folder")
    r.add_argument("--folds", type=Path, default=Path("/tmp/l2r/folds"))
    r.add_argument("--before", action="append", help="NAME=autodoc eval --json report")
    r.add_argument("--out", type=Path, default=Path("/tmp/l2r"))
    for p in (c, f, s):
        p.add_argument("--work", type=Path, default=Path("/tmp/l2r/cap"))
    for p in (f, s):
        p.add_argument("--section-drop", default="", help="section inputs to leave out")
    args = ap.parse_args()
    SECTION_DROPPED.update(n for n in getattr(args, "section_drop", "").split(",") if n)
    if args.cmd == "report":
        args.vaults = dict(v.split("=", 1) for v in args.vault)
    run = {"capture": cmd_capture, "folds": cmd_folds, "ship": cmd_ship, "report": cmd_report}
    run[args.cmd](args)


if __name__ == "__main__":
    main()

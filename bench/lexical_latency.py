"""Lexical query latency: AutoDoc (Tantivy + SQLite) against a plain SQLite FTS5 baseline.

Indexes a corpus with AutoDoc (or reuses `--db`), builds an FTS5 table over the same live
chunks, generates seeded queries from the chunks themselves, and times each engine on the same
words. Prints Markdown tables to stdout; progress goes to stderr.

    python bench/lexical_latency.py [--corpus ../shared/corpora/cpp-docs] [--db DIR]
        [--queries 200] [--seed 7] [--json OUT]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import re
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

from autodoc.bm25.analyzer import is_stopword
from autodoc.engine import Engine
from autodoc.parse.query_parser import parse_query

REPO = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = "../shared/corpora/cpp-docs"
REPEATS = 3
TOP = 10  # hits compared for overlap
FETCH = 50  # candidates each raw engine fetches

FTS_SQL = (
    "SELECT rowid, bm25(fts, 3.0, 2.0, 1.0) AS s FROM fts WHERE fts MATCH ? ORDER BY s LIMIT 50"
)

_WORD = re.compile(r"[A-Za-z0-9]+")
_PLAIN = re.compile(r"^\(?([A-Za-z]+)[.,;:!?)]*$")  # a prose word, punctuation stripped
_CODE = re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:(?:::|_)[A-Za-z0-9]+)+\b")  # has _ or ::


# -- setup -------------------------------------------------------------------------------------


def workspace_name(corpus: Path) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]", "-", corpus.name).lstrip("._-") or "corpus"
    return name[:64]


def open_engine(db_dir: Path, name: str, corpus: Path) -> tuple[Engine, float | None]:
    """The engine with `name` indexed; the seconds indexing took, or None if it was reused."""
    engine = Engine(db_dir / "autodoc.db")
    info = engine.workspaces.workspace_add(name, str(corpus))
    if info["indexed_at"] is not None and info["chunks"] > 0:
        log(f"reusing index: {info['chunks']} chunks in {db_dir}")
        return engine, None
    log(f"indexing {corpus} into {db_dir} ...")
    engine.workspaces.workspace_configure(
        name, {"embedding": "none"}
    )  # this benchmark is lexical only
    t0 = time.perf_counter()
    summary = engine.indexing.index_run(name)
    took = time.perf_counter() - t0
    log(f"indexed {summary['chunks']} chunks in {took:.1f} s")
    return engine, took


def live_chunks(db_file: Path, name: str) -> list[tuple[int, str, str, str]]:
    """(chunk id, title, breadcrumb, text) of every live chunk, in a stable order."""
    conn = sqlite3.connect(f"file:{db_file}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT c.id, coalesce(d.title, ''), c.breadcrumb, c.text"
            " FROM chunks c JOIN documents d ON d.id = c.document_id"
            " JOIN workspaces w ON w.id = c.workspace_id"
            " WHERE c.state = 1 AND w.name = ? ORDER BY d.path, c.ordinal, c.id",
            (name,),
        ).fetchall()
    finally:
        conn.close()
    return rows


def build_fts(path: Path, chunks: list[tuple[int, str, str, str]]) -> tuple[float, float]:
    """Create the FTS5 mirror; (seconds to insert and commit, seconds to optimize)."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        t0 = time.perf_counter()
        conn.execute(
            "CREATE VIRTUAL TABLE fts USING fts5(title, breadcrumb, body,"
            " tokenize='porter unicode61')"
        )
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO fts(rowid, title, breadcrumb, body) VALUES (?,?,?,?)", chunks)
        conn.execute("COMMIT")
        t1 = time.perf_counter()
        conn.execute("INSERT INTO fts(fts) VALUES ('optimize')")
        t2 = time.perf_counter()
    finally:
        conn.close()
    return t1 - t0, t2 - t1


# -- queries -----------------------------------------------------------------------------------


def make_queries(chunks: list[tuple[int, str, str, str]], n: int, seed: int) -> list[dict]:
    """`n` distinct queries: ~45% heading words, ~45% body phrases, ~10% code tokens."""
    rng = random.Random(seed)
    n_code = max(1, round(n * 0.10)) if n >= 3 else 0
    n_heading = (n - n_code) // 2
    quotas = {"heading": n_heading, "body": n - n_code - n_heading, "code": n_code}
    seen: set[str] = set()
    out: list[dict] = []

    def heading() -> list[str] | None:
        words = [w for w in _WORD.findall(rng.choice(chunks)[2]) if len(w) > 1]
        if not words:
            return None
        k = rng.randint(1, min(3, len(words)))
        start = rng.randrange(len(words) - k + 1)
        return words[start : start + k]

    def body() -> list[str] | None:
        tokens = rng.choice(chunks)[3].split()
        k = rng.randint(2, 4)
        windows = []
        for i in range(len(tokens) - k + 1):
            ms = [_PLAIN.match(t) for t in tokens[i : i + k]]
            if all(ms):
                windows.append([m.group(1) for m in ms])
        return rng.choice(windows) if windows else None

    def code() -> list[str] | None:
        found = sorted(set(_CODE.findall(rng.choice(chunks)[3])))
        return [rng.choice(found)] if found else None

    makers = {"heading": heading, "body": body, "code": code}
    for kind, quota in quotas.items():
        got, tries = 0, 0
        while got < quota and tries < quota * 1000:
            tries += 1
            words = makers[kind]()
            if not words:
                continue
            text = " ".join(words)
            if text.lower() in seen:
                continue
            seen.add(text.lower())
            out.append(
                {
                    "kind": kind,
                    "query": text,
                    "match": " AND ".join('"' + w.replace('"', '""') + '"' for w in words),
                    "stopwords": any(is_stopword(w) for w in words),
                }
            )
            got += 1
    return out


# -- timing ------------------------------------------------------------------------------------


def percentile(values: list[float], p: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    s = sorted(values)
    if len(s) == 1:
        return s[0]
    pos = (len(s) - 1) * p / 100
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def run_bench(engine: Engine, name: str, fts_path: Path, queries: list[dict]) -> None:
    """Fill each query dict with per-repeat timings (ns) and top-10 ids."""
    lex = engine.lexical(engine.workspace(name))
    fts = sqlite3.connect(fts_path, isolation_level=None)
    opts = {"stages": ["lexical"], "limit": TOP}
    now = time.perf_counter_ns

    def fts_once(q: dict) -> tuple[int, list[int]]:
        t0 = now()
        rows = fts.execute(FTS_SQL, (q["match"],)).fetchall()
        return now() - t0, [r[0] for r in rows]

    def autodoc_once(q: dict) -> tuple[int, list[int]]:
        t0 = now()
        result = engine.reading.search(name, q["query"], opts)
        return now() - t0, [h["chunk_id"] for h in result["hits"]]

    def tantivy_once(q: dict) -> tuple[int, int, list[int]]:
        t0 = now()
        tq = lex.build(parse_query(q["query"]), all_words=True)
        t1 = now()
        pairs = lex.search(tq, FETCH) if tq is not None else []
        t2 = now()
        return t1 - t0, t2 - t1, [cid for cid, _ in pairs]

    # Warm-up: every query once per engine, untimed; keep the answers for the overlap.
    log("warm-up ...")
    for q in queries:
        q["fts_ids"] = fts_once(q)[1][:TOP]
    for q in queries:
        q["tantivy_ids"] = tantivy_once(q)[2][:TOP]
    for q in queries:
        q["autodoc_ids"] = autodoc_once(q)[1]
    for q in queries:
        for key in ("fts_ns", "autodoc_ns", "tantivy_build_ns", "tantivy_search_ns"):
            q[key] = []

    gc.collect()
    for rep in range(REPEATS):
        log(f"timed pass {rep + 1}/{REPEATS} ...")
        for q in queries:
            q["fts_ns"].append(fts_once(q)[0])
            build_ns, search_ns, _ = tantivy_once(q)
            q["tantivy_build_ns"].append(build_ns)
            q["tantivy_search_ns"].append(search_ns)
            q["autodoc_ns"].append(autodoc_once(q)[0])
    fts.close()

    for q in queries:
        pieces = zip(q["tantivy_build_ns"], q["tantivy_search_ns"], strict=True)
        q["tantivy_ns"] = [a + b for a, b in pieces]
        for key in ("fts", "autodoc", "tantivy", "tantivy_build", "tantivy_search"):
            q[f"{key}_median_ns"] = statistics.median(q[f"{key}_ns"])
        q["overlap"] = _overlap(q["autodoc_ids"], q["fts_ids"])
        q["tantivy_overlap"] = _overlap(q["tantivy_ids"], q["fts_ids"])


def _overlap(ours: list[int], theirs: list[int]) -> float | None:
    """Fraction of our top ids found in theirs; None when we returned nothing."""
    if not ours:
        return None
    other = set(theirs)
    return sum(1 for i in ours if i in other) / len(ours)


# -- report ------------------------------------------------------------------------------------

SERIES = [
    ("fts", "SQLite FTS5 `bm25()` top 50"),
    ("autodoc", "AutoDoc `search.query` (lexical, limit 10)"),
    ("tantivy", "Tantivy raw: build + search top 50"),
    ("tantivy_build", "&nbsp;&nbsp;↳ query build (Python)"),
    ("tantivy_search", "&nbsp;&nbsp;↳ Tantivy search"),
]


def summarize(queries: list[dict]) -> dict[str, dict[str, float]]:
    out = {}
    for key, _ in SERIES:
        meds = [q[f"{key}_median_ns"] for q in queries]
        out[key] = {
            "p50_ms": percentile(meds, 50) / 1e6,
            "p95_ms": percentile(meds, 95) / 1e6,
            "mean_ms": statistics.fmean(meds) / 1e6,
        }
    return out


def mean_or_none(values: list[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return statistics.fmean(vals) if vals else None


def render(report: dict[str, Any], queries: list[dict]) -> str:
    s = report["summary"]
    base = s["fts"]

    def pct(v: float | None) -> str:
        return "n/a" if v is None else f"{v:.1%}"

    lines = [
        f"### Lexical latency: {report['setup']['corpus_name']}"
        f" ({report['setup']['chunks']} chunks, {len(queries)} queries)",
        "",
        "| Engine | p50 ms | p95 ms | mean ms | p50 / FTS5 | p95 / FTS5 |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for key, label in SERIES:
        r = s[key]
        lines.append(
            f"| {label} | {r['p50_ms']:.3f} | {r['p95_ms']:.3f} | {r['mean_ms']:.3f}"
            f" | {r['p50_ms'] / base['p50_ms']:.2f}× | {r['p95_ms'] / base['p95_ms']:.2f}× |"
        )

    lines += [
        "",
        "| Query kind | n | FTS5 p50 ms | AutoDoc p50 ms | Tantivy raw p50 ms | AutoDoc / FTS5"
        " | top-10 overlap |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for kind in ("heading", "body", "code"):
        qs = [q for q in queries if q["kind"] == kind]
        if not qs:
            continue
        f, a, t = (
            percentile([q[f"{k}_median_ns"] for q in qs], 50) / 1e6
            for k in ("fts", "autodoc", "tantivy")
        )
        o = mean_or_none([q["overlap"] for q in qs])
        lines.append(
            f"| {kind} | {len(qs)} | {f:.3f} | {a:.3f} | {t:.3f} | {a / f:.2f}× | {pct(o)} |"
        )

    st, env, ov = report["setup"], report["env"], report["overlap"]

    indexed = (
        f"{st['autodoc_index_s']:.1f} s"
        if st["autodoc_index_s"] is not None
        else "not measured (reused --db)"
    )
    lines += [
        "",
        "| Setup | |",
        "|---|---|",
        f"| chunks / queries | {st['chunks']} / {len(queries)} (seed {st['seed']}) |",
        f"| AutoDoc index (walk, parse, SQLite, Tantivy) | {indexed} |",
        f"| FTS5 build (insert + commit) | {st['fts_build_s']:.1f} s"
        f" (+ optimize {st['fts_optimize_s']:.1f} s) |",
        f"| top-10 overlap AutoDoc ⊂ FTS5 (all / no stopwords) | {pct(ov['autodoc_all'])}"
        f" / {pct(ov['autodoc_no_stop'])} |",
        f"| top-10 overlap raw Tantivy ⊂ FTS5 | {pct(ov['tantivy_all'])} |",
        f"| queries with no hits: FTS5 / AutoDoc | {ov['fts_empty']} / {ov['autodoc_empty']} |",
        f"| timing | median of {REPEATS} per query after 1 warm-up; p50/p95 across queries |",
        f"| Python / SQLite / tantivy | {env['python']} / {env['sqlite']} / {env['tantivy']} |",
        f"| os.cpu_count() / platform | {env['cpu_count']} / {env['platform']} |",
    ]
    return "\n".join(lines)


# -- main --------------------------------------------------------------------------------------


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default=DEFAULT_CORPUS, help="relative to the repo root")
    ap.add_argument("--db", help="AutoDoc store folder to reuse (indexed only if needed)")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", help="write the raw numbers here")
    args = ap.parse_args(argv)

    corpus = (REPO / args.corpus).resolve()
    if not corpus.is_dir():
        ap.error(f"corpus not found: {corpus}")
    if args.queries < 1:
        ap.error("--queries must be at least 1")
    name = workspace_name(corpus)

    tmp = Path(tempfile.mkdtemp(prefix="autodoc-bench-"))
    db_dir = Path(args.db).resolve() if args.db else tmp / "db"
    db_dir.mkdir(parents=True, exist_ok=True)
    engine = None
    try:
        engine, index_s = open_engine(db_dir, name, corpus)
        chunks = live_chunks(engine.store.path, name)
        if not chunks:
            log("no live chunks: nothing to benchmark")
            return 1
        log(f"building FTS5 over {len(chunks)} chunks ...")
        fts_path = tmp / "fts.sqlite"
        fts_build_s, fts_opt_s = build_fts(fts_path, chunks)
        queries = make_queries(chunks, args.queries, args.seed)
        n_chunks = len(chunks)
        del chunks
        run_bench(engine, name, fts_path, queries)

        no_stop = [q for q in queries if not q["stopwords"]]
        report: dict[str, Any] = {
            "env": {
                "python": platform.python_version(),
                "sqlite": sqlite3.sqlite_version,
                "tantivy": version("tantivy"),
                "cpu_count": os.cpu_count(),
                "platform": platform.platform(terse=True),
            },
            "setup": {
                "corpus": str(corpus),
                "corpus_name": name,
                "db": str(db_dir),
                "chunks": n_chunks,
                "seed": args.seed,
                "repeats": REPEATS,
                "autodoc_index_s": index_s,
                "fts_build_s": fts_build_s,
                "fts_optimize_s": fts_opt_s,
                "fts_sql": FTS_SQL,
            },
            "summary": summarize(queries),
            "overlap": {
                "autodoc_all": mean_or_none([q["overlap"] for q in queries]),
                "autodoc_no_stop": mean_or_none([q["overlap"] for q in no_stop]),
                "tantivy_all": mean_or_none([q["tantivy_overlap"] for q in queries]),
                "fts_empty": sum(1 for q in queries if not q["fts_ids"]),
                "autodoc_empty": sum(1 for q in queries if not q["autodoc_ids"]),
                "queries_with_stopwords": len(queries) - len(no_stop),
            },
            "queries": queries,
        }
        print(render(report, queries))
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
            log(f"wrote {args.json}")
        return 0
    finally:
        if engine is not None:
            engine.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

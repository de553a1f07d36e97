"""Issue 58's evidence: labelled questions replayed through a team server with its question log
on, the gap report it gives, and the log's cost.

    python bench/gaps/replay.py --db STORE --root ../shared/corpora/adr --workspace bench \
        --questions bench/gaps/adr_questions.jsonl --work /tmp/gaps

1. `replay`: the questions, shuffled (seeded), from their askers' tokens (4 clients at once)
   through `autodoc serve --http --workers 2 --log-questions LOG`. A reader who finds the
   labelled document among the first 3 hits opens it (the plugin's `search.opened` for people,
   `doc.read` for agents); for 1 unanswerable question in 10 a reader looks at the first hit.
2. `folds`: the gap rule's two thresholds (the top hit's probability, the best cosine) and the
   grouping's cosine, each chosen on every set but one (leave-one-set-out: the 8 ADR projects
   and the off-domain questions) and judged on the set left out; precision and recall of "gap"
   pooled over the sets left out, with and without the readers' openings.
3. `report`: `autodoc gaps --json` over the log, the shipped rule: its figures against the labels.
4. `overhead`: two servers on copies of the store, the log off and on, the same queries in
   alternating rounds (4 clients): p50 and p95 of each.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import shutil
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from itertools import product
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from server_load import Server

from autodoc.gaps import gap_report as gr
from autodoc.models.embedders import bundled_embedder

ASKERS = ("alice", "bob", "ci-agent", "support-bot")
PEOPLE = ("alice", "bob")  # jump from the picker; the agents read the span
SECRET = "replay-token-{}-0123456789abcdef"


def call(port: int, asker: str, method: str, params: list) -> dict:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request(
            "POST",
            "/rpc",
            body,
            {"Authorization": f"Bearer {SECRET.format(asker)}", "Connection": "close"},
        )
        return json.loads(conn.getresponse().read())
    finally:
        conn.close()


def copy_store(db: Path, to: Path) -> Path:
    shutil.rmtree(to, ignore_errors=True)
    to.mkdir(parents=True)
    for f in db.parent.iterdir():
        if f.name.startswith(db.stem):
            target = to / f.name
            (shutil.copytree if f.is_dir() else shutil.copy2)(f, target)
    return to / db.name


def server(args, work: Path, name: str, log: Path | None) -> Server:
    tokens = work / "tokens"
    tokens.write_text("".join(f"{SECRET.format(a)} name={a}\n" for a in ASKERS))
    db = copy_store(Path(args.db), work / name)
    extra = ("--token-file", str(tokens)) + (("--log-questions", str(log)) if log else ())
    s = Server(str(db), Path(args.root), 2, extra)
    s.wait_ready(args.workspace)
    return s


def replay(args, questions: list[dict], work: Path, log: Path) -> None:
    rng = random.Random(58)
    order = questions[:]
    rng.shuffle(order)
    looks = {q["query"] for q in order if not q["answerable"] and rng.random() < 0.1}
    s = server(args, work, "replay", log)

    def ask(q: dict) -> None:
        answer = call(
            s.port, q["asker"], "search.query", [args.workspace, q["query"], {"limit": 10}]
        )
        hits = answer["result"]["hits"]
        found = [h for h in hits[:3] if h["path"] == q["path"]]
        opened = found[0] if found else (hits[0] if q["query"] in looks and hits else None)
        if opened is None:
            return
        if q["asker"] in PEOPLE:
            call(
                s.port,
                q["asker"],
                "search.opened",
                [args.workspace, opened["path"], opened["line"]],
            )
        else:
            call(
                s.port,
                q["asker"],
                "doc.read",
                [args.workspace, opened["path"], opened["line_start"], opened["line_end"]],
            )

    try:
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(ask, order))
    finally:
        s.stop()  # the log's last questions settle and are written at exit


def labelled_records(log: Path, questions: list[dict]) -> tuple[list[dict], list[dict], set[int]]:
    records, _ = gr.read_records(log)
    records.sort(key=lambda r: r["at"])
    opened = gr.opened_questions(records)
    label = {(q["asker"], q["query"]): q for q in questions}
    rows = []
    for i, r in enumerate(records):
        if r["kind"] == "question":
            q = label[(r["asker"], r["query"])]
            top = r["hits"][0]["relevance"] if r["hits"] else 0.0
            rows.append(
                {
                    **q,
                    "top": top,
                    "cosine": r["cosine"] if r["cosine"] is not None else 1.0,
                    "opened": i in opened,
                    "confidence": r["confidence"],
                }
            )
    return rows, records, opened


P_GRID = [round(x, 2) for x in np.arange(0.0, 0.96, 0.05)]
C_GRID = [round(x, 2) for x in np.arange(0.0, 0.71, 0.02)]
O_GRID = [round(x, 2) for x in np.arange(0.0, 0.71, 0.02)]


def arrays(rows: list[dict]) -> dict[str, np.ndarray]:
    return {
        k: np.array([r[k] for r in rows]) for k in ("top", "cosine", "opened", "answerable")
    } | {"none": np.array([r["confidence"] == "none" for r in rows])}


def flag(a: dict[str, np.ndarray], tp_: float, tc: float, to: float, use_opened: bool):
    """`gap_report.is_gap` with these thresholds, over every row at once."""
    opened = a["opened"] if use_opened else np.zeros_like(a["opened"])
    closed = (a["top"] < tp_) | (a["cosine"] < tc)
    return a["none"] | np.where(opened, a["cosine"] < to, closed)


def counts(a: dict[str, np.ndarray], flagged: np.ndarray) -> tuple[int, int, int]:
    gap = ~a["answerable"]
    return int((flagged & gap).sum()), int((flagged & ~gap).sum()), int((~flagged & gap).sum())


def f1(p: float, r: float) -> float:
    return 2 * p * r / max(p + r, 1e-9)


def f1_of(tp: int, fp: int, fn: int) -> float:
    return 2 * tp / max(2 * tp + fp + fn, 1)


REGIMES = {"with_openings": (True,), "answers_only": (False,), "both": (True, False)}


def objective(a: dict[str, np.ndarray], t: tuple[float, float, float], regime: str) -> float:
    """F1 of "gap" under the regime: clients that report openings, clients that do not, or
    the sum of both (the shipped choice: a rule for either kind of client)."""
    return sum(f1_of(*counts(a, flag(a, *t, opened))) for opened in REGIMES[regime])


def best_thresholds(a: dict[str, np.ndarray], regime: str) -> tuple[float, float, float]:
    grid = list(product(P_GRID, C_GRID, O_GRID if True in REGIMES[regime] else [0.0]))
    return max(grid, key=lambda t: (objective(a, t, regime), -sum(t)))


def gap_folds(rows: list[dict], regime: str) -> dict:
    """Thresholds chosen on every set but one (by `regime`), judged on the one left out in
    both regimes; pooled."""
    sets = sorted({r["set"] for r in rows})
    pooled = {True: [0, 0, 0], False: [0, 0, 0]}
    chosen = {}
    for s in sets:
        train = arrays([r for r in rows if r["set"] != s])
        test = arrays([r for r in rows if r["set"] == s])
        best = best_thresholds(train, regime)
        for opened in (True, False):
            got = counts(test, flag(test, *best, opened))
            pooled[opened] = [x + y for x, y in zip(pooled[opened], got, strict=True)]
        chosen[s] = best
    out: dict = {"chosen_per_fold": chosen, "chosen_on_all": best_thresholds(arrays(rows), regime)}
    for opened, (tp, fp, fn) in pooled.items():
        out["held_out_with_openings" if opened else "held_out_answers_only"] = {
            "precision": round(tp / max(tp + fp, 1), 3),
            "recall": round(tp / max(tp + fn, 1), 3),
            "tp": tp,
            "fp": fp,
            "fn": fn,
        }
    return out


def pair_scores(groups: list[list[int]], topics: list[str]) -> tuple[float, float]:
    same_pred = {(a, b) for g in groups for a in g for b in g if a < b}
    same_true = {
        (a, b)
        for a in range(len(topics))
        for b in range(a + 1, len(topics))
        if topics[a] == topics[b]
    }
    inter = len(same_pred & same_true)
    return inter / max(len(same_pred), 1), inter / max(len(same_true), 1)


def grouping_folds(rows: list[dict], vectors: dict[str, np.ndarray]) -> dict:
    """The grouping cosine chosen by pairwise F1 on every set but one, judged on the one."""
    gaps = [r for r in rows if not r["answerable"]]
    sets = sorted({r["set"] for r in gaps})
    grid = [round(x, 2) for x in np.arange(0.3, 0.81, 0.02)]

    def score(part: list[dict], t: float) -> tuple[float, float]:
        groups = gr.group_rows(np.array([vectors[r["query"]] for r in part]), t)
        return pair_scores(groups, [r["topic"] for r in part])

    def total(t: float, parts: list[list[dict]]) -> float:
        return statistics.mean(f1(*score(p, t)) for p in parts)

    out = {}
    for s in sets:
        train = [[r for r in gaps if r["set"] == o] for o in sets if o != s]
        best = max(grid, key=lambda t: total(t, train))
        p, r = score([x for x in gaps if x["set"] == s], best)
        out[s] = {"chosen": best, "pair_precision": round(p, 3), "pair_recall": round(r, 3)}
    whole = max(grid, key=lambda t: total(t, [[r for r in gaps if r["set"] == s] for s in sets]))
    return {
        "per_set_held_out": out,
        "chosen_on_all": whole,
        "mean_held_out_pair_precision": round(
            statistics.mean(v["pair_precision"] for v in out.values()), 3
        ),
        "mean_held_out_pair_recall": round(
            statistics.mean(v["pair_recall"] for v in out.values()), 3
        ),
    }


def shipped_report(log: Path, rows: list[dict], records: list[dict], opened: set[int]) -> dict:
    """`autodoc gaps` over the log, and the shipped rule (`gap_report.is_gap`, what the report
    groups) against the labels."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "autodoc",
            "gaps",
            "--log-questions",
            str(log),
            "--json",
            "--no-record",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(out.stdout)
    flagged = [gr.is_gap(r, i in opened) for i, r in enumerate(records) if r["kind"] == "question"]
    assert sum(flagged) == report["unanswered"], "the report and the rule disagree"
    tp, fp, fn = counts(arrays(rows), np.array(flagged))
    p, r = tp / max(tp + fp, 1), tp / max(tp + fn, 1)
    md = subprocess.run(
        [sys.executable, "-m", "autodoc", "gaps", "--log-questions", str(log), "--no-record"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {
        "precision": round(p, 3),
        "recall": round(r, 3),
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "groups": len(report["groups"]),
        "questions": report["questions"],
        "answered": report["answered"],
        "markdown": md,
    }


def overhead(args, questions: list[dict], work: Path, rounds: int, control: bool = False) -> dict:
    """`control`: both servers without the log (the measurement's own noise)."""
    queries = [q["query"] for q in questions][:100]
    off = server(args, work, "off", None)
    on = server(args, work, "on", None if control else work / "overhead.jsonl")
    times: dict[str, list[float]] = {"off": [], "on": []}
    try:
        for n in range(rounds):
            pair = [("off", off), ("on", on)]
            for name, s in pair if n % 2 == 0 else pair[::-1]:  # each goes first in turn

                def one(q: str, port: int = s.port) -> float:
                    t = time.perf_counter()
                    call(port, "alice", "search.query", [args.workspace, q, {"limit": 10}])
                    return (time.perf_counter() - t) * 1000

                with ThreadPoolExecutor(4) as pool:
                    times[name] += list(pool.map(one, queries))
    finally:
        off.stop()
        on.stop()

    def pct(xs: list[float], p: float) -> float:  # as doc/gaps.md's figures were taken
        return round(sorted(xs)[int(p * (len(xs) - 1))], 2)

    res = {k: {"p50": pct(v, 0.5), "p95": pct(v, 0.95), "n": len(v)} for k, v in times.items()}
    res["ratio_p50"] = round(res["on"]["p50"] / res["off"]["p50"], 3)
    res["ratio_p95"] = round(res["on"]["p95"] / res["off"]["p95"], 3)
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--workspace", required=True)
    ap.add_argument("--questions", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--skip", default="", help="comma-separated: replay,overhead")
    ap.add_argument("--control", action="store_true", help="overhead: the log off in both")
    args = ap.parse_args()
    work = Path(args.work)
    skip = set(args.skip.split(","))
    with open(args.questions, encoding="utf-8") as f:
        questions = [json.loads(line) for line in f]
    log = work / "replay.jsonl"
    if "replay" not in skip:
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        replay(args, questions, work, log)
    rows, records, opened = labelled_records(log, questions)
    model = bundled_embedder()
    texts = [r["query"] for r in rows]
    vectors = dict(zip(texts, model.embed(texts), strict=True))
    result = {
        "questions_logged": len(rows),
        "opened": sum(r["opened"] for r in rows),
        **{f"gap_folds_{regime}": gap_folds(rows, regime) for regime in REGIMES},
        "grouping_folds": grouping_folds(rows, vectors),
        "shipped": {
            "GAP_PROBABILITY": gr.GAP_PROBABILITY,
            "GAP_COSINE": gr.GAP_COSINE,
            "GROUP_COSINE": gr.GROUP_COSINE,
        },
    }
    result["shipped_report"] = shipped_report(log, rows, records, opened)
    if "overhead" not in skip:
        result["overhead"] = overhead(args, questions, work, args.rounds, args.control)
    (work / "result.json").write_text(json.dumps(result, indent=1, default=str))
    print(
        json.dumps(
            {k: v for k, v in result.items() if k != "shipped_report"}, indent=1, default=str
        )
    )
    print(json.dumps({k: v for k, v in result["shipped_report"].items() if k != "markdown"}))


if __name__ == "__main__":
    main()

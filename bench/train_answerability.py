"""Train the answer model: whether the vault answers a query at all (sidecar/autodoc/query/
ranking.py `AnswerModel`), and choose it by leave-one-set-out folds over the golden sets.

The ranking model's probability that the top document answers is high whenever the top hit
shares the query's topic; a question about something the vault does not hold, in words the
vault uses, then reads `high`. The answer model reads the ranked list as a whole
(`ranking.ANSWER_INPUTS`: the top document's probability and its lead over the next, how much
of the query the first hits hold, whether the words and the meaning agree on the first
document, the query's own shape) and says how likely the vault answers. Trained on the golden
sets' answerable queries against their negatives (`"kind": "negative"`: written for every set,
verified absent), nothing else.

1. `capture`: each golden query through the real engine (hybrid, learned), its
   ANSWER_INPUTS read from the search's trace, with what the shipped model answered
   (`confidence`, `missing`).
2. `folds`: for each set left out, fit on the others, choose the thresholds on the others
   (`none` below the value that leaves at most `--dismiss` of their answerable queries below
   it, `high` from the value that leaves at most `--doubt` below it), and score the left-out
   set: negatives flagged (`none`, or a rare word found nowhere) and answerable queries marked
   `low` or `none`, next to what the shipped model said.
3. `ship`: fit on every set, thresholds on every set's left-out fold predictions, and write
   the `answer` entry of the shipped model file.

    python bench/train_answerability.py capture --golden adr=DB:bench:bench/golden/adr.jsonl ...
    python bench/train_answerability.py folds
    python bench/train_answerability.py ship
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "sidecar"))

from autodoc.engine import Engine  # noqa: E402
from autodoc.evaluation import golden  # noqa: E402
from autodoc.query import ranking  # noqa: E402
from autodoc.query.stages import SearchTrace  # noqa: E402

MODEL_PATH = REPO / "sidecar" / "autodoc" / "query" / ranking.MODEL_FILE
# Strong regularisation: a few hundred queries, a dozen inputs.
C = 0.3
DROPPED: set[str] = set()  # inputs left out (`--drop`), weighed 0


@dataclass
class Row:
    """One golden query: its inputs, whether the vault answers it, and the shipped answer."""

    query: str
    answerable: bool
    inputs: list[float]
    missing: bool  # a rare word of it found nowhere: the answer is at most `low` whatever
    level: str  # the shipped model's confidence
    named: bool = False  # `ranking.names_what_it_finds`: the answer model is not asked


def capture_set(db: Path, ws: str, gold: Path) -> list[Row]:
    engine = Engine(db)
    rows = []
    try:
        for q in golden.load(gold):
            trace = SearchTrace(capture=True)
            answer = engine.reading.search(ws, q.query, {"limit": 10}, trace=trace)
            inputs = trace.answer_inputs
            rows.append(
                Row(
                    q.query,
                    not q.negative,
                    [] if inputs is None else [round(float(v), 6) for v in inputs],
                    bool(answer["missing"]),
                    answer["confidence"],
                    inputs is not None and ranking.names_what_it_finds(inputs),
                )
            )
    finally:
        engine.close()
    return rows


def cmd_capture(args: argparse.Namespace) -> None:
    args.work.mkdir(parents=True, exist_ok=True)
    for spec in args.golden:
        name, rest = spec.split("=", 1)
        db, ws, gold = rest.split(":")
        rows = capture_set(Path(db), ws, Path(gold))
        (args.work / f"{name}.json").write_text(json.dumps([r.__dict__ for r in rows], indent=0))
        print(f"{name}: {len(rows)} queries, {sum(not r.answerable for r in rows)} negatives")


def load(work: Path) -> dict[str, list[Row]]:
    return {p.stem: [Row(**r) for r in json.loads(p.read_text())]
            for p in sorted(work.glob("*.json"))}  # fmt: skip


def asked(rows: list[Row]) -> list[Row]:
    """The queries the answer model reads: a hit listed, and not one the query names."""
    return [r for r in rows if r.inputs and not r.named]


def arrays(rows: list[Row]) -> tuple[np.ndarray, np.ndarray]:
    usable = asked(rows)
    return (np.array([r.inputs for r in usable]).reshape(-1, len(ranking.ANSWER_INPUTS)),
            np.array([r.answerable for r in usable], dtype=int))  # fmt: skip


def fit(rows: list[Row]) -> tuple[np.ndarray, float]:
    """Logistic regression on standardised inputs, balanced classes; returned as weights and
    intercept over the raw inputs (what the sidecar multiplies)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    x, y = arrays(rows)
    kept = [i for i, name in enumerate(ranking.ANSWER_INPUTS) if name not in DROPPED]
    scaler = StandardScaler().fit(x[:, kept])
    lr = LogisticRegression(C=C, class_weight="balanced", max_iter=2000)
    lr.fit(scaler.transform(x[:, kept]), y)
    w = np.zeros(len(ranking.ANSWER_INPUTS))
    w[kept] = lr.coef_[0] / scaler.scale_
    b = float(lr.intercept_[0] - (lr.coef_[0] * scaler.mean_ / scaler.scale_).sum())
    return w, b


def probabilities(rows: list[Row], model: tuple[np.ndarray, float]) -> np.ndarray:
    x, _ = arrays(rows)
    w, b = model
    return 1 / (1 + np.exp(-(x @ w + b)))


def thresholds(rows: list[Row], p: np.ndarray, doubt: float, dismiss: float) -> tuple[float, float]:
    """`low` (below: none) leaves at most `dismiss` of the answerable queries below it, `high`
    at most `doubt` below it, those a rare missing word caps at `low` counted first."""
    usable = asked(rows)
    answerable = sorted(float(v) for r, v in zip(usable, p, strict=True) if r.answerable)
    sure = sorted(float(v) for r, v in zip(usable, p, strict=True)
                  if r.answerable and not r.missing)  # fmt: skip
    room = max(0, int(doubt * len(answerable)) - (len(answerable) - len(sure)))
    high = sure[min(room, len(sure) - 1)] * 0.999
    low = answerable[int(dismiss * len(answerable))] * 0.999
    return round(low, 4), round(high, 4)


def scores(rows: list[Row], levels: list[str]) -> tuple[float, float]:
    """(negatives flagged, answerable doubted): flagged is `none` or a rare word missing."""
    neg = [lv == "none" or r.missing for r, lv in zip(rows, levels, strict=True)
           if not r.answerable]  # fmt: skip
    doubted = [lv != "high" for r, lv in zip(rows, levels, strict=True) if r.answerable]
    return float(np.mean(neg)) if neg else float("nan"), float(np.mean(doubted))


def levels(rows: list[Row], p: np.ndarray, low: float, high: float, veto: bool) -> list[str]:
    """Each query's level: by the answer model's probability through (low, high); with `veto`,
    the model only says `none` (below low) and the top document's reading stands otherwise."""
    out, it = [], iter(p.tolist())
    for r in rows:
        if r.named:  # the shipped confidence stands
            out.append(r.level)
            continue
        v = next(it) if r.inputs else 0.0
        if v < low:
            out.append("none")
        elif veto:
            out.append(r.level)
        else:
            out.append("high" if v >= high and not r.missing else "low")
    return out


def cmd_folds(args: argparse.Namespace) -> None:
    sets = load(args.work)
    print("| left out | queries | negatives | shipped: flagged / doubted | answer model: "
          "flagged / doubted | as a veto only |\n|---|---:|---:|---:|---:|---:|")  # fmt: skip
    for name, held in sets.items():
        train = [r for other, rows in sets.items() if other != name for r in rows]
        model = fit(train)
        low, high = thresholds(train, probabilities(train, model), args.doubt, args.dismiss)
        p = probabilities(held, model)
        got = levels(held, p, low, high, veto=False)
        before = scores(held, [r.level for r in held])
        after = scores(held, got)
        vetoed = scores(held, levels(held, p, low, high, veto=True))
        n_neg = sum(not r.answerable for r in held)
        print(f"| {name} | {len(held) - n_neg} | {n_neg} | {before[0]:.3f} / {before[1]:.3f} | "
              f"{after[0]:.3f} / {after[1]:.3f} | {vetoed[0]:.3f} / {vetoed[1]:.3f} |")  # fmt: skip
        if args.verbose:
            for r, lv in zip(held, got, strict=True):
                if (lv == "none") == r.answerable or (r.answerable and lv != "high"):
                    print(f"    {'answerable' if r.answerable else 'negative  '} {lv:4s} "
                          f"(shipped {r.level}) {r.query}")  # fmt: skip


def cmd_ship(args: argparse.Namespace) -> None:
    sets = load(args.work)
    rows = [r for held in sets.values() for r in held]
    # the thresholds from each set's left-out predictions, so they fit unseen data
    fold_p: list[float] = []
    fold_rows: list[Row] = []
    for name, held in sets.items():
        train = [r for other, rs in sets.items() if other != name for r in rs]
        fold_p += probabilities(held, fit(train)).tolist()
        fold_rows += asked(held)
    low, _ = thresholds(fold_rows, np.array(fold_p), args.doubt, args.dismiss)
    data = json.loads(MODEL_PATH.read_text(encoding="utf-8"))
    if args.fold_models:  # each set's model trained without it, as `folds` scores it
        args.fold_models.mkdir(parents=True, exist_ok=True)
        for name in sets:
            train = [r for other, rs in sets.items() if other != name for r in rs]
            model = fit(train)
            fold_low, _ = thresholds(train, probabilities(train, model), args.doubt, args.dismiss)
            fold = data | {"answer": answer_json(model, fold_low, [o for o in sets if o != name])}
            (args.fold_models / f"without-{name}.json").write_text(json.dumps(fold, indent=1))
    data["answer"] = answer_json(fit(rows), low, sorted(sets))
    MODEL_PATH.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"answer model: low {low}, {data['answer']['coef']}")


def answer_json(model: tuple[np.ndarray, float], low: float, trained_on: list[str]) -> dict:
    w, b = model
    return {
        "coef": {n: round(float(v), 6) for n, v in zip(ranking.ANSWER_INPUTS, w, strict=True)},
        "intercept": round(b, 6),
        "confidence": {"low": low},  # a veto: the top document's reading decides `high`
        "trained_on": trained_on,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("capture")
    c.add_argument("--golden", action="append", required=True, help="NAME=DB:WORKSPACE:FILE")
    f = sub.add_parser("folds")
    f.add_argument("--verbose", action="store_true")
    s = sub.add_parser("ship")
    s.add_argument("--fold-models", type=Path, help="also write without-SET.json for each set")
    for p in (c, f, s):
        p.add_argument("--work", type=Path, default=Path("/tmp/l2r/answer"))
    for p in (f, s):
        p.add_argument("--doubt", type=float, default=0.05, help="answerable doubted at most")
        p.add_argument("--dismiss", type=float, default=0.02, help="answerable called none")
    for p in (f, s):
        p.add_argument("--drop", default="", help="inputs to leave out, comma-separated")
    args = ap.parse_args()
    DROPPED.update(n for n in getattr(args, "drop", "").split(",") if n)
    {"capture": cmd_capture, "folds": cmd_folds, "ship": cmd_ship}[args.cmd](args)


if __name__ == "__main__":
    main()

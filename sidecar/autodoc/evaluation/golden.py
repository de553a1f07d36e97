"""Golden files: a vault's own judged queries, ranked as the person at the picker sees them.

One JSON object a line (or one JSON list): `{"query", "path"[, "line"][, "kind"][, "note"]}`.
Lines with the same query are its targets; `"path": ""` says the query should find nothing (a
negative query: what a vault does not hold). `line` names the line that answers, so a hit
answers the section only when its span holds it; `kind` (number, title, question, ...) groups
the tables.

Every hit is one row of the answer, as the picker lists it: a target's rank is the row of the
first hit that answers it, and rows above it that answer nothing count. (The first version kept
only the hits that answered and ranked those, so a target found at row 40 counted as rank 1.)
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autodoc.query.stages import STAGE_SETS
from autodoc.wire.errors import invalid_params

NEGATIVE = "negative"
UNKINDED = "unkinded"
# An answer that says it has nothing: a content word found nowhere, or no confidence at all.
NOTHING = "none"


@dataclass
class GoldenQuery:
    """One query and what answers it: (path, line or None) targets; none for a negative."""

    query: str
    kind: str
    targets: list[tuple[str, int | None]]

    @property
    def negative(self) -> bool:
        return not self.targets

    @property
    def has_line(self) -> bool:
        return any(line is not None for _, line in self.targets)


def _entries(path: Path) -> list[Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, ValueError) as exc:  # missing, a folder, not UTF-8
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise invalid_params(
            f"cannot read the golden file {path}: {reason}", path=str(path)
        ) from None
    try:
        data = json.loads(text)
        return data if isinstance(data, list) else [data]
    except json.JSONDecodeError:
        pass
    entries = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                entries.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise invalid_params(f"{path}:{n}: not JSON: {exc.msg}", line=n) from None
    return entries


def _valid(e: Any) -> bool:
    return (
        isinstance(e, dict)
        and isinstance(e.get("query"), str)
        and bool(e["query"].strip())
        and isinstance(e.get("path"), str)
        and (e.get("line") is None or (type(e["line"]) is int and e["line"] >= 1))
        and (e.get("line") is None or bool(e["path"]))
        and isinstance(e.get("kind", ""), str)
    )


def absent_targets(queries: list[GoldenQuery], indexed: Callable[[str], bool]) -> list[str]:
    """The golden paths the vault does not hold, each once, in file order: a typo there would
    count as a miss and look like bad ranking."""
    seen: dict[str, None] = {}
    for q in queries:
        for path, _ in q.targets:
            if path not in seen and not indexed(path):
                seen[path] = None
    return list(seen)


def load(path: Path) -> list[GoldenQuery]:
    """The file's queries in file order; -32602 naming the first entry that is not one."""
    by_query: dict[str, GoldenQuery] = {}
    for n, e in enumerate(_entries(path), 1):
        if not _valid(e):
            raise invalid_params(
                f'{path}: entry {n} needs a query, a path ("" for a query that should find'
                " nothing) and optionally a line >= 1 and a kind",
                entry=n,
            )
        target = e["path"].removeprefix("./")
        kind = e.get("kind") or (NEGATIVE if not target else UNKINDED)
        q = by_query.setdefault(e["query"], GoldenQuery(e["query"], kind, []))
        if target:
            q.targets.append((target, e.get("line")))
    return list(by_query.values())


def ranks(q: GoldenQuery, hits: list[dict[str, Any]]) -> tuple[int | None, int | None]:
    """(document rank, section rank), 1-based rows: the first hit of a target's file, and the
    first whose span holds a target's line (None: not in the answer, or no line to hold)."""
    doc = sec = None
    for row, h in enumerate(hits, 1):
        for path, line in q.targets:
            if h["path"] != path:
                continue
            doc = doc or row
            if sec is None and line is not None and h["line_start"] <= line <= h["line_end"]:
                sec = row
    return doc, sec


def judge(q: GoldenQuery, answer: dict[str, Any]) -> dict[str, Any]:
    """One query's record for `--json`: its ranks and what the answer said about itself."""
    hits = answer["hits"]
    doc, sec = ranks(q, hits)
    top = hits[0] if hits else None
    return {
        "query": q.query,
        "kind": q.kind,
        "rank": doc,
        "section_rank": sec,
        "has_line": q.has_line,
        "top": f"{top['path']}:{top['line_start']}-{top['line_end']}" if top else "",
        "missing": answer.get("missing", []),
        "confidence": answer.get("confidence", ""),
        "cosine": answer.get("cosine"),
    }


def _says_nothing(record: dict[str, Any]) -> bool:
    return bool(record["missing"]) or record["confidence"] == NOTHING


def _share(flags: list[bool]) -> float | None:
    return statistics.fmean(flags) if flags else None


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def summarise(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Recall@1, Recall@3 (a right document in the top rows), section Recall@3 (over queries
    with a line), MRR@10; for negatives, the share whose answer says it has nothing; for the
    rest, the share marked low or no confidence."""
    answerable = [r for r in records if r["kind"] != NEGATIVE]
    negatives = [r for r in records if r["kind"] == NEGATIVE]
    lined = [r for r in answerable if r["has_line"]]
    return {
        "queries": len(answerable),
        "negatives": len(negatives),
        "recall@1": _share([r["rank"] == 1 for r in answerable]),
        "recall@3": _share([r["rank"] is not None and r["rank"] <= 3 for r in answerable]),
        "section_recall@3": _share(
            [r["section_rank"] is not None and r["section_rank"] <= 3 for r in lined]
        ),
        "with_line": len(lined),
        "mrr@10": _mean([1 / r["rank"] if (r["rank"] or 99) <= 10 else 0.0 for r in answerable]),
        "negatives_flagged": _share([_says_nothing(r) for r in negatives]),
        "answerable_doubted": _share(
            [r["confidence"] in ("low", NOTHING) for r in answerable if r["confidence"]]
        ),
    }


def evaluate(
    call: Callable[..., Any],
    workspace: str,
    queries: list[GoldenQuery],
    sets: list[str],
    limit: int = 20,
    fusion: str | None = None,
) -> dict[str, dict[str, Any]]:
    """{stage set: {"all": summary, "kinds": {kind: summary}, "queries": records, p50_ms}}:
    each query through the dispatcher's `search.query`, as a picker sends it."""
    extra = {"fusion": fusion} if fusion else {}
    out: dict[str, dict[str, Any]] = {}
    for label in sets:
        records, times = [], []
        for q in queries:
            t0 = time.perf_counter()
            answer = call(
                "search.query",
                [workspace, q.query, {"stages": STAGE_SETS[label], "limit": limit, **extra}],
            )
            times.append((time.perf_counter() - t0) * 1000)
            records.append(judge(q, answer))
        kinds = sorted({r["kind"] for r in records})
        out[label] = {
            "all": summarise(records),
            "kinds": {k: summarise([r for r in records if r["kind"] == k]) for k in kinds},
            "p50_ms": statistics.median(times) if times else 0.0,
            "queries": records,
        }
    return out


def _cell(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def table(label: str, result: dict[str, Any]) -> list[str]:
    """One stage set's per-kind table, then every query together."""
    head = ["kind", "queries", "Recall@1", "Recall@3", "section Recall@3 (n)", "MRR@10"]
    lines = [f"#### {label} (p50 {result['p50_ms']:.1f} ms)", ""]
    lines += ["| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
    rows = [*result["kinds"].items(), ("**all**", result["all"])]
    for kind, s in rows:
        if kind == NEGATIVE:
            continue
        section = f"{_cell(s['section_recall@3'])} ({s['with_line']})"
        cells = [kind, str(s["queries"]), _cell(s["recall@1"]), _cell(s["recall@3"]), section]
        lines.append("| " + " | ".join([*cells, _cell(s["mrr@10"])]) + " |")
    neg = result["kinds"].get(NEGATIVE)
    if neg:
        flagged = _cell(neg["negatives_flagged"])
        lines += ["", f"negative queries whose answer says it has nothing (`missing` or"
                      f" confidence none): {flagged} of {neg['negatives']}"]  # fmt: skip
    doubted = result["all"]["answerable_doubted"]
    if doubted is not None:
        lines.append(f"answerable queries marked low or no confidence: {_cell(doubted)}")
    return lines

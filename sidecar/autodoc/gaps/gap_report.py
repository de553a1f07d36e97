"""What the docs did not answer: the logged questions (`question_log`) whose answer says it may
hold none (`is_gap`) and whose hits no reader opened, grouped by meaning.

Grouping: the questions' vectors (the bundled embedder) clustered by average linkage (SciPy's
`linkage`), cut where the groups' mean cosine falls below `GROUP_COSINE`; a group is led by its
most central question. Over the labelled replay, average linkage's held-out pairwise F1 was 0.66
against 0.54 for leader clustering (sentence-transformers' `community_detection`), and mixing in
the overlap of the hits shown did not help (doc/gaps.md).

A report may be recorded as the baseline (`PATH.reported.json`, beside the log): `autodoc check
--gaps N` counts the groups no recorded group is within `GROUP_COSINE` of.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from autodoc.gaps.question_log import SETTLE_S, read_records, typed_on
from autodoc.models.embedders import BUNDLED_MODEL
from autodoc.wire.gap_answers import AnsweredQuestion, GapGroup, GapReport, GapShown

# The gap rule's thresholds, chosen by leave-one-set-out folds over labelled questions for the
# sum of F1 with clients that report openings and clients that never do (bench/gaps/replay.py,
# doc/gaps.md): the first hit's calibrated probability of answering, and the semantic stage's
# best cosine (the bundled model's scale: another model's is not read).
GAP_PROBABILITY = 0.8
GAP_COSINE = 0.56
# A question one of whose hits was opened is answered, unless its answer had none (`confidence`
# none) or nothing close in meaning: a reader looking at a far hit found nothing.
GAP_OPENED_COSINE = 0.38
GROUP_COSINE = 0.48  # groups whose questions are this close on average ask one thing (gaps.md)
OPEN_WINDOW_S = 600.0  # a hit opened this long after its question still counts as its answer
EXAMPLES = 5  # questions shown per group
SHOWN = 3  # sections shown per group
HITS_READ = 3  # of each question's logged hits, those a reader was shown first
MAX_GROUPED = 3000  # the most recent unanswered questions grouped (a distance matrix this side)

logger = logging.getLogger(__name__)

Embed = Callable[[list[str]], np.ndarray]


def baseline_path(log: Path) -> Path:
    return log.with_name(log.name + ".reported.json")


def settled(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records (in time order) less the questions an asker typed on within `SETTLE_S`: a
    team server's workers each settle the keystrokes they answered, so a picker's prefixes
    spread over two workers may each be written once; the last one stands."""
    keep = [True] * len(records)
    latest: dict[tuple[str, str], int] = {}  # (asker, workspace) -> their latest question
    for i, r in enumerate(records):
        key = (r.get("asker", ""), r.get("workspace", ""))
        if r.get("kind") != "question":
            latest.pop(key, None)  # an opening settles the question before it
            continue
        j = latest.get(key)
        soon = j is not None and r["at"] - records[j]["at"] <= SETTLE_S
        if j is not None and soon and typed_on(records[j]["query"], r["query"]):
            keep[j] = False
        latest[key] = i
    return [r for r, k in zip(records, keep, strict=True) if k]


def opened_questions(records: list[dict[str, Any]]) -> set[int]:
    """Indexes (into `records`, in time order) of the questions one of whose hits the same
    asker opened in the same workspace within `OPEN_WINDOW_S`: the opening counts for the
    asker's latest question showing that path (an agent asks several at once, so the latest
    question is not always the one whose hit it reads)."""
    asked: dict[tuple[str, str], list[int]] = {}  # (asker, workspace) -> their questions
    opened: set[int] = set()
    for i, r in enumerate(records):
        key = (r.get("asker", ""), r.get("workspace", ""))
        if r.get("kind") == "question":
            asked.setdefault(key, []).append(i)
            continue
        for q in reversed(asked.get(key, [])):
            if r["at"] - records[q]["at"] > OPEN_WINDOW_S:
                break
            if any(h.get("path") == r.get("path") for h in records[q].get("hits", [])):
                opened.add(q)
                break
    return opened


def is_gap(question: dict[str, Any], opened: bool) -> bool:
    """Not answered: the answer said it has none; or nobody opened a hit, and its first hit is
    unlikely to answer or nothing in the workspace is close in meaning; or a hit was opened
    but nothing was close in meaning (doc/gaps.md)."""
    hits = question.get("hits") or []
    top = float(hits[0].get("relevance", 0.0)) if hits else 0.0
    if hits and question.get("fusion", "learned") != "learned":
        top = 1.0  # another fusion's relevance is no probability: no verdict from it
    cosine = question.get("cosine")
    if cosine is None or question.get("model") != BUNDLED_MODEL:
        cosine = 1.0  # no semantic stage, or a model whose scale was not measured: no verdict
    if question.get("confidence") == "none":
        return True
    if opened:
        return cosine < GAP_OPENED_COSINE
    return top < GAP_PROBABILITY or cosine < GAP_COSINE


def group_rows(vectors: np.ndarray, threshold: float = GROUP_COSINE) -> list[list[int]]:
    """Rows grouped by meaning (see the module), largest group first, each led by its most
    central row (the highest mean cosine to the others)."""
    if len(vectors) == 0:
        return []
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    if len(unit) == 1:
        return [[0]]
    from scipy.cluster.hierarchy import fcluster, linkage  # the report's alone

    distances = np.clip(1.0 - unit @ unit.T, 0.0, 2.0)
    condensed = distances[np.triu_indices(len(unit), 1)]
    labels = fcluster(linkage(condensed, method="average"), 1.0 - threshold, criterion="distance")
    groups: list[list[int]] = []
    for label in np.unique(labels):
        members = np.flatnonzero(labels == label)
        centrality = (unit[members] @ unit[members].T).mean(axis=1)
        order = members[np.argsort(-centrality, kind="stable")]
        groups.append([int(m) for m in order])
    groups.sort(key=lambda g: (-len(g), g[0]))
    return groups


def _group_entry(qs: list[dict[str, Any]]) -> GapGroup:
    """One group as the report shows it (`qs` led by its most central question)."""
    missing = Counter(w for q in qs for w in q.get("missing", []))
    shown: Counter[tuple[str, int, str]] = Counter(
        (h["path"], h["line"], h.get("breadcrumb", ""))
        for q in qs for h in q.get("hits", [])[:HITS_READ]
    )  # fmt: skip
    examples = list(dict.fromkeys(q["query"] for q in qs))[:EXAMPLES]
    return GapGroup(
        count=len(qs),
        askers=len({q.get("asker", "") for q in qs}),
        question=qs[0]["query"],
        questions=examples,
        missing=[w for w, _ in missing.most_common(5)],
        shown=[
            GapShown(path=p, line=line, breadcrumb=b, times=n)
            for (p, line, b), n in shown.most_common(SHOWN)
        ],
        first_at=min(q["at"] for q in qs),
        last_at=max(q["at"] for q in qs),
        new=True,  # until `mark_new` reads the recorded report
    )


def gap_report(
    log: Path,
    embed: Embed,
    *,
    since: float | None = None,
    workspace: str | None = None,
) -> tuple[GapReport, np.ndarray]:
    """The report over the log (from `since`, of one workspace or all), and its groups'
    centroids (unit rows, in the report's order)."""
    records, unreadable = read_records(log, since)
    records.sort(key=lambda r: float(r.get("at", 0)))  # a settled question is written late
    records = settled(records)
    if workspace is not None:
        records = [r for r in records if r.get("workspace") == workspace]
    opened = opened_questions(records)
    questions = [(i, q) for i, q in enumerate(records) if q.get("kind") == "question"]
    verdicts = [(q, is_gap(q, i in opened)) for i, q in questions]
    unanswered = [q for q, gap in verdicts if gap]
    answered = [q for q, gap in verdicts if not gap]
    gaps = unanswered[-MAX_GROUPED:]  # the most recent, when there are more
    by_text: dict[str, list[dict[str, Any]]] = {}
    for q in gaps:
        by_text.setdefault(q["query"], []).append(q)
    texts = sorted(by_text)
    vectors = np.nan_to_num(embed(texts)) if texts else np.zeros((0, 1), dtype=np.float32)
    groups: list[GapGroup] = []
    centroids: list[np.ndarray] = []
    for rows in group_rows(vectors):
        qs = [q for r in rows for q in by_text[texts[r]]]
        lead = texts[rows[0]]
        qs.sort(key=lambda q: (q["query"] != lead, q["at"]))
        groups.append(_group_entry(qs))
        centroid = vectors[rows].mean(axis=0)
        centroids.append(centroid / max(float(np.linalg.norm(centroid)), 1e-12))
    groups_order = sorted(
        range(len(groups)), key=lambda g: (-groups[g]["count"], groups[g]["question"])
    )
    report = GapReport(
        log=str(log),
        since=since,
        until=time.time(),
        workspace=workspace,
        questions=len(questions),
        answered=len(answered),
        unanswered=len(unanswered),
        opened=len(opened),
        unreadable_lines=unreadable,
        groups=[groups[g] for g in groups_order],
        answered_well=_answered_well(answered),
        baseline_at=None,
        new_groups=len(groups),
    )
    stacked = np.array([centroids[g] for g in groups_order], dtype=np.float32)
    if not groups_order:
        stacked = np.zeros((0, vectors.shape[1]), dtype=np.float32)
    return report, stacked


def _answered_well(answered: list[dict[str, Any]]) -> list[AnsweredQuestion]:
    """The base rate: the questions asked most that were answered, with how often."""
    counts = Counter(q["query"] for q in answered)
    return [AnsweredQuestion(question=q, count=n) for q, n in counts.most_common(EXAMPLES)]


def mark_new(report: GapReport, centroids: np.ndarray, log: Path) -> None:
    """Mark each group `new` unless it was there to report: its first question came before the
    recorded baseline, or a recorded group is within `GROUP_COSINE` of it. A baseline that
    cannot be read (another model's width, a damaged file) is none, and is said so in the log."""
    recorded = read_baseline(log)
    usable = recorded is not None and recorded[1].ndim == 2 and len(centroids) > 0
    if usable and recorded is not None and recorded[1].shape[1] != centroids.shape[1]:
        logger.warning("%s: recorded with another model; every group counts as new", log)
        usable = False
    report["baseline_at"] = recorded[0] if recorded is not None else None
    best = (centroids @ recorded[1].T).max(axis=1) if usable and recorded is not None else None
    for n, g in enumerate(report["groups"]):
        if recorded is None:
            g["new"] = True
        else:
            known = best is not None and len(recorded[1]) > 0 and best[n] >= GROUP_COSINE
            g["new"] = g["first_at"] > recorded[0] and not known
    report["new_groups"] = sum(g["new"] for g in report["groups"])


def read_baseline(log: Path) -> tuple[float, np.ndarray] | None:
    """The recorded report's time and group centroids; None when there is none or it cannot
    be read (said in the log: the next recorded report replaces it)."""
    try:
        data = json.loads(baseline_path(log).read_text(encoding="utf-8"))
        centroids = np.asarray(data["centroids"], dtype=np.float32)
        if centroids.size == 0:
            centroids = centroids.reshape(0, 0)
        return float(data["at"]), centroids
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError) as exc:
        logger.warning(
            "%s is not a recorded gap report (%s): none is used", baseline_path(log), exc
        )
        return None


def record_baseline(report: GapReport, centroids: np.ndarray, log: Path) -> None:
    """The report becomes the baseline `check --gaps` counts new groups against: written whole
    to a private file of its own beside the log (questions are private), then renamed over the
    last one."""
    path = baseline_path(log)
    data = {"at": report["until"], "questions": [g["question"] for g in report["groups"]],
            "centroids": np.round(centroids, 5).tolist()}  # fmt: skip
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", dir=path.parent)  # mode 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise

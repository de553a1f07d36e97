"""The answer of `search.query` (spec §7): hits built through the wire schema, the exact-name
pin, the confidence, the semantic stage's state; and the answer of a query of filters only.
"""

from __future__ import annotations

import sqlite3
import time
from typing import TypedDict, cast

from autodoc import store as sql
from autodoc.models.rankers import NO_RANKER
from autodoc.parse.query_parser import ParsedQuery
from autodoc.query import confidence, fusion, ranking
from autodoc.query.freshness import STALE_SPARE, stale_documents
from autodoc.query.search_options import FACET_ONLY
from autodoc.query.snippets import TermMatcher, make_snippet
from autodoc.query.stages import (
    QueryContext,
    mode_used,
)
from autodoc.store import read_epochs
from autodoc.vectors.coverage import semantic_coverage
from autodoc.vectors.nearest import SemanticPlan
from autodoc.wire import protocol


def pin_exact(ctx: QueryContext) -> list[fusion.Fused]:
    """A document's exact title or alias: its first section first, before every fused hit."""
    fused = ctx.results.fused
    if not ctx.results.exact:
        return fused
    found = {f.chunk_id: f for f in fused}
    pinned = []
    for e in ctx.results.exact:
        if ctx.results.rows[e.chunk_id]["path"] in ctx.results.stale:
            continue
        f = found.get(e.chunk_id)
        if f is not None:
            f.via = [*f.via, "exact"]
        pinned.append(f or e)
    docs = {e.document_id for e in pinned}
    pinned_ids = {e.chunk_id for e in pinned}
    own = [f for f in fused if f.document_id in docs and f.chunk_id not in pinned_ids]
    rest = [f for f in fused if f.document_id not in docs]
    return fusion.cap_per_document(pinned + own + rest)  # the pin counts toward its cap


def build_answer(ctx: QueryContext) -> protocol.Answer:
    fused = pin_exact(ctx)[: ctx.request.options.limit]
    record = ctx.trace.fusion
    assert (
        record is not None and ctx.trace.rank_record is not None
    )  # the fuse and rerank stages ran
    terms = TermMatcher(ctx.results.lexical_query or ctx.request.query)
    hits = []
    missing = confidence.rare_words(ctx.absent_words())
    probabilities = _probabilities(ctx, fused)
    for f, relevance in zip(fused, _relevance(ctx, fused, probabilities, missing), strict=True):
        hit = _hit(ctx.results.rows[f.chunk_id], terms, relevance, f.score, f.via)
        if f.chunk_id in ctx.results.moved:
            hit["superseded_by"] = ctx.results.successor_paths.get(
                ctx.results.moved[f.chunk_id], ""
            )
        if f.chunk_id in ctx.results.rank_scores:
            hit["rank_score"] = round(ctx.results.rank_scores[f.chunk_id], 6)
        hits.append(hit)
    ctx.trace.timings["total_ms"] = round((time.perf_counter() - ctx.request.started) * 1000, 2)
    answer = protocol.Answer(
        workspace=ctx.request.ws.name,
        root=str(ctx.request.ws.root),
        query=ctx.request.text,
        hits=hits,
        mode_used=mode_used(ctx.trace.performed),
        **_semantic_report(ctx.request.semantic),
        rank=ctx.trace.rank_record,
        stages=protocol.StagesRecord(
            requested=ctx.request.options.stages,
            performed=ctx.trace.performed,
            skipped=ctx.trace.skipped,
            engines=ctx.trace.engines,
        ),
        fusion=record,
        filter=ctx.request.flt.describe(),
        truncated=ctx.results.truncated,
        below_floor=ctx.results.below_floor,
        stale=sorted(ctx.results.stale),
        **_confidence(ctx, hits, probabilities, missing),
        epoch=list(ctx.results.epochs),
        took_ms=ctx.trace.timings["total_ms"],
        timings=ctx.trace.timings,
    )
    if ctx.results.did_you_mean:
        answer["did_you_mean"] = ctx.results.did_you_mean
    return answer


def _probabilities(ctx: QueryContext, fused: list[fusion.Fused]) -> list[float]:
    """Each hit's probability, never above the one before it: under `learned` fusion the
    calibrated probability that its document answers, else its share of first place in every
    stage; an exact title or alias 1.0."""
    record = ctx.trace.fusion
    assert record is not None
    if record["method"] == "learned":
        raw = [
            1.0 if "exact" in f.via else ctx.results.document_p.get(f.document_id, f.score)
            for f in fused
        ]
    else:
        active = sum(w for s, w in record["weights"].items() if s in ctx.trace.performed)
        raw = [
            1.0 if "exact" in f.via else fusion.relevance(f.score, active, record["k"])
            for f in fused
        ]
    return ranking.non_increasing(raw)


def _relevance(ctx: QueryContext, fused: list[fusion.Fused], probabilities: list[float],
               missing: list[str]) -> list[float]:  # fmt: skip
    """Each hit's relevance: under `learned` fusion on the answer's scale, whose top is its
    confidence (`ranking.shown_relevance`), else the probabilities as they are; a superseded
    hit below its successor's, never the same."""
    shown = probabilities
    if ctx.trace.fusion is not None and ctx.trace.fusion["method"] == "learned":
        shown = ranking.shown_relevance(
            ranking.active_model(), probabilities, bool(missing), ctx.results.answer_p
        )
    shown = fusion.below_successors(shown, fused, ctx.results.moved)
    return [round(r, 4) for r in shown]


class _Confidence(TypedDict):
    missing: list[str]
    confidence: protocol.ConfidenceLevel
    cosine: float | None


def _confidence(ctx: QueryContext, hits: list[protocol.Hit], probabilities: list[float],
                missing: list[str]) -> _Confidence:  # fmt: skip
    """What the answer can say about itself: under `learned` fusion from the calibrated
    probability that its top document answers, else from absolute evidence (confidence.py)."""
    words = ctx.request.content_words
    semantic = ctx.results.signals.get("semantic") if "semantic" in ctx.trace.performed else None
    cosine = round(float(semantic[0]), 4) if semantic else None
    assert ctx.trace.fusion is not None
    if ctx.trace.fusion["method"] == "learned":
        top = probabilities[0] if hits else None
        level = ranking.confidence_level(
            ranking.active_model(), top, bool(missing), ctx.results.answer_p
        )
    else:
        lexical_hits = next(
            (len(found) for stage, found in ctx.results.ranked if stage == "lexical"), 0
        )
        level = confidence.level(len(hits), len(words), len(missing), cosine, lexical_hits)
    return _Confidence(missing=missing, confidence=level, cosine=cosine)


def _hit(
    r: sqlite3.Row, terms: TermMatcher, relevance: float, score: float, via: list[str]
) -> protocol.Hit:
    snippet, highlights = make_snippet(r["text"], terms)
    line, headings = sql.chunk_place(r)
    return protocol.Hit(
        path=r["path"],
        title=r["title"],
        breadcrumb=r["breadcrumb"],
        snippet=snippet,
        highlights=highlights,
        byte_start=r["byte_start"],
        byte_end=r["byte_end"],
        line_start=r["line_start"],
        line_end=r["line_end"],
        line=line,
        headings=[protocol.HeadingAt(line=n, text=t) for n, t in headings],
        relevance=relevance,
        score=round(score, 6),
        via=cast(list[protocol.Via], via),
        generation=r["generation"],
        chunk_id=r["id"],
        kind=r["kind"],
    )


class _SemanticReport(TypedDict):
    semantic: protocol.SemanticStateName
    semantic_coverage: protocol.Coverage | None
    model: str


def _semantic_report(semantic: SemanticPlan) -> _SemanticReport:
    state: protocol.SemanticStateName
    if semantic.state:
        state = semantic.state
    elif semantic.coverage is None:
        state = "off" if semantic.embedder is None else "partial"
    else:
        state = "ready" if semantic.coverage[0] >= semantic.coverage[1] else "partial"
    coverage = semantic.coverage
    return _SemanticReport(
        semantic=state,
        semantic_coverage=(
            protocol.Coverage(embedded=coverage[0], total=coverage[1]) if coverage else None
        ),
        model=semantic.embedder.name if semantic.embedder is not None else "",
    )


def browse_answer(ctx: QueryContext, conn: sqlite3.Connection) -> protocol.Answer:
    """A query of filters only (spec §6), on the search's snapshot: the matching files in path
    order, each shown by its first section; nothing is embedded or ranked."""
    store, ws, options, semantic, rank = (
        ctx.request.store,
        ctx.request.ws,
        ctx.request.options,
        ctx.request.semantic,
        ctx.request.rank,
    )
    t0 = time.perf_counter()
    take, matched = ctx.request.flt.browse(
        conn, ws.id, options.limit + min(options.limit, STALE_SPARE)
    )
    epochs = read_epochs(conn, ws.id)
    rows = store.chunk_rows(conn, sql.first_live_chunks(conn, take))
    if semantic.embedder is not None and semantic.model_fp is not None and epochs:
        semantic.coverage = semantic_coverage(conn, store, ws, semantic.model_fp, epochs)
    stale = stale_documents(ws, rows.values())
    order = sorted((r for r in rows.values() if r["path"] not in stale), key=lambda r: r["path"])
    terms = TermMatcher(ParsedQuery(ctx.request.text))
    hits = [_hit(r, terms, 0.0, 0.0, ["facet"]) for r in order[: options.limit]]
    if rank.ranker is not None:
        rank_record = protocol.RankRecord(state="skipped", model=rank.ranker.name, error=FACET_ONLY)
    else:
        rank_record = protocol.RankRecord(state="off", model="", error=rank.reason or NO_RANKER)
    done = time.perf_counter()  # one reading for both, so the part never exceeds the whole
    filter_ms = round((done - t0) * 1000, 2)
    total_ms = round((done - ctx.request.started) * 1000, 2)
    return protocol.Answer(
        workspace=ws.name,
        root=str(ws.root),
        query=ctx.request.text,
        hits=hits,
        mode_used="facet",
        **_semantic_report(semantic),
        rank=rank_record,
        stages=protocol.StagesRecord(
            requested=options.stages,
            performed=[],
            skipped={s: FACET_ONLY for s in options.stages},
            engines={},
        ),
        fusion=None,
        filter=ctx.request.flt.describe(),
        matched=matched,
        truncated=False,
        below_floor=0,
        stale=sorted(stale),
        missing=[],
        confidence="high" if hits else "none",  # the filter is exact: what matches, matches
        cosine=None,
        epoch=list(epochs or (0, 0)),
        took_ms=total_ms,
        timings={"filter_ms": filter_ms, "total_ms": total_ms},
    )

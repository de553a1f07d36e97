"""`search.query`: the registry's stages on one store snapshot, and the answer (spec §7).

`run_search` is the loop: options and the filter, each stage's `prepare` (outside the snapshot),
the snapshot stages in order, the rows of the hits to show, stale files dropped, the stages that
run after the snapshot, then the answer, built as a `protocol.Answer`. What a stage does lives
in `stages/`; what the answer says about stages comes from the registry.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import stat
import time
from collections.abc import Iterable
from typing import Any, TypedDict, cast

from autodoc import store as queries
from autodoc.bm25.analyzer import Lexical, analyze
from autodoc.files.confine import open_inside
from autodoc.models.rankers import NO_RANKER, RankPlan
from autodoc.parse.query_parser import ParsedQuery, parse_query
from autodoc.query import confidence, facet_filter, fusion, intent
from autodoc.query.snippets import TermMatcher, make_snippet
from autodoc.query.stages import (
    REGISTRY,
    RETRIEVERS,
    STAGE_SETS,
    TOGGLES,
    QueryContext,
    SearchOptions,
    Skip,
    Stage,
    mode_used,
)
from autodoc.query.stages.semantic import semantic_coverage
from autodoc.store import Store, Workspace, read_epochs
from autodoc.vectors.embedding_cache import SemanticPlan
from autodoc.wire import limits, protocol
from autodoc.wire.errors import CancelToken, RpcError, invalid_params
from autodoc.wire.provider_specs import validate_window

DEFAULT_LIMIT = 10
MAX_LIMIT = 100
STALE_SPARE = 10

_OPTS = {
    "limit", "stages", "paths", "mode", "retrieval", "window", "facets", "tags", "fusion", "recency"
}  # fmt: skip
FACET_ONLY = "the query has only facet filters"


def check_query(text: str) -> None:
    """-32602 for a query past MAX_QUERY_CHARS or MAX_QUERY_WORDS: before it is parsed, so a
    hostile 1 MB query costs a length check, not a clause per word (issue 22: 899 MB RSS)."""
    if len(text) > limits.MAX_QUERY_CHARS:
        raise invalid_params(
            f"query is longer than {limits.MAX_QUERY_CHARS} characters",
            field="query",
            limit=limits.MAX_QUERY_CHARS,
        )
    if len(text.split(None, limits.MAX_QUERY_WORDS)) > limits.MAX_QUERY_WORDS:
        raise invalid_params(
            f"query has more than {limits.MAX_QUERY_WORDS} words",
            field="query",
            limit=limits.MAX_QUERY_WORDS,
        )


def parse_options(opts: Any) -> SearchOptions:
    if opts is None:
        opts = {}
    if not isinstance(opts, dict):
        raise invalid_params("opts must be an object", got=type(opts).__name__)
    unknown = sorted(set(opts) - _OPTS)
    if unknown:
        raise invalid_params(f"unknown search option {unknown[0]!r}", field=unknown[0])
    limit = opts.get("limit", DEFAULT_LIMIT)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise invalid_params(f"limit must be an integer 1..{MAX_LIMIT}", field="limit", value=limit)
    stages = opts.get("stages")
    mode = opts.get("mode")
    if mode is not None:
        modes = STAGE_SETS  # the evaluation's sets: "hybrid" is every retriever, fused
        if not isinstance(mode, str) or mode not in modes:
            raise invalid_params(f"mode must be one of {', '.join(modes)}", field="mode")
        stages = stages or modes[mode]
    if stages is None or stages == []:
        stages = list(TOGGLES)
    if not isinstance(stages, list) or any(s not in TOGGLES for s in stages):
        raise invalid_params(f"stages must be a list of {', '.join(TOGGLES)}", field="stages")
    if not any(s in RETRIEVERS for s in stages):
        raise invalid_params(f"stages must include {' or '.join(RETRIEVERS)}", field="stages")
    stages = [s for s in TOGGLES if s in stages]
    paths = opts.get("paths") or []
    if not isinstance(paths, list) or not all(isinstance(p, str) and p for p in paths):
        raise invalid_params("paths must be a list of path prefixes", field="paths")
    paths = [p[2:] if p.startswith("./") else p for p in paths]
    retrieval = opts.get("retrieval") or {}
    if not isinstance(retrieval, dict) or set(retrieval) - {"demote_superseded"}:
        raise invalid_params("retrieval takes demote_superseded", field="retrieval")
    demote = retrieval.get("demote_superseded")
    if demote is not None and not isinstance(demote, bool):
        raise invalid_params("retrieval.demote_superseded must be true or false", field="retrieval")
    window = opts.get("window")
    if window is not None:
        window = validate_window(window, "window")
    facet_opts, tags = facet_filter.validate_options(opts.get("facets"), opts.get("tags"))
    method = opts.get("fusion", fusion.DEFAULT_FUSION)
    if not isinstance(method, str) or method not in fusion.FUSIONS:
        raise invalid_params(
            f"fusion must be one of {', '.join(fusion.FUSIONS)}", field="fusion", value=method
        )
    recency = opts.get("recency")
    if recency is not None and (
        isinstance(recency, bool)
        or not isinstance(recency, (int, float))
        or not 0 < recency <= fusion.MAX_HALF_LIFE_DAYS
    ):
        raise invalid_params(
            f"recency is a half-life in days, above 0 and at most {fusion.MAX_HALF_LIFE_DAYS}",
            field="recency",
            value=recency,
        )
    return SearchOptions(
        limit, stages, paths, demote, window, facet_opts, tags, method,
        None if recency is None else float(recency),
    )  # fmt: skip


# -- the pipeline ------------------------------------------------------------------------------


def run_search(
    store: Store,
    lexical: Lexical,
    ws: Workspace,
    text: Any,
    opts: Any,
    semantic: SemanticPlan,
    cancel: CancelToken | None = None,
    rank: RankPlan | None = None,
) -> protocol.Answer:
    """Run the stages; `cancel` is checked between them, so superseded work stops early."""
    ctx = _context(store, lexical, ws, text, opts, semantic, rank, cancel)
    if ctx.wordless and ctx.flt.active:
        return _browse(ctx)
    ctx.check()  # superseded already: embed nothing
    plan = _plan(ctx)
    ctx.check()
    with store.snapshot() as conn:
        epochs = read_epochs(conn, ws.id)
        if epochs is None:
            raise invalid_params(f"unknown workspace {ws.name!r}", workspace=ws.name)
        ctx.epochs = epochs
        ctx.check()
        if ctx.flt.active:
            with ctx.timed("filter_ms"):
                ctx.allowed = ctx.flt.select(conn, ws.id)
        for stage in REGISTRY:
            if stage.phase == "snapshot":
                _run(ctx, stage, plan, conn)
        ctx.check()
        _read_rows(ctx, conn, will_rank=any(s.phase == "after" for s in plan))
    ctx.check()
    ctx.stale = stale_documents(ws, ctx.rows.values())
    ctx.fused = [f for f in ctx.fused if ctx.rows[f.chunk_id]["path"] not in ctx.stale]
    for stage in REGISTRY:
        if stage.phase == "after":
            _run(ctx, stage, plan, None)
    return _answer(ctx)


def _context(
    store: Store,
    lexical: Lexical,
    ws: Workspace,
    text: Any,
    opts: Any,
    semantic: SemanticPlan,
    rank: RankPlan | None,
    cancel: CancelToken | None,
) -> QueryContext:
    if not isinstance(text, str):
        raise invalid_params("query must be a string", field="query")
    check_query(text)
    options = parse_options(opts)
    started = time.perf_counter()
    with store.snapshot() as conn:
        schema = queries.stored_schema(conn, ws.id)
    query = parse_query(text, schema.is_facet)
    flt = facet_filter.build_filter(
        schema,
        [(t.field, t.value, t.negated) for t in query.facets],
        options.facets,
        options.tags,
        options.paths,
    )
    return QueryContext(
        store=store,
        lexical=lexical,
        ws=ws,
        text=text,
        options=options,
        query=query,
        flt=flt,
        semantic=semantic,
        rank=rank or RankPlan(None, {}, NO_RANKER),
        check=cancel.check if cancel is not None else (lambda: None),
        wordless=not any(analyze(item.text) for item in query.items),  # "", "*** !!!"
        started=started,
        intent=intent.detect(query),
    )


def _plan(ctx: QueryContext) -> list[Stage]:
    """The stages this search runs: those requested (and every stage a client cannot switch
    off) that can run, each prepared. A requested stage that cannot run is recorded with its
    reason; when every requested retriever cannot, the search fails with the last one's error
    (a semantic-only search never silently answers lexically)."""
    requested = ctx.options.stages
    plan: list[Stage] = []
    failed: Skip | None = None
    for stage in REGISTRY:
        if stage.toggle and stage.name not in requested:
            continue
        skip = stage.unavailable(ctx) or stage.prepare(ctx)
        if skip is None:
            plan.append(stage)
            continue
        ctx.skipped[stage.name] = skip.reason
        if stage.retriever:
            failed = skip
    if failed is not None and not any(s.retriever for s in plan):
        raise RpcError(failed.code, failed.message, failed.data)
    return plan


def _run(
    ctx: QueryContext, stage: Stage, plan: list[Stage], conn: sqlite3.Connection | None
) -> None:
    ran = False
    if stage in plan:
        ctx.check()
        skip = stage.run(ctx, conn)
        if skip is None:
            ran = True
            if stage.toggle:
                ctx.performed.append(cast(protocol.StageName, stage.name))
        else:
            ctx.skipped[stage.name] = skip.reason
    stage.describe(ctx, conn, ran)


def _read_rows(ctx: QueryContext, conn: sqlite3.Connection, *, will_rank: bool) -> None:
    """The rows of the hits that may be shown: the limit, a few spares for hits whose file
    changed since it was indexed, and the ranker's whole window when it runs."""
    depth = ctx.options.limit + min(ctx.options.limit, STALE_SPARE)
    window = ctx.options.window or ctx.rank.window
    ctx.fused = ctx.fused[: max(depth, window) if will_rank else depth]
    chunk_ids = [f.chunk_id for f in ctx.fused] + [f.chunk_id for f in ctx.exact]
    ctx.rows = ctx.store.chunk_rows(conn, chunk_ids)
    ctx.successor_paths = queries.document_paths(conn, list(ctx.moved.values()))


def _pin_exact(ctx: QueryContext) -> list[fusion.Fused]:
    """A document's exact title or alias: its first section first, before every fused hit."""
    fused = ctx.fused
    if not ctx.exact:
        return fused
    found = {f.chunk_id: f for f in fused}
    pinned = []
    for e in ctx.exact:
        if ctx.rows[e.chunk_id]["path"] in ctx.stale:
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


def _answer(ctx: QueryContext) -> protocol.Answer:
    fused = _pin_exact(ctx)[: ctx.options.limit]
    record = ctx.fusion
    assert record is not None and ctx.rank_record is not None  # the fuse and rerank stages ran
    active = sum(w for s, w in record["weights"].items() if s in ctx.performed)
    terms = TermMatcher(ctx.query)
    hits = []
    for f in fused:
        relevance = (
            1.0 if "exact" in f.via else round(fusion.relevance(f.score, active, record["k"]), 4)
        )
        hit = _hit(ctx.rows[f.chunk_id], terms, relevance, f.score, f.via)
        if f.chunk_id in ctx.moved:
            hit["superseded_by"] = ctx.successor_paths.get(ctx.moved[f.chunk_id], "")
        if f.chunk_id in ctx.rank_scores:
            hit["rank_score"] = round(ctx.rank_scores[f.chunk_id], 6)
        hits.append(hit)
    ctx.timings["total_ms"] = round((time.perf_counter() - ctx.started) * 1000, 2)
    return protocol.Answer(
        workspace=ctx.ws.name,
        root=str(ctx.ws.root),
        query=ctx.text,
        hits=hits,
        mode_used=mode_used(ctx.performed),
        **_semantic_report(ctx.semantic),
        rank=ctx.rank_record,
        stages=protocol.StagesRecord(
            requested=ctx.options.stages, performed=ctx.performed, skipped=ctx.skipped
        ),
        fusion=record,
        filter=ctx.flt.describe(),
        truncated=ctx.truncated,
        stale=sorted(ctx.stale),
        **_confidence(ctx, len(hits)),
        epoch=list(ctx.epochs),
        took_ms=ctx.timings["total_ms"],
        timings=ctx.timings,
    )


class _Confidence(TypedDict):
    missing: list[str]
    confidence: protocol.ConfidenceLevel
    cosine: float | None


def _confidence(ctx: QueryContext, hits: int) -> _Confidence:
    """What the answer can say about itself from absolute evidence (confidence.py)."""
    words = confidence.content_words(ctx.query)
    missing = confidence.missing_words(ctx.lexical, words)
    semantic = ctx.signals.get("semantic") if "semantic" in ctx.performed else None
    cosine = round(float(semantic[0]), 4) if semantic else None
    lexical_hits = next((len(found) for stage, found in ctx.ranked if stage == "lexical"), 0)
    return _Confidence(
        missing=missing,
        confidence=confidence.level(hits, len(words), len(missing), cosine, lexical_hits),
        cosine=cosine,
    )


def _hit(
    r: sqlite3.Row, terms: TermMatcher, relevance: float, score: float, via: list[str]
) -> protocol.Hit:
    snippet, highlights = make_snippet(r["text"], terms)
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


def _browse(ctx: QueryContext) -> protocol.Answer:
    """A query of filters only (spec §6): the matching files in path order, each shown by its
    first section; nothing is embedded or ranked."""
    store, ws, options, semantic, rank = ctx.store, ctx.ws, ctx.options, ctx.semantic, ctx.rank
    t0 = time.perf_counter()
    with store.snapshot() as conn:
        take, matched = ctx.flt.browse(conn, ws.id, options.limit + min(options.limit, STALE_SPARE))
        epochs = read_epochs(conn, ws.id)
        rows = store.chunk_rows(conn, queries.first_live_chunks(conn, take))
        if semantic.embedder is not None and semantic.model_fp is not None and epochs:
            semantic.coverage = semantic_coverage(conn, store, ws, semantic.model_fp, epochs)
    stale = stale_documents(ws, rows.values())
    order = sorted((r for r in rows.values() if r["path"] not in stale), key=lambda r: r["path"])
    terms = TermMatcher(ParsedQuery(ctx.text))
    hits = [_hit(r, terms, 0.0, 0.0, ["facet"]) for r in order[: options.limit]]
    if rank.ranker is not None:
        rank_record = protocol.RankRecord(state="skipped", model=rank.ranker.name, error=FACET_ONLY)
    else:
        rank_record = protocol.RankRecord(state="off", model="", error=rank.reason or NO_RANKER)
    done = time.perf_counter()  # one reading for both, so the part never exceeds the whole
    filter_ms = round((done - t0) * 1000, 2)
    total_ms = round((done - ctx.started) * 1000, 2)
    return protocol.Answer(
        workspace=ws.name,
        root=str(ws.root),
        query=ctx.text,
        hits=hits,
        mode_used="facet",
        **_semantic_report(semantic),
        rank=rank_record,
        stages=protocol.StagesRecord(
            requested=options.stages,
            performed=[],
            skipped={s: FACET_ONLY for s in options.stages},
        ),
        fusion=None,
        filter=ctx.flt.describe(),
        matched=matched,
        truncated=False,
        stale=sorted(stale),
        missing=[],
        confidence="high" if hits else "none",  # the filter is exact: what matches, matches
        cosine=None,
        epoch=list(epochs or (0, 0)),
        took_ms=total_ms,
        timings={"filter_ms": filter_ms, "total_ms": total_ms},
    )


def stale_documents(ws: Workspace, rows: Iterable[sqlite3.Row]) -> set[str]:
    """Paths whose file is gone or differs from what was indexed, so no hit points at a
    missing file or a span that moved. A stat per document; the hash only when the stat
    differs (a `touch` or a checkout that rewrote identical bytes is still fresh)."""
    stale: set[str] = set()
    seen: set[str] = set()
    for r in rows:
        path = r["path"]
        if path in seen:
            continue
        seen.add(path)
        if not _fresh(ws, path, r):
            stale.add(path)
    return stale


def _fresh(ws: Workspace, path: str, row: sqlite3.Row) -> bool:
    """The file at `path` has the indexed stat, or else the indexed bytes; a file gone, moved
    outside by a link, or unreadable is not fresh. The common case costs one `lstat` and reads
    nothing (a plain file with the indexed size and mtime); anything else, and every byte
    compared, goes through the confined open."""
    with contextlib.suppress(OSError):
        info = os.lstat(os.path.join(ws.root, *path.split("/")))
        if (
            stat.S_ISREG(info.st_mode)
            and info.st_size == row["size"]
            and info.st_mtime_ns == row["mtime_ns"]
        ):
            return True
    try:
        with open_inside(ws.root, path) as (fd, _):
            info = os.fstat(fd)
            if info.st_size != row["size"]:
                return False
            if info.st_mtime_ns == row["mtime_ns"]:
                return True
            digest = hashlib.sha256()
            while block := os.read(fd, 1 << 20):
                digest.update(block)
            return digest.hexdigest() == row["content_hash"]
    except (OSError, ValueError):
        return False

"""`search.query`: the registry's stages on one store snapshot (spec §7).

`run_search` is the loop: options (`search_options`) and the filter, each stage's `prepare`
(outside the snapshot), the snapshot stages in order, the rows of the hits to show, stale files
dropped, the stages that run after the snapshot, then the answer (`answer`, built as a
`protocol.Answer`). What a stage does lives in `stages/`; what the answer says about stages
comes from the registry.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any, cast

from autodoc import store as sql
from autodoc.bm25.analyzer import Lexical, analyze
from autodoc.models.rankers import NO_RANKER, RankPlan
from autodoc.parse.query_parser import parse_query
from autodoc.query import answer, facet_filter, intent
from autodoc.query.freshness import STALE_SPARE, stale_documents
from autodoc.query.search_options import check_query, parse_options
from autodoc.query.stages import (
    REGISTRY,
    QueryContext,
    SearchOptions,
    SearchRequest,
    SearchTrace,
    Skip,
    Stage,
)
from autodoc.store import Store, Workspace, read_epochs
from autodoc.vectors.nearest import SemanticPlan
from autodoc.wire import protocol
from autodoc.wire.errors import CancelToken, RpcError, invalid_params

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
    trace: SearchTrace | None = None,
) -> protocol.Answer:
    """Run the stages; `cancel` is checked between them, so superseded work stops early.

    One snapshot serves the whole search: the facet schema the query is read with, the filter,
    every snapshot stage and the rows shown, so a schema or a document that changes meanwhile is
    seen by all of them or by none. Only the stages that run after it (a ranker may take
    seconds) and the answer come later. A `trace` passed in is the one the search fills (with
    `capture`, the fuse stage's candidates too): the caller reads it afterwards."""
    if not isinstance(text, str):
        raise invalid_params("query must be a string", field="query")
    check_query(text)
    options = parse_options(opts)
    started = time.perf_counter()
    with store.snapshot() as conn:
        ctx = _context(
            conn, store, lexical, ws, text, options, semantic, rank, cancel, started, trace
        )
        if ctx.request.wordless and ctx.request.flt.active:
            return answer.browse_answer(ctx, conn)
        plan = _retrieve(ctx, conn)
    ctx.request.check()
    ctx.results.stale = stale_documents(ws, ctx.results.rows.values())
    ctx.results.fused = [
        f
        for f in ctx.results.fused
        if ctx.results.rows[f.chunk_id]["path"] not in ctx.results.stale
    ]
    for stage in REGISTRY:
        if stage.phase == "after":
            _run(ctx, stage, plan, None)
    return answer.build_answer(ctx)


def _retrieve(ctx: QueryContext, conn: sqlite3.Connection) -> list[Stage]:
    """The stages prepared (the query embedded), the filter applied, the snapshot stages run in
    order and the rows of the hits to show read: everything the snapshot is needed for."""
    ctx.request.check()  # superseded already: embed nothing
    plan = _plan(ctx)
    ctx.request.check()
    epochs = read_epochs(conn, ctx.request.ws.id)
    if epochs is None:
        raise invalid_params(
            f"unknown workspace {ctx.request.ws.name!r}", workspace=ctx.request.ws.name
        )
    ctx.results.epochs = epochs
    ctx.request.check()
    if ctx.request.flt.active:
        with ctx.trace.timed("filter_ms"):
            ctx.results.allowed = ctx.request.flt.select(conn, ctx.request.ws.id)
    for stage in REGISTRY:
        if stage.phase == "snapshot":
            _run(ctx, stage, plan, conn)
    ctx.request.check()
    _read_rows(ctx, conn, will_rank=any(s.phase == "after" for s in plan))
    return plan


def _context(
    conn: sqlite3.Connection,
    store: Store,
    lexical: Lexical,
    ws: Workspace,
    text: str,
    options: SearchOptions,
    semantic: SemanticPlan,
    rank: RankPlan | None,
    cancel: CancelToken | None,
    started: float,
    trace: SearchTrace | None,
) -> QueryContext:
    schema = sql.stored_schema(conn, ws.id)
    query = parse_query(text, schema.is_facet)
    flt = facet_filter.build_filter(
        schema,
        [(t.field, t.value, t.negated) for t in query.facets],
        options.facets,
        options.tags,
        options.paths,
    )
    request = SearchRequest(
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
    return QueryContext(request, trace=trace if trace is not None else SearchTrace())


def _plan(ctx: QueryContext) -> list[Stage]:
    """The stages this search runs: those requested (and every stage a client cannot switch
    off) that can run, each prepared. A requested stage that cannot run is recorded with its
    reason; when every requested retriever cannot, the search fails with the last one's error
    (a semantic-only search never silently answers lexically)."""
    requested = ctx.request.options.stages
    plan: list[Stage] = []
    failed: Skip | None = None
    for stage in REGISTRY:
        if stage.toggle and stage.name not in requested:
            continue
        skip = stage.unavailable(ctx) or stage.prepare(ctx)
        if skip is None:
            plan.append(stage)
            continue
        ctx.trace.skipped[stage.name] = skip.reason
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
        ctx.request.check()
        skip = stage.run(ctx, conn)
        if skip is None:
            ran = True
            if stage.toggle:
                ctx.trace.performed.append(cast(protocol.StageName, stage.name))
        else:
            ctx.trace.skipped[stage.name] = skip.reason
    stage.describe(ctx, conn, ran)


def _read_rows(ctx: QueryContext, conn: sqlite3.Connection, *, will_rank: bool) -> None:
    """The rows of the hits that may be shown: the limit, a few spares for hits whose file
    changed since it was indexed, and the ranker's whole window when it runs."""
    depth = ctx.request.options.limit + min(ctx.request.options.limit, STALE_SPARE)
    window = ctx.request.options.window or ctx.request.rank.window
    ctx.results.fused = ctx.results.fused[: max(depth, window) if will_rank else depth]
    chunk_ids = [f.chunk_id for f in ctx.results.fused] + [f.chunk_id for f in ctx.results.exact]
    ctx.results.rows = ctx.request.store.chunk_rows(conn, chunk_ids)
    ctx.results.successor_paths = sql.document_paths(conn, list(ctx.results.moved.values()))

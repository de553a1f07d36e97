"""Stage 3, rerank: a cross-encoder re-orders the fused window (spec §5). A ranker that fails or
times out leaves the fused order standing and says why. The rankers are `models/rankers.py`."""

from __future__ import annotations

import sqlite3
from typing import ClassVar

from autodoc.models.rankers import NO_RANKER, NOT_REQUESTED, rerank
from autodoc.query.stages.base import Phase, QueryContext, Skip, StageDefaults
from autodoc.wire import protocol


class RerankStage(StageDefaults):
    name: ClassVar[str] = "rerank"
    toggle: ClassVar[bool] = True
    retriever: ClassVar[bool] = False
    phase: ClassVar[Phase] = "after"  # on the rows read in the snapshot, stale ones dropped

    def unavailable(self, ctx: QueryContext) -> Skip | None:
        if ctx.request.rank.ranker is not None:
            return None
        return Skip(ctx.request.rank.reason or NO_RANKER)

    def run(self, ctx: QueryContext, conn: sqlite3.Connection | None) -> Skip | None:
        rows, fused = ctx.results.rows, ctx.results.fused
        window = ctx.request.options.window or ctx.request.rank.window
        with ctx.trace.timed("rank_ms"):
            texts = [f"{rows[f.chunk_id]['breadcrumb']}\n{rows[f.chunk_id]['text']}" for f in fused]
            scores, ctx.trace.rank_record = rerank(
                ctx.request.rank, ctx.request.query.text, texts, window
            )
            if scores is None:
                return Skip(ctx.trace.rank_record["error"])
            top = fused[: len(scores)]
            order = sorted(range(len(top)), key=lambda i: (-float(scores[i]), top[i].chunk_id))
            for i in order:
                top[i].via = [*top[i].via, "rank"]
                ctx.results.rank_scores[top[i].chunk_id] = float(scores[i])
            ctx.results.fused = [top[i] for i in order] + fused[len(top) :]
        return None

    def describe(self, ctx: QueryContext, conn: sqlite3.Connection | None, ran: bool) -> None:
        if ctx.trace.rank_record is not None:
            return  # it ran, or tried: the ranker's own record
        ranker = ctx.request.rank.ranker
        if ranker is not None:  # a ranker is there, but this search left it out
            ctx.trace.rank_record = protocol.RankRecord(
                state="skipped", model=ranker.name, error=NOT_REQUESTED
            )
        else:  # why nothing was re-ranked, whether or not rerank was asked for: pickers show it
            ctx.trace.rank_record = protocol.RankRecord(
                state="off", model="", error=ctx.request.rank.reason or NO_RANKER
            )

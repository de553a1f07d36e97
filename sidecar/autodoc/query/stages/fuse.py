"""Fusion (spec §4): the retrieval stages' rankings as one (a convex combination of their scaled
scores, confidence-weighted RRF or plain RRF; one stage alone: its own order), boosted by tags
and inbound links, capped per document, superseded documents below their successors. The
arithmetic is `query/fusion.py`."""

from __future__ import annotations

import functools
import json
import sqlite3
import time
from typing import ClassVar

from autodoc import store
from autodoc.bm25.analyzer import analyze
from autodoc.query import fusion
from autodoc.query.intent import LEXICAL_FIRST
from autodoc.query.stages.base import Phase, QueryContext, Skip, StageDefaults
from autodoc.wire import protocol


class FuseStage(StageDefaults):
    name: ClassVar[str] = "fuse"
    toggle: ClassVar[bool] = False  # always runs, on whatever the retrievers found
    retriever: ClassVar[bool] = False
    phase: ClassVar[Phase] = "snapshot"

    def run(self, ctx: QueryContext, conn: sqlite3.Connection | None) -> Skip | None:
        assert conn is not None
        stages = [stage for stage, _ in ctx.ranked]
        both = stages == ["lexical", "semantic"]
        # The query names the words the answer holds: the lexical order stands, and a hit only
        # meaning found comes below every hit the words found.
        lexical_first = both and ctx.intent in LEXICAL_FIRST and bool(ctx.ranked[0][1])
        method = ctx.options.fusion
        convex = both and method == "convex"
        if convex:
            share = 0.0 if lexical_first else fusion.CONVEX_SEMANTIC
            weights: tuple[float, ...] = (1 - share, share)
            k = 0
        elif lexical_first:
            weights = (2.0, 0.0)
            k = fusion.CONFIDENCE_K if method == "confidence" else fusion.RRF_K
        elif both and method == "confidence":
            weights = fusion.confidence_weights(
                ctx.signals.get("lexical", []), ctx.signals.get("semantic", [])
            )
            k = fusion.CONFIDENCE_K
        else:
            weights, k = tuple(1.0 for _ in stages), fusion.RRF_K
        ctx.fusion = protocol.FusionRecord(
            method=method if both else "rrf",
            k=k,
            weights={s: round(w, 4) for s, w in zip(stages, weights, strict=True)},
            intent=ctx.intent,
        )
        if convex:
            signals = [ctx.signals.get(s, []) for s in stages]
            floors = [fusion.CONVEX_FLOORS[s] for s in stages]
            fused = fusion.convex(ctx.ranked, signals, weights, floors)
        else:
            fused = fusion.rrf(ctx.ranked, k, weights)
        docs = sorted({f.document_id for f in fused})
        info = store.boost_facts(conn, docs)
        words = {t for item in ctx.query.items for t in analyze(item.text)}
        tagged = {d for d, (_, tags) in info.items() if has_query_tag(tags, words)}
        fused = fusion.apply_boosts(fused, tagged, {d: inbound for d, (inbound, _) in info.items()})
        if ctx.options.recency is not None:  # off: no score is touched, no order changes
            facts = store.recency_facts(conn, docs)
            fused = fusion.apply_recency(fused, facts, ctx.options.recency, time.time())
        fused = fusion.cap_per_document(fused)
        demote = ctx.options.demote_superseded
        if demote is None:
            demote = ctx.ws.options["demote_superseded"]
        if demote:
            pairs = store.successors(conn, docs)
            successor = {o: n for o, n in pairs if n in info}
            # a query that names a document (its number, a quoted phrase) gets that document
            ctx.moved = fusion.demote_superseded(fused, successor, ctx.intent not in LEXICAL_FIRST)
        ctx.fused = fused
        return None


def has_query_tag(tags_json: str | None, words: set[str]) -> bool:
    """A tag among the query's words, stemmed (#storage matches "stored"); `a/b` counts as b."""
    return any(all(t in words for t in stems) for stems in tag_stems(tags_json or "[]"))


@functools.lru_cache(maxsize=4096)
def tag_stems(tags_json: str) -> tuple[tuple[str, ...], ...]:
    """A document's tags (its stored JSON list), each as the words it analyzes to; those that
    analyze to nothing left out. Cached: the same documents' tags come back query after query."""
    stems = (tuple(analyze(tag.rsplit("/", 1)[-1])) for tag in json.loads(tags_json))
    return tuple(s for s in stems if s)

"""Fusion (spec §4): the retrieval stages' rankings as one, weighted by each stage's confidence
(or plain RRF), boosted by tags and inbound links, capped per document, superseded documents
moved below their successors. The arithmetic is `autodoc/fuse.py`."""

from __future__ import annotations

import json
import sqlite3
from typing import ClassVar

from .. import fuse, protocol, store
from ..intent import LEXICAL_FIRST
from ..lexical import analyze
from .base import Phase, QueryContext, Skip, StageDefaults


class FuseStage(StageDefaults):
    name: ClassVar[str] = "fuse"
    toggle: ClassVar[bool] = False  # always runs, on whatever the retrievers found
    retriever: ClassVar[bool] = False
    phase: ClassVar[Phase] = "snapshot"

    def run(self, ctx: QueryContext, conn: sqlite3.Connection | None) -> Skip | None:
        assert conn is not None
        stages = [stage for stage, _ in ctx.ranked]
        both = stages == ["lexical", "semantic"]
        if both and ctx.intent in LEXICAL_FIRST and ctx.ranked[0][1]:
            # The query names the words the answer holds: the lexical order stands, and a hit
            # only meaning found comes below every hit the words found.
            weights: tuple[float, ...] = (2.0, 0.0)
            k = fuse.CONFIDENCE_K if ctx.options.fusion == "confidence" else fuse.RRF_K
        elif both and ctx.options.fusion == "confidence":
            weights = fuse.confidence_weights(
                ctx.signals.get("lexical", []), ctx.signals.get("semantic", [])
            )
            k = fuse.CONFIDENCE_K
        else:
            weights, k = tuple(1.0 for _ in stages), fuse.RRF_K
        ctx.fusion = protocol.FusionRecord(
            method=ctx.options.fusion,
            k=k,
            weights={s: round(w, 4) for s, w in zip(stages, weights, strict=True)},
            intent=ctx.intent,
        )
        fused = fuse.rrf(ctx.ranked, k, weights)
        docs = sorted({f.document_id for f in fused})
        info = store.boost_facts(conn, docs)
        words = {t for item in ctx.query.items for t in analyze(item.text)}
        tagged = {d for d, (_, tags) in info.items() if has_query_tag(tags, words)}
        fused = fuse.apply_boosts(fused, tagged, {d: inbound for d, (inbound, _) in info.items()})
        fused = fuse.cap_per_document(fused)
        demote = ctx.options.demote_superseded
        if demote is None:
            demote = ctx.ws.options["demote_superseded"]
        if demote:
            pairs = store.successors(conn, docs)
            ctx.moved = fuse.demote_superseded(fused, {o: n for o, n in pairs if n in info})
        ctx.fused = fused
        return None


def has_query_tag(tags_json: str | None, words: set[str]) -> bool:
    """A tag among the query's words, stemmed (#storage matches "stored"); `a/b` counts as b."""
    for tag in json.loads(tags_json or "[]"):
        stems = analyze(tag.rsplit("/", 1)[-1])
        if stems and all(t in words for t in stems):
            return True
    return False

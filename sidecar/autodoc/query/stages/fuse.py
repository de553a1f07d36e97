"""Fusion (spec §4): the retrieval stages' rankings as one (a convex combination of their scaled
scores, confidence-weighted RRF or plain RRF; one stage alone: its own order), boosted by tags
and inbound links, capped per document, superseded documents below their successors. The
arithmetic is `query/fusion.py`."""

from __future__ import annotations

import functools
import json
import operator
import sqlite3
import time
from collections import Counter
from typing import ClassVar

import numpy as np

from autodoc import store
from autodoc.bm25.analyzer import analyze
from autodoc.query import confidence, fusion, ranking
from autodoc.query.intent import LEXICAL_FIRST
from autodoc.query.named_documents import named_documents
from autodoc.query.stages.base import CandidateTrace, Phase, QueryContext, Skip, StageDefaults
from autodoc.wire import protocol


class FuseStage(StageDefaults):
    name: ClassVar[str] = "fuse"
    toggle: ClassVar[bool] = False  # always runs, on whatever the retrievers found
    retriever: ClassVar[bool] = False
    phase: ClassVar[Phase] = "snapshot"

    def run(self, ctx: QueryContext, conn: sqlite3.Connection | None) -> Skip | None:
        assert conn is not None
        stages = [stage for stage, _ in ctx.results.ranked]
        fused = fusion.rrf(ctx.results.ranked)  # every candidate once, with its rank in each stage
        docs = sorted({f.document_id for f in fused})
        capture = ctx.trace.capture  # training reads the candidates' features from the trace
        learned = ctx.request.options.fusion == "learned" or capture
        model = ranking.active_model()  # the shipped one (a fold's while training): once a search
        lexical = "lexical" in stages  # meaning alone reads no term coverage or link counts
        info = store.boost_facts(conn, docs, outbound=learned and lexical)
        words = {
            t
            for item in (ctx.results.lexical_query or ctx.request.query).items
            for t in analyze(item.text)
        }
        tagged = {d for d, (_, tags, _) in info.items() if has_query_tag(tags, words)}
        inbound = {d: links for d, (links, _, _) in info.items()}
        if learned:
            outbound = {d: held for d, (_, _, held) in info.items() if held}
            terms = capture or model.for_stages(stages).reads_terms
            evidence = _evidence(ctx, fused, inbound, outbound, tagged, terms=terms)
            if capture or model.section is not None:  # where each sits in its record
                every = capture or model.for_stages(stages).reads_place
                evidence.structure = store.chunk_structure(conn, placed(fused, every=every))
            x = ranking.candidate_features(fused, evidence)
        named: set[int] = set()  # documents the query names by their name (a prefix's, a term's)
        if learned and "lexical" in stages:
            named = named_documents(conn, ctx.request.ws.id, ctx.request.query, ctx.request.intent)
        tier = promise_tiers(ctx, fused, stages, named) if learned else []  # worked out once
        if capture:  # training learns from them (bench/train_ranking.py)
            ctx.trace.candidates = CandidateTrace([f.chunk_id for f in fused], x, tier)
        if ctx.request.options.fusion == "learned":
            fused = self._learned(ctx, fused, x, stages, model, tier)
        else:
            fused = self._by_rule(ctx, fused, stages, inbound, tagged)
        if ctx.request.options.recency is not None:  # off: no score is touched, no order changes
            facts = store.recency_facts(conn, docs)
            fused = fusion.apply_recency(fused, facts, ctx.request.options.recency, time.time())
        if ctx.request.options.fusion == "learned":  # before the cap (a hit it leaves out takes no
            fused = self._floor(ctx, fused, model.floor, named)  # place) and before demotion
        fused = fusion.cap_per_document(fused)  # (which lowers scores: a demoted hit stays)
        demote = ctx.request.options.demote_superseded
        if demote is None:
            demote = ctx.request.ws.options["demote_superseded"]
        if demote:
            pairs = store.successors(conn, docs)
            successor = {o: n for o, n in pairs if n in info}
            # a query that names a document (its number, a quoted phrase) gets that document
            ctx.results.moved = fusion.demote_superseded(
                fused, successor, ctx.request.intent not in LEXICAL_FIRST
            )
        ctx.results.fused = fused
        return None

    def _floor(
        self, ctx: QueryContext, fused: list[fusion.Fused], floor: float, named: set[int]
    ) -> list[fusion.Fused]:
        """The hits the learned floor keeps: those that reach it, each stage's first documents'
        (`stage_leaders`) and the best hit of each document the query names."""
        spared = stage_leaders(ctx.results.ranked, SPARED_DOCUMENTS) | best_hits(fused, named)
        kept = [f for f in fused if f.score >= floor or f.chunk_id in spared]
        ctx.results.below_floor = len(fused) - len(kept)
        return kept

    def _learned(
        self,
        ctx: QueryContext,
        fused: list[fusion.Fused],
        x: np.ndarray,
        stages: list[str],
        model: ranking.RankingModel,
        tier: list[int],
    ) -> list[fusion.Fused]:
        """Each candidate's probability of answering (query/ranking.py) as its score, best
        first within the promises `ranking.tiers` keeps (`tier`, from `promise_tiers`): what a
        number or a code names and the best hit of each document the query names by its name
        first, and under a query that names its words, what the words found before what only
        meaning found."""
        for f, p in zip(fused, model.for_stages(stages).probability(x).tolist(), strict=True):
            f.score = p
        ctx.results.document_p = ranking.document_probabilities(
            model, [f.score for f in fused], [f.document_id for f in fused]
        )
        ctx.trace.fusion = protocol.FusionRecord(
            method="learned",
            k=0,
            weights={s: 1.0 for s in stages},
            intent=ctx.request.intent,
            model=model.version,
        )
        order = sorted(range(len(fused)), key=lambda i: (tier[i], *fused[i].tie_key))
        docs = [f.document_id for f in fused]
        if model.section is not None:  # a document's likeliest section takes its first place
            p = np.array([f.score for f in fused])
            order = ranking.within_documents(order, docs, tier, model.section.scores(x, p))
        self._answers(ctx, x, order, docs, len(stages) > 1, model)
        # A hit a promise lists first reads as relevant as the best it was put above: the
        # column never drops below it, and the answer's confidence is the best hit's.
        best = max((f.score for f in fused), default=0.0)
        best_doc = max(ctx.results.document_p.values(), default=0.0)
        for i in order if "lexical" in stages else ():  # meaning alone makes no promise
            if tier[i]:
                break
            fused[i].score = max(fused[i].score, best)
            d = fused[i].document_id
            ctx.results.document_p[d] = max(ctx.results.document_p.get(d, 0.0), best_doc)
        return [fused[i] for i in order]

    def _answers(
        self,
        ctx: QueryContext,
        x: np.ndarray,
        order: list[int],
        docs: list[int],
        hybrid: bool,
        model: ranking.RankingModel,
    ) -> None:
        """Whether the vault answers at all, read from the ranked list (`ranking.ANSWER_INPUTS`,
        on the trace for training) by the answer model: under hybrid search (what it was trained
        on) of a vault the size of those it was trained on, unless the query names what its top
        hit holds."""
        if not ctx.trace.capture and (model.answer is None or not hybrid):
            return  # nothing reads them
        inputs = ranking.answer_inputs(x, order, docs, ctx.results.document_p)
        ctx.trace.answer_inputs = inputs
        if model.answer is None or not hybrid or ranking.names_what_it_finds(inputs):
            return
        answered = model.answer.probability(inputs)
        # Only a veto asks the vault's size (a count request on Qdrant): above its threshold
        # the answer model changes nothing.
        veto = answered < model.answer.doubtful
        if not veto or ctx.request.lexical.num_docs() >= ranking.ANSWER_MODEL_MIN_CHUNKS:
            ctx.results.answer_p = answered

    def _by_rule(
        self,
        ctx: QueryContext,
        fused: list[fusion.Fused],
        stages: list[str],
        inbound: dict[int, int],
        tagged: set[int],
    ) -> list[fusion.Fused]:
        """The fixed fusions: convex, confidence-weighted RRF or the spec's plain RRF, then the
        tag and link boosts."""
        both = stages == ["lexical", "semantic"]
        # The query names the words the answer holds: the lexical order stands, and a hit only
        # meaning found comes below every hit the words found.
        lexical_first = (
            both and ctx.request.intent in LEXICAL_FIRST and bool(ctx.results.ranked[0][1])
        )
        method = ctx.request.options.fusion
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
                ctx.results.signals.get("lexical", []), ctx.results.signals.get("semantic", [])
            )
            k = fusion.CONFIDENCE_K
        else:
            weights, k = tuple(1.0 for _ in stages), fusion.RRF_K
        ctx.trace.fusion = protocol.FusionRecord(
            method=method if both else "rrf",
            k=k,
            weights={s: round(w, 4) for s, w in zip(stages, weights, strict=True)},
            intent=ctx.request.intent,
        )
        if convex:
            signals = [ctx.results.signals.get(s, []) for s in stages]
            floors = [fusion.CONVEX_FLOORS[s] for s in stages]
            fused = fusion.convex(ctx.results.ranked, signals, weights, floors)
        else:
            fused = fusion.rrf(ctx.results.ranked, k, weights)
        return fusion.apply_boosts(fused, tagged, inbound)


_tie_key = operator.attrgetter("tie_key")


def promise_tiers(
    ctx: QueryContext, fused: list[fusion.Fused], stages: list[str], named_docs: set[int]
) -> list[int]:
    """Each candidate's tier among the promises kept above the probability (`ranking.tiers`):
    what the names pass found and the best hit of each document the query names first; all 0
    without the lexical stage. The one place the tiers are worked out: the ranking and the
    training capture read them here."""
    if "lexical" not in stages:
        return [0] * len(fused)
    at = stages.index("lexical")
    named = {
        cid
        for (cid, _), kind in zip(
            ctx.results.ranked[at][1], ctx.results.lexical_passes, strict=True
        )
        if kind == ranking.NAMES_PASS
    } | best_hits(fused, named_docs)
    return ranking.tiers(
        named, [f.chunk_id for f in fused], [f.ranks[at] for f in fused],
        ctx.request.intent in LEXICAL_FIRST,
    )  # fmt: skip


# The learned floor leaves out the implausible, but never a retriever's own first few: each
# stage's best hit of each of its first SPARED_DOCUMENTS documents is listed whatever its
# probability (a record only the words found, third there, dropped out of the top 20).
SPARED_DOCUMENTS = 3


def stage_leaders(ranked: list[tuple[str, list[tuple[int, int]]]], documents: int) -> set[int]:
    """Each stage's best chunk of each of its first `documents` documents."""
    out: set[int] = set()
    for _, hits in ranked:
        seen: set[int] = set()
        for chunk_id, document_id in hits:
            if len(seen) == documents:
                break
            if document_id not in seen:
                seen.add(document_id)
                out.add(chunk_id)
    return out


def placed(fused: list[fusion.Fused], *, every: bool) -> list[int]:
    """The candidates whose place in their record is read: every one for a model that weighs
    it (or while training), else only those of a document with another candidate, the only
    ones the section model can reorder (a quarter to a half of a search's reads saved)."""
    if every:
        return [f.chunk_id for f in fused]
    seen = Counter(f.document_id for f in fused)
    return [f.chunk_id for f in fused if seen[f.document_id] > 1]


def best_hits(fused: list[fusion.Fused], documents: set[int]) -> set[int]:
    """The best-scored candidate (ties: `tie_key`) of each of `documents` that has one."""
    if not documents:
        return set()
    best: dict[int, fusion.Fused] = {}
    for f in fused:
        if f.document_id in documents:
            held = best.get(f.document_id)
            if held is None or f.tie_key < held.tie_key:
                best[f.document_id] = f
    return {f.chunk_id for f in best.values()}


def _evidence(
    ctx: QueryContext,
    fused: list[fusion.Fused],
    inbound: dict[int, int],
    outbound: dict[int, int],
    tagged: set[int],
    *,
    terms: bool,
) -> ranking.Evidence:
    """`terms`: look up the query's terms' weights and which candidates hold each (a model
    that weighs none of them leaves the columns at 0 and saves an index search)."""
    query = ctx.results.lexical_query or ctx.request.query
    if terms and any(stage == "lexical" for stage, _ in ctx.results.ranked):
        weights, held = ctx.request.lexical.held_terms(query, [f.chunk_id for f in fused])
    else:  # meaning alone is ranked by the cosine's features: no term coverage to look up
        weights, held = np.zeros(0), np.zeros((len(fused), 0), dtype=bool)
    words, absent = ctx.request.content_words, ctx.absent_words()
    return ranking.Evidence(
        ranked=ctx.results.ranked,
        signals=ctx.results.signals,
        lexical_passes=ctx.results.lexical_passes,
        term_weights=weights,
        held=held,
        intent=ctx.request.intent,
        missing_share=len(confidence.rare_words(absent)) / max(len(words), 1),
        absent_share=len(absent) / max(len(words), 1),
        inbound=inbound,
        outbound=outbound,
        tagged=tagged,
    )


def has_query_tag(tags_json: str | None, words: set[str]) -> bool:
    """A tag among the query's words, stemmed (#storage matches "stored"); `a/b` counts as b."""
    return any(all(t in words for t in stems) for stems in tag_stems(tags_json or "[]"))


@functools.lru_cache(maxsize=4096)
def tag_stems(tags_json: str) -> tuple[tuple[str, ...], ...]:
    """A document's tags (its stored JSON list), each as the words it analyzes to; those that
    analyze to nothing left out. Cached: the same documents' tags come back query after query."""
    stems = (tuple(analyze(tag.rsplit("/", 1)[-1])) for tag in json.loads(tags_json))
    return tuple(s for s in stems if s)

"""Fusion (spec §4): the stages' rankings as one, and the per-document cap.

Three modes. `convex` (the default): each stage's scores scaled between its theoretical floor
and the query's best, then mixed with fixed shares (Bruch et al., TOIS 2023; issue 21): on every
visible benchmark split and golden set it is at or above plain RRF. `rrf`: the spec's plain
reciprocal rank fusion (k = 60, every stage one vote). `confidence`: RRF whose per-query stage
weights say how sure each retriever is (issue 10); best on CoSQA, behind RRF elsewhere.
"""

from __future__ import annotations

import datetime
import itertools
import json
import math
import operator
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

RRF_K = 60
PER_DOCUMENT = 3
# Confidence fusion, chosen on all five visible benchmark splits at once (bench/fusion_lab.py,
# doc/benchmarks/retrieval.md): a flatter k, the semantic vote growing with the top cosine, the
# lexical vote with how far the best BM25 score stands above the tenth.
CONFIDENCE_K = 20
SEMANTIC_SLOPE, SEMANTIC_CENTRE = 8.0, 0.5
LEXICAL_SLOPE, LEXICAL_CENTRE = 12.0, 0.45
# Convex fusion (the default), chosen on all five visible benchmark splits and the three golden
# sets at once (bench/fusion_sweep.py, doc/benchmarks/retrieval.md): the semantic stage's share,
# and each stage's floor (BM25 starts at 0; with this model a cosine near 0.1 is unrelated text).
# The only setting of the grid at or above plain RRF on all eight.
CONVEX_SEMANTIC = 0.5
CONVEX_FLOORS = {"lexical": 0.0, "semantic": 0.1}


@dataclass
class Fused:
    chunk_id: int
    document_id: int
    score: float = 0.0
    via: list[str] = field(default_factory=list)
    ranks: tuple[int, ...] = ()  # its rank in each stage, in stage order (0: not found)

    @property
    def tie_key(self) -> tuple:
        """Equal scores: the better rank in the first stage (lexical), then the next; the
        chunk id only last. Ids differ between two stores of the same files, ranks do not, so
        a rebuilt index answers in the same order (found by
        tests/integration/test_reliability.py)."""
        return (-self.score, *[r or _UNRANKED for r in self.ranks], self.chunk_id)


_UNRANKED = 1 << 30  # a stage that did not find the hit: after every rank it gave


def _fused(
    ranked: Sequence[tuple[str, Sequence[tuple[int, int]]]],
    gains: Sequence[Sequence[float]],
) -> list[Fused]:
    """One Fused a chunk, its score the sum of `gains[n][i]` (the n-th stage's i-th item's
    share), best first by `Fused.tie_key`. Ranks are filled in place, once per hit."""
    fused: dict[int, Fused] = {}
    ranks: dict[int, list[int]] = {}
    stages = len(ranked)
    for n, ((stage, items), gain) in enumerate(zip(ranked, gains, strict=True)):
        for rank, ((chunk_id, document_id), g) in enumerate(zip(items, gain, strict=True), 1):
            f = fused.get(chunk_id)
            if f is None:
                f = fused[chunk_id] = Fused(chunk_id, document_id)
                ranks[chunk_id] = [0] * stages
            f.score += g
            f.via.append(stage)
            ranks[chunk_id][n] = rank
    for chunk_id, f in fused.items():
        f.ranks = tuple(ranks[chunk_id])
    return sorted(fused.values(), key=_tie_key)


_tie_key = operator.attrgetter("tie_key")


def rrf(
    ranked: Sequence[tuple[str, Sequence[tuple[int, int]]]],
    k: int = RRF_K,
    weights: Sequence[float] | None = None,
) -> list[Fused]:
    """`ranked`: (stage, [(chunk_id, document_id), ...] best first); `weights`: one per stage
    (default 1). Ties: `Fused.tie_key`."""
    weights = list(weights) if weights is not None else [1.0] * len(ranked)
    gains = [
        [weights[n] / (k + rank) for rank in range(1, len(items) + 1)]
        for n, (_, items) in enumerate(ranked)
    ]
    return _fused(ranked, gains)


def convex(
    ranked: Sequence[tuple[str, Sequence[tuple[int, int]]]],
    scores: Sequence[Sequence[float]],
    weights: Sequence[float],
    floors: Sequence[float],
) -> list[Fused]:
    """A convex combination of each stage's scores, each scaled to 0..1 between its theoretical
    floor (`floors`: 0 for BM25, a cosine's floor) and the query's best score (Bruch et al.'s
    TM2C2, "An Analysis of Fusion Functions for Hybrid Retrieval", TOIS 2023). A hit one stage
    did not find scores its floor there. `scores[n]` is aligned with `ranked[n]`'s items.

    A stage's own order stands: a score is capped at the one above it. The lexical stage lists
    the documents a query's number names, then the chunks holding every word, then those
    holding some, each pass by BM25; a later pass's raw score may be higher, never its place.
    Ties: `Fused.tie_key`."""
    gains = []
    for n in range(len(ranked)):
        capped = list(itertools.accumulate(scores[n], min))
        floor = floors[n]
        span = (capped[0] if capped else floor) - floor
        w = weights[n]
        gains.append([w * max(0.0, x - floor) / span if span > 0 else 0.0 for x in capped])
    return _fused(ranked, gains)


def relevance(score: float, active_weight: float, k: int = RRF_K) -> float:
    """0..1, where 1.0 is first place in every stage that ran; `active_weight`: the sum of the
    weights of the stages that ran (their count under plain RRF)."""
    if active_weight <= 0:
        return 0.0
    return min(1.0, score / (active_weight / (k + 1)))


def confidence_weights(lexical: Sequence[float], semantic: Sequence[float]) -> tuple[float, float]:
    """(lexical, semantic) votes for one query, from each list's own scores, summing to 2 so the
    fused scale stays plain RRF's. `lexical`: BM25 scores best first; `semantic`: cosines."""
    top = lexical[0] if lexical else 0.0
    tail = lexical[9] if len(lexical) >= 10 else 0.0  # fewer than ten matches: a sharp list
    gap = (top - tail) / top if top > 0 else 0.0
    cosine = semantic[0] if semantic else 0.0
    w_lex = math.exp(LEXICAL_SLOPE * (gap - LEXICAL_CENTRE))
    w_sem = math.exp(SEMANTIC_SLOPE * (cosine - SEMANTIC_CENTRE))
    total = w_lex + w_sem
    return 2 * w_lex / total, 2 * w_sem / total


def cap_per_document(hits: list[Fused], per_document: int = PER_DOCUMENT) -> list[Fused]:
    seen: dict[int, int] = {}
    out = []
    for h in hits:
        n = seen.get(h.document_id, 0)
        if n < per_document:
            out.append(h)
            seen[h.document_id] = n + 1
    return out


TAG_BOOST = 1.2
LINK_BOOST = 0.1
LINK_SATURATION = 5.0  # log2(1 + 31 inbound links): past that, authority stops growing


def link_factor(inbound: int) -> float:
    """1 + 0.1 × min(1, log2(1 + inbound) / 5): at most ×1.1, reached at 31 inbound links.

    Logarithmic so a hub page does not bury a precise answer; bounded so authority only breaks
    near-ties between stages.
    """
    if inbound <= 0:
        return 1.0
    return 1.0 + LINK_BOOST * min(1.0, math.log2(1 + inbound) / LINK_SATURATION)


def apply_boosts(hits: list[Fused], tagged: set[int], inbound: dict[int, int]) -> list[Fused]:
    """Tag ×1.2 for documents in `tagged` (a tag among the query's words); links; re-sort."""
    for h in hits:
        if h.document_id in tagged:
            h.score *= TAG_BOOST
        h.score *= link_factor(inbound.get(h.document_id, 0))
    return sorted(hits, key=_tie_key)


RECENCY_FLOOR = 0.5  # with a recency boost, a very old document keeps half its score
MAX_HALF_LIFE_DAYS = 36_500


def recency_weight(age_days: float, half_life_days: float) -> float:
    """1.0 for a document dated now, halving its distance to RECENCY_FLOOR every half-life."""
    decay = 0.5 ** (max(age_days, 0.0) / half_life_days)
    return RECENCY_FLOOR + (1 - RECENCY_FLOOR) * decay


def document_age_days(mtime_ns: int, meta_json: str | None, now: float) -> float:
    """A document's age: its frontmatter `date` (YYYY-MM-DD…) when it has one, else its file's
    modification time (a fresh clone gives every file today's)."""
    meta = json.loads(meta_json or "{}")
    raw = next((v for k, v in meta.items() if str(k).lower() == "date"), None)
    if isinstance(raw, str) and (m := re.match(r"^(\d{4})-(\d{2})-(\d{2})", raw)):
        try:
            stamp = datetime.datetime(int(m[1]), int(m[2]), int(m[3])).timestamp()
            return (now - stamp) / 86_400
        except ValueError:
            pass
    return (now - mtime_ns / 1e9) / 86_400


def apply_recency(
    hits: list[Fused], facts: dict[int, tuple[int, str]], half_life_days: float, now: float
) -> list[Fused]:
    """Each hit's score × `recency_weight` of its document's age; re-sort."""
    weights = {
        d: recency_weight(document_age_days(mtime, meta, now), half_life_days)
        for d, (mtime, meta) in facts.items()
    }
    for h in hits:
        h.score *= weights.get(h.document_id, RECENCY_FLOOR)
    return sorted(hits, key=_tie_key)


# A superseded document's hits score at most this share of its successor's lowest listed hit:
# below it, never tied with it, in the score and in the relevance shown.
DEMOTED_SHARE = 0.9


def demote_superseded(
    hits: list[Fused], successor: dict[int, int], move: bool = True
) -> dict[int, int]:
    """Put an older document's hits that rank above its successor's last hit directly below
    that hit, and score each of its hits below the successor's lowest (spec §4: the superseded
    document's hits below the successor's hits): a query in the old decision's words gets the
    decision in force first, every hit of it, then the one it replaced.

    Demotion only moves the older document's hits down: no hit rises above one that outranked
    it (the hits they pass each move up one place, as when a row is deleted), and the
    successor is never lifted. A chain (A superseded by B, B by C) is settled from its newest
    end: C's hits, then B's, then A's.

    `successor`: {old document id: new document id}; only pairs that both appear are moved,
    and none when not `move` (a query that names a document: its number, its words quoted).
    Returns {chunk_id: successor document id} for the older documents' hits. The list and
    the scores are changed in place.
    """
    present = {h.document_id for h in hits}
    pairs = {o: n for o, n in successor.items() if o != n and o in present and n in present}
    moved = {h.chunk_id: pairs[h.document_id] for h in hits if h.document_id in pairs}
    if move:
        for new in _newest_first(pairs, hits):
            _below_last(hits, {o for o, n in pairs.items() if n == new}, new)
    return moved


def _newest_first(pairs: dict[int, int], hits: list[Fused]) -> list[int]:
    """The successors, each after its own successor (a chain is settled from its newest end),
    then in the order they are listed. A cycle of supersessions is cut where it closes."""

    def depth(doc: int) -> int:
        seen = {doc}
        while doc in pairs and pairs[doc] not in seen:
            doc = pairs[doc]
            seen.add(doc)
        return len(seen) - 1

    first: dict[int, int] = {}
    for i, h in enumerate(hits):
        first.setdefault(h.document_id, i)
    return sorted(set(pairs.values()), key=lambda d: (depth(d), first[d]))


def _below_last(hits: list[Fused], olds: set[int], new: int) -> None:
    """The hits of `olds` above `new`'s last hit go directly below it, in their order; the
    hits of `olds` are scored down alike until the best is DEMOTED_SHARE of `new`'s lowest."""
    last = max(i for i, h in enumerate(hits) if h.document_id == new)
    above = [h for h in hits[:last] if h.document_id in olds]
    if above:
        lowered = {id(h) for h in above}
        rest = [h for h in hits if id(h) not in lowered]
        at = rest.index(hits[last]) + 1
        hits[:] = rest[:at] + above + rest[at:]
    ceiling = DEMOTED_SHARE * min(h.score for h in hits if h.document_id == new)
    top = max(h.score for h in hits if h.document_id in olds)
    if top > ceiling:  # scaled, not clipped: the older hits keep their own order and gaps
        share = ceiling / top
        for h in hits:
            if h.document_id in olds:
                h.score *= share


def below_successors(
    shown: Sequence[float], hits: Sequence[Fused], moved: dict[int, int], places: int = 4
) -> list[float]:
    """The relevance column (non-increasing, shown to `places` decimals) with each superseded
    hit listed below every hit of its successor at least one unit of the last place below the
    successor's lowest, so the two never show the same relevance (a cap at 1.0 or a row above
    would tie them); the rows after it are capped by it. Not below 0."""
    last: dict[int, int] = {}
    for i, h in enumerate(hits):
        last[h.document_id] = i
    unit = 10.0**-places
    out: list[float] = []
    ceiling = math.inf
    for i, (value, h) in enumerate(zip(shown, hits, strict=True)):
        new = moved.get(h.chunk_id)
        if new is not None and last.get(new, i) < i:
            value = min(value, max(0.0, round(out[last[new]], places) - unit))
        ceiling = min(ceiling, value)
        out.append(ceiling)
    return out

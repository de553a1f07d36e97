"""Fusion (spec §4): reciprocal rank fusion over the stages that ran, and the per-document cap.

Ranks, not scores, are fused: BM25 and cosine live on scales that do not compare. Two modes:
`rrf`, the spec's plain RRF (k = 60, every stage one vote), and `confidence` (the default),
RRF whose per-query stage weights say how sure each retriever is (issue 10).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

RRF_K = 60
PER_DOCUMENT = 3
FUSIONS = ("confidence", "rrf")
DEFAULT_FUSION = "confidence"
# Confidence fusion, chosen on all five visible benchmark splits at once (bench/fusion_lab.py,
# doc/benchmarks/retrieval.md): a flatter k, the semantic vote growing with the top cosine, the
# lexical vote with how far the best BM25 score stands above the tenth.
CONFIDENCE_K = 20
SEMANTIC_SLOPE, SEMANTIC_CENTRE = 8.0, 0.5
LEXICAL_SLOPE, LEXICAL_CENTRE = 12.0, 0.45
RETRIEVER_TOP = 50  # candidates each stage hands to fusion
MAX_READ = 1000  # how deep a stage reads when invisible or filtered chunks starve it


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
        a rebuilt index answers in the same order (found by tests/test_reliability.py)."""
        return (-self.score, *(r or 1 << 30 for r in self.ranks), self.chunk_id)


def rrf(
    ranked: Sequence[tuple[str, Sequence[tuple[int, int]]]],
    k: int = RRF_K,
    weights: Sequence[float] | None = None,
) -> list[Fused]:
    """`ranked`: (stage, [(chunk_id, document_id), ...] best first); `weights`: one per stage
    (default 1). Ties: `Fused.tie_key`."""
    fused: dict[int, Fused] = {}
    weights = list(weights) if weights is not None else [1.0] * len(ranked)
    for n, (stage, items) in enumerate(ranked):
        for rank, (chunk_id, document_id) in enumerate(items, 1):
            f = fused.get(chunk_id)
            if f is None:
                f = fused[chunk_id] = Fused(chunk_id, document_id, ranks=(0,) * len(ranked))
            f.score += weights[n] / (k + rank)
            f.via.append(stage)
            f.ranks = (*f.ranks[:n], rank, *f.ranks[n + 1 :])
    return sorted(fused.values(), key=lambda f: f.tie_key)


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
    return sorted(hits, key=lambda f: f.tie_key)


def demote_superseded(hits: list[Fused], successor: dict[int, int]) -> dict[int, int]:
    """Move an older document's hits directly below its successor's when both appear.

    `successor`: {old document id: new document id}. Returns {chunk_id: successor document id}
    for the hits that were moved. The list is changed in place.
    """
    moved: dict[int, int] = {}
    for old, new in successor.items():
        old_hits = [h for h in hits if h.document_id == old]
        new_at = [i for i, h in enumerate(hits) if h.document_id == new]
        if not old_hits or not new_at:
            continue
        first_old = next(i for i, h in enumerate(hits) if h.document_id == old)
        if first_old > new_at[-1]:
            moved.update((h.chunk_id, new) for h in old_hits)  # already below: just annotate
            continue
        rest = [h for h in hits if h.document_id != old]
        last_new = max(i for i, h in enumerate(rest) if h.document_id == new)
        hits[:] = rest[: last_new + 1] + old_hits + rest[last_new + 1 :]
        moved.update((h.chunk_id, new) for h in old_hits)
    return moved

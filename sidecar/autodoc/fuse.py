"""Fusion (spec §4): reciprocal rank fusion over the stages that ran, and the per-document cap.

Ranks, not scores, are fused: BM25 and cosine live on scales that do not compare.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

RRF_K = 60
PER_DOCUMENT = 3


@dataclass
class Fused:
    chunk_id: int
    document_id: int
    score: float = 0.0
    via: list[str] = field(default_factory=list)
    ranks: dict[str, int] = field(default_factory=dict)


def rrf(ranked: Sequence[tuple[str, Sequence[tuple[int, int]]]], k: int = RRF_K) -> list[Fused]:
    """`ranked`: (stage, [(chunk_id, document_id), ...] best first). Ties: lower chunk id first."""
    fused: dict[int, Fused] = {}
    for stage, items in ranked:
        for rank, (chunk_id, document_id) in enumerate(items, 1):
            f = fused.get(chunk_id)
            if f is None:
                f = fused[chunk_id] = Fused(chunk_id, document_id)
            f.score += 1.0 / (k + rank)
            f.via.append(stage)
            f.ranks[stage] = rank
    return sorted(fused.values(), key=lambda f: (-f.score, f.chunk_id))


def relevance(score: float, active_stages: int, k: int = RRF_K) -> float:
    """0..1, where 1.0 is first place in every stage that ran."""
    if active_stages <= 0:
        return 0.0
    return min(1.0, score / (active_stages / (k + 1)))


def cap_per_document(hits: list[Fused], per_document: int = PER_DOCUMENT) -> list[Fused]:
    seen: dict[int, int] = {}
    out = []
    for h in hits:
        n = seen.get(h.document_id, 0)
        if n < per_document:
            out.append(h)
            seen[h.document_id] = n + 1
    return out

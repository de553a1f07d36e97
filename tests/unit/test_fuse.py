"""Fusion's arithmetic, against hand-computed values: scores, ranks, relevance, the confidence
votes, boosts and superseded demotion (the survivors of mutation testing, doc/testing.md)."""

from __future__ import annotations

import math

import pytest

from autodoc.query import fusion
from autodoc.query.fusion import Fused


def test_rrf_scores_ranks_and_stages_of_every_chunk():
    ranked = [
        ("lexical", [(10, 1), (11, 2), (12, 3)]),
        ("semantic", [(12, 3), (13, 4), (10, 1)]),
    ]
    fused = {f.chunk_id: f for f in fusion.rrf(ranked, k=20, weights=(1.5, 0.5))}
    assert fused[10].score == pytest.approx(1.5 / 21 + 0.5 / 23)
    assert fused[11].score == pytest.approx(1.5 / 22)
    assert fused[12].score == pytest.approx(1.5 / 23 + 0.5 / 21)
    assert fused[13].score == pytest.approx(0.5 / 22)
    assert {c: f.ranks for c, f in fused.items()} == {
        10: (1, 3), 11: (2, 0), 12: (3, 1), 13: (0, 2)
    }  # fmt: skip
    assert fused[12].via == ["lexical", "semantic"] and fused[13].via == ["semantic"]
    plain = fusion.rrf(ranked)  # k 60, one vote each
    assert [f.chunk_id for f in plain] == [10, 12, 11, 13]
    assert plain[0].score == pytest.approx(1 / 61 + 1 / 63)


def test_equal_scores_are_ordered_by_the_first_stages_rank():
    ranked = [("lexical", [(1, 1), (2, 2)]), ("semantic", [(2, 2), (1, 1)])]
    fused = fusion.rrf(ranked)
    assert fused[0].score == fused[1].score
    assert [f.chunk_id for f in fused] == [1, 2]  # lexical rank 1 before lexical rank 2


def test_relevance_is_the_score_over_the_best_possible():
    assert fusion.relevance(2 / 61, 2.0) == 1.0
    assert fusion.relevance(1 / 61, 2.0) == pytest.approx(0.5)
    assert fusion.relevance(1 / 30, 1.0, k=20) == pytest.approx(21 / 30)
    assert fusion.relevance(5.0, 1.0) == 1.0  # boosts never push past 1
    assert fusion.relevance(0.01, 0.0) == 0.0  # no stage ran
    assert fusion.relevance(0.01, -1.0) == 0.0


def votes(gap: float, cosine: float) -> tuple[float, float]:
    """The documented formula: exp(12 (gap - 0.45)) and exp(8 (cosine - 0.5)), scaled to 2."""
    w_lex, w_sem = math.exp(12 * (gap - 0.45)), math.exp(8 * (cosine - 0.5))
    return 2 * w_lex / (w_lex + w_sem), 2 * w_sem / (w_lex + w_sem)


@pytest.mark.parametrize(
    ("lexical", "semantic", "gap", "cosine"),
    [
        ([12.0, 3.0, 2.0], [0.35], 1.0, 0.35),  # fewer than ten: the tail is 0
        ([10.0, 9.8, 9.7, 9.6, 9.5, 9.4, 9.3, 9.2, 9.1, 9.0], [0.75], 0.1, 0.75),
        ([0.8, 0.7, 0.6, 0.5, 0.4, 0.4, 0.4, 0.4, 0.4, 0.2], [0.6], 0.75, 0.6),  # BM25 below 1
        ([], [0.7], 0.0, 0.7),  # no lexical match: no lexical confidence
        ([5.0], [], 1.0, 0.0),  # no vector: no semantic confidence
        ([], [], 0.0, 0.0),
    ],
)
def test_confidence_votes_follow_the_formula(lexical, semantic, gap, cosine):
    got = fusion.confidence_weights(lexical, semantic)
    assert got == pytest.approx(votes(gap, cosine))
    assert sum(got) == pytest.approx(2.0)


def test_convex_scales_each_stage_between_its_floor_and_best_then_mixes():
    ranked = [("lexical", [(1, 10), (2, 20), (3, 30)]), ("semantic", [(3, 30), (4, 40)])]
    scores = [[8.0, 4.0, 2.0], [0.9, 0.5]]
    fused = fusion.convex(ranked, scores, weights=[0.4, 0.6], floors=[0.0, 0.1])
    got = {f.chunk_id: f.score for f in fused}
    assert got[1] == pytest.approx(0.4)  # best lexical, not found semantically
    assert got[2] == pytest.approx(0.4 * 4 / 8)
    assert got[3] == pytest.approx(0.4 * 2 / 8 + 0.6)  # best semantic
    assert got[4] == pytest.approx(0.6 * (0.5 - 0.1) / (0.9 - 0.1))
    assert [f.chunk_id for f in fused] == [3, 1, 4, 2]
    assert {f.chunk_id: f.ranks for f in fused} == {1: (1, 0), 2: (2, 0), 3: (3, 1), 4: (0, 2)}
    assert next(f for f in fused if f.chunk_id == 3).via == ["lexical", "semantic"]


def test_convex_scores_below_the_floor_count_zero_and_a_flat_stage_adds_nothing():
    ranked = [("lexical", [(1, 1)]), ("semantic", [(2, 2), (3, 3)])]
    fused = fusion.convex(ranked, [[0.0], [0.05, -0.2]], weights=[0.5, 0.5], floors=[0.0, 0.1])
    assert {f.chunk_id: f.score for f in fused} == {1: 0.0, 2: 0.0, 3: 0.0}
    assert [f.chunk_id for f in fused] == [1, 2, 3]  # ties: the lexical rank first


def test_convex_keeps_a_stages_own_order_when_a_later_pass_scores_higher():
    # the number pass's document, then an any-word hit whose raw BM25 is higher
    ranked = [("lexical", [(1, 1), (2, 2), (3, 3)]), ("semantic", [])]
    fused = fusion.convex(ranked, [[3.0, 9.0, 1.5], []], weights=[1.0, 0.0], floors=[0.0, 0.2])
    assert [f.chunk_id for f in fused] == [1, 2, 3]
    assert [f.score for f in fused] == pytest.approx([1.0, 1.0, 0.5])


def test_link_factor_values():
    assert fusion.link_factor(0) == 1.0
    assert fusion.link_factor(-3) == 1.0
    assert fusion.link_factor(1) == pytest.approx(1.02)  # 1 + 0.1 × log2(2) / 5
    assert fusion.link_factor(3) == pytest.approx(1.04)
    assert fusion.link_factor(31) == pytest.approx(1.1)
    assert fusion.link_factor(10_000) == pytest.approx(1.1)


def test_boosts_multiply_the_score_and_reorder():
    hits = [Fused(1, 1, 0.030), Fused(2, 2, 0.029), Fused(3, 3, 0.028)]
    out = fusion.apply_boosts(hits, tagged={3}, inbound={2: 3, 9: 100})
    assert {h.chunk_id: h.score for h in out} == pytest.approx(
        {1: 0.030, 2: 0.029 * 1.04, 3: 0.028 * 1.2}
    )
    assert [h.chunk_id for h in out] == [3, 2, 1]


def scored(docs: list[int], scores: list[float]) -> list[Fused]:
    """Hits numbered from 0, of these documents, with these scores."""
    return [Fused(i, d, s) for i, (d, s) in enumerate(zip(docs, scores, strict=True))]


def doc_order(hits: list[Fused]) -> list[int]:
    return [h.document_id for h in hits]


def test_an_older_document_above_its_successor_goes_right_below_the_successors_last_hit():
    # old = 1, new = 2; others 3..5
    hits = [Fused(i, d) for i, d in enumerate([3, 1, 4, 2, 5, 1])]
    moved = fusion.demote_superseded(hits, {1: 2})
    assert doc_order(hits) == [3, 4, 2, 1, 5, 1]
    assert [h.chunk_id for h in hits] == [0, 2, 3, 1, 4, 5]  # each document's own order kept
    assert moved == {1: 2, 5: 2}


def test_an_older_hit_between_its_successors_hits_goes_below_the_last_of_them():
    """Issue 55: the successor at rows 1, 5 and 6, the older record at 2-4 (below the
    successor's best hit, so left there): every hit of the older record goes below all of the
    successor's, and scores below the lowest of them."""
    scores = [0.84, 0.60, 0.50, 0.46, 0.02, 0.019, 0.01]
    hits = scored([2, 1, 1, 1, 2, 2, 3], scores)
    moved = fusion.demote_superseded(hits, {1: 2})
    assert doc_order(hits) == [2, 2, 2, 1, 1, 1, 3]
    assert [h.chunk_id for h in hits] == [0, 4, 5, 1, 2, 3, 6]
    assert moved == {1: 2, 2: 2, 3: 2}
    # scaled alike until the best is 0.9 of the successor's lowest: their order and gaps kept
    share = 0.9 * 0.019 / 0.60
    assert [h.score for h in hits[3:6]] == pytest.approx([0.60 * share, 0.50 * share, 0.46 * share])
    assert hits[6].score == 0.01  # only the older record's scores change


def test_an_older_hit_already_below_its_successors_last_one_stays_and_scores_below_it():
    hits = scored([2, 3, 2, 1], [0.9, 0.5, 0.3, 0.4])
    fusion.demote_superseded(hits, {1: 2})
    assert doc_order(hits) == [2, 3, 2, 1]
    assert hits[3].score == pytest.approx(0.27)  # a tier had put it below at a higher score
    hits = scored([2, 1], [0.9, 0.1])
    fusion.demote_superseded(hits, {1: 2})
    assert hits[1].score == 0.1  # already below: never raised


def test_a_chain_is_settled_from_its_newest_end():
    """A superseded by B, B by C: C's hits first, then B's, then A's; each only moves down."""
    a, b, c = 1, 2, 3
    hits = [Fused(i, d, 1.0 - i / 10) for i, d in enumerate([a, b, c, 9, b, c, a])]
    moved = fusion.demote_superseded(hits, {a: b, b: c})
    assert doc_order(hits) == [c, 9, c, b, b, a, a]
    assert moved == {0: b, 6: b, 1: c, 4: c}
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    cycle = [Fused(i, d, 1.0) for i, d in enumerate([a, b, a, b])]
    fusion.demote_superseded(cycle, {a: b, b: a})  # a cycle ends: each moved at most once
    assert sorted(h.chunk_id for h in cycle) == [0, 1, 2, 3]


def doc_place(hits: list[Fused], d: int, pick) -> int:
    return pick(i for i, h in enumerate(hits) if h.document_id == d)


def test_demotion_never_lifts_a_hit_above_one_that_outranked_it():
    """Issue 41: the superseded record went *up*, above a note that outranked it, when its
    successor's hits were gathered together. Every hit of the older document only goes down,
    below all of its successor's (issue 55), and the successor never moves."""
    import random

    rng = random.Random(41)
    for _ in range(500):
        docs = [rng.randrange(1, 6) for _ in range(rng.randrange(2, 12))]
        hits = [Fused(i, d, 1.0 - i / 20) for i, d in enumerate(docs)]
        before = {h.chunk_id: i for i, h in enumerate(hits)}
        pairs = {1: 2, 3: 4} if rng.random() < 0.5 else {1: 2}
        fusion.demote_superseded(hits, pairs)
        after = {h.chunk_id: i for i, h in enumerate(hits)}
        doc = {h.chunk_id: h.document_id for h in hits}
        for a in after:
            for b in after:
                if before[a] < before[b] and after[b] < after[a]:  # b passed a: a was demoted
                    assert doc[a] in pairs and pairs[doc[a]] in doc.values(), (docs, pairs)
        for old, new in pairs.items():
            if old in docs and new in docs:
                assert doc_place(hits, old, min) > doc_place(hits, new, max), (docs, pairs)
                lowest = min(h.score for h in hits if h.document_id == new)
                assert all(h.score < lowest for h in hits if h.document_id == old)


def test_a_query_that_names_the_old_document_keeps_it_in_place_annotated():
    hits = [Fused(i, d, 1.0) for i, d in enumerate([1, 3, 2])]
    assert fusion.demote_superseded(hits, {1: 2}, move=False) == {0: 2}
    assert doc_order(hits) == [1, 3, 2]
    assert [h.score for h in hits] == [1.0, 1.0, 1.0]


def test_demotion_leaves_a_document_already_below_and_goes_on_to_the_next_pair():
    hits = [Fused(i, d) for i, d in enumerate([2, 3, 1, 5, 4])]
    moved = fusion.demote_superseded(hits, {7: 8, 1: 2, 9: 4, 5: 4})
    # 7 → 8: neither present; 1 → 2: already below, only annotated; 9 → 4: the old one is
    # absent; 5 → 4: moved below 4
    assert doc_order(hits) == [2, 3, 1, 4, 5]
    assert moved == {2: 2, 3: 4}


def test_no_successor_in_the_answer_no_move():
    hits = [Fused(i, d, 0.5) for i, d in enumerate([1, 3])]
    assert fusion.demote_superseded(hits, {1: 2}) == {}
    assert doc_order(hits) == [1, 3] and hits[0].score == 0.5


def test_a_superseded_hit_never_shows_its_successors_relevance():
    """A cap at 1.0 (boosts) or a row above (tiers) would show the older record at its
    successor's relevance: it shows one unit of the last place below, and rows after it follow."""
    hits = [Fused(0, 2), Fused(1, 1), Fused(2, 3)]
    moved = {1: 2}
    assert fusion.below_successors([1.0, 1.0, 1.0], hits, moved) == pytest.approx(
        [1.0, 0.9999, 0.9999]
    )
    assert fusion.below_successors([0.5, 0.3, 0.2], hits, moved) == [0.5, 0.3, 0.2]
    assert fusion.below_successors([0.0, 0.0, 0.0], hits, moved) == [0.0, 0.0, 0.0]  # not < 0
    above = [Fused(1, 1), Fused(0, 2)]  # a query that names it keeps it above: left alone
    assert fusion.below_successors([0.7, 0.7], above, moved) == [0.7, 0.7]

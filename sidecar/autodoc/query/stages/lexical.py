"""Stage 1, lexical: BM25 candidates from the workspace's lexical index (Tantivy, or sparse
vectors in Qdrant), visible in the snapshot (spec §2), and the documents whose title or alias
is exactly the query (issue 11: typing a name finds it first)."""

from __future__ import annotations

import dataclasses
import math
import sqlite3
from collections.abc import Iterator
from typing import Any, ClassVar

from autodoc.bm25.analyzer import Lexical, analyze, is_framing
from autodoc.parse.query_parser import ParsedQuery
from autodoc.query import confidence, fusion, spelling
from autodoc.query.intent import code_words, number_words
from autodoc.query.ranking import ALL_WORDS_PASS, ANY_WORD_PASS, NAMES_PASS, RARE_WORDS_PASS
from autodoc.query.stages.base import Phase, QueryContext, Skip, StageDefaults
from autodoc.store import DocumentSet, Store, Workspace, documents_named, first_live_chunk
from autodoc.wire.limits import MAX_READ, RETRIEVER_TOP


class LexicalStage(StageDefaults):
    name: ClassVar[str] = "lexical"
    toggle: ClassVar[bool] = True
    retriever: ClassVar[bool] = True
    phase: ClassVar[Phase] = "snapshot"

    def run(self, ctx: QueryContext, conn: sqlite3.Connection | None) -> Skip | None:
        assert conn is not None
        with ctx.trace.timed("lexical_ms"):
            ctx.trace.engines["lexical"] = ctx.request.lexical.engine
            ctx.request.lexical.refresh(ctx.results.epochs[0])
            query = words_searched(ctx, conn)
            # A number query names a record by its digits; a longer query may hold a code
            # (`c1083 cannot open include file`), which names the document titled with it.
            number = ctx.request.intent == "number"
            names = number_words(query) if number else code_words(query)
            req, res = ctx.request, ctx.results
            found, cut, res.signals["lexical"] = lexical_candidates(
                conn, req.store, req.lexical, req.ws, query, res.allowed, names=names,
                whole=not number, passes=res.lexical_passes,
            )  # fmt: skip
            ctx.results.truncated |= cut
            ctx.results.ranked.append(("lexical", found))
        ctx.results.exact = exact_names(
            conn, ctx.request.ws, ctx.request.query, ctx.results.allowed
        )
        return None


def words_searched(ctx: QueryContext, conn: sqlite3.Connection) -> ParsedQuery:
    """The query, or, when a word is found nowhere and one within an edit or two is, the query
    with that word corrected (`ctx.results.did_you_mean`). Notes the absent words for the answer."""
    absent = ctx.absent_words()
    typed = [w for w, prefix in ctx.request.content_words if not prefix and w in absent]
    fixed = (
        spelling.correct(conn, ctx.request.store, ctx.request.lexical, ctx.request.query, typed)
        if typed
        else None
    )
    if fixed is None:
        return ctx.request.query
    ctx.results.lexical_query, ctx.results.did_you_mean = fixed
    return ctx.results.lexical_query


# What a hit the names pass did not find may score, at most, against the last one it found: the
# document a query's code or number names stays ahead in a blend with the semantic stage too.
NAMED_GAP = 0.8


def lexical_candidates(
    conn: sqlite3.Connection,
    store: Store,
    lexical: Lexical,
    ws: Workspace,
    query: ParsedQuery,
    allowed: DocumentSet | None = None,
    need: int = RETRIEVER_TOP,
    names: list[str] | None = None,
    whole: bool = False,
    passes: list[int] | None = None,
) -> tuple[list[tuple[int, int]], bool, list[float]]:
    """Visible (chunk_id, document_id) best first: all-words matches, then matches of the
    query's rarer words (`rarer_half`), then any-word ones; before them, with `names` (a
    query's numbers), the documents those numbers name (`whole`: the codes as written, not
    their digits).

    `allowed`: the documents a filter keeps (None: all), applied inside the Tantivy query.
    Reads twice what it needs, then up to MAX_READ when invisible chunks starve the read.
    Returns (rows, truncated, their BM25 scores); `passes`, when given, gets each row's pass
    (NAMES_PASS, ALL_WORDS_PASS, RARE_WORDS_PASS, ANY_WORD_PASS): a feature of the ranking.
    """
    rows: list[tuple[int, int]] = []
    scores: list[float] = []
    truncated = False
    restrict = None
    if allowed is not None:
        if not allowed.size:
            return [], False, []
        if allowed.keep is not None:
            restrict = lexical.only_documents(keep=sorted(allowed.keep))
        else:
            restrict = lexical.only_documents(drop=sorted(allowed.drop or ()))
    queries = _passes(lexical, query, restrict, names, whole)
    ceiling = math.inf  # after the names pass: NAMED_GAP × its last score
    for q, kind in queries:
        if q is None:
            continue
        got, bm25, cut = _read_pass(
            conn, store, lexical, ws, q, {c for c, _ in rows}, need - len(rows)
        )
        truncated |= cut
        rows.extend(got)
        scores.extend(min(bm25[cid], ceiling) for cid, _ in got)
        if passes is not None:
            passes.extend(kind for _ in got)
        if kind == NAMES_PASS and got:
            ceiling = NAMED_GAP * scores[-1]
        if len(rows) >= need:
            break
    if passes is not None:
        del passes[need:]
    return rows[:need], truncated, scores[:need]


def _passes(
    lexical: Lexical, query: ParsedQuery, restrict: Any, names: list[str] | None, whole: bool
) -> Iterator[tuple[Any, int]]:
    """The passes' queries in order, each with its kind: the names a query's numbers or codes
    name, every word, the rarer half of the words, any word. Lazily: a pass that the ones
    before it filled is never built (on most keystrokes the all-words pass is enough, and the
    rarer half's document frequencies are not looked up)."""
    every = lexical.build(query, all_words=True, restrict=restrict)
    if every is None:
        return
    if names:
        yield lexical.build_names(names, query, restrict, whole=whole), NAMES_PASS
    yield every, ALL_WORDS_PASS
    rarer = rarer_half(lexical, query)
    if rarer is not None:
        yield lexical.build(rarer, all_words=True, restrict=restrict), RARE_WORDS_PASS
    yield lexical.build(query, all_words=False, restrict=restrict), ANY_WORD_PASS


def rarer_half(lexical: Lexical, query: ParsedQuery) -> ParsedQuery | None:
    """The query with only its rarer words required, the others still scoring: the words
    whose rarity (below) is at or above the median of its content words' (a quoted phrase or
    a prefix counts as rare; stopwords and a question's frame, `why did we`, are left out).
    When no chunk holds every word, the rarer ones say the most: `choose kafka` requires
    `kafka`, and the one chunk holding it comes before the many holding only `choose`
    (IDF-ordered relaxation, as a search engine drops the commonest words first). None when
    nothing would be dropped."""
    scoring = [
        n
        for n, item in enumerate(query.items)
        if analyze(item.text) and (item.phrase or item.prefix or not is_framing(item.text))
    ]
    plain = [n for n in scoring if not (query.items[n].phrase or query.items[n].prefix)]
    if len(scoring) < 2 or not plain:
        return None
    # How much a word says: its IDF in this vault, halved for a word common in English (in a
    # small vault `pick` may be held by one chunk and `sqlite` by six; `sqlite` says more).
    rarity = {
        n: share * (0.5 if confidence.is_common(query.items[n].text.lower()) else 1.0)
        for n, share in zip(
            plain, lexical.rarity([query.items[n].text for n in plain]), strict=True
        )
    }
    middle = _median(list(rarity.values()))
    kept = {n for n in scoring if rarity.get(n, 1.0) >= middle}
    if len(kept) == len(scoring) or not kept:
        return None
    items = [i if n in kept else dataclasses.replace(i, optional=True)  # still scored
             for n, i in enumerate(query.items)]  # fmt: skip
    return ParsedQuery(query.raw, items, list(query.facets))


def _median(values: list[float]) -> float:
    """`statistics.median`, computed as it does (that module and the fractions and decimals it
    imports cost a new process ~3 ms)."""
    data = sorted(values)
    mid = len(data) // 2
    return data[mid] if len(data) % 2 else (data[mid - 1] + data[mid]) / 2


def _read_pass(
    conn: sqlite3.Connection,
    store: Store,
    lexical: Lexical,
    ws: Workspace,
    q: Any,
    seen: set[int],
    need: int,
) -> tuple[list[tuple[int, int]], dict[int, float], bool]:
    """One pass's visible hits not `seen` (at least `need` when it has them), their BM25 scores,
    and whether MAX_READ cut it short. Reads twice what the whole answer needs first."""
    read = (need + len(seen)) * 2
    while True:
        pairs = lexical.search(q, read)
        fresh = list(dict.fromkeys(cid for cid, _ in pairs if cid not in seen))
        visible = store.visible_chunks(conn, ws.id, fresh)
        got = [(cid, visible[cid]) for cid in fresh if cid in visible]
        short = len(got) < need
        filled = len(pairs) >= read
        if not short or not filled or read >= MAX_READ:
            return got, dict(pairs), short and filled
        read = MAX_READ


def exact_names(
    conn: sqlite3.Connection,
    ws: Workspace,
    query: ParsedQuery,
    allowed: DocumentSet | None,
) -> list[fusion.Fused]:
    """Documents whose title or an alias is exactly the query's words (case-insensitive), each
    as its first section, marked `exact`."""
    key = " ".join(query.text.split()).lower()
    if not key:
        return []
    out = []
    for doc_id in documents_named(conn, ws.id, key):
        if allowed is not None and doc_id not in allowed:
            continue
        first = first_live_chunk(conn, doc_id)
        if first is not None:
            out.append(fusion.Fused(first, doc_id, via=["exact"]))
    return out

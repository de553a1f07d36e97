"""Stage 1, lexical: BM25 candidates from the workspace's lexical index (Tantivy, or sparse
vectors in Qdrant), visible in the snapshot (spec §2), and the documents whose title or alias
is exactly the query (issue 11: typing a name finds it first)."""

from __future__ import annotations

import math
import sqlite3
from typing import Any, ClassVar

from autodoc.bm25.analyzer import Lexical
from autodoc.parse.query_parser import ParsedQuery
from autodoc.query import fusion
from autodoc.query.intent import code_words, number_words
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
        with ctx.timed("lexical_ms"):
            ctx.lexical.refresh(ctx.epochs[0])
            # A number query names a record by its digits; a longer query may hold a code
            # (`c1083 cannot open include file`), which names the document titled with it.
            number = ctx.intent == "number"
            names = number_words(ctx.query) if number else code_words(ctx.query)
            found, cut, ctx.signals["lexical"] = lexical_candidates(
                conn, ctx.store, ctx.lexical, ctx.ws, ctx.query, ctx.allowed, names=names,
                whole=not number,
            )  # fmt: skip
            ctx.truncated |= cut
            ctx.ranked.append(("lexical", found))
        ctx.exact = exact_names(conn, ctx.ws, ctx.query, ctx.allowed)
        return None


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
) -> tuple[list[tuple[int, int]], bool, list[float]]:
    """Visible (chunk_id, document_id) best first: all-words matches, then any-word ones;
    before them, with `names` (a query's numbers), the documents those numbers name (`whole`:
    the codes as written, not their digits).

    `allowed`: the documents a filter keeps (None: all), applied inside the Tantivy query.
    Reads twice what it needs, then up to MAX_READ when invisible chunks starve the read.
    Returns (rows, truncated, their BM25 scores).
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
    passes = [(lexical.build(query, all_words=True, restrict=restrict), False)]
    if passes[0][0] is not None:
        passes.append((lexical.build(query, all_words=False, restrict=restrict), False))
        if names:
            passes.insert(0, (lexical.build_names(names, query, restrict, whole=whole), True))
    ceiling = math.inf  # after the names pass: NAMED_GAP × its last score
    for q, naming in passes:
        if q is None:
            continue
        got, bm25, cut = _read_pass(
            conn, store, lexical, ws, q, {c for c, _ in rows}, need - len(rows)
        )
        truncated |= cut
        rows.extend(got)
        scores.extend(min(bm25[cid], ceiling) for cid, _ in got)
        if naming and got:
            ceiling = NAMED_GAP * scores[-1]
        if len(rows) >= need:
            break
    return rows[:need], truncated, scores[:need]


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

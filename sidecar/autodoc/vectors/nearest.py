"""Nearest neighbours at query time (spec §3): binary prefilter, then float32 rescore.

Phase 2a scans the 1-bit sign codes of every vector with a USearch `b1` Hamming index (exact
scan), or past a size an HNSW graph; phase 2b rescores the shortlist with exact float32 cosine
from memory-mapped rows (the index: `usearch_index`). SQLite decides which chunks are visible, as
in the lexical stage.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal, Protocol

import numpy as np

from autodoc import store as sql
from autodoc.models.embedders import Embedder
from autodoc.store import DocumentSet, Store, Workspace
from autodoc.vectors.coverage import semantic_coverage
from autodoc.vectors.usearch_index import sign_bits
from autodoc.wire.limits import MAX_READ, RETRIEVER_TOP

# A filter whose documents hold at most this share of the chunks is served by scanning only
# their vectors; a wider one by the whole-workspace shortlist, filtered (on cpp-docs a filter
# keeping 33% of the chunks took 116 ms by its own vectors, 13 ms by the shortlist).
SUBSET_SHARE = 0.1


def semantic_candidates(
    conn,
    store: Store,
    signs: Vectors,
    ws: Workspace,
    model_fp: str,
    qvec: np.ndarray,
    allowed: DocumentSet | None = None,
    need: int = RETRIEVER_TOP,
    *,
    complete: bool,
    chunks: int,
) -> tuple[list[tuple[int, int, float]], bool]:
    """Visible (chunk_id, document_id, cosine) best first; (hits, truncated).

    `allowed`: the documents a filter keeps (None: all). When their chunks are at most
    SUBSET_SHARE of the workspace's `chunks`, or the whole-workspace shortlist cannot fill
    `need` from them, only their vectors are scanned, so a narrow filter cannot starve the
    stage. A document answers semantically only once every visible chunk of it has a vector;
    with `complete` (every visible chunk has one, per this snapshot's coverage) that check is
    skipped.
    """
    qbits = sign_bits(qvec)
    args = (conn, store, signs, ws.id, model_fp, qvec, qbits)
    if allowed is not None:
        if not allowed.size:
            return [], False
        if allowed.keep is not None and _chunk_count(conn, allowed.keep) <= (chunks * SUBSET_SHARE):
            return _subset(*args, allowed.keep, allowed, need, complete)
    read = signs.shortlist_size(need)
    while True:
        ranked, filled = signs.ranked(qvec, qbits, read)
        found = _visible(conn, store, ws.id, model_fp, ranked, allowed, need, complete)
        if len(found) >= need or not filled:
            return found[:need], False
        if read >= MAX_READ:
            if allowed is not None:
                keep = allowed.keep if allowed.keep is not None else _kept(conn, ws.id, allowed)
                return _subset(*args, keep, allowed, need, complete)
            return found[:need], True
        read = MAX_READ


def _chunk_count(conn, docs: set[int]) -> int:
    """Live chunks of these documents (an index-only count)."""
    return sql.live_chunk_count_of(conn, sorted(docs))


def _kept(conn, ws_id: int, allowed: DocumentSet) -> set[int]:
    return {d for d in sql.live_documents(conn, ws_id) if d in allowed}


def _subset(
    conn,
    store: Store,
    signs: Vectors,
    ws_id: int,
    model_fp: str,
    qvec: np.ndarray,
    qbits: np.ndarray,
    keep: set[int],
    allowed: DocumentSet,
    need: int,
    complete: bool,
) -> tuple[list[tuple[int, int, float]], bool]:
    """The kept documents' own vectors, nearest first (the index scans only them)."""
    ranked = signs.ranked_among(conn, ws_id, model_fp, qvec, qbits, keep, need)
    return _visible(conn, store, ws_id, model_fp, ranked, allowed, need, complete)[:need], False


def _visible(
    conn,
    store: Store,
    ws_id: int,
    model_fp: str,
    ranked: Sequence[tuple[str, float]],
    allowed: DocumentSet | None,
    need: int,
    complete: bool,
) -> list[tuple[int, int, float]]:
    """Visible (chunk_id, document_id, cosine) for the ranked hashes, best first, looked up a
    slice at a time."""
    found: list[tuple[int, int, float]] = []
    step = max(2 * need, 64)
    for start in range(0, len(ranked), step):
        part = ranked[start : start + step]
        found += _visible_slice(conn, store, ws_id, model_fp, part, allowed, complete)
        if len(found) >= need:
            break
    return found


def _visible_slice(
    conn,
    store: Store,
    ws_id: int,
    model_fp: str,
    ranked: Sequence[tuple[str, float]],
    allowed: DocumentSet | None,
    complete: bool,
) -> list[tuple[int, int, float]]:
    if not ranked:
        return []
    position = {h: i for i, (h, _) in enumerate(ranked)}
    rows = sql.live_chunks_with_texts(conn, ws_id, list(position))
    if allowed is not None:
        rows = [r for r in rows if r[1] in allowed]
    docs = [] if complete else sorted({r[1] for r in rows})
    incomplete = sql.documents_missing_vectors(conn, docs, model_fp)
    rows = [r for r in rows if r[1] not in incomplete]
    rows.sort(key=lambda r: (position[r[2]], r[0]))
    return [(r[0], r[1], ranked[position[r[2]]][1]) for r in rows]


class Vectors(Protocol):
    """What the semantic stage searches: a VectorIndex here, or a Qdrant collection
    (qdrant_dense.py). Either mirrors SQLite's vectors; SQLite decides what a reader sees.
    `remote`: other processes read it only as the writer's refresh mirrors it, so the writer
    refreshes it as a fill goes, not only after."""

    remote: bool
    engine: str  # the store an answer names: `usearch`, or `qdrant:` and where it is

    def refresh(self, conn, ws_id: int, model_fp: str, epoch: int, *, build: bool = False) -> None:
        """Catch up with this vector epoch; `build`: the writer's call, after a fill."""
        ...

    def save(self) -> None: ...

    def shortlist_size(self, need: int) -> int: ...

    def ranked(
        self, qvec: np.ndarray, qbits: np.ndarray, k: int
    ) -> tuple[Sequence[tuple[str, float]], bool]: ...

    def ranked_among(
        self,
        conn,
        ws_id: int,
        model_fp: str,
        qvec: np.ndarray,
        qbits: np.ndarray,
        docs: set[int],
        need: int,
    ) -> Sequence[tuple[str, float]]: ...


class SemanticPlan:
    """How this answer's semantic stage runs: which embedder and vector set, or why not."""

    def __init__(
        self,
        embedder: Embedder | None,
        model_fp: str | None,
        *,
        state: Literal["", "off", "switching"] = "",
        reason: str = "",
        code: int = 0,
        signs: Vectors | None = None,
        open_signs: Callable[[], Vectors] | None = None,
    ) -> None:
        """`signs`: the vector set's index, or `open_signs` what opens it when it is first
        searched (a search that only reports coverage, a lexical one, never opens it)."""
        self.embedder = embedder
        self.model_fp = model_fp
        self.state = state  # "", "off" or "switching"; ready/partial come from coverage
        self.reason = reason  # why the stage cannot run
        self.code = code  # the error for a semantic-only request that cannot run
        self._signs, self._open_signs = signs, open_signs
        self.coverage: tuple[int, int] | None = None

    @property
    def signs(self) -> Vectors | None:
        """The vector set's index, opened on first use."""
        if self._signs is None and self._open_signs is not None:
            self._signs = self._open_signs()
        return self._signs

    def nearest_now(
        self, conn, store: Store, ws: Workspace, qvec: np.ndarray, need: int
    ) -> tuple[list[tuple[int, int, float]], bool]:
        """(chunk id, document id, cosine) of the `need` chunks nearest `qvec` in this
        snapshot, and whether every chunk is embedded: the index brought up to the store's
        vector epoch first, no filter (what `related` and link completion ask; a search's
        stage filters and budgets itself)."""
        assert self.signs is not None and self.model_fp is not None
        epochs = sql.read_epochs(conn, ws.id)
        assert epochs is not None
        self.signs.refresh(conn, ws.id, self.model_fp, epochs[1])
        embedded, total = semantic_coverage(conn, store, ws, self.model_fp, epochs)
        found, _ = semantic_candidates(
            conn, store, self.signs, ws, self.model_fp, qvec, None,
            need=need, complete=embedded >= total, chunks=total,
        )  # fmt: skip
        return found, embedded >= total

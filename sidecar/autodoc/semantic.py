"""Stage 2, semantic: fill the vector cache, then binary prefilter + float32 rescore (spec §3).

Vectors are keyed by (workspace, model_fp, text_hash): identical texts share a row and an edit
re-embeds only the sections it changed. Phase 2a scans the 1-bit sign codes of every vector with
a USearch `b1` Hamming index (exact scan); phase 2b rescores the shortlist with exact float32
cosine. SQLite decides which chunks are visible, as in the lexical stage.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import numpy as np
import onnxruntime  # noqa: F401 - usearch 2.26.2-2.26.6 crash if imported before onnxruntime
from usearch.index import Index

from . import store as queries
from .embed import Embedder
from .facets import DocumentSet
from .fuse import MAX_READ, RETRIEVER_TOP
from .store import Store, Workspace

# Phase 2a shortlist: how many sign-code neighbours are rescored in float32. The smallest size
# measured with recall@50 >= 0.97 against exact float32 on SciFact (400: 0.954, 500: 0.968,
# 600: 0.976, 800: 0.986; bench/vector_recall.py, doc/benchmarks/semantic.md).
SHORTLIST = 600
# A filter whose documents hold at most this share of the chunks is served by scanning only
# their vectors; a wider one by the whole-workspace shortlist, filtered (on cpp-docs a filter
# keeping 33% of the chunks took 116 ms by its own vectors, 13 ms by the shortlist).
SUBSET_SHARE = 0.1
FILL_BATCH = 256  # texts per transaction; the embedder batches by length inside

Progress = Callable[[int, int], None]


def sign_bits(vectors: np.ndarray) -> np.ndarray:
    """1-bit codes: one bit per dimension, set where the component is positive."""
    return np.packbits(vectors > 0, axis=-1)


class SignIndex:
    """The Hamming index over one (workspace, model) vector set, kept in step with SQLite.

    Saved beside the store after each fill, so a new process loads it instead of reading every
    sign code back from SQLite; only rows added since (ids above `max_id`) are read.
    """

    def __init__(self, dim: int, path: Path | None, owner: str) -> None:
        self.dim = dim
        self.path = path
        self.owner = owner  # the store's id: a file left by another store is ignored
        self.index = self._empty()
        self.max_id = 0
        self.epoch = -1
        self.collected: int | None = None  # the workspace's collection count it reflects
        self.lock = threading.Lock()
        self._codes: _Codes | None = None  # by text hash, for filtered scans; built on first use
        if path is not None:
            self._load(path)

    def _empty(self) -> Index:
        # A b1 index only scanned exactly: the graph is never walked, so build it cheaply.
        return Index(ndim=self.dim, metric="hamming", dtype="b1", connectivity=2, expansion_add=1)

    def _load(self, path: Path) -> None:
        meta = path.with_suffix(".json")
        try:
            saved = json.loads(meta.read_text())
            if saved.get("owner") != self.owner:
                return
            max_id = saved["max_id"]
            collected = saved.get("collected")
            index = Index.restore(str(path))
        except (OSError, ValueError, KeyError, RuntimeError):
            return  # absent or unreadable: rebuilt from SQLite
        if index is not None and index.ndim == self.dim and len(index):
            # The index file and its .json are replaced one after the other: a process killed
            # between the two leaves a newer index beside an older max_id (found by the crash
            # test: its rows were then added twice). The index's own keys say what it holds;
            # an older .json's collection count only makes the next refresh rebuild it.
            top = int(np.asarray(index.keys).max())
            self.index, self.max_id = index, top
            self.collected = collected if top == int(max_id) else None

    def save(self) -> None:
        if self.path is None:
            return
        with self.lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
            self.index.save(str(tmp))
            os.replace(tmp, self.path)
            self.path.with_suffix(".json").write_text(
                json.dumps(
                    {"max_id": self.max_id, "owner": self.owner, "collected": self.collected}
                )
            )

    def refresh(self, conn, ws_id: int, model_fp: str, epoch: int) -> None:
        if epoch == self.epoch:
            return
        with self.lock:
            if epoch == self.epoch:
                return
            count, top = queries.vector_stats(conn, ws_id, model_fp)
            # a sign index built before the last collection may hold vectors that are gone
            collected = queries.collections(conn, ws_id)
            # Rows were collected since this index was built: start over. The count alone
            # misses it when new rows outnumber the collected ones (found by the crash test:
            # a saved index kept four vectors SQLite no longer had).
            if collected != self.collected or count < len(self.index) or top < self.max_id:
                self.index = self._empty()
                self.max_id = 0
                self._codes = None
                self.collected = collected
            rows = queries.vector_codes(conn, ws_id, model_fp, above=self.max_id)
            if rows:
                codes = _Codes.of(rows)
                fresh = ~np.asarray(self.index.contains(codes.keys), dtype=bool)
                if fresh.any():
                    self.index.add(codes.keys[fresh], codes.bits[fresh])
                self.max_id = int(codes.keys[-1])
                if self._codes is not None:
                    self._codes = self._codes.extend(codes)
            self.epoch = epoch

    def codes_for(
        self, conn, ws_id: int, model_fp: str, hashes: list[str]
    ) -> tuple[np.ndarray, np.ndarray]:
        """(embedding ids, sign codes) of these text hashes, from memory: a filtered scan
        looks up its few thousand chunks here instead of joining them to the vector table
        (cpp-docs, 7,000 chunks: ~10 ms instead of ~100)."""
        with self.lock:
            if self._codes is None:  # once per process: the codes the index holds
                self._codes = _Codes.of(
                    queries.vector_codes(conn, ws_id, model_fp, upto=self.max_id)
                )
            codes = self._codes
        return codes.lookup(hashes)

    def shortlist(self, qbits: np.ndarray, k: int) -> np.ndarray:
        if not len(self.index):
            return np.zeros(0, dtype=np.uint64)
        return self.index.search(qbits, min(k, len(self.index)), exact=True).keys


def _hash_prefixes(hashes: list[str]) -> np.ndarray:
    """The first 64 bits of each sha256 hex text hash: enough to tell them apart."""
    return np.frombuffer(bytes.fromhex("".join(h[:16] for h in hashes)), dtype=">u8").astype(
        np.uint64
    )


class _Codes:
    """Sign codes with their embedding ids, looked up by text hash (sorted 64-bit prefixes)."""

    def __init__(self, keys: np.ndarray, prefix: np.ndarray, bits: np.ndarray) -> None:
        self.keys, self.prefix, self.bits = keys, prefix, bits
        self.order = np.argsort(prefix, kind="stable")
        self.sorted = prefix[self.order]

    @classmethod
    def of(cls, rows) -> _Codes:
        """From (id, text_hash, bits) rows."""
        n = len(rows)
        keys = np.fromiter((r[0] for r in rows), dtype=np.uint64, count=n)
        prefix = _hash_prefixes([r[1] for r in rows])
        if not n:  # no vectors yet (a first fill under way): reshape cannot infer a width
            return cls(keys, prefix, np.zeros((0, 0), dtype=np.uint8))
        bits = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.uint8).reshape(n, -1)
        return cls(keys, prefix, bits)

    def extend(self, more: _Codes) -> _Codes:
        if not len(self.keys):
            return more
        return _Codes(
            np.concatenate([self.keys, more.keys]),
            np.concatenate([self.prefix, more.prefix]),
            np.concatenate([self.bits, more.bits]),
        )

    def lookup(self, hashes: list[str]) -> tuple[np.ndarray, np.ndarray]:
        if not hashes or not len(self.keys):
            return np.zeros(0, dtype=np.uint64), np.zeros((0, 0), dtype=np.uint8)
        want = np.unique(_hash_prefixes(hashes))  # a text shared by two chunks counts once
        pos = np.minimum(np.searchsorted(self.sorted, want), len(self.sorted) - 1)
        rows = self.order[pos[self.sorted[pos] == want]]
        return self.keys[rows], self.bits[rows]


# -- filling the cache ---------------------------------------------------------------------------


def fill(
    store: Store,
    ws: Workspace,
    embedder: Embedder,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
    among: list[int] | None = None,
) -> int:
    """Embed every visible chunk text that has no vector for this model; resumable.
    `among`: only these chunk ids can be missing (a long-lived process knows them from its
    incremental coverage), so a save does not scan the whole workspace."""
    if among is not None and not among:
        return 0
    with store.snapshot() as conn:
        if among is None:
            total = queries.missing_text_count(conn, ws.id, embedder.model_fp)
        else:
            total = len(among)
    done = 0
    while total and (stop is None or not stop.is_set()):
        with store.snapshot() as conn:
            rows = queries.texts_to_embed(conn, ws.id, embedder.model_fp, among, FILL_BATCH)
        if not rows:
            break
        # The chunk's breadcrumb is part of what is embedded (as in Chunk.embed_text).
        vectors = embedder.embed([f"{r[1]}\n\n{r[2]}" for r in rows])
        bits = sign_bits(vectors)
        with store.transaction() as conn:
            queries.add_vectors(
                conn,
                ws.id,
                [
                    (ws.id, embedder.model_fp, r[0], vectors[i].tobytes(), bits[i].tobytes())
                    for i, r in enumerate(rows)
                ],
            )
        done += len(rows)
        if progress:
            progress(min(done, total), total)
    return done


def collect_unused(store: Store, ws: Workspace, keep: set[str]) -> int:
    """Drop vectors no visible chunk uses, and every vector of models not in `keep`."""
    with store.transaction() as conn:
        return queries.collect_vectors(conn, ws.id, keep)


# -- the query path -----------------------------------------------------------------------------


def semantic_candidates(
    conn,
    store: Store,
    signs: SignIndex,
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
    read = max(SHORTLIST, need * 2)
    while True:
        keys = signs.shortlist(qbits, read)
        ranked = _rescore(conn, keys, qvec)
        found = _visible(conn, store, ws.id, model_fp, ranked, allowed, need, complete)
        short = len(found) < need
        filled = len(keys) >= read
        if not short or not filled:
            return found[:need], False
        if read >= MAX_READ:
            if allowed is not None:
                keep = allowed.keep if allowed.keep is not None else _kept(conn, ws.id, allowed)
                return _subset(*args, keep, allowed, need, complete)
            return found[:need], True
        read = MAX_READ


def _chunk_count(conn, docs: set[int]) -> int:
    """Live chunks of these documents (an index-only count)."""
    return queries.live_chunk_count_of(conn, sorted(docs))


def _kept(conn, ws_id: int, allowed: DocumentSet) -> set[int]:
    return {d for d in queries.live_documents(conn, ws_id) if d in allowed}


def _subset(
    conn,
    store: Store,
    signs: SignIndex,
    ws_id: int,
    model_fp: str,
    qvec: np.ndarray,
    qbits: np.ndarray,
    keep: set[int],
    allowed: DocumentSet,
    need: int,
    complete: bool,
) -> tuple[list[tuple[int, int, float]], bool]:
    """The two phases over the kept documents' vectors only: Hamming distance on their sign
    codes (numpy popcount), then float32 rescoring of the SHORTLIST nearest."""
    hashes = queries.live_text_hashes_of(conn, sorted(keep))
    keys, bits = signs.codes_for(conn, ws_id, model_fp, hashes)
    if not len(keys):
        return [], False
    distance = np.bitwise_count(bits ^ qbits).sum(axis=1, dtype=np.int64)
    if len(keys) > SHORTLIST:
        keys = keys[np.argpartition(distance, SHORTLIST - 1)[:SHORTLIST]]
    ranked = _rescore(conn, keys, qvec)
    return _visible(conn, store, ws_id, model_fp, ranked, allowed, need, complete)[:need], False


def _rescore(conn, keys: np.ndarray, qvec: np.ndarray) -> list[tuple[str, float]]:
    """(text_hash, cosine) best first, from the float32 vectors of the shortlist."""
    if not len(keys):
        return []
    rows = queries.vectors_by_id(conn, [int(k) for k in keys])
    if not rows:
        return []
    matrix = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    scores = matrix @ qvec
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    order = np.lexsort((ids, -scores))  # best first; ties by embedding id, so stable
    return [(rows[i][1], float(scores[i])) for i in order]


def _visible(
    conn,
    store: Store,
    ws_id: int,
    model_fp: str,
    ranked: list[tuple[str, float]],
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
    ranked: list[tuple[str, float]],
    allowed: DocumentSet | None,
    complete: bool,
) -> list[tuple[int, int, float]]:
    if not ranked:
        return []
    position = {h: i for i, (h, _) in enumerate(ranked)}
    rows = queries.live_chunks_with_texts(conn, ws_id, list(position))
    if allowed is not None:
        rows = [r for r in rows if r[1] in allowed]
    docs = [] if complete else sorted({r[1] for r in rows})
    incomplete = queries.documents_missing_vectors(conn, docs, model_fp)
    rows = [r for r in rows if r[1] not in incomplete]
    rows.sort(key=lambda r: (position[r[2]], r[0]))
    return [(r[0], r[1], ranked[position[r[2]]][1]) for r in rows]


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
        signs: SignIndex | None = None,
    ) -> None:
        self.embedder = embedder
        self.model_fp = model_fp
        self.state = state  # "", "off" or "switching"; ready/partial come from coverage
        self.reason = reason  # why the stage cannot run
        self.code = code  # the error for a semantic-only request that cannot run
        self.signs = signs
        self.coverage: tuple[int, int] | None = None

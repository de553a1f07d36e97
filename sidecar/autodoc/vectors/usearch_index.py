"""The in-process vector index of one (workspace, model) vector set, kept in step with SQLite.

Three parts, saved together beside the store so a new process maps them instead of reading
every vector back from SQLite (only rows added since, ids above `max_id`, are read):

- the sign codes in a USearch `b1` index, scanned exactly (spec §3, phase 2a), mapped from its
  file until it is first changed (`sign_index`);
- the float32 rows in append-only files, memory-mapped: phase 2b's rescoring gathers its
  shortlist from them (cpp-docs: 600 rows in ~0.1 ms, against ~1.9 ms read from SQLite);
- past HNSW_ABOVE vectors, an HNSW graph over int8 copies (USearch), which replaces the linear
  sign scan as the shortlist (rescored in float32 all the same). The writer builds it; readers
  use it once saved, adding the rows that arrived since.

Collected vectors are removed from the indexes; their rows stay in the files (never returned)
until a rebuild. What a reader may see is still decided by SQLite (semantic.py).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from autodoc import store as sql
from autodoc.vectors.sign_index import SignIndex
from autodoc.vectors.vector_rows import HASH_WIDTH, Ranked, Rows, mapped, rows_named

if TYPE_CHECKING:  # usearch is imported where an index is made or read: a search that reads
    # no vectors never loads it (2.26.2-2.26.6 crashed a process that imported it before
    # onnxruntime: pyproject.toml pins 2.26.1 and tests/integration/test_semantic.py runs both
    # orders)
    from usearch.index import Index

# Past this many vectors the writer builds an HNSW graph and the shortlist comes from it: at
# 108k cpp-docs vectors (real queries' top 50 against exact float32) the exact sign scan's 600
# reached recall 0.83 in 3.3 ms, the graph's 400 reached 0.96 in 2.1 ms (/tmp sweep, then
# bench/vector_scale.py: doc/benchmarks/performance.md §0.2). On subsets the graph was as fast
# from 10k on and found more (0.996 against 0.910 at 10k); below it the scan costs ~0.5 ms.
HNSW_ABOVE = 10_000
# M 32: at M 16 / ef_add 64 the same search effort kept 0.92 of the top 50 instead of 0.96.
# ef_add 256 (the build's candidate list) rather than 128: a graph built with more care keeps
# more for the same shortlist (111k: 0.971 against 0.944 with 300; 1M: 0.971 against 0.942
# with 800), for ~30% more time a walk of the same length and twice the build (one run:
# vector_scale.py, performance.md §0.2). Fewer neighbours from the better graph match the first
# one's speed with more recall (cpp-docs hybrid p50 9.87 / 10.47 ms against 9.93 / 10.13 in
# two runs of bench/query_path.py: noise).
# A saved graph records these: one built otherwise (an older version's) is built again.
GRAPH_BUILD = {"connectivity": 32, "expansion_add": 256}
# Graph neighbours rescored in float32 (the sign scan's shortlist is SHORTLIST, below), and the
# search's candidate list as long: the effort that sets both speed and recall.
HNSW_SHORTLIST = 300
HNSW_EXPANSION_SEARCH = HNSW_SHORTLIST
# A larger graph keeps less of the top 50 for the same effort (300 neighbours: 0.971 at 111k,
# 0.935 at 500k, 0.908 at 1M), so past HNSW_WIDEN_FROM vectors the shortlist grows with the
# graph, to HNSW_SHORTLIST_MAX at 1M: there 800 kept 0.971 in 0.29x the exact sign scan's time
# (performance.md §0.2). A search searches `shortlist` deep (USearch walks
# max(expansion_search, count)).
HNSW_WIDEN_FROM = 250_000
HNSW_SHORTLIST_MAX = 800
_WIDEN_POWER = math.log(HNSW_SHORTLIST_MAX / HNSW_SHORTLIST) / math.log(1_000_000 / HNSW_WIDEN_FROM)
# A saved graph is rewritten when it misses this share of the rows (a one-paragraph save does
# not rewrite a million-vector file; readers add the rows since from SQLite).
RESAVE_SHARE = 0.02


def sign_bits(vectors: np.ndarray) -> np.ndarray:
    """1-bit codes: one bit per dimension, set where the component is positive."""
    return np.packbits(vectors > 0, axis=-1)


def hnsw_shortlist(vectors: int) -> int:
    """The graph's shortlist for a graph of this many vectors (see HNSW_WIDEN_FROM)."""
    if vectors <= HNSW_WIDEN_FROM:
        return HNSW_SHORTLIST
    wider = HNSW_SHORTLIST * (vectors / HNSW_WIDEN_FROM) ** _WIDEN_POWER
    return min(HNSW_SHORTLIST_MAX, round(wider))


def _mapped_graph(path: Path) -> Index | None:
    """A saved graph, memory-mapped (every process that reads it shares its pages; it cannot
    change: a new graph is a new file)."""
    from usearch.index import Index

    graph = Index.restore(str(path), view=True)
    if graph is not None:  # the file does not keep the search expansion
        graph.expansion_search = HNSW_EXPANSION_SEARCH  # type: ignore[misc]
    return graph


def _graph_max_id(saved: dict, ids: np.ndarray) -> int:
    """The last id a saved graph holds (a .json from before it was named: the last of the
    rows it held)."""
    if "graph_max_id" in saved:
        return int(saved["graph_max_id"])
    held = int(saved.get("graph_rows", 0))
    return int(ids[held - 1]) if 0 < held <= len(ids) else 0


def _graph_index(dim: int) -> Index:
    from usearch.index import Index

    return Index(
        ndim=dim,
        metric="cos",
        dtype="i8",
        connectivity=GRAPH_BUILD["connectivity"],
        expansion_add=GRAPH_BUILD["expansion_add"],
        expansion_search=HNSW_EXPANSION_SEARCH,
    )


class VectorIndex:
    """The sign index, float32 rows and (past HNSW_ABOVE) graph of one vector set."""

    remote = False  # every process reads SQLite's rows since the saved index itself
    engine = "usearch"  # what an answer names as the semantic stage's store

    def __init__(self, dim: int, path: Path | None, owner: str) -> None:
        self.dim = dim
        self.path = path  # the sign index's file; the others are named after it
        self.owner = owner  # the store's id: files left by another store are ignored
        self.lock = threading.Lock()
        self.epoch = -1
        self._saved: dict = {}  # the .json last read or written: what the files on disk hold
        self._reset()
        if path is not None:
            self._load(path)

    def _reset(self) -> None:
        """Empty, to be filled from SQLite; the saved files stay for readers still using them."""
        self.index = SignIndex.empty(self.dim)
        self.rows = Rows.empty(self.dim)
        self.graph: Index | None = None
        self.max_id = 0
        self.collected: int | None = None  # the workspace's collection count it reflects
        self._codes: _Codes | None = None  # by text hash, for filtered scans; built on first use
        self._gen: int | None = None  # the row files these rows extend (None: new ones)
        self._written = 0  # rows already in those files
        # The graph is never changed once built or loaded: every process searches the same
        # graph file, so every process gives the same answer. Rows with an id past
        # `_graph_max_id` (the tail) are searched exactly beside it, and vectors collected
        # since are left out of its results; the writer saves a new graph (the tail added,
        # the collected removed) when the tail outgrows RESAVE_SHARE, and readers follow it.
        self._graph_max_id = 0  # the graph holds the rows up to this id (those live then)
        self._graph_seq: int | None = None  # the saved graph it is (None: built, unsaved)
        self._graph_dirty = False  # vectors removed or restored since the graph was made
        self._tail: tuple[tuple[int, int, int], np.ndarray, np.ndarray] | None = None

    # -- files ---------------------------------------------------------------------------

    def _file(self, suffix: str) -> Path:
        assert self.path is not None
        return self.path.with_suffix(suffix)

    def _load(self, path: Path) -> None:
        try:
            saved = json.loads(path.with_suffix(".json").read_text())
            if saved.get("owner") != self.owner or "seq" not in saved:
                return  # another store's, or written before the float32 rows were kept
            count, gen = saved["rows"], saved["rows_gen"]
            index = SignIndex.mapped_from(self._file(f".{saved['seq']}.usearch"))
            ids = np.fromfile(self._file(f".r{gen}.ids"), np.uint64, count)
            hashes = mapped(self._file(f".r{gen}.hashes"), f"S{HASH_WIDTH}", (count,))
            base = mapped(self._file(f".r{gen}.f32"), np.float32, (count, self.dim))
            graph = None
            if saved.get("graph") and saved.get("graph_build") != GRAPH_BUILD:
                # built with other settings (an older version's): built again, then saved
                saved = {**saved, "graph": False}
            if saved.get("graph"):
                graph = _mapped_graph(self._file(f".{saved['graph_seq']}.hnsw"))
        except (OSError, ValueError, KeyError, RuntimeError, TypeError):
            return  # absent, unreadable or half-written: rebuilt from SQLite
        self._saved = saved
        if index is None or index.ndim != self.dim or len(ids) != count:
            return
        self.index, self.max_id = index, int(saved["max_id"])
        self.rows = Rows(self.dim, ids, hashes, base, np.zeros((0, self.dim), np.float32))
        self.collected = saved.get("collected")
        self._gen, self._written = gen, count
        if graph is not None:  # saved less often than the rest: the rows since are the tail
            self.graph, self._graph_seq = graph, saved["graph_seq"]
            self._graph_max_id = _graph_max_id(saved, ids)

    def save(self) -> None:
        """Write what changed: rows appended to the row files, the indexes under a new
        sequence number, then the .json naming them (one atomic replace), then files no .json
        names go. A process killed at any point leaves the last complete set named; a reader
        keeps the files it mapped."""
        if self.path is None:
            return
        with self.lock:
            prev = self._saved
            state = (len(self.rows), self.max_id, self.collected, self.graph is not None)
            if prev and state == (prev["rows"], prev["max_id"], prev["collected"], prev["graph"]):
                return  # nothing new
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._save_rows()
            seq = prev.get("seq", 0) + 1
            self._atomic(lambda p: self.index.save(str(p)), self._file(f".{seq}.usearch"))
            graph_seq = self._graph_seq if self._graph_seq is not None else seq
            if self.graph is not None and (self._graph_stale() or self._graph_seq is None):
                graph, top = self._graph_to_save()
                self._atomic(lambda p: graph.save(str(p)), self._file(f".{seq}.hnsw"))
                graph_seq, self._graph_max_id, self._graph_dirty = seq, top, False
                self.graph = _mapped_graph(self._file(f".{seq}.hnsw"))  # pages shared
                self._graph_seq = seq
            saved = {
                "owner": self.owner, "max_id": self.max_id, "collected": self.collected,
                "seq": seq, "rows": len(self.rows), "rows_gen": self._gen,
                "graph": self.graph is not None, "graph_seq": graph_seq,
                "graph_rows": self._tail_start(), "graph_max_id": self._graph_max_id,
                "graph_build": GRAPH_BUILD,
            }  # fmt: skip
            self._atomic(lambda p: p.write_text(json.dumps(saved)), self._file(".json"))
            self._saved = saved
            self._drop_old(saved)

    def _graph_stale(self) -> bool:
        held = self._tail_start()
        return self._graph_dirty or len(self.rows) - held > RESAVE_SHARE * max(held, 1)

    def _tail_start(self) -> int:
        """The first row past the graph (rows are in id order)."""
        return int(np.searchsorted(self.rows.ids, np.uint64(self._graph_max_id), side="right"))

    def _graph_to_save(self) -> tuple[Index, int]:
        """(the graph of every live row, the last row's id): this process's own graph when
        it built it, else a copy of the saved one, with the tail added and what was collected
        since removed (the writer's, under the lock)."""
        from usearch.index import Index

        graph = self.graph
        if self._graph_seq is not None:  # a mapped file: a copy that can change
            graph = Index.restore(str(self._file(f".{self._graph_seq}.hnsw")))
        assert graph is not None
        held = self._tail_start()
        keys = self.rows.ids[:held]
        live = np.asarray(self.index.contains(keys), dtype=bool)
        in_graph = np.asarray(graph.contains(keys), dtype=bool)
        if (in_graph & ~live).any():
            graph.remove(keys[in_graph & ~live])
        back = np.flatnonzero(live & ~in_graph)  # restored since the graph was made
        if len(back):
            graph.add(keys[back], self.rows.vectors(0, held)[back], threads=os.cpu_count() or 1)
        self._graph_add(held, len(self.rows), graph)
        top = int(self.rows.ids[-1]) if len(self.rows) else 0
        return graph, top

    def _save_rows(self) -> None:
        """Append the rows since the last save to the row files (new files after a rebuild:
        the old ones may be mapped by a reader; new files too when another writer grew these
        since they were read: a reader may map past what this process wrote, so they are
        never cut back)."""
        named = rows_named(self._file(".json"), self.owner)
        if self._gen is not None and named >= (self._gen, self._written + 1):
            self._gen = None
        if self._gen is None:
            self._gen = max(self._saved.get("rows_gen", -1), named[0]) + 1
            self._written = 0
        start = self._written
        for suffix, data in (
            (".ids", self.rows.ids[start:]),
            (".hashes", self.rows.hashes[start:]),
            (".f32", self.rows.vectors(start)),
        ):
            path = self._file(f".r{self._gen}{suffix}")
            width = data.itemsize * (data.shape[1] if data.ndim == 2 else 1)
            with open(path, "r+b" if start else "wb") as f:
                f.truncate(start * width)  # what a killed writer appended and no .json names
                f.seek(start * width)
                f.write(np.ascontiguousarray(data).tobytes())
        self._written = n = len(self.rows)
        if n:  # map what was written: the writer need not hold the rows in memory either
            gen = self._gen
            self.rows.hashes = mapped(self._file(f".r{gen}.hashes"), f"S{HASH_WIDTH}", (n,))
            self.rows.base = mapped(self._file(f".r{gen}.f32"), np.float32, (n, self.dim))
            self.rows.tail = np.zeros((0, self.dim), np.float32)

    def _atomic(self, write, path: Path) -> None:
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        write(tmp)
        os.replace(tmp, path)

    def _drop_old(self, saved: dict) -> None:
        assert self.path is not None
        keep = {
            self._file(f".{saved['seq']}.usearch").name,
            self._file(f".{saved['graph_seq']}.hnsw").name,
            self._file(".json").name,
        } | {self._file(f".r{saved['rows_gen']}{s}").name for s in (".ids", ".hashes", ".f32")}
        for old in self.path.parent.glob(f"{self.path.stem}.*"):
            if old.name not in keep:  # (mapped by a reader where that forbids it: the next save)
                with contextlib.suppress(OSError):
                    old.unlink(missing_ok=True)

    # -- keeping in step with SQLite ---------------------------------------------------------

    def refresh(self, conn, ws_id: int, model_fp: str, epoch: int, *, build: bool = False) -> None:
        """Bring the indexes to this vector epoch; `build`: the writer may build the graph."""
        if epoch == self.epoch and not (build and self._wants_graph()):
            return
        with self.lock:
            if epoch != self.epoch:
                self._follow_saved_graph()
                self._catch_up(conn, ws_id, model_fp)
                self.epoch = epoch
            upto = len(self.rows) if build and self._wants_graph() else 0
        if upto:
            self._build_graph(upto)

    def _follow_saved_graph(self) -> None:
        """Search the graph the writer saved last, when it is newer than this one (a reader
        that kept the one it loaded would search an ever longer tail, and answer unlike a
        process that started since). A graph built here and not yet saved is newer."""
        if self.path is None or (self.graph is not None and self._graph_seq is None):
            return
        try:
            saved = json.loads(self._file(".json").read_text())
            if (saved.get("owner") != self.owner or not saved.get("graph")
                    or saved.get("graph_build") != GRAPH_BUILD
                    or saved["graph_seq"] == self._graph_seq):  # fmt: skip
                return
            graph = _mapped_graph(self._file(f".{saved['graph_seq']}.hnsw"))
        except (OSError, ValueError, KeyError, RuntimeError, TypeError):
            return  # being replaced: the next epoch looks again
        if graph is not None and graph.ndim == self.dim:
            self.graph, self._graph_seq = graph, saved["graph_seq"]
            self._graph_max_id = _graph_max_id(saved, self.rows.ids)

    def _catch_up(self, conn, ws_id: int, model_fp: str) -> None:
        count, top = sql.vector_stats(conn, ws_id, model_fp)
        collected = sql.collections(conn, ws_id)
        ids_now: np.ndarray | None = None  # SQLite's ids, read at most once
        if top < self.max_id:
            self._reset()  # ids went back: a rebuilt store
        elif len(self.rows) and (collected != self.collected or count < len(self.index)):
            # collected, or lost some other way (the count alone misses a collection that
            # more new rows outnumber: found by the crash test)
            ids_now = sql.vector_ids(conn, ws_id, model_fp)
            self._forget(ids_now)
        self.collected = collected
        self._add_new(sql.vector_rows(conn, ws_id, model_fp, above=self.max_id))
        if len(self.index) < count and not self._restore(
            sql.vector_ids(conn, ws_id, model_fp) if ids_now is None else ids_now
        ):
            self._reset()  # ids at most max_id came back that were never indexed: start over
            self.collected = collected
            self._add_new(sql.vector_rows(conn, ws_id, model_fp, above=0))

    def _restore(self, ids_now: np.ndarray) -> bool:
        """Index again the vectors SQLite holds again (a restored backup) whose rows are kept;
        False when one was never seen."""
        held = np.asarray(self.index.contains(ids_now), dtype=bool)
        back = ids_now[~held]
        if not np.isin(back, self.rows.ids).all():
            return False
        ids, _, f32 = self.rows.gather(back)
        self.index.add(ids, sign_bits(f32))
        self._graph_dirty = self.graph is not None  # the next graph saved holds them again
        self._codes = None
        return True

    def _add_new(self, rows: list) -> None:
        if not rows:
            return
        n = len(rows)
        ids = np.fromiter((r[0] for r in rows), np.uint64, n)
        hashes = np.array([r[1] for r in rows], f"S{HASH_WIDTH}")
        bits = np.frombuffer(b"".join(r[2] for r in rows), np.uint8).reshape(n, -1)
        f32 = np.frombuffer(b"".join(r[3] for r in rows), np.float32).reshape(n, self.dim)
        self.index.add(ids, bits)
        self.rows.extend(ids, hashes, f32)  # past the graph: searched exactly until saved
        self.max_id = int(ids[-1])
        if self._codes is not None:
            self._codes = self._codes.extend(_Codes(ids, _hash_prefixes(list(hashes)), bits))

    def _forget(self, ids_now: np.ndarray) -> None:
        """Remove from the indexes the vectors a collection dropped from SQLite."""
        gone = np.setdiff1d(self.rows.ids, ids_now, assume_unique=True)
        gone = gone[np.asarray(self.index.contains(gone), dtype=bool)] if len(gone) else gone
        if len(gone):
            self.index.remove(gone)  # the graph's results are checked against it
            self._graph_dirty = self._graph_dirty or (
                self.graph is not None and bool((gone <= self._graph_max_id).any())
            )
            self._codes = None

    def _wants_graph(self) -> bool:
        return self.graph is None and len(self.index) >= HNSW_ABOVE

    def _build_graph(self, upto: int) -> None:
        """The graph over the first `upto` rows, built outside the lock (searches go on with
        the sign scan: 108k vectors took 5.5 s), then caught up with what changed meanwhile."""
        graph = _graph_index(self.dim)
        self._graph_add(0, upto, graph)
        with self.lock:
            kept = np.asarray(self.index.contains(self.rows.ids[:upto]), dtype=bool)
            if not kept.all():
                graph.remove(self.rows.ids[:upto][~kept])
            self._graph_add(upto, len(self.rows), graph)
            self.graph, self._graph_seq, self._graph_dirty = graph, None, False
            self._graph_max_id = int(self.rows.ids[-1]) if len(self.rows) else 0

    def _graph_add(self, start: int, stop: int | None = None, graph: Index | None = None) -> None:
        """Add rows `start` to `stop` to the graph, those the sign index holds (not collected),
        a slice at a time: the memory-mapped rows are copied one slice at a time."""
        graph = graph if graph is not None else self.graph
        assert graph is not None
        stop = len(self.rows) if stop is None else stop
        step = 100_000
        for lo in range(start, stop, step):
            hi = min(lo + step, stop)
            keys = self.rows.ids[lo:hi]
            live = np.asarray(self.index.contains(keys), dtype=bool)
            vectors = self.rows.vectors(lo, hi)
            graph.add(keys[live], vectors[live], threads=os.cpu_count() or 1)

    # -- the query path ------------------------------------------------------------------------

    def shortlist_size(self, need: int) -> int:
        base = hnsw_shortlist(len(self.graph)) if self.graph is not None else SHORTLIST
        return max(base, need * 2)

    def shortlist(self, qvec: np.ndarray, qbits: np.ndarray, k: int) -> np.ndarray:
        """The embedding ids nearest the query: the graph's (those still held) with the
        tail's nearest, else the exact sign scan's."""
        with self.lock:
            if self.graph is not None and len(self.graph):
                want = min(k, len(self.graph))
                keys = self.graph.search(qvec, want).keys
                held = keys[np.asarray(self.index.contains(keys), dtype=bool)]
                if len(keys) >= want and 2 * len(held) >= want:
                    return np.concatenate([held, self._tail_nearest(qvec, k)])
                # The walk reached fewer than asked (a graph of a few hundred vectors can leave
                # some unreachable: 410 of 2,000 searches of 84 vectors came back short), so
                # the exact scan answers: at that size it costs what the walk does.
            if not len(self.index):
                return np.zeros(0, dtype=np.uint64)
            return self.index.search(qbits, min(k, len(self.index)), exact=True).keys

    def _live_tail(self) -> tuple[np.ndarray, np.ndarray]:
        """(ids, float32 rows) of the live rows past the graph, gathered once per epoch."""
        key = (self.epoch, self._graph_max_id, len(self.rows))
        if self._tail is None or self._tail[0] != key:
            start = self._tail_start()
            ids = self.rows.ids[start:]
            live = np.asarray(self.index.contains(ids), dtype=bool) if len(ids) else ids
            self._tail = (key, ids[live], self.rows.vectors(start)[live])
        return self._tail[1], self._tail[2]

    def _tail_nearest(self, qvec: np.ndarray, k: int) -> np.ndarray:
        """The `k` live rows past the graph nearest the query, exactly (a few percent of the
        rows at most: past RESAVE_SHARE the writer saves a graph that holds them)."""
        ids, matrix = self._live_tail()
        if not len(ids):
            return ids
        scores = matrix @ qvec
        if len(ids) > k:
            ids = ids[np.argpartition(-scores, k - 1)[:k]]
        return ids

    def rescore(self, keys: np.ndarray, qvec: np.ndarray) -> Sequence[tuple[str, float]]:
        """(text_hash, cosine) best first, from the float32 rows of these ids; a hash is decoded
        only when read (the stage reads the first hundred of 400 or 600)."""
        if not len(keys):
            return []
        with self.lock:
            ids, hashes, matrix = self.rows.gather(np.asarray(keys, dtype=np.uint64))
        scores = matrix @ qvec
        order = np.lexsort((ids, -scores))  # best first; ties by embedding id, so stable
        return Ranked(hashes[order], scores[order])

    def ranked(
        self, qvec: np.ndarray, qbits: np.ndarray, k: int
    ) -> tuple[Sequence[tuple[str, float]], bool]:
        """(text_hash, cosine) best first for the `k` nearest; and whether `k` were found (a
        shorter list means there is nothing deeper to read)."""
        keys = self.shortlist(qvec, qbits, k)
        return self.rescore(keys, qvec), len(keys) >= k

    def ranked_among(
        self,
        conn,
        ws_id: int,
        model_fp: str,
        qvec: np.ndarray,
        qbits: np.ndarray,
        docs: set[int],
        need: int,
    ) -> Sequence[tuple[str, float]]:
        """The two phases over these documents' vectors only: Hamming distance on their sign
        codes (numpy popcount), then float32 rescoring of the SHORTLIST nearest."""
        hashes = sql.live_text_hashes_of(conn, sorted(docs))
        keys, bits = self.codes_for(conn, ws_id, model_fp, hashes)
        if not len(keys):
            return []
        distance = np.bitwise_count(bits ^ qbits).sum(axis=1, dtype=np.int64)
        if len(keys) > SHORTLIST:
            keys = keys[np.argpartition(distance, SHORTLIST - 1)[:SHORTLIST]]
        return self.rescore(keys, qvec)

    def codes_for(
        self, conn, ws_id: int, model_fp: str, hashes: list[str]
    ) -> tuple[np.ndarray, np.ndarray]:
        """(embedding ids, sign codes) of these text hashes, from memory: a filtered scan
        looks up its few thousand chunks here instead of joining them to the vector table
        (cpp-docs, 7,000 chunks: ~10 ms instead of ~100)."""
        with self.lock:
            if self._codes is None:  # once per process: the codes the index holds
                self._codes = _Codes.of(sql.vector_codes(conn, ws_id, model_fp, upto=self.max_id))
            codes = self._codes
        return codes.lookup(hashes)


# Phase 2a shortlist of the exact sign scan: how many sign-code neighbours are rescored in
# float32. The smallest size measured with recall@50 >= 0.97 against exact float32 on SciFact
# (400: 0.954, 500: 0.968, 600: 0.976, 800: 0.986; bench/vector_recall.py, semantic.md).
SHORTLIST = 600


def _hash_prefixes(hashes: list) -> np.ndarray:
    """The first 64 bits of each sha256 hex text hash (str or bytes): enough to tell them
    apart."""
    text = "".join((h.decode() if isinstance(h, bytes) else h)[:16] for h in hashes)
    return np.frombuffer(bytes.fromhex(text), dtype=">u8").astype(np.uint64)


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

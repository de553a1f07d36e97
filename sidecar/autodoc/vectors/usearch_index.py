"""The in-process vector index of one (workspace, model) vector set, kept in step with SQLite.

Three parts, saved together beside the store so a new process maps them instead of reading
every vector back from SQLite (only rows added since, ids above `max_id`, are read):

- the sign codes in a USearch `b1` index, scanned exactly (spec §3, phase 2a);
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
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import onnxruntime  # noqa: F401 - usearch 2.26.2-2.26.6 crash if imported before onnxruntime
from usearch.index import Index

from autodoc import store as sql

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
HASH_WIDTH = 64  # a sha256 text hash in hex


class Vectors(Protocol):
    """What the semantic stage searches: a VectorIndex here, or a Qdrant collection
    (qdrant_dense.py). Either mirrors SQLite's vectors; SQLite decides what a reader sees.
    `remote`: other processes read it only as the writer's refresh mirrors it, so the writer
    refreshes it as a fill goes, not only after."""

    remote: bool

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


def sign_bits(vectors: np.ndarray) -> np.ndarray:
    """1-bit codes: one bit per dimension, set where the component is positive."""
    return np.packbits(vectors > 0, axis=-1)


def _mapped(path: Path, dtype, shape: tuple[int, ...]) -> np.ndarray:
    """A read-only map of `path` as a plain ndarray: np.memmap's own indexing costs ~0.1 ms a
    gather in Python (cpp-docs profile), a view of it none."""
    return np.memmap(path, dtype, "r", 0, shape).view(np.ndarray)


def _signs_index(dim: int) -> Index:
    # A b1 index only scanned exactly: the graph is never walked, so build it cheaply.
    return Index(ndim=dim, metric="hamming", dtype="b1", connectivity=2, expansion_add=1)


def hnsw_shortlist(vectors: int) -> int:
    """The graph's shortlist for a graph of this many vectors (see HNSW_WIDEN_FROM)."""
    if vectors <= HNSW_WIDEN_FROM:
        return HNSW_SHORTLIST
    wider = HNSW_SHORTLIST * (vectors / HNSW_WIDEN_FROM) ** _WIDEN_POWER
    return min(HNSW_SHORTLIST_MAX, round(wider))


def _graph_index(dim: int) -> Index:
    return Index(
        ndim=dim,
        metric="cos",
        dtype="i8",
        connectivity=GRAPH_BUILD["connectivity"],
        expansion_add=GRAPH_BUILD["expansion_add"],
        expansion_search=HNSW_EXPANSION_SEARCH,
    )


@dataclass
class _Rows:
    """Float32 vectors by embedding id (ascending), with their text hashes: the saved rows
    memory-mapped (`base_*`), those added since in memory (`tail_*`)."""

    dim: int
    ids: np.ndarray  # uint64, every row's id, ascending
    hashes: np.ndarray  # S64, every row's text hash
    base: np.ndarray  # (saved, dim) float32, memory-mapped
    tail: np.ndarray  # (added since, dim) float32

    @classmethod
    def empty(cls, dim: int) -> _Rows:
        return cls(
            dim,
            np.zeros(0, np.uint64),
            np.zeros(0, f"S{HASH_WIDTH}"),
            np.zeros((0, dim), np.float32),
            np.zeros((0, dim), np.float32),
        )

    def __len__(self) -> int:
        return len(self.ids)

    def extend(self, ids: np.ndarray, hashes: np.ndarray, f32: np.ndarray) -> None:
        self.ids = np.concatenate([self.ids, ids])
        self.hashes = np.concatenate([self.hashes, hashes])
        self.tail = np.concatenate([self.tail, f32]) if len(self.tail) else f32

    def vectors(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Rows `start` to `stop` (a copy where they span both parts)."""
        stop = len(self.ids) if stop is None else min(stop, len(self.ids))
        nb = len(self.base)
        if start >= nb:
            return self.tail[start - nb : stop - nb]
        if stop <= nb:
            return self.base[start:stop]
        return np.concatenate([self.base[start:], self.tail[: stop - nb]])

    def gather(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ids, hashes, float32 rows) of these embedding ids, those not held left out."""
        keys = np.asarray(keys, dtype=np.uint64)
        pos = np.searchsorted(self.ids, keys)
        ok = pos < len(self.ids)
        ok[ok] = self.ids[pos[ok]] == keys[ok]
        pos = pos[ok]
        nb = len(self.base)
        out = np.empty((len(pos), self.dim), np.float32)
        low = pos < nb
        out[low] = self.base[pos[low]]
        out[~low] = self.tail[pos[~low] - nb]
        return self.ids[pos], self.hashes[pos], out


class _Ranked(Sequence[tuple[str, float]]):
    """(text hash, cosine) pairs, best first, decoded as they are read."""

    def __init__(self, hashes: np.ndarray, scores: np.ndarray) -> None:
        self.hashes, self.scores = hashes, scores

    def __len__(self) -> int:
        return len(self.hashes)

    def __getitem__(self, i):
        if isinstance(i, slice):
            pairs = zip(self.hashes[i], self.scores[i], strict=True)
            return [(h.decode(), float(x)) for h, x in pairs]
        return self.hashes[i].decode(), float(self.scores[i])


class VectorIndex:
    """The sign index, float32 rows and (past HNSW_ABOVE) graph of one vector set."""

    remote = False  # every process reads SQLite's rows since the saved index itself

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
        self.index = _signs_index(self.dim)
        self.rows = _Rows.empty(self.dim)
        self.graph: Index | None = None
        self.max_id = 0
        self.collected: int | None = None  # the workspace's collection count it reflects
        self._codes: _Codes | None = None  # by text hash, for filtered scans; built on first use
        self._gen: int | None = None  # the row files these rows extend (None: new ones)
        self._written = 0  # rows already in those files
        self._graph_rows = 0  # rows the saved graph holds
        self._graph_dirty = False  # vectors removed since the graph was saved

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
            index = Index.restore(str(self._file(f".{saved['seq']}.usearch")))
            ids = np.fromfile(self._file(f".r{gen}.ids"), np.uint64, count)
            hashes = _mapped(self._file(f".r{gen}.hashes"), f"S{HASH_WIDTH}", (count,))
            base = _mapped(self._file(f".r{gen}.f32"), np.float32, (count, self.dim))
            graph = None
            if saved.get("graph") and saved.get("graph_build") != GRAPH_BUILD:
                # built with other settings (an older version's): built again, then saved
                saved = {**saved, "graph": False}
            if saved.get("graph"):
                graph = Index.restore(str(self._file(f".{saved['graph_seq']}.hnsw")))
                if graph is not None:  # the file does not keep the search expansion
                    graph.expansion_search = HNSW_EXPANSION_SEARCH  # type: ignore[misc]
        except (OSError, ValueError, KeyError, RuntimeError, TypeError):
            return  # absent, unreadable or half-written: rebuilt from SQLite
        self._saved = saved
        if index is None or index.ndim != self.dim or len(ids) != count:
            return
        self.index, self.max_id = index, int(saved["max_id"])
        self.rows = _Rows(self.dim, ids, hashes, base, np.zeros((0, self.dim), np.float32))
        self.collected = saved.get("collected")
        self._gen, self._written = gen, count
        if graph is not None:  # saved less often than the rest: add the rows since
            self.graph, self._graph_rows = graph, saved["graph_rows"]
            self._graph_add(self._graph_rows)

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
            graph_seq = prev.get("graph_seq", seq)
            if self.graph is not None and (self._graph_stale() or not prev.get("graph")):
                graph = self.graph
                self._atomic(lambda p: graph.save(str(p)), self._file(f".{seq}.hnsw"))
                graph_seq, self._graph_rows, self._graph_dirty = seq, len(self.rows), False
            saved = {
                "owner": self.owner, "max_id": self.max_id, "collected": self.collected,
                "seq": seq, "rows": len(self.rows), "rows_gen": self._gen,
                "graph": self.graph is not None, "graph_seq": graph_seq,
                "graph_rows": self._graph_rows, "graph_build": GRAPH_BUILD,
            }  # fmt: skip
            self._atomic(lambda p: p.write_text(json.dumps(saved)), self._file(".json"))
            self._saved = saved
            self._drop_old(saved)

    def _graph_stale(self) -> bool:
        missing = len(self.rows) - self._graph_rows
        return self._graph_dirty or missing > RESAVE_SHARE * max(self._graph_rows, 1)

    def _save_rows(self) -> None:
        """Append the rows since the last save to the row files (new files after a rebuild:
        the old ones may be mapped by a reader)."""
        if self._gen is None:
            self._gen, self._written = self._saved.get("rows_gen", -1) + 1, 0
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
            self.rows.hashes = _mapped(self._file(f".r{gen}.hashes"), f"S{HASH_WIDTH}", (n,))
            self.rows.base = _mapped(self._file(f".r{gen}.f32"), np.float32, (n, self.dim))
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
                self._catch_up(conn, ws_id, model_fp)
                self.epoch = epoch
            upto = len(self.rows) if build and self._wants_graph() else 0
        if upto:
            self._build_graph(upto)

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
        if self.graph is not None:
            self.graph.add(ids, f32)
            self._graph_dirty = True
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
        self.rows.extend(ids, hashes, f32)
        if self.graph is not None:
            self._graph_add(len(self.rows) - n)
        self.max_id = int(ids[-1])
        if self._codes is not None:
            self._codes = self._codes.extend(_Codes(ids, _hash_prefixes(list(hashes)), bits))

    def _forget(self, ids_now: np.ndarray) -> None:
        """Remove from the indexes the vectors a collection dropped from SQLite."""
        gone = np.setdiff1d(self.rows.ids, ids_now, assume_unique=True)
        gone = gone[np.asarray(self.index.contains(gone), dtype=bool)] if len(gone) else gone
        if len(gone):
            self.index.remove(gone)
            if self.graph is not None:
                self.graph.remove(gone)
                self._graph_dirty = True
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
            self.graph = graph

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
        """The embedding ids nearest the query: the graph's, else the exact sign scan's."""
        with self.lock:
            if self.graph is not None and len(self.graph):
                want = min(k, len(self.graph))
                keys = self.graph.search(qvec, want).keys
                if len(keys) >= want:
                    return keys
                # The walk reached fewer than asked (a graph of a few hundred vectors can leave
                # some unreachable: 410 of 2,000 searches of 84 vectors came back short), so
                # the exact scan answers: at that size it costs what the walk does.
            if not len(self.index):
                return np.zeros(0, dtype=np.uint64)
            return self.index.search(qbits, min(k, len(self.index)), exact=True).keys

    def rescore(self, keys: np.ndarray, qvec: np.ndarray) -> Sequence[tuple[str, float]]:
        """(text_hash, cosine) best first, from the float32 rows of these ids; a hash is decoded
        only when read (the stage reads the first hundred of 400 or 600)."""
        if not len(keys):
            return []
        with self.lock:
            ids, hashes, matrix = self.rows.gather(np.asarray(keys, dtype=np.uint64))
        scores = matrix @ qvec
        order = np.lexsort((ids, -scores))  # best first; ties by embedding id, so stable
        return _Ranked(hashes[order], scores[order])

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

"""The semantic stage on a Qdrant collection, for vector sets one machine cannot hold.

`embedding.store: {kind: qdrant, url, api_key_env}` puts a workspace's vectors in a Qdrant
collection (one per store and model, shared by its workspaces) through `qdrant-client`; the
embedded VectorIndex stays the default. SQLite stays the source of truth, as it is for the
lexical index: a point is a chunk (id = chunk id) whose payload names its workspace, document,
generation, state and text hash; the writer mirrors chunks after each fill (new ones upserted,
retired ones marked, purged ones deleted), and a reader's hits are checked against its own
SQLite snapshot (nearest._visible), so it never sees a mixed generation: a point of a chunk not
visible in the snapshot (written since, or retired before it) is dropped there.

The dense vector is stored with binary quantization and searched with rescoring (oversampled),
Qdrant's own version of the embedded sign scan + float32 rescore. `url` ":memory:" or a `path`
runs qdrant-client's local mode in-process (exact brute force: tests and trials, not speed).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from autodoc import store as sql
from autodoc.store.qdrant_connection import client_for, is_local, location_kind, quiet

DENSE = "dense"
MIRROR_BATCH = 1024  # chunks upserted per call
SWEEP_PAGE = 10_000  # point ids read per call when orphans are swept
OVERSAMPLING = 2.0  # binary-quantized candidates rescored per hit wanted


class QdrantVectors:
    """A workspace's vectors of one model in a Qdrant collection (nearest.Vectors)."""

    remote = True

    def __init__(
        self, spec: dict[str, Any], dim: int, owner: str, ws_id: int, model_fp: str
    ) -> None:
        from qdrant_client import models

        self.m = models
        self.spec = spec
        self.engine = f"qdrant:{location_kind(spec)}"
        self.client, self.lock = client_for(spec)
        self.local = is_local(spec)
        self.dim = dim
        self.ws_id = ws_id
        self.model_fp = model_fp
        self.name = spec.get("collection") or f"autodoc-{owner[:12]}-{model_fp[:12]}"
        self.mirrored = 0  # every chunk up to this id is a point, or waiting in `pending`
        self.pending: set[int] = set()  # chunks up to `mirrored` still without a vector
        self.mirroring = threading.Lock()
        self._ensure()

    def _ensure(self) -> None:
        m = self.m
        with self.lock:
            if self.client.collection_exists(self.name):
                return
            self.client.create_collection(
                self.name,
                vectors_config={
                    DENSE: m.VectorParams(
                        size=self.dim,
                        distance=m.Distance.COSINE,
                        on_disk=bool(self.spec.get("on_disk", False)),
                    )
                },
                shard_number=self.spec.get("shards", 1),
                replication_factor=self.spec.get("replicas", 1),
                quantization_config=m.BinaryQuantization(
                    binary=m.BinaryQuantizationConfig(always_ram=True)
                ),
            )
            with quiet(self.local):  # local mode: "payload indexes have no effect"
                for key in ("ws", "doc", "state"):
                    self.client.create_payload_index(self.name, key, m.PayloadSchemaType.INTEGER)

    def _mine(self) -> list:
        m = self.m
        return [m.FieldCondition(key="ws", match=m.MatchValue(value=self.ws_id))]

    # -- the writer's mirror ----------------------------------------------------------------

    def refresh(self, conn, ws_id: int, model_fp: str, epoch: int, *, build: bool = False) -> None:
        """Readers read the collection as it is; the writer (`build`) mirrors what changed."""
        if build:
            self.mirror(conn)

    def save(self) -> None:
        return None  # the server keeps it

    def mirror(self, conn) -> int:
        """Upsert the chunks whose vector is not mirrored yet, mark the retired, delete the
        purged; returns how many points were written. A process's first mirror asks the
        collection which chunks it holds already instead of sending them again. One mirror
        at a time: two fills of one process (the background worker, a foreground run) would
        otherwise move the watermark past each other's chunks."""
        with self.mirroring:
            return self._mirror(conn)

    def _mirror(self, conn) -> int:
        written = 0
        if self.pending:  # chunks below the watermark that were waiting for their vector
            rows = sql.chunks_to_mirror(conn, self.ws_id, self.model_fp, among=sorted(self.pending))
            written += self._upsert(rows)
            self.pending -= {r[0] for r in rows}
        above = self.mirrored
        while True:
            rows = sql.chunks_to_mirror(
                conn, self.ws_id, self.model_fp, above=above, limit=MIRROR_BATCH
            )
            if not rows:
                break
            written += self._upsert(rows, fresh=self.mirrored == 0)
            above = rows[-1][0]
        waiting = sql.chunks_missing_vectors(conn, self.ws_id, self.model_fp, above=self.mirrored)
        self.pending |= {c for c in waiting if c <= above}
        self.mirrored = above
        self._retire(conn)
        self._sweep(conn)
        return written

    def _upsert(self, rows: list, fresh: bool = False) -> int:
        if fresh and rows:
            with self.lock:
                held = self.client.retrieve(self.name, [r[0] for r in rows], with_payload=False)
            have = {int(p.id) for p in held}
            rows = [r for r in rows if r[0] not in have]
        if rows:
            with self.lock:
                self.client.upsert(self.name, [self._point(r) for r in rows], wait=True)
        return len(rows)

    def _point(self, row: tuple) -> Any:
        cid, doc, gen, state, text_hash, f32, vid = row
        payload = {"ws": self.ws_id, "doc": doc, "gen": gen, "state": state, "hash": text_hash}
        return self.m.PointStruct(
            id=cid,
            vector={DENSE: np.frombuffer(f32, np.float32).tolist()},
            payload=payload | {"vid": vid},  # the vector's id: ties ordered as embedded
        )

    def _retire(self, conn) -> None:
        m = self.m
        retired = sql.retired_chunk_ids(conn, self.ws_id)
        with self.lock:
            if retired:
                self.client.set_payload(
                    self.name,
                    payload={"state": int(sql.DEAD)},
                    points=m.FilterSelector(
                        filter=m.Filter(must=[m.HasIdCondition(has_id=retired)])
                    ),
                )
            dead, _ = self.client.scroll(
                self.name,
                scroll_filter=m.Filter(
                    must=[
                        *self._mine(),
                        m.FieldCondition(key="state", match=m.MatchValue(value=int(sql.DEAD))),
                    ]
                ),
                limit=10_000,
                with_payload=False,
            )
        ids = [int(p.id) for p in dead]
        gone = sorted(set(ids) - sql.existing_chunk_ids(conn, ids)) if ids else []
        if gone:
            with self.lock:
                self.client.delete(self.name, points_selector=m.PointIdsList(points=gone))

    def _sweep(self, conn) -> int:
        """Delete the points of chunks purged before a mirror marked them retired (a chunk
        written and purged between two mirrors, a writer killed between purge and mirror): when
        the collection holds more of the workspace's points than it has chunks, every point id
        is checked against the store. Returns how many went."""
        with self.lock:
            held = self.client.count(self.name, count_filter=self.m.Filter(must=self._mine()))
        chunks, highest = sql.chunk_extent(conn, self.ws_id)
        if held.count <= chunks:
            return 0
        gone: list[Any] = []
        offset = None
        while True:
            with self.lock:
                page, offset = self.client.scroll(
                    self.name,
                    scroll_filter=self.m.Filter(must=self._mine()),
                    limit=SWEEP_PAGE,
                    offset=offset,
                    with_payload=False,
                )
            ids = [int(p.id) for p in page if int(p.id) <= highest]  # above: written since
            gone += sorted(set(ids) - sql.existing_chunk_ids(conn, ids)) if ids else []
            if offset is None:
                break
        if gone:
            with self.lock:
                self.client.delete(self.name, points_selector=self.m.PointIdsList(points=gone))
        return len(gone)

    def drop(self) -> None:
        """The workspace's points go (the workspace was removed)."""
        m = self.m
        with self.lock:
            self.client.delete(
                self.name, points_selector=m.FilterSelector(filter=m.Filter(must=self._mine()))
            )

    # -- the query path --------------------------------------------------------------------

    def shortlist_size(self, need: int) -> int:
        return need * 2

    def _query(self, qvec: np.ndarray, k: int, docs: set[int] | None) -> list:
        m = self.m
        must = self._mine()
        if docs is not None:
            must.append(m.FieldCondition(key="doc", match=m.MatchAny(any=sorted(docs))))
        params = m.SearchParams(
            quantization=m.QuantizationSearchParams(rescore=True, oversampling=OVERSAMPLING)
        )
        with self.lock, quiet(self.local):  # local mode: "search_params has no effect"
            return self.client.query_points(
                self.name,
                query=qvec.tolist(),
                using=DENSE,
                limit=k,
                query_filter=m.Filter(must=must),
                search_params=params,
                with_payload=["hash", "vid"],
            ).points

    @staticmethod
    def _by_text(points: list) -> list[tuple[str, float]]:
        """(text_hash, cosine) best first, each text once (chunks sharing a text share it);
        equal cosines (to 6 places: the server's arithmetic is not numpy's) by vector id, as
        the embedded index orders them."""
        seen: dict[str, tuple[float, int]] = {}
        for p in points:
            h = p.payload["hash"]
            if h not in seen:
                seen[h] = (float(np.float32(p.score)), int(p.payload["vid"]))
        order = sorted(seen.items(), key=lambda kv: (-round(kv[1][0], 6), kv[1][1]))
        return [(h, score) for h, (score, _) in order]

    def ranked(
        self, qvec: np.ndarray, qbits: np.ndarray, k: int
    ) -> tuple[list[tuple[str, float]], bool]:
        points = self._query(qvec, k, None)
        return self._by_text(points), len(points) >= k

    def ranked_among(
        self,
        conn,
        ws_id: int,
        model_fp: str,
        qvec: np.ndarray,
        qbits: np.ndarray,
        docs: set[int],
        need: int,
    ) -> list[tuple[str, float]]:
        """Filtered on the server: the `need` nearest chunks of these documents (twice as
        many, as the whole-workspace read)."""
        return self._by_text(self._query(qvec, self.shortlist_size(need), docs))

"""The vector cache at index time (spec §3): filling it with what the workspace's chunks lack,
and collecting the vectors no chunk uses any more.

Vectors are keyed by (workspace, model_fp, text_hash): identical texts share a row and an edit
re-embeds only the sections it changed. The query path reads them in `nearest`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from autodoc import store as sql
from autodoc.models.embedders import Embedder
from autodoc.store import Store, Workspace
from autodoc.vectors.usearch_index import sign_bits

FILL_BATCH = 256  # texts per transaction; the embedder batches by length inside

Progress = Callable[[int, int], None]


# -- filling the cache ---------------------------------------------------------------------------


def fill(
    store: Store,
    ws: Workspace,
    embedder: Embedder,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
    among: list[int] | None = None,
    stored: Callable[[], None] | None = None,
) -> int:
    """Embed every visible chunk text that has no vector for this model; resumable.
    `among`: only these chunk ids can be missing (a long-lived process knows them from its
    incremental coverage), so a save does not scan the whole workspace. `stored`: called after
    each batch's vectors are committed."""
    if among is not None and not among:
        return 0
    with store.snapshot() as conn:
        if among is None:
            total = sql.missing_text_count(conn, ws.id, embedder.model_fp)
        else:
            total = len(among)
    done = 0
    while total and (stop is None or not stop.is_set()):
        with store.snapshot() as conn:
            rows = sql.texts_to_embed(conn, ws.id, embedder.model_fp, among, FILL_BATCH)
        if not rows:
            break
        # The chunk's breadcrumb is part of what is embedded (as in Chunk.embed_text).
        vectors = embedder.embed([f"{r[1]}\n\n{r[2]}" for r in rows])
        bits = sign_bits(vectors)
        with store.transaction() as conn:
            sql.add_vectors(
                conn,
                ws.id,
                [
                    (ws.id, embedder.model_fp, r[0], vectors[i].tobytes(), bits[i].tobytes())
                    for i, r in enumerate(rows)
                ],
            )
        done += len(rows)
        if stored:
            stored()
        if progress:
            progress(min(done, total), total)
    return done


def collect_unused(store: Store, ws: Workspace, keep: set[str]) -> int:
    """Drop vectors no visible chunk uses, and every vector of models not in `keep`."""
    with store.transaction() as conn:
        return sql.collect_vectors(conn, ws.id, keep)

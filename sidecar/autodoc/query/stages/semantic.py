"""Stage 2, semantic: the query's vector against the workspace's, 1-bit prefilter then exact
float32 rescoring (spec §3; the vector cache and its index are `autodoc/semantic.py`)."""

from __future__ import annotations

import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from typing import ClassVar

import numpy as np

from autodoc.models.embedders import Embedder
from autodoc.query.stages.base import Phase, QueryContext, Skip
from autodoc.vectors.coverage import semantic_coverage
from autodoc.vectors.nearest import semantic_candidates
from autodoc.wire.errors import EMBED_FAILED, UNSUPPORTED


class SemanticStage:
    name: ClassVar[str] = "semantic"
    toggle: ClassVar[bool] = True
    retriever: ClassVar[bool] = True
    phase: ClassVar[Phase] = "snapshot"
    # Embed the query on a worker while the lexical stage runs (on one thread, where the embedder
    # has one to offer). Off: on 2 cores it measured within noise of embedding first (-0.3 ms in
    # one run, +0.5 ms in another; bench/query_path.py), the two taking turns on the cores.
    overlap: ClassVar[bool] = False
    beside: ClassVar[bool] = True

    def unavailable(self, ctx: QueryContext) -> Skip | None:
        plan = ctx.request.semantic
        if plan.embedder is not None:
            return None
        return Skip(
            plan.reason,
            plan.code or UNSUPPORTED,
            f"semantic search unavailable: {plan.reason}",
            {"stage": "semantic", "reason": plan.reason},
        )

    def prepare(self, ctx: QueryContext) -> Skip | None:
        """Embed the query before the snapshot stages run. With
        `overlap`, beside the lexical stage it is embedded on a worker thread while that stage
        runs (the model releases the GIL)."""
        embedder = ctx.request.semantic.embedder
        if ctx.request.wordless or embedder is None:
            return None
        # A model not loaded yet (a new process: onnxruntime, its session and the tokenizer,
        # ~200 ms) loads and embeds on a worker while the lexical stage runs and the vector
        # index opens; a loaded one embeds here unless `overlap`.
        cold = not getattr(embedder, "loaded", True)
        if cold or (self.overlap and "lexical" in ctx.request.options.stages):
            beside = self.beside and not cold  # a cold model: its query session, made once
            ctx.results.pending = _WORKERS.submit(_embed, embedder, ctx.request.query.text, beside)
            return None
        qvec, seconds, failed = _embed(embedder, ctx.request.query.text)
        ctx.trace.timings["embed_ms"] = round(seconds * 1000, 2)
        ctx.results.qvec = qvec
        return failed

    def run(self, ctx: QueryContext, conn: sqlite3.Connection | None) -> Skip | None:
        plan = ctx.request.semantic
        signs = plan.signs  # opened before waiting for the query's vector: the two overlap
        assert conn is not None and signs is not None and plan.model_fp is not None
        # Neither needs the query's vector: in a new process the index's reads (the vector
        # count: ~15 ms on cpp-docs) overlap the model's load too.
        with ctx.trace.timed("semantic_ms"):
            ctx.trace.engines["semantic"] = signs.engine
            signs.refresh(conn, ctx.request.ws.id, plan.model_fp, ctx.results.epochs[1])
            plan.coverage = semantic_coverage(
                conn, ctx.request.store, ctx.request.ws, plan.model_fp, ctx.results.epochs
            )
        if ctx.results.pending is not None:
            with ctx.trace.timed("embed_wait_ms"):  # what the lexical stage did not hide
                qvec, seconds, failed = ctx.results.pending.result()
            ctx.results.pending = None
            ctx.trace.timings["embed_ms"] = round(seconds * 1000, 2)
            if failed is not None:
                return failed
            ctx.results.qvec = qvec
        with ctx.trace.timed("semantic_ms"):
            found: list[tuple[int, int]] = []
            if ctx.results.qvec is not None:
                embedded, total = plan.coverage
                scored, cut = semantic_candidates(
                    conn,
                    ctx.request.store,
                    signs,
                    ctx.request.ws,
                    plan.model_fp,
                    ctx.results.qvec,
                    ctx.results.allowed,
                    complete=embedded >= total,
                    chunks=total,
                )
                found = [(c, d) for c, d, _ in scored]
                ctx.results.signals["semantic"] = [x for _, _, x in scored]
                ctx.results.truncated |= cut
            ctx.results.ranked.append(("semantic", found))
        return None

    def describe(self, ctx: QueryContext, conn: sqlite3.Connection | None, ran: bool) -> None:
        plan = ctx.request.semantic
        if not ran and conn is not None and plan.embedder is not None and plan.model_fp is not None:
            # Not asked for (a picker's box unchecked): still say how complete the vectors are.
            plan.coverage = semantic_coverage(
                conn, ctx.request.store, ctx.request.ws, plan.model_fp, ctx.results.epochs
            )


# Query embeddings run here beside the lexical stage: two, for two searches at once.
_WORKERS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="autodoc-query-embed")


def _embed(
    embedder: Embedder, text: str, beside: bool = False
) -> tuple[np.ndarray | None, float, Skip | None]:
    """(the query's vector, seconds, None) or (None, seconds, why not): a provider error
    answers lexically and says so. `beside`: on the embedder's one-thread session, if it has
    one (the same vector to cosine 1.0000: bench/embed_throughput.py, test_embed_batches)."""
    t0 = time.perf_counter()
    one = getattr(embedder, "embed_beside", None) if beside else None
    try:
        vector = one(text) if one is not None else embedder.embed([text])[0]
        return vector, time.perf_counter() - t0, None
    except Exception as exc:
        reason = f"embedding the query failed: {getattr(exc, 'message', exc)}"
        skip = Skip(reason, EMBED_FAILED, reason, {"stage": "semantic"})
        return None, time.perf_counter() - t0, skip

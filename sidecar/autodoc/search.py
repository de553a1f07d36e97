"""`search.query`: run the requested stages on one store snapshot and say what ran (spec §7)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import facets, fuse
from .errors import EMBED_FAILED, UNSUPPORTED, CancelToken, RpcError, invalid_params
from .fuse import MAX_READ, RETRIEVER_TOP
from .lexical import STEMMED, UNSTEMMED, LexicalIndex, analyze
from .query import ParsedQuery, parse_query
from .rerank import NOT_REQUESTED, RankPlan, rerank, validate_window
from .semantic import SemanticPlan, semantic_candidates
from .store import NAME_ALIAS, NAME_TITLE, Store, Workspace

STAGES = ("lexical", "semantic", "rerank")
DEFAULT_LIMIT = 10
MAX_LIMIT = 100
SNIPPET_CHARS = 220

NO_RANKER = "no ranker configured"
STALE_SPARE = 10

_OPTS = {"limit", "stages", "paths", "mode", "retrieval", "window", "facets", "tags", "fusion"}
FACET_ONLY = "the query has only facet filters"


@dataclass
class SearchOptions:
    limit: int
    stages: list[str]
    paths: list[str]
    demote_superseded: bool | None = None
    window: int | None = None  # how many fused hits the ranker reads (default: the workspace's)
    facets: dict[str, Any] | None = None  # {field: [values]}; a "-field" key excludes
    tags: list[str] | None = None  # tag names; "-name" excludes
    fusion: str = fuse.DEFAULT_FUSION  # "confidence" or the spec's plain "rrf"


def parse_options(opts: Any) -> SearchOptions:
    if opts is None:
        opts = {}
    if not isinstance(opts, dict):
        raise invalid_params("opts must be an object", got=type(opts).__name__)
    unknown = sorted(set(opts) - _OPTS)
    if unknown:
        raise invalid_params(f"unknown search option {unknown[0]!r}", field=unknown[0])
    limit = opts.get("limit", DEFAULT_LIMIT)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise invalid_params(f"limit must be an integer 1..{MAX_LIMIT}", field="limit", value=limit)
    stages = opts.get("stages")
    mode = opts.get("mode")
    if mode is not None:
        modes = {"lexical": ["lexical"], "semantic": ["semantic"], "hybrid": list(STAGES)}
        if not isinstance(mode, str) or mode not in modes:
            raise invalid_params("mode must be lexical, semantic or hybrid", field="mode")
        stages = stages or modes[mode]
    if stages is None or stages == []:
        stages = list(STAGES)
    if not isinstance(stages, list) or any(s not in STAGES for s in stages):
        raise invalid_params(f"stages must be a list of {', '.join(STAGES)}", field="stages")
    if "lexical" not in stages and "semantic" not in stages:
        raise invalid_params("stages must include lexical or semantic", field="stages")
    stages = [s for s in STAGES if s in stages]
    paths = opts.get("paths") or []
    if not isinstance(paths, list) or not all(isinstance(p, str) and p for p in paths):
        raise invalid_params("paths must be a list of path prefixes", field="paths")
    paths = [p[2:] if p.startswith("./") else p for p in paths]
    retrieval = opts.get("retrieval") or {}
    if not isinstance(retrieval, dict) or set(retrieval) - {"demote_superseded"}:
        raise invalid_params("retrieval takes demote_superseded", field="retrieval")
    demote = retrieval.get("demote_superseded")
    if demote is not None and not isinstance(demote, bool):
        raise invalid_params("retrieval.demote_superseded must be true or false", field="retrieval")
    window = opts.get("window")
    if window is not None:
        window = validate_window(window, "window")
    facet_opts, tags = facets.validate_options(opts.get("facets"), opts.get("tags"))
    fusion = opts.get("fusion", fuse.DEFAULT_FUSION)
    if not isinstance(fusion, str) or fusion not in fuse.FUSIONS:
        raise invalid_params(
            f"fusion must be one of {', '.join(fuse.FUSIONS)}", field="fusion", value=fusion
        )
    return SearchOptions(limit, stages, paths, demote, window, facet_opts, tags, fusion)


# -- lexical stage -----------------------------------------------------------------------------


def lexical_candidates(
    conn,
    store: Store,
    lexical: LexicalIndex,
    ws: Workspace,
    query: ParsedQuery,
    allowed: facets.DocumentSet | None = None,
    need: int = RETRIEVER_TOP,
) -> tuple[list[tuple[int, int]], bool, list[float]]:
    """Visible (chunk_id, document_id) best first: all-words matches, then any-word ones.

    `allowed`: the documents a filter keeps (None: all), applied inside the Tantivy query.
    Reads twice what it needs, then up to MAX_READ when invisible chunks starve the read.
    Returns (rows, truncated, their BM25 scores).
    """
    rows: list[tuple[int, int]] = []
    scores: list[float] = []
    seen: set[int] = set()
    truncated = False
    restrict = None
    if allowed is not None:
        if not allowed.size:
            return [], False, []
        if allowed.keep is not None:
            restrict = lexical.only_documents(keep=sorted(allowed.keep))
        else:
            restrict = lexical.only_documents(drop=sorted(allowed.drop or ()))
    for all_words in (True, False):
        q = lexical.build(query, all_words=all_words, restrict=restrict)
        if q is None:
            break
        read = need * 2
        while True:
            pairs = lexical.search(q, read)
            fresh = list(dict.fromkeys(cid for cid, _ in pairs if cid not in seen))
            visible = store.visible_chunks(conn, ws.id, fresh)
            bm25 = dict(pairs)
            got = [(cid, visible[cid]) for cid in fresh if cid in visible]
            short = len(rows) + len(got) < need
            filled = len(pairs) >= read
            if not short or not filled or read >= MAX_READ:
                truncated = truncated or (short and filled)
                break
            read = MAX_READ
        rows.extend(got)
        scores.extend(bm25[cid] for cid, _ in got)
        seen.update(cid for cid, _ in got)
        if len(rows) >= need:
            break
    return rows[:need], truncated, scores[:need]


# -- snippets ----------------------------------------------------------------------------------

_WORD = re.compile(r"\w+")


class TermMatcher:
    """Which words of a text match the query: stemmed words, or the trailing prefix."""

    def __init__(self, query: ParsedQuery) -> None:
        self.matches = _term_matcher(query)
        heads = _heads(query)
        # Candidate words start with a stem's first letters; only those reach the analyzer.
        self.candidates = (
            re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(heads))) + r")\w*", re.I)
            if heads
            else None
        )

    def spans(self, text: str, start: int = 0, end: int | None = None):
        if self.candidates is None:
            return
        for m in self.candidates.finditer(text, start, len(text) if end is None else end):
            word = _WORD.match(text, m.start())
            if word and self.matches(word.group()):
                yield word.start(), word.end()


def _heads(query: ParsedQuery) -> set[str]:
    stems: set[str] = set()
    for item in query.items:
        stems.update(analyze(item.text))
        if item.prefix:
            stems.update(UNSTEMMED.analyze(item.text)[-1:])
    # A Porter stem keeps the start of its word (it rewrites endings), so these must match.
    return {t[: min(3, max(1, len(t) - 1))] for t in stems}


def _term_matcher(query: ParsedQuery) -> Callable[[str], bool]:
    """Memoised per word: the same words recur across the hits of one answer."""
    stems: set[str] = set()
    prefixes: list[str] = []
    for item in query.items:
        stems.update(analyze(item.text))
        if item.prefix:
            prefixes.extend(UNSTEMMED.analyze(item.text)[-1:])
    memo: dict[str, bool] = {}

    def matches(word: str) -> bool:
        key = word.lower()
        hit = memo.get(key)
        if hit is None:
            hit = any(t in stems for t in STEMMED.analyze(key)) or any(
                r.startswith(p) for r in UNSTEMMED.analyze(key) for p in prefixes
            )
            memo[key] = hit
        return hit

    return matches


def make_snippet(text: str, terms: TermMatcher) -> tuple[str, list[list[int]]]:
    """~220 characters around the first matched word, whitespace collapsed, with highlights."""
    lines = text.split("\n")
    if len(lines) > 1 and lines[0].lstrip().startswith("#") and any(s.strip() for s in lines[1:]):
        text = "\n".join(lines[1:])  # the heading is already in the breadcrumb
    flat = " ".join(text.split())
    first = next(terms.spans(flat), None)
    start = 0
    if first is not None and first[0] > SNIPPET_CHARS // 3:
        start = flat.rfind(" ", 0, first[0] - SNIPPET_CHARS // 4) + 1
    end = min(len(flat), start + SNIPPET_CHARS)
    if end < len(flat):
        cut = flat.rfind(" ", start, end)
        end = cut if cut > start else end
    snippet = ("…" if start else "") + flat[start:end] + ("…" if end < len(flat) else "")
    shift = (1 if start else 0) - start
    highlights = [[a + shift, b + shift] for a, b in terms.spans(flat, start, end) if b <= end]
    return snippet, highlights


# -- the pipeline ------------------------------------------------------------------------------


def _fuse(
    conn, ws: Workspace, query: ParsedQuery, options: SearchOptions, ranked, signals
) -> tuple[list[fuse.Fused], dict[int, int], dict[str, Any]]:
    """RRF (plain, or weighted by each stage's confidence), boosts, the per-document cap,
    superseded demotion (spec §4).

    Returns the hits, {chunk_id: successor document id} for demoted ones, and the fusion record
    (method, k, the weights that ran).
    """
    stages = [stage for stage, _ in ranked]
    if options.fusion == "confidence" and stages == ["lexical", "semantic"]:
        weights = fuse.confidence_weights(signals.get("lexical", []), signals.get("semantic", []))
        k = fuse.CONFIDENCE_K
    else:
        weights, k = tuple(1.0 for _ in stages), fuse.RRF_K
    fusion = {
        "method": options.fusion,
        "k": k,
        "weights": {s: round(w, 4) for s, w in zip(stages, weights, strict=True)},
    }
    fused = fuse.rrf(ranked, k, weights)
    docs = sorted({f.document_id for f in fused})
    info = {
        r[0]: r
        for r in Store.in_batches(
            conn, "SELECT id, inbound, tags FROM documents WHERE id IN ({marks})", docs
        )
    }
    words = {t for item in query.items for t in analyze(item.text)}
    tagged = {d for d, r in info.items() if _has_query_tag(r[2], words)}
    fused = fuse.apply_boosts(fused, tagged, {d: r[1] for d, r in info.items()})
    fused = fuse.cap_per_document(fused)
    demote = options.demote_superseded
    if demote is None:
        demote = ws.options["demote_superseded"]
    moved: dict[int, int] = {}
    if demote:
        pairs = Store.in_batches(
            conn, "SELECT old_id, new_id FROM supersessions WHERE old_id IN ({marks})", docs
        )
        moved = fuse.demote_superseded(fused, {o: n for o, n in pairs if n in info})
    return fused, moved, fusion


def _exact_names(
    conn, ws: Workspace, query: ParsedQuery, allowed: facets.DocumentSet | None
) -> list[fuse.Fused]:
    """Documents whose title or an alias is exactly the query's words (case-insensitive), each
    as its first section, marked `exact` (issue 11: typing a document's name finds it first)."""
    key = " ".join(query.text.split()).lower()
    if not key:
        return []
    rows = conn.execute(
        "SELECT DISTINCT n.document_id FROM names n JOIN documents d ON d.id = n.document_id"
        " WHERE n.workspace_id = ? AND n.key = ? AND n.rank IN (?, ?) AND d.deleted = 0"
        " ORDER BY n.rank, d.path",
        (ws.id, key, NAME_TITLE, NAME_ALIAS),
    ).fetchall()
    out = []
    for (doc_id,) in rows:
        if allowed is not None and doc_id not in allowed:
            continue
        first = conn.execute(
            "SELECT id FROM chunks WHERE document_id = ? AND state = 1 ORDER BY ordinal LIMIT 1",
            (doc_id,),
        ).fetchone()
        if first is not None:
            out.append(fuse.Fused(first[0], doc_id, via=["exact"]))
    return out


def _has_query_tag(tags_json: str | None, words: set[str]) -> bool:
    """A tag among the query's words, stemmed (#storage matches "stored"); `a/b` counts as b."""
    for tag in json.loads(tags_json or "[]"):
        stems = analyze(tag.rsplit("/", 1)[-1])
        if stems and all(t in words for t in stems):
            return True
    return False


def run_search(
    store: Store,
    lexical: LexicalIndex,
    ws: Workspace,
    text: Any,
    opts: Any,
    semantic: SemanticPlan,
    cancel: CancelToken | None = None,
    rank: RankPlan | None = None,
) -> dict[str, Any]:
    """Run the stages; `cancel` is checked between them, so superseded work stops early."""
    check = cancel.check if cancel is not None else (lambda: None)
    if not isinstance(text, str):
        raise invalid_params("query must be a string", field="query")
    options = parse_options(opts)
    started = time.perf_counter()
    with store.snapshot() as conn:
        schema = facets.stored_schema(conn, ws.id)
    query = parse_query(text, schema.is_facet)
    flt = facets.build_filter(
        schema,
        [(t.field, t.value, t.negated) for t in query.facets],
        options.facets,
        options.tags,
        options.paths,
    )
    wordless = not any(analyze(item.text) for item in query.items)  # "", "*** !!!"
    if wordless and flt.active:
        return _browse(store, ws, text, options, flt, semantic, rank, started)
    requested = options.stages
    skipped: dict[str, str] = {}
    use_semantic = "semantic" in requested
    if use_semantic and semantic.embedder is None:
        if "lexical" not in requested:
            raise RpcError(
                semantic.code or UNSUPPORTED,
                f"semantic search unavailable: {semantic.reason}",
                {"stage": "semantic", "reason": semantic.reason},
            )
        skipped["semantic"] = semantic.reason
        use_semantic = False
    rank = rank or RankPlan(None, {}, NO_RANKER)
    use_rank = "rerank" in requested and rank.ranker is not None
    if "rerank" in requested and rank.ranker is None:
        skipped["rerank"] = rank.reason or NO_RANKER
    window = options.window or rank.window
    timings: dict[str, float] = {}
    qvec = None
    check()
    if use_semantic and not wordless:
        t0 = time.perf_counter()
        try:
            qvec = semantic.embedder.embed([query.text])[0]
        except Exception as exc:  # a provider error: answer lexically and say so
            reason = f"embedding the query failed: {getattr(exc, 'message', exc)}"
            if "lexical" not in requested:
                raise RpcError(EMBED_FAILED, reason, {"stage": "semantic"}) from None
            skipped["semantic"] = reason
            use_semantic = False
        timings["embed_ms"] = round((time.perf_counter() - t0) * 1000, 2)
    performed: list[str] = []
    ranked: list[tuple[str, list[tuple[int, int]]]] = []
    signals: dict[str, list[float]] = {}  # each stage's scores, best first
    truncated = False
    with store.snapshot() as conn:
        epochs = read_epochs(conn, ws.id)
        if epochs is None:
            raise invalid_params(f"unknown workspace {ws.name!r}", workspace=ws.name)
        check()
        allowed = None
        if flt.active:
            t0 = time.perf_counter()
            allowed = flt.select(conn, ws.id)
            timings["filter_ms"] = round((time.perf_counter() - t0) * 1000, 2)
        if "lexical" in requested:
            t0 = time.perf_counter()
            lexical.refresh(epochs[0])
            found, cut, signals["lexical"] = lexical_candidates(
                conn, store, lexical, ws, query, allowed
            )
            truncated |= cut
            ranked.append(("lexical", found))
            performed.append("lexical")
            timings["lexical_ms"] = round((time.perf_counter() - t0) * 1000, 2)
        if use_semantic:
            check()
            t0 = time.perf_counter()
            semantic.signs.refresh(conn, ws.id, semantic.model_fp, epochs[1])
            semantic.coverage = semantic_coverage(conn, store, ws, semantic.model_fp, epochs)
            found = []
            if qvec is not None:
                embedded, total = semantic.coverage
                scored, cut = semantic_candidates(
                    conn,
                    store,
                    semantic.signs,
                    ws,
                    semantic.model_fp,
                    qvec,
                    allowed,
                    complete=embedded >= total,
                    chunks=total,
                )
                found = [(c, d) for c, d, _ in scored]
                signals["semantic"] = [x for _, _, x in scored]
                truncated |= cut
            ranked.append(("semantic", found))
            performed.append("semantic")
            timings["semantic_ms"] = round((time.perf_counter() - t0) * 1000, 2)
        elif semantic.embedder is not None and semantic.model_fp is not None:
            # Not asked for (a picker's box unchecked): still say how complete the vectors are.
            semantic.coverage = semantic_coverage(conn, store, ws, semantic.model_fp, epochs)
        check()
        fused, moved, fusion = _fuse(conn, ws, query, options, ranked, signals)
        exact = _exact_names(conn, ws, query, allowed) if "lexical" in performed else []
        # A few spare hits stand in for those whose file changed since it was indexed; the
        # ranker reads its whole window.
        depth = options.limit + min(options.limit, STALE_SPARE)
        fused = fused[: max(depth, window) if use_rank else depth]
        rows = store.chunk_rows(conn, [f.chunk_id for f in fused] + [f.chunk_id for f in exact])
        successor_paths = dict(
            Store.in_batches(
                conn,
                "SELECT id, path FROM documents WHERE id IN ({marks})",
                sorted(set(moved.values())),
            )
        )
    check()
    stale = stale_documents(ws, rows.values())
    fused = [f for f in fused if rows[f.chunk_id]["path"] not in stale]
    rank_scores: dict[int, float] = {}
    if use_rank:
        t0 = time.perf_counter()
        texts = [f"{rows[f.chunk_id]['breadcrumb']}\n{rows[f.chunk_id]['text']}" for f in fused]
        scores, rank_record = rerank(rank, query.text, texts, window)
        if scores is not None:
            top = fused[: len(scores)]
            order = sorted(range(len(top)), key=lambda i: (-float(scores[i]), top[i].chunk_id))
            for i in order:
                top[i].via = [*top[i].via, "rank"]
                rank_scores[top[i].chunk_id] = float(scores[i])
            fused = [top[i] for i in order] + fused[len(top) :]
            performed.append("rerank")
        else:
            skipped["rerank"] = rank_record["error"]
        timings["rank_ms"] = round((time.perf_counter() - t0) * 1000, 2)
    elif rank.ranker is not None:  # a ranker is there, but this search left it out
        rank_record = {"state": "skipped", "model": rank.ranker.name, "error": NOT_REQUESTED}
    else:  # why nothing was re-ranked, whether or not rerank was asked for: pickers show it
        rank_record = {"state": "off", "model": "", "error": rank.reason or NO_RANKER}
    if exact:  # a document's exact title or alias: first, before every fused hit
        found = {f.chunk_id: f for f in fused}
        pinned = []
        for e in exact:
            if rows[e.chunk_id]["path"] in stale:
                continue
            f = found.get(e.chunk_id)
            if f is not None:
                f.via = [*f.via, "exact"]
            pinned.append(f or e)
        docs = {e.document_id for e in pinned}
        pinned_ids = {e.chunk_id for e in pinned}
        own = [f for f in fused if f.document_id in docs and f.chunk_id not in pinned_ids]
        rest = [f for f in fused if f.document_id not in docs]
        fused = fuse.cap_per_document(pinned + own + rest)  # the pin counts toward its cap
    fused = fused[: options.limit]
    active = sum(w for s, w in fusion["weights"].items() if s in performed)
    terms = TermMatcher(query)
    hits = []
    for f in fused:
        relevance = (
            1.0 if "exact" in f.via else round(fuse.relevance(f.score, active, fusion["k"]), 4)
        )
        hit = _hit(rows[f.chunk_id], terms, relevance, f.score)
        hit["via"] = f.via
        if f.chunk_id in moved:
            hit["superseded_by"] = successor_paths.get(moved[f.chunk_id], "")
        if f.chunk_id in rank_scores:
            hit["rank_score"] = round(rank_scores[f.chunk_id], 6)
        hits.append(hit)
    retrievers = [s for s in performed if s != "rerank"]
    if retrievers == ["lexical", "semantic"]:
        mode_used = "hybrid"
    else:
        mode_used = retrievers[0] if retrievers else "none"
    timings["total_ms"] = round((time.perf_counter() - started) * 1000, 2)
    return {
        "workspace": ws.name,
        "root": str(ws.root),
        "query": text,
        "hits": hits,
        "mode_used": mode_used,
        **_semantic_report(semantic),
        "rank": rank_record,
        "stages": {"requested": requested, "performed": performed, "skipped": skipped},
        "fusion": fusion,
        "filter": flt.describe(),
        "truncated": truncated,
        "stale": sorted(stale),
        "took_ms": timings["total_ms"],
        "timings": timings,
    }


def _hit(r, terms: TermMatcher, relevance: float, score: float) -> dict[str, Any]:
    snippet, highlights = make_snippet(r["text"], terms)
    return {
        "path": r["path"],
        "title": r["title"],
        "breadcrumb": r["breadcrumb"],
        "snippet": snippet,
        "highlights": highlights,
        "byte_start": r["byte_start"],
        "byte_end": r["byte_end"],
        "line_start": r["line_start"],
        "line_end": r["line_end"],
        "relevance": relevance,
        "score": round(score, 6),
        "via": [],
        "generation": r["generation"],
        "chunk_id": r["id"],
        "kind": r["kind"],
    }


def _semantic_report(semantic: SemanticPlan) -> dict[str, Any]:
    if semantic.state:
        state = semantic.state
    elif semantic.coverage is None:
        state = "off" if semantic.embedder is None else "partial"
    else:
        state = "ready" if semantic.coverage[0] >= semantic.coverage[1] else "partial"
    return {
        "semantic": state,
        "semantic_coverage": (
            {"embedded": semantic.coverage[0], "total": semantic.coverage[1]}
            if semantic.coverage
            else None
        ),
        "model": semantic.embedder.name if semantic.embedder is not None else "",
    }


def _browse(
    store: Store,
    ws: Workspace,
    text: str,
    options: SearchOptions,
    flt: facets.FacetFilter,
    semantic: SemanticPlan,
    rank: RankPlan | None,
    started: float,
) -> dict[str, Any]:
    """A query of filters only (spec §6): the matching files in path order, each shown by its
    first section; nothing is embedded or ranked."""
    t0 = time.perf_counter()
    with store.snapshot() as conn:
        take, matched = flt.browse(conn, ws.id, options.limit + min(options.limit, STALE_SPARE))
        epochs = read_epochs(conn, ws.id)
        first = [
            r[0]
            for r in Store.in_batches(
                conn,
                "SELECT id FROM (SELECT c.id, c.document_id, row_number() OVER"
                " (PARTITION BY c.document_id ORDER BY c.ordinal) AS n FROM chunks c"
                " WHERE c.document_id IN ({marks}) AND c.state = 1) WHERE n = 1",
                take,
            )
        ]
        rows = store.chunk_rows(conn, first)
        if semantic.embedder is not None and semantic.model_fp is not None and epochs:
            semantic.coverage = semantic_coverage(conn, store, ws, semantic.model_fp, epochs)
    stale = stale_documents(ws, rows.values())
    order = sorted((r for r in rows.values() if r["path"] not in stale), key=lambda r: r["path"])
    terms = TermMatcher(ParsedQuery(text))
    hits = []
    for r in order[: options.limit]:
        hit = _hit(r, terms, 0.0, 0.0)
        hit["via"] = ["facet"]
        hits.append(hit)
    if rank is not None and rank.ranker is not None:
        rank_record = {"state": "skipped", "model": rank.ranker.name, "error": FACET_ONLY}
    else:
        rank_record = {"state": "off", "model": "", "error": (rank and rank.reason) or NO_RANKER}
    total_ms = round((time.perf_counter() - started) * 1000, 2)
    return {
        "workspace": ws.name,
        "root": str(ws.root),
        "query": text,
        "hits": hits,
        "mode_used": "facet",
        **_semantic_report(semantic),
        "rank": rank_record,
        "stages": {
            "requested": options.stages,
            "performed": [],
            "skipped": {s: FACET_ONLY for s in options.stages},
        },
        "fusion": None,
        "filter": flt.describe(),
        "matched": matched,
        "truncated": False,
        "stale": sorted(stale),
        "took_ms": total_ms,
        "timings": {"filter_ms": round((time.perf_counter() - t0) * 1000, 2), "total_ms": total_ms},
    }


def stale_documents(ws: Workspace, rows) -> set[str]:
    """Paths whose file is gone or differs from what was indexed, so no hit points at a
    missing file or a span that moved. A stat per document; the hash only when the stat
    differs (a `touch` or a checkout that rewrote identical bytes is still fresh)."""
    stale: set[str] = set()
    seen: set[str] = set()
    for r in rows:
        path = r["path"]
        if path in seen:
            continue
        seen.add(path)
        full = os.path.join(ws.root, *path.split("/"))
        try:
            info = os.stat(full)
        except OSError:
            stale.add(path)
            continue
        if info.st_size == r["size"] and info.st_mtime_ns == r["mtime_ns"]:
            continue
        try:
            with open(full, "rb") as fh:
                same = (
                    info.st_size == r["size"]
                    and hashlib.sha256(fh.read()).hexdigest() == r["content_hash"]
                )
        except OSError:
            same = False
        if not same:
            stale.add(path)
    return stale


@dataclass
class _Coverage:
    epochs: tuple[int, int]
    max_id: int  # the highest visible chunk id checked
    missing: set[int]  # visible chunks without a vector
    total: int
    vectors: int  # this model's vectors in the workspace: fewer means some were deleted


_COVERAGE: dict[tuple[str, int, str], _Coverage] = {}

_MISSING = (
    "SELECT c.id FROM chunks c LEFT JOIN embeddings e ON e.workspace_id = c.workspace_id"
    " AND e.model_fp = ? AND e.text_hash = c.text_hash"
    " WHERE c.workspace_id = ? AND c.state = 1 AND e.id IS NULL"
)


def read_epochs(conn, ws_id: int) -> tuple[int, int] | None:
    """(lexical_epoch, vector_epoch): what cached views of a workspace are keyed by."""
    row = conn.execute(
        "SELECT lexical_epoch, vector_epoch FROM workspaces WHERE id = ?", (ws_id,)
    ).fetchone()
    return (row[0], row[1]) if row is not None else None


def semantic_coverage(
    conn, store: Store, ws: Workspace, model_fp: str, epochs=None
) -> tuple[int, int]:
    """(embedded, total) visible chunks, kept incrementally: after a change only the chunks
    published since (their ids are higher) and those still missing a vector are looked at,
    not the whole workspace (cpp-docs: ~350 ms for a full count on 2 cores)."""
    key = (str(store.path), ws.id, model_fp)
    epochs = read_epochs(conn, ws.id) if epochs is None else (epochs[0], epochs[1])
    c = _COVERAGE.get(key)
    if c is not None and c.epochs == epochs:
        return c.total - len(c.missing), c.total
    max_id = conn.execute(
        "SELECT coalesce(max(id), 0) FROM chunks WHERE workspace_id = ? AND state = 1", (ws.id,)
    ).fetchone()[0]
    vectors = conn.execute(
        "SELECT count(*) FROM embeddings WHERE workspace_id = ? AND model_fp = ?",
        (ws.id, model_fp),
    ).fetchone()[0]
    # Vectors normally only arrive (collection removes texts no chunk uses): a first look,
    # ids that went back (a rebuilt store) or vectors that went away mean a full count.
    if c is None or max_id < c.max_id or vectors < c.vectors:
        missing = {r[0] for r in conn.execute(_MISSING, (model_fp, ws.id))}
    else:
        missing = {
            r[0] for r in conn.execute(_MISSING + " AND c.id > ?", (model_fp, ws.id, c.max_id))
        }
        still = sorted(c.missing)
        for start in range(0, len(still), 900):
            part = still[start : start + 900]
            marks = ",".join("?" * len(part))
            missing.update(
                r[0]
                for r in conn.execute(
                    _MISSING + f" AND c.id IN ({marks})", (model_fp, ws.id, *part)
                )
            )
    total = conn.execute(
        "SELECT count(*) FROM chunks WHERE workspace_id = ? AND state = 1", (ws.id,)
    ).fetchone()[0]
    _COVERAGE[key] = _Coverage(epochs, max_id, missing, total, vectors)
    return total - len(missing), total


def semantic_missing(conn, store: Store, ws: Workspace, model_fp: str) -> set[int]:
    """The visible chunk ids without a vector in this snapshot (from the kept coverage)."""
    semantic_coverage(conn, store, ws, model_fp)
    return set(_COVERAGE[(str(store.path), ws.id, model_fp)].missing)

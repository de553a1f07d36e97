"""Related sections: the neighbours of one section (or a whole document) across the workspace,
from the vectors already stored and the link graph; nothing is embedded at query time.

Each neighbour says why it is related: `similar` (its stored vector is near; `similarity` is the
absolute cosine), `links here` (its document links to this one: the section holding the link is
shown), `linked from here` (this document links to it) and `shares links` (both link to the same
documents). One section per document, the section's own document left out unless asked for.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autodoc import store as sql
from autodoc.parse.query_parser import parse_query
from autodoc.query.snippets import TermMatcher, make_snippet
from autodoc.store import Store, Workspace
from autodoc.vectors.nearest import SemanticPlan
from autodoc.wire import protocol
from autodoc.wire.errors import invalid_params, options_object

DEFAULT_LIMIT = 10
MAX_LIMIT = 50
LINK_BONUS = 0.15  # each direction of a link between the two documents
SHARED_BONUS = 0.05  # each link target both documents have, up to SHARED_MAX
SHARED_MAX = 3
SHARED_READ = 50  # documents read for shared links, most shared first


@dataclass
class _Neighbour:
    document_id: int
    chunk_id: int = 0
    similarity: float | None = None
    reasons: list[protocol.RelatedReason] = field(default_factory=list)
    shared: int = 0

    @property
    def score(self) -> float:
        links = sum(r in ("links here", "linked from here") for r in self.reasons)
        return (
            (self.similarity or 0.0)
            + LINK_BONUS * links
            + SHARED_BONUS * min(self.shared, SHARED_MAX)
        )


def parse_request(path: Any, line: Any, opts: Any) -> tuple[str, int | None, int, bool]:
    """(path, line or None, limit, include_self), or -32602 naming the bad field."""
    if not isinstance(path, str) or not path.strip():
        raise invalid_params("path must be a root-relative document path", field="path")
    if line is not None and (isinstance(line, bool) or not isinstance(line, int) or line < 1):
        raise invalid_params("line must be a 1-based line number or null", field="line")
    opts = options_object(opts, ("limit", "include_self"))
    limit = opts.get("limit", DEFAULT_LIMIT)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise invalid_params(f"limit must be an integer 1..{MAX_LIMIT}", field="limit")
    include_self = opts.get("include_self", False)
    if not isinstance(include_self, bool):
        raise invalid_params("include_self must be true or false", field="include_self")
    rel = path.strip()
    return (rel[2:] if rel.startswith("./") else rel), line, limit, include_self


def related(
    store: Store, ws: Workspace, plan: SemanticPlan, path: Any, line: Any = None, opts: Any = None
) -> protocol.RelatedAnswer:
    started = time.perf_counter()
    rel, at, limit, include_self = parse_request(path, line, opts)
    with store.snapshot() as conn:
        doc_id = sql.live_document_id(conn, ws.id, rel)
        if doc_id is None:
            raise invalid_params(
                f"{rel!r} is not a document of workspace {ws.name!r}", field="path"
            )
        own = sql.document_chunk_ids(conn, doc_id)
        if at is not None:
            section = sql.section_at(conn, doc_id, at)
            asked = [section[0]] if section is not None else []
        else:
            asked = own
        neighbours: dict[int, _Neighbour] = {}
        skip = set(asked) | (set() if include_self else set(own))
        state = _similar(conn, store, ws, plan, asked, skip, limit, neighbours)
        _linked(conn, doc_id, neighbours)
        ranked = sorted(neighbours.values(), key=lambda n: (-n.score, n.document_id))
        ranked = [n for n in ranked if n.chunk_id][:limit]
        rows = store.chunk_rows(conn, [n.chunk_id for n in ranked] + asked)
    hits = [_hit(rows[n.chunk_id], n) for n in ranked]
    first = rows[asked[0]] if asked else None
    last = rows[asked[-1]] if asked else None
    return protocol.RelatedAnswer(
        workspace=ws.name,
        root=str(ws.root),
        path=rel,
        line_start=first["line_start"] if first else 1,
        line_end=last["line_end"] if last else 1,
        breadcrumb=_shown(first, whole=at is None),
        hits=hits,
        semantic=state,
        took_ms=round((time.perf_counter() - started) * 1000, 2),
    )


def _shown(row, *, whole: bool) -> str:
    """What the answer names as asked about: the section's breadcrumb, or the title."""
    if row is None:
        return ""
    return row["title"] if whole else row["breadcrumb"]


def _similar(
    conn,
    store: Store,
    ws: Workspace,
    plan: SemanticPlan,
    asked: list[int],
    skip: set[int],
    limit: int,
    out: dict[int, _Neighbour],
) -> str:
    """The sections nearest the asked ones' mean stored vector, one per document (the `skip`
    chunks left out); returns the semantic state the answer reports."""
    if plan.embedder is None or plan.model_fp is None or plan.signs is None:
        return f"off: {plan.reason}" if plan.reason else "off"
    if not asked:
        return "not embedded"
    blobs = sql.chunk_vectors(conn, plan.model_fp, asked)
    if not blobs:
        return "not embedded"
    vectors = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1)
    qvec = vectors.mean(axis=0)
    norm = float(np.linalg.norm(qvec))
    if norm == 0.0:
        return "not embedded"
    qvec = (qvec / norm).astype(np.float32)
    found, complete = plan.nearest_now(conn, store, ws, qvec, limit * 3 + len(skip))
    for chunk_id, document_id, cosine in found:
        if chunk_id in skip or document_id in out:
            continue
        out[document_id] = _Neighbour(document_id, chunk_id, round(cosine, 4), ["similar"])
    return "ready" if complete else "partial"


def _linked(conn, doc_id: int, out: dict[int, _Neighbour]) -> None:
    """Links both ways and shared link targets, as reasons (and, for documents meaning did not
    bring, the section to show: where the link is, or the document's first)."""
    sections: dict[int, int] = {}
    for source, line in sql.backlinks(conn, doc_id):
        n = out.setdefault(source, _Neighbour(source))
        n.reasons.append("links here")
        section = sql.section_at(conn, source, line)
        if section is not None:
            sections[source] = section[0]  # the place that links here
    for target in sql.outlinks(conn, doc_id):
        out.setdefault(target, _Neighbour(target)).reasons.append("linked from here")
    for other, shared in sql.shared_link_counts(conn, doc_id, SHARED_READ):
        n = out.setdefault(other, _Neighbour(other))
        n.shared = shared
        n.reasons.append("shares links")
    missing = [d for d, n in out.items() if not n.chunk_id and d not in sections]
    firsts = sql.first_live_chunk_of(conn, missing) if missing else {}
    for d, n in out.items():
        if d in sections and (not n.chunk_id or "similar" not in n.reasons):
            n.chunk_id = sections[d]
        elif not n.chunk_id:
            n.chunk_id = firsts.get(d, 0)


_NO_TERMS = TermMatcher(parse_query(""))  # a snippet from the section's start, nothing marked


def _hit(row, n: _Neighbour) -> protocol.RelatedHit:
    snippet, _ = make_snippet(row["text"], _NO_TERMS)
    return protocol.RelatedHit(
        path=row["path"],
        title=row["title"],
        breadcrumb=row["breadcrumb"],
        snippet=snippet,
        line_start=row["line_start"],
        line_end=row["line_end"],
        line=sql.chunk_place(row)[0],
        chunk_id=row["id"],
        score=round(n.score, 4),
        similarity=n.similarity,
        reasons=n.reasons,
        shared_links=n.shared,
    )

"""`search.find`: names looked up in the name index, exact → prefix → partial, each match with
the section around it. Agents and people often know a name, not words about it:
`placeOrderRequest`, `strcpy_s`, `CWnd`; ranking by BM25 or cosine is the wrong tool for that, a
dictionary the right one (`parse/names.py` says how names are keyed).
"""

from __future__ import annotations

from typing import Any, Literal

from autodoc import store as sql
from autodoc.parse.names import KIND_NAMES, query_key
from autodoc.wire import protocol
from autodoc.wire.errors import invalid_params, options_object

CANDIDATES = 5000  # key rows read per lookup; past this the answer says `truncated`
DEFAULT_LIMIT = 20
MAX_LIMIT = 500
MATCH_NAMES: tuple[Literal["exact", "prefix", "partial"], ...] = ("exact", "prefix", "partial")


# -- reading --------------------------------------------------------------------------------


def parse_options(opts: Any) -> tuple[bool, int]:
    opts = options_object(opts, ("exact", "limit"))
    exact = opts.get("exact", False)
    if not isinstance(exact, bool):
        raise invalid_params("exact must be true or false", field="exact")
    limit = opts.get("limit", DEFAULT_LIMIT)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise invalid_params(f"limit must be an integer from 1 to {MAX_LIMIT}", field="limit")
    return exact, limit


def find(conn, ws_id: int, name: Any, *, exact: bool, limit: int):
    """Names that match and the documents holding them, a row per name and document: exact →
    prefix → partial, then title → alias → heading → identifier, shorter names first, then
    names from shorter titles and headings.
    Returns (rows, truncated); a row is (tier, kind, name, document_id, line)."""
    if not isinstance(name, str) or not name.strip():
        raise invalid_params("name must be a non-empty string", field="name")
    key = query_key(name)
    if not key:
        raise invalid_params("name has no letters or digits to look up", field="name")
    return sql.find_names(conn, ws_id, key, exact=exact, limit=limit, cap=CANDIDATES)


def answer(
    conn, ws_id: int, name: Any, opts: Any = None
) -> tuple[list[protocol.FindMatch], bool, bool]:
    """`search.find`'s (matches, exact, truncated): each match with its document and the
    section around it."""
    exact, limit = parse_options(opts)
    rows, truncated = find(conn, ws_id, name, exact=exact, limit=limit)
    matches = []
    for tier, kind, matched, doc_id, line in rows:
        path, title = sql.document_title(conn, doc_id)
        section = sql.section_at(conn, doc_id, line)
        match = protocol.FindMatch(
            name=matched,
            match=MATCH_NAMES[tier],
            kind=KIND_NAMES[kind],
            path=path,
            title=title,
            line=line,
        )
        if section is not None:
            _, match["line_start"], match["line_end"], match["breadcrumb"] = section
        matches.append(match)
    return matches, exact, truncated

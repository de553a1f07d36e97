"""Facet values at index time: each document's values of the schema's fields, written when it
is published, and every document's again from the stored frontmatter when the schema changes
(no file is read again).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from autodoc import store
from autodoc.parse.frontmatter_schema import Schema, document_facets


def write_facets(conn, ws_id: int, schema: Schema, docs: Iterable[tuple[int, str, Any, Any]]):
    """Replace the facet rows of these documents: (id, path, meta, tags) with meta and tags as
    dicts/lists or their JSON."""
    rows = []
    ids = []
    for doc_id, path, meta, tags in docs:
        ids.append(doc_id)
        meta = json.loads(meta or "{}") if isinstance(meta, str) or meta is None else meta
        tags = json.loads(tags or "[]") if isinstance(tags, str) or tags is None else tags
        rows += [(ws_id, doc_id, f, v) for f, v in document_facets(schema, path, meta, tags)]
    store.replace_facets(conn, ws_id, ids, rows)


def rebuild_facets(conn, ws_id: int, schema: Schema) -> int:
    """Every document's facets again, from the frontmatter kept in SQLite (a schema change)."""
    store.clear_facets(conn, ws_id)
    docs = store.live_document_frontmatter(conn, ws_id)
    write_facets(conn, ws_id, schema, docs)
    return len(docs)

"""Links as an editor follows them: the target of the link under the cursor (definition, hover),
the places that link to a document or a heading (references), and every link of a document with
its target (document links).

A link resolves as the indexer resolved it (the `links` table's target, so an editor and
`autodoc check` agree); a link the index has not seen yet (an unsaved edit) is looked up by the
same key. A heading (`[[note#Fusion]]`, `note.md#known-gaps`) is found by its text or its slug.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from autodoc import store as sql
from autodoc.parse.chunking import BREADCRUMB_SEP
from autodoc.parse.document import Link, links_on_line
from autodoc.parse.names import link_key
from autodoc.store import Store, Workspace

HOVER_LINES = 6  # of the target section, after its heading
_NOT_IN_SLUG = re.compile(r"[^\w\- ]")
_DASHES = re.compile(r"-{2,}")


@dataclass(frozen=True)
class Target:
    path: str  # root-relative
    line: int  # 1-based: the heading's line, or 1 for the document
    title: str
    heading: str  # "" for the document
    chunk_id: int  # the section linked to (0: the document has none), for `preview`


def link_at(text: str, character: int) -> tuple[int, int, Link] | None:
    """The link on this line whose text holds `character` (0-based), as (start, end, link)."""
    for start, end, link in links_on_line(text):
        if start <= character < end:
            return start, end, link
    return None


def resolve(conn, ws: Workspace, source_rel: str, line: int, link: Link) -> Target | None:
    """Where a link of `source_rel` at `line` (1-based) leads, None when it leads nowhere."""
    doc_id = sql.live_document_id(conn, ws.id, source_rel)
    target_id = None
    if doc_id is not None:
        for _, kind, target, _heading, found in sql.links_on(conn, doc_id, line):
            if kind == link.kind and target == link.target:
                target_id = found
                break
    if target_id is None:  # not indexed yet: the key the indexer would give it
        target_id = sql.document_by_key(conn, ws.id, link_key(source_rel, link.kind,
                                                                  link.target))  # fmt: skip
    return None if target_id is None else target_of(conn, target_id, link.heading)


def target_of(conn, doc_id: int, heading: str) -> Target:
    """The document, at the section whose heading the link names (text or slug) if any."""
    path, title = sql.document_title(conn, doc_id)
    sections = sql.document_sections(conn, doc_id)
    want = anchor_key(heading) if heading else ""
    for start, _end, crumb, chunk_id in sections:
        last = crumb.rsplit(BREADCRUMB_SEP, 1)[-1]
        if want and anchor_key(last) == want:
            return Target(path, start, title, last, chunk_id)
    return Target(path, 1, title, "", sections[0][3] if sections else 0)


def preview(conn, target: Target) -> str:
    """The first lines of the section linked to, its heading left out (hover reads them)."""
    rows = Store.chunk_rows(conn, [target.chunk_id]) if target.chunk_id else {}
    text = rows[target.chunk_id]["text"] if rows else ""
    lines = [ln for ln in text.split("\n") if ln.strip()]
    if lines and lines[0].lstrip().startswith("#"):
        lines = lines[1:]
    return "\n".join(lines[:HOVER_LINES])


def references(conn, doc_id: int, heading: str | None) -> list[tuple[str, int]]:
    """(path, line) of every link to the document; with `heading`, only those to it (a link
    to the document itself counts for its title, `heading` "")."""
    out = []
    want = anchor_key(heading) if heading else None
    for path, line, linked in sql.links_into(conn, doc_id):
        if want is None or anchor_key(linked) == want:
            out.append((path, line))
    return out


def document_links(
    conn, ws: Workspace, rel: str, lines: list[str]
) -> list[tuple[int, int, int, Target | None]]:
    """(line index, start, end, target or None) of each link the index holds for the document,
    placed on its line of `lines` (the editor's text)."""
    doc_id = sql.live_document_id(conn, ws.id, rel)
    if doc_id is None:
        return []
    out = []
    places: dict[tuple[int, str], Target] = {}  # a target read once however often linked
    targets: dict[tuple[int, str], int | None] = {}
    for line, kind, target, _heading, found in sql.links_on(conn, doc_id):
        targets[(line, f"{kind}:{target}")] = found
    for index in sorted({line - 1 for line, _ in targets}):
        if not 0 <= index < len(lines):
            continue
        for start, end, link in links_on_line(lines[index]):
            key = (index + 1, f"{link.kind}:{link.target}")
            if key in targets:
                found = targets[key]
                place = None
                if found is not None:
                    if (found, link.heading) not in places:
                        places[(found, link.heading)] = target_of(conn, found, link.heading)
                    place = places[(found, link.heading)]
                out.append((index, start, end, place))
    return out


def slug(text: str) -> str:
    """A heading's anchor as GitHub (and GitLab, Pandoc, MkDocs) writes it: lower case,
    punctuation dropped, each space a `-` (`What's new?` → `whats-new`, `C & Rust` →
    `c--rust`). What a Markdown link to a heading is written with."""
    return _NOT_IN_SLUG.sub("", text.strip().lower()).replace(" ", "-")


def anchor_key(text: str) -> str:
    """What a link's heading and a heading are compared by: the slug with each run of `-`
    one, so `#c--rust`, `#c-rust`, `[[note#C & Rust]]` and `## C & Rust` all agree."""
    return _DASHES.sub("-", slug(text)).strip("-")

"""Links as an editor follows them: the target of the link under the cursor (definition, hover),
the places that link to a document or a heading (references), and every link of a document with
its target (document links).

A link resolves as the indexer resolved it (the `links` table's target, so an editor and
`autodoc check` agree); a link the index has not seen yet (an unsaved edit) is looked up by the
same key. A heading (`[[note#Fusion]]`, `note.md#known-gaps`) is found by its text or its slug.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

from autodoc import store as sql
from autodoc.files.confine import names_file, read_inside
from autodoc.links.dialect import dialect_of
from autodoc.parse.document import Link, links_on_line, without_inline_code
from autodoc.store import Store, Workspace

HOVER_LINES = 6  # of the target section, after its heading
_NOT_IN_SLUG = re.compile(r"[^\w\- ]")
_DASHES = re.compile(r"-{2,}")
_REF_OFFSET = re.compile(r",\d+$")


@dataclass(frozen=True)
class Target:
    path: str  # root-relative
    line: int  # 1-based: the heading's line, or 1 for the document
    title: str
    heading: str  # "" for the document
    chunk_id: int  # the section linked to (0: the document has none), for `preview`


def link_at(text: str, character: int, ws: Workspace) -> tuple[int, int, Link] | None:
    """The link on this line whose text holds `character` (0-based), as (start, end, link),
    read in the workspace's dialect."""
    for start, end, link in links_on_line(text, dialect_of(ws).label_first, local=True):
        if start <= character < end:
            return start, end, link
    return None


def resolve(conn, ws: Workspace, source_rel: str, line: int, link: Link) -> Target | None:
    """Where a link of `source_rel` at `line` (1-based) leads, None when it leads nowhere (a
    link to a heading of its own document, target "", leads there)."""
    doc_id = sql.live_document_id(conn, ws.id, source_rel)
    if not link.target:
        return None if doc_id is None else target_of(conn, doc_id, link.heading)
    target_id = None
    if doc_id is not None:
        for _, kind, target, _heading, found in sql.links_on(conn, doc_id, line):
            if kind == link.kind and target == link.target:
                target_id = found
                break
    if target_id is None:  # not indexed yet: the key the indexer would give it
        key, reach = dialect_of(ws).key(source_rel, link.kind, link.target, is_file(ws))
        target_id = sql.document_by_key(conn, ws.id, key, reach)
    return None if target_id is None else target_of(conn, target_id, link.heading)


def target_of(conn, doc_id: int, heading: str) -> Target:
    """The document, at the section whose heading the link names (text or slug) or at the line
    of its block (`^id`) if any; at its start when it has neither."""
    path, title = sql.document_title(conn, doc_id)
    sections = sql.document_sections(conn, doc_id)
    first_chunk = sections[0][3] if sections else 0
    place = section_of(conn, doc_id, heading) if heading else None
    if place is None:
        return Target(path, 1, title, "", first_chunk)
    return Target(path, place[0], title, place[1], place[2])


def section_of(conn, doc_id: int, heading: str) -> tuple[int, str, int] | None:
    """(1-based line, heading text, chunk id) of what a link's heading part names in the
    document: a block (`^id`), else the first heading with its words or slug; None when the
    document has no such place (a heading Obsidian nests, `A#B`, is its last part; a Dendron
    reference's range, `A:#B`, its first)."""
    kind, want = wanted_place(heading)
    if kind == "block":
        found = sql.block_place(conn, doc_id, want)
        return None if found is None else (found[0], "^" + want, found[1])
    if kind == "whole":
        return None
    for line, _level, text in sql.document_headings(conn, [doc_id])[doc_id]:
        if anchor_key(text) == want:
            section = sql.section_at(conn, doc_id, line)
            return line, text, section[0] if section is not None else 0
    return None


def wanted_place(heading: str) -> tuple[str, str]:
    """What a link's heading part asks for: ("block", id), ("heading", its anchor key) or
    ("whole", "") for Dendron's `#*` (the whole note)."""
    part = heading.strip()
    if ":#" in part:  # Dendron's note reference range, `#start:#end`: its start
        part = part.split(":#", 1)[0]
    part = _REF_OFFSET.sub("", part)  # Dendron's `#heading,1`: the heading, an offset after it
    part = part.rsplit("#", 1)[-1].strip()  # Obsidian's nested `#A#B`: the last heading
    if part.startswith("^"):
        return "block", part[1:]
    if part in ("", "*"):
        return "whole", ""
    return "heading", anchor_key(part)


def preview(conn, target: Target) -> str:
    """The first lines of the section linked to, its heading left out (hover reads them)."""
    rows = Store.chunk_rows(conn, [target.chunk_id]) if target.chunk_id else {}
    text = rows[target.chunk_id]["text"] if rows else ""
    lines = [ln for ln in text.split("\n") if ln.strip()]
    if lines and lines[0].lstrip().startswith("#"):
        lines = lines[1:]
    return "\n".join(lines[:HOVER_LINES])


@dataclass(frozen=True)
class Place:
    """A link to a document: its note, its 1-based line, and where on the line it is written
    (string offsets; 0, 0 where it is not found there: a frontmatter reference, a file changed
    since it was indexed)."""

    path: str
    line: int
    start: int = 0
    end: int = 0
    text: str = ""  # the line, for a client's units


def references(conn, ws: Workspace, doc_id: int, heading: str | None) -> list[Place]:
    """Every link to the document, placed on its line; with `heading`, only those to it (a link
    to the document itself counts for its title, `heading` "")."""
    want = anchor_key(heading) if heading else None
    rows = [
        r for r in sql.link_rows_into(conn, doc_id)
        if want is None or wanted_place(r[2]) == ("heading", want)
    ]  # fmt: skip
    label_first = dialect_of(ws).label_first
    out, texts = [], {}
    taken: dict[tuple[object, ...], int] = {}  # such links of a line already placed
    for path, line, heading_written, kind, target in rows:
        if path not in texts:
            texts[path] = _file_lines(ws, path)
        lines = texts[path]
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        written = (kind, target, heading_written)
        spans = [(s, e) for s, e, ln in links_on_line(without_inline_code(text), label_first)
                 if (ln.kind, ln.target, ln.heading) == written]  # fmt: skip
        n = taken.get((path, line, *written), 0)
        taken[(path, line, *written)] = n + 1
        start, end = spans[n] if n < len(spans) else (0, 0)
        out.append(Place(path, line, start, end, text))
    return out


def _file_lines(ws: Workspace, rel: str) -> list[str]:
    """A note's lines as the file has them now (read the one confined way), [] if unreadable."""
    try:
        data, _ = read_inside(ws.root, rel, ws.options["max_file_mb"] * 10**6)
    except (OSError, ValueError):
        return []
    return data.decode("utf-8", "replace").splitlines()


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
    label_first = dialect_of(ws).label_first
    for index in sorted({line - 1 for line, _ in targets}):
        if not 0 <= index < len(lines):
            continue
        for start, end, link in links_on_line(lines[index], label_first):
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


def is_file(ws: Workspace) -> Callable[[str], bool]:
    """Whether a root-relative path names a file of the workspace now (a key's reading)."""
    return functools.partial(names_file, ws.root)

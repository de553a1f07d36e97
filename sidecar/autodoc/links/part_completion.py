"""The parts of a link after its note: a note's headings (`[[note#`, `](note.md#`), its block
ids (`[[note#^`), and the rest of completion's entries: paths under a folder (`](`) and tags
with their counts (`#`).

A note's headings come from its text read by the index's parser (`parse.document.outline`, as
`doc.outline` reads them), so each heading is offered, even one the chunks merged away; the
document being edited is read from the editor's text, another note from its file, confined to
the root. A parse is kept while the text is the same.
"""

from __future__ import annotations

import posixpath
import re
import threading
from collections import OrderedDict
from pathlib import PurePosixPath
from urllib.parse import unquote

from autodoc import store as sql
from autodoc.files.confine import read_inside
from autodoc.links.completion_context import Entry, Where, continued, fenced_lines, matches
from autodoc.links.dialect import dialect_of
from autodoc.links.link_style import LinkStyle, md_destination
from autodoc.links.navigate import is_file, slug
from autodoc.parse.document import outline
from autodoc.parse.frontmatter_schema import TAG_FIELD
from autodoc.parse.markdown import Heading
from autodoc.parse.names import without_md_suffix
from autodoc.store import Workspace

PARSED_KEPT = 32  # texts whose headings are kept
PATH_PAGE = 64  # paths read at a time while listing a folder
_BLOCK_ID = re.compile(r"(?:^|\s)\^([A-Za-z0-9][A-Za-z0-9-]*)[ \t]*$")

_parsed: OrderedDict[tuple, tuple[list[str], list[Heading]]] = OrderedDict()
_parsed_lock = threading.Lock()


def parsed(text: str, where: str = "") -> tuple[list[str], list[Heading]]:
    """A text's lines and headings (the index's parser), kept while the text is the same."""
    key = (where, len(text), hash(text))
    with _parsed_lock:
        held = _parsed.get(key)
        if held is not None:
            _parsed.move_to_end(key)
            return held
    found = outline(text.encode("utf-8", "surrogatepass"))
    with _parsed_lock:
        _parsed[key] = found
        while len(_parsed) > PARSED_KEPT:
            _parsed.popitem(last=False)
    return found


def note_text(conn, ws: Workspace, rel: str, own: str, note: str, kind: str) -> tuple[str, str]:
    """(root-relative path, text) of the note a link names (`kind` "wiki" or "md", written in
    `rel`); ("", "") when it names none. The note being edited is `own`, the editor's text."""
    if not note:
        return rel, own
    key, reach = dialect_of(ws).key(rel, kind, unquote(note) if kind == "md" else note,
                                    is_file(ws))  # fmt: skip
    doc = sql.document_by_key(conn, ws.id, key, reach)
    if doc is None:
        return "", ""
    path, _ = sql.document_title(conn, doc)
    if path == rel:
        return rel, own
    try:
        data, _ = read_inside(ws.root, path, ws.options["max_file_mb"] * 10**6)
    except (OSError, ValueError):
        return "", ""
    return path, data.decode("utf-8", "replace")


def heading_entries(
    path: str, text: str, where: Where, by_slug: bool, limit: int
) -> tuple[list[Entry], bool]:
    """The note's headings that what was typed begins a word of, in the note's order: the
    heading's words, or its slug (`by_slug`: a Markdown link's anchor, a vault that writes
    wiki headings as slugs)."""
    _, headings = parsed(text, path)
    closer = "" if where.closed else (")" if where.kind == "anchor" else "]]")
    out: list[Entry] = []
    for h in headings:
        if len(out) > limit:
            break
        if not h.text:
            continue
        written = slug(h.text) if by_slug else h.text
        if not (matches(where.typed, h.text) or (by_slug and matches(where.typed, written))):
            continue
        out.append(
            Entry(
                label=h.text,
                kind="heading",
                detail="#" * h.level + " " + PurePosixPath(path).name,
                new_text=written + closer,
                filter_text=continued(where.typed, written),
                path=path,
                line=h.line + 1,
            )
        )
    return out[:limit], len(out) > limit


def block_entries(path: str, text: str, where: Where, limit: int) -> tuple[list[Entry], bool]:
    """The note's block ids (`^id` ending a line outside code), in the note's order (its
    lines as the index splits them: CRLF too)."""
    lines, _ = parsed(text, path)
    code = fenced_lines(lines)
    closer = "" if where.closed else "]]"
    out: list[Entry] = []
    for i, line in enumerate(lines):
        if len(out) > limit:
            break
        m = _BLOCK_ID.search(line) if "^" in line and not code[i] else None
        if m is None or not m[1].lower().startswith(where.typed.lower()):
            continue
        shown = line[: m.start()].strip()
        out.append(
            Entry(
                label="^" + m[1],
                kind="block",
                detail=shown[:60] + ("…" if len(shown) > 60 else ""),
                new_text=m[1] + closer,
                filter_text=m[1],
                path=path,
                line=i + 1,
            )
        )
    return out[:limit], len(out) > limit


def path_entries(
    conn, ws: Workspace, rel: str, where: Where, style: LinkStyle, limit: int
) -> tuple[list[Entry], bool]:
    """The notes and folders in the folder typed so far (relative to the note's own folder;
    `/` first: to the root) whose names start with the segment typed, folders as they come;
    each folder read once however many notes it holds (the listing skips past it)."""
    typed_folder = unquote(where.note)
    base = "" if typed_folder.startswith("/") else posixpath.dirname(rel)
    folder = posixpath.normpath(posixpath.join(base, typed_folder.lstrip("/")))
    if folder == ".." or folder.startswith("../"):
        return [], False
    head = "" if folder == "." else folder + "/"
    prefix = head + unquote(where.typed)
    closer = "" if where.closed else ")"
    # a wiki vault's Markdown link names the file as it is (its wiki links' habit is theirs)
    suffix = style.extension or style.form == "wiki"
    out: list[Entry] = []
    after = prefix
    while len(out) <= limit:
        paths = sql.paths_from(conn, ws.id, prefix, after, PATH_PAGE)
        if not paths:
            break
        for path in paths:
            rest = path[len(head) :]
            if "/" in rest:
                sub = rest.split("/", 1)[0]
                out.append(Entry(sub + "/", "folder", "folder",
                                 md_destination(sub) + "/", sub + "/"))  # fmt: skip
                after = head + sub + "0"  # past every path under it ('/' sorts before '0')
                break
            after = path + "\x00"
            if path == rel:
                continue
            name = rest if suffix else without_md_suffix(rest)
            out.append(Entry(rest, "file", path, md_destination(name) + closer, name, path,
                             1))  # fmt: skip
            if len(out) > limit:
                break
        else:
            if len(paths) < PATH_PAGE:
                break
    return out[:limit], len(out) > limit


def tag_entries(conn, ws: Workspace, where: Where, limit: int) -> tuple[list[Entry], bool]:
    """The vault's tags starting with what was typed, the most used first, with their counts."""
    typed = where.typed.lower()
    found, more = sql.tags_from(conn, ws.id, TAG_FIELD, typed, limit)
    return [
        Entry(
            "#" + tag,
            "tag",
            f"{n} note{'s' if n != 1 else ''}",
            tag,
            where.typed + tag[len(typed) :],
        )
        for tag, n in found
    ], more

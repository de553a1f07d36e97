"""The navigation methods' answers: links as an editor follows them (`links.*`: definition,
hover, references, a document's links, its unresolved links, completion and its previews) and
a document's outline (`doc.outline`). Part of the wire schema: `protocol.py`
lists them in `WIRE_TYPES`, so `conform` and `lua/autodoc/types.lua` cover them.

Positions: `line` is 1-based; `start` and `end` are 0-based columns of that line, counted in the
`units` the request asked for (`utf-32`, characters, by default; an LSP client's `utf-16`).
"""

from __future__ import annotations

from typing import Literal

from typing_extensions import TypedDict

from autodoc.wire.wire_type import wire_type

_WIRE = wire_type

Units = Literal["utf-32", "utf-16", "utf-8"]


@_WIRE
class LinkTarget(TypedDict):
    """Where a link leads: the document, at the heading it names if any."""

    path: str
    line: int
    """1-based: the heading's line, or 1 for the document."""
    title: str
    heading: str
    """The heading linked to; "" for the document."""


@_WIRE
class LinkAt(TypedDict):
    """`links.definition`: the link written at the position asked about, and its target."""

    workspace: str
    path: str
    """The document asked about."""
    line: int
    start: int
    """The link's text, [start, end) on `line`."""
    end: int
    target: LinkTarget | None
    """null: the link leads to no document."""


@_WIRE
class LinkHover(LinkAt):
    """`links.hover`: `links.definition`, and the first lines of the section linked to."""

    preview: str
    """Up to six non-blank lines after the section's heading ("" when it leads nowhere)."""


@_WIRE
class LinkPlace(TypedDict):
    """A link's place: its note, its 1-based line, and its columns on the line in the request's
    units (0, 0 where it is not on the line as written now: a frontmatter reference)."""

    path: str
    line: int
    start: int
    end: int


@_WIRE
class LinkReferences(TypedDict):
    """`links.references`: every place that links to a document or to one of its headings.

    Which: the target of the link at the position; else the heading on that line (not the
    title); else the document asked about."""

    workspace: str
    path: str
    """The document linked to."""
    heading: str
    """Only links to this heading are listed; "" lists every link to the document."""
    places: list[LinkPlace]


@_WIRE
class DocumentLink(TypedDict):
    line: int
    start: int
    end: int
    target: LinkTarget | None


@_WIRE
class DocumentLinks(TypedDict):
    """`links.document`: each link the index holds for the document, placed on its text."""

    workspace: str
    path: str
    links: list[DocumentLink]


@_WIRE
class LinkFinding(TypedDict):
    """An unresolved link, as `index.check` reports it, spanning its line of the text."""

    line: int
    start: int
    end: int
    severity: Literal["error", "warning"]
    kind: str
    message: str


@_WIRE
class LinkDiagnostics(TypedDict):
    """`links.diagnostics`: the document's links that lead nowhere (an editor's diagnostics)."""

    workspace: str
    path: str
    findings: list[LinkFinding]


@_WIRE
class OutlineHeading(TypedDict):
    """One heading of a document, as the index reads it (the same parser cuts the chunks)."""

    level: int
    """1 to 6 (`#` … `######`; a setext heading: 1 or 2)."""
    text: str
    """The words a reader sees (markup dropped, code spans and link text kept)."""
    line: int
    """1-based: the heading's line (a setext heading's text line)."""
    start: int
    """The heading's words, [start, end) on `line`."""
    end: int
    line_end: int
    """The section's last line: the line before the next heading of the same or a higher
    level, or the document's last line."""


@_WIRE
class DocumentOutline(TypedDict):
    """`doc.outline`: the document's headings in order (headings inside block quotes and list
    items are text, as in the index)."""

    workspace: str
    path: str
    headings: list[OutlineHeading]


CompletionContext = Literal["none", "note", "heading", "block", "path", "anchor", "tag"]


@_WIRE
class CompletionEntry(TypedDict):
    """One thing `links.complete` offers, in the server's order."""

    label: str
    kind: Literal["note", "heading", "block", "file", "folder", "tag"]
    detail: str
    """The note's path, a heading's level, a block's line, a tag's count."""
    new_text: str
    """Replaces the answer's [start, end) (where the client can, [start, replace_end))."""
    filter_text: str
    """What was typed, continued as the name it matched goes on: what a client filters by."""
    sort: int
    """0 first."""
    path: str
    """The note it leads to ("" for a folder or a tag): `links.preview` reads it."""
    line: int
    """Its line there, 1-based (a heading's or a block's; 1 for a note; 0 for none)."""


@_WIRE
class CompletionEdit(TypedDict):
    """Text beside the completed text that an entry changes too: the `[[` a Markdown link
    written for it rewrites to `[`."""

    line: int
    start: int
    end: int
    new_text: str


@_WIRE
class LinkStyleInfo(TypedDict):
    """How the entries write links (`link_style`: the workspace option, else the vault's
    habit)."""

    form: Literal["wiki", "markdown"]
    extension: bool
    name: Literal["stem", "path"]
    heading: Literal["text", "slug"]
    alias: Literal["target-first", "label-first", "never"]


@_WIRE
class LinkCompletion(TypedDict):
    """`links.complete`: what can be written at the position, and where it goes."""

    workspace: str
    path: str
    context: CompletionContext
    """What the cursor is writing ("none": nothing completed there)."""
    line: int
    start: int
    """The text an entry replaces: [start, end) on `line` (the cursor is `end`, or the
    closer after it when the entries rewrite that too)."""
    end: int
    replace_end: int
    """The end of the name the cursor is in, for a client that replaces it whole."""
    extra: list[CompletionEdit]
    """Applied with whichever entry is taken."""
    items: list[CompletionEntry]
    incomplete: bool
    """More matched than are listed: ask again as the typing goes on."""
    ranked_by: Literal["", "names", "meaning", "links"]
    """Notes: by what was typed (the name index), by the meaning of the paragraph around the
    cursor (short or nothing typed), or by how often they are linked (nothing typed, no
    vectors)."""
    style: LinkStyleInfo


@_WIRE
class LinkPreview(TypedDict):
    """`links.preview`: a note's title and the first lines of its section at a line (what a
    completion entry shows as its documentation)."""

    workspace: str
    path: str
    line: int
    title: str
    heading: str
    preview: str


LINK_TYPES: tuple[type, ...] = (
    LinkTarget,
    LinkAt,
    LinkHover,
    LinkPlace,
    LinkReferences,
    DocumentLink,
    DocumentLinks,
    LinkFinding,
    LinkDiagnostics,
    OutlineHeading,
    DocumentOutline,
    CompletionEntry,
    CompletionEdit,
    LinkStyleInfo,
    LinkCompletion,
    LinkPreview,
)

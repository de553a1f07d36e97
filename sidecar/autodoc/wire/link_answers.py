"""The navigation methods' answers: links as an editor follows them (`links.*`: definition,
hover, references, a document's links, its unresolved links) and a document's outline
(`doc.outline`). Part of the wire schema: `protocol.py`
lists them in `WIRE_TYPES`, so `conform` and `lua/autodoc/types.lua` cover them.

Positions: `line` is 1-based; `start` and `end` are 0-based columns of that line, counted in the
`units` the request asked for (`utf-32`, characters, by default; an LSP client's `utf-16`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict

_WIRE = with_config(ConfigDict(extra="forbid", strict=True, use_attribute_docstrings=True))

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
    path: str
    line: int


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
)

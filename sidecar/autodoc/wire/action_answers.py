"""The writing methods' answers: what a writer can do where the cursor is (`doc.actions`: create
the note a link asks for, make a bare URL a link, copy a link to a section) and how many links
lead to a document and its headings (`doc.lenses`). Part of the wire schema: `protocol.py`
lists them in `WIRE_TYPES`.

Positions as the navigation answers': `line` 1-based, `start` and `end` 0-based columns of that
line in the request's `units`. Nothing here is applied by the server: an editor applies the
edits (LSP code actions and code lenses are these).
"""

from __future__ import annotations

from typing import Literal

from typing_extensions import TypedDict

from autodoc.wire.wire_type import wire_type

_WIRE = wire_type

ActionKind = Literal["create_note", "convert_url", "copy_link"]


@_WIRE
class NoteAction(TypedDict):
    """One thing a writer can do at the position asked about."""

    kind: ActionKind
    title: str
    """What an editor's menu shows ("Create note 'Fusion'")."""
    line: int
    start: int
    """The text the action is about (the link, the URL, the heading's words): [start, end)."""
    end: int
    path: str
    """create_note: the new note's root-relative path; otherwise ""."""
    text: str
    """create_note: the new note's text; convert_url: what replaces [start, end);
    copy_link: the link to the section, in the vault's link style."""


@_WIRE
class DocumentActions(TypedDict):
    """`doc.actions`: what can be done at a position of a document (none: an empty list)."""

    workspace: str
    path: str
    actions: list[NoteAction]


@_WIRE
class BacklinkLens(TypedDict):
    """How many links lead to the document (on its title) or to one of its headings."""

    line: int
    start: int
    end: int
    heading: str
    """"" for the document's title (every link to the document counts)."""
    links: int


@_WIRE
class DocumentLenses(TypedDict):
    """`doc.lenses`: the document's title with its backlink count, and each linked heading."""

    workspace: str
    path: str
    lenses: list[BacklinkLens]


ACTION_TYPES: tuple[type, ...] = (NoteAction, DocumentActions, BacklinkLens, DocumentLenses)

"""The rename methods' answers (`links.prepare_rename`, `links.rename`, `links.file_renamed`):
what a rename at a position would rename, and the edits that keep every link to it whole. Part
of the wire schema: `protocol.py` lists them in `WIRE_TYPES`.

Positions as in `link_answers.py`: `line` 1-based, `start` and `end` 0-based columns of that
line in the `units` asked for. The edits are the client's to apply: nothing is written.
"""

from __future__ import annotations

from typing import Literal

from typing_extensions import TypedDict

from autodoc.wire.wire_type import wire_type

_WIRE = wire_type

RenameKind = Literal["heading", "title", "file"]


@_WIRE
class RenameTarget(TypedDict):
    """`links.prepare_rename`: what a rename at the position renames, and the words to edit."""

    workspace: str
    path: str
    """The document asked about."""
    line: int
    start: int
    """The name's words, [start, end) on `line`: a heading's, a title's, or in a link, the
    part that names the note (its file stem) or the heading."""
    end: int
    placeholder: str
    """The name as it is now: what an editor offers to edit."""
    kind: RenameKind
    """`heading`: a heading and every link to it; `title`: the note's title (and its file,
    when the file is named after it); `file`: the note's file, in its folder."""
    note: str
    """The note renamed (its path), which may be another document than `path`."""


@_WIRE
class RenameEdit(TypedDict):
    """Replace [start, end) of `line` of `path` (as it is before the rename) with `new_text`."""

    path: str
    line: int
    start: int
    end: int
    new_text: str


@_WIRE
class RenameLeft(TypedDict):
    """A link to the note that the edits cannot keep whole (`links.file_renamed` only: a
    rename refuses instead)."""

    path: str
    line: int
    reason: str


@_WIRE
class RenameAnswer(TypedDict):
    """`links.rename` and `links.file_renamed`: the edits that rename, and what they do."""

    workspace: str
    kind: RenameKind
    path: str
    """The note renamed, as it is now."""
    new_path: str | None
    """Where its file goes (the client renames it after the edits); null: it stays."""
    old_name: str
    new_name: str
    edits: list[RenameEdit]
    """Sorted by path and position; none overlaps another. Positions are on the files as they
    are before the rename (the renamed file's at its old path)."""
    links: int
    """Links from other places to the note (or the heading) rewritten: the index holds them."""
    kept: int
    """Links to the note that lead to it as written and are left alone (by title or alias
    when only the file is renamed; to other headings of it): `links + kept` is every link the
    index holds to the note."""
    local: int
    """Links inside the note to its own renamed heading (`[[#Heading]]`), which the index
    does not hold."""
    outgoing: int
    """The moved note's relative links to other notes, rewritten from its new folder."""
    files: int
    """Files the edit touches: edited, or renamed."""
    left: list[RenameLeft]


RENAME_TYPES: tuple[type, ...] = (RenameTarget, RenameEdit, RenameLeft, RenameAnswer)

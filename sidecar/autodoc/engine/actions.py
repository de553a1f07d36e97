"""Writing actions for any client through the dispatcher (the LSP server's code actions and
code lenses are these methods): what can be done where the cursor is, and the backlink counts
of a document and its headings.

The planning is `query.note_actions`'; this reads the document (the client's unsaved text, else
the file, confined to the root), finds what sits at the position with the index's own parser,
and answers in the client's column units. Nothing is written: the editor applies the edits.
"""

from __future__ import annotations

from typing import Any

from autodoc import store as sql
from autodoc.engine.core import EngineCore
from autodoc.engine.navigation import (
    Navigation,
    checked_position,
    from_units,
    heading_words,
    to_units,
)
from autodoc.files.confine import read_inside
from autodoc.links.dialect import dialect_of
from autodoc.parse.document import outline, split_lines
from autodoc.parse.markdown import Heading, read_structure
from autodoc.store import Workspace
from autodoc.wire.action_answers import BacklinkLens, DocumentActions, DocumentLenses, NoteAction
from autodoc.wire.errors import invalid_params
from autodoc.wire.link_answers import Units

TEMPLATE_MAX_BYTES = 256 * 1024  # a note template larger than this is not read


class Actions:
    """What an editor offers on a note (code actions, backlink lenses), over the navigation
    concern's reading of the document."""

    def __init__(self, core: EngineCore, navigation: Navigation) -> None:
        self.core = core
        self.navigation = navigation

    def doc_actions(
        self, name: Any, path: Any, line: Any, character: Any, opts: Any = None
    ) -> DocumentActions:
        """What can be done at `path:line:character`: create the note an unresolved link asks
        for, make a bare URL a Markdown link, copy a link to the heading's section. opts:
        `text` (the whole document as the client has it now), `units`."""
        ws, rel, text, units = self.navigation.document_text(name, path, opts)
        checked_position(line, character)
        _, lines, offsets, problem = split_lines(text.encode("utf-8"))
        structure = read_structure(text, offsets, len(lines), lossy=problem is not None)
        index = line - 1
        here = lines[index] if index < len(lines) else ""
        at = from_units(here, character, units)
        in_code = index < len(structure.code) and structure.code[index]
        actions: list[NoteAction] = []
        if not in_code:
            actions += self._link_actions(ws, rel, line, here, at, units)
            actions += _url_actions(line, here, at, units)
        heading = next((h for h in structure.headings if h.line == index), None)
        if heading is not None:
            actions.append(self._section_link(ws, rel, heading, here, units))
        return DocumentActions(workspace=ws.name, path=rel, actions=actions)

    def doc_lenses(self, name: Any, path: Any, opts: Any = None) -> DocumentLenses:
        """The document's title with how many links lead to the document, and each heading that
        links lead to with their count (opts as `doc.outline`)."""
        from autodoc.links import navigate, note_actions  # here: a search loads neither

        ws, rel, text, units = self.navigation.document_text(name, path, opts)
        lines, headings = outline(text.encode("utf-8"))
        with self.core.store.snapshot() as conn:
            doc_id = sql.live_document_id(conn, ws.id, rel)
            inbound = sql.links_into(conn, doc_id) if doc_id is not None else []
        total, by_slug = note_actions.backlink_counts(inbound, navigate.anchor_key)
        title = next((h for h in headings if h.level == 1), None)
        lenses = [_lens(lines, title, "", total, units)]
        for h in headings:
            count = by_slug.get(navigate.anchor_key(h.text), 0)
            if h is not title and count:
                lenses.append(_lens(lines, h, h.text, count, units))
        return DocumentLenses(workspace=ws.name, path=rel, lenses=lenses)

    # -- the actions -----------------------------------------------------------------------

    def _link_actions(
        self, ws: Workspace, rel: str, line: int, text: str, at: int, units: Units
    ) -> list[NoteAction]:
        """ "Create note" on a link to a note that does not exist."""
        from autodoc.links import navigate, note_actions

        found = navigate.link_at(text, at, ws)
        if found is None:
            return []
        start, end, link = found
        with self.core.store.snapshot() as conn:
            if navigate.resolve(conn, ws, rel, line, link) is not None:
                return []
        spec = ws.options.get("new_notes") or {"folder": ".", "template": ""}
        dialect = dialect_of(ws)
        note = note_actions.new_note(rel, link, spec["folder"], dialect)
        if note is None or (ws.root / note.path).exists():
            return []
        template = self._template(ws, spec["template"])
        body = note_actions.note_text(note, link.heading, template, dialect=dialect)
        return [
            NoteAction(
                kind="create_note",
                title=f"Create note '{note.title}' ({note.path})",
                line=line,
                start=to_units(text, start, units),
                end=to_units(text, end, units),
                path=note.path,
                text=body,
            )
        ]

    def _section_link(
        self, ws: Workspace, rel: str, heading: Heading, text: str, units: Units
    ) -> NoteAction:
        """ "Copy a link to this section", written as the vault writes its links (the title,
        level 1, links to the note itself)."""
        from autodoc.links.link_style import vault_link_style

        with self.core.store.snapshot() as conn:
            style = vault_link_style(conn, ws)
        target_heading = heading.text if heading.level > 1 else ""
        link = style.link(rel, heading=target_heading)
        start, end = heading_words(text)
        return NoteAction(
            kind="copy_link",
            title="Copy a link to this section",
            line=heading.line + 1,
            start=to_units(text, start, units),
            end=to_units(text, end, units),
            path="",
            text=link,
        )

    @staticmethod
    def _template(ws: Workspace, rel: str) -> str | None:
        """The new-note template's text (None: none set); -32602 when it cannot be read."""
        if not rel:
            return None
        try:
            data, _ = read_inside(ws.root, rel.strip("/"), TEMPLATE_MAX_BYTES)
        except (OSError, ValueError) as exc:
            raise invalid_params(f"cannot read new_notes.template {rel}: {exc}",
                                 field="new_notes") from None  # fmt: skip
        return data.decode("utf-8", "replace")


def _url_actions(line: int, text: str, at: int, units: Units) -> list[NoteAction]:
    """ "Convert to Markdown link" on a bare URL."""
    from autodoc.links import note_actions

    for start, end, url in note_actions.bare_urls(text):
        if start <= at <= end:
            return [
                NoteAction(
                    kind="convert_url",
                    title="Convert to Markdown link",
                    line=line,
                    start=to_units(text, start, units),
                    end=to_units(text, end, units),
                    path="",
                    text=f"[{note_actions.url_label(url)}]({url})",
                )
            ]
    return []


def _lens(
    lines: list[str], heading: Heading | None, name: str, count: int, units: Units
) -> BacklinkLens:
    """A lens over a heading's words (the document's first line when it has no title)."""
    if heading is None:
        return BacklinkLens(line=1, start=0, end=0, heading=name, links=count)
    text = lines[heading.line]
    start, end = heading_words(text)
    return BacklinkLens(
        line=heading.line + 1,
        start=to_units(text, start, units),
        end=to_units(text, end, units),
        heading=name,
        links=count,
    )

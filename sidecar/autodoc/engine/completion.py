"""Completion: what can be written at a position of a note, for any client through the
dispatcher (the LSP server's textDocument/completion and completionItem/resolve are
`links.complete` and `links.preview`).

The work is `query`'s (`completion_context` reads what the cursor is writing, `note_completion`
and `part_completion` find the entries, `link_style` writes the links); this turns a client's
columns into string offsets and back, asks for the notes nearest the paragraph around the cursor
(`paragraph_meaning`: the one embedding a keystroke may cost, at most `WAIT_S` waited for), and
reads each answer from one store snapshot.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from autodoc import store as sql
from autodoc.engine.core import EngineCore
from autodoc.engine.navigation import (
    BIG,
    Navigation,
    checked_position,
    checked_rel_path,
    from_units,
    text_options,
    to_units,
)
from autodoc.links.dialect import dialect_of
from autodoc.store import Workspace, read_epochs
from autodoc.wire.errors import invalid_params, options_object
from autodoc.wire.link_answers import (
    CompletionEdit,
    CompletionEntry,
    LinkCompletion,
    LinkPreview,
    LinkStyleInfo,
    Units,
)

if TYPE_CHECKING:  # the work is imported where a completion is asked for: a search loads none
    from autodoc.links.completion_context import Entry, Where
    from autodoc.links.link_style import LinkStyle
    from autodoc.links.note_completion import Ranked

DEFAULT_LIMIT = 50
MAX_LIMIT = 200


class Completion:
    """Link completion in the vault's style, and the preview of what a link names."""

    def __init__(self, core: EngineCore) -> None:
        self.core = core

    def links_complete(
        self, name: Any, path: Any, line: Any, character: Any, opts: Any = None
    ) -> LinkCompletion:
        """What can be written at `path:line:character`: notes after `[[`, headings after
        `[[note#`, block ids after `[[note#^`, paths after `](`, slugs after `](path#`, tags
        after `#`; each entry's text in the vault's link style. opts: `text` (the whole
        document as the client has it now), `units`, `limit` (1..200, default 50)."""
        from autodoc.links.completion_context import context_at, paragraph, paragraph_ahead
        from autodoc.links.link_style import vault_link_style
        from autodoc.links.note_completion import short
        from autodoc.links.paragraph_meaning import LONE_WAIT_S, MEANING, WAIT_S

        ws = self.core.workspace(name)
        rel = checked_rel_path(path)
        checked_position(line, character)
        text, units, limit = _complete_options(opts)
        if text is None:
            text = Navigation._file_text(ws, rel, path)
        lines = text.split("\n")
        if "\r" in text:
            lines = [row.removesuffix("\r") for row in lines]
        row = lines[line - 1] if line <= len(lines) else ""
        cursor = from_units(row, character, units)
        where = context_at(lines, line - 1, cursor, dialect_of(ws).label_first)
        # the paragraph whose meaning orders the notes; at a lone `[`, the one `[[` will have,
        # worked out ahead (nothing waits for it)
        meaning, ahead = None, where is None
        if where is not None and where.kind == "note" and short(where):
            meaning = paragraph(lines, line - 1, where)
        elif ahead:
            meaning = paragraph_ahead(lines, line - 1, cursor)
        with self.core.store.snapshot() as conn:
            epochs = read_epochs(conn, ws.id)  # read once a keystroke
            style = vault_link_style(conn, ws, epochs)
            nearest, pending = None, False
            if meaning:
                wait = 0.0 if ahead else WAIT_S if where and where.typed.strip() else LONE_WAIT_S
                nearest, pending = MEANING.nearest(self.core.store, ws, self.core.semantic_plan(ws),
                                                   epochs, meaning, wait)  # fmt: skip
            found: tuple[list[Entry], bool, Ranked] = ([], False, "")
            if where is not None:
                found = self._entries(conn, ws, rel, lines, line - 1, where, style, limit,
                                      nearest)  # fmt: skip
        if pending and not ahead:  # asked again, the meaning may be there
            found = (found[0], True, found[2])
        return _answer(ws.name, rel, line, row, where, style, found, units)

    def links_preview(self, name: Any, path: Any, line: Any = None) -> LinkPreview:
        """A note's title and the first lines of its section at `line` (1-based; null: the
        note's start): a completion entry's documentation."""
        from autodoc.links import navigate
        from autodoc.parse.chunking import BREADCRUMB_SEP

        ws = self.core.workspace(name)
        rel = checked_rel_path(path)
        if line is not None and (
            isinstance(line, bool) or not isinstance(line, int) or not 1 <= line < BIG
        ):
            raise invalid_params(f"line must be an integer 1..{BIG - 1} or null", field="line")
        with self.core.store.snapshot() as conn:
            doc = sql.live_document_id(conn, ws.id, rel)
            if doc is None:
                raise invalid_params(f"{rel!r} is not a document of {ws.name!r}", field="path")
            found, title = sql.document_title(conn, doc)
            section = sql.section_at(conn, doc, line or 1)
            heading = ""
            if line is not None and line > 1 and section is not None:
                heading = section[3].rsplit(BREADCRUMB_SEP, 1)[-1]
            chunk = section[0] if section is not None else 0
            target = navigate.Target(found, line or 1, title, heading, chunk)
            shown = navigate.preview(conn, target)
        return LinkPreview(workspace=ws.name, path=found, line=line or 1, title=title,
                           heading=heading, preview=shown)  # fmt: skip

    def _entries(
        self,
        conn,
        ws: Workspace,
        rel: str,
        lines: list[str],
        index: int,
        where: Where,
        style: LinkStyle,
        limit: int,
        nearest: list[int] | None,
    ) -> tuple[list[Entry], bool, Ranked]:
        """(entries, whether more matched, how notes were ranked) for what is being written;
        `nearest`: the notes nearest the paragraph's meaning (None: names alone)."""
        from autodoc.links.note_completion import note_entries
        from autodoc.links.part_completion import (
            block_entries,
            heading_entries,
            note_text,
            path_entries,
            tag_entries,
        )

        if where.kind == "note":
            return note_entries(conn, ws, rel, where, style, limit, nearest)
        if where.kind == "path":
            return (*path_entries(conn, ws, rel, where, style, limit), "")
        if where.kind == "tag":
            return (*tag_entries(conn, ws, where, limit), "")
        # the note being edited without the line being typed: the same text at each keystroke
        own = "\n".join([*lines[:index], "", *lines[index + 1 :]])
        target, body = note_text(conn, ws, rel, own, where.note,
                                 "md" if where.kind == "anchor" else "wiki")  # fmt: skip
        if not target:
            return [], False, ""
        if where.kind == "block":
            return (*block_entries(target, body, where, limit), "")
        by_slug = where.kind == "anchor" or style.heading == "slug"
        return (*heading_entries(target, body, where, by_slug, limit), "")


def _complete_options(opts: Any) -> tuple[str | None, Units, int]:
    """(text, units, limit): navigation's options and the number of entries."""
    opts = options_object(opts, ("text", "units", "limit"))
    text, units = text_options({k: v for k, v in opts.items() if k != "limit"})
    limit = opts.get("limit", DEFAULT_LIMIT)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise invalid_params(f"limit must be an integer 1..{MAX_LIMIT}", field="limit")
    return text, units, limit


def _column(row: str, index: int, units: Units) -> int:
    """A string offset into `row` as a client's column (an ASCII line's are the same)."""
    return index if row.isascii() else to_units(row, index, units)


def _answer(
    workspace: str,
    rel: str,
    line: int,
    row: str,
    where: Where | None,
    style: LinkStyle,
    found: tuple[list[Entry], bool, Ranked],
    units: Units,
) -> LinkCompletion:
    """The entries, with the span they replace in the client's units; a Markdown link after
    `[[` also rewrites the `[[` (and a `]]` right after the name) it was asked from."""
    entries, incomplete, ranked = found
    info = LinkStyleInfo(form=style.form, extension=style.extension, name=style.name,
                         heading=style.heading, alias=style.alias)  # fmt: skip
    if where is None:
        at = _column(row, len(row), units)
        return LinkCompletion(workspace=workspace, path=rel, context="none", line=line,
                              start=at, end=at, replace_end=at, extra=[], items=[],
                              incomplete=False, ranked_by="", style=info)  # fmt: skip
    end, replace_end, extra = where.cursor, where.tail, []
    if where.kind == "note" and style.form == "markdown":
        extra.append(
            CompletionEdit(line=line, start=_column(row, where.opener, units),
                           end=_column(row, where.opener + 2, units), new_text="[")
        )  # fmt: skip
        if row.startswith("]]", where.tail):
            end = replace_end = where.tail + 2
    items = [
        CompletionEntry(label=e.label, kind=e.kind, detail=e.detail, new_text=e.new_text,
                        filter_text=e.filter_text, sort=i, path=e.path, line=e.line)
        for i, e in enumerate(entries)
    ]  # fmt: skip
    return LinkCompletion(
        workspace=workspace,
        path=rel,
        context=where.kind,
        line=line,
        start=_column(row, where.start, units),
        end=_column(row, end, units),
        replace_end=_column(row, replace_end, units),
        extra=extra,
        items=items,
        incomplete=incomplete,
        ranked_by=ranked,
        style=info,
    )

"""Renaming for any client through the dispatcher (the LSP server's prepareRename, rename and
workspace/willRenameFiles are these methods): a heading, a note's title or its file, with every
link to it rewritten in its own form.

Reads only: the answer is the edits (and the file to rename) for the client to apply. Which
documents link to the note comes from the index (`links`); each is then read again — the
client's unsaved text where it sent one (`open`), else the file on disk, confined to the root —
and its links found by the indexer's own parser, so each edit lands on the text the client has.
The planning is `query.rename_plan`'s and `query.rename_scan`'s; a rename that would leave a
link it cannot rewrite (a name that collides, one no link can hold, a link another note would
take over) is refused with -32602 and a message saying which.
"""

from __future__ import annotations

import functools
import itertools
import os
import posixpath
from dataclasses import dataclass
from typing import Any

from autodoc import store as sql
from autodoc.engine.core import EngineCore
from autodoc.engine.navigation import (
    UNITS,
    Navigation,
    check_unicode,
    checked_position,
    checked_rel_path,
    from_units,
    heading_words,
    to_units,
)
from autodoc.files.confine import names_file
from autodoc.files.ignore_rules import RuleOptions, Rules
from autodoc.files.walker import MARKDOWN_SUFFIXES
from autodoc.links import navigate
from autodoc.links.dialect import Dialect, dialect_of
from autodoc.links.rename_plan import (
    AMBIGUOUS,
    NoteNames,
    Refused,
    Resolver,
    file_stem,
    title_value,
    words,
    written_links,
    yaml_scalar,
    yaml_words,
)
from autodoc.links.rename_scan import Change, Context, Edit, SourcePlan, plan_document
from autodoc.parse.document import ParsedDocument, links_on_line, outline, parse_document
from autodoc.parse.document import without_inline_code as _code_blanked
from autodoc.parse.markdown import Heading
from autodoc.parse.names import without_md_suffix
from autodoc.store import Workspace, rename_rows
from autodoc.wire.errors import invalid_params, options_object
from autodoc.wire.link_answers import Units
from autodoc.wire.rename_answers import (
    RenameAnswer,
    RenameEdit,
    RenameKind,
    RenameLeft,
    RenameTarget,
)

MAX_REFUSALS_SHOWN = 3
_NO_FILE_RENAMES = (
    "renaming the note renames its file, which this client cannot do (no"
    " workspace.workspaceEdit.resourceOperations 'rename'): rename the file in the client's file"
    " explorer (links follow through workspace/willRenameFiles)"
)


@dataclass(frozen=True)
class _Request:
    """A rename request's options: the client's units, its open documents' text, and whether
    it can rename files."""

    units: Units
    open: dict[str, str]
    files: bool
    dialect: Dialect  # how the vault's links read
    subject: str = ""  # "file": the note's own file, wherever the position is


@dataclass(frozen=True)
class _Subject:
    """What a rename at a position renames: the kind, the note, where the words are on the
    position's line (string offsets), the name now, and the heading (kind "heading")."""

    kind: RenameKind
    doc_id: int
    names: NoteNames
    note: ParsedDocument
    here: str
    start: int
    end: int
    placeholder: str
    heading: Heading | None = None


class Renaming:
    """Renames that keep every link whole: prepare, rename a heading or a note, a file moved."""

    def __init__(self, core: EngineCore) -> None:
        self.core = core

    def links_prepare_rename(
        self, name: Any, path: Any, line: Any, character: Any, opts: Any = None
    ) -> RenameTarget:
        """What a rename at `path:line:character` renames (a heading, the note's title, or in a
        link, the note's file or the heading it names) and its words; -32602 with the reason
        where nothing can be renamed. opts: `units`, `open` ({path: the client's text}),
        `files` (false: the client cannot rename files), `subject` ("file": the note's own
        file, from anywhere in it)."""
        ws, rel, req = self._rename_request(name, path, opts)
        checked_position(line, character)
        with self.core.store.snapshot() as conn:
            subject = self._subject(conn, ws, rel, line, character, req)
        if subject.kind == "file" and not req.files:
            raise invalid_params(f"cannot rename: {_NO_FILE_RENAMES}", field="files")
        units = req.units
        return RenameTarget(
            workspace=ws.name,
            path=rel,
            line=line,
            start=to_units(subject.here, subject.start, units),
            end=to_units(subject.here, subject.end, units),
            placeholder=subject.placeholder,
            kind=subject.kind,
            note=subject.names.path,
        )

    def links_rename(
        self, name: Any, path: Any, line: Any, character: Any, new_name: Any, opts: Any = None
    ) -> RenameAnswer:
        """Rename what `links.prepare_rename` names at the position to `new_name`: the edits to
        the note and to every link to it (opts as `links.prepare_rename`)."""
        ws, rel, req = self._rename_request(name, path, opts)
        checked_position(line, character)
        if not isinstance(new_name, str):
            raise invalid_params("new_name must be a string", field="new_name")
        check_unicode(new_name, "new_name")
        with self.core.store.snapshot() as conn:
            subject = self._subject(conn, ws, rel, line, character, req)
            try:
                change, own, old, new = _change(subject, new_name, req)
                if change.moves:
                    _refuse_unusable_path(conn, ws, change)
                plans = self._plan(conn, ws, change, own, req, strict=True)
            except Refused as exc:
                raise invalid_params(f"cannot rename: {exc}", field="new_name") from None
        return _answer(ws, subject.kind, change, old, new, plans, req.units)

    def links_file_renamed(
        self, name: Any, old_path: Any, new_path: Any, opts: Any = None
    ) -> RenameAnswer:
        """The edits that keep every link to a file whole when the client itself renames or
        moves it (`workspace/willRenameFiles`); a link the edits cannot keep is listed in
        `left`, not refused (the client renames regardless). opts: `units`, `open`."""
        ws, old, req = self._rename_request(name, old_path, opts)
        new = posixpath.normpath(checked_rel_path(new_path))
        old = posixpath.normpath(old)
        if not new.lower().endswith(MARKDOWN_SUFFIXES) or new.startswith("../"):
            raise invalid_params(f"{new} is not a Markdown file of the workspace", path=new)
        with self.core.store.snapshot() as conn:
            doc_id = sql.live_document_id(conn, ws.id, old)
            if doc_id is None:
                names = NoteNames(old, "")
                return _answer(ws, "file", Change(0, names, names), old, new, [], req.units)
            before = _names(conn, doc_id)
            note = self._note(ws, old, req)
            title = NoteNames(new, "").stem if _title_from_stem(note, before) else before.title
            change = Change(doc_id, before, NoteNames(new, title, before.aliases))
            plans = self._plan(conn, ws, change, {}, req, strict=False)
        return _answer(ws, "file", change, old, new, plans, req.units)

    # -- the request -------------------------------------------------------------------------

    def _rename_request(self, name: Any, path: Any, opts: Any) -> tuple[Workspace, str, _Request]:
        ws = self.core.workspace(name)
        rel = checked_rel_path(path)
        opts = options_object(opts, ("units", "open", "files", "subject"))
        units = opts.get("units", "utf-32")
        if units not in UNITS:
            raise invalid_params(f"units must be one of {', '.join(UNITS)}", field="units")
        texts = opts.get("open") or {}
        if not isinstance(texts, dict):
            raise invalid_params("open must be an object of {path: text}", field="open")
        for key, text in texts.items():
            if not isinstance(text, str):
                raise invalid_params("open: each text must be a string", field="open")
            check_unicode(key, "open")
            check_unicode(text, "open")
            if checked_rel_path(key) != posixpath.normpath(key) or key.startswith("../"):
                raise invalid_params(f"open: {key!r} is not a path under the root", field="open")
        files = opts.get("files", True)
        if not isinstance(files, bool):
            raise invalid_params("files must be true or false", field="files")
        subject = opts.get("subject", "")
        if subject not in ("", "file"):
            raise invalid_params('subject must be "file" (or left out)', field="subject")
        return ws, rel, _Request(units, dict(texts), files, dialect_of(ws), subject)

    def _note(self, ws: Workspace, rel: str, req: _Request) -> ParsedDocument:
        """A document as the client has it (its unsaved text) or else as the file is."""
        label_first = req.dialect.label_first
        if rel in req.open:
            return parse_document(req.open[rel].encode("utf-8"), rel, label_first=label_first)
        data = Navigation._file_text(ws, rel, rel).encode("utf-8")
        return parse_document(data, rel, label_first=label_first)

    # -- what is at the position -------------------------------------------------------------

    def _subject(self, conn: Any, ws: Workspace, rel: str, line: int, character: int,
                 req: _Request) -> _Subject:  # fmt: skip
        """What a rename at the position renames (with `subject` "file", the note's file,
        wherever the position is: a note not named after its title, a Dendron note, is renamed
        from inside it so); -32602 saying why where nothing can be."""
        doc = self._note(ws, rel, req)
        i = line - 1
        here = doc.lines[i] if i < len(doc.lines) else ""
        at = from_units(here, character, req.units)
        doc_id = sql.live_document_id(conn, ws.id, rel)
        if req.subject == "file":
            if doc_id is None:
                raise _nothing(f"{rel} is not indexed yet")
            names = _names(conn, doc_id)
            return _Subject("file", doc_id, names, doc, here, at, at, names.stem)
        if i < doc.body_line:
            found = title_value(doc.lines, doc.body_line)
            if found is None or found[0] != i or doc_id is None:
                raise _nothing("in the front matter, only the title can be renamed")
            names = _names(conn, doc_id)
            return _Subject("title", doc_id, names, doc, here, found[1], found[2], names.title)
        if i < len(doc.lines) and (doc.code[i] or (i < len(doc.html) and doc.html[i])):
            raise _nothing("this line is code")
        for start, end, link in links_on_line(_code_blanked(here), req.dialect.label_first):
            if start <= at < end:
                return self._link_subject(conn, ws, rel, line, here, (start, at), link, req)
        heading = next((h for h in doc.headings if h.line == i), None)
        if heading is None:
            raise _nothing("put the cursor on a heading, a link or the note's title")
        if doc_id is None:
            raise _nothing(f"{rel} is not indexed yet")
        return _heading_subject(doc_id, _names(conn, doc_id), doc, here, heading)

    def _link_subject(self, conn: Any, ws: Workspace, rel: str, line: int, here: str,
                      where: tuple[int, int], link: Any, req: _Request) -> _Subject:  # fmt: skip
        """A rename from a link (`where`: where it starts, where the cursor is): of the heading
        it names, unless the cursor is on the note's name in it; of the note, by the name the
        link calls it (its file or its title)."""
        start, at = where
        target = navigate.resolve(conn, ws, rel, line, link)
        shown = here[start : start + 60]
        if target is None:
            raise _nothing(f"{shown} leads to no note")
        doc_id = sql.live_document_id(conn, ws.id, target.path)
        if doc_id is None:
            raise _nothing(f"{target.path} is not indexed")
        names = _names(conn, doc_id)
        note = self._note(ws, target.path, req)
        w = next(w for w in written_links(here, req.dialect.label_first) if w.start == start)
        on_name = w.target_span[0] <= at <= w.target_span[1]
        if link.heading and not on_name:
            want = navigate.anchor_key(link.heading)
            heading = next((h for h in note.headings if navigate.anchor_key(h.text) == want), None)
            if heading is None or w.heading_span is None:
                raise _nothing(f"{target.path} has no heading {link.heading!r}")
            words_at = note.lines[heading.line]
            s, e = heading_words(words_at)
            return _Subject("heading", doc_id, names, note, here, *w.heading_span,
                            words_at[s:e], heading)  # fmt: skip
        named = req.dialect.note_name(link.target) if link.kind == "wiki" else link.target
        form = "path" if link.kind == "md" else names.form(without_md_suffix(named).lower())
        if form in ("path", "stem"):
            s, e = w.target_span
            written = here[s:e]
            s += written.rfind("/") + 1
            e = s + len(without_md_suffix(here[s:e]))
            return _Subject("file", doc_id, names, note, here, s, e, names.stem)
        if form == "title":
            return _Subject("title", doc_id, names, note, here, *w.target_span, names.title)
        raise _nothing(
            f"this link names {target.path} by another of its names ({link.target!r}): rename"
            " the note from a link by its file name, or at its title"
        )

    # -- the plan ----------------------------------------------------------------------------

    def _plan(self, conn: Any, ws: Workspace, change: Change, own: dict[str, list[Edit]],
              req: _Request, *, strict: bool) -> list[SourcePlan]:  # fmt: skip
        """Every document's edits: those linking to the note (from the index), those open in
        the client, and the note itself; refused (strict) or listed where a link breaks."""
        resolver = Resolver(lambda keys: rename_rows.name_holders(conn, ws.id, keys),
                            change.doc_id, change.after.name_keys(req.dialect))  # fmt: skip
        is_file = functools.partial(names_file, ws.root)
        ctx = Context(
            change=change,
            resolver=resolver,
            note_keys=frozenset(k for k, _ in rename_rows.names_of(conn, change.doc_id)),
            link_fields=tuple(sql.stored_schema(conn, ws.id).link_fields),
            is_file_before=is_file,
            is_file_after=lambda p: (
                p == change.after.path or (p != change.before.path and is_file(p))
            ),
            paths_of=lambda ids: rename_rows.document_paths_of(conn, ids),
            dialect=req.dialect,
        )
        sources = {p for p, *_ in rename_rows.links_to(conn, change.doc_id)}
        sources |= {p for p in req.open if p.lower().endswith(MARKDOWN_SUFFIXES)}
        sources.add(change.before.path)
        plans = []
        for src in sorted(sources):
            if src in req.open:
                data = req.open[src].encode("utf-8")
            else:
                try:
                    data = Navigation._file_text(ws, src, src).encode("utf-8")
                except Exception as exc:  # an RpcError: gone or unreadable since indexed
                    if strict:
                        raise Refused(f"{src} links to the note but cannot be read") from exc
                    continue
            plan = plan_document(src, data, ctx)
            plan.edits += own.get(src, [])
            plans.append(plan)
        problems = _takeovers(conn, ws, change, resolver, req.dialect) + _overlaps(plans)
        problems += [f"{p.path}:{line}: {why}" for p in plans for line, why in p.broken]
        if problems and strict:
            more = len(problems) - MAX_REFUSALS_SHOWN
            raise Refused("; ".join(problems[:MAX_REFUSALS_SHOWN]) + (f" (and {more} more)"
                          if more > 0 else ""))  # fmt: skip
        return plans


# -- helpers ------------------------------------------------------------------------------------


def _change(subject: _Subject, new_name: str,
            req: _Request) -> tuple[Change, dict[str, list[Edit]], str, str]:  # fmt: skip
    """The rename as a change of names, the edits to the note's own text (its heading or
    title), and the old and new name as shown."""
    names, note = subject.names, subject.note
    if subject.kind == "heading":
        assert subject.heading is not None
        return _heading_change(subject, names, note, new_name)
    if subject.kind == "title":
        title = words(new_name, "title", in_wiki=False)
        path = names.path
        if names.stem == names.title and req.files:
            try:
                path = _sibling(names.path, file_stem(title))
            except Refused:
                path = names.path  # the title cannot name a file: the file stays
        edits = _title_edits(note, names.title, title)
        renamed_h1 = any(h.level == 1 and h.text == names.title for h in note.headings)
        change = Change(subject.doc_id, names, NoteNames(path, title, names.aliases),
                        (names.title, title) if renamed_h1 else None)  # fmt: skip
        return change, {names.path: edits}, names.title, title
    if not req.files:
        raise Refused(_NO_FILE_RENAMES)
    stem = file_stem(new_name)
    path = _sibling(names.path, stem)
    title = stem if _title_from_stem(note, names) else names.title
    change = Change(subject.doc_id, names, NoteNames(path, title, names.aliases))
    return change, {}, names.stem, stem


def _nothing(why: str) -> Exception:
    return invalid_params(f"nothing to rename here: {why}", reason="nothing")


def _names(conn: Any, doc_id: int) -> NoteNames:
    path, title, aliases = rename_rows.note_row(conn, doc_id)
    return NoteNames(path, title, tuple(aliases))


def _title_from_stem(note: ParsedDocument, names: NoteNames) -> bool:
    """The note's title is its file's stem (no frontmatter title, no level-1 heading): a new
    file name is a new title."""
    return note.title == names.stem and not any(
        h.level == 1 and h.text for h in note.headings
    ) and not isinstance(note.meta.get("title"), str)  # fmt: skip


def _sibling(path: str, stem: str) -> str:
    """`stem`'s file beside `path`, with `path`'s suffix (`.md`)."""
    folder, suffix = posixpath.dirname(path), path[len(without_md_suffix(path)) :] or ".md"
    return posixpath.join(folder, stem + suffix) if folder else stem + suffix


def _heading_subject(doc_id: int, names: NoteNames, doc: ParsedDocument, here: str,
                     heading: Heading) -> _Subject:  # fmt: skip
    """A rename at a heading: the title where the heading is it (level 1, the note's title),
    else the heading."""
    s, e = heading_words(here)
    if heading.level == 1 and heading.text == names.title:
        return _Subject("title", doc_id, names, doc, here, s, e, here[s:e])
    return _Subject("heading", doc_id, names, doc, here, s, e, here[s:e], heading)


def _heading_change(subject: _Subject, names: NoteNames, note: ParsedDocument,
                    new_name: str) -> tuple[Change, dict[str, list[Edit]], str, str]:  # fmt: skip
    """A heading renamed: the words on its line, and the words links name it by (as a
    reader sees them: markup dropped), which no other heading of the note may share."""
    heading = subject.heading
    assert heading is not None
    raw = words(new_name, "heading", in_wiki=True)
    _, found = outline(f"{'#' * heading.level} {raw}\n".encode())
    shown = found[0].text if found else ""
    if not navigate.anchor_key(shown):
        raise Refused(f"the new heading {raw!r} has no words a link could name")
    for h in note.headings:
        if h is not heading and navigate.anchor_key(h.text) == navigate.anchor_key(shown):
            raise Refused(f"{names.path} has a heading {h.text!r} already (line {h.line + 1}):"
                          " links to the two could not be told apart")  # fmt: skip
    line = note.lines[heading.line]
    s, e = heading_words(line)
    # A link finds the first heading with its words (`navigate.target_of`): where an earlier
    # one has this one's, the links lead there and stay as they are.
    want = navigate.anchor_key(heading.text)
    first = next(h for h in note.headings if navigate.anchor_key(h.text) == want)
    renamed = (heading.text, shown) if first is heading else None
    change = Change(subject.doc_id, names, names, renamed)
    return change, {names.path: [Edit(heading.line, s, e, raw)]}, heading.text, shown


def _title_edits(note: ParsedDocument, old: str, new: str) -> list[Edit]:
    """The note's title renamed in its text: the frontmatter `title:` and the level-1 heading
    that says it."""
    edits = []
    found = title_value(note.lines, note.body_line)
    if found is not None:
        i, s, e, quote = found
        written = yaml_words(new, quote)
        line = note.lines[i]
        if yaml_scalar(line[:s] + written + line[e:]) != new:
            raise Refused(f"the new title {new!r} cannot be written in the front matter")
        edits.append(Edit(i, s, e, written))
    for h in note.headings:
        if h.level == 1 and h.text == old:
            s, e = heading_words(note.lines[h.line])
            edits.append(Edit(h.line, s, e, new))
    if not edits:
        raise Refused("the note's title is not written in it (it is the file's name)")
    return edits


def _refuse_unusable_path(conn: Any, ws: Workspace, change: Change) -> None:
    """Refuse a new file name another note holds (case aside: links are case-blind), or one
    the workspace's rules leave out (`exclude`, an ignore file): the note would leave the
    index and every link to it would lead nowhere."""
    new, old = change.after.path, change.before.path
    taken = [p for p in rename_rows.live_path_keys(conn, ws.id, without_md_suffix(new).lower())
             if p != old]  # fmt: skip
    if taken or (new.lower() != old.lower() and os.path.lexists(ws.root / new)):
        raise Refused(f"a note {taken[0] if taken else new!r} exists already")
    verdict = Rules(str(ws.root), RuleOptions.of(ws.options)).judge_path(new)
    if verdict is not None:
        raise Refused(f"{new} would be left out of the index by {verdict.rule!r}"
                      f" ({verdict.source}): every link to it would lead nowhere")  # fmt: skip


def _takeovers(
    conn: Any, ws: Workspace, change: Change, resolver: Resolver, dialect: Dialect
) -> list[str]:
    """Links that lead to another note now and would lead to the renamed one (a new name it
    takes from them)."""
    old = {k for k, _ in rename_rows.names_of(conn, change.doc_id)}
    new = sorted({k for k, _ in change.after.name_keys(dialect)} - old)
    out = []
    for src, line, _kind, target, key, reach, target_id in rename_rows.links_looking_up(
        conn, ws.id, new
    ):
        if target_id is None or target_id == change.doc_id:
            continue
        if resolver.after(key, reach) in (change.doc_id, AMBIGUOUS):
            other = rename_rows.document_paths_of(conn, [target_id]).get(target_id, "?")
            out.append(f"{src}:{line}: {target!r} leads to {other} now and would lead to"
                       f" {change.after.path} after the rename")  # fmt: skip
    return out


def _overlaps(plans: list[SourcePlan]) -> list[str]:
    out = []
    for plan in plans:
        edits = sorted(plan.edits, key=lambda e: (e.line, e.start, e.end))
        for a, b in itertools.pairwise(edits):
            if a.line == b.line and b.start < a.end:
                out.append(f"{plan.path}:{a.line + 1}: two edits would overlap")
    return out


def _answer(ws: Workspace, kind: RenameKind, change: Change, old: str, new: str,
            plans: list[SourcePlan], units: Units) -> RenameAnswer:  # fmt: skip
    edits = [
        RenameEdit(
            path=p.path,
            line=e.line + 1,
            start=to_units(p.lines[e.line], e.start, units),
            end=to_units(p.lines[e.line], e.end, units),
            new_text=e.text,
        )
        for p in plans
        for e in sorted(p.edits, key=lambda e: (e.line, e.start))
    ]
    touched = {p.path for p in plans if p.edits} | ({change.before.path} if change.moves else set())
    return RenameAnswer(
        workspace=ws.name,
        kind=kind,
        path=change.before.path,
        new_path=change.after.path if change.moves else None,
        old_name=old,
        new_name=new,
        edits=edits,
        links=sum(p.rewritten for p in plans),
        kept=sum(p.kept for p in plans),
        local=sum(p.local for p in plans),
        outgoing=sum(p.outgoing for p in plans),
        files=len(touched),
        left=[RenameLeft(path=p.path, line=n, reason=why) for p in plans for n, why in p.broken],
    )

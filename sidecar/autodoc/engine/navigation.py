"""Navigation: links as an editor follows them, and a document's outline, for any client through
the dispatcher (the LSP server's definition, hover, references, document links, diagnostics and
document symbols are these methods).

The work is `query.navigate`'s (and `index.check`'s for unresolved links); this reads the text
the position is on (the client's unsaved `text`, else the file, confined to the root), turns a
client's columns into string offsets and back (`units`: an editor counts UTF-16 or UTF-8 code
units, Python characters), and reads each answer from one store snapshot.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from autodoc import store as sql
from autodoc.engine.core import EngineCore
from autodoc.engine.reading import checked_path
from autodoc.files.confine import read_inside
from autodoc.links.dialect import dialect_of
from autodoc.parse.document import links_on_line, outline
from autodoc.parse.markdown import Heading
from autodoc.store import Workspace
from autodoc.wire.errors import invalid_params, options_object
from autodoc.wire.link_answers import (
    DocumentLink,
    DocumentLinks,
    DocumentOutline,
    LinkAt,
    LinkDiagnostics,
    LinkFinding,
    LinkHover,
    LinkPlace,
    LinkReferences,
    LinkTarget,
    OutlineHeading,
    Units,
)

if TYPE_CHECKING:  # imported where a link is followed: a search loads neither (issue 45)
    from autodoc.links import navigate

UNITS: tuple[Units, ...] = ("utf-32", "utf-16", "utf-8")
BIG = 2**31  # lines and columns are below it (SQLite's integers are 64-bit)
# An ATX heading: its `#` run, and its words after the run's spaces and before a closing run
# that a space precedes (`# C#` keeps its `#`), as CommonMark reads them.
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+|$)(.*?)(?:[ \t]+#+)?[ \t]*$")


class Navigation:
    """Links as an editor follows them: definition, hover, references, the document's
    links, outline and diagnostics."""

    def __init__(self, core: EngineCore) -> None:
        self.core = core

    def links_definition(
        self, name: Any, path: Any, line: Any, character: Any, opts: Any = None
    ) -> LinkAt | None:
        """The link written at `path:line:character` and where it leads; null when no link is
        there. opts: `text` (the line as the client has it now), `units`."""
        found = self._link_at(name, path, line, character, opts, preview=False)
        return None if found is None else found[0]

    def links_hover(
        self, name: Any, path: Any, line: Any, character: Any, opts: Any = None
    ) -> LinkHover | None:
        """`links.definition` with the first lines of the section linked to."""
        found = self._link_at(name, path, line, character, opts, preview=True)
        return None if found is None else LinkHover(**found[0], preview=found[1])

    def links_references(
        self, name: Any, path: Any, line: Any, character: Any, opts: Any = None
    ) -> LinkReferences:
        """Every place that links to the target of the link at the position; on a heading
        (level 2 and below), to that heading; elsewhere, to the document asked about."""
        from autodoc.links import navigate

        ws, rel, at, text, units = self._position(name, path, line, character, opts)
        found = navigate.link_at(text, from_units(text, character, units), ws)
        with self.core.store.snapshot() as conn:
            target = navigate.resolve(conn, ws, rel, at, found[2]) if found else None
            if target is not None:
                linked, heading = target.path, target.heading
            else:
                m = _HEADING.match(text)
                linked, heading = rel, (m[2] if m and len(m[1]) > 1 else "")
            doc_id = sql.live_document_id(conn, ws.id, linked)
            places = (
                [] if doc_id is None else navigate.references(conn, ws, doc_id, heading or None)
            )
        return LinkReferences(
            workspace=ws.name,
            path=linked,
            heading=heading,
            places=[
                LinkPlace(path=p.path, line=p.line, start=to_units(p.text, p.start, units),
                          end=to_units(p.text, p.end, units))
                for p in places
            ],
        )  # fmt: skip

    def links_document(self, name: Any, path: Any, opts: Any = None) -> DocumentLinks:
        """Each link the index holds for the document, placed on its text (opts: `text`, the
        whole document as the client has it now; `units`)."""
        from autodoc.links import navigate

        ws, rel, lines, units = self._document(name, path, opts)
        with self.core.store.snapshot() as conn:
            found = navigate.document_links(conn, ws, rel, lines)
        links = [
            DocumentLink(
                line=index + 1,
                start=to_units(lines[index], start, units),
                end=to_units(lines[index], end, units),
                target=_target(target),
            )
            for index, start, end, target in found
        ]
        return DocumentLinks(workspace=ws.name, path=rel, links=links)

    def links_diagnostics(self, name: Any, path: Any, opts: Any = None) -> LinkDiagnostics:
        """The document's unresolved links, as `index.check` finds them, each spanning its line
        of the text (opts as `links.document`)."""
        from autodoc.index.check import link_findings
        from autodoc.links.link_check import broken_links

        ws, rel, lines, units = self._document(name, path, opts)
        with self.core.store.snapshot() as conn:
            broken = broken_links(conn, ws, rel)
        label_first = dialect_of(ws).label_first
        findings = []
        for f in link_findings(ws, broken):
            text = lines[f.line - 1] if 0 < f.line <= len(lines) else ""
            start, end = _link_span(text, f.link, label_first)
            findings.append(
                LinkFinding(
                    line=f.line,
                    start=to_units(text, start, units),
                    end=to_units(text, end, units),
                    severity="warning" if f.severity == "warning" else "error",
                    kind=f.kind,
                    message=f.message,
                )
            )
        return LinkDiagnostics(workspace=ws.name, path=rel, findings=findings)

    def doc_outline(self, name: Any, path: Any, opts: Any = None) -> DocumentOutline:
        """The document's headings, each with its section's last line, read by the index's
        parser from its text (opts: `text`, the document as the client has it now; `units`)."""
        ws, rel, text, units = self.document_text(name, path, opts)
        lines, headings = outline(text.encode("utf-8"))
        last = len(lines) - (len(lines) > 1 and lines[-1] == "")  # a final newline ends a line
        found = []
        for i, h in enumerate(headings):
            start, end = heading_words(lines[h.line])
            found.append(
                OutlineHeading(
                    level=h.level,
                    text=h.text,
                    line=h.line + 1,
                    start=to_units(lines[h.line], start, units),
                    end=to_units(lines[h.line], end, units),
                    line_end=_section_end(headings, i, last),
                )
            )
        return DocumentOutline(workspace=ws.name, path=rel, headings=found)

    # -- the text a request is about ---------------------------------------------------------

    def _link_at(
        self, name: Any, path: Any, line: Any, character: Any, opts: Any, *, preview: bool
    ) -> tuple[LinkAt, str] | None:
        """The link at the position, and (with `preview`) the first lines of its target."""
        from autodoc.links import navigate

        ws, rel, at, text, units = self._position(name, path, line, character, opts)
        found = navigate.link_at(text, from_units(text, character, units), ws)
        if found is None:
            return None
        start, end, link = found
        with self.core.store.snapshot() as conn:
            target = navigate.resolve(conn, ws, rel, at, link)
            shown = navigate.preview(conn, target) if preview and target is not None else ""
        answer = LinkAt(
            workspace=ws.name,
            path=rel,
            line=at,
            start=to_units(text, start, units),
            end=to_units(text, end, units),
            target=_target(target),
        )
        return answer, shown

    def _position(
        self, name: Any, path: Any, line: Any, character: Any, opts: Any
    ) -> tuple[Workspace, str, int, str, Units]:
        """(workspace, path, line, the line's text, units) of a position request; -32602 for
        anything malformed."""
        ws = self.core.workspace(name)
        rel = checked_rel_path(path)
        checked_position(line, character)
        text, units = text_options(opts)
        if text is None:
            lines = self._file_lines(ws, rel, path)
            text = lines[line - 1] if line <= len(lines) else ""
        return ws, rel, line, text, units

    def _document(self, name: Any, path: Any, opts: Any) -> tuple[Workspace, str, list[str], Units]:
        ws, rel, text, units = self.document_text(name, path, opts)
        return ws, rel, text.splitlines(), units

    def document_text(self, name: Any, path: Any, opts: Any) -> tuple[Workspace, str, str, Units]:
        """(workspace, path, the client's text or else the file's, units)."""
        ws = self.core.workspace(name)
        rel = checked_rel_path(path)
        text, units = text_options(opts)
        return ws, rel, self._file_text(ws, rel, path) if text is None else text, units

    @staticmethod
    def _file_lines(ws: Workspace, rel: str, path: Any) -> list[str]:
        return Navigation._file_text(ws, rel, path).splitlines()

    @staticmethod
    def _file_text(ws: Workspace, rel: str, path: Any) -> str:
        """The file's text, read the one confined way (as `doc.read`)."""
        try:
            data, _ = read_inside(ws.root, rel, ws.options["max_file_mb"] * 10**6)
        except (OSError, ValueError) as exc:
            raise invalid_params(f"cannot read {path}: {exc}", path=path) from None
        return data.decode("utf-8", "replace")


def checked_position(line: Any, character: Any) -> None:
    """-32602 unless `line` (1-based) and `character` (0-based) are integers in range."""
    for field, value, least in (("line", line, 1), ("character", character, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or not least <= value < BIG:
            raise invalid_params(f"{field} must be an integer {least}..{BIG - 1}", field=field)


def checked_rel_path(path: Any) -> str:
    rel = checked_path(path)
    check_unicode(rel, "path")
    return rel


def check_unicode(text: str, field: str) -> None:
    """-32602 for a string no UTF-8 can carry (a lone surrogate from `\\ud800` in JSON)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise invalid_params(f"{field} is not valid Unicode", field=field) from None


def text_options(opts: Any) -> tuple[str | None, Units]:
    opts = options_object(opts, ("text", "units"))
    text = opts.get("text")
    if text is not None:
        if not isinstance(text, str):
            raise invalid_params("text must be a string", field="text")
        check_unicode(text, "text")
    units = opts.get("units", "utf-32")
    if units not in UNITS:
        raise invalid_params(f"units must be one of {', '.join(UNITS)}", field="units")
    return text, units


def _target(target: navigate.Target | None) -> LinkTarget | None:
    if target is None:
        return None
    return LinkTarget(path=target.path, line=target.line, title=target.title,
                      heading=target.heading)  # fmt: skip


def heading_words(line: str) -> tuple[int, int]:
    """Where a heading's words sit on its line, as string offsets: after an ATX heading's `#`
    run and before its closing one; a setext heading's line without its indent."""
    m = _HEADING.match(line)
    if m:
        return m.start(2), m.end(2)
    words = line.strip()
    start = line.index(words) if words else 0
    return start, start + len(words)


def _section_end(headings: list[Heading], i: int, n_lines: int) -> int:
    """The 1-based last line of heading `i`'s section: before the next heading of its level or
    above, else the document's last line."""
    level = headings[i].level
    nxt = next((h.line for h in headings[i + 1 :] if h.level <= level), None)
    return max(nxt if nxt is not None else n_lines, headings[i].line + 1)


def _width(char: str, units: Units) -> int:
    if units == "utf-32":
        return 1
    code = ord(char)
    if units == "utf-16":
        return 2 if code > 0xFFFF else 1
    return 1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4


def _link_span(text: str, link: tuple[str, str] | None, label_first: bool) -> tuple[int, int]:
    """Where on its line a finding's link is written (the first link of that kind and
    target), as string offsets; the whole line when it is not there as a link (a frontmatter
    reference, a line changed since it was indexed)."""
    if link is not None:
        kind, target = link
        for start, end, found in links_on_line(text, label_first):
            if found.kind == kind and found.target == target:
                return start, end
    return 0, len(text)


def to_units(text: str, index: int, units: Units) -> int:
    """A string offset into `text` as a client's column."""
    return sum(_width(c, units) for c in text[:index]) if units != "utf-32" else index


def from_units(text: str, column: int, units: Units) -> int:
    """A client's column on `text` as a string offset (as pygls reads an LSP position: a column
    past the end is the last character)."""
    total = to_units(text, len(text), units)
    if total == 0:
        return 0
    column = min(column, total - 1) if column > total else column
    index = counted = 0
    for char in text:
        if counted >= column:
            break
        counted += _width(char, units)
        index += 1
    return index

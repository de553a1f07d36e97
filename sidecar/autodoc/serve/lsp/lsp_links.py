"""Links in standard LSP clothes, for any editor's generic client: definition, references,
document links and hover on wiki and Markdown links, and unresolved links as diagnostics (the
findings `autodoc check` gives). The work is `navigate.py`'s; this maps positions and URIs."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from lsprotocol import types

from autodoc import store as queries
from autodoc.files.confine import read_inside
from autodoc.index.check import link_findings
from autodoc.query import navigate
from autodoc.serve.lsp.lsp_framing import uri_to_path
from autodoc.serve.lsp.lsp_server import AutodocServer

log = logging.getLogger("autodoc.server")

SOURCE = "autodoc"
_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")


class _Doc:
    """One editor document of a served folder: its workspace, path and text (the editor's
    when it is open, else the file's)."""

    def __init__(self, ls: AutodocServer, uri: str) -> None:
        path = uri_to_path(uri)
        found = ls.host.locate(path) if path is not None else None
        if found is None:
            raise LookupError(uri)
        self.name, self.rel = found
        self.ws = ls.engine.workspace(self.name)
        self.uri = uri
        opened = ls.workspace.text_documents.get(uri)
        if opened is not None:
            self.lines = [ln.rstrip("\r\n") for ln in opened.lines]
        else:
            data, _ = read_inside(self.ws.root, self.rel, self.ws.options["max_file_mb"] * 10**6)
            self.lines = data.decode("utf-8", "replace").splitlines()
        self.codec = ls.workspace.position_codec

    def at(self, position: types.Position) -> tuple[int, int]:
        """(line index, character) in Python string units."""
        pos = self.codec.position_from_client_units(self.lines, position)
        return pos.line, pos.character

    def range(self, line: int, start: int, end: int) -> types.Range:
        raw = types.Range(types.Position(line, start), types.Position(line, end))
        return self.codec.range_to_client_units(self.lines, raw)

    def text(self, line: int) -> str:
        return self.lines[line] if 0 <= line < len(self.lines) else ""


def _uri(doc: _Doc, path: str) -> str:
    return (Path(doc.ws.root) / path).as_uri()


def _location(doc: _Doc, path: str, line: int) -> types.Location:
    start = types.Position(max(line - 1, 0), 0)
    return types.Location(uri=_uri(doc, path), range=types.Range(start, start))


def _link_target(ls: AutodocServer, doc: _Doc, position: types.Position):
    line, char = doc.at(position)
    found = navigate.link_at(doc.text(line), char)
    if found is None:
        return None, None
    start, end, link = found
    with ls.engine.store.snapshot() as conn:
        target = navigate.resolve(conn, doc.ws, doc.rel, line + 1, link)
    return target, doc.range(line, start, end)


def _references(ls: AutodocServer, doc: _Doc, position: types.Position) -> list[types.Location]:
    """On a link: the places linking to its target; on a heading: to that heading (the title,
    level 1: to the document); elsewhere: every place that links to this document."""
    line, _ = doc.at(position)
    target, _ = _link_target(ls, doc, position)
    with ls.engine.store.snapshot() as conn:
        if target is not None:
            doc_id = queries.live_document_id(conn, doc.ws.id, target.path)
            heading = target.heading or None
        else:
            doc_id = queries.live_document_id(conn, doc.ws.id, doc.rel)
            m = _HEADING.match(doc.text(line))
            heading = m[2] if m and len(m[1]) > 1 else None
        places = navigate.references(conn, doc_id, heading) if doc_id is not None else []
    return [_location(doc, path, at) for path, at in places]


def _hover(ls: AutodocServer, doc: _Doc, position: types.Position) -> types.Hover | None:
    """On a link: its target's title (and heading), `path:line` and first lines."""
    target, where = _link_target(ls, doc, position)
    if target is None:
        return None
    with ls.engine.store.snapshot() as conn:
        lines = navigate.preview(conn, target)
    head = f"**{target.title}**" + (f" › {target.heading}" if target.heading else "")
    text = f"{head}\n\n`{target.path}:{target.line}`\n\n{lines}".rstrip()
    markup = types.MarkupContent(kind=types.MarkupKind.Markdown, value=text)
    return types.Hover(contents=markup, range=where)


def register_links(server: AutodocServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    async def definition(ls: AutodocServer, params: types.DefinitionParams) -> Any:
        def run():
            doc = _Doc(ls, params.text_document.uri)
            target, _ = _link_target(ls, doc, params.position)
            return None if target is None else _location(doc, target.path, target.line)

        return await _quietly(ls, run)

    @server.feature(types.TEXT_DOCUMENT_REFERENCES)
    async def references(ls: AutodocServer, params: types.ReferenceParams) -> Any:
        return await _quietly(
            ls, lambda: _references(ls, _Doc(ls, params.text_document.uri), params.position)
        )

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: AutodocServer, params: types.HoverParams) -> Any:
        return await _quietly(ls, lambda: _hover(ls, _Doc(ls, params.text_document.uri),
                                                 params.position))  # fmt: skip

    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_LINK)
    async def document_link(ls: AutodocServer, params: types.DocumentLinkParams) -> Any:
        def run():
            doc = _Doc(ls, params.text_document.uri)
            with ls.engine.store.snapshot() as conn:
                found = navigate.document_links(conn, doc.ws, doc.rel, doc.lines)
            caps = ls.client_capabilities.text_document
            tips = bool(caps and caps.document_link and caps.document_link.tooltip_support)
            out = []
            for line, start, end, target in found:
                if target is None:
                    continue
                uri = _uri(doc, target.path) + (f"#L{target.line}" if target.heading else "")
                tip = target.title + (f" › {target.heading}" if target.heading else "")
                out.append(types.DocumentLink(doc.range(line, start, end), target=uri,
                                              tooltip=tip if tips else None))  # fmt: skip
            return out

        return await _quietly(ls, run) or []

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: AutodocServer, params: types.DidOpenTextDocumentParams) -> None:
        await ls.in_reader(lambda: publish(ls, params.text_document.uri))

    def republish(workspace: str) -> None:  # on the writer thread, after a save was indexed
        for uri in list(server.workspace.text_documents):
            server.readers.submit(publish, server, uri)

    server.host.on_paths_indexed = republish


def publish(ls: AutodocServer, uri: str) -> None:
    """The document's unresolved links as diagnostics (none outside a served folder)."""
    try:
        _publish(ls, uri)
    except Exception:  # on a pool thread: nobody else would see it
        log.exception("diagnostics for %s failed", uri)


def _publish(ls: AutodocServer, uri: str) -> None:
    try:
        doc = _Doc(ls, uri)
    except (LookupError, OSError, ValueError):
        return
    with ls.engine.store.snapshot() as conn:
        rows = queries.unresolved_links(conn, doc.ws.id, doc.rel)
    diagnostics = [
        types.Diagnostic(
            range=doc.range(f.line - 1, 0, len(doc.text(f.line - 1))),
            message=f.message,
            severity=types.DiagnosticSeverity.Error,
            source=SOURCE,
            code=f.kind,
        )
        for f in link_findings(doc.ws, rows)
    ]
    params = types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics)
    if ls.loop is not None:  # messages go out from the loop's thread
        ls.loop.call_soon_threadsafe(ls.text_document_publish_diagnostics, params)


async def _quietly(ls: AutodocServer, run) -> Any:
    """A request on a document no served folder holds answers nothing, not an error."""
    try:
        return await ls.in_reader(run)
    except (LookupError, OSError, ValueError) as exc:
        log.debug("no link answer: %s", exc)
        return None

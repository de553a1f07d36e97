"""Links and headings in standard LSP clothes, for any editor's generic client: definition,
references, document links and hover on wiki and Markdown links, and the heading tree as
document symbols (an outline). Each is a `links.*` or `doc.outline` dispatcher method through the
host; this maps URIs to workspace paths (`file_uris`), passes the editor's text of an open
document (`EditorDocuments`) and its column units, and dresses the answers as LSP, naming an
open document by the client's own URI."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, NamedTuple

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from autodoc.serve.lsp.file_uris import UriError, uri_to_path
from autodoc.serve.lsp.lsp_framing import rpc_exception
from autodoc.serve.lsp.lsp_server import AutodocServer
from autodoc.wire.errors import INVALID_PARAMS, RpcError

log = logging.getLogger("autodoc.server")

UNITS = ("utf-8", "utf-16", "utf-32")


class Served(NamedTuple):
    """A document under a served folder: its workspace, its root-relative path, the root."""

    workspace: str
    rel: str
    root: Path

    @property
    def path(self) -> Path:
        """The file's real path (the host locates files by it, the open documents too)."""
        return self.root / self.rel


def setup(server: AutodocServer) -> None:
    _setup_outline(server)

    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    async def definition(ls: AutodocServer, params: types.DefinitionParams) -> Any:
        at, root = await _ask(ls, "links.definition", params.text_document.uri, params.position)
        if at is None or at["target"] is None:
            return None
        return lsp_location(ls, root, at["target"]["path"], at["target"]["line"])

    @server.feature(types.TEXT_DOCUMENT_REFERENCES)
    async def references(ls: AutodocServer, params: types.ReferenceParams) -> Any:
        """On a link: the places linking to its target; on a heading: to that heading (the
        title, level 1: to the document); elsewhere: every place that links to this document."""
        found, root = await _ask(ls, "links.references", params.text_document.uri,
                                 params.position)  # fmt: skip
        if found is None:
            return None
        return [
            lsp_location(ls, root, p["path"], p["line"], (p["start"], p["end"]))
            for p in found["places"]
        ]

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: AutodocServer, params: types.HoverParams) -> Any:
        """On a link: its target's title (and heading), `path:line` and first lines."""
        at, _ = await _ask(ls, "links.hover", params.text_document.uri, params.position)
        if at is None or at["target"] is None:
            return None
        return types.Hover(contents=preview_markup(at["target"], at["preview"]),
                           range=lsp_range(at))  # fmt: skip

    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_LINK)
    async def document_link(ls: AutodocServer, params: types.DocumentLinkParams) -> Any:
        found, root = await _ask(ls, "links.document", params.text_document.uri, None)
        if found is None:
            return []
        caps = ls.client_capabilities.text_document
        tips = bool(caps and caps.document_link and caps.document_link.tooltip_support)
        out = []
        for link in found["links"]:
            target = link["target"]
            if target is None:
                continue
            heading = target["heading"]
            uri = ls.documents.uri(root / target["path"])
            uri += f"#L{target['line']}" if heading else ""
            tip = target["title"] + (f" › {heading}" if heading else "")
            out.append(types.DocumentLink(lsp_range(link), target=uri,
                                          tooltip=tip if tips else None))  # fmt: skip
        return out


def _setup_outline(server: AutodocServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    async def document_symbol(ls: AutodocServer, params: types.DocumentSymbolParams) -> Any:
        """The heading tree: nested DocumentSymbols where the client takes them, else a flat
        list whose entries name the heading they sit under."""
        uri = params.text_document.uri
        found, _ = await _ask(ls, "doc.outline", uri, None)
        if found is None:
            return []
        caps = ls.client_capabilities.text_document
        symbols = caps.document_symbol if caps else None
        tree = bool(symbols and symbols.hierarchical_document_symbol_support)
        return _outline_tree(found["headings"]) if tree else _outline_flat(uri, found["headings"])


# -- from LSP to the methods and back ----------------------------------------------------------


async def _ask(
    ls: AutodocServer, method: str, uri: str, position: types.Position | None
) -> tuple[Any, Path]:
    """A `links.*` method on the document at `uri` (at `position`), and its folder's root; a
    document no served folder holds, or one the method cannot read, answers (None, root)."""
    doc = served_document(ls, uri)
    if doc is None:
        return None, Path()
    params: list[Any]
    if position is None:
        params = [doc.workspace, doc.rel, client_text(ls, doc)]
    else:
        opts = client_text(ls, doc, position.line)
        params = [doc.workspace, doc.rel, position.line + 1, position.character, opts]
    try:
        return await ls.call(method, params), doc.root
    except JsonRpcException as exc:
        if exc.code != INVALID_PARAMS:
            raise
        log.debug("no link answer: %s", exc.message)
        return None, doc.root


def served_document(ls: AutodocServer, uri: str) -> Served | None:
    """The document at `uri` if a served folder holds it; None outside every served folder
    and for a URI of another scheme. A file URI that names no file here is refused (-32602)
    with the reason."""
    try:
        path = uri_to_path(uri)
    except UriError as err:
        raise rpc_exception(RpcError(INVALID_PARAMS, str(err))) from None
    found = ls.host.locate(path) if path is not None else None
    if found is None:
        return None
    root = ls.host.served.get(found[0])
    return None if root is None else Served(found[0], found[1], root)


def client_units(ls: AutodocServer) -> str:
    """The column units the client and the server agreed on (UTF-16 unless another)."""
    encoding = ls.workspace.position_encoding
    units = getattr(encoding, "value", encoding)
    return units if units in UNITS else "utf-16"


def workspace_edit_caps(ls: AutodocServer) -> types.WorkspaceEditClientCapabilities | None:
    """What the client said it applies in a WorkspaceEdit (None: nothing said)."""
    caps = ls.client_capabilities.workspace
    return caps.workspace_edit if caps else None


def client_text(ls: AutodocServer, doc: Served, line: int | None = None) -> dict[str, Any]:
    """The client's column units, and the editor's text when the document is open there (by
    its path, however the client spelled its URI): the whole document, or its `line`
    (0-based). A document the client has not opened is read from disk by the method."""
    opts: dict[str, Any] = {"units": client_units(ls)}
    opened = ls.documents.document(doc.path)
    if opened is not None:
        if line is None:
            opts["text"] = opened.source
        else:
            lines = opened.lines
            opts["text"] = lines[line].rstrip("\r\n") if 0 <= line < len(lines) else ""
    return opts


def _outline_tree(headings: list[Any]) -> list[types.DocumentSymbol]:
    """Each heading inside the nearest one above it of a higher level."""
    top: list[types.DocumentSymbol] = []
    children: list[list[types.DocumentSymbol]] = []  # each heading's, by index
    for h, parent in zip(headings, _parents(headings), strict=True):
        children.append([])
        (top if parent is None else children[parent]).append(_heading_symbol(h, children[-1]))
    return top


def _outline_flat(uri: str, headings: list[Any]) -> list[types.SymbolInformation]:
    """Each heading with the one it sits under as its container."""
    symbols = [_heading_symbol(h, []) for h in headings]
    return [
        types.SymbolInformation(
            name=s.name,
            kind=s.kind,
            location=types.Location(uri=uri, range=s.range),
            container_name=None if parent is None else symbols[parent].name,
        )
        for s, parent in zip(symbols, _parents(headings), strict=True)
    ]


def _parents(headings: list[Any]) -> list[int | None]:
    """Each heading's parent: the index of the nearest heading above it of a higher level."""
    out: list[int | None] = []
    open_: list[int] = []  # the headings still open, outermost first
    for i, h in enumerate(headings):
        while open_ and headings[open_[-1]]["level"] >= h["level"]:
            open_.pop()
        out.append(open_[-1] if open_ else None)
        open_.append(i)
    return out


def _heading_symbol(h: Any, children: list[types.DocumentSymbol]) -> types.DocumentSymbol:
    """A heading as LSP's symbol: its section as the range (to the start of the line after its
    last), its words as the selection; an empty heading is named by its `#` run."""
    line = h["line"] - 1
    words = types.Range(types.Position(line, h["start"]), types.Position(line, h["end"]))
    section = types.Range(types.Position(line, 0), types.Position(h["line_end"], 0))
    return types.DocumentSymbol(
        name=h["text"] or "#" * h["level"],
        detail="#" * h["level"],
        kind=types.SymbolKind.String,
        range=section,
        selection_range=words,
        children=children,
    )


def lsp_location(
    ls: AutodocServer, root: Path, path: str, line: int, columns: tuple[int, int] = (0, 0)
) -> types.Location:
    """A file's line (and the columns on it, in the client's units) as a location, the file
    named as the client has it open."""
    start = types.Position(max(line - 1, 0), columns[0])
    end = types.Position(max(line - 1, 0), columns[1])
    return types.Location(uri=ls.documents.uri(root / path), range=types.Range(start, end))


def preview_markup(target: Any, preview: str) -> types.MarkupContent:
    """A link target as hover and completion show it: **title** › heading, `path:line`, then
    its first lines."""
    head = f"**{target['title']}**" + (f" › {target['heading']}" if target["heading"] else "")
    text = f"{head}\n\n`{target['path']}:{target['line']}`\n\n{preview}".rstrip()
    return types.MarkupContent(kind=types.MarkupKind.Markdown, value=text)


def lsp_range(span: Any) -> types.Range:
    """A `links.*` span (1-based `line`, `start`, `end` in the client's units) as LSP's."""
    line = span["line"] - 1
    return types.Range(types.Position(line, span["start"]), types.Position(line, span["end"]))

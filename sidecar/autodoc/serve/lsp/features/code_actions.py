"""Writing actions in standard LSP clothes: code actions (create the note a link asks for, make a
bare URL a Markdown link, copy a link to a section) and code lenses (a document's backlinks on
its title, a linked heading's on the heading). Each is a `doc.*` dispatcher method through the
host; this dresses the answers as LSP.

Two commands go with them. `autodoc.copyLink` and `autodoc.backlinks` are meant for the client
to run (the Neovim plugin registers both: a register, the quickfix list); a client that sends
them back answers here instead: the link in a message, the places as a list of locations.
"""

from __future__ import annotations

import logging
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from autodoc.serve.lsp.features.editor_links import (
    client_text,
    lsp_location,
    lsp_range,
    served_document,
    workspace_edit_caps,
)
from autodoc.serve.lsp.file_uris import path_to_uri
from autodoc.serve.lsp.lsp_framing import rpc_exception
from autodoc.serve.lsp.lsp_server import AutodocServer
from autodoc.wire.errors import INVALID_PARAMS, RpcError

log = logging.getLogger("autodoc.server")

COMMAND_COPY_LINK = "autodoc.copyLink"
COMMAND_BACKLINKS = "autodoc.backlinks"
KINDS = {
    "create_note": types.CodeActionKind.QuickFix,
    "convert_url": types.CodeActionKind.RefactorRewrite,
    "copy_link": types.CodeActionKind.Empty,
}


def setup(server: AutodocServer) -> None:
    options = types.CodeActionOptions(code_action_kinds=sorted(set(KINDS.values())))

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, options)
    async def code_action(ls: AutodocServer, params: types.CodeActionParams) -> Any:
        uri, at = params.text_document.uri, params.range.start
        found = await _call(ls, "doc.actions", uri, [at.line + 1, at.character])
        if found is None:
            return []
        actions = [_code_action(ls, uri, a) for a in found["actions"]]
        return [a for a in actions if a is not None]

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))
    async def code_lens(ls: AutodocServer, params: types.CodeLensParams) -> Any:
        uri = params.text_document.uri
        found = await _call(ls, "doc.lenses", uri, [])
        if found is None:
            return []
        return [_lens(uri, lens) for lens in found["lenses"]]

    @server.command(COMMAND_COPY_LINK)
    async def copy_link(ls: AutodocServer, *args: Any) -> Any:
        """autodoc.copyLink(link): a client that cannot copy shows the link instead."""
        if not args or not isinstance(args[0], str):
            raise rpc_exception(RpcError(INVALID_PARAMS, "autodoc.copyLink takes the link"))
        ls.show(f"Link to this section: {args[0]}", types.MessageType.Info)
        return args[0]

    @server.command(COMMAND_BACKLINKS)
    async def backlinks(ls: AutodocServer, *args: Any) -> Any:
        """autodoc.backlinks(uri, line, character): the places linking to the heading (or, on
        the title, to the document) at that position, as locations."""
        if (
            len(args) < 3
            or not isinstance(args[0], str)
            or not all(isinstance(a, int) for a in args[1:3])
        ):
            raise rpc_exception(
                RpcError(INVALID_PARAMS, "autodoc.backlinks takes uri, line, character")
            )
        doc = served_document(ls, args[0])
        if doc is None:
            return []
        opts = client_text(ls, doc, args[1])
        at = [doc.workspace, doc.rel, args[1] + 1, args[2], opts]
        found = await ls.call("links.references", at)
        return [
            lsp_location(ls, doc.root, p["path"], p["line"], (p["start"], p["end"]))
            for p in found["places"]
        ]

    def refresh_lenses(workspace: str) -> None:  # on the writer thread, after a run
        caps = server.client_capabilities.workspace
        if caps and caps.code_lens and caps.code_lens.refresh_support and server.loop:
            server.loop.call_soon_threadsafe(_refresh, server)

    server.host.indexed_listeners.append(refresh_lenses)


def _refresh(ls: AutodocServer) -> None:
    """Ask the client to ask for code lenses again (counts change as links are saved)."""
    ls.protocol.send_request(types.WORKSPACE_CODE_LENS_REFRESH, None)


async def _call(ls: AutodocServer, method: str, uri: str, position: list[int]) -> Any:
    """A `doc.*` method on the document at `uri` with the editor's whole text; None for a
    document no served folder holds or one the method cannot read."""
    doc = served_document(ls, uri)
    if doc is None:
        return None
    try:
        return await ls.call(method, [doc.workspace, doc.rel, *position, client_text(ls, doc)])
    except JsonRpcException as exc:
        if exc.code != INVALID_PARAMS:
            raise
        log.debug("no %s answer: %s", method, exc.message)
        return None


def _code_action(ls: AutodocServer, uri: str, action: Any) -> types.CodeAction | None:
    """An action as LSP's: an edit to apply, or a command for the client to run. A new note
    needs the client to create files; one that cannot is offered none."""
    kind = KINDS[action["kind"]]
    if action["kind"] == "copy_link":
        command = types.Command(action["title"], COMMAND_COPY_LINK, arguments=[action["text"]])
        return types.CodeAction(action["title"], kind=kind, command=command)
    if action["kind"] == "convert_url":
        edit = types.TextEdit(lsp_range(action), action["text"])
        change = types.WorkspaceEdit(changes={uri: [edit]})
        return types.CodeAction(action["title"], kind=kind, edit=change)
    if not _creates_files(ls):
        return None
    doc = served_document(ls, uri)
    if doc is None:
        return None
    new_uri = path_to_uri(doc.root / action["path"])
    # The new, empty document through its end: the text is the whole file (Neovim takes a
    # range that reaches past the last line as one whose final newline the file keeps).
    whole = types.Range(types.Position(0, 0), types.Position(1, 0))
    create = types.CreateFile(
        uri=new_uri, options=types.CreateFileOptions(overwrite=False, ignore_if_exists=True)
    )
    fill = types.TextDocumentEdit(
        text_document=types.OptionalVersionedTextDocumentIdentifier(uri=new_uri, version=None),
        edits=[types.TextEdit(whole, action["text"])],
    )
    change = types.WorkspaceEdit(document_changes=[create, fill])
    return types.CodeAction(action["title"], kind=kind, edit=change, is_preferred=True)


def _creates_files(ls: AutodocServer) -> bool:
    """Whether the client applies a `CreateFile` in a workspace edit (resource operations
    live in `documentChanges`: Neovim declares the one and not the other)."""
    edits = workspace_edit_caps(ls)
    return edits is not None and types.ResourceOperationKind.Create in (
        edits.resource_operations or []
    )


def _lens(uri: str, lens: Any) -> types.CodeLens:
    """ "N backlinks" (the title) or "N links" (a heading): running it lists them."""
    n = lens["links"]
    what = ("backlink" if not lens["heading"] else "link") + ("" if n == 1 else "s")
    line = lens["line"] - 1
    command = types.Command(f"{n} {what}", COMMAND_BACKLINKS, arguments=[uri, line, lens["start"]])
    return types.CodeLens(range=lsp_range(lens), command=command)

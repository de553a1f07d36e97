"""The client's open documents, and their unresolved links as diagnostics (the findings
`autodoc check` gives).

A document is registered with `EditorDocuments` as it opens (before anything can ask about it)
and dropped as it closes. Its diagnostics are published on open, and again for every open
document once an index run has published: a workspace's first index, a save, a watcher's batch.
The note that starts the server opens while its folder's first index runs; its diagnostics
wait for that index (published earlier they would name links to notes not yet indexed, and
nothing published again once it was done).
"""

from __future__ import annotations

import logging

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from autodoc.serve.lsp.features.editor_links import client_text, lsp_range, served_document
from autodoc.serve.lsp.lsp_server import AutodocServer
from autodoc.wire.errors import INVALID_PARAMS, RpcError

log = logging.getLogger("autodoc.server")

SOURCE = "autodoc"


def setup(server: AutodocServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: AutodocServer, params: types.DidOpenTextDocumentParams) -> None:
        """Registered at once (pygls has just stored the text under this URI), published on a
        reader thread."""
        uri = params.text_document.uri
        ls.documents.opened(uri, ls.workspace.get_text_document(uri))
        ls.readers.submit(publish, ls, uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: AutodocServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.documents.closed(params.text_document.uri)

    def republish(workspace: str) -> None:  # on the writer thread, after a run was indexed
        for uri, _ in server.documents.each():
            server.readers.submit(publish, server, uri)

    server.host.indexed_listeners.append(republish)


def publish(ls: AutodocServer, uri: str) -> None:
    """The document's unresolved links as diagnostics (none outside a served folder, none yet
    while its folder's first index runs); on a reader thread."""
    try:
        _publish(ls, uri)
    except JsonRpcException as exc:  # a URI that names no file here
        log.info("no diagnostics for %s: %s", uri, exc.message)
    except Exception:  # on a pool thread: nobody else would see it
        log.exception("diagnostics for %s failed", uri)


def _publish(ls: AutodocServer, uri: str) -> None:
    doc = served_document(ls, uri)
    if doc is None:
        return
    if doc.workspace not in ls.host.answering:
        log.debug("diagnostics for %s wait for its folder's index", uri)
        return  # published once the index is ready (`republish`)
    asked = [doc.workspace, doc.rel, client_text(ls, doc)]
    try:
        found = ls.host.dispatcher.call("links.diagnostics", asked)
    except RpcError as err:
        if err.code != INVALID_PARAMS:
            raise
        log.debug("no diagnostics for %s: %s", uri, err.message)
        return
    diagnostics = [
        types.Diagnostic(
            range=lsp_range(f),
            message=f["message"],
            severity=types.DiagnosticSeverity.Warning
            if f["severity"] == "warning"
            else types.DiagnosticSeverity.Error,
            source=SOURCE,
            code=f["kind"],
        )
        for f in found["findings"]
    ]
    published = types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics)
    if ls.loop is not None:  # messages go out from the loop's thread
        ls.loop.call_soon_threadsafe(ls.text_document_publish_diagnostics, published)

"""The LSP framing's bookkeeping: a session of many notifications (a didChange a keystroke)
leaves nothing behind per message. pygls 2.1 kept each notification's future for the whole
session, so every full garbage collection walked them all (completion requests over 50 ms)."""

from __future__ import annotations

import asyncio

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from autodoc.serve.lsp.lsp_framing import AutodocProtocol


async def test_handled_notifications_leave_no_futures_behind():
    server = LanguageServer("probe", "0", protocol_cls=AutodocProtocol)
    seen: list[int] = []

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def saved(ls: LanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        seen.append(int(params.text))

    protocol = server.protocol
    for version in range(200):
        protocol.handle_message(
            protocol.structure_message(
                {
                    "jsonrpc": "2.0",
                    "method": types.TEXT_DOCUMENT_DID_SAVE,
                    "params": {"textDocument": {"uri": "file:///n.md"}, "text": str(version)},
                }
            )
        )
    for _ in range(5):
        await asyncio.sleep(0)
    assert seen == list(range(200))
    assert len(protocol._request_futures) == 0

"""The LSP framing's bookkeeping: a session of many notifications (a didChange a keystroke)
leaves nothing behind per message. pygls 2.1 kept each notification's future for the whole
session, so every full garbage collection walked them all (completion requests over 50 ms)."""

from __future__ import annotations

import asyncio

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from autodoc.serve.early_handshake import LspWire
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


def test_shutdown_right_after_initialized_is_answered_without_error(tmp_path):
    """`shutdown` cancels the session's pending futures while it iterates over them; the
    futures dropped when done must not leave that dict mid-iteration (it did: every time, an
    error answer to `shutdown`)."""
    import io
    import json
    import os
    import subprocess
    import sys

    init = {"processId": None, "rootUri": None, "capabilities": {}}
    stream = b"".join(
        LspWire().frame(json.dumps(m).encode())
        for m in (
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
            {"jsonrpc": "2.0", "method": "initialized", "params": {}},
            {"jsonrpc": "2.0", "id": 2, "method": "shutdown"},
            {"jsonrpc": "2.0", "method": "exit"},
        )
    )
    env = {k: v for k, v in os.environ.items() if k != "AUTODOC_DB"}
    done = subprocess.run(
        [sys.executable, "-m", "autodoc", "--db", str(tmp_path / "s.db"), "serve"],
        input=stream, capture_output=True, env=env, cwd=tmp_path, timeout=60,
    )  # fmt: skip
    answers = {}
    out = io.BytesIO(done.stdout)
    while (body := LspWire().read(out)[1]) is not None:  # type: ignore[arg-type]
        message = json.loads(body)
        if "id" in message and "method" not in message:
            answers[message["id"]] = message
    assert answers.get(2) == {"jsonrpc": "2.0", "id": 2, "result": None}, done.stderr[-2000:]
    assert b"dictionary changed size" not in done.stderr

"""`autodoc serve`'s entry: the handshake answered while pygls loads, then a host over the
store (opened on its own thread), the LSP server over the host, every feature registered on the
server, and LSP on stdio until the client says exit.

This module imports nothing heavy itself: pygls, lsprotocol and the host load on a thread while
the main thread answers `initialize` from the answers pygls gave at an earlier start
(`early_handshake`); the server then reads the whole stream from its start.

The LSP front end reaches the index only through the host's dispatcher (pyproject.toml's
import-linter contract `lsp-one-door`).
"""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING

from autodoc.serve.early_handshake import (
    LSP_SCRIPT,
    AnswerBook,
    EarlyHandshake,
    InBackground,
    SdkOutput,
)

if TYPE_CHECKING:
    from autodoc.serve.host.serving import Host
    from autodoc.serve.lsp.lsp_server import AutodocServer


def build_server(host: Host) -> AutodocServer:
    """The server over `host`, every feature registered."""
    from autodoc.serve.lsp.features import setup_all
    from autodoc.serve.lsp.lsp_server import AutodocServer

    server = AutodocServer(host)
    setup_all(server)
    return server


def _loaded(db: str | None, question_log: str | None = None) -> AutodocServer:
    """pygls loaded and the server built over a host whose store opens on its own thread:
    a request that needs the store waits for it."""
    from autodoc.serve.host.serving import Host
    from autodoc.serve.lsp.lsp_framing import AnsweredErrors, LogToClient

    rpc_log = logging.getLogger("pygls.protocol.json_rpc")
    rpc_log.addFilter(AnsweredErrors())
    # A picker cancels on every keystroke, often after the answer went out: pygls warns about
    # each such "unknown message id"; only its errors are worth the editor's log.
    rpc_log.setLevel(logging.ERROR)
    host = Host.over_store(db, watch=False, question_log=question_log)
    host.asker = "editor"
    server = build_server(host)
    logging.getLogger("autodoc").addHandler(LogToClient(server.log_message))
    return server


def serve(db: str | None = None, question_log: str | None = None) -> int:
    """Run until the client says exit. Nothing but LSP messages ever goes to stdout (the CLI
    sends logs to stderr or `--log-file`)."""
    from autodoc.gaps.question_log import checked_log_path

    log = checked_log_path(question_log, [])  # a folder named: refused before the handshake
    loading = InBackground(lambda: _loaded(db, log))
    handshake = EarlyHandshake(LSP_SCRIPT, AnswerBook.for_server(LSP_SCRIPT))
    handshake.answer_first(sys.stdin.buffer, sys.stdout.buffer)
    server = loading.result()
    from autodoc.serve.lsp.lsp_framing import FramedStdin

    stdin = FramedStdin(handshake.replayed(sys.stdin.buffer))  # type: ignore[arg-type]
    try:
        server.start_io(stdin, SdkOutput(sys.stdout.buffer, handshake))  # type: ignore[arg-type]
    finally:
        server.shutdown_all()
    return 0

"""`autodoc serve`'s entry: a host over the store (opened on its own thread while `initialize`
is answered), the LSP server over the host, every feature registered on the server, then LSP on
stdio until the client says exit.

The LSP front end reaches the index only through the host's dispatcher (pyproject.toml's
import-linter contract `lsp-one-door`).
"""

from __future__ import annotations

import logging
import sys

from autodoc.serve.host import Host
from autodoc.serve.lsp.features import setup_all
from autodoc.serve.lsp.lsp_framing import AnsweredErrors, FramedStdin, LogToClient
from autodoc.serve.lsp.lsp_server import AutodocServer


def build_server(host: Host) -> AutodocServer:
    """The server over `host`, every feature registered."""
    server = AutodocServer(host)
    setup_all(server)
    return server


def serve(db: str | None = None) -> int:
    """Run until the client says exit. Nothing but LSP messages ever goes to stdout (the CLI
    sends logs to stderr or `--log-file`)."""
    rpc_log = logging.getLogger("pygls.protocol.json_rpc")
    rpc_log.addFilter(AnsweredErrors())
    # A picker cancels on every keystroke, often after the answer went out: pygls warns about
    # each such "unknown message id"; only its errors are worth the editor's log.
    rpc_log.setLevel(logging.ERROR)
    # The store opens on the host's own thread: `initialize` is answered meanwhile, and a
    # request that needs the store waits for it.
    server = build_server(Host.over_store(db, watch=False))
    logging.getLogger("autodoc").addHandler(LogToClient(server.log_message))
    try:
        server.start_io(FramedStdin(sys.stdin.buffer))  # type: ignore[arg-type]
    finally:
        server.shutdown_all()
    return 0

"""`autodoc mcp`'s entry: on stdio, the handshake answered while the MCP SDK loads; then the
agent server over a host whose store opens on its own thread, and MCP until the client closes
stdin. (`autodoc mcp --http`: `serve/http/mcp_http.py`, over the same `started` server.)

This module imports nothing heavy itself: the SDK (with pydantic), the host and the tools load
on a thread while the main thread answers `initialize` and `tools/list` from the answers the SDK
gave at an earlier start (`early_handshake`); the SDK then reads the whole stream from its start.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from autodoc.gaps.question_log import checked_log_path, logged_line
from autodoc.serve.early_handshake import (
    MCP_SCRIPT,
    AnswerBook,
    EarlyHandshake,
    InBackground,
)
from autodoc.wire.errors import INVALID_PARAMS, RpcError

if TYPE_CHECKING:
    from autodoc.serve.dispatcher import Dispatcher
    from autodoc.serve.mcp.mcp_server import AgentServer, AutodocMCP


def serve(
    db: str | None, roots: list[str], *, watch: bool = True, question_log: str | None = None
) -> int:
    """Run until the client closes stdin. Nothing but MCP messages ever goes to stdout (the
    CLI sends logs to stderr or `--log-file`)."""
    folders = checked_folders(roots)
    question_log = checked_log_path(question_log, folders)
    if question_log:  # said once at start; a server that logs nothing says nothing on stdio
        print(f"autodoc: MCP on stdio, {logged_line(question_log)}", file=sys.stderr, flush=True)
    loading = InBackground(
        lambda: started(db, folders, watch, served_only=False, question_log=question_log)
    )
    handshake = EarlyHandshake(MCP_SCRIPT, AnswerBook.for_server(MCP_SCRIPT))
    handshake.answer_first(sys.stdin.buffer, sys.stdout.buffer)
    server, agent = loading.result()
    server.handshake = handshake
    try:
        server.run("stdio")
    finally:
        agent.close()
    return 0


def checked_folders(roots: list[str]) -> list[Path]:
    """The folders to serve; -32602 for one that is not a folder, before anything opens."""
    folders = [Path(r) for r in roots]
    for folder in folders:
        if not folder.is_dir():
            raise RpcError(INVALID_PARAMS, f"not a folder: {folder}", {"path": str(folder)})
    return folders


def started(
    db: str | None,
    folders: list[Path],
    watch: bool,
    *,
    served_only: bool,
    question_log: str | None = None,
) -> tuple[AutodocMCP, AgentServer]:
    """The SDK loaded, the server built, every served folder opening in the background.

    The store and the folders start opening (and their model and indexes warming: `Host._warm`)
    before the SDK is imported, which takes ~0.6 s: the first question finds them open rather
    than waiting for them after the SDK (issue 57)."""
    from autodoc.serve.host.serving import Host

    # a tool call waits for the store, not the handshake
    host = Host.over_store(db, watch=watch, question_log=question_log)
    host.asker = "mcp"
    for root in folders:  # in order, on the writer thread
        host.open(root)
    if not folders:  # the workspace around the working directory, found once the store is open
        host.open(lambda: _default_root(host.dispatcher))
    from autodoc.serve.mcp.mcp_server import AgentServer, build_server

    agent = AgentServer(host, folders, served_only=served_only)
    return build_server(agent), agent


def _default_root(dispatcher: Dispatcher) -> Path:
    """The workspace around the working directory, else the working directory itself."""
    cwd = Path.cwd().resolve()
    for ws in dispatcher.call("workspace.list"):
        root = Path(ws["root"])
        if cwd == root or root in cwd.parents:
            return root
    return cwd

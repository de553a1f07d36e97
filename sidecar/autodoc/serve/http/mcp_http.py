"""`autodoc mcp --http`: the agent server's tools over the MCP SDK's streamable HTTP transport at
`/mcp`, every request carrying one of the server's bearer tokens (`server.Gate`'s rules) and
every body read as the SDK would before it parses it (`mcp_framing.CheckedBodies`). No
handshake to answer early: each request is its own.
"""

from __future__ import annotations

import sys

from autodoc.gaps.question_log import checked_log_path, logged_line
from autodoc.serve.http.server import Gate, listen_settings
from autodoc.serve.mcp.mcp_entry import checked_folders, started


def serve(
    db: str | None,
    roots: list[str],
    address: str,
    *,
    watch: bool = True,
    token_file: str | None = None,
    token_env: str | None = None,
    question_log: str | None = None,
) -> int:
    """Serve until interrupted; the address and tokens are refused before anything opens."""
    import uvicorn

    from autodoc.serve.mcp.mcp_framing import CheckedBodies

    bind, port, tokens = listen_settings(address, token_file, token_env)
    folders = checked_folders(roots)
    question_log = checked_log_path(question_log, folders)
    server, agent = started(db, folders, watch, served_only=True, question_log=question_log)
    try:
        # stateless, as the team server's: each request runs as its own token (a session's
        # calls would all run in the context of the request that opened it)
        mcp_app = server.streamable_http_app(stateless_http=True, json_response=True, host=bind)
        app = Gate(CheckedBodies(mcp_app), tokens)
        print(f"autodoc: MCP at http://{bind}:{port}/mcp, {len(tokens.tokens)} token(s),"
              f" {logged_line(question_log)}",
              file=sys.stderr, flush=True)  # fmt: skip
        uvicorn.run(app, host=bind, port=port, log_level="warning")
    finally:
        agent.close()
    return 0

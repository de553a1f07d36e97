"""`autodoc mcp`: the dispatcher as Model Context Protocol tools on stdio, for AI agents.

Agents pay per token and ask many small questions. So `search` answers with line spans and
snippets rather than files, `read_span` returns exactly the lines asked for, and `find` looks
a name up without ranking. Every tool calls the dispatcher: answers and error codes are those
of the CLI and the LSP server, and there is no second search path.

Long-lived like `autodoc serve`: the folders served are indexed in the background at start
(searches answer from what is indexed meanwhile; `status` says so), kept fresh by the file
watcher, and embedded in the background. Tool calls run on the SDK's worker threads; every
write runs on the refresher's one writer thread.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from autodoc import __version__
from autodoc.serve.early_handshake import EarlyHandshake
from autodoc.serve.host.askers import MAY_WRITE
from autodoc.serve.host.serving import Host
from autodoc.serve.mcp.compact_answers import compact_related, compact_search
from autodoc.serve.mcp.mcp_framing import EarlyAnswered, LineStdin
from autodoc.serve.mcp.tool_docs import (
    FIND_DOC,
    GAPS_DOC,
    INSTRUCTIONS,
    READ_SPAN_DOC,
    RELATED_DOC,
    SEARCH_DOC,
    STATUS_DOC,
)
from autodoc.wire.errors import FORBIDDEN, INVALID_PARAMS, METHOD_NOT_FOUND, RpcError

log = logging.getLogger(__name__)

# An agent pays per token: a handful of hits and matches unless it asks for more.
DEFAULT_SEARCH_LIMIT = 5
DEFAULT_FIND_LIMIT = 5
DEFAULT_RELATED_LIMIT = 5

# Hit fields an agent needs to cite and read a hit; the rest (bytes, ids, highlights) stay out.
READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)

Workspace = Annotated[
    str | None,
    Field(description="Workspace name (see `status`); default: the first one this server serves"),
]


class AgentServer:
    """The MCP adapter over a `Host`: each tool is one dispatcher call, shaped for a model."""

    def __init__(self, host: Host, roots: list[Path], *, served_only: bool = False) -> None:
        self.host = host  # every tool goes through it (`Host.call`: routed by the table)
        self.roots = roots
        self.served_only = served_only  # over HTTP: the store's other workspaces stay private

    def close(self) -> None:
        self.host.close()

    # -- tools -------------------------------------------------------------------------------

    def call(self, method: str, params: list[Any], shape=None) -> CallToolResult:
        """One dispatcher method, where the host runs it, as a tool result: compact JSON,
        structured as well as text."""
        return self.reply(lambda: self.host.call(method, params).result(), shape)

    def reply(self, answer: Callable[[], Any], shape=None) -> CallToolResult:
        """`answer()` as a tool result; a failure is a tool error whose text starts with the
        JSON-RPC code."""
        try:
            result = answer()
            if shape is not None:
                result = shape(result)
        except RpcError as err:
            return _error_result(err)
        text = json.dumps(result, ensure_ascii=False, separators=(",", ":"), default=str)
        return CallToolResult(
            content=[TextContent(type="text", text=text)], structured_content=result
        )

    def call_in(
        self, workspace: str | None, method: str, params: list[Any], shape=None
    ) -> CallToolResult:
        """`call` on a workspace (None: the default), its name first in the params."""
        try:
            name = self.host.workspace(workspace)
            if self.served_only:
                self.host.check_served(name)
        except RpcError as err:
            return _error_result(err)
        return self.call(method, [name, *params], shape)

    def search(
        self,
        query: Annotated[str, Field(description="What to look for, in words; may hold filters")],
        workspace: Workspace = None,
        limit: Annotated[int, Field(strict=True, ge=1, le=100, description="Hits to return")] = (
            DEFAULT_SEARCH_LIMIT
        ),
        stages: Annotated[
            list[Literal["lexical", "semantic", "rerank"]] | None,
            Field(description="Stages to run (default all available): words, meaning, rerank"),
        ] = None,
        facets: Annotated[
            dict[str, Any] | None,
            Field(description='Frontmatter filters, {"status": "accepted"}; a "-field" excludes'),
        ] = None,
        paths: Annotated[
            list[str] | None, Field(description="Only files under these path prefixes")
        ] = None,
    ) -> CallToolResult:
        opts: dict[str, Any] = {"limit": limit}
        if stages:
            opts["stages"] = list(stages)
        if facets:
            opts["facets"] = facets
        if paths:
            opts["paths"] = paths
        return self.call_in(workspace, "search.query", [query, opts], compact_search)

    def read_span(
        self,
        path: Annotated[str, Field(description="File path relative to the workspace root")],
        line_start: Annotated[int, Field(strict=True, description="First line, 1-based")] = 1,
        line_end: Annotated[
            int | None,
            Field(strict=True, description="Last line, inclusive; omit for the end of the file"),
        ] = None,
        workspace: Workspace = None,
    ) -> CallToolResult:
        return self.call_in(workspace, "doc.read", [path, line_start, line_end])

    def find(
        self,
        name: Annotated[str, Field(description="A title, alias, heading or identifier")],
        workspace: Workspace = None,
        exact: Annotated[bool, Field(strict=True, description="Whole-name matches only")] = False,
        limit: Annotated[
            int, Field(strict=True, ge=1, le=100, description="Matches to return")
        ] = DEFAULT_FIND_LIMIT,
    ) -> CallToolResult:
        return self.call_in(workspace, "search.find", [name, {"exact": exact, "limit": limit}])

    def related(
        self,
        path: Annotated[str, Field(description="A document's path relative to the root")],
        line: Annotated[
            int | None,
            Field(strict=True, ge=1, description="A line of the section; omit for the document"),
        ] = None,
        workspace: Workspace = None,
        limit: Annotated[
            int, Field(strict=True, ge=1, le=50, description="Sections to return")
        ] = DEFAULT_RELATED_LIMIT,
    ) -> CallToolResult:
        return self.call_in(workspace, "related", [path, line, {"limit": limit}], compact_related)

    def gaps(
        self,
        workspace: Workspace = None,
        since: Annotated[
            str | None, Field(description="From this ISO date or time on, e.g. 2026-12-01")
        ] = None,
    ) -> CallToolResult:
        if not MAY_WRITE.get():  # the log holds what every reader asked
            err = RpcError(FORBIDDEN, "the question log's report needs a token that may write")
            return _error_result(err)
        opts = {"since": since} if since else {}
        if workspace is None:  # every workspace the log holds questions of
            return self.call("gaps.report", [None, opts])
        return self.call_in(workspace, "gaps.report", [opts])

    def status(self) -> CallToolResult:
        def shown() -> Any:
            status = self.host.status()
            if self.served_only:
                status["workspaces"] = [w for w in status["workspaces"] if w["served"]]
            return status

        return self.reply(shown)


def _error_result(err: RpcError) -> CallToolResult:
    text = f"error {err.code}: {err.message}"
    if err.data:
        text += " " + json.dumps(err.data, ensure_ascii=False, default=str)
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content={"error": err.to_dict()},
        is_error=True,
    )


# -- the MCP server ---------------------------------------------------------------------------


class AutodocMCP(MCPServer):
    """Arguments the SDK rejects (wrong type, out of range, unknown tool) come back as tool
    errors with a JSON-RPC code too, like the dispatcher's own. Integers and booleans are
    strict (`"1"` and `true` are not line numbers) and an argument no tool takes is refused."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context=None):
        tool = self._tool_manager.get_tool(name)
        if tool is not None and isinstance(arguments, dict):
            unknown = sorted(set(arguments) - set(tool.parameters.get("properties", {})))
            if unknown:
                raise ToolError(
                    f"error {INVALID_PARAMS}: invalid arguments for {name}: "
                    f"unknown argument {unknown[0]!r}"
                )
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                detail = "; ".join(
                    f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
                    for e in cause.errors()
                )
                message = f"error {INVALID_PARAMS}: invalid arguments for {name}: {detail}"
                raise ToolError(message) from cause
            if str(exc).startswith("Unknown tool"):
                raise ToolError(f"error {METHOD_NOT_FOUND}: unknown tool {name!r}") from None
            raise

    # stdin from its start (what the early handshake read, then the rest); that handshake
    handshake: EarlyHandshake | None = None

    async def run_stdio_async(self) -> None:
        """The SDK's stdio loop, its lines measured first (`mcp_framing.LineStdin`); its
        answers to what the early handshake answered are dropped (`EarlyAnswered`)."""
        handshake = self.handshake
        raw = handshake.replayed(sys.stdin.buffer) if handshake else sys.stdin.buffer
        stdin = LineStdin(raw, handshake)  # type: ignore[arg-type]
        async with stdio_server(stdin=stdin) as (read_stream, write_stream):  # type: ignore[arg-type]
            stdin.write = write_stream
            out = EarlyAnswered(write_stream, handshake) if handshake else write_stream
            await self._lowlevel_server.run(
                read_stream, out, self._lowlevel_server.create_initialization_options()
            )


def build_server(agent: AgentServer) -> AutodocMCP:
    server = AutodocMCP(
        "autodoc", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING"
    )
    for fn, doc in (
        (agent.search, SEARCH_DOC),
        (agent.find, FIND_DOC),
        (agent.read_span, READ_SPAN_DOC),
        (agent.related, RELATED_DOC),
        (agent.status, STATUS_DOC),
        (agent.gaps, GAPS_DOC),
    ):
        server.add_tool(fn, name=fn.__name__, description=doc, annotations=READ_ONLY)
    return server

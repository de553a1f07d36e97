"""Search in standard LSP clothes: `workspace/symbol` (the best sections of every served folder)
and the `autodoc.*` commands (search, reindex, status), each a dispatcher method through the
host."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lsprotocol import types

from autodoc.parse.chunking import BREADCRUMB_SEP
from autodoc.serve.host.serving import INDEX_READY
from autodoc.serve.lsp.lsp_framing import rpc_exception
from autodoc.serve.lsp.lsp_server import AutodocServer
from autodoc.wire import protocol
from autodoc.wire.errors import INVALID_PARAMS, CancelToken, RpcError

SYMBOL_LIMIT = 20
COMMAND_SEARCH = "autodoc.search"
COMMAND_REINDEX = "autodoc.reindex"
COMMAND_STATUS = "autodoc.status"


def symbols(ls: AutodocServer, query: str, token: CancelToken) -> list[types.SymbolInformation]:
    """`workspace/symbol`: the best sections of every served folder, each named by its
    heading and contained in the breadcrumb above it."""
    hits: list[tuple[protocol.Hit, Path]] = []
    for name, root in sorted(ls.host.served.items()):
        params = [name, query, {"limit": SYMBOL_LIMIT}]
        answer = ls.host.call("search.query", params, cancel=token).result()  # on this reader
        hits.extend((h, root) for h in answer["hits"])
    hits.sort(key=lambda pair: -pair[0]["score"])
    return [_symbol(ls, hit, root) for hit, root in hits[:SYMBOL_LIMIT]]


def _symbol(ls: AutodocServer, hit: protocol.Hit, root: Path) -> types.SymbolInformation:
    """A hit as a symbol, its file named as the client has it open."""
    crumbs = hit["breadcrumb"].split(BREADCRUMB_SEP)
    return types.SymbolInformation(
        name=crumbs[-1] or hit["title"] or hit["path"],
        kind=types.SymbolKind.String,
        location=types.Location(
            uri=ls.documents.uri(root / hit["path"]),
            range=types.Range(
                start=types.Position(line=hit["line"] - 1, character=0),
                end=types.Position(line=hit["line_end"], character=0),
            ),
        ),
        container_name=BREADCRUMB_SEP.join(crumbs[:-1]) or None,
    )


def setup(server: AutodocServer) -> None:
    @server.feature(types.WORKSPACE_SYMBOL)
    async def workspace_symbol(
        ls: AutodocServer, params: types.WorkspaceSymbolParams
    ) -> list[types.SymbolInformation]:
        if not params.query.strip():
            return []
        token = ls.host.new_search()
        return await ls.in_reader(lambda: symbols(ls, params.query, token), token)

    @server.command(COMMAND_SEARCH)
    async def command_search(ls: AutodocServer, *args: Any) -> Any:
        """autodoc.search(query, opts?, workspace?)"""
        if not args or not isinstance(args[0], str):
            raise rpc_exception(RpcError(INVALID_PARAMS, "autodoc.search takes a query string"))
        query = args[0]
        opts = args[1] if len(args) > 1 else None
        workspace = args[2] if len(args) > 2 else None
        token = ls.host.new_search()

        def search() -> Any:
            params = [ls.host.workspace(workspace), query, opts]
            return ls.host.call("search.query", params, cancel=token).result()

        return await ls.in_reader(search, token)

    @server.command(COMMAND_REINDEX)
    async def command_reindex(ls: AutodocServer, *args: Any) -> Any:
        """autodoc.reindex(workspace?): walk the root again, with the first index's `$/progress`
        and `autodoc/indexProgress`; `autodoc/indexReady` follows."""
        host = ls.host
        names = [args[0]] if args and args[0] else sorted(host.served)
        out = []
        for name in names:
            if name not in host.served:
                raise rpc_exception(
                    RpcError(INVALID_PARAMS, f"not a folder of this server: {name}")
                )
            out.append(await ls.reindex_folder(name))
        ls.notify(INDEX_READY, host.status())
        return out

    @server.command(COMMAND_STATUS)
    async def command_status(ls: AutodocServer, *args: Any) -> Any:
        return await ls.in_reader(ls.host.status)

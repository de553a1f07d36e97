"""The LSP server's features, each group registered by one function (esbonio's layout):
the session's life and settings, the editor's folders and saves, and search in LSP clothes.
`server.build_server` calls them; every handler is a thin call into the server and its host."""

from __future__ import annotations

import asyncio
import logging
import os
from functools import partial
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from autodoc.serve.host import INDEX_READY, STATE_CHANGED
from autodoc.serve.lsp.lsp_framing import clean_options, rpc_exception, uri_to_path
from autodoc.serve.lsp.lsp_server import (
    AutodocServer,  # pygls reads the handlers' annotations at run time
)
from autodoc.serve.watch import Watcher
from autodoc.wire.errors import INVALID_PARAMS, RpcError

log = logging.getLogger("autodoc.server")

CONFIG_SECTION = "autodoc"
COMMAND_SEARCH = "autodoc.search"
COMMAND_REINDEX = "autodoc.reindex"
COMMAND_STATUS = "autodoc.status"


def register(server: AutodocServer) -> None:
    from autodoc.serve.lsp.lsp_links import register_links

    register_methods(server)
    register_session(server)
    register_folders(server)
    register_search(server)
    register_links(server)


def register_methods(server: AutodocServer) -> None:
    """Every dispatcher method as the custom request `autodoc/<method>`."""

    def method_handler(method: str):
        async def handler(ls: AutodocServer, params: Any) -> Any:
            return await ls.call(method, params)

        handler.__name__ = f"autodoc_{method.replace('.', '_')}"
        return handler

    for method in server.host.dispatcher.methods:
        server.feature(f"autodoc/{method}")(method_handler(method))


async def load_options(ls: AutodocServer) -> None:
    """The client's settings: initializationOptions, then `workspace/configuration`; an invalid
    one keeps its default and is shown."""
    raw = dict(ls.init_options) if isinstance(ls.init_options, dict) else {}
    caps = ls.client_capabilities.workspace
    if caps is not None and caps.configuration:
        try:
            got = await ls.workspace_configuration_async(
                types.ConfigurationParams(items=[types.ConfigurationItem(section=CONFIG_SECTION)])
            )
            if got and isinstance(got[0], dict):
                raw.update(got[0])
        except Exception as exc:  # a client without a settings store: keep the others
            log.info("workspace/configuration failed: %s", exc)
    ls.host.options, problems = clean_options(raw)
    for message in problems:
        ls.show(message)


def register_session(server: AutodocServer) -> None:
    """initialize, initialized, settings changed, shutdown."""

    @server.feature(types.INITIALIZE)
    def initialize(ls: AutodocServer, params: types.InitializeParams) -> None:
        folders = [
            p for f in params.workspace_folders or [] if (p := uri_to_path(f.uri)) is not None
        ]
        if not folders and params.root_uri and (p := uri_to_path(params.root_uri)):
            folders = [p]
        ls._initial_folders = folders
        ls.init_options = params.initialization_options or {}

    @server.feature(types.INITIALIZED)
    async def initialized(ls: AutodocServer, params: types.InitializedParams) -> None:
        ls.loop = asyncio.get_running_loop()
        await load_options(ls)
        ls.host.watcher = Watcher(ls.host.refresher)
        for root in ls._initial_folders:
            if root.is_dir():
                await ls.open_folder(root)
            else:
                ls.show(f"workspace folder is not a folder: {root}")

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(
        ls: AutodocServer, params: types.DidChangeConfigurationParams
    ) -> None:
        await load_options(ls)
        host = ls.host
        for name in list(host.served):
            try:
                await ls.in_writer(host.refresher.submit(partial(host.apply_options, name)))
            except JsonRpcException as exc:
                ls.show(f"cannot apply options to {name}: {exc.message}")
            host.check_state(name, "semantic")

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: AutodocServer, params: Any) -> None:
        ls.shutdown_all()


def register_folders(server: AutodocServer) -> None:
    """Workspace folders added and removed; saves re-index at once."""

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def did_change_folders(
        ls: AutodocServer, params: types.DidChangeWorkspaceFoldersParams
    ) -> None:
        for folder in params.event.removed:
            root = uri_to_path(folder.uri)
            for name, r in list(ls.host.served.items()):
                if root is not None and r == root.resolve():
                    ls.host.close_folder(name)
        for folder in params.event.added:
            root = uri_to_path(folder.uri)
            if root is not None and root.is_dir():
                await ls.open_folder(root)
                added = ls.engine.workspace_at(root)
                ls.notify(STATE_CHANGED, {"event": "workspace.added", "workspace": added})

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: AutodocServer, params: types.DidSaveTextDocumentParams) -> None:
        path = uri_to_path(params.text_document.uri)
        if path is None:
            return
        ls.host.saved(Path(os.path.realpath(path)))


def register_search(server: AutodocServer) -> None:
    """`workspace/symbol` and the `autodoc.*` commands."""

    @server.feature(types.WORKSPACE_SYMBOL)
    async def workspace_symbol(
        ls: AutodocServer, params: types.WorkspaceSymbolParams
    ) -> list[types.SymbolInformation]:
        if not params.query.strip():
            return []
        token = ls.host.new_search()
        return await ls.in_reader(lambda: ls.symbols(params.query, token), token)

    @server.command(COMMAND_SEARCH)
    async def command_search(ls: AutodocServer, *args: Any) -> Any:
        """autodoc.search(query, opts?, workspace?)"""
        if not args or not isinstance(args[0], str):
            raise rpc_exception(RpcError(INVALID_PARAMS, "autodoc.search takes a query string"))
        query = args[0]
        opts = args[1] if len(args) > 1 else None
        workspace = args[2] if len(args) > 2 else None
        token = ls.host.new_search()
        return await ls.in_reader(
            lambda: ls.engine.search(ls.host.workspace(workspace), query, opts, cancel=token),
            token,
        )

    @server.command(COMMAND_REINDEX)
    async def command_reindex(ls: AutodocServer, *args: Any) -> Any:
        """autodoc.reindex(workspace?): walk the root again; `autodoc/indexReady` follows."""
        host = ls.host
        names = [args[0]] if args and args[0] else sorted(host.served)
        out = []
        for name in names:
            if name not in host.served:
                raise rpc_exception(
                    RpcError(INVALID_PARAMS, f"not a folder of this server: {name}")
                )
            job = host.refresher.submit(partial(ls.engine.index_run, name, wait=False))
            out.append(await ls.in_writer(job))
        ls.notify(INDEX_READY, host.status())
        return out

    @server.command(COMMAND_STATUS)
    async def command_status(ls: AutodocServer, *args: Any) -> Any:
        return await ls.in_reader(ls.host.status)

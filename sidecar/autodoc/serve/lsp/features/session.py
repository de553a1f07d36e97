"""The session's life: initialize (the editor's folders and settings), initialized (read the
settings, start the watcher, serve each folder), settings changed, shutdown."""

from __future__ import annotations

import asyncio
import logging
from functools import partial
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from autodoc.serve.lsp.file_uris import UriError, uri_to_path
from autodoc.serve.lsp.lsp_framing import clean_options
from autodoc.serve.lsp.lsp_server import AutodocServer

log = logging.getLogger("autodoc.server")

CONFIG_SECTION = "autodoc"


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


def folder_path(ls: AutodocServer, uri: str) -> Path | None:
    """The local folder a workspace folder's URI names; None (and the person told why) for
    one that names no folder here."""
    try:
        path = uri_to_path(uri)
    except UriError as err:
        ls.show(f"workspace folder not served: {err}")
        return None
    if path is None:
        ls.show(f"workspace folder not served: {uri} is not a file URI")
    return path


def setup(server: AutodocServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: AutodocServer, params: types.InitializeParams) -> None:
        uris = [f.uri for f in params.workspace_folders or []]
        ls._initial_folders = uris or ([params.root_uri] if params.root_uri else [])
        ls.init_options = params.initialization_options or {}

    @server.feature(types.INITIALIZED)
    async def initialized(ls: AutodocServer, params: types.InitializedParams) -> None:
        ls.loop = asyncio.get_running_loop()
        await load_options(ls)
        try:
            await ls.store_opened()
        except Exception as exc:
            ls.show(f"cannot open the store: {getattr(exc, 'message', exc)}")
            return
        from autodoc.serve.host.watch import Watcher  # watchdog: after `initialize` was answered

        ls.host.watcher = Watcher(ls.host.refresher)
        for uri in ls._initial_folders:  # read now: a folder that names none can be shown
            root = folder_path(ls, uri)
            if root is None:
                continue
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

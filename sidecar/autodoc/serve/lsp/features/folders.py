"""The editor's folders: workspace folders added and removed; a save re-indexes its file at
once."""

from __future__ import annotations

import os
from pathlib import Path

from lsprotocol import types

from autodoc.serve.host.serving import STATE_CHANGED
from autodoc.serve.lsp.features.session import folder_path
from autodoc.serve.lsp.file_uris import UriError, uri_to_path
from autodoc.serve.lsp.lsp_server import AutodocServer


def setup(server: AutodocServer) -> None:
    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def did_change_folders(
        ls: AutodocServer, params: types.DidChangeWorkspaceFoldersParams
    ) -> None:
        for folder in params.event.removed:
            root = folder_path(ls, folder.uri)
            for name, r in list(ls.host.served.items()):
                if root is not None and r == root.resolve():
                    ls.host.close_folder(name)
        for folder in params.event.added:
            root = folder_path(ls, folder.uri)
            if root is not None and root.is_dir():
                added = await ls.open_folder(root)
                ls.notify(STATE_CHANGED, {"event": "workspace.added", "workspace": added})

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: AutodocServer, params: types.DidSaveTextDocumentParams) -> None:
        try:
            path = uri_to_path(params.text_document.uri)
        except UriError:
            return  # names no file here: nothing was saved that a folder holds
        if path is None:
            return
        ls.host.saved(Path(os.path.realpath(path)))

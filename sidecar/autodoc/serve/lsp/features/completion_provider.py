"""Link completion in LSP clothes: textDocument/completion after `[[`, `[[note#`, `[[note#^`,
`](`, `](path#` and a `#` starting a word (`links.complete`, with the editor's unsaved text and
its column units), and completionItem/resolve giving a note's first lines as the entry's
documentation (`links.preview`).

Each entry replaces the text typed after the opener, so that every client filters on what was
typed (Neovim's built-in completion by the start of `filterText`, eglot by the word at point,
VS Code fuzzily): an InsertReplaceEdit where the client takes one, else a TextEdit. Neovim
inserts a plain entry's text only up to its first space, so text with a space goes as a
snippet where the client takes snippets.
"""

from __future__ import annotations

import re
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from autodoc.serve.lsp.features.editor_links import (
    client_text,
    lsp_range,
    preview_markup,
    served_document,
)
from autodoc.serve.lsp.lsp_server import AutodocServer
from autodoc.wire.errors import INVALID_PARAMS

TRIGGERS = ["[", "(", "#", "/", "^"]
KINDS = {
    "note": types.CompletionItemKind.File,
    "file": types.CompletionItemKind.File,
    "folder": types.CompletionItemKind.Folder,
    "heading": types.CompletionItemKind.Reference,
    "block": types.CompletionItemKind.Reference,
    "tag": types.CompletionItemKind.Keyword,
}
_SNIPPET_SPECIAL = re.compile(r"([\\$}])")


def setup(server: AutodocServer) -> None:
    options = types.CompletionOptions(trigger_characters=TRIGGERS, resolve_provider=True)

    @server.feature(types.TEXT_DOCUMENT_COMPLETION, options)
    async def completion(ls: AutodocServer, params: types.CompletionParams) -> Any:
        uri, at = params.text_document.uri, params.position
        doc = served_document(ls, uri)
        if doc is None:
            return None
        request = [doc.workspace, doc.rel, at.line + 1, at.character, client_text(ls, doc)]
        try:
            found = await ls.call("links.complete", request)
        except JsonRpcException as exc:
            if exc.code != INVALID_PARAMS:
                raise
            return None
        if found["context"] == "none":
            return None
        caps = ls.client_capabilities.text_document
        item_caps = caps.completion.completion_item if caps and caps.completion else None
        replace = bool(item_caps and item_caps.insert_replace_support)
        snippets = bool(item_caps and item_caps.snippet_support)
        items = [_item(found, e, replace=replace, snippets=snippets) for e in found["items"]]
        return types.CompletionList(is_incomplete=found["incomplete"], items=items)

    @server.feature(types.COMPLETION_ITEM_RESOLVE)
    async def resolve(ls: AutodocServer, item: types.CompletionItem) -> types.CompletionItem:
        """The note's title, `path:line` and the first lines of the section entered."""
        data = item.data if isinstance(item.data, dict) else {}
        workspace, path, line = data.get("workspace"), data.get("path"), data.get("line")
        if not (isinstance(workspace, str) and isinstance(path, str) and path):
            return item
        try:
            got = await ls.call("links.preview", [workspace, path, line or None])
        except JsonRpcException as exc:
            if exc.code != INVALID_PARAMS:
                raise
            return item
        item.documentation = preview_markup(got, got["preview"])
        return item


def _item(found: Any, entry: Any, *, replace: bool, snippets: bool) -> types.CompletionItem:
    line = found["line"] - 1
    start, end = types.Position(line, found["start"]), types.Position(line, found["end"])
    text, form = entry["new_text"], None
    if snippets and any(c.isspace() for c in text):
        text, form = _SNIPPET_SPECIAL.sub(r"\\\1", text), types.InsertTextFormat.Snippet
    edit: types.TextEdit | types.InsertReplaceEdit
    if replace:
        whole = types.Position(line, max(found["replace_end"], found["end"]))
        edit = types.InsertReplaceEdit(text, types.Range(start, end), types.Range(start, whole))
    else:
        edit = types.TextEdit(types.Range(start, end), text)
    extra = [types.TextEdit(lsp_range(e), e["new_text"]) for e in found["extra"]]
    data = {"workspace": found["workspace"], "path": entry["path"], "line": entry["line"]}
    return types.CompletionItem(
        label=entry["label"],
        kind=KINDS[entry["kind"]],
        detail=entry["detail"],
        sort_text=f"{entry['sort']:04d}",
        filter_text=entry["filter_text"],
        text_edit=edit,
        insert_text_format=form,
        additional_text_edits=extra or None,
        data=data if entry["path"] else None,
    )

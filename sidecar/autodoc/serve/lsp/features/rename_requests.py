"""Renaming in standard LSP clothes: `textDocument/prepareRename` and `textDocument/rename` on a
heading, a note's title or a link (`links.prepare_rename`, `links.rename`), and
`workspace/willRenameFiles` for a Markdown file the client renames itself
(`links.file_renamed`). Each is a dispatcher method through the host; this passes the text of
every document the client has open (so edits land on what it shows), its column units and
whether it can rename files, and dresses the answer as one `WorkspaceEdit`: versioned
`TextDocumentEdit`s and a `RenameFile` where the client takes resource operations, plain
`changes` where it takes nothing more and nothing is renamed. A refusal reaches the client as
the error, with its message."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from autodoc.serve.lsp.features.editor_links import (
    client_units,
    lsp_range,
    served_document,
    workspace_edit_caps,
)
from autodoc.serve.lsp.file_uris import path_to_uri
from autodoc.serve.lsp.lsp_framing import rpc_exception
from autodoc.serve.lsp.lsp_server import AutodocServer
from autodoc.wire.errors import INVALID_PARAMS, RpcError

log = logging.getLogger("autodoc.server")

# The client asks before renaming a Markdown file (glob: one pattern each, for clients without
# `{a,b}`).
MARKDOWN_FILES = types.FileOperationRegistrationOptions(
    filters=[
        types.FileOperationFilter(
            pattern=types.FileOperationPattern(
                glob=glob, matches=types.FileOperationPatternKind.File
            ),
            scheme="file",
        )
        for glob in ("**/*.md", "**/*.markdown")
    ]
)

COMMAND_RENAME_FILE = "autodoc.renameFile"
Opened = dict[str, tuple[str, int]]  # root-relative path -> (the client's uri, version)
# An answer of the dispatcher, the root of its workspace, and that workspace's open documents.
Answered = tuple[dict[str, Any], Path, Opened]


def setup(server: AutodocServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_PREPARE_RENAME)
    async def prepare_rename(ls: AutodocServer, params: types.PrepareRenameParams) -> Any:
        asked = _asked_at(ls, params)
        if asked is None:
            return None
        at, opts, _, _ = asked
        found = await ls.call("links.prepare_rename", [*at, opts])
        return types.PrepareRenamePlaceholder(
            range=lsp_range(found), placeholder=found["placeholder"]
        )

    @server.feature(types.TEXT_DOCUMENT_RENAME)
    async def rename(ls: AutodocServer, params: types.RenameParams) -> Any:
        asked = _asked_at(ls, params)
        if asked is None:
            return None
        at, opts, root, opened = asked
        answer = await ls.call("links.rename", [*at, params.new_name, opts])
        log.info("rename: %s links in %s files", answer["links"], answer["files"])
        return _workspace_edit(ls, [(answer, root, opened)], rename_files=True)

    @server.command(COMMAND_RENAME_FILE)
    async def rename_file(ls: AutodocServer, *args: Any) -> Any:
        """autodoc.renameFile(uri, new_name): the note's own file renamed from inside it."""
        return await renamed_file(ls, args)

    @server.feature(types.WORKSPACE_WILL_RENAME_FILES, MARKDOWN_FILES)
    async def will_rename_files(ls: AutodocServer, params: types.RenameFilesParams) -> Any:
        """The links to each renamed Markdown file, rewritten (the client renames the file)."""
        answers: list[Answered] = []
        for move in params.files:
            old, new = served_document(ls, move.old_uri), served_document(ls, move.new_uri)
            if old is None or new is None or old.workspace != new.workspace:
                continue  # outside a served folder, or into another one: nothing to keep
            opts, opened = _options(ls, old.workspace)
            asked = [old.workspace, old.rel, new.rel, opts]
            try:
                answer = await ls.call("links.file_renamed", asked)
            except JsonRpcException as exc:
                ls.show(f"links to {old.rel} not updated: {exc.message}")
                continue
            for left in answer["left"]:
                ls.show(f"{left['path']}:{left['line']}: {left['reason']}")
            answers.append((answer, old.root, opened))
        if not any(a["edits"] for a, _, _ in answers):
            return None
        return _workspace_edit(ls, answers, rename_files=False)


def _asked_at(
    ls: AutodocServer, params: types.PrepareRenameParams | types.RenameParams
) -> tuple[list[Any], dict[str, Any], Path, Opened] | None:
    """([workspace, path, line (1-based), column] of the request, the options, the root and
    the workspace's open documents); None outside a served folder."""
    doc = served_document(ls, params.text_document.uri)
    if doc is None:
        return None
    opts, opened = _options(ls, doc.workspace)
    at = [doc.workspace, doc.rel, params.position.line + 1, params.position.character]
    return at, opts, doc.root, opened


def _options(ls: AutodocServer, name: str) -> tuple[dict[str, Any], Opened]:
    """The client's units, whether it renames files, and the text of every document it has
    open in the workspace (with the uri and version an edit to it names)."""
    texts: dict[str, str] = {}
    opened: Opened = {}
    for uri, document in ls.documents.each():  # each names a local file
        doc = served_document(ls, uri)
        if doc is not None and doc.workspace == name:
            texts[doc.rel] = document.source
            opened[doc.rel] = (uri, document.version or 0)
    opts = {"units": client_units(ls), "open": texts, "files": _renames(ls)}
    return opts, opened


def _renames(ls: AutodocServer) -> bool:
    """The client takes a `RenameFile` in a workspace edit."""
    edit = workspace_edit_caps(ls)
    ops = (edit.resource_operations if edit else None) or []
    return types.ResourceOperationKind.Rename in ops


def _document_changes(ls: AutodocServer) -> bool:
    edit = workspace_edit_caps(ls)
    return bool(edit and edit.document_changes)


def _workspace_edit(ls: AutodocServer, answers: list[Answered], *,
                    rename_files: bool) -> types.WorkspaceEdit:  # fmt: skip
    """The answers' edits as one WorkspaceEdit: each file's edits at the text the client has
    (its version where it has it open), then the file renamed. Each answer's paths are under
    its own workspace's root."""
    by_uri: dict[str, list[types.TextEdit]] = {}
    versions: dict[str, int | None] = {}
    moves: list[types.RenameFile] = []
    for answer, root, opened in answers:
        for e in answer["edits"]:
            uri, versions_at = _uri(e["path"], root, opened)
            versions[uri] = versions_at
            by_uri.setdefault(uri, []).append(types.TextEdit(lsp_range(e), e["new_text"]))
        if rename_files and answer["new_path"]:
            old = _uri(answer["path"], root, opened)[0]
            options = types.RenameFileOptions(overwrite=False, ignore_if_exists=False)
            new = path_to_uri(root / answer["new_path"])
            moves.append(types.RenameFile(old_uri=old, new_uri=new, options=options))
    for uri, edits in by_uri.items():
        by_uri[uri] = _without_overlaps(ls, uri, edits)
    if not moves and not _document_changes(ls):
        return types.WorkspaceEdit(changes=by_uri)
    changes: list[Any] = [
        types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri, versions[uri]),
            edits=edits,
        )
        for uri, edits in by_uri.items()
    ]
    return types.WorkspaceEdit(document_changes=changes + moves)


def _uri(path: str, root: Path, opened: Opened) -> tuple[str, int | None]:
    """The uri and version the client has for this path, or the file's uri (no version)."""
    return opened[path] if path in opened else (path_to_uri(root / path), None)


def _without_overlaps(
    ls: AutodocServer, uri: str, edits: list[types.TextEdit]
) -> list[types.TextEdit]:
    """A document's edits with none overlapping another (a client may reject or garble a
    WorkspaceEdit whose edits overlap): two files renamed at once that link to each other
    each rewrite the same link, each for the other staying; the first edit is kept and the
    person told."""
    kept: list[types.TextEdit] = []
    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character)):
        last = kept[-1].range.end if kept else None
        start = e.range.start
        if last is not None and (start.line, start.character) < (last.line, last.character):
            ls.show(f"{uri}:{start.line + 1}: a link between files renamed together was not"
                    " updated; rename them one at a time")  # fmt: skip
            continue
        kept.append(e)
    return kept


async def renamed_file(ls: AutodocServer, args: tuple[Any, ...]) -> dict[str, Any]:
    """autodoc.renameFile(uri, new_name): the note's own file renamed from inside it (a note
    not named after its title, as every Dendron note, has no word in it that names its file),
    every link to it rewritten; the edit is applied through `workspace/applyEdit`. Answers
    {new_path, links, files, applied}."""
    if len(args) < 2 or not all(isinstance(a, str) for a in args[:2]):
        raise rpc_exception(RpcError(INVALID_PARAMS, "autodoc.renameFile takes uri, name"))
    doc = served_document(ls, args[0])
    if doc is None:
        raise rpc_exception(RpcError(INVALID_PARAMS, f"{args[0]} is in no served folder"))
    opts, opened = _options(ls, doc.workspace)
    at = [doc.workspace, doc.rel, 1, 0]
    answer = await ls.call("links.rename", [*at, args[1], {**opts, "subject": "file"}])
    edit = _workspace_edit(ls, [(answer, doc.root, opened)], rename_files=True)
    applied = await ls.workspace_apply_edit_async(
        types.ApplyWorkspaceEditParams(edit=edit, label=f"Rename {doc.rel}")
    )
    return {"new_path": answer["new_path"], "links": answer["links"],
            "files": answer["files"], "applied": applied.applied}  # fmt: skip

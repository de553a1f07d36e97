"""Renaming over stdio, as Neovim and VS Code drive `autodoc serve` (pytest-lsp):
prepareRename and rename on a heading, a link and a note's title, the WorkspaceEdit each
client's capabilities call for (versioned document changes and a RenameFile, or plain changes),
`workspace/willRenameFiles`, refusals, and columns in the negotiated units. Each WorkspaceEdit is
applied to the files as an editor would, and the server, told of the saves, follows the links
to where they now lead."""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pytest_lsp import LanguageClient, client_capabilities, make_test_lsp_client

from ..rename_apply import edited
from . import test_lsp
from .test_lsp import WAIT_S, _doc, _start, _stop, _uri, until

# test_lsp's fixtures: the example vault served to a Neovim-like and a VS Code-like client.
client, vault, _isolated_store = test_lsp.client, test_lsp.vault, test_lsp._isolated_store


def _units(client: LanguageClient) -> str:
    return client.init_result.capabilities.position_encoding or "utf-16"


def _pos(vault: Path, rel: str, line: int, text: str, into: int = 2) -> types.Position:
    """Where `text` is on 1-based `line` of the file, `into` characters in (ASCII lines)."""
    return types.Position(line - 1, (vault / rel).read_text().splitlines()[line - 1].index(text)
                          + into)  # fmt: skip


async def _prepare(client, vault: Path, rel: str, at: types.Position) -> Any:
    params = types.PrepareRenameParams(text_document=_doc(vault, rel), position=at)
    return await client.text_document_prepare_rename_async(params)


async def _rename(client, vault: Path, rel: str, at: types.Position, new: str) -> Any:
    params = types.RenameParams(text_document=_doc(vault, rel), position=at, new_name=new)
    return await client.text_document_rename_async(params)


def _path(uri: str) -> Path:
    return Path(unquote(urlparse(uri).path))


def _apply(edit: types.WorkspaceEdit, units: str, buffers: dict[str, str] | None = None) -> list:
    """Apply a WorkspaceEdit as an editor does: each file's edits (an open buffer's to its text
    in `buffers`, keyed by uri), then the renames in order. What it did, as (kind, uri)."""
    done = []
    steps: list[Any] = list(edit.document_changes or [])
    for uri, edits in (edit.changes or {}).items():
        unversioned = types.OptionalVersionedTextDocumentIdentifier(uri, None)
        steps.append(types.TextDocumentEdit(unversioned, list(edits)))
    for step in steps:
        if isinstance(step, types.RenameFile):
            os.rename(_path(step.old_uri), _path(step.new_uri))
            done.append(("rename", step.old_uri, step.new_uri))
            continue
        uri = step.text_document.uri
        ours = [
            {"line": e.range.start.line + 1, "start": e.range.start.character,
             "end": e.range.end.character, "new_text": e.new_text}
            for e in step.edits
        ]  # fmt: skip
        assert all(e.range.start.line == e.range.end.line for e in step.edits)
        if buffers is not None and uri in buffers:
            buffers[uri] = edited(buffers[uri], ours, units)
        else:
            _path(uri).write_text(edited(_path(uri).read_text(), ours, units))
        done.append(("edit", uri, step.text_document.version))
    return done


def _saved(client: LanguageClient, vault: Path, *rels: str) -> None:
    for rel in rels:
        client.text_document_did_save(types.DidSaveTextDocumentParams(_doc(vault, rel)))


async def _leads_to(client, vault: Path, rel: str, at: types.Position) -> tuple[str, int] | None:
    got = await client.text_document_definition_async(
        types.DefinitionParams(text_document=_doc(vault, rel), position=at)
    )
    if not got:
        return None
    loc = got[0] if isinstance(got, list) else got
    return loc.uri.rsplit("/vault/", 1)[1], loc.range.start.line + 1


async def test_a_heading_renames_with_every_link_to_it(client: LanguageClient, vault: Path):
    rel = "notes/search-pipeline.md"
    got = await _prepare(client, vault, rel, types.Position(38, 2))  # `Fusion`, a setext heading
    assert got.placeholder == "Fusion"
    assert got.range == types.Range(types.Position(38, 0), types.Position(38, 6))
    edit = await _rename(client, vault, rel, types.Position(38, 2), "Rank fusion")
    vscode = bool(client.capabilities.workspace.workspace_edit.document_changes)
    # VS Code takes versioned document changes; Neovim (no documentChanges) plain changes
    assert (edit.document_changes is not None) == vscode and (edit.changes is not None) != vscode
    assert _apply(edit, _units(client)) == [("edit", _uri(vault, rel), None)]
    lines = (vault / rel).read_text().splitlines()
    assert lines[38] == "Rank fusion" and "See [[search-pipeline#Rank fusion]]" in lines[43]
    _saved(client, vault, rel)
    link = _pos(vault, rel, 44, "[[search-pipeline#")

    async def followed():
        return await _leads_to(client, vault, rel, link) == (rel, 39)

    await until(followed)


async def test_a_note_renamed_from_a_link_moves_its_file(client: LanguageClient, vault: Path):
    at = _pos(vault, "README.md", 13, "[[0003")
    got = await _prepare(client, vault, "README.md", at)
    assert got.placeholder == "0003-embedded-sqlite-store"
    edit = await _rename(client, vault, "README.md", at, "0003-sqlite-store")
    *edits, move = edit.document_changes  # both clients take resource operations
    assert isinstance(move, types.RenameFile)
    assert move.new_uri == (vault / "adr" / "0003-sqlite-store.md").resolve().as_uri()
    assert sorted(e.text_document.uri.rsplit("/vault/", 1)[1] for e in edits) == [
        "README.md", "adr/0002-store-documents-in-postgres.md", "adr/0004-lease-recovery.md"
    ]  # fmt: skip
    _apply(edit, _units(client))
    assert not (vault / "adr/0003-embedded-sqlite-store.md").exists()
    assert "[[0003-sqlite-store]]" in (vault / "README.md").read_text()
    text = (vault / "adr/0004-lease-recovery.md").read_text()
    assert "Under [[0003-sqlite-store]]" in text and "(0003-sqlite-store.md)" in text
    assert (
        "superseded_by: adr/0003-sqlite-store.md"
        in (vault / "adr/0002-store-documents-in-postgres.md").read_text()
    )
    _saved(client, vault, "README.md", "adr/0004-lease-recovery.md",
           "adr/0002-store-documents-in-postgres.md")  # fmt: skip

    async def followed():  # the watcher sees the new file; the saves, the new links
        return await _leads_to(client, vault, "README.md", at) == ("adr/0003-sqlite-store.md", 1)

    await until(followed)


async def test_refusals_reach_the_client_with_their_reason(client: LanguageClient, vault: Path):
    rel = "notes/search-pipeline.md"
    with pytest.raises(JsonRpcException) as err:
        await _prepare(client, vault, rel, types.Position(8, 3))  # prose
    assert "nothing to rename here" in err.value.message
    with pytest.raises(JsonRpcException) as err:
        await _rename(client, vault, rel, types.Position(38, 2), "   ")
    assert "empty" in err.value.message
    with pytest.raises(JsonRpcException) as err:
        await _rename(client, vault, rel, types.Position(38, 2), "Known gaps")
    assert "has a heading 'Known gaps' already" in err.value.message
    at = _pos(vault, "README.md", 13, "[[0003")
    with pytest.raises(JsonRpcException) as err:
        await _rename(client, vault, "README.md", at, "0004-lease-recovery")
    assert "exists already" in err.value.message


async def test_columns_are_the_negotiated_units_on_the_unsaved_text(client, vault: Path):
    """An open, unsaved document with an emoji before its link: the edit's columns count it
    as the client does (UTF-8: 4, UTF-16: 2), on the text the client has, at its version."""
    uri = _uri(vault, "notes/draft.md")
    text = "# Draft\n\n😀 é [[search-pipeline#Fusion]] and [[search-pipeline]].\n"
    item = types.TextDocumentItem(uri, "markdown", 7, text)
    client.text_document_did_open(types.DidOpenTextDocumentParams(item))
    edit = await _rename(
        client, vault, "notes/search-pipeline.md", types.Position(38, 2), "Merging"
    )
    buffers = {uri: text}
    done = _apply(edit, _units(client), buffers)
    assert buffers[uri] == "# Draft\n\n😀 é [[search-pipeline#Merging]] and [[search-pipeline]].\n"
    if edit.document_changes is not None:  # the open document's edit names its version
        assert ("edit", uri, 7) in done
    changes = {uri: e for uri, e in (edit.changes or {}).items()} or {
        c.text_document.uri: c.edits for c in edit.document_changes
    }
    start = changes[uri][0].range.start.character
    assert start == {"utf-8": 26, "utf-16": 23, "utf-32": 22}[_units(client)]


async def test_a_client_without_file_renames_is_told_and_renames_headings(vault: Path):
    caps = client_capabilities("neovim")
    caps.workspace.workspace_edit.resource_operations = []
    client = make_test_lsp_client()
    ready = await _start(client, [vault], {"embedding": "none"}, caps)
    try:
        await asyncio.wait_for(ready, WAIT_S)
        at = _pos(vault, "README.md", 13, "[[0003")
        with pytest.raises(JsonRpcException) as err:
            await _prepare(client, vault, "README.md", at)
        assert "resourceOperations" in err.value.message
        edit = await _rename(client, vault, "notes/search-pipeline.md", types.Position(38, 2),
                             "Rank fusion")  # fmt: skip
        assert edit.document_changes is None and len(edit.changes) == 1
    finally:
        await _stop(client)


async def test_will_rename_files_updates_the_links(vault: Path):
    client = make_test_lsp_client()
    ready = asyncio.ensure_future(client.wait_for_notification("autodoc/indexReady"))
    await client.start_io(sys.executable, "-m", "autodoc", "serve")
    client.init_result = await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual_studio_code"),
            workspace_folders=[types.WorkspaceFolder(uri=vault.as_uri(), name="vault")],
            initialization_options={"embedding": "none"},
        )
    )
    try:
        await asyncio.wait_for(ready, WAIT_S)
        caps = client.init_result.capabilities.workspace.file_operations.will_rename
        assert [f.pattern.glob for f in caps.filters] == ["**/*.md", "**/*.markdown"]
        old, new = vault / "notes" / "onboarding.md", vault / "guides" / "first-week.md"
        params = types.RenameFilesParams(
            files=[types.FileRename(old_uri=old.resolve().as_uri(), new_uri=new.as_uri())]
        )
        edit = await client.workspace_will_rename_files_async(params)
        assert not any(isinstance(c, types.RenameFile) for c in edit.document_changes)
        _apply(edit, _units(client))
        new.parent.mkdir()
        old.rename(new)  # the client renames the file itself
        assert "- [[first-week]]: a first-week guide" in (vault / "README.md").read_text()
        # its own relative link, from its new folder (the same depth: unchanged)
        assert "(../adr/0001-record-architecture-decisions.md)" in new.read_text()
        _saved(client, vault, "README.md")
        at = _pos(vault, "README.md", 19, "[[first-week]]")

        async def followed():
            return await _leads_to(client, vault, "README.md", at) == ("guides/first-week.md", 1)

        await until(followed)
    finally:
        await _stop(client)


async def test_will_rename_files_of_two_roots_and_of_two_linked_notes_at_once(tmp_path: Path):
    """One willRenameFiles with a move in each of two served roots: each edit names a file of
    its own root. Two notes that link to each other moved together: no two edits overlap (a
    client would reject or garble them); the person is told which link to fix."""
    one, two = tmp_path / "one", tmp_path / "two"
    for root in (one, two):
        (root / "notes").mkdir(parents=True)
        (root / "notes" / "a.md").write_text("# A\n\nSee [b](b.md).\n")
        (root / "notes" / "b.md").write_text("# B\n\nSee [a](a.md).\n")
        (root / "index.md").write_text("[[notes/a]] and [[notes/b]]\n")
    client = make_test_lsp_client()
    ready = await _start(client, [one, two], {"embedding": "none"}, "visual_studio_code")
    try:
        await asyncio.wait_for(ready, WAIT_S)

        async def both_indexed():
            for name in ("one", "two"):
                try:
                    got = await client.protocol.send_request_async(
                        "autodoc/doc.indexed", [name, ["notes/a.md", "notes/b.md"]]
                    )
                except JsonRpcInvalidParams:  # `ready` is the first folder's: the second is
                    return False  # named when the writer thread opens it, next
                if len(got.indexed) != 2:
                    return False
            return True

        await until(both_indexed)

        def move(root: Path, old: str, new: str) -> types.FileRename:
            return types.FileRename((root / old).resolve().as_uri(), (root / new).as_uri())

        params = types.RenameFilesParams(files=[
            move(one, "notes/a.md", "x/a.md"), move(two, "notes/a.md", "y/a.md"),
            move(two, "notes/b.md", "z/b.md"),
        ])  # fmt: skip
        edit = await client.workspace_will_rename_files_async(params)
        by_uri = {c.text_document.uri: c.edits for c in edit.document_changes}
        assert sorted(by_uri) == sorted(
            (root / rel).resolve().as_uri()
            for root, rel in ((one, "index.md"), (one, "notes/a.md"), (one, "notes/b.md"),
                              (two, "index.md"), (two, "notes/a.md"), (two, "notes/b.md"))
        )  # fmt: skip
        for edits in by_uri.values():
            spans = sorted((e.range.start.line, e.range.start.character, e.range.end.character)
                           for e in edits)  # fmt: skip
            assert all(a[0] < b[0] or a[2] <= b[1] for a, b in itertools.pairwise(spans))
        _apply(edit, "utf-16")  # ASCII: any units
        assert (one / "index.md").read_text() == "[[x/a]] and [[notes/b]]\n"
        assert (two / "index.md").read_text() == "[[y/a]] and [[z/b]]\n"

        async def told():
            return [m for m in client.messages if "rename them one at a time" in m.message]

        await until(told)
    finally:
        await _stop(client)

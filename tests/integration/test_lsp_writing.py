"""Writing features of `autodoc serve` over stdio, as Neovim and VS Code drive it (pytest-lsp):
code actions (create the missing note, convert a bare URL, copy a link to a section) and code
lenses (backlinks), with the commands that go with them."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Union

from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities, make_test_lsp_client

from ..conftest import write
from . import test_lsp
from .test_lsp import WAIT_S, _doc, _start, _stop, _uri, execute, until

client, vault, _isolated_store = test_lsp.client, test_lsp.vault, test_lsp._isolated_store

LINKER = "# Linker\n\nSee [[target]] and [[target#Part two]] and [[ghost note#Why]].\n" \
    "Read https://example.com/guide. Done.\n"  # fmt: skip
TARGET = "# Target\n\nIntro.\n\n## Part two\n\nText.\n"


def _write_notes(vault: Path) -> None:
    write(vault, "writing/linker.md", LINKER)
    write(vault, "writing/target.md", TARGET)


async def _indexed(client: LanguageClient, vault: Path) -> None:
    """Save the two notes and wait until the server has indexed the links between them."""
    for rel in ("writing/linker.md", "writing/target.md"):
        client.text_document_did_save(types.DidSaveTextDocumentParams(_doc(vault, rel)))

    async def linked():
        return await _lenses(client, vault, "writing/target.md") == [
            (0, "2 backlinks"), (4, "1 link")
        ]  # fmt: skip

    await until(linked)


def _read_actions_whole(client: LanguageClient) -> None:
    """lsprotocol 2025's client side reads any code action that carries a command as a bare
    `Command` (its hook tests only for the key); read one whose `command` is an object as the
    `CodeAction` it is, as Neovim and VS Code do."""
    converter = client.protocol._converter

    def hook(obj: Any, _: type) -> types.Command | types.CodeAction:
        plain = isinstance(obj.get("command"), str)
        return converter.structure(obj, types.Command if plain else types.CodeAction)

    converter.register_structure_hook(Union[types.Command, types.CodeAction], hook)  # noqa: UP007


async def _actions(client, vault: Path, rel: str, line: int, character: int) -> list:
    _read_actions_whole(client)
    at = types.Position(line, character)
    params = types.CodeActionParams(
        text_document=_doc(vault, rel),
        range=types.Range(at, at),
        context=types.CodeActionContext(diagnostics=[]),
    )
    return await client.text_document_code_action_async(params) or []


async def _lenses(client, vault: Path, rel: str) -> list[tuple[int, str]]:
    params = types.CodeLensParams(text_document=_doc(vault, rel))
    got = await client.text_document_code_lens_async(params) or []
    return [(lens.range.start.line, lens.command.title) for lens in got]


async def test_an_unresolved_link_offers_to_create_its_note(client, vault: Path):
    _write_notes(vault)
    await _indexed(client, vault)
    line = LINKER.splitlines()[2]
    (action,) = await _actions(client, vault, "writing/linker.md", 2, line.index("[[ghost") + 3)
    assert action.title == "Create note 'ghost note' (writing/ghost note.md)"
    assert action.kind == types.CodeActionKind.QuickFix
    create, fill = action.edit.document_changes
    new_uri = (vault / "writing" / "ghost note.md").as_uri()
    assert isinstance(create, types.CreateFile) and create.uri == new_uri
    assert create.options.overwrite is False
    assert fill.text_document.uri == new_uri
    assert [e.new_text for e in fill.edits] == ["# ghost note\n\n## Why\n"]
    assert not (vault / "writing" / "ghost note.md").exists()  # the client creates it
    # A link that resolves offers nothing.
    assert await _actions(client, vault, "writing/linker.md", 2, line.index("[[target]]") + 2) == []


async def test_a_bare_url_becomes_a_link_and_a_heading_offers_its_link(client, vault: Path):
    _write_notes(vault)
    await _indexed(client, vault)
    (convert,) = await _actions(client, vault, "writing/linker.md", 3, 10)
    assert convert.kind == types.CodeActionKind.RefactorRewrite
    (edit,) = convert.edit.changes[_uri(vault, "writing/linker.md")]
    assert (edit.range.start, edit.range.end) == (types.Position(3, 5), types.Position(3, 30))
    assert edit.new_text == "[example.com/guide](https://example.com/guide)"
    (copy,) = await _actions(client, vault, "writing/target.md", 4, 5)
    assert copy.title == "Copy a link to this section" and copy.edit is None
    assert copy.command.command == "autodoc.copyLink"
    assert list(copy.command.arguments) == ["[[target#Part two]]"]
    # A client that sends the command back is shown the link, and given it.
    assert await execute(client, "autodoc.copyLink", "[[target#Part two]]") == "[[target#Part two]]"


async def test_code_lenses_count_backlinks_and_list_them(client, vault: Path):
    _write_notes(vault)
    await _indexed(client, vault)
    params = types.CodeLensParams(text_document=_doc(vault, "writing/target.md"))
    title, part = await client.text_document_code_lens_async(params)
    assert title.range == types.Range(types.Position(0, 2), types.Position(0, 8))
    assert title.command.command == "autodoc.backlinks"
    places = await execute(client, title.command.command, *title.command.arguments)
    assert sorted((p["uri"], p["range"]["start"]["line"]) for p in places) == [
        (_uri(vault, "writing/linker.md"), 2),
        (_uri(vault, "writing/linker.md"), 2),
    ]
    places = await execute(client, part.command.command, *part.command.arguments)
    assert [(p["uri"], p["range"]["start"]["line"]) for p in places] == [
        (_uri(vault, "writing/linker.md"), 2)
    ]
    # A third link, saved: the count follows.
    write(vault, "writing/third.md", "# Third\n\nAlso [[target#Part two]].\n")
    client.text_document_did_save(types.DidSaveTextDocumentParams(_doc(vault, "writing/third.md")))

    async def counted():
        return await _lenses(client, vault, "writing/target.md") == [
            (0, "3 backlinks"), (4, "2 links")
        ]  # fmt: skip

    await until(counted)


async def test_a_client_that_cannot_create_files_is_not_offered_a_new_note(vault: Path):
    caps = client_capabilities("visual_studio_code")
    assert caps.workspace and caps.workspace.workspace_edit
    caps.workspace.workspace_edit.resource_operations = []
    _write_notes(vault)
    client = make_test_lsp_client()
    ready = await _start(client, [vault], {"embedding": "none"}, caps)
    try:
        await asyncio.wait_for(ready, WAIT_S)
        line = LINKER.splitlines()[2]
        got = await _actions(client, vault, "writing/linker.md", 2, line.index("[[ghost") + 3)
        assert got == []
        got = await _actions(client, vault, "writing/linker.md", 3, 10)
        assert [a.title for a in got] == ["Convert to Markdown link"]
        # A save that was indexed asks a client that can refresh its lenses to do so.
        client.text_document_did_save(
            types.DidSaveTextDocumentParams(_doc(vault, "writing/linker.md"))
        )
        await until(lambda: _true(client.refreshes))
    finally:
        await _stop(client)


async def _true(value) -> bool:
    return bool(value)

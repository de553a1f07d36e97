"""textDocument/completion and completionItem/resolve from `autodoc serve` over stdio, as Neovim
and VS Code drive them (pytest-lsp with each one's client capabilities): every context, the
inserted link in the vault's own style or the option's, the editor's unsaved text, columns in
the negotiated units, the edit kinds each client takes."""

from __future__ import annotations

import asyncio
import re
import shutil
import sys
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities, make_test_lsp_client

from ..conftest import EXAMPLE_VAULT, write
from .test_lsp import CLIENTS, WAIT_S, _stop

BLOCKS = "# Blocks\n\nA paragraph to cite. ^para-one\n\n- an item ^item-2\n"


@pytest.fixture(autouse=True)
def _isolated_store(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("AUTODOC_DB", str(tmp_path / "store" / "autodoc.db"))


class Editor:
    """A pytest-lsp client with one open, never saved, document: what the editor holds."""

    def __init__(self, client: LanguageClient, root: Path, rel: str) -> None:
        self.client, self.uri, self.version = client, (root / rel).resolve().as_uri(), 0
        self.text = ""

    @property
    def units(self) -> str:
        return self.client.init_result.capabilities.position_encoding or "utf-16"

    async def complete(self, text: str, line: int | None = None, column: int | None = None):
        """Type `text` as the whole document and ask at the end of it (or at `line`, the
        string offset `column`): the completion list."""
        self.version += 1
        if self.version == 1:
            item = types.TextDocumentItem(self.uri, "markdown", 1, text)
            self.client.text_document_did_open(types.DidOpenTextDocumentParams(item))
        else:
            doc = types.VersionedTextDocumentIdentifier(version=self.version, uri=self.uri)
            change = types.TextDocumentContentChangeWholeDocument(text=text)
            self.client.text_document_did_change(types.DidChangeTextDocumentParams(doc, [change]))
        self.text = text
        lines = text.split("\n")
        line = len(lines) - 1 if line is None else line
        column = len(lines[line]) if column is None else column
        where = types.Position(line, _units(lines[line][:column], self.units))
        params = types.CompletionParams(types.TextDocumentIdentifier(self.uri), where)
        return await self.client.text_document_completion_async(params)

    def take(self, item: types.CompletionItem) -> str:
        """The line the item's edits leave (the insert range, as VS Code by default), checked
        to be a span the client may use and one whose filter keeps the item."""
        edit = item.text_edit
        assert edit is not None
        span = edit.insert if isinstance(edit, types.InsertReplaceEdit) else edit.range
        if isinstance(edit, types.InsertReplaceEdit):
            assert (edit.replace.start, edit.replace.end >= edit.insert.end) == (span.start, True)
        row = self.text.split("\n")[span.start.line]
        typed = row[_index(row, span.start.character, self.units) : _index(
            row, span.end.character, self.units)]  # fmt: skip
        assert item.filter_text is not None and item.filter_text.lower().startswith(typed.lower())
        new = edit.new_text
        if item.insert_text_format == types.InsertTextFormat.Snippet:
            new = re.sub(r"\\([\\$}])", r"\1", new)
        edits = [(span, new)] + [(e.range, e.new_text) for e in item.additional_text_edits or []]
        for where, text in sorted(edits, key=lambda e: e[0].start.character, reverse=True):
            a, b = (_index(row, p.character, self.units) for p in (where.start, where.end))
            row = row[:a] + text + row[b:]
        return row


def _units(text: str, units: str) -> int:
    if units == "utf-8":
        return len(text.encode())
    if units == "utf-16":
        return len(text.encode("utf-16-le")) // 2
    return len(text)


def _index(text: str, column: int, units: str) -> int:
    """A column in `units` as a string offset."""
    return next(i for i in range(len(text) + 1) if _units(text[:i], units) >= column)


async def _session(root: Path, caps: str, options: dict | None = None) -> LanguageClient:
    """`autodoc serve` on `root` with `caps`' client capabilities, once it has indexed it."""
    client = make_test_lsp_client()
    ready = asyncio.ensure_future(client.wait_for_notification("autodoc/indexReady"))
    await client.start_io(sys.executable, "-m", "autodoc", "serve")
    client.init_result = await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities(caps),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
            initialization_options={"embedding": "none", **(options or {})},
        )
    )
    await asyncio.wait_for(ready, WAIT_S)
    return client


@pytest.fixture
def wiki_vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, root)
    write(root, "notes/blocks.md", BLOCKS)
    return root


def _first(found) -> types.CompletionItem:
    assert found is not None and found.items, found
    return found.items[0]


@pytest.mark.parametrize("caps", CLIENTS)
async def test_each_context_in_a_wiki_vault(wiki_vault: Path, caps: str):
    client = await _session(wiki_vault, caps)
    try:
        ed = Editor(client, wiki_vault, "notes/draft.md")
        found = await ed.complete("# Draft\n\n## Unsaved part\n\n😀 é See [[sea")
        item = _first(found)
        assert (item.label, item.kind) == ("Search pipeline", types.CompletionItemKind.File)
        assert ed.take(item) == "😀 é See [[search-pipeline]]"  # columns in the agreed units
        edit = item.text_edit
        replace = caps == "visual_studio_code"  # VS Code takes InsertReplaceEdit, Neovim not
        assert isinstance(edit, types.InsertReplaceEdit) is replace
        assert found.is_incomplete is False
        # resolve: the note's title, place and first lines, as nvim-cmp shows them
        resolved = await client.completion_item_resolve_async(item)
        assert resolved.documentation.value.startswith("**Search pipeline**\n\n`notes/")
        assert "how a query turns into a ranked list" in resolved.documentation.value
        # an alias: the label kept; `[[note#`, `[[#` (unsaved), `[[note#^`
        assert ed.take(_first(await ed.complete("[[storage dec"))) == (
            "[[0003-embedded-sqlite-store|storage decision]]"
        )
        assert ed.take(_first(await ed.complete("[[search-pipeline#fu"))) == (
            "[[search-pipeline#Fusion]]"
        )
        mine = await ed.complete("# Draft\n\n## Unsaved part\n\nSee [[#Uns")
        assert [ed.take(i) for i in mine.items] == ["See [[#Unsaved part]]"]
        block = _first(await ed.complete("[[blocks#^it"))
        assert (block.label, ed.take(block)) == ("^item-2", "[[blocks#^item-2]]")
        # `](` paths relative to the note, `](#` the document's slugs, `#` tags with counts
        assert ed.take(_first(await ed.complete("[x](../adr/0004"))) == (
            "[x](../adr/0004-lease-recovery.md)"
        )
        own = await ed.complete("# Draft\n\n## Next step\n\n[x](#ne")
        assert ed.take(_first(own)) == "[x](#next-step)"
        tag = _first(await ed.complete("Filed under #sto"))
        assert (tag.label, tag.detail, ed.take(tag)) == ("#storage", "4 notes",
                                                         "Filed under #storage")  # fmt: skip
        assert await ed.complete("## Heading #sto") is None
    finally:
        await _stop(client)


@pytest.mark.parametrize("caps", CLIENTS)
async def test_a_markdown_vault_gets_markdown_links(tmp_path: Path, caps: str):
    root = tmp_path / "docs"
    write(root, "guide/setup.md", "# Setup\n\nRead [the install](install.md) first.\n")
    write(root, "guide/install.md", "# Install\n\nBack to [setup](setup.md).\n")
    write(root, "reference/flags.md", "# Flags\n\n[Setup](../guide/setup.md)\n")
    (root / ".autodoc").write_text("")
    client = await _session(root, caps)
    try:
        ed = Editor(client, root, "guide/new.md")
        item = _first(await ed.complete("See [[fla"))
        assert ed.take(item) == "See [Flags](../reference/flags.md)"
        # a space in the text: a snippet where the client takes them (Neovim inserts a plain
        # entry only up to its first space)
        item = _first(await ed.complete("See [[inst"))
        assert ed.take(item) == "See [Install](install.md)"
    finally:
        await _stop(client)


@pytest.mark.parametrize("caps", CLIENTS)
async def test_the_link_style_option_overrides_the_vault(wiki_vault: Path, caps: str):
    options = {"link_style": {"form": "markdown", "extension": False}}
    client = await _session(wiki_vault, caps, options)
    try:
        ed = Editor(client, wiki_vault, "adr/draft.md")
        item = _first(await ed.complete("See [[sea"))
        assert ed.take(item) == "See [Search pipeline](../notes/search-pipeline)"
        assert item.insert_text_format == types.InsertTextFormat.Snippet  # "Search pipeline"
    finally:
        await _stop(client)

"""Notes whose names a URI escapes (a space, a non-ASCII letter) are served from the editor's
text like any other, and answers name an open note as the client spelled it (pytest-lsp, with
Neovim's client capabilities); and the one URI <-> path mapping every LSP feature uses."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path, PurePosixPath, PureWindowsPath

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.workspace import TextDocument
from pytest_lsp import LanguageClient, client_capabilities, make_test_lsp_client

from autodoc.serve.lsp.editor_documents import EditorDocuments
from autodoc.serve.lsp.file_uris import UriError, file_uri_path, path_to_uri
from autodoc.wire.errors import INVALID_PARAMS

from ..conftest import write
from .test_lsp import WAIT_S, _start, _stop, until

NAMES = ["My Note.md", "Überblick.md"]  # a space; a non-ASCII letter


@pytest.fixture(autouse=True)
def _isolated_store(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("AUTODOC_DB", str(tmp_path / "store" / "autodoc.db"))


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    """Saved texts that say nothing of what the tests type: an answer read from disk shows."""
    root = tmp_path / "vault"
    for name in NAMES:
        write(root, name, f"# {name[:-3]}\n")
    write(root, "Other Note.md", "# Other Note\n\nThe target.\n")
    write(root, "Alpha.md", "# Alpha\n\nA note to complete.\n")
    write(root, "nospace.md", "# nospace\n")
    return root.resolve()


async def _served(vault: Path) -> LanguageClient:
    client = make_test_lsp_client()
    ready = await _start(client, [vault], {"embedding": "none"})
    await asyncio.wait_for(ready, WAIT_S)
    return client


def _open(client: LanguageClient, uri: str, text: str) -> types.TextDocumentIdentifier:
    """Open `uri` with `text`, unsaved."""
    item = types.TextDocumentItem(uri=uri, language_id="markdown", version=1, text=text)
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=item))
    return types.TextDocumentIdentifier(uri=uri)


def _lower_hex(uri: str) -> str:
    """The same URI with its escapes in lower case (`%C3%9C` -> `%c3%9c`), as some clients
    write them."""
    parts = uri.split("%")
    return parts[0] + "".join("%" + p[:2].lower() + p[2:] for p in parts[1:])


@pytest.mark.parametrize("name", NAMES)
async def test_completion_reads_the_unsaved_text_of_a_note_named(vault: Path, name: str):
    client = await _served(vault)
    try:
        doc = _open(client, (vault / name).as_uri(), f"# {name[:-3]}\n\nSee [[Al")
        params = types.CompletionParams(doc, types.Position(2, len("See [[Al")))
        found = await client.text_document_completion_async(params)
        assert found is not None, "completion answered from the file on disk"
        assert [i.label for i in found.items] == ["Alpha"]
    finally:
        await _stop(client)


@pytest.mark.parametrize("name", NAMES)
async def test_the_outline_holds_an_unsaved_heading_of_a_note_named(vault: Path, name: str):
    client = await _served(vault)
    try:
        doc = _open(client, (vault / name).as_uri(), f"# {name[:-3]}\n\n## Unsaved Heading\n")
        got = await client.text_document_document_symbol_async(types.DocumentSymbolParams(doc))
        assert [(s.name, [c.name for c in s.children or []]) for s in got] == [
            (name[:-3], ["Unsaved Heading"])
        ]
    finally:
        await _stop(client)


@pytest.mark.parametrize("name", NAMES)
async def test_definition_follows_an_unsaved_link_in_a_note_named(vault: Path, name: str):
    client = await _served(vault)
    try:
        doc = _open(client, (vault / name).as_uri(), "# Draft\n\nSee [[Other Note]].\n")
        params = types.DefinitionParams(doc, types.Position(2, len("See [[O")))
        got = await client.text_document_definition_async(params)
        assert got is not None, "the link was looked for in the file on disk"
        assert got.uri == (vault / "Other Note.md").as_uri()
    finally:
        await _stop(client)


async def test_answers_name_an_open_note_by_the_clients_own_uri(vault: Path):
    """A note opened under a URI with lower-case escapes: its diagnostics (on open, and again
    once a save is indexed), a definition leading to it and a workspace symbol in it all name
    it by that URI, which is how the client finds its buffer."""
    broken = "# Überblick\n\nSee [missing](nowhere.md).\n"
    write(vault, "Überblick.md", broken)
    client = await _served(vault)
    try:
        uri = _lower_hex((vault / "Überblick.md").as_uri())
        assert "%c3%9c" in uri
        _open(client, uri, broken)
        found = await until(lambda: _now(client.diagnostics.get(uri)))
        assert [d.message for d in found] == ["link to 'nowhere.md' does not resolve"]
        other = _open(client, (vault / "nospace.md").as_uri(), "# nospace\n\nSee [[Überblick]].\n")
        params = types.DefinitionParams(other, types.Position(2, len("See [[Ü")))
        assert (await client.text_document_definition_async(params)).uri == uri
        symbols = await client.workspace_symbol_async(types.WorkspaceSymbolParams("Überblick"))
        assert uri in {s.location.uri for s in symbols}
        # mended and saved: published again, under the client's URI
        write(vault, "Überblick.md", "# Überblick\n")
        version = types.VersionedTextDocumentIdentifier(version=2, uri=uri)
        mended = types.TextDocumentContentChangeWholeDocument(text="# Überblick\n")
        client.text_document_did_change(types.DidChangeTextDocumentParams(version, [mended]))
        saved = types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri))
        client.text_document_did_save(saved)
        await until(lambda: _now(uri in client.diagnostics and not client.diagnostics[uri]))
    finally:
        await _stop(client)


async def test_a_rename_edits_an_open_note_named_with_a_space_under_its_uri(vault: Path):
    client = await _served(vault)
    try:
        uri = (vault / "My Note.md").as_uri()
        doc = _open(client, uri, "# My Note\n\n## Part\n")
        params = types.RenameParams(doc, types.Position(2, 4), new_name="Section")
        edit = await client.text_document_rename_async(params)
        assert edit.document_changes is None  # Neovim's capabilities: plain changes by URI
        assert list(edit.changes) == [uri]
        assert [e.new_text for e in edit.changes[uri]] == ["Section"]
    finally:
        await _stop(client)


async def test_a_uri_that_names_no_file_here_is_refused_with_the_reason(vault: Path):
    """A workspace folder on another host is not served, and the person is told why; a request
    on such a document is answered with -32602 and the reason."""
    client = make_test_lsp_client()
    ready = asyncio.ensure_future(client.wait_for_notification("autodoc/indexReady"))
    await client.start_io(sys.executable, "-m", "autodoc", "serve")
    folders = [types.WorkspaceFolder(uri=vault.as_uri(), name="vault"),
               types.WorkspaceFolder(uri="file://server/share/notes", name="notes")]  # fmt: skip
    await client.initialize_session(
        types.InitializeParams(capabilities=client_capabilities("neovim"),
                               workspace_folders=folders,
                               initialization_options={"embedding": "none"})
    )  # fmt: skip
    try:
        await asyncio.wait_for(ready, WAIT_S)
        told = "file://server/share/notes: names a file on the host 'server'"

        async def shown():  # said once the folders are read: before or after the index is ready
            return any(told in m.message for m in client.messages)

        assert await until(shown), [m.message for m in client.messages]
        remote = types.TextDocumentIdentifier("file://server/share/notes/x.md")
        with pytest.raises(JsonRpcException, match="only local files are served") as err:
            await client.text_document_hover_async(types.HoverParams(remote, types.Position(0, 0)))
        assert err.value.code == INVALID_PARAMS
    finally:
        await _stop(client)


async def _now(value):
    return value


# -- the mapping ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("uri", "path"),
    [
        ("file:///x/My%20Note.md", "/x/My Note.md"),
        ("file:///x/%C3%9Cberblick.md", "/x/Überblick.md"),
        ("file:///x/%c3%9cberblick.md", "/x/Überblick.md"),  # lower-case escapes
        ("file:///x/%C3%BC.md", "/x/ü.md"),
        ("file:///x/100%25%20sure.md", "/x/100% sure.md"),
        ("file:///x/a%23b%3Fc.md", "/x/a#b?c.md"),
        ("file://localhost/x/y.md", "/x/y.md"),
        ("FILE:///x/y.md", "/x/y.md"),
        ("file:///x/%E4%B8%AD%E6%96%87.md", "/x/中文.md"),
    ],
)
def test_a_file_uri_names_its_path(uri: str, path: str):
    assert file_uri_path(uri, windows=False) == PurePosixPath(path)


@pytest.mark.parametrize(
    ("uri", "why"),
    [
        ("file:///x/a%2Fb.md", "encoded separator"),  # one segment cannot hold a `/`
        ("file:///x/a%2fb.md", "encoded separator"),
        ("file:///x/a%00b.md", "encoded separator or NUL"),
        ("file://server/share/x.md", "on the host 'server'"),
        ("file:///C:/x/y.md", "Windows drive"),
        ("file:///c%3A/x/y.md", "Windows drive"),
        ("file:///x/y.md#L3", "query or fragment"),
        ("file:///x/y.md?v=1", "query or fragment"),
        ("file:x/y.md", "absolute path"),
    ],
)
def test_a_file_uri_that_names_no_file_here_is_refused_with_the_reason(uri: str, why: str):
    with pytest.raises(UriError, match=why):
        file_uri_path(uri, windows=False)


def test_a_uri_of_another_scheme_names_no_path():
    assert file_uri_path("untitled:Untitled-1", windows=False) is None
    assert file_uri_path("git:/x/y.md?ref=HEAD", windows=False) is None


def test_windows_drives_and_shares():
    note = PureWindowsPath("C:/x/My Note.md")
    for uri in ("file:///C:/x/My%20Note.md", "file:///c:/x/My%20Note.md",
                "file:///c%3A/x/My%20Note.md", "file:///C%3a/x/My%20Note.md"):  # fmt: skip
        got = file_uri_path(uri, windows=True)
        assert got == note and str(got) == "C:\\x\\My Note.md"
    assert path_to_uri(note) == "file:///C:/x/My%20Note.md"
    share = file_uri_path("file://server/share/x%20y.md", windows=True)
    assert share == PureWindowsPath("//server/share/x y.md")
    assert path_to_uri(share) == "file://server/share/x%20y.md"
    with pytest.raises(UriError, match="starts with a drive"):
        file_uri_path("file:///x/y.md", windows=True)
    with pytest.raises(UriError, match="encoded separator"):
        file_uri_path("file:///C:/x/a%5Cb.md", windows=True)
    with pytest.raises(UriError, match="not UTF-8"):
        file_uri_path("file:///C:/x/%FF.md", windows=True)


def test_a_name_that_is_not_utf8_comes_back_to_the_same_bytes():
    path = file_uri_path("file:///x/caf%E9.md", windows=False)  # Latin-1 on disk
    assert path is not None and os.fsencode(path) == b"/x/caf\xe9.md"
    assert path_to_uri(path) == "file:///x/caf%E9.md"


@given(st.lists(st.text(st.characters(blacklist_characters="/\0"), min_size=1), min_size=1))
def test_every_posix_path_goes_to_a_uri_and_back(segments: list[str]):
    path = PurePosixPath("/", *segments)
    if any(part in (".", "..") for part in path.parts):
        return
    try:
        os.fsencode(str(path))
    except UnicodeEncodeError:  # a lone surrogate: no file can be named so
        return
    assert file_uri_path(path_to_uri(path), windows=False) == path


def test_an_open_document_is_found_by_its_path_and_named_by_the_clients_uri(tmp_path: Path):
    note = write(tmp_path, "Überblick.md", "# on disk\n").resolve()
    link = tmp_path / "linked.md"
    link.symlink_to(note)
    documents = EditorDocuments()
    uri = _lower_hex(link.as_uri())  # a symbolic link to the note, spelled in lower case
    editor = TextDocument(uri, "# in the editor\n")
    assert documents.opened(uri, editor) == note
    assert documents.document(note) is editor and documents.uri(note) == uri
    assert documents.document(link) is editor  # by the path it resolves to, too
    other = tmp_path / "Other Note.md"
    assert documents.document(other) is None and documents.uri(other) == other.as_uri()
    assert documents.opened("untitled:Untitled-1", TextDocument("untitled:Untitled-1")) is None
    assert documents.opened("file://server/x.md", TextDocument("file://server/x.md")) is None
    documents.closed(note.as_uri())  # the same file, however the URI is spelled
    assert documents.document(note) is None and documents.uri(note) == note.as_uri()
    assert documents.each() == []

"""The note that starts the server gets its diagnostics: the editor opens it while the folder's
first index runs, and the server publishes them once that index answers (pytest-lsp, and a
headless Neovim 0.11 through `vim.lsp.enable`, with the plugin's `lsp/autodoc.lua` and with
doc/editors.md's set-up as written, without the plugin)."""

from __future__ import annotations

import contextlib
import os
import re
import sys
import time
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import make_test_lsp_client

from ..conftest import REPO, missing, write
from ..integration.test_lsp import CLIENTS, _start, _stop, until
from .test_nvim import NO_NVIM, NVIM, Nvim, pynvim

# Two links that lead nowhere, one that resolves: a diagnostic each for the first two.
FIRST = "# First\n\nSee [[Other Note]], [missing](nowhere.md) and [lost](lost.md).\n"
BROKEN = ["link to 'lost.md' does not resolve", "link to 'nowhere.md' does not resolve"]
FILLER = 400  # notes enough that the first index is still running when the note opens
NVIM_WAIT_S = 60.0


@pytest.fixture(autouse=True)
def _isolated_store(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("AUTODOC_DB", str(tmp_path / "store" / "autodoc.db"))


def _vault(root: Path, filler: int = 0) -> Path:
    """A vault (`.autodoc` marks it) whose `first.md` links to two notes that do not exist."""
    for i in range(filler):
        write(root, f"filler/n{i:03}.md", f"# Note {i}\n\nfiller text {i}.\n")
    write(root, "Other Note.md", "# Other Note\n\nThe target.\n")
    write(root, "first.md", FIRST)
    (root / ".autodoc").mkdir()
    return root.resolve()


@pytest.mark.parametrize("caps", CLIENTS)
async def test_a_note_opened_before_the_first_index_gets_its_diagnostics(tmp_path: Path,
                                                                         caps: str):  # fmt: skip
    """And a client that refreshes code lenses (VS Code) is asked to, once the index is ready:
    the lenses it asked for while the index ran counted nothing."""
    vault = _vault(tmp_path / "vault", FILLER)
    client = make_test_lsp_client()
    ready = await _start(client, [vault], {"embedding": "none"}, caps)
    try:
        uri = (vault / "first.md").as_uri()
        item = types.TextDocumentItem(uri, "markdown", 1, FIRST)
        client.text_document_did_open(types.DidOpenTextDocumentParams(item))
        assert not ready.done(), "the note was opened after the first index: no test"

        async def published():
            return client.diagnostics.get(uri)

        diagnostics = await until(published, timeout=60)
        assert ready.done()
        assert sorted(d.message for d in diagnostics) == BROKEN
        if caps == "visual_studio_code":
            assert client.refreshes == [types.WORKSPACE_CODE_LENS_REFRESH]
    finally:
        await _stop(client)


# -- Neovim --------------------------------------------------------------------------------------


def _diagnostics(nvim) -> list[str]:
    """The current buffer's diagnostics, as `vim.diagnostic.get(0)` has them."""
    code = "return vim.tbl_map(function(d) return d.message end, vim.diagnostic.get(0))"
    return nvim.exec_lua(code)


def _until_diagnostics(nvim, count: int) -> list[str]:
    """The current buffer's diagnostics once there are `count`, or when NVIM_WAIT_S is up."""
    deadline = time.monotonic() + NVIM_WAIT_S
    while len(found := _diagnostics(nvim)) < count and time.monotonic() < deadline:
        time.sleep(0.1)
    return sorted(found)


def test_neovim_with_the_plugins_lsp_config_shows_the_first_notes_diagnostics(tmp_path: Path):
    """`vim.lsp.enable("autodoc")` with `lsp/autodoc.lua`, the first note opened: its
    diagnostics appear without reopening it."""
    if NVIM is None or pynvim is None:
        missing("nvim", NO_NVIM)
    vault = _vault(tmp_path / "vault")
    n = Nvim(vault, tmp_path / "home", {"embedding": "none"})
    try:
        n.lua("vim.lsp.config('autodoc', {cmd = {...}, init_options = {embedding = 'none'}})"
              " vim.lsp.enable('autodoc')", sys.executable, "-m", "autodoc", "serve")  # fmt: skip
        n.nvim.command(f"edit {vault / 'first.md'}")
        assert _until_diagnostics(n.nvim, 2) == BROKEN
    finally:
        n.close()


def doc_block(heading: str, language: str) -> str:
    """The first `language` code block under doc/editors.md's `## heading`: what a reader
    copies, run as it is written."""
    text = (REPO / "doc" / "editors.md").read_text()
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    found = re.search(rf"```{language}\n(.*?)```", section, re.S)
    assert found, f"no {language} block under ## {heading} in doc/editors.md"
    return found.group(1)


def test_neovim_with_the_docs_set_up_and_no_plugin(tmp_path: Path):
    """doc/editors.md's `vim.lsp.config` + `vim.lsp.enable` in a Neovim without the plugin
    (`--clean`), `autodoc` on PATH: the first note's client is rooted at the vault and its
    diagnostics appear."""
    if NVIM is None or pynvim is None:
        missing("nvim", NO_NVIM)
    vault = _vault(tmp_path / "vault")
    home = tmp_path / "home"
    env = [f"PATH={Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           f"XDG_CONFIG_HOME={home / 'config'}", f"XDG_DATA_HOME={home / 'data'}",
           f"XDG_STATE_HOME={home / 'state'}"]  # fmt: skip
    nvim = pynvim.attach("child", argv=["env", *env, NVIM, "--embed", "--headless", "--clean"])
    try:
        nvim.exec_lua(doc_block("Neovim", "lua"))
        nvim.command(f"edit {vault / 'first.md'}")
        assert _until_diagnostics(nvim, 2) == BROKEN
        roots = nvim.exec_lua("return vim.tbl_map(function(c) return c.root_dir end,"
                              " vim.lsp.get_clients({bufnr = 0}))")  # fmt: skip
        assert roots == [str(vault)]
    finally:
        with contextlib.suppress(Exception):  # the child may have gone already
            nvim.command("qall!")
        nvim.close()

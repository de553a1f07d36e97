"""Rename in a real headless Neovim (0.11.4) with the plugin and the real sidecar:
`vim.lsp.buf.rename(new_name)` on a heading, on a link (the note's file renamed on disk), and a
refusal shown to the person; the files on disk after Neovim applied the edit and `:wall` saved
the buffers it changed."""

from __future__ import annotations

import sys
from pathlib import Path

from . import test_nvim
from .test_nvim import Nvim

# test_nvim's fixtures: a copy of the example vault, and a headless Neovim started in it.
start, vault = test_nvim.start, test_nvim.vault

# Every message `vim.notify` shows, kept in `vim.g.autodoc_notified`.
NOTIFIED = (
    "vim.g.autodoc_notified = {} local notify = vim.notify"
    " vim.notify = function(msg, ...) local seen = vim.g.autodoc_notified"
    " seen[#seen + 1] = msg vim.g.autodoc_notified = seen return notify(msg, ...) end"
)


def _open(n: Nvim, vault: Path, rel: str) -> None:
    """Edit `rel` with the sidecar started by the repository's lsp config, once it has indexed
    the vault and attached to the buffer."""
    n.lua(
        "vim.lsp.config('autodoc', {cmd = {...}, init_options = {embedding = 'none'}})"
        " vim.lsp.enable('autodoc')",
        sys.executable, "-m", "autodoc", "serve",
    )  # fmt: skip
    n.lua(NOTIFIED)
    n.nvim.command(f"edit {vault / rel}")
    n.indexed()
    n.until(lambda: n.lua("return #vim.lsp.get_clients({bufnr = 0, name = 'autodoc'}) == 1"))


def _rename(n: Nvim, line: int, column: int, new_name: str) -> None:
    """`vim.lsp.buf.rename(new_name)` with the cursor at (1-based line, 0-based column)."""
    n.nvim.command(f"call cursor({line}, {column + 1})")
    n.lua("vim.lsp.buf.rename(...)", new_name)


def _column(vault: Path, rel: str, line: int, text: str) -> int:
    return (vault / rel).read_text().splitlines()[line - 1].index(text) + 2


def test_rename_a_heading_and_a_note_then_write_all(start, vault: Path):
    n = start({"embedding": "none"})
    _open(n, vault, "notes/search-pipeline.md")
    _rename(n, 39, 2, "Rank fusion")  # `Fusion`, a setext heading
    n.until(lambda: n.nvim.current.buffer[38] == "Rank fusion")
    n.nvim.command("wall")
    lines = (vault / "notes/search-pipeline.md").read_text().splitlines()
    assert lines[38] == "Rank fusion"
    assert "See [[search-pipeline#Rank fusion]]" in lines[43]

    n.nvim.command(f"edit {vault / 'README.md'}")
    n.until(lambda: n.lua("return #vim.lsp.get_clients({bufnr = 0, name = 'autodoc'}) == 1"))
    _rename(n, 13, _column(vault, "README.md", 13, "[[0003"), "0003-sqlite-store")
    renamed = vault / "adr" / "0003-sqlite-store.md"
    n.until(renamed.exists)
    n.nvim.command("wall")
    assert not (vault / "adr" / "0003-embedded-sqlite-store.md").exists()
    assert renamed.read_text().startswith('---\ntitle: "ADR 0003: Embedded relational store"')
    assert (
        "- [[0003-sqlite-store]]: the current storage decision."
        in (vault / "README.md").read_text()
    )
    lease = (vault / "adr/0004-lease-recovery.md").read_text()
    assert "Under [[0003-sqlite-store]] only" in lease
    assert "[the store decision](0003-sqlite-store.md)" in lease
    assert (
        "superseded_by: adr/0003-sqlite-store.md"
        in (vault / "adr/0002-store-documents-in-postgres.md").read_text()
    )
    # the title links keep leading to the note by its title: untouched
    assert (
        "[[ADR 0003: Embedded relational store]]"
        in (vault / "notes/search-pipeline.md").read_text()
    )


def test_a_refused_rename_is_shown_and_changes_nothing(start, vault: Path):
    n = start({"embedding": "none"})
    _open(n, vault, "notes/search-pipeline.md")
    before = (vault / "notes/search-pipeline.md").read_text()
    _rename(n, 39, 2, "Known gaps")  # the note has that heading already

    def shown():
        return [m for m in n.lua("return vim.g.autodoc_notified") or [] if "Known gaps" in m]

    assert "has a heading 'Known gaps' already" in n.until(shown)[0]
    n.nvim.command("wall")
    assert (vault / "notes/search-pipeline.md").read_text() == before
    assert n.lua("return vim.bo.modified") is False

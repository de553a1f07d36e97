"""Code actions and code lenses in a real headless Neovim (0.11.4) with the plugin and the real
sidecar: the note a link asks for created on disk, a bare URL rewritten, a section's link in
the register, backlink counts over the title and a heading, and their list in quickfix."""

from __future__ import annotations

import sys
from pathlib import Path

from ..conftest import write
from . import test_nvim
from .test_nvim import Nvim

start, vault = test_nvim.start, test_nvim.vault

LINKER = "# Linker\n\nSee [[target]] and [[target#Part two]] and [[ghost]].\n" \
    "Read https://example.com/guide. Done.\n"  # fmt: skip
TARGET = "# Target\n\nIntro.\n\n## Part two\n\nText.\n"


def _open(n: Nvim, vault: Path, rel: str) -> None:
    """Edit `rel` with the sidecar started by the repository's lsp config, and wait until it
    has indexed the vault and attached to the buffer."""
    n.lua(
        "vim.lsp.config('autodoc', {cmd = {...}, init_options = {embedding = 'none'}})"
        " vim.lsp.enable('autodoc')",
        sys.executable, "-m", "autodoc", "serve",
    )  # fmt: skip
    n.nvim.command(f"edit {vault / rel}")
    n.indexed()
    n.until(lambda: n.lua("return #vim.lsp.get_clients({bufnr = 0, name = 'autodoc'}) == 1"))


def _apply(n: Nvim, line: int, column: int, title: str) -> None:
    """Put the cursor on (1-based line, 0-based column) and apply the code action titled
    `title` as a person picks it from `vim.lsp.buf.code_action`'s menu."""
    n.nvim.command(f"call cursor({line}, {column + 1})")
    n.lua(
        "local want = ...; vim.lsp.buf.code_action({apply = true, filter = function(a)"
        " return a.title:find(want, 1, true) == 1 end})",
        title,
    )


def _setup(start, vault: Path) -> Nvim:
    write(vault, "writing/linker.md", LINKER)
    write(vault, "writing/target.md", TARGET)
    return start({"embedding": "none"})


def test_code_actions_create_the_note_convert_the_url_and_copy_a_link(start, vault: Path):
    n = _setup(start, vault)
    _open(n, vault, "writing/linker.md")
    _apply(n, 3, LINKER.splitlines()[2].index("[[ghost") + 2, "Create note 'ghost'")
    # Written at once (no :w, no :wall): on disk, its buffer unmodified, the linking note too.
    ghost = vault / "writing" / "ghost.md"
    n.until(lambda: ghost.exists() and ghost.read_text() == "# ghost\n")
    assert n.lua("return vim.bo[vim.fn.bufnr(...)].modified", str(ghost)) is False
    assert n.lua("return vim.bo.modified") is False
    n.nvim.command(f"buffer {vault / 'writing/linker.md'}")
    _apply(n, 4, 10, "Convert to Markdown link")
    line = n.until(lambda: _line_with(n, "[example.com"))
    assert line == "Read [example.com/guide](https://example.com/guide). Done."
    n.nvim.command(f"edit {vault / 'writing/target.md'}")
    n.until(lambda: n.lua("return #vim.lsp.get_clients({bufnr = 0, name = 'autodoc'}) == 1"))
    _apply(n, 5, 4, "Copy a link to this section")
    assert n.until(lambda: n.nvim.funcs.getreg('"') == "[[target#Part two]]")


def _line_with(n: Nvim, text: str) -> str | None:
    return next((ln for ln in n.nvim.current.buffer[:] if text in ln), None)


def test_code_lenses_show_backlinks_and_list_them_in_quickfix(start, vault: Path):
    n = _setup(start, vault)
    _open(n, vault, "writing/target.md")

    def lenses():
        got = n.lua(
            "local out = {} for _, l in ipairs(vim.lsp.codelens.get(0)) do"
            " if l.command then table.insert(out, {l.range.start.line, l.command.title}) end"
            " end return out"
        )
        return got if got == [[0, "2 backlinks"], [4, "1 link"]] else None

    n.lua("vim.lsp.codelens.refresh({bufnr = 0})")
    n.until(lenses)
    n.nvim.command("call cursor(1, 1)")
    n.lua("vim.lsp.codelens.run()")
    items = n.until(lambda: n.nvim.funcs.getqflist() or None)
    names = [n.nvim.funcs.fnamemodify(n.nvim.funcs.bufname(i["bufnr"]), ":p") for i in items]
    assert [(name, i["lnum"]) for name, i in zip(names, items, strict=True)] == [
        (str(vault / "writing/linker.md"), 3), (str(vault / "writing/linker.md"), 3)
    ]  # fmt: skip


def test_autodoc_rename_renames_the_notes_own_file_from_inside_it(start, vault: Path):
    """`:Autodoc rename NAME` in a note not named after its title (its file `target.md`, its
    title "Target Notes"): the file is renamed and every link to it rewritten, one edit."""
    write(vault, "writing/linker.md", LINKER)
    write(vault, "writing/target.md", "---\ntitle: Target Notes\n---\n" + TARGET)
    n = start({"embedding": "none"})
    _open(n, vault, "writing/target.md")
    n.nvim.command("Autodoc rename aim")
    aim = vault / "writing" / "aim.md"
    n.until(lambda: aim.exists() and not (vault / "writing/target.md").exists())
    n.until(lambda: n.nvim.funcs.expand("%:t") == "aim.md")
    n.nvim.command("wall")
    linker = (vault / "writing" / "linker.md").read_text()
    assert "[[aim]]" in linker and "[[aim#Part two]]" in linker and "[[target" not in linker

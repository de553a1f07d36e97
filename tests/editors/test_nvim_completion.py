"""Link completion in a real headless Neovim (0.11, from PyPI) with its built-in client:
`vim.lsp.completion` against `autodoc serve`, the entry taken with <C-y> and the buffer's line
read back; and completionItem/resolve as nvim-cmp asks it, for the entry's documentation."""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

import pytest

from ..conftest import EXAMPLE_VAULT, missing, write
from .test_nvim import NO_NVIM, NVIM, WAIT_S, Nvim, pynvim

ATTACHED = (
    "local c = vim.lsp.get_clients({name = 'autodoc', bufnr = 0})[1]"
    " if not c then return nil end"
    " for _, ws in pairs(require('autodoc.client').ready) do"
    " if #ws > 0 then return c.id end end return nil"
)


@pytest.fixture
def nvim(tmp_path: Path):
    """Neovim in a copy of the example vault, `lsp/autodoc.lua` enabled, editing a new note
    with the built-in completion on for its client."""
    if NVIM is None or pynvim is None:
        missing("nvim", NO_NVIM)
    vault = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    (vault / ".autodoc").write_text("")
    write(vault, "notes/Price $1 each.md", "# Price $1 each\n\nWhat a `$1` costs.\n")
    n = Nvim(vault, tmp_path / "home", {"embedding": "none"})
    try:
        n.lua(
            "vim.lsp.config('autodoc', {cmd = {...}, init_options = {embedding = 'none'}})"
            " vim.lsp.enable('autodoc')",
            sys.executable, "-m", "autodoc", "serve",
        )  # fmt: skip
        n.nvim.command(f"edit {vault / 'notes' / 'draft.md'}")
        client = n.until(lambda: n.lua(ATTACHED))
        n.lua(
            "local id = ...; vim.o.completeopt = 'menu,menuone,noinsert'"
            " vim.lsp.completion.enable(true, id, 0, {autotrigger = true})"
            " vim.api.nvim_create_autocmd('CompleteDone', {callback = function()"
            " vim.g.done = vim.v.completed_item end})",
            client,
        )
        yield n
    finally:
        n.close()


def complete(n: Nvim, typed: str, expected: str) -> str:
    """Type `typed` on a fresh line in insert mode, ask for completion, take the first entry
    with <C-y>: the line Neovim leaves once it is `expected` (a snippet entry is expanded
    after completionItem/resolve answers), or after WAIT_S whatever it is then."""
    n.nvim.command("stopinsert")
    n.nvim.command("normal! Go")
    n.lua("vim.g.done = nil")
    n.nvim.input(f"<Esc>A{typed}")
    n.until(lambda: n.lua("return vim.api.nvim_get_current_line()") == typed)
    n.nvim.input("<Cmd>lua vim.lsp.completion.get()<CR>")
    n.until(lambda: n.lua("return vim.fn.pumvisible() == 1 and #vim.fn.complete_info().items"))
    n.nvim.input("<C-y>")
    n.until(lambda: n.lua("return vim.g.done ~= nil"))
    deadline = time.monotonic() + WAIT_S
    while (line := n.lua("return vim.api.nvim_get_current_line()")) != expected:
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)
    return line


TAKEN = [
    ("See [[sea", "See [[search-pipeline]]"),
    # an entry whose text has a space goes as a snippet: inserted whole, not to the space
    ("[[storage dec", "[[0003-embedded-sqlite-store|storage decision]]"),
    ("[[search-pipeline#fu", "[[search-pipeline#Fusion]]"),
    ("Filed under #sto", "Filed under #storage"),
    # a snippet's `$` written as itself, not read as a tab stop
    ("See [[Price", "See [[Price $1 each]]"),
    ("[x](../adr/0004", "[x](../adr/0004-lease-recovery.md)"),  # resolved below: keep it last
]


def test_builtin_completion_writes_links_tags_and_resolves(nvim: Nvim):
    n = nvim
    for typed, expected in TAKEN:
        assert complete(n, typed, expected) == expected
    # completionItem/resolve as nvim-cmp sends it: the note's first lines as documentation
    doc = n.lua(
        "local item = vim.g.done.user_data.nvim.lsp.completion_item"
        " local c = vim.lsp.get_clients({name = 'autodoc', bufnr = 0})[1]"
        " local r = c:request_sync('completionItem/resolve', item, 10000, 0)"
        " return r and r.result and r.result.documentation.value"
    )
    assert doc.startswith("**ADR 0004: Recovering a stale writer lease**")
    assert "`adr/0004-lease-recovery.md:1`" in doc


def test_typing_the_brackets_triggers_the_list(nvim: Nvim):
    """`[` is a trigger character: typing `[[` opens the list without asking."""
    n = nvim
    n.nvim.input("<Esc>GoSee [[")
    count = n.until(
        lambda: n.lua("return vim.fn.pumvisible() == 1 and #vim.fn.complete_info().items")
    )
    assert count >= 8
    words = n.lua("return vim.tbl_map(function(i) return i.abbr end, vim.fn.complete_info().items)")
    assert "ADR 0003: Embedded relational store" in words

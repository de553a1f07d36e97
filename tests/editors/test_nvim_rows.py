"""Rows too wide for their list keep what tells them apart, in a real headless Neovim (0.11.4)
with the real sidecar: the built-in picker and the real snacks, telescope and fzf-lua (vendored
copies) cut the folders and the breadcrumb's earlier parts, never the file name, its line or
the section, at 60, 90 and 120 columns."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ..conftest import EXAMPLE_VAULT, missing, tool, write
from .test_nvim import FZF_SCREEN, NO_NVIM, NVIM, VENDOR, Nvim, pynvim

ADR = "decisions/architecture/0009-secrets.md"
TITLE = "9. Use Secrets Manager for secrets in every environment"
NOTE = f"""# {TITLE}

## Context

Credentials live in environment files; a secrets manager keeps them out of the repository.

## Decision

We keep every credential in the secrets manager and read it as a service starts.

## Consequences

The secrets manager becomes a dependency of every service, and its outage stops deploys.
"""
SECTIONS = {3: "Context", 7: "Decision", 11: "Consequences"}  # each one's heading line
QUERY = "secrets manager credential service"
COLUMNS = (60, 90, 120)
PLUGINS = ("snacks.nvim", "plenary.nvim", "telescope.nvim", "fzf-lua")


@pytest.fixture
def nvim(tmp_path: Path):
    if NVIM is None or pynvim is None:
        missing("nvim", NO_NVIM)
    if not all((VENDOR / name).is_dir() for name in PLUGINS):
        missing("corpus", f"the vendored plugins {PLUGINS} are absent from {VENDOR}")
    root = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, root)
    (root / ".autodoc").write_text("")
    write(root, ADR, NOTE)
    n = Nvim(root, tmp_path / "home", {"embedding": "none"},
             rtp=tuple(VENDOR / name for name in PLUGINS))  # fmt: skip
    n.nvim.command("runtime plugin/telescope.lua")
    n.serve()
    yield n
    n.close()


def keep_apart(rows: list[str], columns: int, picker: str) -> None:
    """Each of the note's three sections has its row, cut, holding its file name and line and
    ending in its section."""
    for line, section in SECTIONS.items():
        loc = f"0009-secrets.md:{line}  "
        row = next((r.rstrip() for r in rows if loc in r), None)
        assert row is not None, (picker, columns, loc, rows)
        assert "…" in row, (picker, columns, row)  # it had to be cut
        assert row.endswith(section), (picker, columns, row)
        assert TITLE not in row, (picker, columns, row)


def builtin_rows(n: Nvim) -> list[str]:
    n.nvim.command(f"AutodocSearch {QUERY}")
    n.until(lambda: (s := n.state()) and len(s["hits"]) >= len(SECTIONS))
    width = n.lua("return vim.api.nvim_win_get_width(require('autodoc.picker').state().wins.list)")
    rows = n.lines("list")
    assert all(n.nvim.funcs.strdisplaywidth(r) <= width for r in rows), (width, rows)
    return rows


def snacks_rows(n: Nvim) -> list[str]:
    n.lua(f"require('autodoc.pickers.snacks').search({{ query = '{QUERY}' }})")
    lines = ("local p = Snacks.picker.get()[1]; if not (p and p.list.win.buf) then return {} end;"
             " return vim.api.nvim_buf_get_lines(p.list.win.buf, 0, -1, false)")  # fmt: skip
    return n.until(lambda: (rows := n.lua(lines)) and sum(".md:" in r for r in rows) >= 3 and rows)


def telescope_rows(n: Nvim) -> list[str]:
    n.lua(f"require('autodoc.pickers.telescope').search({{ query = '{QUERY}' }})")
    lines = ("local p = require('telescope.actions.state').get_current_picker("
             "vim.api.nvim_get_current_buf()); if not (p and p.results_bufnr) then return {} end;"
             " return vim.api.nvim_buf_get_lines(p.results_bufnr, 0, -1, false)")  # fmt: skip
    return n.until(lambda: (rows := n.lua(lines)) and sum(".md:" in r for r in rows) >= 3 and rows)


def fzf_rows(n: Nvim) -> list[str]:
    n.lua(f"require('autodoc.pickers.fzf').search({{ query = '{QUERY}' }})")
    return n.until(lambda: (rows := n.lua(FZF_SCREEN)) and sum(".md:" in r for r in rows) >= 3
                   and rows)  # fmt: skip


CLOSE = {
    "builtin": "<Esc>",
    "snacks": None,
    "telescope": "<Esc><Esc>",
    "fzf": "<Esc>",
}


def close(n: Nvim, picker: str) -> None:
    if picker == "snacks":
        n.lua("Snacks.picker.get()[1]:close()")
    else:
        n.nvim.input(CLOSE[picker])
    n.until(lambda: n.state() is None and n.lua("return vim.bo.buftype") == "")


@pytest.mark.parametrize("columns", COLUMNS)
def test_a_cut_row_keeps_its_file_name_and_section_in_every_picker(nvim: Nvim, columns: int):
    if tool("fzf") is None:
        missing("fzf", "fzf is not installed (Debian: apt-get install fzf; .ci/run does)")
    nvim.nvim.command(f"set columns={columns} lines=40")
    for picker, rows in (("builtin", builtin_rows), ("snacks", snacks_rows),
                         ("telescope", telescope_rows), ("fzf", fzf_rows)):  # fmt: skip
        keep_apart(rows(nvim), columns, picker)
        close(nvim, picker)


def test_the_preview_is_titled_with_the_hits_path_and_line(nvim: Nvim):
    nvim.nvim.command("set columns=120 lines=40")
    nvim.nvim.command(f"AutodocSearch {QUERY}")
    st = nvim.until(lambda: (s := nvim.state()) and s["hits"] and s)
    title = ("return vim.api.nvim_win_get_config("
             "require('autodoc.picker').state().wins.preview).title")  # fmt: skip

    def shown() -> str:
        return "".join(chunk[0] for chunk in nvim.lua(title))

    hit = st["hits"][0]
    first = f"{hit['path']}:{hit['line']}"
    assert shown() == f" {first} "
    nvim.nvim.input("<C-n>")
    hit = st["hits"][1]
    nvim.until(lambda: shown() == f" {hit['path']}:{hit['line']} ")
    close(nvim, "builtin")
    # The adapters' previews too.
    snacks_rows(nvim)
    nvim.until(lambda: nvim.lua("return Snacks.picker.get()[1].preview.title") == first)
    close(nvim, "snacks")
    telescope_rows(nvim)
    nvim.until(lambda: nvim.lua(
        "return require('telescope.actions.state').get_current_picker("
        "vim.api.nvim_get_current_buf()).preview_title") == first)  # fmt: skip
    close(nvim, "telescope")

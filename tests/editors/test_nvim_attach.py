"""The notes the sidecar serves are attached to it in a real headless Neovim (0.11.4): the note
Neovim was started on, the ones loaded before the sidecar started and the ones opened after,
in an Obsidian-style vault whose file names have spaces; a note outside the root is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..conftest import missing, write
from .test_nvim import NO_NVIM, NVIM, Nvim, pynvim

ATTACHED = "return #vim.lsp.get_clients({bufnr = vim.fn.bufnr(...), name = 'autodoc'})"


@pytest.fixture
def obsidian(tmp_path: Path) -> Path:
    root = tmp_path / "Vault"
    (root / ".obsidian").mkdir(parents=True)
    write(root, "My Note.md", "# My Note\n\nSee [[Other Note]].\n\n## Plans\n\nGardening.\n")
    write(root, "Other Note.md", "# Other Note\n\nBack to [[My Note]].\n")
    write(root, "Daily/Later Note.md", "# Later Note\n\nOpened after the start.\n")
    write(tmp_path, "outside/Loose.md", "# Loose\n\nNo vault holds me.\n")
    return root


@pytest.fixture
def nvim(tmp_path: Path, obsidian: Path):
    if NVIM is None or pynvim is None:
        missing("nvim", NO_NVIM)
    n = Nvim(obsidian, tmp_path / "home", {"embedding": "none"})
    yield n
    n.close()


def _edit(n: Nvim, path: Path) -> None:
    n.nvim.command("edit " + n.nvim.funcs.fnameescape(str(path)))


def test_the_note_you_are_in_and_those_loaded_before_are_attached(nvim: Nvim, obsidian: Path):
    """`nvim "My Note.md"`, `:AutodocSearch`, `<Esc>`: the note has its client (lenses, symbols,
    re-index on save) without `:e!`, as has every Markdown buffer under the root."""
    loose = obsidian.parent / "outside" / "Loose.md"
    _edit(nvim, loose)
    _edit(nvim, obsidian / "Other Note.md")
    _edit(nvim, obsidian / "My Note.md")
    nvim.nvim.command("AutodocSearch")
    nvim.until(lambda: (s := nvim.state()) and s.get("workspace"))
    nvim.nvim.input("<Esc>")
    nvim.until(lambda: nvim.state() is None)
    assert nvim.nvim.current.buffer.name == str(obsidian / "My Note.md")
    assert nvim.lua(ATTACHED, str(obsidian / "My Note.md")) == 1
    assert nvim.lua(ATTACHED, str(obsidian / "Other Note.md")) == 1
    assert nvim.lua(ATTACHED, str(loose)) == 0
    # The sidecar reads the note by its URI (the space escaped): its outline answers.
    nvim.indexed()
    symbols = nvim.until(lambda: nvim.lua(
        "local r = vim.lsp.buf_request_sync(0, 'textDocument/documentSymbol',"
        " {textDocument = vim.lsp.util.make_text_document_params(0)}, 5000) or {}"
        " for _, a in pairs(r) do if a.result and #a.result > 0 then"
        " return vim.tbl_map(function(s) return s.name end, a.result) end end"
    ))  # fmt: skip
    assert symbols == ["My Note"]
    # Its save is indexed at once: a word written now is found.
    nvim.nvim.command("call append('$', ['Zucchini beds by the shed.']) | write")
    nvim.nvim.command("AutodocSearch zucchini")

    def found() -> list | None:
        hits = nvim.state()["hits"]
        if not hits:
            nvim.nvim.input("<C-u>zucchini")  # asked again until the save is indexed
        return hits

    hits = nvim.until(found)
    assert [h["path"] for h in hits] == ["My Note.md"]
    nvim.nvim.input("<Esc>")
    nvim.until(lambda: nvim.state() is None)
    # A note opened once the sidecar runs is attached as it loads.
    later = obsidian / "Daily" / "Later Note.md"
    _edit(nvim, later)
    nvim.until(lambda: nvim.lua(ATTACHED, str(later)) == 1)
    _edit(nvim, loose)
    assert nvim.lua(ATTACHED, str(loose)) == 0

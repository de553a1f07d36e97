"""What the plugin puts in the quickfix list, in a real headless Neovim (0.11.4) with the real
sidecar: the picker's hits each from its span's first line with its breadcrumb and snippet,
and a note's backlinks each at its link's own line and column."""

from __future__ import annotations

from pathlib import Path

from ..conftest import write
from . import test_nvim
from .test_nvim import Nvim

start, vault = test_nvim.start, test_nvim.vault

# A metadata stub under the title merged into the section after it: the hit's span starts at
# the stub (1); the section holding all its text is the title's, so it is labelled by the title
# and shown at its line (issue 55; it was `› Decision` at line 6, a label the stub is not under).
STUB = """# ADR 7: Rotate keys

Status: accepted
Date: 2024-03-01

## Decision

We rotate the signing keys every ninety days with the key rotation job.
The rotation job runs at night.
"""
TARGET = "# Target\n\nIntro.\n\n## Part two\n\nText.\n"
# Before each link, characters of more than one byte (and one UTF-16 unit): a column in the
# sidecar's units is not Neovim's byte column.
LINKER = "# Liens\n\nVoilà — voir [[target]] et [[target#Part two]], déjà.\n"


def test_ctrl_q_lists_each_hit_from_its_span_start_with_its_text(start, vault: Path):
    write(vault, "adr/0007-rotate-keys.md", STUB)
    n = start({"embedding": "none"})
    n.serve()
    n.nvim.command("AutodocSearch rotation job")
    hits = n.until(lambda: (s := n.state()) and s["hits"])
    stub = next(h for h in hits if h["path"] == "adr/0007-rotate-keys.md")
    assert (stub["line_start"], stub["line"], stub["line_end"]) == (1, 1, 9)
    n.nvim.input("<C-q>")
    n.until(lambda: n.state() is None)
    items = n.nvim.eval("getqflist()")
    assert [(i["lnum"], i["end_lnum"]) for i in items] == [
        (h["line_start"], h["line_end"]) for h in hits
    ]
    item = items[hits.index(stub)]
    assert n.nvim.funcs.bufname(item["bufnr"]).endswith("adr/0007-rotate-keys.md")
    assert item["text"] == f"{stub['breadcrumb']} — {stub['snippet']}"
    assert item["text"].startswith("ADR 7: Rotate keys — ")


def _byte_column(line: str, text: str) -> int:
    """The 1-based byte column of `text` in `line`, as the quickfix list counts."""
    return len(line[: line.index(text)].encode()) + 1


def _backlinks(n: Nvim, line: int) -> list[tuple[int, int]]:
    """Run the lens on `line` (1-based) and read the quickfix list it fills."""
    n.nvim.command("call setqflist([], 'r')")
    n.nvim.command(f"call cursor({line}, 1)")
    n.lua("vim.lsp.codelens.run()")
    items = n.until(lambda: n.nvim.funcs.getqflist() or None)
    n.nvim.command("cclose")  # back in the note's window
    return [(i["lnum"], i["col"]) for i in items]


def test_backlinks_are_listed_at_each_links_own_column(start, vault: Path):
    write(vault, "writing/target.md", TARGET)
    write(vault, "writing/liens.md", LINKER)
    n = start({"embedding": "none"})
    n.serve()
    n.nvim.command(f"edit {vault / 'writing/target.md'}")
    n.until(lambda: n.lua("return #vim.lsp.get_clients({bufnr = 0, name = 'autodoc'}) == 1"))
    n.until(lambda: n.lua("vim.lsp.codelens.refresh({bufnr = 0})"
                          " return #vim.lsp.codelens.get(0) == 2"))  # fmt: skip
    text = LINKER.splitlines()[2]
    whole, heading = _byte_column(text, "[[target]]"), _byte_column(text, "[[target#Part")
    # On the title: every link to the note, in the order they are written.
    assert _backlinks(n, 1) == [(3, whole), (3, heading)]
    # On a heading: the link to that heading only.
    assert _backlinks(n, 5) == [(3, heading)]

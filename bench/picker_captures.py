"""Text captures of each picker adapter over the sample vault, as a person sees them.

A headless Neovim with the plugin and one of the vendored pickers (`../shared/vendor/nvim`:
snacks.nvim, telescope.nvim with plenary.nvim, fzf-lua with Debian's fzf) opens the adapter's
search for one query over a copy of examples/vault (lexical, so the capture does not depend on a
model), waits for its rows, and writes the composed screen (floating windows included) as text.

    python bench/picker_captures.py [--out doc/pickers] [--query "embedded relational store"]
        [--width 120] [--height 30]

Writes OUT/snacks.txt, OUT/telescope.txt and OUT/fzf-lua.txt (a picker whose plugin or binary
is absent is skipped, and said).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pynvim

sys.path.insert(0, str(Path(__file__).resolve().parent))
from picker_latency import screen_text

REPO = Path(__file__).resolve().parents[1]
VENDOR = REPO.parent / "shared" / "vendor" / "nvim"

# Each adapter: the plugins it needs on the runtime path, how to open its search, and a Lua
# expression that is true once its rows are drawn.
ADAPTERS: dict[str, tuple[tuple[str, ...], str, str]] = {
    "snacks": (
        ("snacks.nvim",),
        "require('autodoc.pickers.snacks').search({ query = ... })",
        "local p = Snacks and Snacks.picker.get()[1]; return p ~= nil and #p:items() > 0"
        " and p.title:find('hits') ~= nil",
    ),
    "telescope": (
        ("plenary.nvim", "telescope.nvim"),
        "vim.cmd('runtime plugin/telescope.lua'); require('telescope').load_extension('autodoc');"
        " require('autodoc.pickers.telescope').search({ query = ... })",
        "local s = require('telescope.actions.state');"
        " local p = s.get_current_picker(vim.api.nvim_get_current_buf());"
        " return p ~= nil and type(p.manager) == 'table' and p.manager:num_results() > 0",
    ),
    "fzf-lua": (
        ("fzf-lua",),
        "require('autodoc.pickers.fzf').search({ query = ... })",
        "for _, b in ipairs(vim.api.nvim_list_bufs()) do if vim.bo[b].buftype == 'terminal'"
        " then for _, l in ipairs(vim.api.nvim_buf_get_lines(b, 0, -1, false)) do"
        " if l:find('\\xe2\\x80\\x82') then return true end end end end return false",
    ),
}


def capture(name: str, vault: Path, home: Path, args: argparse.Namespace) -> str | None:
    plugins, open_search, drawn = ADAPTERS[name]
    dirs = [VENDOR / p for p in plugins]
    if not all(d.is_dir() for d in dirs) or (name == "fzf-lua" and not shutil.which("fzf")):
        return None
    os.environ.update({"AUTODOC_DB": str(home / f"{name}.db"), "XDG_DATA_HOME": str(home),
                       "XDG_STATE_HOME": str(home), "XDG_CONFIG_HOME": str(home)})  # fmt: skip
    cwd = os.getcwd()
    os.chdir(vault)
    try:
        nvim = pynvim.attach("child", argv=[
            shutil.which("nvim") or "nvim", "--embed", "--headless", "--clean",
            "--cmd", f"set rtp^={REPO}", *[a for d in dirs for a in ("--cmd", f"set rtp^={d}")],
            "--cmd", "runtime plugin/autodoc.lua"])  # fmt: skip
    finally:
        os.chdir(cwd)
    try:
        nvim.exec_lua(
            "local cmd = ...; require('autodoc').setup({ cmd = cmd, progress = false,"
            " server = { embedding = 'none' } })",
            [sys.executable, "-m", "autodoc", "serve"],
        )
        nvim.command(f"set columns={args.width} lines={args.height}")
        nvim.command("Autodoc workspace")
        deadline = time.monotonic() + 60
        while not nvim.exec_lua(
            "for _, ws in pairs(require('autodoc.client').ready) do"
            " if #ws > 0 then return true end end return false"
        ):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{name}: the sidecar did not index the vault")
            time.sleep(0.1)
        nvim.exec_lua(open_search, args.query)
        deadline = time.monotonic() + 30
        while not nvim.exec_lua(drawn):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{name}: no rows drawn")
            time.sleep(0.1)
        time.sleep(0.5)  # the preview and the title after the rows
        return screen_text(nvim, args.width, args.height)
    finally:
        with contextlib.suppress(Exception):  # Neovim is gone once it quits
            nvim.command("qall!")
            nvim.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--out", type=Path, default=REPO / "doc" / "pickers")
    p.add_argument("--query", default="embedded relational store")
    p.add_argument("--width", type=int, default=120)
    p.add_argument("--height", type=int, default=30)
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "vault"
        shutil.copytree(REPO / "examples" / "vault", vault)
        (vault / ".autodoc").write_text("")
        for name in ADAPTERS:
            text = capture(name, vault, Path(tmp) / "home", args)
            if text is None:
                print(f"{name}: skipped (its plugin or fzf is absent)")
                continue
            (args.out / f"{name}.txt").write_text(text.rstrip() + "\n", encoding="utf-8")
            print(f"wrote {args.out / f'{name}.txt'}")


if __name__ == "__main__":
    main()

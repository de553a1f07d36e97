"""What the plugin says as it works never stops the editor with "Press ENTER": a real headless
Neovim (0.11.4) with a UI attached 40 columns wide and 'cmdheight' 1, the real sidecar indexing
and re-indexing the sample vault."""

from __future__ import annotations

from pathlib import Path

from ..conftest import missing
from . import test_nvim
from .test_nvim import NO_NVIM, NVIM, Nvim, pynvim

vault = test_nvim.vault

# Checked from a timer (a fast callback, run even while a prompt waits for a key): a hit-enter
# prompt is recorded and answered, so the test goes on and fails instead of hanging.
WATCH_PROMPTS = """
_G.prompts = {}
local timer = vim.uv.new_timer()
timer:start(0, 5, function()
  local mode = vim.api.nvim_get_mode()
  if mode.blocking and mode.mode:sub(1, 1) == "r" then
    table.insert(_G.prompts, mode.mode)
    vim.api.nvim_input("<CR>")
  end
end)
"""


def test_progress_notices_never_ask_to_press_enter(tmp_path: Path, vault: Path):
    if NVIM is None or pynvim is None:
        missing("nvim", NO_NVIM)
    n = Nvim(vault, tmp_path / "home", {"embedding": "none"})
    try:
        n.nvim.ui_attach(40, 12, rgb=True)
        n.nvim.command("set cmdheight=1")
        assert n.nvim.eval("&columns") == 40
        n.lua(WATCH_PROMPTS)
        n.nvim.command("Autodoc workspace")  # "serving /tmp/.../vault", then the first index
        n.indexed()
        n.until(lambda: "autodoc: indexed" in n.nvim.command_output("messages"))
        n.nvim.command("messages clear")
        n.nvim.command("Autodoc reindex")
        n.until(lambda: "autodoc: indexed" in n.nvim.command_output("messages"))
        assert n.lua("return _G.prompts") == []
        said = n.nvim.command_output("messages").splitlines()
        assert said[0] == "autodoc: Reindexing vault"
        assert all(n.nvim.funcs.strdisplaywidth(line) <= 28 for line in said), said  # echospace
    finally:
        n.close()

"""luacheck over the Neovim plugin (`lua/`, `plugin/`, `lsp/`) with the repository's
.luacheckrc: no undefined or unused variables, no shadowing, no write to a read-only global.
Skips where luacheck is not installed (Debian: lua-check); AUTODOC_REQUIRE=luacheck fails then."""

from __future__ import annotations

import re
import subprocess

from .conftest import REPO, missing, tool

FOLDERS = ("lua", "plugin", "lsp")


def luacheck() -> str:
    exe = tool("luacheck")
    if exe is None:
        missing("luacheck", "luacheck is not installed (apt-get install lua-check)")
    return exe


def test_luacheck_is_clean():
    out = subprocess.run(
        [luacheck(), "--no-color", "--codes", *FOLDERS],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    report = out.stdout + out.stderr
    assert out.returncode == 0, report
    total = re.search(r"^Total: 0 warnings / 0 errors in (\d+) files$", report, re.M)
    lua_files = [p for folder in FOLDERS for p in (REPO / folder).rglob("*.lua")]
    assert total is not None and int(total.group(1)) == len(lua_files), report


def test_luacheck_reads_the_repositorys_config():
    """The config is what makes `vim` known: without it the same files are not clean, so a
    green run above is the config's rules at work, not a check that saw nothing."""
    out = subprocess.run(
        [luacheck(), "--no-color", "--no-config", "plugin"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode != 0 and "accessing undefined variable 'vim'" in out.stdout

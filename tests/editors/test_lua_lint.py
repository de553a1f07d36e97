"""luacheck over the Neovim plugin (`lua/`, `plugin/`, `lsp/`) with the repository's
.luacheckrc: no undefined or unused variables, no shadowing, no write to a read-only global.
Skips where luacheck is not installed (Debian: lua-check); AUTODOC_REQUIRE=luacheck fails then."""

from __future__ import annotations

import re
import subprocess

from ..conftest import REPO, missing, tool

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


MAX_LINES = 60
FUNCTION = re.compile(r"^(\s*)(?!--).*\bfunction\b(?!.*\bend\b[\s),]*$)")


def lua_functions(path) -> list[tuple[int, int, str]]:
    """Each multi-line function in a StyLua-formatted file: its first line, its length and its
    text. Its `end` is the first line after it indented as deep as the line that opened it."""
    lines = path.read_text().splitlines()
    found = []
    for i, line in enumerate(lines):
        m = FUNCTION.match(line)
        if not m:
            continue
        indent = m.group(1)
        for j in range(i + 1, len(lines)):
            if lines[j].startswith(indent + "end"):
                found.append((i + 1, j - i + 1, line.strip()))
                break
    return found


def test_no_lua_function_over_60_lines():
    """The plugin's functions stay short enough to read whole (the sidecar's rule, test_layout;
    in Lua every function has a doc comment above, so no comment excuses a long one)."""
    long = [
        f"{path.relative_to(REPO)}:{first} {length} lines: {text}"
        for path in sorted(p for folder in FOLDERS for p in (REPO / folder).rglob("*.lua"))
        for first, length, text in lua_functions(path)
        if length > MAX_LINES
    ]
    assert long == []


def test_the_function_finder_sees_each_function_whole():
    """The rule above is only as good as its finder: on the built-in picker's modules it finds
    their functions with the right lengths (checked against a hand count of one)."""
    picker = REPO / "lua" / "autodoc" / "picker"
    found = {text: length for p in picker.glob("*.lua") for _, length, text in lua_functions(p)}
    assert found["function M.open(opts)"] == len(
        re.search(r"^function M\.open\(opts\)\n.*?^end$", (picker / "init.lua").read_text(),
                  re.S | re.M).group(0).splitlines()
    )  # fmt: skip
    assert len(found) > 30

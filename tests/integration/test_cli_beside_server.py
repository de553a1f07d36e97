"""The command line beside a running editor's server (issue 54): a real `autodoc serve` LSP
process started on the store and initialized holds the writer lease, or a helper process takes
it. Reads never need the lease; `check` exits by the vault's own errors; a write waits a bounded
time, then says in words who writes the store; every error is a sentence, JSON with --json."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from queue import Empty, Queue
from typing import Any

import pytest

from autodoc.serve.cli.main import main
from autodoc.serve.early_handshake import LspWire
from autodoc.wire.errors import STORE_BUSY, RpcError

from ..conftest import EXAMPLE_VAULT, REPO, write

WAIT_S = 60.0
SCHEMA = "_schema/frontmatter.yaml"  # the default schema option
BROKEN = "# Broken\n\nSee [the missing note](notes/missing.md).\n"


def _env() -> dict[str, str]:
    """This environment without AutoDoc's settings (the store is named with --db)."""
    keep = ("AUTODOC_CACHE",)
    return {k: v for k, v in os.environ.items() if not k.startswith("AUTODOC_") or k in keep}


def autodoc(db: Path, *args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "autodoc", "--db", str(db), *args],
        capture_output=True, text=True, timeout=WAIT_S * 2, env=_env(), cwd=cwd,
    )  # fmt: skip


class Editor:
    """`autodoc serve` on stdio, initialized on a folder as an editor starts it."""

    def __init__(self, db: Path, root: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "autodoc", "--db", str(db), "serve"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=_env(), cwd=root,
        )  # fmt: skip
        self.messages: Queue[dict[str, Any]] = Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": {},
            "initializationOptions": {"embedding": {"provider": "none"}}}})  # fmt: skip
        self.wait_for(lambda m: m.get("id") == 1)
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})

    def _read(self) -> None:
        assert self.proc.stdout is not None
        while (body := LspWire().read(self.proc.stdout)[1]) is not None:
            self.messages.put(json.loads(body))

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(LspWire().frame(json.dumps(message).encode()))
        self.proc.stdin.flush()

    def wait_for(self, wanted) -> dict[str, Any]:
        deadline = time.monotonic() + WAIT_S
        while True:
            try:
                message = self.messages.get(timeout=max(0.0, deadline - time.monotonic()))
            except Empty:
                raise AssertionError("the server did not say it within the deadline") from None
            if wanted(message):
                return message

    def close(self) -> None:
        with_stdin = self.proc.stdin
        try:
            self.send({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
            self.wait_for(lambda m: m.get("id") == 2)
            self.send({"jsonrpc": "2.0", "method": "exit"})
            self.proc.wait(timeout=WAIT_S)
        finally:
            if with_stdin is not None:
                with_stdin.close()
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def editor(tmp_path_factory) -> Iterator[tuple[Path, Path, int]]:
    """(store, vault, the server's pid): the server has indexed the vault and holds the lease."""
    base = tmp_path_factory.mktemp("beside")
    vault = base / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    db = base / "store" / "autodoc.db"
    server = Editor(db, vault)
    try:
        ready = server.wait_for(lambda m: m.get("method") == "autodoc/indexReady")
        assert ready["params"]["server"]["writer"] is True
        yield db, vault, server.proc.pid
    finally:
        server.close()


def holder_of(pid: int) -> str:
    return f"pid {pid} on {socket.gethostname()}"


def test_check_beside_an_editor_exits_by_the_vaults_own_errors(editor, tmp_path):
    db, vault, pid = editor
    said = (f"autodoc: the store is being written by another process, {holder_of(pid)}"
            f" (`autodoc --db {db} serve`, since ")  # fmt: skip
    out = autodoc(db, "check", str(vault))
    assert (out.returncode, out.stdout) == (0, ""), out.stderr
    note, summary = out.stderr.splitlines()
    assert note.startswith(said) and note.endswith(
        "checked the files as they are now, in a private index"
    )
    assert summary.startswith("0 errors, 0 warnings in 8 documents")
    # A link broken a moment ago is found, whether or not the editor's watcher caught it yet.
    broken = write(vault, "notes/broken.md", BROKEN)
    try:
        out = autodoc(db, "check", str(vault), "--json")
        assert out.returncode == 1, out.stderr
        report = json.loads(out.stdout)
        assert [(f["path"], f["kind"]) for f in report["findings"]] == [("notes/broken.md", "link")]
        assert report["private_index"] is True
        assert report["not_indexed"]["code"] == -32070
        assert report["not_indexed"]["data"]["pid"] == pid
    finally:
        broken.unlink()
    # A folder the store does not know is checked too, and not added to the store.
    other = tmp_path / "other"
    write(other, "a.md", BROKEN)
    out = autodoc(db, "check", str(other))
    assert out.returncode == 1 and out.stdout.startswith("a.md:3: link to"), out.stderr
    listed = json.loads(autodoc(db, "--call", "workspace.list").stdout)
    assert [w["name"] for w in listed] == ["vault"]
    # Could not run: exit 2 and one sentence, never 1, never JSON on stderr.
    out = autodoc(db, "check", str(tmp_path / "absent"))
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr == f"autodoc: root is not a folder: {tmp_path / 'absent'}\n"


def test_index_beside_an_editor_exits_2_naming_the_editor(editor):
    db, vault, pid = editor
    out = autodoc(db, "index", str(vault), "--wait", "0")
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr.startswith(
        f"autodoc: cannot index vault: the store is being written by another process,"
        f" {holder_of(pid)} (`autodoc --db {db} serve`, since "
    )
    assert "stop that process or wait longer with --wait SECONDS" in out.stderr
    assert "{" not in out.stderr and len(out.stderr.splitlines()) == 1
    out = autodoc(db, "index", str(vault), "--wait", "0", "--json")
    assert out.returncode == 2
    error = json.loads(out.stdout)["error"]
    assert error["code"] == -32070 and error["message"].startswith("cannot index vault: ")
    data = error["data"]
    assert (data["pid"], data["host"], data["command"]) == (
        pid, socket.gethostname(), f"autodoc --db {db} serve"
    )  # fmt: skip
    assert data["lock"] == f"{db}.lock" and data["since"]


def test_reads_beside_an_editor_need_no_lease(editor, tmp_path):
    db, vault, _ = editor
    search = autodoc(db, "search", "embedded relational store", "--json", "-n", "1", cwd=vault)
    assert search.returncode == 0, search.stderr
    assert json.loads(search.stdout)["hits"][0]["path"] == "adr/0003-embedded-sqlite-store.md"
    find = autodoc(db, "find", "reclaimBatch", "-w", "vault")
    assert find.returncode == 0 and "adr/0003-embedded-sqlite-store.md" in find.stdout
    related = autodoc(db, "related", str(vault / "adr" / "0004-lease-recovery.md"))
    assert related.returncode == 0, related.stderr
    status = autodoc(db, "--call", "index.status", '["vault"]')
    assert status.returncode == 0 and json.loads(status.stdout)["writer"] is False
    golden = tmp_path / "golden.jsonl"
    golden.write_text(
        '{"query": "why did we pick sqlite", "path": "adr/0003-embedded-sqlite-store.md"}\n'
    )
    ev = autodoc(db, "eval", str(vault), "--golden", str(golden), "--stages", "lexical",
                 "--options", '{"embedding": {"provider": "none"}}', "--min-recall3", "0.5",
                 "--json")  # fmt: skip
    assert ev.returncode == 0, ev.stderr
    report = json.loads(ev.stdout)
    assert report["gate"]["passed"] and report["not_indexed"]["code"] == -32070
    assert "evaluating vault as it is indexed there" in ev.stderr


HOLDER = """
import sys
from pathlib import Path
from autodoc.store.lease import WriterLease
lease = WriterLease(Path(sys.argv[1]))
lease.acquire()
print("held", flush=True)
sys.stdin.read()  # until the test closes it
lease.release()
"""


def test_a_write_waits_for_the_lease_and_goes_on_when_it_is_given_back(tmp_path):
    db = tmp_path / "store" / "autodoc.db"
    db.parent.mkdir()
    vault = tmp_path / "vault"
    write(vault, "a.md", "# A\n\nwords about glimmerwick\n")
    assert autodoc(db, "--call", "workspace.add", json.dumps(["vault", str(vault)])).returncode == 0
    assert autodoc(db, "--call", "workspace.configure",
                   '["vault", {"embedding": {"provider": "none"}}]').returncode == 0  # fmt: skip
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(db)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=_env())  # fmt: skip
    assert holder.stdout is not None and holder.stdin is not None
    try:
        assert holder.stdout.readline() == "held\n"
        index = subprocess.Popen(
            [sys.executable, "-m", "autodoc", "--db", str(db), "index", str(vault), "--wait",
             str(WAIT_S)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
        )  # fmt: skip
        assert index.stderr is not None
        waiting = index.stderr.readline()
        assert waiting == (f"autodoc: waiting up to {WAIT_S:g} s for {holder_of(holder.pid)} to"
                           " stop writing the store\n")  # fmt: skip
    finally:
        holder.stdin.close()  # the lease is given back
        holder.wait(timeout=WAIT_S)
    out, err = index.communicate(timeout=WAIT_S)
    assert index.returncode == 0, err
    assert out.startswith("indexed vault: 1 files (1 added")


# -- in this process, the lease held on another open file (as by another process) --------------


@contextlib.contextmanager
def lease_held_elsewhere(db: Path) -> Iterator[None]:
    """The store's writer lease, held as another process holds it: an flock on its own open
    file, which this process's store cannot take."""
    db.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(f"{db}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.pwrite(fd, b"pid 42 on elsewhere\ncommand autodoc serve\nsince 2026-03-05T10:02:11Z\n", 0)
    try:
        yield
    finally:
        os.close(fd)


def test_adding_or_configuring_what_is_there_needs_no_lease(rpc, db_path, vault):
    write(vault, "a.md", "# A\n")
    rpc.call("workspace.add", ["v", str(vault)])
    rpc.call("workspace.configure", ["v", {"embedding": "none", "exclude": ["drafts/"]}])
    rpc.engine.store.close()  # gives the lease back, as a one-shot command does at its end
    with lease_held_elsewhere(db_path):
        again = rpc.call("workspace.add", ["v", str(vault)])
        assert (again["name"], again["created"]) == ("v", False)
        same = rpc.call("workspace.configure", ["v", {"exclude": ["drafts/"], "schema": SCHEMA}])
        assert same["reindexed"] is None and same["schema"]["path"] == "_schema/frontmatter.yaml"
        with pytest.raises(RpcError) as busy:  # a change is a write: refused, naming the holder
            rpc.call("workspace.configure", ["v", {"exclude": []}])
        assert busy.value.code == STORE_BUSY and busy.value.data["pid"] == 42
        with pytest.raises(RpcError) as busy:
            rpc.call("workspace.add", ["w", str(vault)])
        assert busy.value.code == STORE_BUSY


def test_a_private_check_keeps_the_workspaces_options_and_takes_schema(capsys, db_path, vault):
    """What the workspace leaves out stays out of the private index; `--schema` applies."""
    write(vault, "a.md", "---\ntitle: A\n---\n# A\n")
    write(vault, "drafts/b.md", BROKEN)
    schema = write(
        vault.parent, "strict.yaml", "common:\n  owner: {type: string, required: true}\n"
    )
    main(["--db", str(db_path), "index", str(vault)])
    main(["--db", str(db_path), "--call", "workspace.configure",
          '["vault", {"embedding": "none", "exclude": ["drafts/"]}]'])  # fmt: skip
    capsys.readouterr()
    with lease_held_elsewhere(db_path):
        assert main(["--db", str(db_path), "check", str(vault)]) == 0
        out, err = capsys.readouterr()
        assert out == "" and "pid 42 on elsewhere (`autodoc serve`, since 2026-03-05" in err
        assert main(["--db", str(db_path), "check", str(vault), "--schema", str(schema)]) == 1
        out, _ = capsys.readouterr()
        assert out.startswith("a.md:1: ") and "owner" in out


def test_exit_statuses_are_told_and_usage_errors_are_sentences_or_json(capsys, db_path):
    with pytest.raises(SystemExit):
        main(["--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "Exit status: 0 done; 1 check found errors, or eval's --min-recall3 gate failed; 2" \
           " could not run" in shown  # fmt: skip
    assert main(["--db", str(db_path), "search", "x", "-n", "many"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.endswith("autodoc: argument --limit/-n: invalid int value: 'many'\n")
    assert main(["--db", str(db_path), "search", "x", "-n", "many", "--json"]) == 2
    out, err = capsys.readouterr()
    assert json.loads(out) == {"error": {
        "code": -32602, "message": "argument --limit/-n: invalid int value: 'many'"}}  # fmt: skip
    assert main(["--db", str(db_path), "index", "/", "--wait", "-1"]) == 2
    assert capsys.readouterr().err == "autodoc: --wait takes seconds, 0 or more, not -1\n"

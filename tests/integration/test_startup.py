"""Start like a Unix tool (issue 45): each command imports what it needs and no more, and the
servers answer `initialize` before their store has opened.

Each command runs in a process of its own through `autodoc.serve.cli.main.main`, which then writes
the names of every module the process holds: a module imported at the top of any module on a
command's path is seen here, however deep (a planted `import onnxruntime` is, below). The
timings are bench/startup.py's (doc/benchmarks/performance.md).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from queue import Empty, Queue
from typing import Any

import pytest

from autodoc.serve.early_handshake import LspWire

from ..conftest import REPO

# What a command that embeds nothing must never load: the model's runtime, its tokenizer and
# the vector index.
MODEL = ("onnxruntime", "tokenizers", "usearch")
# What only a server, a remote store or a validated request needs.
SERVERS = ("mcp", "pygls", "lsprotocol", "starlette", "uvicorn", "watchdog", "qdrant_client")
VALIDATION = ("pydantic",)
# What `--version` and `--help` must not load: anything of the engine, or what it stands on.
ENGINE = ("autodoc.engine", "autodoc.store", "autodoc.query", "autodoc.index", "numpy", "tantivy")

PROBE = """
import json, sys
out = sys.argv.pop(1)
from autodoc.serve.cli.main import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:  # --version and --help exit from argparse
    code = exc.code
import autodoc
with open(out, "w") as f:
    json.dump({"code": code, "modules": sorted(sys.modules), "from": autodoc.__file__}, f)
"""
WAIT_S = 60.0


def _env(pythonpath: Path | None = None) -> dict[str, str]:
    """This environment without AutoDoc's settings, but for the model cache: a model's
    identity, recorded there by the fixture's indexing, is what spares a search the model."""
    keep = ("AUTODOC_CACHE",)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUTODOC_") or k in keep}
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return env


def probe(
    tmp_path: Path, args: list[str], cwd: Path, pythonpath: Path | None = None
) -> dict[str, Any]:
    """Run `autodoc ARGS` in a new process; its exit code, the modules it held at the end,
    and where `autodoc` was imported from."""
    out = tmp_path / f"probe-{len(list(tmp_path.glob('probe-*')))}.json"
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(out), *args],
        cwd=cwd,
        env=_env(pythonpath),
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        stdin=subprocess.DEVNULL,
    )
    assert out.is_file(), proc.stderr[-2000:]
    return json.loads(out.read_text())


def loaded(modules: list[str], names: tuple[str, ...]) -> list[str]:
    """Which of these packages (or any module under them) the process held."""
    return [n for n in names if any(m == n or m.startswith(n + ".") for m in modules)]


def test_version_and_help_load_nothing_of_the_engine(tmp_path):
    for args in (["--version"], ["--help"], ["search", "--help"], ["mcp", "--help"]):
        got = probe(tmp_path, args, cwd=tmp_path)
        assert got["code"] == 0, args
        assert loaded(got["modules"], ENGINE + MODEL + SERVERS + VALIDATION) == [], args


# Commands that embed nothing: `{db}` and `{root}` are filled in.
READING = {
    "lexical search": ["search", "lease recovery", "--stages", "lexical", "-n", "3"],
    "find": ["find", "reclaimBatch"],
    "check": ["check", "{root}"],
    "doc.read": ["--call", "doc.read", '["vault", "adr/0004-lease-recovery.md", 1, 5]'],
    "search.find": ["--call", "search.find", '["vault", "lease"]'],
    "index.status": ["--call", "index.status", '["vault"]'],
}


@pytest.mark.parametrize("command", sorted(READING))
def test_a_command_that_embeds_nothing_never_loads_the_model(embedded_sample, tmp_path, command):
    root, db = embedded_sample
    args = [a.replace("{root}", str(root)) for a in READING[command]]
    got = probe(tmp_path, ["--db", str(db), *args], cwd=root)
    assert got["code"] == 0, command
    assert loaded(got["modules"], MODEL + SERVERS + VALIDATION) == [], command


def test_a_hybrid_search_does_load_the_model(embedded_sample, tmp_path):
    """The other side: the probe sees what a command loads late, inside a function (without
    this, the test above could pass with a probe that sees nothing)."""
    root, db = embedded_sample
    got = probe(tmp_path, ["--db", str(db), "search", "why did we pick sqlite"], cwd=root)
    assert got["code"] == 0
    assert loaded(got["modules"], MODEL) == list(MODEL)
    assert loaded(got["modules"], SERVERS + VALIDATION) == []


def test_a_model_import_planted_on_the_lexical_path_is_caught(embedded_sample, tmp_path):
    """The bug these tests exist for: someone imports onnxruntime at the top of a module a
    lexical search imports. Planted in a copy of the package, the probe reports it."""
    root, db = embedded_sample
    copy = tmp_path / "planted"
    shutil.copytree(REPO / "sidecar" / "autodoc", copy / "autodoc")
    stage = copy / "autodoc" / "query" / "stages" / "lexical.py"
    text = stage.read_text(encoding="utf-8")
    anchor = "from __future__ import annotations\n"
    stage.write_text(text.replace(anchor, anchor + "\nimport onnxruntime  # planted\n", 1))
    args = ["--db", str(db), *READING["lexical search"]]
    got = probe(tmp_path, args, cwd=root, pythonpath=copy)
    assert got["from"] == str(copy / "autodoc" / "__init__.py")  # the planted copy ran
    assert got["code"] == 0
    assert loaded(got["modules"], MODEL) == ["onnxruntime"]


# -- the servers answer before their store opens ----------------------------------------------


class _Held:
    """The store's write lock, held by this test: a process that opens the store (which writes
    its schema version at start) waits for it, up to SQLite's 30 s busy timeout."""

    def __init__(self, db: Path) -> None:
        self.conn = sqlite3.connect(db, isolation_level=None, timeout=5)
        self.conn.execute("BEGIN IMMEDIATE")

    def release(self) -> None:
        self.conn.execute("ROLLBACK")
        self.conn.close()


class _Lines:
    """A child's stdout, read on a thread: each message as it arrives."""

    def __init__(self, stream) -> None:
        self.queue: Queue[bytes] = Queue()
        self.seen: list[dict[str, Any]] = []  # every message, whoever waited for it
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream) -> None:
        for line in iter(stream.readline, b""):
            self._got(line)

    def _got(self, body: bytes) -> None:
        self.seen.append(json.loads(body))
        self.queue.put(body)

    def get(self, timeout: float) -> bytes:
        return self.queue.get(timeout=timeout)


def _answer(lines: _Lines, rid: int, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        try:
            message = json.loads(lines.get(max(0.0, deadline - time.monotonic())))
        except Empty:
            raise AssertionError(f"no answer to request {rid} within {timeout} s") from None
        if message.get("id") == rid:
            return message


# Well under the 30 s a process waits for the held store: an answer within it did not wait.
ANSWERED_S = 15.0


def test_mcp_answers_initialize_and_lists_its_tools_before_the_store_opens(
    embedded_sample, tmp_path
):
    root, db = embedded_sample
    held = _Held(db)
    proc = subprocess.Popen(
        [sys.executable, "-m", "autodoc", "--db", str(db), "mcp", str(root), "--no-watch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=_env(),
        cwd=tmp_path,
    )
    assert proc.stdin is not None and proc.stdout is not None
    lines = _Lines(proc.stdout)

    def send(message: dict[str, Any]) -> None:
        proc.stdin.write((json.dumps(message) + "\n").encode())
        proc.stdin.flush()

    try:
        client = {"name": "test", "version": "0"}
        params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
        init = _answer(lines, 1, ANSWERED_S)
        assert init["result"]["serverInfo"]["name"] == "autodoc"
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        tools = _answer(lines, 2, ANSWERED_S)["result"]["tools"]
        assert {t["name"] for t in tools} >= {"search", "find", "read_span", "status"}
        # Both came while the store could not be opened. A search sent now waits for it.
        arguments = {"query": "why did we pick sqlite", "limit": 1}
        send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
              "params": {"name": "search", "arguments": arguments}})  # fmt: skip
        with pytest.raises(AssertionError, match="no answer"):
            _answer(lines, 3, 0.5)  # still waiting for the store: no answer, no error
        held.release()
        held = None
        answer = _answer(lines, 3, WAIT_S)["result"]
        assert not answer.get("isError"), answer
        hits = answer["structuredContent"]["hits"]
        assert hits[0]["path"] == "adr/0003-embedded-sqlite-store.md"
    finally:
        if held is not None:
            held.release()
        proc.stdin.close()
        proc.wait(timeout=WAIT_S)


def _lsp_send(proc: subprocess.Popen, message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(LspWire().frame(json.dumps(message).encode()))
    proc.stdin.flush()


class _Framed(_Lines):
    """A language server's stdout: one message per Content-Length frame."""

    def _read(self, stream) -> None:
        while (body := LspWire().read(stream)[1]) is not None:
            self._got(body)


def test_lsp_answers_initialize_before_the_store_opens(embedded_sample, tmp_path):
    root, db = embedded_sample
    held = _Held(db)
    proc = subprocess.Popen(
        [sys.executable, "-m", "autodoc", "--db", str(db), "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=_env(),
        cwd=tmp_path,
    )
    assert proc.stdout is not None
    frames = _Framed(proc.stdout)
    try:
        params = {"processId": None, "rootUri": root.as_uri(), "capabilities": {}}
        _lsp_send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
        init = _answer(frames, 1, ANSWERED_S)
        assert init["result"]["serverInfo"]["name"] == "autodoc"
        _lsp_send(proc, {"jsonrpc": "2.0", "method": "initialized", "params": {}})
        query = ["vault", "why did we pick sqlite", {"limit": 1}]
        _lsp_send(proc, {"jsonrpc": "2.0", "id": 2, "method": "autodoc/search.query",
                         "params": query})  # fmt: skip
        with pytest.raises(AssertionError, match="no answer"):
            _answer(frames, 2, 0.5)  # waiting for the store
        held.release()
        held = None
        answer = _answer(frames, 2, WAIT_S)
        assert answer["result"]["hits"][0]["path"] == "adr/0003-embedded-sqlite-store.md"
        _lsp_send(proc, {"jsonrpc": "2.0", "id": 3, "method": "shutdown"})
        _answer(frames, 3, WAIT_S)
        _lsp_send(proc, {"jsonrpc": "2.0", "method": "exit"})
    finally:
        if held is not None:
            held.release()
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=WAIT_S)


def test_a_model_files_identity_is_derived_once_and_again_when_the_file_changes(
    tmp_path, monkeypatch
):
    """What spares a search the model: the weights' hash and the dimensions, kept per model
    file while its size and modification time stay; a changed file is hashed again, and its
    dimensions are unknown until the model runs."""
    from autodoc.models import model_files

    monkeypatch.setenv("AUTODOC_CACHE", str(tmp_path / "cache"))
    model = tmp_path / "model.onnx"
    model.write_bytes(b"weights")
    first = model_files.weights_identity(model)
    assert "dim" not in first
    model_files.remember_dim(model, first, _Probe(384))
    hashed = []
    monkeypatch.setattr(model_files, "file_sha256", lambda p: hashed.append(p) or "x")
    again = model_files.weights_identity(model)
    assert (again["sha256"], again["dim"], hashed) == (first["sha256"], 384, [])
    model.write_bytes(b"other weights")
    changed = model_files.weights_identity(model)
    assert hashed == [model] and "dim" not in changed


class _Probe:
    """A probe's output as `remember_dim` reads it (rows x dimensions)."""

    def __init__(self, dim: int) -> None:
        self.shape = (1, dim)


# -- the handshake answered before the SDK has loaded ------------------------------------------

# sitecustomize for a server's process: the SDK's import on any thread but the main one (the
# server is built on a thread while the main thread answers the handshake) waits for a file.
HOLD_SDK = """
import importlib.machinery, os, sys, threading, time

HELD = os.environ["HOLD_SDK"].split(",")
OPEN = os.environ["HOLD_SDK_UNTIL"]


class Held:
    # A loader that runs the module only once the gate is open (a finder may not wait: it
    # holds the import lock every thread needs).
    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        while not os.path.exists(OPEN):
            time.sleep(0.01)
        self.loader.exec_module(module)


class HoldSdk:
    def find_spec(self, name, path=None, target=None):
        if name not in HELD or threading.current_thread() is threading.main_thread():
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None:
            spec.loader = Held(spec.loader)
        return spec


sys.meta_path.insert(0, HoldSdk())
"""


def _server(
    db: Path, args: list[str], cwd: Path, held: tuple[str, ...] = (), gate: Path | None = None
):
    """`autodoc --db DB ARGS`, its SDK's import held until `gate` exists when `held` names it."""
    env = _env()
    if held:
        assert gate is not None
        hold = gate.parent / "hold"
        hold.mkdir(exist_ok=True)
        (hold / "sitecustomize.py").write_text(HOLD_SDK)
        env.update(PYTHONPATH=str(hold), HOLD_SDK=",".join(held), HOLD_SDK_UNTIL=str(gate))
    return subprocess.Popen(
        [sys.executable, "-m", "autodoc", "--db", str(db), *args],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env=env, cwd=cwd,
    )  # fmt: skip


@pytest.fixture
def answers_cache(tmp_path, monkeypatch) -> Path:
    """A cache folder of this test's for the servers' recorded answers (the model's derived
    files linked from the real one): the developer's own answers stay as they were."""
    from autodoc.models.model_files import cache_dir

    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "models").symlink_to(cache_dir() / "models", target_is_directory=True)
    monkeypatch.setenv("AUTODOC_CACHE", str(cache))
    return cache


def _lsp_params(root: Path, tmp_path: Path) -> dict[str, Any]:
    """An editor's initialize, its client named for this test: a request no other start made."""
    general = {"positionEncodings": ["utf-8", "utf-16"]}
    client = {"name": f"test-{tmp_path.name}", "version": "1"}
    return {"processId": os.getpid(), "rootUri": root.as_uri(), "clientInfo": client,
            "capabilities": {"general": general}}  # fmt: skip


def _lsp_session(db: Path, root: Path, tmp_path: Path, gate: Path | None = None) -> dict[str, Any]:
    """One `autodoc serve` session: initialize, a search, shutdown. With `gate`, pygls is
    held until the initialize answer came, and the search is asked while it still is. The
    answer to initialize; every message is checked to come once."""
    proc = _server(db, ["serve"], tmp_path, ("pygls", "lsprotocol") if gate else (), gate)
    frames = _Framed(proc.stdout)
    try:
        _lsp_send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                         "params": _lsp_params(root, tmp_path)})  # fmt: skip
        init = _answer(frames, 1, ANSWERED_S)["result"]
        _lsp_send(proc, {"jsonrpc": "2.0", "method": "initialized", "params": {}})
        query = ["vault", "why did we pick sqlite", {"limit": 1}]
        _lsp_send(proc, {"jsonrpc": "2.0", "id": 2, "method": "autodoc/search.query",
                         "params": query})  # fmt: skip
        if gate is not None:
            with pytest.raises(AssertionError, match="no answer"):
                _answer(frames, 2, 0.5)  # pygls is held: nothing reads the search yet
            gate.touch()
        answer = _answer(frames, 2, WAIT_S)
        assert answer["result"]["hits"][0]["path"] == "adr/0003-embedded-sqlite-store.md"
        _lsp_send(proc, {"jsonrpc": "2.0", "id": 3, "method": "shutdown"})
        _answer(frames, 3, WAIT_S)
        _lsp_send(proc, {"jsonrpc": "2.0", "method": "exit"})
        assert proc.wait(timeout=WAIT_S) == 0
    finally:
        proc.kill()
    answered = [m["id"] for m in frames.seen if "method" not in m]
    assert sorted(answered) == [1, 2, 3]  # pygls's own answer to initialize was not sent too
    return init


def test_lsp_answers_initialize_as_pygls_did_before_pygls_has_loaded(
    embedded_sample, tmp_path, answers_cache
):
    root, db = embedded_sample
    by_pygls = _lsp_session(db, root, tmp_path)  # recorded for the next start
    assert by_pygls["serverInfo"]["name"] == "autodoc"
    early = _lsp_session(db, root, tmp_path, gate=tmp_path / "open")
    assert early == by_pygls


def test_an_early_answer_pygls_disagrees_with_is_replaced_for_the_next_start(
    embedded_sample, tmp_path, answers_cache
):
    from autodoc.serve.early_handshake import LSP_SCRIPT, AnswerBook

    root, db = embedded_sample
    by_pygls = _lsp_session(db, root, tmp_path)
    book = AnswerBook.for_server(LSP_SCRIPT)
    key = AnswerBook.key(
        "initialize", _lsp_params(root, tmp_path), LSP_SCRIPT.ignored["initialize"]
    )
    assert book.get(key) == by_pygls
    book.record(key, {**by_pygls, "serverInfo": {"name": "stale"}})
    assert _lsp_session(db, root, tmp_path)["serverInfo"]["name"] == "stale"  # sent early
    assert AnswerBook.for_server(LSP_SCRIPT).get(key) == by_pygls  # pygls's, for next time
    assert _lsp_session(db, root, tmp_path) == by_pygls


def _mcp_session(db: Path, root: Path, tmp_path: Path, gate: Path | None = None) -> list[Any]:
    """One `autodoc mcp` session: initialize, tools/list, a search; with `gate`, the SDK is
    held until both were answered. Their answers; every message is checked to come once."""
    proc = _server(
        db, ["mcp", str(root), "--no-watch"], tmp_path, ("mcp", "mcp_types") if gate else (), gate
    )
    lines = _Lines(proc.stdout)

    def send(message: dict[str, Any]) -> None:
        proc.stdin.write((json.dumps(message) + "\n").encode())
        proc.stdin.flush()

    try:
        client = {"name": f"test-{tmp_path.name}", "version": "1"}
        params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
        init = _answer(lines, 1, ANSWERED_S)["result"]
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        tools = _answer(lines, 2, ANSWERED_S)["result"]
        arguments = {"query": "why did we pick sqlite", "limit": 1}
        send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
              "params": {"name": "search", "arguments": arguments}})  # fmt: skip
        if gate is not None:
            with pytest.raises(AssertionError, match="no answer"):
                _answer(lines, 3, 0.5)  # the SDK is held
            gate.touch()
        hits = _answer(lines, 3, WAIT_S)["result"]["structuredContent"]["hits"]
        assert hits[0]["path"] == "adr/0003-embedded-sqlite-store.md"
        proc.stdin.close()
        assert proc.wait(timeout=WAIT_S) == 0
    finally:
        proc.kill()
    assert sorted(m["id"] for m in lines.seen) == [1, 2, 3]
    return [init, tools]


def test_mcp_answers_initialize_and_tools_list_as_the_sdk_did_before_it_has_loaded(
    embedded_sample, tmp_path, answers_cache
):
    root, db = embedded_sample
    by_sdk = _mcp_session(db, root, tmp_path)  # records both answers
    assert {t["name"] for t in by_sdk[1]["tools"]} >= {"search", "find", "read_span", "status"}
    assert _mcp_session(db, root, tmp_path, gate=tmp_path / "open") == by_sdk


@pytest.mark.parametrize(
    ("first", "answered"),
    [
        (b"{not json\n", [1]),  # the SDK answers no line it cannot parse (as before)
        (b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call"}\n', [1, 7]),
    ],
)
def test_mcp_hands_a_first_message_it_does_not_expect_to_the_sdk(
    embedded_sample, tmp_path, first, answered, answers_cache
):
    root, db = embedded_sample
    proc = _server(db, ["mcp", str(root), "--no-watch"], tmp_path)
    lines = _Lines(proc.stdout)
    try:
        client = {"name": "test", "version": "1"}
        params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
        proc.stdin.write(first + json.dumps(init).encode() + b"\n")
        proc.stdin.flush()
        assert _answer(lines, 1, WAIT_S)["result"]["serverInfo"]["name"] == "autodoc"
        proc.stdin.close()
        assert proc.wait(timeout=WAIT_S) == 0
    finally:
        proc.kill()
    # the request sent first was answered too (refused: before initialize), once
    assert sorted(m.get("id") for m in lines.seen) == answered


def test_mcp_refuses_a_nesting_bomb_read_during_the_early_handshake_and_serves_on(
    embedded_sample, tmp_path, answers_cache
):
    """Issue 56: once the handshake's answers are recorded, the main thread reads the messages
    after `initialize` itself while the SDK loads; one nested 100,000 deep among them passes
    the door's guard first (no parser meets it), is answered -32602 to its id once the SDK has
    loaded, and the server goes on serving."""
    root, db = embedded_sample
    _mcp_session(db, root, tmp_path)  # records the answers: the next start answers early
    gate = tmp_path / "open"
    proc = _server(db, ["mcp", str(root), "--no-watch"], tmp_path, ("mcp", "mcp_types"), gate)
    lines = _Lines(proc.stdout)

    def send(message: bytes) -> None:
        proc.stdin.write(message + b"\n")
        proc.stdin.flush()

    try:
        client = {"name": f"test-{tmp_path.name}", "version": "1"}
        params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}
        send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                         "params": params}).encode())  # fmt: skip
        assert _answer(lines, 1, ANSWERED_S)["result"]["serverInfo"]["name"] == "autodoc"
        bomb = b"[" * 100_000 + b"]" * 100_000
        send(b'{"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": ' + bomb + b"}")
        time.sleep(0.5)  # read by the early part while the SDK is held
        assert proc.poll() is None
        gate.touch()
        refused = _answer(lines, 5, WAIT_S)["error"]
        assert refused == {"code": -32602, "message": "params nest deeper than 64 levels",
                           "data": {"limit": 64}}  # fmt: skip
        send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())
        send(json.dumps({"jsonrpc": "2.0", "id": 6, "method": "tools/list"}).encode())
        assert {t["name"] for t in _answer(lines, 6, WAIT_S)["result"]["tools"]} >= {"search"}
        proc.stdin.close()
        assert proc.wait(timeout=WAIT_S) == 0
    finally:
        proc.kill()


def test_a_server_opens_a_named_folders_model_and_indexes_before_its_first_search(
    embedded_sample, tmp_path, monkeypatch
):
    """Issue 57: once a server names a folder, the model's query session, the vector index and
    the lexical index open on a thread of their own, so a client's first question finds them
    open instead of waiting for them; nothing is embedded or searched meanwhile."""
    from autodoc.engine import Engine
    from autodoc.models import embedders
    from autodoc.serve.host.serving import Host

    root, db = embedded_sample
    shutil.copytree(db.parent, tmp_path / "store")  # the catch-up writes: a store of its own
    monkeypatch.setattr(embedders, "_CACHE", {})  # this process's model, made fresh here
    engine = Engine(tmp_path / "store" / db.name)
    host = Host(engine, watch=False)
    try:
        host.open(root).result(timeout=120)
        ws = engine.workspace("vault")
        model = engine.semantic_plan(ws).embedder
        assert model is not None
        deadline = time.monotonic() + 30
        while not (model.loaded and engine.sign_indexes) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert model.loaded, "the query session was not opened"
        assert list(engine.sign_indexes) == [(ws.id, model.model_fp)]
        assert ws.id in engine.lexical_indexes
        assert model.meter.calls == 0  # opened, not run: no search was made
    finally:
        host.close()

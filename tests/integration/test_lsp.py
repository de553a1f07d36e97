"""`autodoc serve` end to end over stdio, as Neovim and VS Code drive it (pytest-lsp)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import threading
import time
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import (
    ClientServerConfig,
    LanguageClient,
    client_capabilities,
    make_test_lsp_client,
)

from autodoc.wire import protocol

from ..conftest import EXAMPLE_VAULT, STAGE_SETS, snippet_in, write

CLIENTS = ["neovim", "visual_studio_code"]
WAIT_S = 20.0


def _server_env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["AUTODOC_DB"] = str(tmp / "store" / "autodoc.db")
    return env


async def until(predicate, timeout: float = WAIT_S, every: float = 0.05):
    """Poll an async predicate until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while True:
        value = await predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(every)


def plain(value):
    """pygls hands a client JSON objects as namedtuples; compare them as the JSON they were."""
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


async def call(client: LanguageClient, method: str, *params):
    return plain(await client.protocol.send_request_async(f"autodoc/{method}", list(params)))


async def execute(client: LanguageClient, command: str, *arguments):
    params = types.ExecuteCommandParams(command=command, arguments=list(arguments))
    return plain(await client.workspace_execute_command_async(params))


def answer_refreshes(client: LanguageClient) -> list[str]:
    """Answer the server's `workspace/codeLens/refresh` as an editor does (pytest-lsp's client
    fails a test on a request it has no handler for); the list records each one."""
    seen: list[str] = []

    @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def code_lens_refresh(_params: None) -> None:
        seen.append(types.WORKSPACE_CODE_LENS_REFRESH)

    return seen


async def paths_for(client: LanguageClient, query: str, workspace: str = "vault") -> list[str]:
    answer = await call(client, "search.query", workspace, query, {"stages": ["lexical"]})
    return [h["path"] for h in answer["hits"]]


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, root)
    return root


@pytest_lsp.fixture(
    params=CLIENTS,
    config=ClientServerConfig(
        server_command=[sys.executable, "-m", "autodoc", "serve", "--log-level", "DEBUG"]
    ),
)
async def client(request, lsp_client: LanguageClient, vault: Path):
    lsp_client.refreshes = answer_refreshes(lsp_client)
    ready = asyncio.ensure_future(lsp_client.wait_for_notification("autodoc/indexReady"))
    lsp_client.init_result = await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities(request.param),
            workspace_folders=[types.WorkspaceFolder(uri=vault.as_uri(), name="vault")],
            initialization_options={"embedding": {"provider": "none"}},
        )
    )
    lsp_client.ready = plain(await asyncio.wait_for(ready, WAIT_S))
    yield
    await lsp_client.shutdown_session()


@pytest.fixture(autouse=True)
def _isolated_store(tmp_path: Path, monkeypatch):
    """The server inherits this environment: its store lives in the test's tmp folder."""
    monkeypatch.setenv("AUTODOC_DB", str(tmp_path / "store" / "autodoc.db"))


async def test_initialize_indexes_the_folder_with_progress(client: LanguageClient, vault: Path):
    ready = client.ready
    assert ready["server"]["writer"] is True
    [ws] = ready["workspaces"]
    assert ws["name"] == "vault" and ws["documents"] == 8 and ws["semantic"] == "off"
    reports = [r for rs in client.progress_reports.values() for r in rs]
    if client.capabilities.window and client.capabilities.window.work_done_progress:
        kinds = [r.kind for r in reports]
        assert kinds[0] == "begin" and kinds[-1] == "end"
        assert any(isinstance(r, types.WorkDoneProgressReport) for r in reports)
        assert "8 documents" in reports[-1].message


async def test_custom_requests_match_the_cli(client: LanguageClient):
    answer = await call(client, "search.query", "vault", "reclaimBatch")
    assert answer["hits"][0]["path"] == "adr/0003-embedded-sqlite-store.md"
    assert answer["root"].endswith("vault")
    status = await call(client, "index.status", "vault")
    assert status["documents"] == 8 and status["writer"] is True
    with pytest.raises(JsonRpcException) as err:
        await call(client, "search.query", "vault", "x", {"limit": 0})
    assert err.value.code == -32602
    with pytest.raises(JsonRpcException) as err:
        await call(client, "search.query", "nope", "x")
    assert err.value.code == -32602
    with pytest.raises(JsonRpcException) as err:
        await client.protocol.send_request_async("autodoc/search.query", {"query": "x"})
    assert err.value.code == -32602  # params are a JSON array, as for --call
    with pytest.raises(JsonRpcException) as err:
        await client.protocol.send_request_async("autodoc/no.such", [])
    assert err.value.code == -32601
    with pytest.raises(JsonRpcException) as err:
        await call(client, "search.query", "vault", "x", {"stages": ["semantic"]})
    assert err.value.code == -32065  # no embedding model: never silently lexical


async def test_workspace_symbol_is_autodoc_search(client: LanguageClient, vault: Path):
    symbols = await client.workspace_symbol_async(types.WorkspaceSymbolParams(query="reclaimBatch"))
    assert symbols
    top = symbols[0]
    assert top.location.uri == (vault / "adr/0003-embedded-sqlite-store.md").resolve().as_uri()
    answer = await call(client, "search.query", "vault", "reclaimBatch")
    hit = answer["hits"][0]
    assert top.location.range.start.line == hit["line_start"] - 1
    assert top.location.range.end.line == hit["line_end"]
    # a section is named by its heading and contained in the breadcrumb above it
    assert hit["breadcrumb"] == "ADR 0003: Embedded relational store › Implementation notes"
    assert (top.name, top.container_name) == (
        "Implementation notes",
        "ADR 0003: Embedded relational store",
    )
    assert await client.workspace_symbol_async(types.WorkspaceSymbolParams(query="  ")) == []


async def test_execute_commands(client: LanguageClient):
    caps = client.init_result.capabilities  # what the server listed
    assert set(caps.execute_command_provider.commands) >= {
        "autodoc.search",
        "autodoc.reindex",
        "autodoc.status",
    }
    answer = await execute(client, "autodoc.search", "reclaimBatch")
    assert answer["hits"][0]["path"] == "adr/0003-embedded-sqlite-store.md"
    protocol.conform(answer, protocol.Answer)
    protocol.conform(client.ready, protocol.Status)
    status = await execute(client, "autodoc.status")
    protocol.conform(status, protocol.Status)
    assert status["server"]["writer"] is True
    assert [(w["name"], w["served"], w["indexing"]) for w in status["workspaces"]] == [
        ("vault", True, "ready")
    ]
    again = asyncio.ensure_future(client.wait_for_notification("autodoc/indexReady"))
    tokens = set(client.progress_reports)
    summaries = await execute(client, "autodoc.reindex")
    assert summaries[0]["unchanged"] == 8
    await asyncio.wait_for(again, WAIT_S)
    # A reindex shows the first index's progress: begin (its title), reports, end (summary).
    if client.capabilities.window and client.capabilities.window.work_done_progress:
        [token] = set(client.progress_reports) - tokens
        reports = client.progress_reports[token]
        assert reports[0].kind == "begin" and reports[0].title == "Reindexing vault"
        assert reports[-1].kind == "end" and "8 documents" in reports[-1].message
    with pytest.raises(JsonRpcException) as err:
        await execute(client, "autodoc.search", 42)
    assert err.value.code == -32602


async def test_save_makes_the_new_text_searchable(client: LanguageClient, vault: Path):
    note = vault / "notes" / "fresh.md"
    write(vault, "notes/fresh.md", "# Fresh\n\nquuxplonk appears here.\n")
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(note.as_uri()))
    )

    async def found():
        return "notes/fresh.md" in await paths_for(client, "quuxplonk")

    await until(found)
    write(vault, "notes/fresh.md", "# Fresh\n\nnow it says zorblax instead.\n")
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(note.as_uri()))
    )

    async def replaced():
        return "notes/fresh.md" in await paths_for(client, "zorblax")

    await until(replaced)
    assert await paths_for(client, "quuxplonk") == []


async def test_deleted_file_leaves_the_results_at_once(client: LanguageClient, vault: Path):
    assert "adr/0003-embedded-sqlite-store.md" in await paths_for(client, "reclaimBatch")
    (vault / "adr" / "0003-embedded-sqlite-store.md").unlink()
    # The very next answer drops it (checked at answer time), before any re-index.
    assert await paths_for(client, "reclaimBatch") == []

    async def retired():
        status = await call(client, "index.status", "vault")
        return status["documents"] == 7

    await until(retired)


async def test_edit_outside_the_editor_is_found_after_the_watcher_fires(
    client: LanguageClient, vault: Path
):
    write(vault, "elsewhere/outside.md", "# Outside\n\nfrobnicator written by another tool.\n")

    async def found():
        status = await call(client, "index.status", "vault")
        return status["documents"] == 9 and "elsewhere/outside.md" in await paths_for(
            client, "frobnicator"
        )

    await until(found)
    # A folder moved away (a checkout): its files leave the index.
    shutil.move(vault / "elsewhere", vault.parent / "moved-away")

    async def gone():
        status = await call(client, "index.status", "vault")
        return status["documents"] == 8

    await until(gone)


async def test_a_schema_edited_on_disk_reloads_and_filters(client: LanguageClient, vault: Path):
    """The watcher sees the schema file too: a newly declared field becomes a facet."""
    write(vault, "notes/owned.md", "---\nowner: ana\n---\n# Owned\n\nquarterly lease review\n")
    assert "notes/owned.md" in await until(lambda: paths_for(client, "quarterly"))
    answer = await call(client, "search.query", "vault", "quarterly owner:ana", {})
    assert answer["filter"] == {}  # not declared yet: words
    schema = vault / "_schema" / "frontmatter.yaml"
    schema.write_text(schema.read_text().replace("  abstract: string", "  abstract: string\n"
                                                 "  owner: string"))  # fmt: skip

    async def declared():
        a = await call(client, "search.query", "vault", "quarterly owner:ana", {})
        return a["filter"] == {"include": {"owner": ["ana"]}} and a

    answer = await until(declared)
    assert [h["path"] for h in answer["hits"]] == ["notes/owned.md"]
    browse = await call(client, "search.query", "vault", "type:adr -status:superseded", {})
    assert browse["mode_used"] == "facet" and browse["matched"] == 3


def span_matches(root: Path, hit: dict) -> bool:
    """The hit's snippet is in the file's lines at the hit's span as they are now."""
    lines = (root / hit["path"]).read_text().split("\n")[hit["line_start"] - 1 : hit["line_end"]]
    return snippet_in(hit["snippet"], "\n".join(lines))


async def test_a_stale_span_is_never_served(vault: Path):
    """A file rewritten on disk: whichever stages answer, its old hits are dropped (or already
    re-indexed), never served at the old span; then it is re-indexed and found anew. With the
    bundled model, so the semantic stage answers too."""
    client = make_test_lsp_client()
    ready = await _start(client, [vault], {"embedding": "bundled"})
    try:
        await asyncio.wait_for(ready, 60)

        async def semantic_ready():
            return (await call(client, "index.status", "vault"))["semantic"] == "ready"

        await until(semantic_ready, timeout=120)
        path = vault / "adr" / "0003-embedded-sqlite-store.md"
        path.write_text("# Moved\n\n" + "padding line\n" * 30 + path.read_text())
        for stages in STAGE_SETS:
            opts = {"stages": stages}
            answer = await call(client, "search.query", "vault", "reclaimBatch", opts)
            assert answer["stages"]["performed"] == stages
            for hit in answer["hits"]:
                assert span_matches(vault, hit), (stages, hit)

        async def found_again():
            answer = await call(client, "search.query", "vault", "reclaimBatch")
            return [h for h in answer["hits"] if h["path"] == "adr/0003-embedded-sqlite-store.md"]

        [hit, *_] = await until(found_again)
        lines = path.read_text().split("\n")[hit["line_start"] - 1 : hit["line_end"]]
        assert "reclaimBatch" in "\n".join(lines)
        for stages in STAGE_SETS:
            opts = {"stages": stages}
            answer = await call(client, "search.query", "vault", "embedded store", opts)
            assert answer["hits"] and all(span_matches(vault, h) for h in answer["hits"]), stages
    finally:
        await _stop(client)


async def test_a_newer_search_supersedes_the_older(client: LanguageClient):
    """A burst as a picker sends it: the older searches still queued behind the two read
    workers answer -32800 and the newest answers. Which ones were still queued depends on
    timing, so the burst is repeated (at most five times) until one was superseded."""
    superseded = []
    for _ in range(5):
        older = [
            asyncio.ensure_future(call(client, "search.query", "vault", f"sqlite {i}"))
            for i in range(12)
        ]
        await asyncio.sleep(0)  # the twelve go out first
        newest = await call(client, "search.query", "vault", "reclaimBatch")
        assert newest["hits"]
        outcomes = await asyncio.gather(*older, return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, JsonRpcException):
                assert outcome.code == -32800 and "superseded" in str(outcome)
                superseded.append(outcome)
            else:
                assert isinstance(outcome, dict) and "hits" in outcome
        if superseded:
            break
    assert superseded


def test_superseding_is_per_client_and_stops_at_the_next_stage(engine, tmp_path):
    from autodoc.serve.host.serving import Host
    from autodoc.serve.lsp.lsp_server import AutodocServer
    from autodoc.wire.errors import Cancelled

    vault = tmp_path / "v"
    shutil.copytree(EXAMPLE_VAULT, vault)
    engine.workspaces.workspace_add("v", str(vault))
    engine.indexing.index_run("v")
    server = AutodocServer(Host(engine, watch=False))
    try:
        first = server.host.new_search()
        second = server.host.new_search()
        assert first.cancelled and not second.cancelled
        with pytest.raises(Cancelled) as err:
            engine.reading.search("v", "reclaimBatch", None, cancel=first)
        assert err.value.code == -32800
        assert engine.reading.search("v", "reclaimBatch", None, cancel=second)["hits"]
    finally:
        server.host.refresher.close()
        server.readers.shutdown()


async def test_a_cancelled_request_stops_its_read_at_the_next_stage(engine):
    """Server side of `$/cancelRequest`: the awaiting handler is cancelled, and the read in
    the worker thread sees its token cancelled and stops instead of running to the end."""
    from autodoc.serve.host.serving import Host
    from autodoc.serve.lsp.lsp_server import AutodocServer
    from autodoc.wire.errors import Cancelled, CancelToken

    server = AutodocServer(Host(engine, watch=False))
    token, started, release = CancelToken(), threading.Event(), threading.Event()
    outcome: list[str] = []

    def read() -> str:
        started.set()
        release.wait(10)
        try:
            token.check()  # a stage boundary
        except Cancelled:
            outcome.append("stopped")
            raise
        outcome.append("ran to the end")
        return "answer"

    try:
        task = asyncio.ensure_future(server.in_reader(read, token))
        await asyncio.get_running_loop().run_in_executor(None, started.wait, 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert token.cancelled and token.reason == "cancelled by the client"
        release.set()
        for _ in range(100):
            if outcome:
                break
            await asyncio.sleep(0.01)
        assert outcome == ["stopped"]
    finally:
        release.set()
        server.host.refresher.close()
        server.readers.shutdown()


async def test_cancel_request_answers_request_cancelled(client: LanguageClient, vault: Path):
    """`$/cancelRequest` stops a search: -32800 saying so (not a normal answer, not the
    superseding of a newer search). A search on this vault takes about a millisecond, so the
    answer can beat its cancel; here two long reads (a 6 MB file, read whole for its first
    line) hold both read workers, the search queues behind them, and the cancel, sent in the
    same write, arrives while it waits (measured under load: cancelled in the first round 7
    times of 8, in the second the other time). Repeated at most ten times until one was
    cancelled; a round the search wins must be a whole answer."""
    (vault / "big.txt").write_text("a line of filler text to read back\n" * 180_000)
    wire = RawWire(client)
    cancelled = []
    for i in range(10):
        rid = f"raw-cancel-{i}"
        blockers = [
            {"jsonrpc": "2.0", "id": f"raw-read-{i}-{n}", "method": "autodoc/doc.read",
             "params": ["vault", "big.txt", 1, 1]}
            for n in range(2)
        ]  # fmt: skip
        request = {"jsonrpc": "2.0", "id": rid, "method": "autodoc/search.query",
                   "params": ["vault", f"sqlite {i}"]}  # fmt: skip
        cancel = {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": rid}}
        wire.send_all([json.dumps(m).encode() for m in (*blockers, request, cancel)])
        reply = await wire.reply_to(rid)
        for blocker in blockers:  # the reads themselves answer in full
            assert plain((await wire.reply_to(blocker["id"])).result)["lines_total"] == 180_000
        if getattr(reply, "error", None) is not None:
            assert reply.error.code == -32800 and "superseded" not in reply.error.message
            cancelled.append(reply)
            break
        assert plain(reply.result)["hits"] is not None  # finished first: a whole answer
    assert cancelled
    # The server goes on answering.
    assert (await call(client, "search.query", "vault", "reclaimBatch"))["hits"]


class RawWire:
    """Bytes straight onto the server's stdin, and the replies that no request awaited."""

    def __init__(self, client: LanguageClient) -> None:
        self.client = client
        self.replies: list = []
        protocol = client.protocol
        original = protocol.handle_message

        def spy(message):
            rid = str(getattr(message, "id", None))
            failed = getattr(message, "error", None) is not None
            if rid.startswith("raw-") and (failed or hasattr(message, "result")):
                self.replies.append(message)  # an answer to a request sent raw
            elif failed and rid == "None":
                self.replies.append(message)
            return original(message)

        protocol.handle_message = spy

    def send(self, body: bytes) -> None:
        self.send_all([body])

    def send_all(self, bodies: list[bytes]) -> None:
        """Several messages in one write: the server reads them back to back."""
        frames = b"".join(b"Content-Length: %d\r\n\r\n%s" % (len(b), b) for b in bodies)
        self.client.protocol.writer.write(frames)

    async def reply(self):
        async def got():
            return self.replies

        [reply] = await until(got)
        self.replies.clear()
        return reply

    async def reply_to(self, rid: str):
        """The reply to the raw request `rid`, whenever it comes among the others."""

        async def got():
            return next((r for r in self.replies if str(r.id) == rid), None)

        reply = await until(got)
        self.replies.remove(reply)
        return reply


async def test_garbage_on_the_wire_gets_an_error_and_the_server_stays_up(client: LanguageClient):
    wire = RawWire(client)
    wire.send(b"{this is not json")
    reply = await wire.reply()
    assert reply.id is None and reply.error.code == -32700
    wire.send(b'{"hello": "world", "id": "raw-1"}')  # JSON, but not JSON-RPC
    reply = await wire.reply()
    assert reply.id == "raw-1" and reply.error.code == -32600
    # A standard request whose params do not fit the LSP type.
    wire.send(b'{"jsonrpc": "2.0", "id": "raw-2", "method": "workspace/symbol", "params": 7}')
    reply = await wire.reply()
    assert reply.id == "raw-2" and reply.error.code == -32602
    assert (await call(client, "search.query", "vault", "reclaimBatch"))["hits"]


@pytest.mark.parametrize("client", ["neovim"], indirect=True)  # the lease, not the client
async def test_a_second_sidecar_on_the_same_store_reads_and_defers_writes(
    client: LanguageClient, vault: Path
):
    """Two editors, one store: the second serves reads, refuses explicit writes with -32070,
    keeps its saves pending, and takes the lease over when the first one exits."""
    second = make_test_lsp_client()
    await second.start_io(sys.executable, "-m", "autodoc", "serve")
    try:
        ready = asyncio.ensure_future(second.wait_for_notification("autodoc/indexReady"))
        await second.initialize_session(
            types.InitializeParams(
                capabilities=client_capabilities("neovim"),
                workspace_folders=[types.WorkspaceFolder(uri=vault.as_uri(), name="vault")],
                initialization_options={"embedding": {"provider": "none"}},
            )
        )
        info = plain(await asyncio.wait_for(ready, WAIT_S))
        assert info["server"]["writer"] is False
        assert info["server"]["holder"].startswith("pid ")
        assert info["workspaces"][0]["documents"] == 8  # what the first one indexed
        assert "adr/0003-embedded-sqlite-store.md" in await paths_for(second, "reclaimBatch")
        with pytest.raises(JsonRpcException) as err:
            await call(second, "index.run", "vault")
        assert err.value.code == -32070
        # A save in the second editor waits; the first one's watcher indexes the file meanwhile,
        # and the second one reads it from the shared store.
        note = write(vault, "notes/both.md", "# Both\n\nglimmerwick shared by two editors.\n")
        second.text_document_did_save(
            types.DidSaveTextDocumentParams(
                text_document=types.TextDocumentIdentifier(note.as_uri())
            )
        )

        async def seen_by_second():
            return "notes/both.md" in await paths_for(second, "glimmerwick")

        await until(seen_by_second)
        status = plain(
            await second.workspace_execute_command_async(
                types.ExecuteCommandParams(command="autodoc.status", arguments=[])
            )
        )
        assert status["server"]["writer"] is False
        # The first editor exits: the second takes the lease over and writes again.
        taken = asyncio.ensure_future(second.wait_for_notification("autodoc/stateChanged"))
        await client.shutdown_session()
        client.capabilities = None  # the fixture's teardown has nothing left to shut down

        async def writer_now():
            try:
                await call(second, "index.run", "vault")
            except JsonRpcException:
                return False
            return True

        await until(writer_now)
        await asyncio.wait_for(taken, WAIT_S)
        write(vault, "notes/later.md", "# Later\n\nvelvetrope after the handover.\n")

        async def watched_by_second():
            return "notes/later.md" in await paths_for(second, "velvetrope")

        await until(watched_by_second)
    finally:
        await second.shutdown_session()
        await second.stop()


async def _start(
    client: LanguageClient,
    folders: list[Path],
    options: dict,
    caps: str | types.ClientCapabilities = "neovim",
):
    client.refreshes = answer_refreshes(client)
    ready = asyncio.ensure_future(client.wait_for_notification("autodoc/indexReady"))
    await client.start_io(sys.executable, "-m", "autodoc", "serve")
    await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities(caps) if isinstance(caps, str) else caps,
            workspace_folders=[types.WorkspaceFolder(uri=f.as_uri(), name=f.name) for f in folders],
            initialization_options=options,
        )
    )
    return ready


async def _stop(client: LanguageClient) -> None:
    await client.shutdown_session()
    await client.stop()


@pytest.mark.parametrize("caps", CLIENTS)
async def test_options_from_configuration_and_a_bad_one_falls_back(vault: Path, caps: str):
    client = make_test_lsp_client()
    # workspace/configuration (section "autodoc") wins over initializationOptions.
    client.set_configuration({"section_tokens": 120, "embedding": "none"}, section="autodoc")
    ready = await _start(client, [vault], {"section_tokens": 5, "max_file_mb": 2, "bogus": 1}, caps)
    try:
        await asyncio.wait_for(ready, WAIT_S)
        options = (await call(client, "index.status", "vault"))["options"]
        assert options["section_tokens"] == 120 and options["max_file_mb"] == 2
        assert options["embedding"] == {"provider": "none"}
        shown = " | ".join(m.message for m in client.messages)
        assert "'bogus'" in shown and "using the default" in shown
        # didChangeConfiguration re-reads them; the re-chunk runs on the writer thread.
        client.set_configuration({"section_tokens": 300, "embedding": "none"}, section="autodoc")
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))

        async def applied():
            status = await call(client, "index.status", "vault")
            return status["options"]["section_tokens"] == 300

        await until(applied)
    finally:
        await _stop(client)


async def test_requests_are_served_while_the_first_index_runs(tmp_path: Path):
    big = tmp_path / "big"
    for i in range(1500):
        write(big, f"d{i // 100}/note{i}.md", f"# Note {i}\n\nfiller text number {i}.\n")
    write(big, "target.md", "# Target\n\nsnorkelwhistle lives here.\n")
    client = make_test_lsp_client()
    ready = await _start(client, [big], {"embedding": "none"})
    try:

        async def answered():
            try:
                return await call(client, "search.query", "big", "snorkelwhistle")
            except JsonRpcException:  # the workspace is being created
                return None

        first = await until(answered, every=0.01)
        assert not ready.done(), "a search was answered while the first index still ran"
        assert first["hits"] == [] or first["hits"][0]["path"] == "target.md"
        await asyncio.wait_for(ready, 120)
        assert (await call(client, "search.query", "big", "snorkelwhistle"))["hits"]
    finally:
        await _stop(client)


async def test_semantic_becomes_ready_in_the_background_and_clients_are_told(vault: Path):
    """The bundled model: indexReady comes with the lexical index; the vectors fill in the
    background and `autodoc/stateChanged` says when semantic answers are complete."""
    client = make_test_lsp_client()
    states: list[dict] = []
    progress: list[dict] = []

    @client.feature("autodoc/stateChanged")
    def on_state(params):
        states.append(plain(params))

    @client.feature("autodoc/indexProgress")
    def on_progress(params):
        progress.append(plain(params))

    ready = await _start(client, [vault], {"embedding": "bundled"})
    try:
        info = plain(await asyncio.wait_for(ready, 60))
        assert info["workspaces"][0]["model"]

        async def complete():
            return [s for s in states if s.get("semantic") == "ready"]

        await until(complete, timeout=120)
        # Progress a picker can show: the files, then the embedding, each ending complete.
        for event in progress:
            protocol.conform(event, protocol.IndexProgress)
        files = [e for e in progress if e["phase"] == "files"]
        embedding = [e for e in progress if e["phase"] == "embedding"]
        assert files[-1]["done"] == files[-1]["total"] == 8 and files[-1]["chunks"] > 8
        assert embedding and embedding[-1]["done"] == embedding[-1]["total"] > 8
        assert {e["workspace"] for e in progress} == {"vault"}
        answer = await call(client, "search.query", "vault", "why did we pick an embedded store")
        assert answer["semantic"] == "ready" and answer["mode_used"] == "hybrid"
        assert "semantic" in answer["hits"][0]["via"] or "semantic" in answer["hits"][1]["via"]
    finally:
        await _stop(client)


async def test_workspace_folders_added_and_removed(client: LanguageClient, tmp_path: Path):
    other = tmp_path / "other"
    write(other, "o.md", "# O\n\nkazoo-only words.\n")
    events: list[dict] = []
    client.feature("autodoc/stateChanged")(lambda params: events.append(plain(params)))
    ready = asyncio.ensure_future(client.wait_for_notification("autodoc/indexReady"))
    client.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(
            event=types.WorkspaceFoldersChangeEvent(
                added=[types.WorkspaceFolder(uri=other.as_uri(), name="other")], removed=[]
            )
        )
    )
    info = plain(await asyncio.wait_for(ready, WAIT_S))
    assert {w["name"] for w in info["workspaces"]} == {"vault", "other"}
    symbols = await client.workspace_symbol_async(types.WorkspaceSymbolParams(query="kazoo"))
    assert [s.location.uri for s in symbols] == [(other / "o.md").resolve().as_uri()]
    client.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(
            event=types.WorkspaceFoldersChangeEvent(
                added=[], removed=[types.WorkspaceFolder(uri=other.as_uri(), name="other")]
            )
        )
    )

    async def removed():
        return [e for e in events if e.get("event") == "workspace.removed"]

    await until(removed)
    assert any(e.get("event") == "workspace.added" for e in events)
    assert await client.workspace_symbol_async(types.WorkspaceSymbolParams(query="kazoo")) == []


async def test_a_renamed_file_answers_under_its_new_name(client: LanguageClient, vault: Path):
    old = vault / "adr" / "0003-embedded-sqlite-store.md"
    new = vault / "adr" / "0003-renamed.md"
    old.rename(new)
    # The old path leaves the answers at once (it is gone); the new one follows the watcher.
    assert "adr/0003-embedded-sqlite-store.md" not in await paths_for(client, "reclaimBatch")

    async def renamed():
        return await paths_for(client, "reclaimBatch") == ["adr/0003-renamed.md"]

    await until(renamed)


async def test_find_is_served_over_lsp(client: LanguageClient):
    """`search.find` is one more dispatcher method: `autodoc/search.find` for any LSP client."""
    answer = await call(client, "search.find", "vault", "reclaim batch", {"limit": 3})
    first = answer["matches"][0]
    assert (first["name"], first["match"], first["kind"]) == ("reclaimBatch", "exact", "identifier")
    assert first["path"] == "adr/0003-embedded-sqlite-store.md"
    assert first["line_start"] <= first["line"] <= first["line_end"]
    with pytest.raises(JsonRpcException) as err:
        await call(client, "search.find", "vault", "")
    assert err.value.code == -32602


async def test_related_sections_over_lsp(client: LanguageClient):
    """`autodoc/related`, as every dispatcher method: here without vectors, so links relate."""
    answer = await call(client, "related", "vault", "adr/0003-embedded-sqlite-store.md", 25)
    protocol.conform(answer, protocol.RelatedAnswer)
    assert answer["semantic"].startswith("off")
    first = answer["hits"][0]
    assert first["path"] == "adr/0002-store-documents-in-postgres.md"
    assert set(first["reasons"]) == {"links here", "linked from here"}
    with pytest.raises(JsonRpcException) as err:
        await call(client, "related", "vault", "../secret.md")
    assert "-32602" in str(err.value) or getattr(err.value, "code", None) == -32602


# -- links: definition, references, document links, hover, diagnostics ---------------------------


def _doc(vault: Path, rel: str) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=(vault / rel).resolve().as_uri())


def _at(vault: Path, rel: str, line: int, text: str) -> types.TextDocumentPositionParams:
    """The position of `text`'s first character on 1-based `line` of the file."""
    character = (vault / rel).read_text().splitlines()[line - 1].index(text)
    return types.TextDocumentPositionParams(
        text_document=_doc(vault, rel), position=types.Position(line=line - 1, character=character)
    )


def _uri(vault: Path, rel: str) -> str:
    return (vault / rel).resolve().as_uri()


async def test_definition_follows_wiki_markdown_and_heading_links(client, vault: Path):
    where = _at(vault, "README.md", 12, "[[0002")
    got = await client.text_document_definition_async(
        types.DefinitionParams(text_document=where.text_document, position=where.position)
    )
    assert got.uri == _uri(vault, "adr/0002-store-documents-in-postgres.md")
    assert got.range.start.line == 0
    md = _at(vault, "adr/0004-lease-recovery.md", 21, "[the store")
    got = await client.text_document_definition_async(
        types.DefinitionParams(text_document=md.text_document, position=md.position)
    )
    assert got.uri == _uri(vault, "adr/0003-embedded-sqlite-store.md")
    heading = _at(vault, "notes/search-pipeline.md", 44, "[[search-pipeline#Fusion]]")
    got = await client.text_document_definition_async(
        types.DefinitionParams(text_document=heading.text_document, position=heading.position)
    )
    assert got.uri == _uri(vault, "notes/search-pipeline.md") and got.range.start.line == 38
    prose = _at(vault, "README.md", 12, "the first storage")
    assert (
        await client.text_document_definition_async(
            types.DefinitionParams(text_document=prose.text_document, position=prose.position)
        )
        is None
    )  # no link there: nothing, not an error


async def _references(client, where: types.TextDocumentPositionParams) -> set[tuple[str, int]]:
    """(root-relative path, 1-based line) of each place `textDocument/references` lists."""
    got = await client.text_document_references_async(
        types.ReferenceParams(
            text_document=where.text_document,
            position=where.position,
            context=types.ReferenceContext(include_declaration=False),
        )
    )
    return {(loc.uri.rsplit("/vault/", 1)[1], loc.range.start.line + 1) for loc in got}


async def test_references_list_every_place_that_links_to_a_document(client, vault: Path):
    places = await _references(client, _at(vault, "adr/0003-embedded-sqlite-store.md", 12, "# ADR"))
    assert {("README.md", 13), ("adr/0004-lease-recovery.md", 14),
            ("adr/0004-lease-recovery.md", 21)} <= places  # fmt: skip
    assert ("adr/0002-store-documents-in-postgres.md", 1) in places  # superseded_by: frontmatter
    # On a link: the places that link to its target.
    places = await _references(client, _at(vault, "README.md", 14, "[[0004"))
    assert {("README.md", 14), ("notes/meeting-2026-03-02.md", 15)} <= places


async def test_document_links_and_hover(client, vault: Path):
    links = await client.text_document_document_link_async(
        types.DocumentLinkParams(text_document=_doc(vault, "README.md"))
    )
    lines = (vault / "README.md").read_text().splitlines()
    shown = {lines[lk.range.start.line][lk.range.start.character : lk.range.end.character]:
             lk.target.rsplit("/vault/", 1)[1] for lk in links}  # fmt: skip
    assert shown["[[0003-embedded-sqlite-store]]"] == "adr/0003-embedded-sqlite-store.md"
    assert shown["[[onboarding]]"] == "notes/onboarding.md"
    assert len(links) >= 7
    where = _at(vault, "adr/0004-lease-recovery.md", 14, "[[0003")
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=where.text_document, position=where.position)
    )
    assert hover.contents.kind == types.MarkupKind.Markdown
    assert hover.contents.value.startswith("**ADR 0003: Embedded relational store**")
    assert "`adr/0003-embedded-sqlite-store.md:1`" in hover.contents.value
    assert hover.range.start.line == 13


OUTLINE = "# Top\n\n## One\ntext\n### Deep\n## Two\n# Next\n"


def _names(symbols) -> list:
    return [(s.name, _names(s.children)) if s.children else s.name for s in symbols]


async def test_document_symbols_are_the_heading_tree(client, vault: Path):
    write(vault, "outline.md", OUTLINE)
    params = types.DocumentSymbolParams(text_document=_doc(vault, "outline.md"))
    got = await client.text_document_document_symbol_async(params)
    assert _names(got) == [("Top", [("One", ["Deep"]), "Two"]), "Next"]
    top, deep = got[0], got[0].children[0].children[0]
    assert top.kind == types.SymbolKind.String
    # the section: to the start of the line after its last (before `# Next`); the words
    assert (top.range.start, top.range.end) == (types.Position(0, 0), types.Position(6, 0))
    assert top.selection_range == types.Range(types.Position(0, 2), types.Position(0, 5))
    assert deep.selection_range == types.Range(types.Position(4, 4), types.Position(4, 8))
    # an open document's outline is its text in the editor, saved or not
    draft = types.TextDocumentItem(_uri(vault, "outline.md"), "markdown", 1, "intro\n# 😀 Draft\n")
    client.text_document_did_open(types.DidOpenTextDocumentParams(draft))
    got = await client.text_document_document_symbol_async(params)
    assert _names(got) == ["😀 Draft"]
    # in the units the two sides agreed on: the emoji is 4 in UTF-8, 2 in UTF-16
    units = client.init_result.capabilities.position_encoding or "utf-16"
    width = {"utf-8": 12, "utf-16": 10, "utf-32": 9}[units]
    assert got[0].selection_range.end == types.Position(1, width)


async def test_a_client_without_nested_symbols_gets_them_flat(vault: Path):
    caps = client_capabilities("neovim")
    assert caps.text_document and caps.text_document.document_symbol
    caps.text_document.document_symbol.hierarchical_document_symbol_support = False
    write(vault, "outline.md", OUTLINE)
    client = make_test_lsp_client()
    ready = await _start(client, [vault], {"embedding": "none"}, caps)
    try:
        await asyncio.wait_for(ready, WAIT_S)
        params = types.DocumentSymbolParams(text_document=_doc(vault, "outline.md"))
        got = await client.text_document_document_symbol_async(params)
        assert [(s.name, s.container_name) for s in got] == [
            ("Top", None), ("One", "Top"), ("Deep", "One"), ("Two", "Top"), ("Next", None)
        ]  # fmt: skip
        assert got[2].location.uri == _uri(vault, "outline.md")
        assert got[2].location.range.start == types.Position(4, 0)
    finally:
        await _stop(client)


async def opened_diagnostics(client: LanguageClient, broken: Path) -> list[types.Diagnostic]:
    """Open `broken` (a note with `[[no-such-note]]` and `[gone](gone.md)` on its third line)
    and wait for the two diagnostics the server publishes for it."""
    uri = broken.resolve().as_uri()
    item = types.TextDocumentItem(uri=uri, language_id="markdown", version=1,
                                  text=broken.read_text())  # fmt: skip
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=item))

    async def published():
        return client.diagnostics.get(uri)

    diagnostics = await until(published)
    assert sorted(d.message for d in diagnostics) == [
        "link to 'gone.md' does not resolve",
        "link to 'no-such-note' does not resolve",
    ]
    return diagnostics


async def test_unresolved_links_are_diagnostics_like_check_says(client, vault: Path):
    broken = vault / "notes" / "broken.md"
    broken.write_text("# Broken\n\nSee [[no-such-note]] and [gone](gone.md).\n")
    uri = broken.resolve().as_uri()

    async def indexed():  # the watcher indexes the new file
        found = await call(client, "search.find", "vault", "Broken", {"exact": True})
        return found["matches"]

    await until(indexed)
    diagnostics = await opened_diagnostics(client, broken)
    assert all(d.range.start.line == 2 and d.source == "autodoc" for d in diagnostics)
    # Each on its link's own range, not the whole line.
    line = broken.read_text().splitlines()[2]
    assert sorted(line[d.range.start.character : d.range.end.character] for d in diagnostics) == [
        "[[no-such-note]]", "[gone](gone.md)"]  # fmt: skip
    # Mended and saved: the diagnostics go once the save is indexed.
    broken.write_text("# Broken\n\nSee [[onboarding]].\n")
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )

    async def cleared():  # published again, empty (a sequence, not necessarily a list)
        return uri in client.diagnostics and len(client.diagnostics[uri]) == 0

    await until(cleared)


def test_logs_reach_the_editor_by_type_and_stderr_keeps_only_warnings(capsys):
    """An editor logs every stderr line of its language server as an error: INFO lines go to
    `window/logMessage` as Info, and stderr gets warnings and above only."""
    import logging

    from autodoc.serve.cli.main import _log_for_server
    from autodoc.serve.lsp.lsp_framing import LogToClient

    root, ours = logging.getLogger(), logging.getLogger("autodoc")
    saved = (root.handlers[:], root.level, ours.handlers[:], ours.level)
    sent: list[tuple[types.MessageType, str]] = []
    try:
        _log_for_server(None, "INFO", logging.WARNING)
        ours.addHandler(LogToClient(lambda kind, text: sent.append((kind, text))))
        log = logging.getLogger("autodoc.test")
        log.debug("not at INFO")
        log.info("indexed 8 documents")
        log.warning("lease held elsewhere")
        log.error("store unreadable")
        err = capsys.readouterr().err
    finally:
        root.handlers[:], ours.handlers[:] = saved[0], saved[2]
        root.setLevel(saved[1])
        ours.setLevel(saved[3])
    assert "indexed 8 documents" not in err and "not at INFO" not in err
    assert "lease held elsewhere" in err and "store unreadable" in err
    assert sent == [
        (types.MessageType.Info, "indexed 8 documents"),
        (types.MessageType.Warning, "lease held elsewhere"),
        (types.MessageType.Error, "store unreadable"),
    ]


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "autodoc", "serve"]),
)
async def rooted_in_a_subfolder(lsp_client: LanguageClient, vault: Path):
    """A client that roots its project at a note's own folder (eglot without version control
    does): `rootUri` is `vault/adr`, the vault above it marked with `.autodoc`."""
    (vault / ".autodoc").write_text("")
    ready = asyncio.ensure_future(lsp_client.wait_for_notification("autodoc/indexReady"))
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("neovim"),
            root_uri=(vault / "adr").as_uri(),
            initialization_options={"embedding": {"provider": "none"}},
        )
    )
    lsp_client.ready = plain(await asyncio.wait_for(ready, WAIT_S))
    yield
    await lsp_client.shutdown_session()


async def test_a_root_inside_a_vault_is_served_as_the_vault(
    rooted_in_a_subfolder: LanguageClient, vault: Path
):
    client = rooted_in_a_subfolder
    [ws] = client.ready["workspaces"]
    assert (ws["root"], ws["documents"]) == (str(vault.resolve()), 8)
    # names and links outside the client's folder answer too
    found = await client.workspace_symbol_async(types.WorkspaceSymbolParams(query="pipeline"))
    assert any(s.location.uri.endswith("notes/search-pipeline.md") for s in found or [])


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "autodoc", "serve"]),
)
async def read_only(lsp_client: LanguageClient, vault: Path, tmp_path: Path):
    """A server on a store whose writer lease another process holds (here: the test's),
    rooted by its client at a subfolder of the indexed vault (as eglot roots a note's folder):
    the vault is served read-only, not a new workspace it could not write."""
    from autodoc.engine import Engine
    from autodoc.serve.dispatcher import Dispatcher
    from autodoc.store import WriterLease

    from ..conftest import lexical_workspace

    write(vault, "notes/broken.md", "# Broken\n\nSee [[no-such-note]] and [gone](gone.md).\n")
    db = tmp_path / "store" / "autodoc.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    engine = Engine(db)
    lexical_workspace(Dispatcher(engine), vault, "vault")
    engine.close()
    lease = WriterLease(db)
    lease.acquire()
    ready = asyncio.ensure_future(lsp_client.wait_for_notification("autodoc/indexReady"))
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("neovim"),
            workspace_folders=[types.WorkspaceFolder(uri=(vault / "notes").as_uri(), name="notes")],
            initialization_options={"embedding": {"provider": "none"}},
        )
    )
    lsp_client.ready = plain(await asyncio.wait_for(ready, WAIT_S))
    yield
    await lsp_client.shutdown_session()
    lease.release()


async def test_a_read_only_server_serves_what_a_reader_can(read_only: LanguageClient, vault: Path):
    """While another editor writes the store: diagnostics from the store, symbols, links."""
    client = read_only
    assert client.ready["server"]["writer"] is False
    await opened_diagnostics(client, vault / "notes" / "broken.md")
    found = await client.workspace_symbol_async(types.WorkspaceSymbolParams(query="pipeline"))
    assert any(s.location.uri.endswith("notes/search-pipeline.md") for s in found or [])

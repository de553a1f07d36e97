"""`autodoc serve`: the dispatcher over the Language Server Protocol, on stdio.

A thin layer: every dispatcher method is the custom request `autodoc/<method>` with the same
params, results and error codes as `autodoc --call`; `workspace/symbol` and
`workspace/executeCommand` are the same search in standard LSP clothes. What the server adds is
a long-lived process's duties: index the editor's folders in the background with progress,
keep them fresh (saves, a file watcher, stale hits), let a newer search supersede an older one,
and tell clients when what a picker shows has changed.

Threads: the asyncio loop reads and writes messages and never runs engine work; reads run on a
small pool; every write runs on the refresher's single writer thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from lsprotocol import types
from pygls.exceptions import FeatureRequestError, JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import JsonRPCRequestMessage, LanguageServerProtocol

from . import __version__, config, protocol
from .chunking import BREADCRUMB_SEP
from .dispatcher import WRITES
from .engine import Engine
from .errors import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, CancelToken, RpcError
from .host import INDEX_READY, STATE_CHANGED, Host
from .watch import Watcher

log = logging.getLogger(__name__)

CONFIG_SECTION = "autodoc"
SYMBOL_LIMIT = 20
PROGRESS_EVERY_S = 0.25

COMMAND_SEARCH = "autodoc.search"
COMMAND_REINDEX = "autodoc.reindex"
COMMAND_STATUS = "autodoc.status"


# -- the wire: answer every malformed message instead of dropping it --------------------------


class _Invalid:
    """A request whose params could not be read: answered with -32602, never dispatched."""

    def __init__(self, msg_id: Any, method: str, reason: str) -> None:
        self.id, self.method, self.reason = msg_id, method, reason


class AutodocProtocol(LanguageServerProtocol):
    def structure_message(self, data: dict[str, Any]):
        if "jsonrpc" not in data:
            return data  # a nested object, or a top-level one that is not JSON-RPC
        method = data.get("method")
        if isinstance(method, str) and method.startswith("autodoc/") and "id" in data:
            # Our methods take a JSON array: keep it as sent (pygls would make tuples of objects).
            return JsonRPCRequestMessage(
                id=data["id"], method=method, jsonrpc=data["jsonrpc"], params=data.get("params")
            )
        try:
            return super().structure_message(data)
        except Exception as exc:
            if isinstance(method, str) and "id" in data:
                return _Invalid(data["id"], method, str(exc).splitlines()[0])
            raise

    def handle_message(self, message) -> None:
        if isinstance(message, _Invalid):
            self._send_error(message.id, INVALID_PARAMS, f"invalid params for {message.method}")
            return
        if not hasattr(message, "jsonrpc"):  # valid JSON, but not a JSON-RPC 2.0 message
            msg_id = message.get("id") if isinstance(message, dict) else None
            if not isinstance(msg_id, (int, str)):
                msg_id = None
            self._send_error(msg_id, INVALID_REQUEST, "invalid request: not a JSON-RPC message")
            return
        super().handle_message(message)

    def _send_error(self, msg_id: Any, code: int, message: str) -> None:
        # Sent as is: pygls would drop `"id": null`, which JSON-RPC requires when no id is known.
        error = {"code": code, "message": message}
        self._send_data({"jsonrpc": "2.0", "id": msg_id, "error": error})


def _rpc_exception(err: RpcError) -> JsonRpcException:
    return JsonRpcException(message=err.message, code=err.code, data=err.data)


# -- the server -------------------------------------------------------------------------------


class AutodocServer(LanguageServer):
    """The LSP adapter over a `Host`: messages in and out, `$/progress`, a client's settings,
    and search results in standard LSP clothes. Workspaces and freshness are the host's."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(
            "autodoc",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.None_,
            protocol_cls=AutodocProtocol,
        )
        self.host = Host(engine, watch=False, notify=self.notify, on_lease=self._log_lease)
        self.engine = engine
        self.readers = ThreadPoolExecutor(max_workers=2, thread_name_prefix="autodoc-read")
        self.loop: asyncio.AbstractEventLoop | None = None
        self._initial_folders: list[Path] = []
        self.init_options: dict[str, Any] = {}
        self._closed = False

    # -- plumbing ----------------------------------------------------------------------------

    def notify(self, method: str, params: Any) -> None:
        """Send a notification from any thread."""
        if self.loop is None:
            return
        self.loop.call_soon_threadsafe(self.protocol.notify, method, params)

    def show(self, message: str, kind: types.MessageType = types.MessageType.Warning) -> None:
        params = types.ShowMessageParams(type=kind, message=f"autodoc: {message}")
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self.window_show_message, params)

    def report_server_error(self, error: Exception, source) -> None:
        """Garbage on the wire gets a JSON-RPC parse error (id null); the server stays up."""
        if isinstance(error, (json.JSONDecodeError, UnicodeDecodeError)):
            assert isinstance(self.protocol, AutodocProtocol)
            self.protocol._send_error(None, PARSE_ERROR, f"parse error: {error}")
            return
        if source is FeatureRequestError:
            return  # answered to the client as an error response already
        log.warning("%s", error)

    async def in_reader(self, fn, token: CancelToken | None = None) -> Any:
        """Run a read on the pool; a cancelled request stops at the next stage boundary."""
        future = asyncio.get_running_loop().run_in_executor(self.readers, fn)
        try:
            return await future
        except asyncio.CancelledError:
            if token is not None:
                token.cancel("cancelled by the client")
            raise
        except RpcError as err:
            raise _rpc_exception(err) from None

    async def in_writer(self, future) -> Any:
        try:
            return await asyncio.wrap_future(future)
        except RpcError as err:
            raise _rpc_exception(err) from None

    async def call(self, method: str, params: Any) -> Any:
        if method in WRITES:
            return await self.in_writer(self.host.write(method, params))
        token = self.host.new_search() if method == "search.query" else None
        return await self.in_reader(
            lambda: self.host.dispatcher.call(method, params, cancel=token), token
        )

    # -- folders -----------------------------------------------------------------------------

    async def open_folder(self, root: Path) -> None:
        """Serve the folder, indexing it with `$/progress`; the host retries a store whose
        writer lease another process holds."""
        token = await self.progress_begin(f"Indexing {root.name}")
        last = [0.0]

        def progress(n: int, total: int, rel: str) -> None:
            now = time.monotonic()
            if token is not None and (now - last[0] >= PROGRESS_EVERY_S or n == total):
                last[0] = now
                pct = int(100 * n / total) if total else 100
                self.progress_report(token, f"{n}/{total} files", pct)

        def finished(opened: dict[str, Any]) -> None:  # on the writer thread
            summary, state = opened["summary"], opened["state"]
            if summary is not None:
                message = (
                    f"{summary['documents']} documents, {summary['chunks']} chunks"
                    f" ({summary['added']} added, {summary['modified']} changed,"
                    f" {summary['deleted']} removed)"
                )
            elif state.startswith("error: "):
                message = f"cannot index {root}: {state.removeprefix('error: ')}"
                self.show(message, types.MessageType.Error)
            else:
                message = state
            if self.loop is not None:  # before `autodoc/indexReady`, which is queued next
                self.loop.call_soon_threadsafe(self.progress_end, token, message)

        await asyncio.wrap_future(self.host.open(root, progress, finished))

    # -- progress ----------------------------------------------------------------------------

    async def progress_begin(self, title: str) -> str | None:
        caps = self.client_capabilities.window
        if caps is None or not caps.work_done_progress:
            return None
        token = f"autodoc-{uuid.uuid4().hex[:12]}"
        try:
            await self.work_done_progress.create_async(token)
        except Exception:  # the client refused: index without progress
            return None
        self.work_done_progress.begin(
            token, types.WorkDoneProgressBegin(title=title, percentage=0, cancellable=False)
        )
        return token

    def progress_report(self, token: str, message: str, percentage: int) -> None:
        value = types.WorkDoneProgressReport(message=message, percentage=percentage)
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self.work_done_progress.report, token, value)

    def progress_end(self, token: str | None, message: str) -> None:
        if token is not None:
            self.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))

    def _log_lease(self, writer: bool, holder: str) -> None:
        kind = types.MessageType.Info if writer else types.MessageType.Warning
        text = "writer lease taken" if writer else f"read-only, writer lease held by {holder}"
        if self.loop is not None:
            self.loop.call_soon_threadsafe(
                self.window_log_message, types.LogMessageParams(type=kind, message=text)
            )

    # -- search in LSP clothes ---------------------------------------------------------------

    def symbols(self, query: str, token: CancelToken) -> list[types.SymbolInformation]:
        """`workspace/symbol`: the best sections of every served folder, each named by its
        heading and contained in the breadcrumb above it."""
        hits: list[tuple[protocol.Hit, Path]] = []
        for name, root in sorted(self.host.served.items()):
            answer = self.engine.search(name, query, {"limit": SYMBOL_LIMIT}, cancel=token)
            hits.extend((h, root) for h in answer["hits"])
        hits.sort(key=lambda pair: -pair[0]["score"])
        return [_symbol(hit, root) for hit, root in hits[:SYMBOL_LIMIT]]

    def status(self) -> protocol.ServerStatus:
        host = self.host
        server = protocol.ServerInfo(
            version=__version__,
            pid=os.getpid(),
            db=str(self.engine.store.path),
            writer=host.refresher.writer,
            holder=host.refresher.holder,
            pending=host.refresher.pending(),
            watching=host.watcher is not None,
        )
        workspaces = [self.engine.index_status(name) for name in sorted(host.served)]
        return protocol.ServerStatus(server=server, workspaces=workspaces)

    def shutdown_all(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.readers.shutdown(wait=False, cancel_futures=True)
        self.host.close()


def _symbol(hit: protocol.Hit, root: Path) -> types.SymbolInformation:
    crumbs = hit["breadcrumb"].split(BREADCRUMB_SEP)
    return types.SymbolInformation(
        name=crumbs[-1] or hit["title"] or hit["path"],
        kind=types.SymbolKind.String,
        location=types.Location(
            uri=(root / hit["path"]).as_uri(),
            range=types.Range(
                start=types.Position(line=hit["line_start"] - 1, character=0),
                end=types.Position(line=hit["line_end"], character=0),
            ),
        ),
        container_name=BREADCRUMB_SEP.join(crumbs[:-1]) or None,
    )


def uri_to_path(uri: str) -> Path | None:
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path))


def clean_options(raw: Any) -> tuple[dict[str, Any], list[str]]:
    """Valid options, and a message for each invalid one (which keeps its default)."""
    if raw is None:
        return {}, []
    if not isinstance(raw, dict):
        return {}, [f"options must be an object, got {type(raw).__name__}; using defaults"]
    clean: dict[str, Any] = {}
    problems = []
    for key, value in raw.items():
        if key == "db":
            continue  # read by `autodoc serve` at start-up
        try:
            clean.update(config.validate({key: value}))
        except RpcError as err:
            problems.append(f"option {key!r}: {err.message}; using the default")
    return clean, problems


# -- handlers ---------------------------------------------------------------------------------


def build_server(engine: Engine) -> AutodocServer:
    server = AutodocServer(engine)

    def method_handler(method: str):
        async def handler(ls: AutodocServer, params: Any) -> Any:
            return await ls.call(method, params)

        handler.__name__ = f"autodoc_{method.replace('.', '_')}"
        return handler

    for method in server.host.dispatcher.methods:
        server.feature(f"autodoc/{method}")(method_handler(method))

    @server.feature(types.INITIALIZE)
    def initialize(ls: AutodocServer, params: types.InitializeParams) -> None:
        folders = [
            p for f in params.workspace_folders or [] if (p := uri_to_path(f.uri)) is not None
        ]
        if not folders and params.root_uri and (p := uri_to_path(params.root_uri)):
            folders = [p]
        ls._initial_folders = folders
        ls.init_options = params.initialization_options or {}

    @server.feature(types.INITIALIZED)
    async def initialized(ls: AutodocServer, params: types.InitializedParams) -> None:
        ls.loop = asyncio.get_running_loop()
        await load_options(ls)
        ls.host.watcher = Watcher(ls.host.refresher)
        for root in ls._initial_folders:
            if root.is_dir():
                await ls.open_folder(root)
            else:
                ls.show(f"workspace folder is not a folder: {root}")

    async def load_options(ls: AutodocServer) -> None:
        raw = dict(ls.init_options) if isinstance(ls.init_options, dict) else {}
        caps = ls.client_capabilities.workspace
        if caps is not None and caps.configuration:
            try:
                got = await ls.workspace_configuration_async(
                    types.ConfigurationParams(
                        items=[types.ConfigurationItem(section=CONFIG_SECTION)]
                    )
                )
                if got and isinstance(got[0], dict):
                    raw.update(got[0])
            except Exception as exc:  # a client without a settings store: keep the others
                log.info("workspace/configuration failed: %s", exc)
        ls.host.options, problems = clean_options(raw)
        for message in problems:
            ls.show(message)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(
        ls: AutodocServer, params: types.DidChangeConfigurationParams
    ) -> None:
        await load_options(ls)
        host = ls.host
        for name in list(host.served):
            try:
                await ls.in_writer(host.refresher.submit(partial(host.apply_options, name)))
            except JsonRpcException as exc:
                ls.show(f"cannot apply options to {name}: {exc.message}")
            host.check_state(name, "semantic")

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def did_change_folders(
        ls: AutodocServer, params: types.DidChangeWorkspaceFoldersParams
    ) -> None:
        for folder in params.event.removed:
            root = uri_to_path(folder.uri)
            for name, r in list(ls.host.served.items()):
                if root is not None and r == root.resolve():
                    ls.host.close_folder(name)
        for folder in params.event.added:
            root = uri_to_path(folder.uri)
            if root is not None and root.is_dir():
                await ls.open_folder(root)
                added = ls.engine.workspace_at(root)
                ls.notify(STATE_CHANGED, {"event": "workspace.added", "workspace": added})

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: AutodocServer, params: types.DidSaveTextDocumentParams) -> None:
        path = uri_to_path(params.text_document.uri)
        if path is None:
            return
        ls.host.saved(Path(os.path.realpath(path)))

    @server.feature(types.WORKSPACE_SYMBOL)
    async def workspace_symbol(
        ls: AutodocServer, params: types.WorkspaceSymbolParams
    ) -> list[types.SymbolInformation]:
        if not params.query.strip():
            return []
        token = ls.host.new_search()
        return await ls.in_reader(lambda: ls.symbols(params.query, token), token)

    @server.command(COMMAND_SEARCH)
    async def command_search(ls: AutodocServer, *args: Any) -> Any:
        """autodoc.search(query, opts?, workspace?)"""
        if not args or not isinstance(args[0], str):
            raise _rpc_exception(RpcError(INVALID_PARAMS, "autodoc.search takes a query string"))
        query = args[0]
        opts = args[1] if len(args) > 1 else None
        workspace = args[2] if len(args) > 2 else None
        token = ls.host.new_search()
        return await ls.in_reader(
            lambda: ls.engine.search(ls.host.workspace(workspace), query, opts, cancel=token),
            token,
        )

    @server.command(COMMAND_REINDEX)
    async def command_reindex(ls: AutodocServer, *args: Any) -> Any:
        """autodoc.reindex(workspace?): walk the root again; `autodoc/indexReady` follows."""
        host = ls.host
        names = [args[0]] if args and args[0] else sorted(host.served)
        out = []
        for name in names:
            if name not in host.served:
                raise _rpc_exception(
                    RpcError(INVALID_PARAMS, f"not a folder of this server: {name}")
                )
            job = host.refresher.submit(partial(ls.engine.index_run, name, wait=False))
            out.append(await ls.in_writer(job))
        ls.notify(INDEX_READY, host.ready_params())
        return out

    @server.command(COMMAND_STATUS)
    async def command_status(ls: AutodocServer, *args: Any) -> Any:
        return await ls.in_reader(ls.status)

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: AutodocServer, params: Any) -> None:
        ls.shutdown_all()

    return server


class _LogToClient(logging.Handler):
    """Warnings and errors also reach the editor as `window/logMessage`."""

    def __init__(self, server: AutodocServer) -> None:
        super().__init__(logging.WARNING)
        self.server = server

    def emit(self, record: logging.LogRecord) -> None:
        if self.server.loop is None or self.server.loop.is_closed():
            return
        kind = (
            types.MessageType.Error
            if record.levelno >= logging.ERROR
            else types.MessageType.Warning
        )
        params = types.LogMessageParams(type=kind, message=self.format(record))
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            self.server.loop.call_soon_threadsafe(self.server.window_log_message, params)


class _AnsweredErrors(logging.Filter):
    """pygls logs a traceback for every error response; ours are deliberate answers (bad
    params, a superseded search), so only unexpected exceptions keep theirs."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, JsonRpcException)


def serve(db: str | None = None) -> int:
    """Run until the client says exit. Nothing but LSP messages ever goes to stdout (the CLI
    sends logs to stderr or `--log-file`)."""
    rpc_log = logging.getLogger("pygls.protocol.json_rpc")
    rpc_log.addFilter(_AnsweredErrors())
    # A picker cancels on every keystroke, often after the answer went out: pygls warns about
    # each such "unknown message id"; only its errors are worth the editor's log.
    rpc_log.setLevel(logging.ERROR)
    engine = Engine(db)
    server = build_server(engine)
    logging.getLogger("autodoc").addHandler(_LogToClient(server))
    try:
        server.start_io()
    finally:
        server.shutdown_all()
    return 0

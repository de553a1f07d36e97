"""`autodoc serve`: the dispatcher over the Language Server Protocol, on stdio.

A thin layer: every dispatcher method is the custom request `autodoc/<method>` with the same
params, results and error codes as `autodoc --call`; `workspace/symbol` and
`workspace/executeCommand` are the same search in standard LSP clothes. What the server adds is
a long-lived process's duties: index the editor's folders in the background with progress,
keep them fresh (saves, a file watcher, stale hits), let a newer search supersede an older one,
and tell clients when what a picker shows has changed.

This module is the server class only: the features register their handlers on it (esbonio's
layout: `features/`, one module per group, each with `setup(server)`), and `entry.serve` builds
it over a host and runs it. Every feature reaches the index through the host's dispatcher
(`call`), never the engine or the store.

Threads: the asyncio loop reads and writes messages and never runs engine work; reads run on a
small pool; every write runs on the refresher's single writer thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import FeatureRequestError
from pygls.lsp.server import LanguageServer

from autodoc import __version__
from autodoc.serve import method_table
from autodoc.serve.host.serving import Host
from autodoc.serve.lsp.editor_documents import EditorDocuments
from autodoc.serve.lsp.lsp_framing import AutodocProtocol, rpc_exception
from autodoc.wire.errors import PARSE_ERROR, CancelToken, RpcError
from autodoc.wire.limits import MAX_DEPTH

log = logging.getLogger(__name__)

PROGRESS_EVERY_S = 0.25


# -- the server -------------------------------------------------------------------------------


class AutodocServer(LanguageServer):
    """The LSP adapter over a `Host`: messages in and out, `$/progress`, a client's settings.
    Workspaces and freshness are the host's; the host's events become notifications."""

    def __init__(self, host: Host) -> None:
        super().__init__(
            "autodoc",
            __version__,
            # the editor's text of open documents: links under the cursor before a save
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=AutodocProtocol,
        )
        self.host = host
        self.documents = EditorDocuments()  # the client's open documents, by path
        host.notify = self.notify
        host.on_lease = self._log_lease
        self.readers = ThreadPoolExecutor(max_workers=2, thread_name_prefix="autodoc-read")
        self.loop: asyncio.AbstractEventLoop | None = None
        self._initial_folders: list[str] = []  # the URIs of the folders `initialize` named
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

    def log_message(self, kind: types.MessageType, message: str) -> None:
        """`window/logMessage` from any thread; nothing once the loop has closed."""
        if self.loop is None or self.loop.is_closed():
            return
        params = types.LogMessageParams(type=kind, message=message)
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            self.loop.call_soon_threadsafe(self.window_log_message, params)

    def report_server_error(self, error: Exception, source) -> None:
        """Garbage on the wire gets a JSON-RPC parse error (id null); the server stays up."""
        if isinstance(error, (json.JSONDecodeError, UnicodeDecodeError)):
            assert isinstance(self.protocol, AutodocProtocol)
            self.protocol._send_error(None, PARSE_ERROR, f"parse error: {error}")
            return
        if isinstance(error, RecursionError):  # a nesting bomb the JSON parser refused
            assert isinstance(self.protocol, AutodocProtocol)
            message = f"parse error: nested too deep to parse (params may nest {MAX_DEPTH} levels)"
            self.protocol._send_error(None, PARSE_ERROR, message)
            return
        if source is FeatureRequestError:
            return  # answered to the client as an error response already
        log.warning("%s", error)

    async def in_reader(self, fn, token: CancelToken | None = None) -> Any:
        """Run a read on the pool; a cancelled request stops at the next stage boundary."""
        return await _answered(asyncio.get_running_loop().run_in_executor(self.readers, fn), token)

    async def store_opened(self) -> None:
        """Wait, without holding the loop, for the host's engine (it opens on a thread of its
        own while `initialize` is answered); raises what opening it raised."""
        await asyncio.shield(asyncio.wrap_future(self.host.opened))

    async def in_writer(self, future) -> Any:
        return await _answered(asyncio.wrap_future(future), None)

    async def call(self, method: str, params: Any) -> Any:
        """A dispatcher method where the host runs it (`Host.call`: a write on the writer
        thread, a read on this server's pool); a search supersedes this client's previous
        one."""
        token = self.host.new_search() if method_table.BY_NAME[method].cancellable else None
        future = self.host.call(method, params, cancel=token, reads=self.readers)
        return await _answered(asyncio.wrap_future(future), token)

    # -- folders -----------------------------------------------------------------------------

    async def open_folder(self, root: Path) -> str | None:
        """Serve the folder, indexing it with `$/progress`; the host retries a store whose
        writer lease another process holds. The folder's workspace (None: it could not be
        one). A root inside a knowledge base (a client that roots a project at a note's
        folder) serves that knowledge base (`Host.vault_root`), once."""
        await self.store_opened()
        vault = self.host.vault_root(root)
        if vault != root.resolve():
            log.info("serving %s, the knowledge base holding %s", vault, root)
        for held, served in self.host.served.items():
            if served == vault:
                return held
        root = vault
        token = await self.progress_begin(f"Indexing {root.name}")
        progress = self._file_progress(token)

        def finished(opened: dict[str, Any]) -> None:  # on the writer thread
            summary, state = opened["summary"], opened["state"]
            if summary is not None:
                message = _summary_line(summary)
            elif state.startswith("error: "):
                message = f"cannot index {root}: {state.removeprefix('error: ')}"
                self.show(message, types.MessageType.Error)
            else:
                message = state
            if self.loop is not None:  # before `autodoc/indexReady`, which is queued next
                self.loop.call_soon_threadsafe(self.progress_end, token, message)

        opened = await asyncio.wrap_future(self.host.open(root, progress, finished))
        name: str | None = opened["name"]
        return name

    async def reindex_folder(self, name: str) -> dict[str, Any]:
        """Walk a served folder again with the same `$/progress` as its first index: a person
        who asked sees it start, advance and end. Its summary."""
        root = self.host.served[name]
        token = await self.progress_begin(f"Reindexing {root.name}")
        try:
            summary = await self.in_writer(self.host.reindex(name, self._file_progress(token)))
        except BaseException:
            self.progress_end(token, "failed")
            raise
        self.progress_end(token, _summary_line(summary))
        return summary

    # -- progress ----------------------------------------------------------------------------

    def _file_progress(self, token: str | None) -> Callable[[int, int, str], None]:
        """The indexer's per-file callback as `$/progress` reports, at most every
        PROGRESS_EVERY_S (and the last file)."""
        last = [0.0]

        def progress(n: int, total: int, rel: str) -> None:
            now = time.monotonic()
            if token is not None and (now - last[0] >= PROGRESS_EVERY_S or n == total):
                last[0] = now
                pct = int(100 * n / total) if total else 100
                self.progress_report(token, f"{n}/{total} files", pct)

        return progress

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
        self.log_message(kind, text)

    def shutdown_all(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.readers.shutdown(wait=False, cancel_futures=True)
        self.host.close()


def _summary_line(summary: dict[str, Any]) -> str:
    """An index run's summary as the end of its progress says it."""
    return (
        f"{summary['documents']} documents, {summary['chunks']} chunks"
        f" ({summary['added']} added, {summary['modified']} changed,"
        f" {summary['deleted']} removed)"
    )


async def _answered(work: asyncio.Future[Any], token: CancelToken | None) -> Any:
    """`work`'s answer; a request the client cancels cancels its token too (the read stops at
    its next stage boundary), and an RpcError becomes the error pygls answers with."""
    try:
        return await work
    except asyncio.CancelledError:
        if token is not None:
            token.cancel("cancelled by the client")
        raise
    except RpcError as err:
        raise rpc_exception(err) from None

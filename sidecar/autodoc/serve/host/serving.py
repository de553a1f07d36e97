"""One host for every long-lived server: the folders it serves and what keeps them fresh.

`autodoc serve` (LSP) and `autodoc mcp` are adapters over a `Host`: it owns the workspaces a
process serves, the one writer thread (`Refresher`), the file watcher, freshness (a file found
changed at answer time is re-indexed, whoever asked), the writer lease, a picker's superseded
searches, and the events a client may want to hear about. So the two servers cannot drift: what
one does on an edit, a stale hit or a held lease, the other does too. The adapters only translate
between their wire and these methods.

A server's host may open its engine (the store, and the imports behind it) on a thread of its own
while the server answers `initialize` (`engine_slot.EngineSlot`).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autodoc import __version__
from autodoc.files.ignore_rules import IGNORE_FILES, RuleOptions
from autodoc.serve import method_table
from autodoc.serve.dispatcher import Reports
from autodoc.serve.host.askers import ASKER, NOTED, note_when_answered
from autodoc.serve.host.engine_slot import EngineEvents, EngineSlot, engine_at
from autodoc.serve.host.progress_reports import Notify, Progress, ProgressReports
from autodoc.serve.host.refresh import SAVE_DELAY_S
from autodoc.serve.host.status_views import workspace_state
from autodoc.wire import protocol
from autodoc.wire.errors import INVALID_PARAMS, CancelToken, RpcError, StoreBusyError
from autodoc.wire.file_rules import FileRules

if TYPE_CHECKING:
    from autodoc.engine import Engine
    from autodoc.serve.dispatcher import Dispatcher
    from autodoc.serve.host.refresh import Refresher
    from autodoc.serve.host.watch import Watcher

log = logging.getLogger(__name__)

RETRY_FOLDER_S = 2.0  # how often a folder opened read-only tries again for the writer lease
NAMING_WAIT_S = 30.0  # the most a request for "the served folder" waits for it to be named
SUPERSEDED = "superseded by a newer search"
READY = "ready"
READ_ONLY = "read-only: another autodoc process is writing this store"
TAKING_OVER = "taking over: the process that wrote this store is gone"

# Events a host sends its clients (the LSP server forwards them as notifications).
# What marks a knowledge base's root (the Neovim plugin's `root_markers` default is the same
# list): a client that roots a project at a note's own folder is served the vault above it.
VAULT_MARKERS = (".autodoc", ".obsidian", "_schema", "dendron.yml", ".dendron.yml", ".zk")
INDEX_READY = "autodoc/indexReady"
STATE_CHANGED = "autodoc/stateChanged"


class Host:
    """The workspaces one process serves. `notify(event, params)` is called from any thread;
    `on_lease(writer, holder)` when the writer lease is taken or found held. Over `engine`, or
    over the one `open_engine` makes on a thread of its own (`opened` holds it once open)."""

    def __init__(
        self,
        engine: Engine | None = None,
        *,
        open_engine: Callable[[], Engine] | None = None,
        watch: bool = True,
        notify: Notify | None = None,
        on_lease: Callable[[bool, str], None] | None = None,
    ) -> None:
        events = EngineEvents(
            self._opening_failed, self._indexed, self._lease, self._stale, self._embedded,
            self._embedding,
        )  # fmt: skip
        self.slot = EngineSlot(events, watch=watch)
        self.notify: Notify = notify or (lambda event, params: None)
        self.on_lease = on_lease
        # Replaced, never mutated: reader threads iterate them while the writer thread opens
        # and closes folders.
        self.served: dict[str, Path] = {}  # workspace name -> root, in the order opened
        self.indexing: dict[str, str] = {}  # workspace -> "indexing", "ready" or why not
        self.refused: list[str] = []  # folders that could not become workspaces, and why
        self.opening = 0  # folders submitted and not yet opened
        self.asked = False  # a folder was given: never fall back to another workspace
        self.options: dict[str, Any] = {}  # a client's options, applied to every folder
        self._search: CancelToken | None = None
        self._lock = threading.Lock()
        self._states: dict[str, tuple[str, str, str, str]] = {}
        self._closed = False
        self._retrying: frozenset[Path] = frozenset()  # read-only folders with a retry queued
        self._rules: dict[str, FileRules] = {}  # workspace -> what left files out of its walk
        self._named = threading.Condition(self._lock)  # a folder was named, or gave up
        self.progress = ProgressReports(  # `notify` is read at each report: a server sets it
            lambda event, params: self.notify(event, params),
            lambda name: self.engine_op("host.counts")(name)[1],
        )
        # a folder's first index, a save or a watcher's batch was indexed (on the writer
        # thread): an editor's diagnostics for its open documents, and its code lenses, are due
        self.indexed_listeners: list[Callable[[str], None]] = []
        # served folders whose index answers: first indexed here, or by the lease's holder
        self.answering: frozenset[str] = frozenset()
        # this process took the store's writer lease (once: it holds it until it exits); a
        # team server's worker then takes the other workers' writes
        self.lease_taken_listeners: list[Callable[[], None]] = []
        # a team server's worker that does not hold the lease hands its writes to the one that
        # does (`http.team.WriterRelay.forward`)
        self.relay: Callable[[str, Any], Any] | None = None
        self._lease_announced = False
        self.asker = "client"  # the question log's name for a client the front end cannot name
        self.slot.serve(engine, open_engine)

    # -- the engine, once open (`EngineSlot`: requests that need it wait for it) --------------

    @property
    def opened(self) -> Future[Engine]:
        return self.slot.opened

    @property
    def engine(self) -> Engine:
        return self.slot.engine

    def engine_op(self, name: str) -> Callable[..., Any]:
        """The engine operation a method-table record names (`method_table.METHODS` or the
        host's own `HOST_METHODS`), called in place: the host's own reads and its folder's
        opening, never a client's call (no trace, no door: the host built the arguments)."""
        record = method_table.HOST_BY_NAME.get(name) or method_table.BY_NAME[name]
        return record.handler(self.engine)

    @property
    def dispatcher(self) -> Dispatcher:
        return self.slot.dispatcher

    @property
    def refresher(self) -> Refresher:
        return self.slot.refresher

    @property
    def watcher(self) -> Watcher | None:
        return self.slot.watcher

    @watcher.setter
    def watcher(self, watcher: Watcher | None) -> None:  # a client that turns watching on
        self.slot.watcher = watcher

    @classmethod
    def over_store(cls, db: str | None, *, question_log: str | None = None, **options: Any) -> Host:
        """A host over the store at `db`, which opens on a thread of its own: a server answers
        `initialize` meanwhile."""
        return cls(open_engine=lambda: engine_at(db, question_log), **options)

    def _opening_failed(self) -> None:
        with self._lock:
            self._named.notify_all()

    # -- folders -----------------------------------------------------------------------------

    def vault_root(self, root: Path) -> Path:
        """The folder to serve for a root a client picked: the deepest workspace of the store
        that contains it, else the nearest folder at or above it holding a vault marker, else
        the root itself. (eglot roots a project without version control at the note's own
        folder, a subfolder of the vault: served alone, its links and names would be missing.)"""
        held: Path | None = self.engine_op("host.root_holding")(root)
        if held is not None:
            return held
        real = root.resolve()
        for folder in (real, *real.parents):
            if any((folder / marker).exists() for marker in VAULT_MARKERS):
                return folder
        return real

    def open(
        self,
        root: Path | Callable[[], Path],
        progress: Progress | None = None,
        finished: Callable[[dict[str, Any]], None] | None = None,
    ) -> Future[dict[str, Any]]:
        """Serve this folder: add (or reuse) its workspace, watch it, index it, on the writer
        thread. The result, `{"name", "state", "summary"}`, goes to `finished` before clients
        hear `autodoc/indexReady`, and is the future's; while another process holds the writer
        lease the folder is served read-only and retried quietly. `root` may be what finds the
        folder once the store is open (the workspace around the working directory)."""
        with self._lock:
            self.opening += 1
            self.asked = True
        return self.slot.on_writer(lambda: self._open(root, progress, finished))

    def _open(
        self,
        root: Path | Callable[[], Path],
        progress: Progress | None,
        finished: Callable[[dict[str, Any]], None] | None,
        *,
        retry: bool = False,
    ) -> dict[str, Any]:
        name: str | None = None
        summary: dict[str, Any] | None = None
        if callable(root):  # the folder is found now that the store is open
            root = self._found(root)
        try:
            self.engine_op("host.refuse_log_inside")(root)  # never index the question log
            name = self.engine_op("host.folder_workspace")(root)
            self._serve(name, root, "indexing")
            self.apply_options(name)
            if not retry:  # beside the catch-up below: the first question finds them open
                self._warm(name)
            self.engine.store.writer()  # the lease first: only its holder watches and indexes
            self._took_lease()
            if self.watcher is not None:  # first, so edits made while indexing are caught
                self.watcher.watch(name, root, self._rule_options(name))
            summary = self._index(name, root, progress)
            self.refresher.note_lease(True, "")
            state = READY
        except StoreBusyError as err:
            self.refresher.note_lease(False, (err.data or {}).get("holder", ""))
            if name is None:
                name = self.engine_op("host.workspace_at")(root)
                if name is not None and not retry:  # read-only: a search is served all the same
                    self._warm(name)
            state = READ_ONLY
            retry_later = threading.Timer(RETRY_FOLDER_S, self._retry, (root,))
            retry_later.daemon = True
            retry_later.start()
        except RpcError as err:
            state = f"error: {err.message}"
            if name is None:
                log.error("cannot serve %s: %s", root, err.message)
                with self._lock:
                    self.refused = [*self.refused, f"cannot serve {root}: {err.message}"]
        finally:
            if not retry:
                with self._lock:
                    self.opening -= 1
                    self._named.notify_all()
        if name is not None:
            self._serve(name, root, state)
        opened = {"name": name, "state": state, "summary": summary}
        if finished is not None:
            finished(opened)
        if not (retry and state == READ_ONLY):
            self.notify(INDEX_READY, self.status())
            if name is not None and state in (READY, READ_ONLY):
                self._answering(name)
        if name is not None and summary is not None:
            self.check_state(name, "semantic")
        return opened

    def _warm(self, name: str) -> None:
        """Open the folder's model session and indexes on a thread of their own."""

        def warm() -> None:
            try:
                self.engine_op("host.warm")(name)
            except Exception as exc:  # the first search opens them, and says what fails
                log.debug("warming %s: %s", name, exc)

        threading.Thread(target=warm, name="autodoc-warm", daemon=True).start()

    def _answering(self, name: str) -> None:
        """The folder's index answers now: what was asked of it before is due again."""
        with self._lock:
            self.answering = self.answering | {name}
        for listener in self.indexed_listeners:
            listener(name)

    def _found(self, find: Callable[[], Path]) -> Path:
        try:
            return find()
        except BaseException:
            with self._lock:
                self.opening -= 1
                self._named.notify_all()
            raise

    def _took_lease(self) -> None:
        with self._lock:
            if self._lease_announced:
                return
            self._lease_announced = True
        for listener in self.lease_taken_listeners:
            listener()

    def epochs(self) -> dict[str, tuple[int, int]]:
        """(text, vector) epoch of each served workspace, as the store holds them now."""
        epochs: dict[str, tuple[int, int]] = self.engine_op("host.epochs")(list(self.served))
        return epochs

    def _retry(self, root: Path) -> None:
        """Try a read-only folder again on the writer thread; once at a time per folder."""
        with self._lock:
            if self._closed or root in self._retrying:
                return
            self._retrying = self._retrying | {root}

        def again() -> None:
            with self._lock:
                self._retrying = self._retrying - {root}
            self._open(root, None, None, retry=True)

        self.refresher.submit(again)

    def _serve(self, name: str, root: Path, state: str) -> None:
        with self._lock:
            self.served = {**self.served, name: root.resolve()}
            self.indexing = {**self.indexing, name: state}
            self._named.notify_all()

    def close_folder(self, name: str) -> None:
        """Stop serving and watching a workspace (its index stays in the store)."""
        with self._lock:
            self.served = {k: v for k, v in self.served.items() if k != name}
            self.indexing = {k: v for k, v in self.indexing.items() if k != name}
            self.answering = self.answering - {name}
        if self.watcher is not None:
            self.watcher.unwatch(name)
        self.notify(STATE_CHANGED, {"event": "workspace.removed", "workspace": name})

    def _rule_options(self, name: str) -> RuleOptions:
        return RuleOptions.of(self.engine_op("host.options")(name))

    def _configured(self, name: str, answer: dict[str, Any]) -> None:
        """After `workspace.configure`: the watcher lets in what the walk now lets in, and a
        re-walk's rules are what the status shows."""
        root = self.served.get(name)
        if root is not None and self.watcher is not None:
            self.watcher.watch(name, root, self._rule_options(name))
        if isinstance(answer.get("reindexed"), dict):
            self._note_rules(name, answer["reindexed"])

    def _note_rules(self, name: str, summary: dict[str, Any]) -> None:
        """Keep what a walk of the whole root found leaving files out (a run over a few paths
        counts only those)."""
        if summary.get("documents") is None or "left_out" not in summary:
            return
        options = self._rule_options(name)
        rules = FileRules(exclude=list(options.exclude), include=list(options.include),
                          respect_gitignore=options.respect_gitignore,
                          ignore_files=list(summary["ignore_files"]),
                          left_out=list(summary["left_out"]))  # fmt: skip
        with self._lock:
            self._rules = {**self._rules, name: rules}

    def apply_options(self, name: str) -> None:
        """Set the client's options that differ from the workspace's (a changed one may
        re-chunk); on the writer thread."""
        options = self.engine_op("host.options")(name)
        changes = {k: v for k, v in self.options.items() if options.get(k) != v}
        if changes:
            configured = self.dispatcher.call("workspace.configure", [name, changes])
            self._configured(name, configured)

    def saved(self, path: Path) -> None:
        """An editor saved this file: re-index it now if it is under a served folder (the
        indexer leaves it out if the rules do); a saved `.gitignore` or `.ignore` walks the
        root again under its new rules, watcher or not."""
        for name, root in self.served.items():
            if path == root or root in path.parents:
                if path.name in IGNORE_FILES and self._rule_options(name).respect_gitignore:
                    self.refresher.rescan(name, SAVE_DELAY_S)
                else:
                    self.refresher.touch(name, path.relative_to(root).as_posix(), SAVE_DELAY_S)

    def workspace(self, name: str | None = None) -> str:
        """`name`, or the first folder this process serves (one being opened is named first,
        before it is indexed: a request that arrives before that waits for it)."""
        if name:
            return name
        self._await_naming()
        if self.opened.done() and (failed := self.opened.exception()) is not None:
            raise failed  # the store could not open: say why, not "retry shortly"
        served = self.served
        if served:
            return next(iter(served))
        if self.refused:
            raise RpcError(INVALID_PARAMS, "; ".join(self.refused))
        if self.opening or self.asked:  # being added, or waiting for another writer's lease
            raise RpcError(INVALID_PARAMS, "the workspace is still being added; retry shortly")
        names: list[str] = [w["name"] for w in self.engine_op("workspace.list")()]
        if len(names) == 1:
            return names[0]
        raise RpcError(
            INVALID_PARAMS,
            "no workspace folder is open; name a workspace (see `status`)",
            {"workspaces": sorted(names)},
        )

    def wait_served(self, roots: list[Path], timeout: float) -> bool:
        """Until each of these folders is served (named: a request naming it is answered from
        what is indexed so far), at most `timeout` s; whether they all are."""
        want = {root.resolve() for root in roots}
        with self._lock:
            return self._named.wait_for(lambda: want <= set(self.served.values()), timeout)

    def _await_naming(self) -> None:
        """Until the folders being opened are named (or gave up), at most NAMING_WAIT_S: what
        `workspace` and `status` answer from is then what this server serves."""
        with self._lock:
            self._named.wait_for(self._naming_over, timeout=NAMING_WAIT_S)

    def _naming_over(self) -> bool:
        failed = self.opened.done() and self.opened.exception() is not None
        return bool(self.served or self.refused or not self.opening or failed)

    # -- requests ----------------------------------------------------------------------------

    def call(
        self,
        method: str,
        params: Any,
        *,
        cancel: CancelToken | None = None,
        reads: Executor | None = None,
        asker: str | None = None,
    ) -> Future[Any]:
        """A dispatcher method where it runs, decided here once for every front end by the
        method table: one that writes on the writer thread (or, on a team server's worker
        without the lease, at the worker that holds it), any other on `reads`, the front
        end's pool (at once, here, without one). Its answer, as a future; a question or an
        opening is noted in the question log once answered (`asker`: the token's or client's
        name the front end knows, never a token)."""
        facts = method_table.BY_NAME.get(method)
        if facts is not None and facts.writes:
            if self.relay is not None and self.engine.store.lease.fd is None:
                relay = self.relay
                return _run(reads, lambda: relay(method, params))
            return self.write(method, params)
        answer = _run(reads, lambda: self.dispatcher.call(method, params, cancel=cancel))
        if method in NOTED:
            who = asker or ASKER.get() or self.asker
            note_when_answered(answer, method, params, who,
                               lambda: self.engine_op("host.note_question"))  # fmt: skip
        return answer

    def write(self, method: str, params: Any) -> Future[Any]:
        """A dispatcher method that changes the store, on the writer thread; a removed
        workspace stops being served, an added one is announced."""

        def job() -> Any:
            result = self.dispatcher.call(method, params)
            if method == "workspace.remove":
                self.close_folder(result["name"])
            elif method == "workspace.add" and result.get("created"):
                event = {"event": "workspace.added", "workspace": result["name"]}
                self.notify(STATE_CHANGED, event)
            elif method == "workspace.configure":
                self._configured(result["name"], result)
            elif method == "index.run":
                self._note_rules(result["workspace"], result)
            return result

        assert method_table.BY_NAME[method].writes, method
        return self.slot.on_writer(job)

    def reindex(self, name: str, progress: Progress | None = None) -> Future[dict[str, Any]]:
        """Walk a served folder again on the writer thread, telling clients how far it got
        through the same `autodoc/indexProgress` as the first index; its summary."""
        root = self.served[name]
        return self.slot.on_writer(lambda: self._index(name, root, progress))

    def _index(self, name: str, root: Path, progress: Progress | None) -> dict[str, Any]:
        """Index a served folder (on the writer thread), its file progress passed on and sent
        as `autodoc/indexProgress`, the last report once every chunk is published; the run's
        summary. The first index and a reindex both."""
        files = Reports(progress=self.progress.files(name, root, progress))
        summary: dict[str, Any] = self.dispatcher.call("index.run", [name], reports=files)
        self._note_rules(name, summary)
        files = summary["files"]  # once more, with every chunk published
        self.progress.report(name, root, "files", files, files, final=True)
        return summary

    def new_search(self) -> CancelToken:
        """A newer search from this client supersedes the one in flight (pickers search on
        every keystroke): the old one stops at its next stage boundary with -32800."""
        token = CancelToken()
        with self._lock:
            if self._search is not None:
                self._search.cancel(SUPERSEDED)
            self._search = token
        return token

    # -- state -------------------------------------------------------------------------------

    def status(self) -> protocol.Status:
        """The one status every adapter serves (`autodoc.status`, MCP `status`,
        `autodoc/indexReady`): this process, then each workspace of the store, served first.
        The folders being opened are named first, so the first status after a start names the
        server's folder as served."""
        self._await_naming()
        served, indexing = self.served, self.indexing
        lease = self.lease_state()
        if lease == "taking over":  # the holder is gone: say so, and take it now
            indexing = {k: TAKING_OVER if v == READ_ONLY else v for k, v in indexing.items()}
            for root in [served[k] for k, v in self.indexing.items() if v == READ_ONLY]:
                self._retry(root)
        workspaces = [
            workspace_state(ws, self.engine_op("host.stage_state")(ws["name"]),
                            served=ws["name"] in served, rules=self._rules.get(ws["name"]),
                            indexing=indexing.get(ws["name"], "not refreshed by this server"))
            for ws in self.engine_op("workspace.list")()  # the host's own read: no client's call
        ]  # fmt: skip
        workspaces.sort(key=lambda w: (not w["served"], w["name"]))
        server = protocol.ServerInfo(
            version=__version__,
            pid=os.getpid(),
            db=str(self.engine.store.path),
            writer=lease == "writer",
            lease=lease,
            holder=self.engine.store.lease.holder() if lease == "read-only" else "",
            pending=self.refresher.pending(),
            watching=self.watcher is not None,
            question_log=self.engine_op("host.question_log")(),
        )
        return protocol.Status(server=server, workspaces=workspaces, refused=list(self.refused))

    def lease_state(self) -> protocol.LeaseState:
        """The truth about the writer lease at this moment, not as last noted: a holder that
        exited leaves `taking over` until this process's retry takes the lease."""
        lease = self.engine.store.lease
        if lease.fd is not None:
            return "writer"
        if lease.held_elsewhere():
            return "read-only"
        # Free: ours for the asking, or (last seen held by another) being taken over.
        return "writer" if self.refresher.writer else "taking over"

    def check_state(self, workspace: str, event: str) -> None:
        """Tell clients when the semantic or rank state a picker shows has changed."""
        try:
            state = self.engine_op("host.stage_state")(workspace)
        except RpcError:
            return
        key = (state["semantic"], state["model"], state["rank"]["state"], state["rank"]["model"])
        if self._states.get(workspace) == key:
            return
        self._states[workspace] = key
        self.notify(STATE_CHANGED, {"event": event, **state})

    def _stale(self, workspace: str, paths: list[str]) -> None:
        """An answer found these files changed since they were indexed: re-index them."""
        for path in paths:
            self.refresher.touch(workspace, path, SAVE_DELAY_S)

    def _indexed(self, workspace: str, summary: dict[str, Any]) -> None:
        self._note_rules(workspace, summary)  # a rescan (the watcher, a saved .gitignore)
        self.check_state(workspace, "semantic")
        for listener in self.indexed_listeners:
            listener(workspace)

    def check_served(self, name: Any) -> None:
        """-32602 unless `name` is a folder this process serves (a team's server: the store's
        other workspaces stay private)."""
        if name not in self.served:
            raise RpcError(INVALID_PARAMS, f"not a workspace of this server: {name!r}",
                           {"workspaces": sorted(self.served)})  # fmt: skip

    def locate(self, path: Path) -> tuple[str, str] | None:
        """(workspace, root-relative path) of a file under a served folder (the innermost)."""
        real = Path(os.path.realpath(path))
        best: tuple[str, Path] | None = None
        for name, root in self.served.items():
            if root in real.parents and (best is None or len(str(root)) > len(str(best[1]))):
                best = (name, root)
        return None if best is None else (best[0], real.relative_to(best[1]).as_posix())

    def _embedded(self, workspace: str) -> None:
        self.check_state(workspace, "semantic")

    def _embedding(self, workspace: str, done: int, total: int) -> None:
        root = self.served.get(workspace)
        if root is not None:
            self.progress.report(workspace, root, "embedding", done, total, final=done >= total)

    def _lease(self, writer: bool, holder: str) -> None:
        if self.on_lease is not None:
            self.on_lease(writer, holder)
        self.notify(STATE_CHANGED, {"event": "writer", "writer": writer, "holder": holder})

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.slot.close()


def _run(pool: Executor | None, job: Callable[[], Any]) -> Future[Any]:
    """`job` on `pool`, or here and now, as a future either way."""
    if pool is not None:
        return pool.submit(job)
    done: Future[Any] = Future()
    try:
        done.set_result(job())
    except BaseException as exc:  # the caller's future holds it, as the pool's would
        done.set_exception(exc)
    return done

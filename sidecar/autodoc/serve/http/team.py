"""`autodoc serve --http HOST:PORT --workers N`: a team's server on every core.

One Python process answers about one core's worth of queries (each holds the GIL), so the
server runs N worker processes on one listening socket under uvicorn's own supervisor
(`uvicorn.supervisors.Multiprocess`: it starts them, pings them, and replaces one that dies or
hangs). uvicorn rather than gunicorn: the same pre-forking supervision, with no second server
package and no worker class to keep in step with it.

Every worker opens the same store and serves the same folders through its own `Host`:
- exactly one holds the store's writer lease (whichever takes it first): it indexes, watches the
  folders and commits; the others answer from snapshots of what it committed, and try for the
  lease every couple of seconds, so when the writer dies another worker takes over;
- the float32 rows, the graphs and Tantivy's segments are files the workers map, so their pages
  are shared, not copied;
- a write that reaches a reader (`index.run`, `index.check`) is relayed to the lease holder over
  a Unix socket in the server's run folder (`WriterRelay`), authenticated with a key only the
  server's processes know;
- per-token limits are counted across workers in one shared file (`tokens.TokenLimits`).

The workers learn their settings from one environment variable the parent sets before it
starts them (spawned processes inherit it).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import shutil
import sys
import tempfile
import threading
from dataclasses import asdict, dataclass
from multiprocessing.connection import Client, Listener
from pathlib import Path
from typing import Any

from autodoc.gaps.question_log import checked_log_path, logged_line
from autodoc.serve.host.serving import Host
from autodoc.serve.http.server import BUSY, DEFAULT_MAX_CONCURRENT, HttpApp, listen_settings
from autodoc.serve.http.tokens import TokenLimits, Tokens
from autodoc.serve.mcp.mcp_entry import checked_folders
from autodoc.serve.mcp.mcp_framing import CheckedBodies
from autodoc.serve.mcp.mcp_server import AgentServer, build_server
from autodoc.wire.errors import INTERNAL_ERROR, INVALID_PARAMS, RpcError
from autodoc.wire.limits import usable_cores

log = logging.getLogger(__name__)

CONFIG_ENV = "AUTODOC_TEAM_SERVER"  # the workers' settings, JSON, set by the parent
# Each worker's share of the cores for its model (models.onnx_sessions.THREADS_ENV, named again
# here because the serve layer reaches no model code: tests/integration/test_team_server.py
# checks the two agree): two workers each running a model on every core only fight over them.
THREADS_ENV = "AUTODOC_THREADS"


SERVED_WAIT_S = 30.0  # a new store: a reader names the folder once the writer has added it
NO_WRITER = "no worker holds the writer lease at the moment (one is taking over); retry shortly"


@dataclass(frozen=True)
class TeamConfig:
    """What every worker needs to serve: the store, the folders, the tokens, the run folder."""

    db: str | None
    roots: list[str]
    token_file: str | None
    token_env: str | None
    max_concurrent: int
    bind: str
    rundir: str
    key: str  # the relay's authentication key, hex
    question_log: str | None = None  # every worker appends to it (`gaps.question_log`)

    @classmethod
    def from_env(cls) -> TeamConfig:
        return cls(**json.loads(os.environ[CONFIG_ENV]))

    @property
    def relay_address(self) -> str:
        return str(Path(self.rundir) / "writer.sock")

    @property
    def limits_file(self) -> Path:
        return Path(self.rundir) / "limits"


class WriterRelay:
    """Writes reach the lease holder: it listens on a Unix socket once it holds the lease; a
    reader that is asked to write sends the call there and passes the answer back."""

    def __init__(self, address: str, key: bytes, host: Host) -> None:
        self.address = address
        self.key = key
        self.host = host

    def listen(self) -> None:
        """Start answering relayed writes (called once this process holds the lease: no other
        live process can be listening, so a socket file left by a dead writer is removed)."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.address)
        listener = Listener(self.address, "AF_UNIX", authkey=self.key)
        threading.Thread(target=self._accept, args=(listener,), name="autodoc-relay",
                         daemon=True).start()  # fmt: skip

    def _accept(self, listener: Listener) -> None:
        while True:
            try:
                conn = listener.accept()
            except OSError:
                return  # closed
            except Exception:  # a connection that failed authentication
                log.warning("a relay connection was refused", exc_info=True)
                continue
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: Any) -> None:
        with conn:
            try:
                method, params = conn.recv()
                conn.send(("result", self.host.write(method, params).result()))
            except RpcError as err:
                conn.send(("error", err.to_dict()))
            except (EOFError, OSError):
                return  # the asking worker is gone
            except Exception as exc:  # answered, as the dispatcher answers a crash
                log.exception("a relayed write failed")
                conn.send(("error", {"code": INTERNAL_ERROR, "message": str(exc)}))

    def forward(self, method: str, params: Any) -> Any:
        """The lease holder's answer to this write; -32004 (retry) while no process holds the
        lease or when it dies before answering."""
        try:
            conn = Client(self.address, "AF_UNIX", authkey=self.key)
        except OSError:
            raise RpcError(BUSY, NO_WRITER, {"retry_after": 1}) from None
        with conn:
            try:
                conn.send((method, params))
                kind, value = conn.recv()
            except (EOFError, OSError):
                raise RpcError(BUSY, NO_WRITER, {"retry_after": 1}) from None
        if kind == "error":
            raise RpcError(value["code"], value["message"], value.get("data"))
        return value


def stateless_mcp_app(host: Host, bind: str) -> Any:
    """The MCP tools at `/mcp` over streamable HTTP in the SDK's stateless mode: no session
    outlives a request, so any worker answers any request, each answer one JSON body."""
    server = build_server(AgentServer(host, [], served_only=True))
    app = server.streamable_http_app(stateless_http=True, json_response=True, host=bind)
    return CheckedBodies(app)


def worker_app() -> Any:
    """The ASGI app of one worker (uvicorn's factory, called in the spawned process)."""
    from autodoc.engine import Engine

    config = TeamConfig.from_env()
    host = Host(Engine(config.db, question_log=config.question_log), watch=True)
    relay = WriterRelay(config.relay_address, bytes.fromhex(config.key), host)
    host.lease_taken_listeners.append(relay.listen)
    host.relay = relay.forward  # a write reaching this worker without the lease goes there
    folders = [Path(root) for root in config.roots]
    for folder in folders:
        host.open(folder)
    # Take connections once every folder is named, so no request is told "not a workspace of
    # this server" by a worker still starting (the other workers take them meanwhile).
    if not host.wait_served(folders, SERVED_WAIT_S):
        log.warning("worker %d: not every folder is served yet; answering anyway", os.getpid())
    tokens = Tokens.load(config.token_file, config.token_env)
    app = HttpApp(host, tokens, max_concurrent=config.max_concurrent,
                  token_limits=TokenLimits(config.limits_file))  # fmt: skip
    return app.asgi(stateless_mcp_app(host, config.bind))


def serve_team(
    db: str | None,
    roots: list[str],
    address: str,
    *,
    token_file: str | None,
    token_env: str | None,
    workers: int,
    max_concurrent: int | None = None,
    question_log: str | None = None,
) -> int:
    """Start the workers and keep them running until interrupted. A configuration it refuses
    (address, tokens, folders, workers) raises before anything starts."""
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    bind, port, tokens = listen_settings(address, token_file, token_env)
    if not roots:
        raise RpcError(INVALID_PARAMS, "name the folders: autodoc serve --http HOST:PORT PATH ...")
    if not 1 <= workers <= 64:
        raise RpcError(INVALID_PARAMS, f"--workers takes 1 to 64, got {workers}")
    if max_concurrent is not None and not 1 <= max_concurrent <= 1024:
        raise RpcError(INVALID_PARAMS, f"--max-concurrent takes 1 to 1024, got {max_concurrent}")
    folders = checked_folders([str(Path(r).expanduser().resolve()) for r in roots])
    question_log = checked_log_path(question_log, folders)
    rundir = Path(tempfile.mkdtemp(prefix="autodoc-team-"))
    TokenLimits.create(rundir / "limits")
    settings = TeamConfig(db=db, roots=[str(f) for f in folders], token_file=token_file,
                          token_env=token_env, bind=bind,
                          max_concurrent=max_concurrent or DEFAULT_MAX_CONCURRENT,
                          rundir=str(rundir), key=secrets.token_hex(32),
                          question_log=question_log)  # fmt: skip
    os.environ[CONFIG_ENV] = json.dumps(asdict(settings))
    os.environ.setdefault(THREADS_ENV, str(max(1, usable_cores() // workers)))
    config = uvicorn.Config(f"{__name__}:worker_app", factory=True, host=bind, port=port,
                            workers=workers, log_level="warning")  # fmt: skip
    print(f"autodoc: serving http://{bind}:{port}/rpc and /mcp for {len(folders)} folder(s),"
          f" {len(tokens.tokens)} token(s), {workers} worker(s), {logged_line(question_log)}",
          flush=True, file=sys.stderr)  # fmt: skip
    try:
        Multiprocess(config, sockets=[config.bind_socket()]).run()
    finally:
        shutil.rmtree(rundir, ignore_errors=True)
    return 0

"""`autodoc serve --http --workers 2`: a team's server on several processes. Both workers
answer, one writes, an edit on disk reaches every worker's answers within a second, no answer
goes back in epoch, writes reach the writer from any worker, a killed worker is replaced and a
killed writer's lease is taken over, per-token limits hold across workers, and the MCP tools
answer statelessly from any worker."""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from autodoc.serve.http.tokens import process_alive

from ..conftest import EXAMPLE_VAULT
from .test_http import RO, RW, call, free_port

FRESH_S = 1.0  # the promise: an edit on disk in every worker's answers within 1 s
START_S = 90


def answered_by(headers: dict) -> tuple[int, str]:
    pid, role = {k.lower(): v for k, v in headers.items()}["autodoc-worker"].split()
    return int(pid), role


def epochs_of(headers: dict) -> dict[str, tuple[int, int]]:
    text = {k.lower(): v for k, v in headers.items()}["autodoc-epoch"]
    out = {}
    for part in text.split(", "):
        name, _, pair = part.partition("=")
        text_epoch, vector_epoch = pair.split(".")
        out[name] = (int(text_epoch), int(vector_epoch))
    return out


class Team:
    """The server on a copy of the sample vault, and what its answers said."""

    def __init__(self, base: Path, tokens_text: str, workers: int = 2) -> None:
        self.vault = base / "vault"
        shutil.copytree(EXAMPLE_VAULT, self.vault)
        (base / "tokens").write_text(tokens_text)
        self.db = base / "store" / "a.db"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/rpc"
        env = {k: v for k, v in os.environ.items() if k != "AUTODOC_TOKEN"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "autodoc", "--db", str(self.db), "serve", "--http",
             f"127.0.0.1:{self.port}", "--workers", str(workers), "--token-file",
             str(base / "tokens"), str(self.vault)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        self.workers = workers

    def ask(self, method: str, *params, token: str = RW):
        status, answer, headers = call(self.url, method, *params, token=token)
        return status, answer, headers

    def until_every_worker(self, check, limit_s: float) -> dict[int, float]:
        """Ask until every live worker gave an answer `check` accepts: each one's first time."""
        first: dict[int, float] = {}
        started = time.monotonic()
        while time.monotonic() - started < limit_s:
            try:
                status, answer, headers = self.ask("search.query", "vault", "zebra crossing",
                                                   {"stages": ["lexical"], "limit": 3})  # fmt: skip
            except (urllib.error.URLError, ConnectionError):
                continue
            pid, _ = answered_by(headers)
            if status == 200 and check(answer):
                first.setdefault(pid, time.monotonic() - started)
            if len({p for p in first if process_alive(p)}) >= self.workers:
                return first
        raise AssertionError(f"not every worker answered as asked in {limit_s} s: {first}")

    def ready(self) -> None:
        """Every worker answers with the folder indexed, and one holds the lease."""
        deadline = time.monotonic() + START_S
        roles: dict[int, str] = {}
        while True:
            try:
                status, answer, headers = self.ask("index.status", "vault")
                if status == 200 and answer.get("result", {}).get("documents") == 8:
                    pid, role = answered_by(headers)
                    roles[pid] = role
                    if len(roles) >= self.workers and "writer" in roles.values():
                        return
            except (urllib.error.URLError, ConnectionError):
                pass
            assert time.monotonic() < deadline and self.proc.poll() is None, self.stderr()
            time.sleep(0.05)

    def stderr(self) -> str:
        os.set_blocking(self.proc.stderr.fileno(), False)
        return (self.proc.stderr.read() or b"").decode()

    def holder(self) -> int:
        return int((self.db.parent / "a.db.lock").read_text().split()[1])

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


@pytest.fixture
def team(tmp_path):
    server = Team(tmp_path, f"{RW}\n{RO} read-only\n")
    try:
        server.ready()
        yield server
    finally:
        server.close()


def _has_zebra(answer: dict) -> bool:
    return any(h["path"] == "notes/zebra.md" for h in answer["result"]["hits"])


def test_two_workers_answer_one_writes_and_an_edit_reaches_both_within_a_second(team):
    roles: dict[int, str] = {}
    for _ in range(40):
        roles.setdefault(*answered_by(team.ask("index.status", "vault")[2]))
        if len(roles) == 2:
            break
    assert len(roles) == 2 and sorted(roles.values()) == ["reader", "writer"], roles
    assert team.holder() in roles and roles[team.holder()] == "writer"
    (team.vault / "notes" / "zebra.md").write_text("# Zebra crossing\n\nStripes on the road.\n")
    first = team.until_every_worker(_has_zebra, 10)
    assert max(first.values()) <= FRESH_S, first
    (team.vault / "notes" / "zebra.md").unlink()
    first = team.until_every_worker(lambda a: not _has_zebra(a), 10)
    assert max(first.values()) <= FRESH_S, first


def test_no_answer_goes_back_in_epoch(team):
    """Edits while one client asks over and over: whichever worker answers, the epochs it
    stamps never fall below those of an earlier answer, and they do move."""
    seen: list[tuple[int, int]] = []
    note = team.vault / "notes" / "epoch.md"
    for n in range(6):
        note.write_text(f"# Epoch {n}\n\nword{n}\n")
        stop = time.monotonic() + 0.5
        while time.monotonic() < stop:
            seen.append(epochs_of(team.ask("search.find", "vault", "Epoch")[2])["vault"])
    assert all(a <= b for a, b in itertools.pairwise(seen)), seen
    assert seen[-1][0] > seen[0][0]


def test_a_write_reaches_the_writer_from_any_worker(team):
    """`index.run` answers the same whichever worker took it: a reader relays it."""
    by: dict[str, dict] = {}
    for _ in range(60):
        status, answer, headers = team.ask("index.run", "vault")
        assert status == 200, answer
        by.setdefault(answered_by(headers)[1], answer["result"])
        if len(by) == 2:
            break
    assert set(by) == {"reader", "writer"}
    assert by["reader"]["documents"] == by["writer"]["documents"] == 8
    status, answer, _ = team.ask("index.run", "vault", token=RO)
    assert status == 403 and answer["error"]["code"] == -32003


def test_a_killed_worker_is_replaced_and_a_killed_writers_lease_taken_over(team):
    pids = set()
    for _ in range(40):
        pids.add(answered_by(team.ask("index.status", "vault")[2])[0])
        if len(pids) == 2:
            break
    writer = team.holder()
    reader = next(p for p in pids if p != writer)
    os.kill(reader, signal.SIGKILL)
    replaced = set()
    deadline = time.monotonic() + 60
    while not replaced:  # every request in the meantime is answered by the other worker
        try:
            status, answer, headers = team.ask("search.find", "vault", "reclaimBatch")
        except (urllib.error.URLError, ConnectionError):
            continue  # (a request the killed worker had taken)
        assert status == 200 and answer["result"]["matches"], answer
        pid = answered_by(headers)[0]
        if pid not in pids:
            replaced.add(pid)
        assert time.monotonic() < deadline, "the killed worker was not replaced"
    os.kill(writer, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while not (process_alive(team.holder()) and team.holder() != writer):
        assert time.monotonic() < deadline, "no worker took the writer lease"
        time.sleep(0.05)
    (team.vault / "notes" / "zebra.md").write_text("# Zebra crossing\n\nAfter the takeover.\n")
    team.until_every_worker(_has_zebra, 20)  # the new writer watches and indexes


def test_per_token_limits_answer_429_with_retry_after(tmp_path):
    server = Team(tmp_path, f"{RW} rps=3\n{RO} read-only\n")
    try:
        _ready_with(server, RO)
        statuses = []
        for _ in range(12):
            status, answer, headers = server.ask("search.find", "vault", "lease")
            statuses.append(status)
            if status == 429:
                assert answer["error"]["code"] == -32004
                assert int({k.lower(): v for k, v in headers.items()}["retry-after"]) >= 1
        # a second's worth at once (3, and what refilled meanwhile), then refused
        assert statuses[:3] == [200, 200, 200] and statuses.count(429) >= 6, statuses
        assert server.ask("search.find", "vault", "lease", token=RO)[0] == 200  # its own limit
        time.sleep(1.1)
        assert server.ask("search.find", "vault", "lease")[0] == 200
    finally:
        server.close()


def _ready_with(server: Team, token: str) -> None:
    deadline = time.monotonic() + START_S
    while True:
        try:
            status, answer, _ = server.ask("index.status", "vault", token=token)
            if status == 200 and answer.get("result", {}).get("documents") == 8:
                return
        except (urllib.error.URLError, ConnectionError):
            pass
        assert time.monotonic() < deadline and server.proc.poll() is None, server.stderr()
        time.sleep(0.05)


def test_limits_are_counted_across_processes_and_freed_with_a_dead_one(tmp_path):
    """Two processes share one limits file: one's request in flight counts against the
    other's `concurrent=1`; once the first process is killed, its count no longer does."""
    from autodoc.serve.http.tokens import TokenLimits, Tokens

    path = tmp_path / "limits"
    TokenLimits.create(path)
    (tmp_path / "tokens").write_text(f"{RW} concurrent=1 rps=100\n")
    holder = subprocess.Popen(
        [sys.executable, "-c", (
            "import sys, time; from autodoc.serve.http.tokens import TokenLimits, Tokens;"
            f"t = Tokens.load({str(tmp_path / 'tokens')!r}, None).tokens[0];"
            f"lim = TokenLimits(__import__('pathlib').Path({str(path)!r}));"
            "assert lim.enter(t) is None; print('in', flush=True); time.sleep(60)")],
        stdout=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == b"in"
        token = Tokens.load(str(tmp_path / "tokens"), None).tokens[0]
        limits = TokenLimits(path)
        refusal = limits.enter(token)
        assert refusal is not None and "at most 1 requests at once" in refusal.why
        holder.kill()
        holder.wait()
        assert limits.enter(token) is None
        assert limits.enter(token) is not None  # its own request now counts
        limits.leave(token)
        assert limits.enter(token) is None
        limits.close()
    finally:
        holder.kill()


def test_token_file_limits_are_checked(tmp_path):
    from autodoc.serve.http.tokens import Tokens

    good = tmp_path / "good"
    good.write_text(f"{RW} read-only rps=2.5 concurrent=4 name=ci-bot  # a bot\n{RO}\n")
    a, b = Tokens.load(str(good), None).tokens
    assert (a.read_only, a.rps, a.concurrent, a.label) == (True, 2.5, 4, "ci-bot")
    assert (b.read_only, b.rps, b.concurrent, b.limited) == (False, None, None, False)
    assert b.label.startswith("token-") and RO not in b.label  # a fingerprint, not the token
    bads = ("rps=0", "rps=x", "concurrent=1.5", "burst=3", "rps=1 rps=2", "read-only x",
            "name=", "name=a name=b")  # fmt: skip
    for bad in bads:
        (tmp_path / "bad").write_text(f"{RW} {bad}\n")
        with pytest.raises(ValueError, match="bad:1"):
            Tokens.load(str(tmp_path / "bad"), None)


def test_workers_or_slots_out_of_range_are_refused(tmp_path):
    for option, said in (("--workers", "--workers takes 1 to 64"),
                         ("--max-concurrent", "--max-concurrent takes 1 to 1024")):  # fmt: skip
        out = subprocess.run(
            [sys.executable, "-m", "autodoc", "--db", str(tmp_path / "a.db"), "serve", "--http",
             f"127.0.0.1:{free_port()}", option, "0", str(EXAMPLE_VAULT)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert out.returncode == 2 and out.stderr.startswith(f"autodoc: {said}")


def test_each_worker_gets_its_share_of_the_cores_by_the_models_own_setting():
    from autodoc.models.onnx_sessions import THREADS_ENV
    from autodoc.serve.http import team as team_server

    assert team_server.THREADS_ENV == THREADS_ENV


def test_mcp_tools_answer_statelessly_from_every_worker(team):
    """The SDK's client over streamable HTTP at /mcp: initialize, list and call land on
    whichever worker takes them (no session to keep), and every call is answered."""
    import asyncio

    import httpx
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    url = f"http://127.0.0.1:{team.port}/mcp"
    workers: set[str] = set()
    statuses: list[int] = []

    async def note_worker(response: httpx.Response) -> None:
        workers.add(response.headers.get("autodoc-worker", "").split(" ")[0])
        statuses.append(response.status_code)

    async def session() -> tuple[list[str], list[str]]:
        # a connection per request: a kept-alive one stays with the worker that accepted it
        http = httpx.AsyncClient(headers={"Authorization": f"Bearer {RO}"},
                                 limits=httpx.Limits(max_keepalive_connections=0),
                                 event_hooks={"response": [note_worker]}, timeout=30)  # fmt: skip
        async with http, Client(streamable_http_client(url, http_client=http)) as client:
            names = sorted(t.name for t in (await client.list_tools()).tools)
            paths = []
            for _ in range(30):
                found = await client.call_tool("find", {"name": "reclaimBatch"})
                assert not found.is_error, found.content
                paths.append(found.structured_content["matches"][0]["path"])
                if len(workers) >= 2 and len(paths) >= 4:
                    break
            return names, paths

    names, paths = asyncio.run(session())
    assert names == ["find", "gaps", "read_span", "related", "search", "status"]
    assert set(paths) == {"adr/0003-embedded-sqlite-store.md"}
    assert len(workers - {""}) == 2, workers
    assert all(s < 400 for s in statuses), statuses  # no request met a worker that lacked state


def test_a_write_while_no_worker_holds_the_lease_is_a_retryable_busy(tmp_path):
    from autodoc.serve.http.team import WriterRelay
    from autodoc.wire.errors import RpcError

    relay = WriterRelay(str(tmp_path / "writer.sock"), b"k" * 32, host=None)  # type: ignore[arg-type]
    with pytest.raises(RpcError) as err:
        relay.forward("index.run", ["vault"])
    assert err.value.code == -32004 and err.value.data == {"retry_after": 1}

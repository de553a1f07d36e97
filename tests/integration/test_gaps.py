"""Issue 58 through the real servers: a team server's two workers log the questions its tokens
ask (by the tokens' names), the openings, and only a token that may write reads the report;
`autodoc mcp` logs its agent's questions and reads; `autodoc gaps` and `check --gaps N` over a
log; a log inside a served folder is refused before anything starts; several processes append
through rotations, and a writer killed mid-write leaves a readable log."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
from pathlib import Path

import pytest

from autodoc.gaps.question_log import KEEP, SETTLE_S, LogFile, log_files, read_records

from ..conftest import EXAMPLE_VAULT
from .test_http import RO, RW, call, free_port
from .test_mcp import McpSession, first_state, wait_until

START_S = 90


def wait_for_records(log: Path, count: int, kind: str | None = None) -> list[dict]:
    """The log's records once it holds `count` (of `kind`): questions settle, then are written."""
    deadline = time.monotonic() + SETTLE_S + 30
    while True:
        records = read_records(log)[0] if log.exists() else []
        chosen = [r for r in records if kind is None or r["kind"] == kind]
        if len(chosen) >= count or time.monotonic() > deadline:
            return records
        time.sleep(0.1)


@pytest.fixture(scope="module")
def logged_team(tmp_path_factory):
    base = tmp_path_factory.mktemp("gaps-team")
    vault = base / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    (base / "tokens").write_text(f"{RW} name=alice\n{RO} read-only name=reader\n")
    log = base / "logs" / "questions.jsonl"
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "AUTODOC_TOKEN"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "autodoc", "--db", str(base / "store" / "a.db"), "serve", "--http",
         f"127.0.0.1:{port}", "--workers", "2", "--token-file", str(base / "tokens"),
         "--log-questions", str(log), str(vault)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/rpc"
    deadline = time.monotonic() + START_S
    while True:
        try:
            status, answer, _ = call(url, "index.status", "vault", token=RO)
            if status == 200 and answer.get("result", {}).get("documents") == 8:
                break
        except (urllib.error.URLError, ConnectionError):
            pass
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.2)
    yield url, port, log, proc
    proc.terminate()
    proc.wait(timeout=30)


def test_a_team_server_logs_its_tokens_questions_by_name_and_keeps_the_report_to_writers(
    logged_team,
):
    url, _, log, _ = logged_team
    assert call(url, "search.query", "vault", "writer lease recovery", token=RW)[0] == 200
    assert call(url, "search.query", "vault", "parental leave policy", token=RO)[0] == 200
    assert call(url, "doc.read", "vault", "adr/0004-lease-recovery.md", 1, 5, token=RW)[0] == 200
    records = wait_for_records(log, 2, "question")
    asked = {(r["asker"], r["query"]) for r in records if r["kind"] == "question"}
    assert asked == {("alice", "writer lease recovery"), ("reader", "parental leave policy")}
    opened = [r for r in records if r["kind"] == "opened"]
    assert opened == [{**opened[0], "asker": "alice", "path": "adr/0004-lease-recovery.md"}]
    text = log.read_text()
    assert RW not in text and RO not in text  # the tokens' names, never the tokens
    status, answer, _ = call(url, "gaps.report", None, {}, token=RO)
    assert status == 403 and answer["error"]["code"] == -32003
    status, answer, _ = call(url, "gaps.report", None, {}, token=RW)
    report = answer["result"]
    assert status == 200 and report["questions"] == 2 and report["log"] == str(log)
    # the log is outside the vault: no read method reaches it
    status, answer, _ = call(url, "doc.read", "vault", f"../logs/{log.name}", 1, 2, token=RW)
    assert answer["error"]["code"] == -32602


def test_the_team_servers_mcp_gaps_tool_is_for_a_token_that_may_write(logged_team):
    import httpx
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    _, port, log, _ = logged_team

    async def gaps(token: str):
        http = httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
        url = f"http://127.0.0.1:{port}/mcp"
        async with http, Client(streamable_http_client(url, http_client=http)) as client:
            await client.call_tool("search", {"query": "embedding model choice"})
            status = (await client.call_tool("status", {})).structured_content
            return status, await client.call_tool("gaps", {})

    status, refused = asyncio.run(gaps(RO))
    assert status["server"]["question_log"] == str(log)
    assert refused.is_error and refused.content[0].text.startswith("error -32003")
    _, allowed = asyncio.run(gaps(RW))
    assert not allowed.is_error and allowed.structured_content["log"] == str(log)
    records = wait_for_records(log, 4, "question")
    mcp_askers = {r["asker"] for r in records if r.get("query") == "embedding model choice"}
    assert mcp_askers == {"alice", "reader"}  # the request's token, through the SDK


def test_an_agents_questions_and_reads_are_logged_over_stdio(tmp_path):
    root = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, root)
    log = tmp_path / "q.jsonl"
    session = McpSession(["--db", str(tmp_path / "s.db"), "mcp", "--log-questions", str(log),
                          str(root)], cwd=tmp_path)  # fmt: skip
    try:
        wait_until(lambda: first_state(session, "indexing") == "ready")
        assert session.ok("status")["server"]["question_log"] == str(log)
        hit = session.ok("search", {"query": "how are lexical and semantic lists merged"})
        top = hit["hits"][0]
        session.ok("read_span", {"path": top["path"], "line_start": top["line_start"]})
        records = wait_for_records(log, 2)
        assert [r["kind"] for r in records] == ["question", "opened"]
        assert {r["asker"] for r in records} == {"mcp"}
        assert records[1]["path"] == top["path"]
        report = session.ok("gaps")
        assert report["questions"] == 1 and report["opened"] == 1
    finally:
        session.close()


def test_a_log_inside_a_served_folder_is_refused_before_the_server_starts(tmp_path):
    root = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, root)
    for command in (["mcp"], ["serve", "--http", f"127.0.0.1:{free_port()}"]):
        done = subprocess.run(
            [sys.executable, "-m", "autodoc", "--db", str(tmp_path / "s.db"), *command,
             "--log-questions", str(root / "logs" / "q.jsonl"), str(root)],
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert "outside every vault" in done.stderr
    assert not (root / "logs").exists()
    # the editor's sidecar: a folder in the log's place is refused before the handshake
    done = subprocess.run(
        [sys.executable, "-m", "autodoc", "--db", str(tmp_path / "s.db"), "serve",
         "--log-questions", str(root)],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 2 and "takes a file" in done.stderr, done.stderr
    # a report over a log that is not there is no verdict (exit 2), not "nothing unanswered"
    for command in (["gaps"], ["check", str(root), "--gaps", "0"]):
        done = subprocess.run(
            [sys.executable, "-m", "autodoc", "--db", str(tmp_path / "s.db"), *command,
             "--log-questions", str(tmp_path / "typo.jsonl")],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 2 and "no question log at" in done.stderr, done.stderr


def _question(at: float, query: str, confidence: str = "low") -> dict:
    return {"v": 1, "kind": "question", "at": at, "workspace": "vault", "asker": "alice",
            "query": query, "confidence": confidence, "missing": [], "cosine": None,
            "model": "", "hits": [{"path": "notes/onboarding.md", "line": 1, "line_end": 9,
                                   "breadcrumb": "Onboarding", "relevance": 0.4}]}  # fmt: skip


def _autodoc(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autodoc", *args], capture_output=True,
                          text=True, timeout=120, cwd=cwd)  # fmt: skip


def test_gaps_reports_markdown_and_check_gates_on_new_groups(tmp_path):
    root = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, root)
    log = tmp_path / "q.jsonl"
    now = time.time()
    asked = ["how many days of annual leave do I get", "annual leave allowance per year",
             "expense claim form", "how do I claim expenses"]  # fmt: skip
    log.write_text("".join(json.dumps(_question(now + n, q)) + "\n" for n, q in enumerate(asked)))
    db = str(tmp_path / "s.db")
    report = _autodoc("--db", db, "gaps", "--log-questions", str(log), cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert report.stdout.startswith("# What the docs did not answer")
    assert "2 groups" in report.stdout and "asked 2 times" in report.stdout
    check = ["--db", db, "check", str(root), "--gaps", "0", "--log-questions", str(log)]
    passed = _autodoc(*check, cwd=tmp_path)
    assert passed.returncode == 0, passed.stdout + passed.stderr  # nothing new since the report
    with open(log, "a", encoding="utf-8") as f:
        f.write(json.dumps(_question(now + 10, "guest wifi password for visitors")) + "\n")
    failed = _autodoc(*check, cwd=tmp_path)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "new: guest wifi password for visitors" in failed.stdout
    assert _autodoc(*check[:-3], "1", *check[-2:], cwd=tmp_path).returncode == 0
    as_json = _autodoc("--db", db, "gaps", "--log-questions", str(log), "--json", "--no-record",
                       "--since", "1970-01-02", cwd=tmp_path)  # fmt: skip
    data = json.loads(as_json.stdout)
    assert data["new_groups"] == 1 and data["unanswered"] == 5


def _append_many(path: str, who: int, n: int) -> None:
    file = LogFile(Path(path), max_bytes=15_000)
    for i in range(n):
        file.append([{"v": 1, "kind": "question", "at": time.time(), "asker": f"w{who}",
                      "workspace": "v", "query": f"{who}-{i}-" + "y" * 200}])  # fmt: skip
    file.close()


def test_the_workers_of_a_server_append_whole_lines_through_its_rotations(tmp_path):
    path = tmp_path / "q.jsonl"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_append_many, args=(str(path), w, 60)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    records, unreadable = read_records(path)
    assert unreadable == 0
    assert len(log_files(path)) == KEEP  # it rotated three times while three processes wrote
    written = {f"{w}-{i}" for w in range(3) for i in range(60)}
    assert sorted(r["query"].rsplit("-", 1)[0] for r in records) == sorted(written)  # each once


WRITER = """
import sys, time
from pathlib import Path
from autodoc.gaps.question_log import LogFile
file = LogFile(Path(sys.argv[1]))
print("ready", flush=True)
n = 0
while True:
    file.append([{"v": 1, "kind": "question", "at": time.time(), "query": "q" * 3000 + str(n),
                  "workspace": "v", "asker": "a"}])
    n += 1
"""


def test_a_server_killed_mid_write_leaves_a_readable_log(tmp_path):
    path = tmp_path / "q.jsonl"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
    time.sleep(0.5)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    records, unreadable = read_records(path)
    assert len(records) > 10 and unreadable == 0
    with open(path, "ab") as f:  # a line cut short, as a machine that lost power may leave
        f.write(b'{"v": 1, "kind": "question", "at": 1, "que')
    after, unreadable = read_records(path)
    assert len(after) == len(records) and unreadable == 1
    file = LogFile(path)  # and the next server appends after it, whole
    file.append(
        [{"v": 1, "kind": "question", "at": 2.0, "query": "next", "workspace": "v", "asker": "a"}]
    )
    file.close()
    final, _ = read_records(path)
    assert final[-1]["query"] == "next"

"""A team's server under load: `autodoc serve --http --workers N` on loopback.

One subcommand per table of doc/benchmarks/server.md, each one run:

    closed     1, 8 and 50 clients back to back, --workers 1 and 2 in the same run
    open       arrivals on a fixed schedule (25/50/100/150 queries/s) over 50 connections;
               latency from each request's scheduled time, so a queue is not hidden
    memory     RSS and PSS of the parent and every worker, 1 vs 2 workers, after a load
    cpu        the workers' CPU per hybrid query at a steady rate, 1 and 2 workers
    freshness  50 edits under load: edit -> the hit in every worker's answers
    faults     20 worker kills and 3 writer kills during a 50-client load

    python bench/server_load.py closed --db STORE --root DOCS --golden bench/golden/cpp-docs.jsonl

Every loop is bounded in count and in time, and the server is only ever reached on loopback.
Queries: the golden set's, cycled (no answer is cached between requests: each query is embedded
and searched again).
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from autodoc.serve.http.tokens import process_alive

TOKEN = "bench-token-0123456789abcdef"
START_WAIT_S = 900  # the writer walks the root once at start (a first index takes longer)


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(p * len(xs)))], 1) if xs else float("nan")


class Server:
    """`autodoc serve --http 127.0.0.1:PORT --workers N ROOT` as a child process."""

    def __init__(self, db: str, root: Path, workers: int, extra_args: tuple[str, ...] = ()) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        env = dict(os.environ, AUTODOC_TOKEN=TOKEN)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "autodoc", "--db", db, "serve", "--http",
             f"127.0.0.1:{self.port}", "--workers", str(workers), *extra_args, str(root)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self.workers = workers

    def wait_ready(self, workspace: str) -> None:
        """Until every worker has answered and a writer holds the lease."""
        deadline = time.monotonic() + START_WAIT_S
        seen: dict[int, str] = {}
        client = Client(self.port)
        while time.monotonic() < deadline:
            try:
                status, answer, head = client.call("index.status", [workspace])
                if status == 200 and "result" in answer:
                    pid, role = head["autodoc-worker"].split()
                    seen[int(pid)] = role
                    alive = {p: r for p, r in seen.items() if process_alive(p)}
                    if len(alive) >= self.workers and "writer" in alive.values():
                        return
            except ConnectionError:
                pass
            time.sleep(0.1)
        raise SystemExit("the server did not become ready")

    def pids(self) -> list[int]:
        """The supervisor's worker processes (children that are not the resource tracker)."""
        out = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    stat = (entry / "stat").read_text()
                    cmd = (entry / "cmdline").read_bytes()
                except OSError:
                    continue
                ppid = int(stat.rsplit(")", 1)[1].split()[1])
                if ppid == self.proc.pid and b"spawn_main" in cmd:
                    out.append(int(entry.name))
        return sorted(out)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class Client:
    """Requests to the server (loopback only), a connection each, as `curl` or a script
    sends them: a kept-alive connection stays with the worker that accepted it, so a few
    long-lived clients would measure how the kernel spread their connections, not the server."""

    def __init__(self, port: int, timeout: float = 60) -> None:
        self.port = port
        self.timeout = timeout

    def call(self, method: str, params: list) -> tuple[int, dict, dict]:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json",
                   "Connection": "close"}  # fmt: skip
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        try:
            conn.request("POST", "/rpc", body, headers)
            r = conn.getresponse()
            data = r.read()
        except (OSError, http.client.HTTPException):
            raise ConnectionError("connection lost") from None
        finally:
            conn.close()
        head = {k.lower(): v for k, v in r.getheaders()}
        return r.status, json.loads(data or b"{}"), head

    def search(self, workspace: str, query: str) -> tuple[int, dict, dict]:
        return self.call("search.query", [workspace, query, {"limit": 10}])


def hits_of(answer: dict) -> list[tuple[str, int, int]]:
    return [(h["path"], h["line_start"], h["line_end"]) for h in answer["result"]["hits"]]


# -- closed loop -------------------------------------------------------------------------------


def closed_loop(port: int, workspace: str, queries: list[str], clients: int, each: int,
                limit_s: float) -> dict:  # fmt: skip
    """`clients` connections, each sending its `each` queries back to back (or until limit_s)."""
    deadline = time.monotonic() + limit_s

    def client(n: int) -> tuple[list[float], int]:
        c, out, errors = Client(port), [], 0
        for i in range(each):
            if time.monotonic() > deadline:
                break
            t = time.perf_counter()
            try:
                status, answer, _ = c.search(workspace, queries[(n * each + i) % len(queries)])
                errors += status != 200 or "error" in answer
            except ConnectionError:
                errors += 1
            out.append((time.perf_counter() - t) * 1000)
        return out, errors

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        results = list(pool.map(client, range(clients)))
    seconds = time.perf_counter() - started
    lat = [x for xs, _ in results for x in xs]
    return {"clients": clients, "queries": len(lat), "per_second": round(len(lat) / seconds, 1),
            "p50_ms": pct(lat, 0.5), "p95_ms": pct(lat, 0.95),
            "errors": sum(e for _, e in results)}  # fmt: skip


def warm(port: int, workspace: str, queries: list[str], workers: int) -> None:
    """Every query a few times over several connections: each worker's model, index pages."""
    closed_loop(port, workspace, queries, 4 * workers, len(queries), 300)


@contextlib.contextmanager
def running(args, queries: list[str], workers: int) -> Iterator[Server]:
    """The server with this many workers, every one answering, warmed; stopped after."""
    server = Server(args.db, args.root, workers)
    try:
        server.wait_ready(args.workspace)
        warm(server.port, args.workspace, queries, workers)
        yield server
    finally:
        server.stop()


def cmd_closed(args, queries: list[str]) -> dict:
    report = {}
    for workers in (1, 2):
        with running(args, queries, workers) as server:
            report[f"workers_{workers}"] = [
                closed_loop(server.port, args.workspace, queries, c, n, 120)
                for c, n in ((1, 200), (8, 60), (50, 16))
            ]
    one, two = report["workers_1"][-1]["per_second"], report["workers_2"][-1]["per_second"]
    report["ratio_50_clients"] = round(two / one, 2)
    return report


# -- open loop ---------------------------------------------------------------------------------


def open_loop(port: int, workspace: str, queries: list[str], rate: float, seconds: float,
              connections: int = 50) -> dict:  # fmt: skip
    """Requests arrive every 1/rate s whatever the answers do; each is taken by the next free
    of `connections`; its latency counts from when it was due (client-side waiting included)."""
    due: queue.Queue = queue.Queue()
    total = int(rate * seconds)
    lat: list[float] = []
    errors = [0]
    lock = threading.Lock()

    def connection() -> None:
        c = Client(port)
        while True:
            item = due.get()
            if item is None:
                return
            at, q = item
            try:
                status, answer, _ = c.search(workspace, q)
                bad = status != 200 or "error" in answer
            except ConnectionError:
                bad = True
            done = time.perf_counter()
            with lock:
                lat.append((done - at) * 1000)
                errors[0] += bad

    threads = [threading.Thread(target=connection, daemon=True) for _ in range(connections)]
    for t in threads:
        t.start()
    start = time.perf_counter() + 0.1
    for i in range(total):
        at = start + i / rate
        pause = at - time.perf_counter()
        if pause > 0:
            time.sleep(pause)
        due.put((at, queries[i % len(queries)]))
    for _ in threads:
        due.put(None)
    for t in threads:
        t.join(timeout=120)
    elapsed = time.perf_counter() - start
    return {"offered_per_s": rate, "queries": len(lat),
            "answered_per_s": round(len(lat) / elapsed, 1), "p50_ms": pct(lat, 0.5),
            "p95_ms": pct(lat, 0.95), "p99_ms": pct(lat, 0.99),
            "errors": errors[0]}  # fmt: skip


def cmd_open(args, queries: list[str]) -> dict:
    report = {}
    for workers in args.workers:
        with running(args, queries, workers) as server:
            report[f"workers_{workers}"] = [
                open_loop(server.port, args.workspace, queries, rate, args.seconds)
                for rate in args.rates
            ]
    return report


# -- CPU a query -------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used (its threads included), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cmd_cpu(args, queries: list[str]) -> dict:
    """The workers' CPU per hybrid query at a steady `--rate` (open loop, `--seconds`), with
    one worker and with two: a worker whose model threads spin between queries uses more than
    the model's work (issue 57)."""
    report = {}
    for workers in args.workers:
        with running(args, queries, workers) as server:
            pids = server.pids()
            before = {pid: cpu_seconds(pid) for pid in pids}
            load = open_loop(server.port, args.workspace, queries, args.rate, args.seconds)
            used = {pid: cpu_seconds(pid) - before[pid] for pid in pids}
            per_query = 1000 * sum(used.values()) / max(load["queries"], 1)
            report[f"workers_{workers}"] = {**load, "cpu_ms_per_query": round(per_query, 2)}
    return report


# -- memory ------------------------------------------------------------------------------------


def memory_of(pid: int) -> dict:
    """RSS (each page the process maps, shared or not) and PSS (shared pages split among the
    processes that map them) in MB."""
    rss = pss = 0
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Rss:"):
            rss = int(line.split()[1])
        elif line.startswith("Pss:"):
            pss = int(line.split()[1])
    return {"rss_mb": round(rss / 1024, 1), "pss_mb": round(pss / 1024, 1)}


def cmd_memory(args, queries: list[str]) -> dict:
    report = {}
    for workers in (1, 2):
        with running(args, queries, workers) as server:
            closed_loop(server.port, args.workspace, queries, 50, 16, 120)
            procs = {"parent": memory_of(server.proc.pid)}
            for n, pid in enumerate(server.pids()):
                procs[f"worker_{n + 1}"] = memory_of(pid)
            total = {k: round(sum(p[k] for p in procs.values()), 1) for k in ("rss_mb", "pss_mb")}
            report[f"workers_{workers}"] = {"processes": procs, "total": total}
    one, two = report["workers_1"]["total"], report["workers_2"]["total"]
    report["ratio"] = {k: round(two[k] / one[k], 2) for k in one}
    return report


# -- freshness ---------------------------------------------------------------------------------


class Background:
    """An open-loop load at `rate` queries/s until stopped (bounded by `limit_s`)."""

    def __init__(self, port: int, workspace: str, queries: list[str], rate: float,
                 limit_s: float) -> None:  # fmt: skip
        self.stop_at = time.monotonic() + limit_s
        self.args = (port, workspace, queries)
        self.rate = rate
        self.errors = 0
        self.answers = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        port, workspace, queries = self.args
        c, i = Client(port), 0
        while time.monotonic() < self.stop_at:
            t = time.perf_counter()
            try:
                status, answer, _ = c.search(workspace, queries[i % len(queries)])
                self.errors += status != 200 or "error" in answer
            except ConnectionError:
                self.errors += 1
            self.answers += 1
            i += 1
            time.sleep(max(0.0, 1 / self.rate - (time.perf_counter() - t)))

    def stop(self) -> None:
        self.stop_at = 0
        self.thread.join(timeout=60)


def seen_by_every_worker(port: int, workspace: str, word: str, workers: set[int],
                         since: float, limit_s: float) -> dict[int, float]:  # fmt: skip
    """Ask for `word` over 4 connections until every worker has answered with it: the time
    from `since` of each worker's first answer that holds it."""
    first: dict[int, float] = {}
    deadline = time.perf_counter() + limit_s
    lock = threading.Lock()

    def poll() -> None:
        c = Client(port)
        while time.perf_counter() < deadline:
            with lock:
                if workers <= set(first):
                    return
            try:
                status, answer, head = c.call(
                    "search.query", [workspace, word, {"limit": 3, "stages": ["lexical"]}]
                )
            except ConnectionError:
                continue
            pid = int(head.get("autodoc-worker", "0 x").split()[0])
            # the new word itself in a hit (a misspelt word may be corrected to the last edit's)
            found = status == 200 and any(word in json.dumps(h) for h in answer["result"]["hits"])
            if found:
                with lock:
                    first.setdefault(pid, time.perf_counter() - since)
            time.sleep(0.005)

    threads = [threading.Thread(target=poll, daemon=True) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=limit_s + 5)
    return first


def cmd_freshness(args, queries: list[str]) -> dict:
    root = Path(args.root)
    note = root / "fresh.md"
    server = Server(args.db, args.root, 2)
    times: list[float] = []
    misses = 0
    try:
        server.wait_ready(args.workspace)
        warm(server.port, args.workspace, queries, 2)
        workers = set(server.pids())
        load = Background(server.port, args.workspace, queries, args.rate, 1200)
        for n in range(args.edits):
            word = f"freshword{n}q{os.getpid()}"
            since = time.perf_counter()
            note.write_text(f"# Freshness probe {n}\n\nThe word {word} is new here.\n")
            first = seen_by_every_worker(server.port, args.workspace, word, workers, since, 10)
            if workers <= set(first):
                times.append(max(first[w] for w in workers) * 1000)
            else:
                misses += 1
            time.sleep(0.3)
        load.stop()
    finally:
        note.unlink(missing_ok=True)
        server.stop()
    return {"edits": args.edits, "background_per_s": args.rate, "background_errors": load.errors,
            "p50_ms": pct(times, 0.5), "p95_ms": pct(times, 0.95),
            "max_ms": round(max(times), 1) if times else None,
            "not_seen_in_10_s": misses}  # fmt: skip


# -- faults ------------------------------------------------------------------------------------


def cmd_faults(args, queries: list[str]) -> dict:
    from server_faults import run_faults  # beside this file

    return run_faults(args, queries, Server, Client, hits_of, warm)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("table", choices=["closed", "open", "memory", "cpu", "freshness", "faults"])
    p.add_argument("--db", required=True)
    p.add_argument("--root", required=True, type=Path)
    p.add_argument("--golden", required=True)
    p.add_argument("--workspace", default="cpp")
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="open: worker counts")
    p.add_argument("--seconds", type=float, default=20, help="open: seconds per rate")
    p.add_argument("--rates", type=float, nargs="+", default=[25, 50, 100, 150],
                   help="open: queries/s offered")  # fmt: skip
    p.add_argument("--rate", type=float, default=50,
                   help="freshness: background queries/s; cpu: queries/s offered")  # fmt: skip
    p.add_argument("--edits", type=int, default=50)
    p.add_argument("--worker-kills", type=int, default=20)
    p.add_argument("--writer-kills", type=int, default=3)
    p.add_argument("--json")
    args = p.parse_args()
    args.root = args.root.resolve()
    queries = [json.loads(ln)["query"] for ln in Path(args.golden).read_text().splitlines()]
    run = {"closed": cmd_closed, "open": cmd_open, "memory": cmd_memory, "cpu": cmd_cpu,
           "freshness": cmd_freshness, "faults": cmd_faults}[args.table]  # fmt: skip
    report = {"table": args.table, "queries_distinct": len(queries), **run(args, queries)}
    print(json.dumps(report, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

"""Throughput and latency of `autodoc serve --http` with 1, 8 and 50 concurrent clients, against
the stdio baseline measured in the same run: one editor's `autodoc serve` over stdio (LSP,
`autodoc/search.query`), sequential. Same store, same queries (the golden set's, cycled).

    python bench/server_load.py --db STORE --root ../shared/corpora/cpp-docs \\
        --golden bench/golden/cpp-docs.jsonl --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

TOKEN = "bench-token-0123456789abcdef"


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(p * len(xs)))], 1)


def summary(latencies: list[float], seconds: float) -> dict:
    return {
        "queries": len(latencies),
        "per_second": round(len(latencies) / seconds, 1),
        "p50_ms": round(statistics.median(latencies), 1),
        "p95_ms": pct(latencies, 0.95),
    }


class Stdio:
    """`autodoc serve` on pipes: the editor's path, one request at a time."""

    def __init__(self, db: str, root: Path) -> None:
        env = dict(os.environ, AUTODOC_DB=db)
        self.proc = subprocess.Popen([sys.executable, "-m", "autodoc", "serve", "--log-level",
                                      "ERROR"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env)  # fmt: skip
        self.buf = b""
        self.ask(1, "initialize", {"processId": None, "rootUri": root.as_uri(), "capabilities": {}})
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})

    def send(self, message: dict) -> None:
        body = json.dumps(message).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def ask(self, rid: int, method: str, params) -> dict:
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            while b"\r\n\r\n" not in self.buf:
                self.buf += os.read(self.proc.stdout.fileno(), 65536)
            head, rest = self.buf.split(b"\r\n\r\n", 1)
            n = next(int(v) for k, _, v in (ln.partition(b":") for ln in head.split(b"\r\n"))
                     if k.strip().lower() == b"content-length")  # fmt: skip
            while len(rest) < n:
                rest += os.read(self.proc.stdout.fileno(), 65536)
            message, self.buf = json.loads(rest[:n]), rest[n:]
            if message.get("id") == rid:
                return message

    def close(self) -> None:
        self.proc.kill()


def http_query(url: str, workspace: str, query: str) -> dict:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "search.query",
                       "params": [workspace, query, {"limit": 10}]}).encode()  # fmt: skip
    req = urllib.request.Request(url, data=body, method="POST", headers={
        "Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})  # fmt: skip
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())


def run_clients(url: str, workspace: str, queries: list[str], clients: int, each: int) -> dict:
    def client(n: int) -> tuple[list[float], int]:
        out, errors = [], 0
        for i in range(each):
            t = time.perf_counter()
            answer = http_query(url, workspace, queries[(n * each + i) % len(queries)])
            out.append((time.perf_counter() - t) * 1000)
            errors += "error" in answer
        return out, errors

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        results = list(pool.map(client, range(clients)))
    seconds = time.perf_counter() - started
    report = summary([x for lat, _ in results for x in lat], seconds)
    report["errors"] = sum(e for _, e in results)
    return report


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--db", required=True)
    p.add_argument("--root", required=True)
    p.add_argument("--golden", required=True)
    p.add_argument("--workspace", default="cpp")
    p.add_argument("--json")
    args = p.parse_args()
    root = Path(args.root).resolve()
    queries = [json.loads(ln)["query"] for ln in Path(args.golden).read_text().splitlines()]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, AUTODOC_TOKEN=TOKEN)
    server = subprocess.Popen([sys.executable, "-m", "autodoc", "--db", args.db, "serve",
                               "--http", f"127.0.0.1:{port}", str(root)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    url = f"http://127.0.0.1:{port}/rpc"
    try:
        for _ in range(600):
            try:
                if "result" in http_query(url, args.workspace, "warm up"):
                    break
            except OSError:
                pass
            time.sleep(0.5)
        for q in queries:  # warm: the model, the sign index, the page cache
            http_query(url, args.workspace, q)
        report = {"queries_distinct": len(queries)}
        for clients, each in ((1, 200), (8, 50), (50, 20)):
            report[f"http_{clients}_clients"] = run_clients(url, args.workspace, queries,
                                                            clients, each)  # fmt: skip
    finally:
        server.terminate()
        server.wait(timeout=30)
    stdio = Stdio(args.db, root)
    try:
        for i, q in enumerate(queries):
            stdio.ask(100 + i, "autodoc/search.query", [args.workspace, q, {"limit": 10}])
        latencies, started = [], time.perf_counter()
        for i in range(200):
            t = time.perf_counter()
            stdio.ask(1000 + i, "autodoc/search.query",
                      [args.workspace, queries[i % len(queries)], {"limit": 10}])  # fmt: skip
            latencies.append((time.perf_counter() - t) * 1000)
        report["stdio_1_client"] = summary(latencies, time.perf_counter() - started)
    finally:
        stdio.close()
    print(json.dumps(report, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

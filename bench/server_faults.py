"""`server_load.py faults`: workers and writers killed with SIGKILL under a 50-client load.

Every answer is checked against the answer the same query got on the quiet server before the
load (the store does not change during the run: a different list of hits is a wrong answer).
Errors are sorted into retryable (503 with Retry-After, or a connection closed without an
answer: the in-flight requests of a killed worker) and the rest. Recovery: from the kill to the
first answer from the replacement worker; for the writer, also to the moment another live
process holds the writer lease.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections import Counter
from pathlib import Path

from autodoc.serve.http.tokens import process_alive

CLIENTS = 50
RUN_LIMIT_S = 900  # the whole run, whatever happens
SETTLE_S = 2.0  # after a recovery, before the next kill


def lease_holder(db: str) -> int | None:
    """The pid the writer lease's file names, if that process is alive."""
    try:
        text = Path(db + ".lock").read_text()
    except OSError:
        return None
    words = text.split()
    if len(words) >= 2 and words[0] == "pid" and words[1].isdigit():
        pid = int(words[1])
        return pid if process_alive(pid) else None
    return None


class Load:
    """50 clients in a closed loop; every answer checked and its worker noted."""

    def __init__(self, port, workspace, queries, reference, client_cls, hits_of) -> None:
        self.args = (port, workspace, queries, reference, client_cls, hits_of)
        self.counts: Counter = Counter()
        self.first_seen: dict[int, float] = {}  # worker pid -> first answer (monotonic)
        self.wrong: list[dict] = []  # the first wrong answers, whole enough to tell why
        self.started = time.monotonic()
        self.lock = threading.Lock()
        self.stop_at = time.monotonic() + RUN_LIMIT_S
        self.threads = [threading.Thread(target=self._client, args=(n,), daemon=True)
                        for n in range(CLIENTS)]  # fmt: skip
        for t in self.threads:
            t.start()

    def _client(self, n: int) -> None:
        port, workspace, queries, reference, client_cls, hits_of = self.args
        c, i = client_cls(port), n
        while time.monotonic() < self.stop_at:
            q = queries[i % len(queries)]
            i += 1
            try:
                status, answer, head = c.search(workspace, q)
            except ConnectionError:
                self._count("retryable: connection closed without an answer")
                continue
            if status == 503 and "retry-after" in head:
                self._count("retryable: 503 with Retry-After")
                continue
            if status != 200 or "error" in answer:
                self._count(f"other error: HTTP {status} {answer.get('error', {}).get('code')}")
                continue
            pid = int(head["autodoc-worker"].split()[0])
            with self.lock:
                self.first_seen.setdefault(pid, time.monotonic())
            right = hits_of(answer) == reference[q]
            self._count("right" if right else "wrong")
            if not right and len(self.wrong) < 20:
                self._note_wrong(q, head, answer["result"], reference[q], hits_of(answer))

    def _note_wrong(self, q: str, head: dict, result: dict, want: list, got: list) -> None:
        example = {
            "query": q,
            "worker": head["autodoc-worker"],
            "epoch": head.get("autodoc-epoch"),
            "performed": result["stages"]["performed"],
            "semantic": result["semantic"],
            "got": got,
            "want": want,
            "at": round(time.monotonic() - self.started, 2),
        }
        with self.lock:
            self.wrong.append(example)  # fmt: skip

    def _count(self, kind: str) -> None:
        with self.lock:
            self.counts[kind] += 1

    def new_worker_after(self, t: float, known: set[int], limit_s: float) -> float | None:
        """Seconds from t to the first answer of a worker not in `known`."""
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            with self.lock:
                new = [s for pid, s in self.first_seen.items() if pid not in known]
            if new:
                return min(new) - t
            time.sleep(0.01)
        return None

    def stop(self) -> None:
        self.stop_at = 0
        for t in self.threads:
            t.join(timeout=120)


def _kill_one(load: Load, server, db: str, writer: bool) -> dict:
    workers = server.pids()
    holder = lease_holder(db)
    victim = holder if writer else random.choice([p for p in workers if p != holder])
    assert victim is not None, "no writer to kill"
    with load.lock:
        known = set(load.first_seen) | set(workers)
    t = time.monotonic()
    os.kill(victim, signal.SIGKILL)
    out: dict = {"victim": "writer" if writer else "reader", "at": round(t - load.started, 2)}
    if writer:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            now = lease_holder(db)
            if now is not None and now != victim:
                out["lease_taken_s"] = round(time.monotonic() - t, 2)
                break
            time.sleep(0.01)
    back = load.new_worker_after(t, known, 60)
    out["replacement_answers_s"] = round(back, 2) if back is not None else None
    return out


def run_faults(args, queries, server_cls, client_cls, hits_of, warm) -> dict:
    random.seed(7)
    server = server_cls(args.db, args.root, 2)
    events: list[dict] = []
    try:
        server.wait_ready(args.workspace)
        warm(server.port, args.workspace, queries, 2)
        c = client_cls(server.port)
        reference = {q: hits_of(c.search(args.workspace, q)[1]) for q in queries}
        load = Load(server.port, args.workspace, queries, reference, client_cls, hits_of)
        time.sleep(SETTLE_S)
        for n in range(args.worker_kills + args.writer_kills):
            events.append(_kill_one(load, server, args.db, writer=n >= args.worker_kills))
            time.sleep(SETTLE_S)
        time.sleep(SETTLE_S)
        load.stop()
    finally:
        server.stop()

    def summary(kind: str, key: str) -> dict:
        xs = sorted(e[key] for e in events if e["victim"] == kind and e.get(key) is not None)
        return {"n": len(xs), "median_s": xs[len(xs) // 2] if xs else None,
                "max_s": xs[-1] if xs else None}  # fmt: skip

    return {
        "clients": CLIENTS,
        "answers": dict(load.counts),
        "reader_replaced": summary("reader", "replacement_answers_s"),
        "writer_replaced": summary("writer", "replacement_answers_s"),
        "writer_lease_taken": summary("writer", "lease_taken_s"),
        "events": events,
        "wrong_examples": load.wrong,
    }

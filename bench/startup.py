"""Start-up, measured as whole processes: the command line and the servers (issue 45).

Two trees of the sidecar run alternately on one interpreter and one virtual environment
(`PYTHONPATH=TREE/sidecar python -m autodoc ...`), a warm-up run of each first, then `--rounds`
rounds; the table gives each tree's median wall time (from the parent's clock, process start to
exit, or to the answer for a server) and peak memory (the child's `ru_maxrss`, what
`/usr/bin/time -v` reports as its maximum resident set size). The children run without
PYTHONDONTWRITEBYTECODE, so the warm-up writes each tree's bytecode, as `pip install` does.

    python bench/startup.py --before /tmp/before45 [--after .] [--rounds 7] \\
        [--cpp-db STORE --cpp-workspace cpp] > table.md

The sample vault is copied to a work folder and indexed by each tree into a store of its own
(a store as that tree's `autodoc index` leaves it); cpp-docs is searched in one store both trees
read (`--cpp-db`, indexed beforehand). The servers are measured on the vault: `autodoc mcp`
(initialize, tools/list, then a search tool call) and `autodoc serve` (initialize, then
`autodoc/search.query`), each sent as soon as the previous answer came. A search's hits are
compared between the trees in the warm-up: the table says whether they are the same.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from queue import Queue
from typing import Any

from autodoc.serve.early_handshake import LspWire, McpWire, Wire

REPO = Path(__file__).resolve().parents[1]
VAULT = REPO / "examples" / "vault"
WAIT_S = 120.0

# (case, args after --db STORE, working folder: "vault" or None); `{cpp}` is the workspace.
VAULT_CASES = [
    ("`autodoc --version`", ["--version"]),
    ("`autodoc find reclaimBatch`", ["find", "reclaimBatch"]),
    ("`autodoc search Q --stages lexical`", ["search", "lease recovery", "--stages", "lexical"]),
    ("`autodoc search Q` (hybrid)", ["search", "why did we pick sqlite"]),
    ("`autodoc --call doc.read`", ["--call", "doc.read", '["vault", "README.md", 1, 20]']),
]
CPP_CASES = [
    ("cpp-docs: `autodoc find vector`", ["find", "vector", "-w", "{cpp}"]),
    ("cpp-docs: `autodoc search Q --stages lexical`",
     ["search", "vector reserve capacity", "-w", "{cpp}", "--stages", "lexical"]),
    ("cpp-docs: `autodoc search Q` (hybrid)",
     ["search", "how do I reserve capacity in a vector", "-w", "{cpp}"]),
]  # fmt: skip


def child_env(tree: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("AUTODOC_") or k == "AUTODOC_CACHE"}  # fmt: skip
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = str(tree / "sidecar")
    return env


def waited(proc: subprocess.Popen) -> int:
    """Wait for the child; its peak resident memory in KB."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_maxrss


def run_cli(tree: Path, args: list[str], cwd: Path) -> tuple[float, float, str]:
    """(wall seconds, peak MB, stdout) of one `autodoc ARGS` process."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "autodoc", *args],
            cwd=cwd, env=child_env(tree), stdin=subprocess.DEVNULL, stdout=out, stderr=err,
        )  # fmt: skip
        peak = waited(proc)
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"{tree}: autodoc {args} exited {proc.returncode}: {err.read()!r}")
        return wall, peak / 1024, out.read().decode()


class Reader:
    """A child's stdout read on a thread, one message at a time, as `wire` frames them (the
    sidecar's own framing: `early_handshake.LspWire`, `McpWire`)."""

    def __init__(self, stream, wire: Wire) -> None:
        self.queue: Queue[bytes] = Queue()
        threading.Thread(target=self._read, args=(stream, wire), daemon=True).start()

    def _read(self, stream, wire: Wire) -> None:
        while (body := wire.read(stream)[1]) is not None:
            self.queue.put(body)

    def answer(self, rid: int) -> dict[str, Any]:
        while True:
            message = json.loads(self.queue.get(timeout=WAIT_S))
            if message.get("id") == rid:
                return message


def run_server(tree: Path, db: Path, vault: Path, kind: str) -> tuple[dict[str, float], float, str]:
    """({step: seconds from process start to its answer}, peak MB, the search's answer) of one
    server process: `mcp` or `lsp`."""
    if kind == "mcp":
        args = ["--db", str(db), "mcp", str(vault), "--no-watch"]
    else:
        args = ["--db", str(db), "serve"]
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "autodoc", *args], cwd=vault, env=child_env(tree),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.stdin is not None
    wire = LspWire() if kind == "lsp" else McpWire()
    reader = Reader(proc.stdout, wire)

    def send(message: dict[str, Any]) -> None:
        proc.stdin.write(wire.frame(json.dumps(message).encode()))
        proc.stdin.flush()

    def step(name: str, message: dict[str, Any]) -> dict[str, Any]:
        send(message)
        answer = reader.answer(message["id"])
        steps[name] = time.perf_counter() - started
        return answer

    steps: dict[str, float] = {}
    if kind == "mcp":
        client = {"name": "bench", "version": "0"}
        params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}
        step("initialize", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        step("tools/list", {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        call = {"name": "search", "arguments": {"query": "why did we pick sqlite"}}
        got = step("first search", {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                    "params": call})  # fmt: skip
        shown = json.dumps([h["path"] for h in got["result"]["structuredContent"]["hits"]])
        proc.stdin.close()
    else:
        params = {"processId": None, "rootUri": vault.as_uri(), "capabilities": {}}
        step("initialize", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
        send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        query = ["vault", "why did we pick sqlite", {"limit": 5}]
        got = step("first search", {"jsonrpc": "2.0", "id": 2, "method": "autodoc/search.query",
                                    "params": query})  # fmt: skip
        shown = json.dumps([h["path"] for h in got["result"]["hits"]])
        send({"jsonrpc": "2.0", "id": 3, "method": "shutdown"})
        reader.answer(3)
        send({"jsonrpc": "2.0", "method": "exit"})
        proc.stdin.close()
    return steps, waited(proc) / 1024, shown


def median(values: list[float]) -> float:
    return statistics.median(values)


class Table:
    def __init__(self) -> None:
        self.rows: list[str] = []

    def add(self, case: str, before: list[tuple[float, float]], after: list[tuple[float, float]],
            same: str) -> None:  # fmt: skip
        wb, wa = median([w for w, _ in before]), median([w for w, _ in after])
        mb, ma = median([m for _, m in before]), median([m for _, m in after])
        self.rows.append(
            f"| {case} | {wb:.3f} | {wa:.3f} | {wa / wb:.2f}× | {mb:.0f} | {ma:.0f} | {same} |"
        )
        print(self.rows[-1], file=sys.stderr, flush=True)

    def markdown(self) -> str:
        head = (
            "| case | before: wall (s) | after: wall (s) | after / before | before: peak (MB)"
            " | after: peak (MB) | same answer |\n|---|---:|---:|---:|---:|---:|---|\n"
        )
        return head + "\n".join(self.rows) + "\n"


def alternate(
    rounds: int, runs: dict[str, Callable[[], tuple[Any, float, str]]]
) -> dict[str, list[tuple[Any, float, str]]]:
    """A warm-up of each, then `rounds` rounds, the trees taking turns; the warm-up's result
    first in each list."""
    results: dict[str, list[tuple[Any, float, str]]] = {name: [] for name in runs}
    for _ in range(rounds + 1):
        for name, run in runs.items():
            results[name].append(run())
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, required=True, help="the tree before (a worktree)")
    ap.add_argument("--after", type=Path, default=REPO, help="the tree after (default: this)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--cpp-db", type=Path, help="a store holding cpp-docs, indexed")
    ap.add_argument("--cpp-workspace", default="cpp")
    ap.add_argument("--skip", default="", help="comma-separated: vault,cpp,mcp,lsp")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    for tree in trees.values():
        assert (tree / "sidecar" / "autodoc" / "__init__.py").is_file(), tree
    work = Path(tempfile.mkdtemp(prefix="autodoc-startup-"))
    vault = work / "vault"
    shutil.copytree(VAULT, vault)
    stores = {name: work / name / "autodoc.db" for name in trees}
    for name, tree in trees.items():  # each tree's own store of the vault, as it indexes it
        run_cli(tree, ["--db", str(stores[name]), "index", str(vault)], vault)
    table = Table()

    def cli(case: str, argv: list[str], db: dict[str, Path]) -> None:
        runs = {n: (lambda n=n: run_cli(trees[n], ["--db", str(db[n]), *argv], vault))
                for n in trees}  # fmt: skip
        got = alternate(args.rounds, runs)
        same = "yes" if got["before"][0][2] == got["after"][0][2] else "**no**"
        table.add(case, [(w, m) for w, m, _ in got["before"][1:]],
                  [(w, m) for w, m, _ in got["after"][1:]], same)  # fmt: skip

    if "vault" not in skip:
        for case, argv in VAULT_CASES:
            cli(f"vault: {case}", argv, stores)
    if args.cpp_db is not None and "cpp" not in skip:
        for case, argv in CPP_CASES:
            argv = [a.replace("{cpp}", args.cpp_workspace) for a in argv]
            cli(case, argv, dict.fromkeys(trees, args.cpp_db))
    for kind, label in (("mcp", "`autodoc mcp`"), ("lsp", "`autodoc serve`")):
        if kind in skip:
            continue
        runs = {n: (lambda n=n, k=kind: run_server(trees[n], stores[n], vault, k)) for n in trees}
        got = alternate(args.rounds, runs)
        same = "yes" if got["before"][0][2] == got["after"][0][2] else "**no**"
        for step in got["after"][0][0]:
            table.add(f"{label}: start to {step}",
                      [(s[step], m) for s, m, _ in got["before"][1:]],
                      [(s[step], m) for s, m, _ in got["after"][1:]],
                      same if step == "first search" else "")  # fmt: skip
    shutil.rmtree(work, ignore_errors=True)
    print(table.markdown())


if __name__ == "__main__":
    main()

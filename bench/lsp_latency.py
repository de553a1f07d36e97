"""`autodoc serve` freshness and footprint, measured as a client sees them.

- save -> searchable: append a unique word to a file, send `textDocument/didSave`, poll
  `autodoc/search.query` until the file is the hit; N edits, median and p95.
- watcher -> searchable: the same edit without didSave (another tool wrote the file).
- baseline in the same run: a whole-folder `autodoc/index.run` after one edit (what a client
  without targeted refresh would need), median of a few runs.
- idle memory: the server's RSS once indexed and quiet; beside it the same server on the
  8-file example vault (the fixed cost of Python, pygls, onnxruntime and the engine).

    python bench/lsp_latency.py --vault ../shared/corpora/cpp-docs --edits 50
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pytest_lsp import client_capabilities, make_test_lsp_client

REPO = Path(__file__).resolve().parents[1]
POLL_S = 0.005


def plain(value):
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Session:
    def __init__(self, vault: Path, db: Path, embedding: str) -> None:
        self.vault, self.db, self.embedding = vault, db, embedding
        self.client = make_test_lsp_client()
        self.workspace = ""

    async def start(self) -> dict:
        env = dict(os.environ, AUTODOC_DB=str(self.db))
        await self.client.start_io(sys.executable, "-m", "autodoc", "serve", env=env)
        ready = asyncio.ensure_future(self.client.wait_for_notification("autodoc/indexReady"))
        t0 = time.perf_counter()
        await self.client.initialize_session(
            types.InitializeParams(
                capabilities=client_capabilities("neovim"),
                workspace_folders=[types.WorkspaceFolder(uri=self.vault.as_uri(), name="v")],
                initialization_options={"embedding": {"provider": self.embedding}},
            )
        )
        info = plain(await asyncio.wait_for(ready, 3600))
        info["seconds"] = time.perf_counter() - t0
        self.workspace = info["workspaces"][0]["name"]
        return info

    @property
    def pid(self) -> int:
        return self.client._server.pid

    async def call(self, method: str, *params):
        request = self.client.protocol.send_request_async(f"autodoc/{method}", list(params))
        return plain(await request)

    async def hit_paths(self, word: str) -> list[str]:
        answer = await self.call(
            "search.query", self.workspace, word, {"stages": ["lexical"], "limit": 5}
        )
        return [h["path"] for h in answer["hits"]]

    async def wait_for(self, word: str, rel: str, timeout: float = 30.0) -> float:
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < timeout:
            if rel in await self.hit_paths(word):
                return time.perf_counter() - t0
            await asyncio.sleep(POLL_S)
        raise TimeoutError(f"{word} never found in {rel}")

    async def stop(self) -> None:
        await self.client.shutdown_session()
        await self.client.stop()


def pick_files(vault: Path, n: int) -> list[Path]:
    files = sorted(p for p in vault.rglob("*.md") if not any(s.startswith(".") for s in p.parts))
    step = max(1, len(files) // n)
    return files[::step][:n]


def edit(path: Path, word: str) -> None:
    with path.open("a", encoding="utf-8") as fh:
        fh.write(f"\n\nEdited for the benchmark: {word}.\n")


async def measure(args) -> dict:
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    vault = work / Path(args.vault).name
    if not vault.exists():
        shutil.copytree(args.vault, vault)
    db = Path(args.db) if args.db else work / "store" / "autodoc.db"
    session = Session(vault, db, args.embedding)
    info = await session.start()
    out: dict = {"vault": str(args.vault), "documents": info["workspaces"][0]["documents"]}
    out["initial_index_s"] = round(info["seconds"], 2)
    if args.embedding != "none":  # measure a quiet server: wait for the vectors first
        t0 = time.perf_counter()
        while (await session.call("index.status", session.workspace))["semantic"] != "ready":
            await asyncio.sleep(1.0)
        out["embedding_fill_s"] = round(time.perf_counter() - t0, 1)
        status = await session.call("index.status", session.workspace)
        out["chunks"] = status["chunks"]
    files = pick_files(vault, args.edits)
    tag = f"{int(time.time()) % 100000}"

    save_ms = []
    for i, path in enumerate(files):
        word = f"zqsave{tag}x{i}"
        edit(path, word)
        rel = path.relative_to(vault).as_posix()
        session.client.text_document_did_save(
            types.DidSaveTextDocumentParams(
                text_document=types.TextDocumentIdentifier(path.as_uri())
            )
        )
        save_ms.append(1000 * await session.wait_for(word, rel))
    watch_ms = []
    for i, path in enumerate(files[: args.watch_edits]):
        word = f"zqwatch{tag}x{i}"
        edit(path, word)
        watch_ms.append(1000 * await session.wait_for(word, path.relative_to(vault).as_posix()))
        await asyncio.sleep(0.3)  # let the watcher's events for this edit settle first
    rescan_ms = []
    for i, path in enumerate(files[: args.rescans]):
        word = f"zqscan{tag}x{i}"
        edit(path, word)
        t0 = time.perf_counter()
        await session.call("index.run", session.workspace)
        rescan_ms.append(1000 * (time.perf_counter() - t0))
    await asyncio.sleep(3.0)  # the watcher's copies of these edits, then quiet
    idle = rss_mb(session.pid)
    await session.stop()

    small_vault = work / "example-vault"
    if not small_vault.exists():
        shutil.copytree(REPO / "examples" / "vault", small_vault)
    small = Session(small_vault, work / "store-small" / "autodoc.db", args.embedding)
    await small.start()
    await small.hit_paths("sqlite")
    await asyncio.sleep(3.0)
    idle_small = rss_mb(small.pid)
    await small.stop()

    def stats(xs):
        xs = sorted(xs)
        return {
            "n": len(xs),
            "p50_ms": round(statistics.median(xs), 1),
            "p95_ms": round(xs[min(len(xs) - 1, int(0.95 * len(xs)))], 1),
        }

    out["save_to_searchable"] = stats(save_ms)
    out["watcher_to_searchable"] = stats(watch_ms)
    out["full_rescan_index_run"] = stats(rescan_ms)
    out["ratio_save_vs_rescan_p50"] = round(
        out["save_to_searchable"]["p50_ms"] / out["full_rescan_index_run"]["p50_ms"], 3
    )
    out["idle_rss_mb"] = round(idle, 1)
    out["idle_rss_mb_example_vault"] = round(idle_small, 1)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--vault", default=str(REPO.parent / "shared" / "corpora" / "cpp-docs"))
    p.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "autodoc-bench-lsp"))
    p.add_argument("--db", help="reuse this store (default: one under --work)")
    p.add_argument("--embedding", default="none", help="none | bundled")
    p.add_argument("--edits", type=int, default=50)
    p.add_argument("--watch-edits", type=int, default=20)
    p.add_argument("--rescans", type=int, default=5)
    args = p.parse_args()
    print(json.dumps(asyncio.run(measure(args)), indent=2))


if __name__ == "__main__":
    main()

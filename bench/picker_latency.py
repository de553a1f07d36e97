"""Keystroke-to-results latency of the Neovim picker, measured inside Neovim (vim.uv.hrtime).

A headless Neovim (the plugin on its runtimepath) runs `:AutodocSearch` against the real
sidecar; each query is typed one character at a time (`--gap-ms` apart, so the debounce and the
cancel-on-keystroke path run as they do for a person) and the picker records, per answer, the
time from the keystroke that led to it to the list being rendered. Reported: p50/p95 over the
queries of the final keystroke's latency, beside the sidecar's own `took_ms` for the same
answers (the baseline in the same run: what is left is debounce, RPC and rendering).

    python bench/picker_latency.py --vault ../shared/corpora/cpp-docs --queries 50
        [--debounce-ms 60,0] [--rounds 2] [--concurrent-index FOLDER]

`--debounce-ms A,B,...` measures each setting in the same run, alternating round by round (each
round a fresh Neovim and sidecar per setting, the same queries), and reports each beside the
first. `--concurrent-index FOLDER` keeps another process indexing FOLDER into its own store
(lexically, restarted when it finishes) for the whole run: the picker on a busy machine.

`--screenshot FILE` instead types one query and writes the composed screen as text.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pynvim

REPO = Path(__file__).resolve().parents[1]


def screen_text(nvim, width: int, height: int) -> str:
    """The composed screen (floating windows included), read back with screenstring()."""
    return nvim.exec_lua(
        """
        local w, h = ...
        vim.cmd("redraw!")
        local rows = {}
        for r = 1, h do
          local cells = {}
          for c = 1, w do
            cells[#cells + 1] = vim.fn.screenstring(r, c)
          end
          rows[#rows + 1] = (table.concat(cells):gsub("%s+$", ""))
        end
        return table.concat(rows, "\\n")
        """,
        width,
        height,
    )


def start_nvim(vault: Path, db: Path, server: dict, debounce_ms: int | None = None):
    os.environ["AUTODOC_DB"] = str(db)
    cwd = os.getcwd()
    os.chdir(vault)
    try:
        nvim = pynvim.attach(
            "child",
            argv=[shutil.which("nvim") or "nvim", "--embed", "--headless", "--clean",
                  "--cmd", f"set rtp^={REPO}", "--cmd", "runtime plugin/autodoc.lua"],
        )  # fmt: skip
    finally:
        os.chdir(cwd)
    extra = {} if debounce_ms is None else {"debounce_ms": debounce_ms}
    nvim.exec_lua(
        "local cmd, server, extra = ...; require('autodoc').setup(vim.tbl_extend('force',"
        " {cmd = cmd, server = server, progress = false}, extra))",
        [sys.executable, "-m", "autodoc", "serve"],
        server,
        extra,
    )
    return nvim


def state(nvim):
    return nvim.exec_lua("return require('autodoc.picker').state()")


def wait(predicate, timeout: float = 120.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.01)
    raise TimeoutError("picker did not answer")


def queries_from(vault: Path, n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    files = sorted(vault.rglob("*.md"))
    out: list[str] = []
    while len(out) < n:
        text = rng.choice(files).read_text(encoding="utf-8", errors="replace")
        heads = [h for h in re.findall(r"^#{1,4} (.+)$", text, re.M) if len(h.split()) >= 2]
        if not heads:
            continue
        words = [w for w in re.findall(r"[A-Za-z_][\w:]+", rng.choice(heads)) if len(w) > 2]
        if len(words) >= 2:
            out.append(" ".join(words[: rng.choice((2, 3))]).lower())
    return out


def type_queries(args, queries: list[str], debounce_ms: int | None) -> tuple[list, list, int]:
    """One Neovim and sidecar: each query typed a character at a time; per query, its final
    keystroke's latency and the sidecar's took_ms; and the debounce it ran with."""
    nvim = start_nvim(Path(args.vault), Path(args.db), {"embedding": args.embedding}, debounce_ms)
    nvim.command("AutodocSearch")
    wait(lambda: (s := state(nvim)) and s.get("workspace"))
    finals, took = [], []
    for query in queries:
        nvim.input("<C-u>")
        for ch in query:
            nvim.input(ch)
            time.sleep(args.gap_ms / 1000)
        answer = wait(
            lambda q=query: (
                (s := state(nvim)) and s.get("answer") and s["answer"]["query"] == q and s["answer"]
            )
        )
        finals.append(nvim.exec_lua("local l = require('autodoc.picker').latencies; return l[#l]"))
        took.append(answer["took_ms"])
    debounce = nvim.exec_lua("return require('autodoc.config').options.debounce_ms")
    nvim.close()
    return finals, took, debounce


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(p * len(xs)))], 1)


def summary(finals: list[float], took: list[float], debounce: int) -> dict:
    return {
        "queries": len(finals),
        "debounce_ms": debounce,
        "keystroke_to_results_ms": {"p50": round(statistics.median(finals), 1),
                                    "p95": pct(finals, 0.95)},
        "sidecar_took_ms": {"p50": round(statistics.median(took), 1), "p95": pct(took, 0.95)},
    }  # fmt: skip


def measure(args) -> dict:
    queries = queries_from(Path(args.vault), args.queries, args.seed)
    settings: list[int | None] = (
        [int(d) for d in args.debounce_ms.split(",")] if args.debounce_ms else [None]
    )
    runs: dict[int, tuple[list, list, int]] = {i: ([], [], 0) for i in range(len(settings))}
    busy = ConcurrentIndex(Path(args.concurrent_index)) if args.concurrent_index else None
    try:
        for _ in range(args.rounds):
            for i, setting in enumerate(settings):
                finals, took, debounce = type_queries(args, queries, setting)
                runs[i][0].extend(finals)
                runs[i][1].extend(took)
                runs[i] = (runs[i][0], runs[i][1], debounce)
    finally:
        if busy is not None:
            busy.stop()
    out = {
        "vault": args.vault,
        "gap_ms": args.gap_ms,
        "rounds": args.rounds,
        "concurrent_index": args.concurrent_index,
        "settings": [summary(*runs[i]) for i in range(len(settings))],
    }
    first = out["settings"][0]["keystroke_to_results_ms"]["p50"]
    for row in out["settings"]:
        row["p50_vs_first"] = round(row["keystroke_to_results_ms"]["p50"] / first, 2)
    return out


class ConcurrentIndex:
    """Another process indexing a folder into its own throwaway store, lexically, started
    again each time it finishes, until stopped: a machine busy with an index."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.tmp = folder, tempfile.mkdtemp(prefix="autodoc-busy-")
        self.stopped = False
        self.proc: subprocess.Popen | None = None
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        n = 0
        while not self.stopped:
            n += 1
            db = Path(self.tmp) / f"busy{n}.db"
            cfg = json.dumps(["busy", {"embedding": "none"}])
            cmd = [sys.executable, "-m", "autodoc", "--db", str(db)]
            add = json.dumps(["busy", str(self.folder)])
            subprocess.run([*cmd, "--call", "workspace.add", add], capture_output=True)
            subprocess.run([*cmd, "--call", "workspace.configure", cfg], capture_output=True)
            quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
            self.proc = subprocess.Popen([*cmd, "--call", "index.run", '["busy"]'], **quiet)
            self.proc.wait()
            shutil.rmtree(self.tmp, ignore_errors=True)
            os.makedirs(self.tmp, exist_ok=True)

    def stop(self) -> None:
        self.stopped = True
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
        self.thread.join(timeout=30)
        shutil.rmtree(self.tmp, ignore_errors=True)


def related_screenshot(args) -> None:
    """`:AutodocRelated` at PATH:LINE of the vault, once every chunk has its vector."""
    nvim = start_nvim(Path(args.vault), Path(args.db), {"embedding": args.embedding})
    nvim.command(f"set columns={args.width} lines={args.height}")
    path, line = args.related.rsplit(":", 1)
    nvim.command(f"edit {Path(args.vault) / path}")
    nvim.command(line)

    def ready():
        nvim.command("AutodocRelated")
        time.sleep(0.5)
        lines = nvim.exec_lua(
            "local s = require('autodoc.picker').state(); return s and"
            " vim.api.nvim_buf_get_lines(s.bufs.stages, 0, 1, false)[1] or ''"
        )
        if "semantic ready" in lines:
            return True
        nvim.input("<Esc>")
        time.sleep(1)
        return False

    wait(ready, timeout=120)
    nvim.input("<C-n>")
    time.sleep(0.5)
    Path(args.screenshot).write_text(screen_text(nvim, args.width, args.height) + "\n")
    nvim.close()


def screenshot(args) -> None:
    if args.related:
        return related_screenshot(args)
    nvim = start_nvim(Path(args.vault), Path(args.db), {"embedding": args.embedding})
    nvim.command(f"set columns={args.width} lines={args.height}")
    nvim.command("AutodocSearch")
    wait(lambda: (s := state(nvim)) and s.get("workspace"))
    nvim.input(args.query)
    wait(
        lambda: (
            (s := state(nvim))
            and s.get("answer")
            and s["answer"]["query"] == args.query
            and (args.embedding == "none" or s["answer"]["semantic"] == "ready")
        )
    )
    nvim.input("<C-n>")
    time.sleep(0.5)
    text = screen_text(nvim, args.width, args.height)
    Path(args.screenshot).write_text(text + "\n", encoding="utf-8")
    nvim.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--vault", default=str(REPO.parent / "shared" / "corpora" / "cpp-docs"))
    p.add_argument("--db", default=os.path.join(tempfile.gettempdir(), "autodoc-picker", "a.db"))
    p.add_argument("--embedding", default="none")
    p.add_argument("--queries", type=int, default=50)
    p.add_argument("--gap-ms", type=int, default=100, help="between typed characters")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--debounce-ms", help="settings to compare in one run, e.g. 60,0")
    p.add_argument("--rounds", type=int, default=1, help="alternations of the settings")
    p.add_argument("--concurrent-index", metavar="FOLDER", help="keep indexing FOLDER meanwhile")
    p.add_argument("--screenshot", help="write the picker's screen as text here instead")
    p.add_argument("--query", default="why did we pick sqlite")
    p.add_argument("--related", metavar="PATH:LINE", help="--screenshot of :AutodocRelated there")
    p.add_argument("--width", type=int, default=120)
    p.add_argument("--height", type=int, default=32)
    args = p.parse_args()
    if args.screenshot:
        screenshot(args)
        return
    print(json.dumps(measure(args), indent=2))


if __name__ == "__main__":
    main()

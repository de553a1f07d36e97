"""Link completion latency as an editor sees it: textDocument/completion round trips to a real
`autodoc serve` over stdio (plain JSON-RPC framing, Neovim's client capabilities from
pytest-lsp), per keystroke of links typed into open documents, per context, p50 and p95.

For each of `--docs` documents drawn with `--seed` (each opened with didOpen, never saved), at
the end of a line of its prose the script types, one character per didChange (an incremental
edit, as editors send them) and a completion request per keystroke from the opener's end on,
and after each trigger character inside the opener (the first `[` of `[[`: the server starts
embedding the paragraph then), `--pause-ms` apart (default 0: as fast as the server answers):

- `[[` then up to 6 characters of another note's title (notes: the first 0-2 characters are
  ordered by the paragraph's meaning, one embedded query per new paragraph; the rest by names);
- `[[stem#` then up to 3 characters of one of that note's headings (its headings);
- `[[#` then up to 3 characters of one of the document's own headings (the editor's text);
- `[[stem#^` (block ids, where the note has any);
- `](` then up to 12 characters of the relative path to another note (paths);
- `](path#` then up to 3 characters of one of its headings' slugs (anchors);
- ` #` then up to 3 characters of one of the vault's tags (tags).

Each link is removed again before the next. The server runs on a store that already holds the
workspace (`--db`: a copy is fine; the folder is re-walked, nothing re-read). Prints the table
and, with `--json`, every timing.

    python bench/completion_latency.py --vault ../shared/corpora/cpp-docs --db STORE/autodoc.db
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import posixpath
import random
import re
import statistics
import sys
import time
from pathlib import Path

from pygls.protocol import default_converter as converter
from pytest_lsp import client_capabilities

from autodoc.links.navigate import slug
from autodoc.parse.document import outline

PROSE = re.compile(r"^[A-Za-z][^|`<>\[\]]{30,}$")
BLOCK = re.compile(r"\s\^([A-Za-z0-9-]+)\s*$")
SETTLE_S = 5.0  # after the server is ready and its vectors complete, before measuring
TRIGGERS = "[(#/^"  # the server's trigger characters
SLOW_MS = 50.0  # requests over it are counted


class Editor:
    """A client speaking plain JSON-RPC over the server's stdio, as an editor does: framed
    messages, JSON parsed, nothing turned into objects; the server's own requests answered
    (progress tokens, configuration)."""

    def __init__(self, vault: Path, db: Path, embedding: str) -> None:
        self.vault, self.db, self.embedding = vault, db, embedding
        self.versions: dict[str, int] = {}
        self.pending: dict[int, asyncio.Future] = {}
        self.ready = asyncio.Event()
        self.info: dict = {}
        self.next_id = 0

    async def start(self) -> dict:
        env = dict(os.environ, AUTODOC_DB=str(self.db))
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "autodoc", "serve", env=env, limit=1 << 26,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        self.reading = asyncio.ensure_future(self._read())
        caps = converter().unstructure(client_capabilities("neovim"))
        init = await self.request("initialize", {
            "processId": os.getpid(), "capabilities": caps, "rootUri": None,
            "workspaceFolders": [{"uri": self.vault.as_uri(), "name": "v"}],
            "initializationOptions": {"embedding": {"provider": self.embedding}},
        })  # fmt: skip
        self.units = init["capabilities"].get("positionEncoding", "utf-16")
        self.notify("initialized", {})
        await asyncio.wait_for(self.ready.wait(), 3600)
        name = self.info["workspaces"][0]["name"]
        while self.embedding != "none":  # a quiet server: the vectors' background round done
            if (await self.request("autodoc/index.status", [name]))["semantic"] == "ready":
                break
            await asyncio.sleep(1.0)
        await asyncio.sleep(SETTLE_S)
        return self.info

    def _send(self, message: dict) -> None:
        body = json.dumps(message).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = 0
            while (line := await out.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if not length:
                return
            msg = json.loads(await out.readexactly(length))
            if "method" not in msg:
                self.pending.pop(msg["id"]).set_result(msg)
            elif "id" in msg:  # the server asks: progress tokens, configuration
                items = msg.get("params", {}).get("items", [])
                result = [None] * len(items) if msg["method"] == "workspace/configuration" else None
                self._send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
            elif msg["method"] == "autodoc/indexReady":
                self.info = msg["params"]
                self.ready.set()

    async def request(self, method: str, params) -> dict:
        self.next_id += 1
        future = self.pending[self.next_id] = asyncio.get_running_loop().create_future()
        self._send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        reply = await future
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return reply["result"]

    def notify(self, method: str, params) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def open(self, uri: str, text: str) -> None:
        self.versions[uri] = 1
        item = {"uri": uri, "languageId": "markdown", "version": 1, "text": text}
        self.notify("textDocument/didOpen", {"textDocument": item})

    def change(self, uri: str, line: int, start: int, end: int, text: str) -> None:
        """Replace string offsets [start, end) of `line` (ASCII lines only) with `text`."""
        self.versions[uri] += 1
        span = {"start": {"line": line, "character": start},
                "end": {"line": line, "character": end}}  # fmt: skip
        self.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": self.versions[uri]},
            "contentChanges": [{"range": span, "text": text}],
        })  # fmt: skip

    async def complete(self, uri: str, line: int, character: int) -> tuple[float, int, bool]:
        params = {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}
        t0 = time.perf_counter()
        got = await self.request("textDocument/completion", params)
        ms = (time.perf_counter() - t0) * 1000
        return ms, len(got["items"]) if got else 0, bool(got and got["isIncomplete"])

    async def type_link(
        self, uri: str, line: int, base: int, opener: str, rest: str, pause: float
    ) -> list[tuple[int, float, int]]:
        """Type `opener` then `rest` a character at a time after column `base`, `pause`
        seconds apart, asking for completion where a client would: after each trigger
        character of the opener (as the client's triggerCharacters make it), then at each
        keystroke from the opener's end on. (characters typed after the opener, -1 for the
        opener's own requests; ms; entries) per request. The link is removed afterwards."""
        out = []
        at = base
        for i, ch in enumerate(opener + rest, 1 - len(opener)):
            await asyncio.sleep(pause)
            self.change(uri, line, at, at, ch)
            at += 1
            if i >= 0 or ch in TRIGGERS:
                ms, n, _ = await self.complete(uri, line, at)
                out.append((max(i, -1), ms, n))
        self.change(uri, line, base, at, "")
        return out

    async def stop(self) -> None:
        await self.request("shutdown", None)
        self.notify("exit", None)
        await self.proc.wait()
        self.reading.cancel()


def headings(text: str) -> list[str]:
    """The document's headings as the index (and so the server) reads them."""
    return [h.text for h in outline(text.encode("utf-8", "surrogatepass"))[1] if h.text]


# Over 60 lines: one pass per document over the seven contexts, each a list of keystrokes.
async def measure(args) -> dict:
    vault = Path(args.vault).resolve()
    editor = Editor(vault, Path(args.db), args.embedding)
    t0 = time.perf_counter()
    await editor.start()
    opened_s = time.perf_counter() - t0
    files = sorted(p for p in vault.rglob("*.md") if not any(s.startswith(".") for s in p.parts))
    rng = random.Random(args.seed)
    rels = [p.relative_to(vault).as_posix() for p in files]
    texts: dict[str, str] = {}

    def text_of(rel: str) -> str:
        if rel not in texts:
            texts[rel] = (vault / rel).read_text(encoding="utf-8", errors="replace")
        return texts[rel]

    times: dict[str, list[float]] = {}
    first: dict[str, list[float]] = {}
    keyed: list[tuple[str, int, float]] = []  # (context, characters after the opener, ms)
    sizes: list[int] = []
    done = 0
    for rel in rng.sample(rels, len(rels)):
        if done >= args.docs:
            break
        text = text_of(rel)
        lines = text.split("\n")
        prose = [i for i, ln in enumerate(lines) if PROSE.match(ln) and ln.isascii()]
        if not prose:
            continue
        done += 1
        sizes.append(len(text))
        row = rng.choice(prose)
        uri = (vault / rel).as_uri()
        editor.open(uri, text)
        base = len(lines[row]) + 1
        editor.change(uri, row, len(lines[row]), len(lines[row]), " ")
        other = rng.choice(rels)
        other_text = text_of(other)
        title = next(iter(headings(other_text)), Path(other).stem)
        stem = Path(other).stem
        own = headings(text)
        theirs = headings(other_text)
        path = posixpath.relpath(other, posixpath.dirname(rel) or ".")
        blocks = [m[1] for ln in other_text.split("\n") if (m := BLOCK.search(ln))]
        cases = [
            ("[[ notes", "[[", title[:6]),
            ("[[note# headings", f"[[{stem}#", rng.choice(theirs)[:3] if theirs else ""),
            ("[[# own headings", "[[#", rng.choice(own)[:3] if own else ""),
            ("]( paths", "[x](", path[:12]),
            ("](path# anchors", f"[x]({path}#", slug(rng.choice(theirs))[:3] if theirs else ""),
            ("# tags", "#", rng.choice(args.tags)[:3]),
        ]
        if blocks:
            cases.append(("[[note#^ blocks", f"[[{stem}#^", rng.choice(blocks)[:2]))
        for context, opener, rest in cases:
            typed = await editor.type_link(uri, row, base, opener, rest, args.pause_ms / 1000)
            for i, ms, _ in typed:
                keyed.append((context, i, ms))
                if i < 0:  # a trigger character before the opener is whole: nothing to offer
                    times.setdefault("(triggers inside an opener)", []).append(ms)
                    continue
                times.setdefault(context, []).append(ms)
                if i == 0:
                    first.setdefault(context, []).append(ms)
    await editor.stop()
    return {"opened_s": opened_s, "docs": done, "mean_kib": statistics.mean(sizes) / 1024,
            "times": times, "first": first, "keyed": keyed}  # fmt: skip


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vault", required=True)
    ap.add_argument("--db", required=True, help="a store holding the vault (a copy is fine)")
    ap.add_argument("--embedding", default="bundled", help="as the store was indexed")
    ap.add_argument("--docs", type=int, default=60)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--pause-ms", type=float, default=0.0, help="between keystrokes")
    ap.add_argument("--tags", nargs="*", default=["include", "pragma", "role", "feature"])
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    got = asyncio.run(measure(args))
    print(f"{args.vault}: {got['docs']} documents (mean {got['mean_kib']:.1f} KiB), server"
          f" ready in {got['opened_s']:.1f} s, {os.cpu_count()} cores, keystrokes"
          f" {args.pause_ms:g} ms apart\n")  # fmt: skip
    print("| context | requests | p50 ms | p95 ms | max ms | first keystroke p50 / p95 ms |")
    print("|---|---:|---:|---:|---:|---:|")
    every: list[float] = []
    for context, xs in got["times"].items():
        every += xs
        f = got["first"].get(context, [])
        firsts = f"{statistics.median(f):.1f} / {pct(f, 0.95):.1f}" if f else ""
        print(f"| `{context}` | {len(xs)} | {statistics.median(xs):.1f} | {pct(xs, 0.95):.1f} "
              f"| {max(xs):.1f} | {firsts} |")  # fmt: skip
    print(f"| all | {len(every)} | {statistics.median(every):.1f} | {pct(every, 0.95):.1f} "
          f"| {max(every):.1f} | |")  # fmt: skip
    slow = sorted(round(ms) for ms in every if ms > SLOW_MS)
    print(f"\nover {SLOW_MS:g} ms: {len(slow)} of {len(every)} ({', '.join(map(str, slow))})")
    if args.json:
        args.json.write_text(json.dumps(got))
    return 0


if __name__ == "__main__":
    sys.exit(main())

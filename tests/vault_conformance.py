"""Conformance over every note of a real vault, through a real LSP client (pygls's, as
pytest-lsp drives it) talking to `autodoc serve` over stdio, as an editor opens notes:

- each note is opened (`didOpen`) with its text plus an unsaved tail, `## Conformance probe`
  and `See [[`: the outline (documentSymbol) must equal the index's headings plus the unsaved
  one, and completion after the `[[` must answer with notes (both read the editor's text, so a
  note served from disk instead, as one with a space in its path was, fails here);
- go-to-definition on every link must land where the vault's own tool resolves it: an oracle
  written apart from AutoDoc's code (`Oracle`, below) reads each link as Obsidian, Dendron or
  GitHub would and finds its file and heading;
- `autodoc check` runs in a second process beside the server (which holds the writer lease),
  and its broken links are counted by cause.

What it measured comes back as a dict: tests/integration/test_vault_conformance.py holds it to its
thresholds, bench/vault_conformance.py prints it (doc/benchmarks/vaults.md).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import posixpath
import re
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

import yaml
from lsprotocol import types
from pytest_lsp import client_capabilities, make_test_lsp_client

PROBE = "\n\n## Conformance probe\n\nSee [["
READY_S = 600.0
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_WIKI = re.compile(r"!?\[\[([^\[\]\n]+)\]\]")
_MD = re.compile(
    r"!?\[(?:[^\[\]\n]|\[[^\[\]\n]*\])*\]\(\s*(<[^>\n]+>|[^()\s]+)(?:\s+[\"'(][^)\n]*)?\)"
)
_CODE_SPAN = re.compile(r"(`+)[^`\n].*?\1|(`+)")
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


# -- the oracle: each link read as the vault's own tool reads it --------------------------------


def github_slug(text: str) -> str:
    """A heading's anchor as GitHub, Obsidian's URL form and Dendron (github-slugger) write it."""
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return re.sub(r"-{2,}", "-", text.replace(" ", "-")).strip("-")


@dataclass
class Note:
    rel: str
    lines: list[str]
    headings: list[tuple[int, str]] = field(default_factory=list)  # (0-based line, text)


class Oracle:
    """Where a link leads as Obsidian, Dendron or GitHub (plain Markdown) resolve it: (note,
    0-based line) or None; `skip` for a link to a file that is not a note (an attachment)."""

    def __init__(self, root: Path, dialect: str, notes: dict[str, Note]) -> None:
        self.root, self.dialect, self.notes = root, dialect, notes
        self.by_lower = {rel[:-3].lower(): rel for rel in notes}
        self.vaults: dict[str, str] = {}
        config = root / "dendron.yml"
        if dialect == "dendron" and config.exists():
            data = yaml.safe_load(config.read_text()) or {}
            for v in (data.get("workspace") or {}).get("vaults") or data.get("vaults") or []:
                self.vaults[v.get("name") or posixpath.basename(v["fsPath"])] = v["fsPath"]

    def wiki(self, source: str, inner: str) -> tuple[str, int] | str | None:
        inner = inner.replace("\\|", "|")
        if self.dialect == "dendron":
            target = inner.rsplit("|", 1)[-1].strip()
        else:
            target = inner.split("|", 1)[0].strip()
        name, _, heading = target.partition("#")
        if not name.strip() and not heading.strip():
            return "skip"  # `[[|alias]]`: names nothing
        if self.dialect == "dendron":
            return self._dendron(source, name.strip(), heading)
        if not name.strip():
            return self._place(source, heading)
        return self._by_name(source, name.strip(), heading)

    def markdown(self, source: str, destination: str) -> tuple[str, int] | str | None:
        dest = destination.strip("<>")
        if _SCHEME.match(dest) or dest.startswith("#"):
            return "skip"
        path, _, heading = dest.partition("#")
        path = unquote(path.split("?", 1)[0])
        base = "" if path.startswith("/") else posixpath.dirname(source)
        rel = posixpath.normpath(posixpath.join(base, path.lstrip("/")))
        if not rel.lower().endswith(".md"):
            return "skip"  # an image, a PDF, a folder: no note to land on
        if rel in self.notes:
            return self._place(rel, heading)
        if self.dialect == "obsidian" and not path.startswith(("./", "../", "/")):
            return self._by_name(source, path, heading)  # Obsidian's shortest form
        return None

    def _dendron(self, source: str, name: str, heading: str) -> tuple[str, int] | str | None:
        folder = source.split("/", 1)[0] if "/" in source else ""
        if name.lower().startswith("dendron://"):
            vault, _, name = name[len("dendron://") :].partition("/")
            if vault not in self.vaults:
                return None
            folder = self.vaults[vault]
        if not name:
            return self._place(source, heading)
        rel = self.by_lower.get(posixpath.join(folder, name).lower())
        return None if rel is None else self._place(rel, heading)

    def _by_name(self, source: str, name: str, heading: str) -> tuple[str, int] | str | None:
        """Obsidian's: a path from the root, else a path relative to the note, else the note
        whose path ends with the name, the shortest path first."""
        bare = name[:-3] if name.lower().endswith(".md") else name
        if "." in posixpath.basename(bare) and name.lower() == bare.lower():
            return "skip"  # `![[diagram.png]]`: an attachment
        rel = self.by_lower.get(posixpath.normpath(bare.lstrip("/")).lower())
        if rel is None and bare.startswith(("./", "../")):
            rel = self.by_lower.get(
                posixpath.normpath(posixpath.join(posixpath.dirname(source), bare)).lower()
            )
        if rel is None:
            tail = "/" + bare.lower()
            found = sorted(
                (r for key, r in self.by_lower.items() if ("/" + key).endswith(tail)),
                key=lambda r: (r.count("/"), r),
            )
            rel = found[0] if found else None
        return None if rel is None else self._place(rel, heading)

    def _place(self, rel: str, heading: str) -> tuple[str, int]:
        """The note at the heading or block the link names (its last part, `A#B`; a Dendron
        range's start, `A:#B`; `A,1`'s heading), else its first line."""
        note = self.notes[rel]
        part = re.sub(r",\d+$", "", heading.split(":#", 1)[0]).rsplit("#", 1)[-1].strip()
        if part.startswith("^"):
            for i, line in enumerate(note.lines):
                if line.rstrip().endswith(part) and line.rstrip()[: -len(part)][-1:] in ("", " "):
                    return rel, i
            return rel, 0
        want = github_slug(part)
        for i, text in note.headings:
            if want and github_slug(self.shown(text)) == want:
                return rel, i
        return rel, 0

    def shown(self, heading: str) -> str:
        """A heading's words as the tool shows them: a link's label, not its target."""

        def label(m: re.Match) -> str:
            if "|" not in m[1]:
                return m[1]
            before, after = m[1].rsplit("|", 1) if self.dialect == "dendron" else m[1].split("|", 1)
            return before if self.dialect == "dendron" else after

        heading = re.sub(r"\[\[([^\[\]]+)\]\]", label, heading)
        # inline HTML (`<a name="x"></a>`) shows nothing; in a code span it is text
        heading = "".join(
            part if part.startswith("`") else re.sub(r"<[^>\n]+>", "", part)
            for part in re.split(r"(`+[^`]*`+)", heading)
        )
        return re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)


def read_note(root: Path, rel: str) -> Note:
    text = (root / rel).read_text(encoding="utf-8", errors="replace")
    lines = text.split("\n")
    note = Note(rel, [ln.rstrip("\r") for ln in lines])
    for i, line in _prose(note.lines):
        if m := _HEADING.match(line):
            note.headings.append((i, m[2]))
    return note


def _states(lines: list[str]) -> tuple[list[str], str]:
    """Each line's place: "front" (the front matter), "fence" (a fenced block, its fences
    too), "comment" (an HTML comment), else "prose"; and the place a text typed at the end
    would be in (CommonMark's reading, enough of it for real notes)."""
    out = ["prose"] * len(lines)
    start = 0
    if lines and lines[0].strip() == "---":
        end = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), 0)
        out[: end + 1] = ["front"] * (end + 1)
        start = end + 1
    fence, comment = "", False
    for i in range(start, len(lines)):
        line = lines[i]
        if comment:
            out[i] = "comment"
            comment = "-->" not in line
            continue
        m = _FENCE.match(line)
        if fence:
            out[i] = "fence"
            if m and m[1][0] == fence[0] and len(m[1]) >= len(fence):
                fence = ""
        elif m:
            out[i], fence = "fence", m[1]
        elif line.lstrip().startswith("<!--"):
            out[i], comment = "comment", "-->" not in line
    return out, "fence" if fence else "comment" if comment else "prose"


def _prose(lines: list[str]):
    """(index, line) of the lines outside the front matter, fenced code and HTML comments."""
    for i, state in enumerate(_states(lines)[0]):
        if state == "prose":
            yield i, lines[i]


def _ends_in_code(lines: list[str]) -> bool:
    """The note ends inside a fence or a comment it never closes: text typed at its end is
    no prose."""
    return _states(lines)[1] != "prose"


def note_links(note: Note) -> list[tuple[int, int, str, str]]:
    """(line, column, kind, what is written) of each link of the note's prose; the column is
    inside the link, on its target."""
    out = []
    for i, line in _prose(note.lines):
        if line.startswith(("    ", "\t")):
            continue
        code = [(m.start(), m.end()) for m in _CODE_SPAN.finditer(line)]
        for pattern, kind in ((_WIKI, "wiki"), (_MD, "md")):
            for m in pattern.finditer(line):
                if not any(a <= m.start() < b for a, b in code):  # a link in a code span
                    out.append((i, m.start(1), kind, m[1]))
    return out


# -- the client --------------------------------------------------------------------------------


def units(text: str, encoding: str) -> int:
    """A column in the position encoding the client and the server agreed on."""
    if encoding == "utf-8":
        return len(text.encode())
    if encoding == "utf-32":
        return len(text)
    return len(text.encode("utf-16-le")) // 2


def _position(line: str, index: int, column: int, encoding: str) -> types.Position:
    """Line `index`, string offset `column`, as an LSP position in `encoding`."""
    return types.Position(index, units(line[:column], encoding))


def _flat_symbols(found) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []

    def walk(symbols):
        for s in symbols:
            if isinstance(s, types.DocumentSymbol):
                out.append((s.name, s.selection_range.start.line))
                walk(s.children or [])
            else:
                out.append((s.name, s.location.range.start.line))

    walk(found or [])
    return sorted(out, key=lambda x: x[1])


def _landing(found) -> tuple[str, int] | None:
    if not found:
        return None
    first = found[0] if isinstance(found, list) else found
    if isinstance(first, types.LocationLink):
        return unquote(first.target_uri.removeprefix("file://")), first.target_range.start.line
    return unquote(first.uri.removeprefix("file://")), first.range.start.line


@dataclass
class Tally:
    notes: int = 0
    outline_equal: int = 0
    completion_answered: int = 0
    links: int = 0
    agree: int = 0
    skipped: int = 0
    misses: list[str] = field(default_factory=list)
    outline_misses: list[str] = field(default_factory=list)
    completion_misses: list[str] = field(default_factory=list)
    seconds: float = 0.0


async def _open_note(client, root: Path, note: Note, oracle: Oracle, tally: Tally,
                     indexed: dict[str, list[tuple[str, int]]]) -> None:  # fmt: skip
    encoding = client.init_result.capabilities.position_encoding or "utf-16"
    uri = (root / note.rel).as_uri()
    text = "\n".join(note.lines) + PROBE
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "markdown", 1, text))
    )
    doc = types.TextDocumentIdentifier(uri)
    lines = text.split("\n")
    symbols = client.text_document_document_symbol_async(types.DocumentSymbolParams(doc))
    end = types.Position(len(lines) - 1, units(lines[-1], encoding))
    completion = client.text_document_completion_async(types.CompletionParams(doc, end))
    links = note_links(note)
    asked = [
        client.text_document_definition_async(
            types.DefinitionParams(
                doc, types.Position(i, units(note.lines[i][: col + 1], encoding))
            )
        )
        for i, col, _kind, _written in links
    ]
    got_symbols, got_completion, *landings = await asyncio.gather(symbols, completion, *asked)
    probe = [] if _ends_in_code(note.lines) else [("Conformance probe", len(lines) - 3)]
    want = [*indexed.get(note.rel, _parsed_headings(note)), *probe]
    tally.notes += 1
    items = (
        got_completion.items
        if isinstance(got_completion, types.CompletionList)
        else (got_completion or [])
    )
    outline = _flat_symbols(got_symbols)
    tally.outline_equal += outline == want
    if outline != want and len(tally.outline_misses) < 10:
        first = next(i for i, (a, b) in enumerate(itertools.zip_longest(outline, want)) if a != b)
        tally.outline_misses.append(
            f"{note.rel}: {outline[first : first + 2]} != {want[first : first + 2]}"
        )
    if probe and not items and len(tally.completion_misses) < 10:
        tally.completion_misses.append(note.rel)
    tally.completion_answered += bool(items) or not probe  # a tail in an open fence is code
    for (i, _col, kind, written), found in zip(links, landings, strict=True):
        expected = (
            oracle.wiki(note.rel, written) if kind == "wiki" else oracle.markdown(note.rel, written)
        )
        if expected == "skip":
            tally.skipped += 1
            continue
        tally.links += 1
        landed = _landing(found)
        if landed is not None:
            landed = (os.path.relpath(landed[0], root), landed[1])
        if landed == expected:
            tally.agree += 1
        elif len(tally.misses) < 20:
            tally.misses.append(f"{note.rel}:{i + 1} {written!r}: {landed} != {expected}")
    client.text_document_did_close(types.DidCloseTextDocumentParams(doc))


async def serve_and_open(
    root: Path, db: Path, dialect: str, rels: list[str], sidecar: Path | None = None
) -> dict:
    """Start `autodoc serve` on `root` (store `db`), wait for its index, open every note of
    `rels` as an editor would, run `autodoc check` beside it; the figures. `sidecar`: another
    checkout's `sidecar/` folder to run instead (a revision before, for a comparison)."""
    env = dict(os.environ, AUTODOC_DB=str(db))
    if sidecar is not None:
        env["PYTHONPATH"] = str(sidecar)
    client = make_test_lsp_client()
    await client.start_io(sys.executable, "-m", "autodoc", "serve", env=env)
    ready = asyncio.ensure_future(client.wait_for_notification("autodoc/indexReady"))
    started = time.perf_counter()
    client.init_result = await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("neovim"),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
            initialization_options={"embedding": "none"},
        )
    )
    await asyncio.wait_for(ready, READY_S)
    indexed_s = time.perf_counter() - started
    try:
        notes = {rel: read_note(root, rel) for rel in rels}
        oracle = Oracle(root, dialect, _all_notes(root, notes))
        tally = Tally()
        t0 = time.perf_counter()
        indexed = _indexed_headings(db)
        for rel in rels:
            await _open_note(client, root, notes[rel], oracle, tally, indexed)
        tally.seconds = time.perf_counter() - t0
        check = _check_beside(root, env)
    finally:
        await client.shutdown_session()
        await client.stop()
    return {"indexed_s": round(indexed_s, 2), "tally": tally.__dict__, "check": check}


def _indexed_headings(db: Path) -> dict[str, list[tuple[str, int]]]:
    """{path: [(heading, 0-based line), …]} as the index read each note from its file."""
    with sqlite3.connect(db) as conn:
        try:
            rows = conn.execute("SELECT path, headings FROM documents WHERE deleted = 0").fetchall()
        except sqlite3.OperationalError:  # a store from before documents kept their headings
            return {}
    return {  # an empty heading's name is its marker (LSP allows no empty name)
        p: [(text or "#" * level, line - 1) for line, level, text in json.loads(h)] for p, h in rows
    }


def _parsed_headings(note: Note) -> list[tuple[str, int]]:
    """The headings the index's parser reads from the note's file (a store from before
    documents kept them)."""
    from autodoc.parse.document import outline

    _, headings = outline("\n".join(note.lines).encode())
    return [(h.text or "#" * h.level, h.line) for h in headings]


def _all_notes(root: Path, opened: dict[str, Note]) -> dict[str, Note]:
    """Every note of the vault (what a link may lead to), the opened ones as read."""
    out = dict(opened)
    for path in sorted(root.rglob("*.md")):
        rel = path.relative_to(root).as_posix()
        if rel not in out and not any(p.startswith(".") for p in rel.split("/")):
            out[rel] = read_note(root, rel)
    return out


def _check_beside(root: Path, env: dict[str, str]) -> dict:
    """`autodoc check ROOT --json` in a second process while the server holds the lease."""
    run = subprocess.run(
        [sys.executable, "-m", "autodoc", "check", str(root), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    out: dict = {"exit": run.returncode, "stderr": run.stderr.strip()[-300:]}
    try:
        report = json.loads(run.stdout)
    except ValueError:
        return out
    summary = report.get("summary", {})
    out["by_kind"] = summary.get("by_kind", {})
    out["links_by_cause"] = summary.get("links_by_cause", {})
    out["unresolved"] = summary.get("by_kind", {}).get("link", 0)
    out["examples"] = Counter(
        f["cause"] for f in report.get("findings", []) if f.get("kind") in ("link", "heading")
    )
    return out


def conform(
    root: Path, db: Path, dialect: str, rels: list[str] | None = None, sidecar: Path | None = None
) -> dict:
    """The figures for `root` (every note, or `rels`)."""
    if rels is None:
        rels = [
            p.relative_to(root).as_posix()
            for p in sorted(root.rglob("*.md"))
            if not any(part.startswith(".") for part in p.relative_to(root).parts)
        ]
    return asyncio.run(serve_and_open(root, db, dialect, rels, sidecar))

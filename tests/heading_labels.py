"""A checker of chunk labels: every chunk's text under the heading its breadcrumb names.

An oracle written apart from the chunker reads each file with the CommonMark parser (pyromark,
pulldown-cmark, as `parse/markdown.py` uses it) and finds its top-level headings, each with its
level, its words and its body (the bytes from the line after it to the next heading). Then the
file goes through AutoDoc's own parse and chunker, and a chunk is **mislabelled** when its text
holds a heading's body (any non-blank byte of it) under a breadcrumb that ends with neither that
heading nor a parent of it: a stub merged into another section lent its text that section's
label (issue 55). A breadcrumb's last part may list several sections (`A › B · C`: it ends with
each); one that is the title alone labels the whole document.
tests/integration/test_heading_labels.py
holds the corpora to the count, bench/heading_labels.py prints it (doc/benchmarks/retrieval.md).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pyromark

from autodoc.parse import chunking
from autodoc.parse.chunking import BREADCRUMB_SEP, Chunk, Chunker
from autodoc.parse.document import parse_document

OPTIONS = (
    pyromark.Options.ENABLE_TABLES
    | pyromark.Options.ENABLE_FOOTNOTES
    | pyromark.Options.ENABLE_STRIKETHROUGH
    | pyromark.Options.ENABLE_TASKLISTS
    | pyromark.Options.ENABLE_WIKILINKS
)
_FRONT_MATTER = re.compile(rb"\A---[ \t]*\r?\n.*?^(?:---|\.\.\.)[ \t]*\r?$", re.S | re.M)
# between the sections a breadcrumb lists (a revision before issue 55 lists none)
LIST_SEP = getattr(chunking, "LIST_SEP", " · ")
_SURROGATE = re.compile("[\udc80-\udcff]")
_LEVELS = {"H1": 1, "H2": 2, "H3": 3, "H4": 4, "H5": 5, "H6": 6}


@dataclass
class Section:
    """A top-level heading as the oracle reads it: its body is [body_start, body_end) in
    bytes; `crumbs`: its own words and its parents', each the ways they may read."""

    level: int
    words: tuple[str, ...]  # the heading's words, each way they may read
    line: int  # 1-based
    body_start: int
    body_end: int
    crumbs: set[str] = field(default_factory=set)


@dataclass
class Mislabel:
    path: str
    chunk: int  # its ordinal in the file
    line: int  # the heading whose body is under another label
    heading: str
    breadcrumb: str


def _words(text: str) -> str:
    return " ".join(text.split()).casefold()


class _HeadingWords:
    """The words a reader sees in one heading, from its inline events: text and code, no image
    text. A piped wiki link `[[a|b]]` reads either way: b in Obsidian and GitHub, a in Dendron
    (the parser gives a as the link's destination), so both readings are kept."""

    def __init__(self) -> None:
        self.shown: list[str] = []
        self.label_first: list[str] = []
        self.open: list[str | None] = []  # inline elements: a piped wiki link's first part
        self.images = 0

    def feed(self, event: object) -> None:
        if type(event) is dict and "Start" in event:
            tag = event["Start"]
            link = tag.get("Link") if type(tag) is dict else None
            kind = link["link_type"] if link else None
            piped = type(kind) is dict and kind.get("WikiLink", {}).get("has_pothole")
            self.open.append(link["dest_url"] if link and piped else None)
            self.images += type(tag) is dict and "Image" in tag
        elif type(event) is dict and "End" in event:
            self.images -= event["End"] == "Image"
            first = self.open.pop() if self.open else None
            if first is not None and not self.images:
                self.label_first.append(first)
        elif event in ("SoftBreak", "HardBreak"):
            self.shown.append(" ")
            self.label_first.append(" ")
        elif type(event) is dict and not self.images:
            text = "".join(str(event[k]) for k in ("Text", "Code") if k in event)
            self.shown.append(text)
            if not any(first is not None for first in self.open):
                self.label_first.append(text)

    def readings(self) -> tuple[str, ...]:
        return tuple(
            dict.fromkeys((_words("".join(self.shown)), _words("".join(self.label_first))))
        )


def sections(data: bytes) -> list[Section]:
    """The top-level headings of a file and their bodies; front matter (from the first line)
    blanked out, its line ends kept, so it is read as no heading."""
    fm = _FRONT_MATTER.match(data)
    if fm:
        data = re.sub(rb"[^\n]", b" ", data[: fm.end()]) + data[fm.end() :]
    # The parser's ranges are bytes of its UTF-8 input: an undecodable byte read as one '?'
    # keeps them the file's.
    text = _SURROGATE.sub("?", data.decode("utf-8", "surrogateescape"))
    found: list[Section] = []
    depth, heading, level = 0, None, 0
    for event, rng in pyromark.events_with_range(text, options=OPTIONS):
        if type(event) is dict and "Start" in event:
            depth += 1
            tag = event["Start"]
            if depth == 1 and type(tag) is dict and "Heading" in tag:
                heading, level = _HeadingWords(), _LEVELS[tag["Heading"]["level"]]
                continue
        elif type(event) is dict and "End" in event:
            depth -= 1
            if depth == 0 and heading is not None:
                line = data.count(b"\n", 0, rng["start"]) + 1
                found.append(Section(level, heading.readings(), line, rng["end"], len(data)))
                heading = None
                continue
        if heading is not None:
            heading.feed(event)
    _bodies(found, data)
    return found


def _bodies(found: list[Section], data: bytes) -> None:
    """Each body ends where the next heading's line starts; each heading's parents."""
    for sec, nxt in itertools.pairwise(found):
        sec.body_end = _line_start(data, nxt.line)
    stack: list[Section] = []
    for sec in found:
        while stack and stack[-1].level >= sec.level:
            stack.pop()
        sec.crumbs = {w for s in (*stack, sec) for w in s.words}
        stack.append(sec)


def _line_start(data: bytes, line: int) -> int:
    pos = 0
    for _ in range(line - 1):
        pos = data.index(b"\n", pos) + 1
    return pos


def labelled(breadcrumb: str) -> set[str] | None:
    """The headings a breadcrumb ends with: its last part, or each of the sections that part
    lists (`A › B · C`); None for the title alone, which labels the whole document."""
    if BREADCRUMB_SEP not in breadcrumb:
        return None
    last = breadcrumb.rsplit(BREADCRUMB_SEP, 1)[-1]
    return {_words(last), *(_words(name) for name in last.split(LIST_SEP))}


def mislabels(path: str, data: bytes, chunks: list[Chunk]) -> list[Mislabel]:
    """The (chunk, heading) pairs of one file where the chunk holds the heading's body under
    a breadcrumb that ends with neither it nor a parent of it."""
    heads = sections(data)
    out = []
    for chunk in chunks:
        if chunk.kind != "section":
            continue
        named = labelled(chunk.breadcrumb)
        for sec in heads:
            lo, hi = max(sec.body_start, chunk.byte_start), min(sec.body_end, chunk.byte_end)
            if lo >= hi or not data[lo:hi].strip() or not any(sec.words):
                continue
            if named is not None and not named.intersection(sec.crumbs):
                out.append(Mislabel(path, chunk.ordinal, sec.line, sec.words[0], chunk.breadcrumb))
    return out


def markdown_files(root: Path) -> Iterable[Path]:
    return sorted(p for p in root.rglob("*.md") if p.is_file() and not p.is_symlink())


@dataclass
class Count:
    """A corpus's chunks, those mislabelled, and each heading body found under another label."""

    files: int = 0
    chunks: int = 0
    found: list[Mislabel] = field(default_factory=list)

    @property
    def mislabelled(self) -> int:
        return len({(m.path, m.chunk) for m in self.found})


def count(root: Path, chunker: Chunker | None = None) -> Count:
    """Every mislabelled heading body of a corpus."""
    chunker = chunker or Chunker()
    out = Count()
    for p in markdown_files(root):
        data = p.read_bytes()
        chunks = chunker.chunk(parse_document(data, str(p)))
        out.files += 1
        out.chunks += sum(c.kind == "section" for c in chunks)
        out.found += mislabels(str(p.relative_to(root)), data, chunks)
    return out

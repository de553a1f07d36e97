"""Heading-scoped chunking (spec §1).

A chunk is one section under its heading, so a hit can be read and cited on its own; sections
over the `section_tokens` budget are split at paragraph boundaries and keep their breadcrumb.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from autodoc.parse.document import ParsedDocument
from autodoc.parse.markdown import Block

BREADCRUMB_SEP = " › "
LIST_SEP = " · "  # between the sections a breadcrumb lists: a chunk spanning several (_Labels)
CHARS_PER_TOKEN = 4  # the usual estimate for English prose and code under BPE tokenizers
# Part of every document's chunk fingerprint: bump when where chunks are cut changes.
CHUNKING_FORMAT = "stubs=1,headings=2,labels=1"

# A stub is a section that says nothing beyond metadata (`Date: 2019-01-08`, `## Status` /
# `Accepted`, a metadata table, an author list, a lone link): on its own it is short, so BM25
# and the embedder rank it first for its title's words, above the section that answers. It is
# merged forward into the section after it (the last one: backward), so every chunk has content.
_STUB_MAX_LINES = 12
_STUB_MAX_BYTES = 600
# Headings and keys that name metadata: `## Status`, `Date: …`, `| Author | @x |`
META_KEYS = frozenset(
    "status|state|date|dates|created|updated|last updated|author|authors|author(s)|deciders|"  # noqa: SIM905
    "decision-makers|decision makers|consulted|informed|participants|reviewers|owner|owners|"
    "proposed by|tags|keywords|category|type|metadata|changelog|change log|history|"
    "revision history|technical story|issue|ticket|discussion|supersedes|superseded by|"
    "superseded|amends|amended by|links|references|related".split("|")
)
_DECORATION = re.compile(r"^[\s>*+_#|-]*(?:\d+[.)]\s+)?|[\s*_|]+$")
_KEY_VALUE = re.compile(r"^([^:：|]{1,30})[:：]")
_LONE_LINK = re.compile(r"^!?\[[^\]]*\](?:\([^)]*\))?$|^\[\[[^\]]*\]\]$|^<?https?://\S+>?$")
_TABLE_ROW = re.compile(r"^\|?([^|]*)\|[^|]*\|?$")  # two cells: a key and its value
_TABLE_DELIMITER = re.compile(r"^\|?\s*:?-+:?\s*\|\s*:?-+:?\s*\|?$")
_SHORT_WORDS = 6  # a status (`Superseded by ADR 9`), a name; a field's description is longer
_DIGIT = re.compile(r"\d")


def estimate_tokens(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


@dataclass
class Chunk:
    kind: str  # "section" or "abstract"
    ordinal: int
    breadcrumb: str
    text: str
    byte_start: int
    byte_end: int
    line_start: int  # 1-based, inclusive
    line_end: int
    # The line of the heading the breadcrumb ends with, when the span holds it (a merged stub
    # starts above it; a piece of a long section does not hold it: its first line).
    line: int = 0
    # Every heading the span holds, (1-based line, text), in order: a merged stub's too.
    headings: list[tuple[int, str]] = field(default_factory=list)

    @property
    def embed_text(self) -> str:
        """What the lexical body and (later) the embedder see: breadcrumb, then the text."""
        return f"{self.breadcrumb}\n\n{self.text}"

    @functools.cached_property
    def text_hash(self) -> str:
        """What identifies the chunk's content across generations (its id, its vector)."""
        return hashlib.sha256(self.embed_text.encode("utf-8", "replace")).hexdigest()[:32]


@dataclass
class _Section:
    level: int  # 0 for text before the first heading
    heading: str
    start: int  # line index, inclusive
    end: int  # line index, exclusive
    body: int = 0  # line index of its text: after its heading (a setext one is two lines)
    # The sections (indexes in find_sections' list) whose headings it sits under, outermost
    # first, itself last; () for the text before the first heading.
    path: tuple[int, ...] = ()


def find_sections(doc: ParsedDocument) -> list[_Section]:
    """Sections between the parser's top-level headings (ATX and setext), each with the
    headings it sits under."""
    starts = [_Section(0, "", doc.body_line, 0, doc.body_line)]
    starts += [_Section(h.level, h.text, h.line, 0, max(h.end, h.line + 1)) for h in doc.headings]
    for sec, nxt in itertools.pairwise(starts):
        sec.end = nxt.start
    starts[-1].end = len(doc.lines)
    sections = [s for s in starts if s.end > s.start]
    stack: list[int] = []
    for i, sec in enumerate(sections):
        if sec.level:
            while stack and sections[stack[-1]].level >= sec.level:
                stack.pop()
            stack.append(i)
            sec.path = tuple(stack)
    return sections


def is_stub(lines: list[str], heading: str) -> bool:
    """Whether a section's body (its lines after the heading) is metadata only, so it cannot
    answer a question on its own: under a metadata heading (Status, Authors, Changelog) short
    lines and dated entries; anywhere `Key: value` lines and two-cell table rows whose key
    names metadata, and lone links."""
    body = [line.strip() for line in lines if line.strip()]
    if not body or len(body) > _STUB_MAX_LINES or sum(map(len, body)) > _STUB_MAX_BYTES:
        return False
    meta_heading = _key(heading) in META_KEYS
    return all(_metadata_line(line, meta_heading) for line in body)


def _key(text: str) -> str:
    return " ".join(text.replace("*", " ").replace("_", " ").split()).casefold()


def _metadata_line(line: str, meta_heading: bool) -> bool:
    row = _TABLE_ROW.match(line)
    if row:
        return bool(_TABLE_DELIMITER.match(line)) or _key(row[1]) in META_KEYS
    bare = _DECORATION.sub("", line)
    if not bare or _LONE_LINK.match(bare):
        return True
    pair = _KEY_VALUE.match(bare)
    key = pair[1] if pair else ""
    if meta_heading and (len(bare.split()) <= _SHORT_WORDS or _DIGIT.search(key)):
        return True  # `Accepted`, a name, a dated changelog entry
    return bool(key) and _key(key) in META_KEYS


class _BlockTree:
    """The children of a document's blocks (which come parents first, in document order),
    worked out once per document, when a block first needs splitting."""

    def __init__(self, blocks: list[Block]) -> None:
        self.blocks = blocks
        self.after: list[int] | None = None  # per block: the first block past its subtree

    def children(self, i: int) -> list[int]:
        if self.after is None:
            blocks, after = self.blocks, [len(self.blocks)] * len(self.blocks)
            open_: list[int] = []
            for j, block in enumerate(blocks):
                while open_ and blocks[open_[-1]].depth >= block.depth:
                    after[open_.pop()] = j
                open_.append(j)
            self.after = after
        kids, j = [], i + 1
        while j < self.after[i]:
            kids.append(j)
            j = self.after[j]
        return kids


class Chunker:
    """Cuts a parsed document into chunks under a workspace's options."""

    def __init__(self, section_tokens: int = 350, abstract_chunk: bool = True) -> None:
        self.budget = section_tokens * CHARS_PER_TOKEN
        self.abstract_chunk = abstract_chunk

    def chunk(self, doc: ParsedDocument) -> list[Chunk]:
        chunks = self._abstract(doc)
        blocks, top, tree = doc.blocks, doc.top_blocks, _BlockTree(doc.blocks)
        k = 0  # the next top-level block: sections and blocks are both in document order
        sections = find_sections(doc)
        labels = _Labels(doc, sections)
        stub: list[int] = []  # the units of stubs waiting for the next section
        stub_run: list[int] = []  # and those stubs' sections
        last: tuple[list[int], list[int], int] | None = None  # last cut: units, run, 1st chunk
        for i, sec in enumerate(sections):
            units: list[int] = []
            while k < len(top) and blocks[top[k]].start < sec.end:
                if blocks[top[k]].start >= sec.start:
                    units.append(top[k])
                k += 1
            bare = sec.level and len(units) == 1 and blocks[units[0]].kind == "Heading"
            if bare and i + 1 < len(sections) and sections[i + 1].level > sec.level:
                continue  # a heading with no text of its own lives on in its children's crumbs
            if units and (bare or self._stub(doc, sec, units)):  # one without children: a stub
                stub += units
                stub_run.append(i)
                continue
            units, run, stub, stub_run = stub + units, [*stub_run, i], [], []
            last = (units, run, len(chunks))
            self._cut(doc, units, tree, labels.of(run, i), chunks)
        if stub and last:  # trailing stubs go back into the last section
            units, run, n = last
            del chunks[n:]
            self._cut(doc, units + stub, tree, labels.of(run + stub_run, run[-1]), chunks)
        elif stub:  # nothing but metadata: kept
            self._cut(doc, stub, tree, labels.of(stub_run, stub_run[0]), chunks)
        return chunks

    def _stub(self, doc: ParsedDocument, sec: _Section, units: list[int]) -> bool:
        first = doc.blocks[units[0]]
        body = first.end if first.kind == "Heading" else sec.start
        return is_stub(doc.lines[body : sec.end], sec.heading)

    def _cut(
        self,
        doc: ParsedDocument,
        units: list[int],
        tree: _BlockTree,
        label: Callable[[int, int], tuple[str, int]],
        chunks: list[Chunk],
    ) -> None:
        """`units` as chunks, each labelled by `label(first line, past line)` (0-based): its
        breadcrumb and the 0-based line of the heading that ends it (-1: none), the line a
        chunk holding it is shown at."""
        lines = [h.line for h in doc.headings]
        for bs, be, ls, le in self._pieces(doc, units, tree):
            text = doc.data[bs:be].decode("utf-8", "replace")
            if text.strip():
                first, past = bisect.bisect_left(lines, ls - 1), bisect.bisect_left(lines, le)
                held = doc.headings[first:past]
                breadcrumb, at = label(ls - 1, le)
                line = at + 1 if ls <= at + 1 <= le else ls
                chunks.append(
                    Chunk("section", len(chunks), breadcrumb, text, bs, be, ls, le, line,
                          [(h.line + 1, h.text) for h in held])
                )  # fmt: skip

    def _abstract(self, doc: ParsedDocument) -> list[Chunk]:
        """The frontmatter's `abstract`, as a chunk spanning the frontmatter block."""
        abstract = doc.meta.get("abstract")
        if not (self.abstract_chunk and doc.frontmatter_span and isinstance(abstract, str)):
            return []
        if not abstract.strip():
            return []
        a, b = doc.frontmatter_span
        bs, be = doc.byte_span(a, b)
        crumb = doc.title + BREADCRUMB_SEP + "Abstract"
        return [Chunk("abstract", 0, crumb, abstract.strip(), bs, be, a + 1, b, a + 1)]

    def _pieces(
        self, doc: ParsedDocument, units: list[int], tree: _BlockTree
    ) -> list[tuple[int, int, int, int]]:
        """Pack blocks into spans of at most the budget: (byte_start, byte_end, line_start,
        line_end), lines 1-based. A block over the budget is split between its children (list
        items, table rows, quoted blocks), and only one without children (a code block, a
        paragraph) between its lines; a single line over the budget between characters."""
        if not units:
            return []
        blocks = doc.blocks
        a, b = blocks[units[0]].start, blocks[units[-1]].end
        spans: list[tuple[int, int]] = []  # line ranges [a, b) that fit, or single lines
        if doc.offsets[b] - doc.offsets[a] <= self.budget:  # most sections: one piece
            spans.append((a, b))
        else:
            for i in units:
                self._fit(doc, tree, i, spans)
        pieces: list[tuple[int, int, int, int]] = []
        for a, b in spans:  # each starts on a block's first line, so only its end is trimmed
            while b > a and not doc.lines[b - 1].strip():
                b -= 1
            if a == b:
                continue
            bs, be = doc.byte_span(a, b)
            if be - bs <= self.budget:
                piece = [(bs, be, a + 1, b)]
            else:  # a single line
                piece = list(self._split_line(doc.data, bs, be, a + 1))
            for unit in piece:
                if pieces and unit[1] - pieces[-1][0] <= self.budget:
                    last = pieces[-1]
                    pieces[-1] = (last[0], unit[1], last[2], unit[3])
                else:
                    pieces.append(unit)
        return pieces

    def _fit(self, doc: ParsedDocument, tree: _BlockTree, i: int, out: list[tuple[int, int]]):
        """Block i's lines as ranges within the budget, cut at the shallowest block boundaries
        that make them fit. Iterative: nesting can be thousands deep."""
        todo = [(i, doc.blocks[i].start, doc.blocks[i].end)]
        while todo:
            i, a, b = todo.pop()
            # with its line terminators: at most 2 bytes over the chunk's size, never under
            if doc.offsets[b] - doc.offsets[a] <= self.budget or b - a < 2:
                out.append((a, b))
                continue
            kids = tree.children(i)
            if not kids:
                out.extend((n, n + 1) for n in range(a, b))
                continue
            # Children cover the parent: lines between two children (a table's delimiter row,
            # a blank line) go with the next one, so nothing of the block is lost at a cut.
            starts = [a] + [max(a, min(b, doc.blocks[k].start)) for k in kids[1:]]
            parts = zip(kids, starts, [*starts[1:], b], strict=True)
            todo.extend(reversed([(k, s, e) for k, s, e in parts if e > s]))

    def _split_line(self, data: bytes, bs: int, be: int, line_no: int):
        """A single line over budget: cut at spaces (or anywhere) on UTF-8 character starts."""
        pos = bs
        while pos < be:
            cut = min(pos + self.budget, be)
            if cut < be:
                space = data.rfind(b" ", pos + self.budget // 2, cut)
                if space > pos:
                    cut = space + 1
                start = cut
                while cut > pos and (data[cut] & 0xC0) == 0x80:
                    cut -= 1  # back to a character's first byte: never over the budget
                if cut == pos:  # no character starts here (invalid UTF-8): cut the bytes
                    cut = start
            yield pos, cut, line_no, line_no
            pos = cut


class _Labels:
    """A chunk's breadcrumb names the heading its text sits under (issue 55). A chunk of one
    section (or a piece of it) is labelled by that section. One that stubs were merged into
    holds the text of several: it is labelled by the smallest section that holds all of it
    (the title's, for a stub under the title merged into the first section), or, where no
    section holds it all but the one they share, by that one's crumb followed by each section
    whose text it holds, listed with LIST_SEP (`Decisions › Accepted · Rejected`)."""

    def __init__(self, doc: ParsedDocument, sections: list[_Section]) -> None:
        self.doc, self.sections = doc, sections

    def of(self, run: list[int], main: int) -> Callable[[int, int], tuple[str, int]]:
        """The labeller of a chunk cut from the sections `run` (indexes, in order): `main` is
        the one stubs were merged into."""
        if len(run) == 1:  # most chunks: one section, one label for all its pieces
            only = self.sections[run[0]]
            label = (self.crumb(only.path), only.start if only.level else -1)
            return lambda a, b: label
        return functools.partial(self.label, run, main)

    def crumb(self, path: tuple[int, ...]) -> str:
        """The title, then the headings of `path`; an H1 repeating the title is not said
        twice."""
        title = self.doc.title
        crumbs = [title]
        for i in path:
            sec = self.sections[i]
            if sec.level == 1 and len(crumbs) == 1 and sec.heading.casefold() == title.casefold():
                continue
            if sec.heading:
                crumbs.append(sec.heading)
        return BREADCRUMB_SEP.join(crumbs)

    def label(self, run: list[int], main: int, a: int, b: int) -> tuple[str, int]:
        """The breadcrumb of lines [a, b) of `run`'s sections, and the line of the heading to
        show it at (-1: none): the one it ends with, or of those it lists the section stubs
        were merged into (the one that answers), else the first."""
        sections = self.sections
        held = [i for i in run if self._has_text(sections[i], a, b)]
        held = held or [i for i in run if sections[i].level and a <= sections[i].start < b]
        held = held or run[-1:]
        common = _common_prefix([sections[i].path for i in held])
        shared = common[-1] if common else None  # None: the document, above every heading
        if shared in held or (shared is None and any(not sections[i].level for i in held)):
            return self.crumb(common), sections[shared].start if shared is not None else -1
        names = [sections[i].heading for i in held if sections[i].heading]
        crumb = self.crumb(common)
        if names:
            crumb += BREADCRUMB_SEP + LIST_SEP.join(names)
        return crumb, sections[main if main in held else held[0]].start

    def _has_text(self, sec: _Section, a: int, b: int) -> bool:
        """Whether lines [a, b) hold any of the section's own text (below its heading)."""
        lines = self.doc.lines
        return any(lines[n].strip() for n in range(max(sec.body, a), min(sec.end, b)))


def _common_prefix(paths: list[tuple[int, ...]]) -> tuple[int, ...]:
    first, last = min(paths), max(paths)
    n = 0
    while n < len(first) and n < len(last) and first[n] == last[n]:
        n += 1
    return first[:n]

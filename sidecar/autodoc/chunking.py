"""Heading-scoped chunking (spec §1).

A chunk is one section under its heading, so a hit can be read and cited on its own; sections
over the `section_tokens` budget are split at paragraph boundaries and keep their breadcrumb.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
from dataclasses import dataclass

from .document import ParsedDocument
from .markdown import Block

BREADCRUMB_SEP = " › "
CHARS_PER_TOKEN = 4  # the usual estimate for English prose and code under BPE tokenizers


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


def find_sections(doc: ParsedDocument) -> list[_Section]:
    """Sections between the parser's top-level headings (ATX and setext)."""
    starts = [_Section(0, "", doc.body_line, 0)]
    starts += [_Section(h.level, h.text, h.line, 0) for h in doc.headings]
    for sec, nxt in itertools.pairwise(starts):
        sec.end = nxt.start
    starts[-1].end = len(doc.lines)
    return [s for s in starts if s.end > s.start]


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
        for sec, breadcrumb in _with_breadcrumbs(doc, find_sections(doc)):
            units: list[int] = []
            while k < len(top) and blocks[top[k]].start < sec.end:
                if blocks[top[k]].start >= sec.start:
                    units.append(top[k])
                k += 1
            if sec.level and len(units) == 1 and blocks[units[0]].kind == "Heading":
                continue  # a heading with no text of its own lives on in its children's crumbs
            for bs, be, ls, le in self._pieces(doc, units, tree):
                text = doc.data[bs:be].decode("utf-8", "replace")
                if text.strip():
                    chunks.append(Chunk("section", len(chunks), breadcrumb, text, bs, be, ls, le))
        return chunks

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
        return [Chunk("abstract", 0, crumb, abstract.strip(), bs, be, a + 1, b)]

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


def _with_breadcrumbs(doc: ParsedDocument, sections: list[_Section]):
    """(section, breadcrumb): the title, then the headings above; an H1 repeating the title
    is not said twice."""
    stack: list[tuple[int, str]] = []
    for sec in sections:
        if sec.level:
            while stack and stack[-1][0] >= sec.level:
                stack.pop()
            stack.append((sec.level, sec.heading))
        crumbs = [doc.title]
        for level, text in stack:
            if level == 1 and text.casefold() == doc.title.casefold() and len(crumbs) == 1:
                continue
            if text:
                crumbs.append(text)
        yield sec, BREADCRUMB_SEP.join(crumbs)

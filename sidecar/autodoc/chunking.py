"""Heading-scoped chunking (spec §1).

A chunk is one section under its heading, so a hit can be read and cited on its own; sections
over the `section_tokens` budget are split at paragraph boundaries and keep their breadcrumb.
"""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass

from .document import (
    SETEXT_UNDERLINE,
    ParsedDocument,
)

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

    @property
    def text_hash(self) -> str:
        return hashlib.sha256(self.embed_text.encode("utf-8", "replace")).hexdigest()[:32]


@dataclass
class _Section:
    level: int  # 0 for text before the first heading
    heading: str
    start: int  # line index, inclusive
    end: int  # line index, exclusive


def find_sections(doc: ParsedDocument) -> list[_Section]:
    """Sections between headings (ATX and setext, never inside fenced code)."""
    starts = [_Section(0, "", doc.body_line, 0)]
    starts += [_Section(h.level, h.text, h.line, 0) for h in doc.headings]
    for sec, nxt in itertools.pairwise(starts):
        sec.end = nxt.start
    starts[-1].end = len(doc.lines)
    return [s for s in starts if s.end > s.start]


def _blocks(doc: ParsedDocument, start: int, end: int) -> list[tuple[int, int]]:
    """Paragraph blocks [start, end) separated by blank lines; a code fence is one block."""
    blocks: list[tuple[int, int]] = []
    cur: int | None = None
    lines, code = doc.lines, doc.code
    for i in range(start, end):
        if code[i]:
            if cur is None:
                cur = i
        elif not lines[i].strip():
            if cur is not None:
                blocks.append((cur, i))
                cur = None
        elif cur is None:
            cur = i
    if cur is not None:
        blocks.append((cur, end))
    return blocks


class Chunker:
    """Cuts a parsed document into chunks under a workspace's options."""

    def __init__(self, section_tokens: int = 350, abstract_chunk: bool = True) -> None:
        self.budget = section_tokens * CHARS_PER_TOKEN
        self.abstract_chunk = abstract_chunk

    def chunk(self, doc: ParsedDocument) -> list[Chunk]:
        chunks: list[Chunk] = []
        if self.abstract_chunk and doc.frontmatter_span:
            abstract = doc.meta.get("abstract")
            if isinstance(abstract, str) and abstract.strip():
                a, b = doc.frontmatter_span
                bs, be = doc.byte_span(a, b)
                chunks.append(
                    Chunk(
                        "abstract",
                        0,
                        doc.title + BREADCRUMB_SEP + "Abstract",
                        abstract.strip(),
                        bs,
                        be,
                        a + 1,
                        b,
                    )
                )
        stack: list[tuple[int, str]] = []
        for sec in find_sections(doc):
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
            breadcrumb = BREADCRUMB_SEP.join(crumbs)
            blocks = _blocks(doc, sec.start, sec.end)
            if not blocks:
                continue
            if (
                sec.level
                and len(blocks) == 1
                and blocks[0][1] - blocks[0][0] <= 2
                and (_is_heading_only(doc, sec, blocks[0]))
            ):
                continue  # a heading with no text of its own lives on in its children's crumbs
            for bs, be, ls, le in self._pieces(doc, blocks):
                text = doc.data[bs:be].decode("utf-8", "replace")
                if text.strip():
                    chunks.append(Chunk("section", len(chunks), breadcrumb, text, bs, be, ls, le))
        return chunks

    def _pieces(self, doc: ParsedDocument, blocks: list[tuple[int, int]]):
        """Pack blocks into spans of at most the budget; split a lone oversized block by lines."""
        units: list[tuple[int, int, int, int]] = []  # byte_start, byte_end, line_start, line_end
        for a, b in blocks:
            bs, be = doc.byte_span(a, b)
            if be - bs <= self.budget:
                units.append((bs, be, a + 1, b))
                continue
            for i in range(a, b):
                lbs, lbe = doc.byte_span(i, i + 1)
                if lbe - lbs <= self.budget:
                    units.append((lbs, lbe, i + 1, i + 1))
                else:
                    units.extend(self._split_line(doc.data, lbs, lbe, i + 1))
        merged: list[tuple[int, int, int, int]] = []
        for unit in units:
            if merged and unit[1] - merged[-1][0] <= self.budget:
                last = merged[-1]
                merged[-1] = (last[0], unit[1], last[2], unit[3])
            else:
                merged.append(unit)
        return merged

    def _split_line(self, data: bytes, bs: int, be: int, line_no: int):
        """A single line over budget: cut at spaces (or anywhere) on UTF-8 character starts."""
        pos = bs
        while pos < be:
            cut = min(pos + self.budget, be)
            if cut < be:
                space = data.rfind(b" ", pos + self.budget // 2, cut)
                if space > pos:
                    cut = space + 1
                while cut < be and (data[cut] & 0xC0) == 0x80:
                    cut += 1  # never inside a multi-byte character
            yield pos, cut, line_no, line_no
            pos = cut


def _is_heading_only(doc: ParsedDocument, sec: _Section, block: tuple[int, int]) -> bool:
    a, b = block
    if a != sec.start:
        return False
    if b - a == 1:
        return True
    return b - a == 2 and bool(SETEXT_UNDERLINE.match(doc.lines[a + 1]))

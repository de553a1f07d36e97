"""The block structure of a Markdown file, read by a CommonMark parser.

Sections, chunk boundaries and the lines that are code must be where a Markdown reader sees
them, so they come from pulldown-cmark (through pyromark), never from a scanner of our own: a
fence inside an HTML comment, a tab-indented closing fence in a list item, setext headings and
`#` lines inside HTML blocks are all the parser's business. This is the only module that
imports the parser; it turns its event stream (with UTF-8 byte ranges) into line-based facts:

- the front matter block (`---` … `---` or `...` at the very top);
- top-level headings (ATX and setext) with the words a reader sees: code spans, link and
  emphasis text kept, markup, inline HTML and image text dropped;
- every block (paragraphs, lists and their items, block quotes, tables and their rows, code
  and HTML blocks) with its depth, so long sections can be split between blocks;
- which lines are code (fenced and indented) and which are raw HTML blocks.

Headings inside block quotes, list items and footnotes are part of their section's text.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from typing import Any, NamedTuple

import pyromark

# The syntax of GitHub and Obsidian-style vaults. Heading attributes (`{#id}`) stay off:
# GitHub shows them as text.
OPTIONS = (
    pyromark.Options.ENABLE_TABLES
    | pyromark.Options.ENABLE_FOOTNOTES
    | pyromark.Options.ENABLE_STRIKETHROUGH
    | pyromark.Options.ENABLE_TASKLISTS
    | pyromark.Options.ENABLE_WIKILINKS
)
# YAML front matter is read only where Jekyll, Obsidian and GitHub read it: from the first
# line. The parser also takes a `---` … `---` pair after a blank line anywhere in a document
# for metadata (a rule, a heading and a paragraph to a reader), so the body is parsed
# without it.
FRONT_MATTER_OPTIONS = OPTIONS | pyromark.Options.ENABLE_YAML_STYLE_METADATA_BLOCKS
# Part of every document's chunk fingerprint: when how a file is read changes (this code, or
# the parser's version), every document is read again once; chunks whose text is unchanged
# keep their ids and vectors.
STRUCTURE_FORMAT = f"cmark=2/{pyromark.__version__}"

# Elements that are blocks. Anything else with a Start/End pair (emphasis, links, images,
# table cells) is inline, for our purposes.
BLOCK_KINDS = frozenset(
    {
        "Paragraph",
        "Heading",
        "BlockQuote",
        "CodeBlock",
        "HtmlBlock",
        "List",
        "Item",
        "Table",
        "TableHead",
        "TableRow",
        "FootnoteDefinition",
        "MetadataBlock",
        "DefinitionList",
        "DefinitionListTitle",
        "DefinitionListDefinition",
    }
)
_TEXT_EVENTS = ("Text", "Code", "InlineMath", "DisplayMath")  # words a reader sees
_LEVELS = {"H1": 1, "H2": 2, "H3": 3, "H4": 4, "H5": 5, "H6": 6}
_CLOSING = re.compile(r"^(?:---|\.\.\.)[ \t\r]*$", re.M)  # a line that may close front matter
_SURROGATE = re.compile("[\udc80-\udcff]")
# A wiki link's part that names a note or URL rather than showing words (Dendron writes
# `[[label|target]]`, Obsidian `[[target|label]]`).
_TARGET_LIKE = re.compile(r"^\S*(?:://|[./#:])\S*$")


@dataclass(frozen=True, slots=True)
class Heading:
    level: int
    text: str
    line: int  # 0-based index of the heading's first line (the text line of a setext heading)
    end: int = -1  # 0-based index of the line after the heading (after a setext underline)


class Block(NamedTuple):
    kind: str  # the parser's name: Paragraph, List, Item, CodeBlock, Heading, ...
    depth: int  # 0 for a block of the document itself, 1 for its children, ...
    start: int  # first line, 0-based
    end: int  # line after the last one


@dataclass
class Structure:
    front_matter: tuple[int, int] | None  # lines [start, end) of the YAML block, delimiters in
    headings: list[Heading]  # top level only, in order
    blocks: list[Block]  # every block, in document order (parents before their children)
    top: list[int]  # indexes of the blocks of the document itself (depth 0)
    code: bytearray  # 1 on lines of fenced or indented code blocks
    html: bytearray  # 1 on lines of raw HTML blocks (comments included)


_new_tuple = tuple.__new__  # builds a Block without NamedTuple's Python-level __new__


def _wiki_text(dest: str, shown: str) -> str:
    """The label a reader sees for `[[a|b]]`, in either vault's order."""
    if _TARGET_LIKE.match(shown) and not _TARGET_LIKE.match(dest):
        return dest
    return shown


_PLAIN, _IMAGE = ("", 0, ""), ("Image", 0, "")  # inline elements opened in a heading


class _HeadingText:
    """Collects the words a reader sees in one heading from its inline events."""

    def __init__(self, level: int, line: int, end: int) -> None:
        self.level, self.line, self.end = level, line, end
        self.parts: list[str] = []
        self.open: list[tuple[str, int, str]] = []  # inline elements: (kind, first part, dest)
        self.hidden = 0  # inside an image: its alt text is not shown

    def feed(self, event: Any) -> bool:
        """Take one event; False for the end of the heading itself."""
        if "End" in event:
            if not self.open:
                return False
            kind, at, dest = self.open.pop()
            if kind == "Image":
                self.hidden -= 1
            elif kind == "WikiLink":
                self.parts[at:] = [_wiki_text(dest, "".join(self.parts[at:]))]
        elif "Start" in event:
            tag = event["Start"]
            if type(tag) is dict and "Image" in tag:
                self.hidden += 1
                self.open.append(_IMAGE)
            elif type(tag) is dict and "Link" in tag and "WikiLink" in tag["Link"]["link_type"]:
                self.open.append(("WikiLink", len(self.parts), tag["Link"]["dest_url"]))
            else:
                self.open.append(_PLAIN)
        elif not self.hidden:
            if event == "SoftBreak" or event == "HardBreak":
                self.parts.append(" ")
            else:
                self.parts.extend(event[k] for k in _TEXT_EVENTS if k in event)
        return True

    def heading(self) -> Heading:
        return Heading(self.level, " ".join("".join(self.parts).split()), self.line, self.end)


def _front_matter(text: str, base: int, offsets: list[int], found: Structure) -> tuple[str, int]:
    """A front matter block on the first line: recorded in `found`; returns the text after it
    and that text's byte offset."""
    # The parser reads the whole text it is given before its first event: give it the lines up
    # to the first that could close the block, which is as far as its decision depends on.
    close = _CLOSING.search(text, 3)
    head = text[: close.end()] if close else text
    first = next(pyromark.events_with_range(head, options=FRONT_MATTER_OPTIONS), None)
    tag = first[0].get("Start") if first is not None and type(first[0]) is dict else None
    if first is None or type(tag) is not dict or "MetadataBlock" not in tag:
        return text, base
    end = first[1]["end"]
    b = bisect_right(offsets, end - 1 + base)  # the line after the closing delimiter
    found.front_matter = (0, b)
    lines = text.split("\n", b)  # the text after it: what follows the b-th line end
    return (lines[b] if len(lines) > b else ""), offsets[b]


def read_structure(text: str, offsets: list[int], n_lines: int, *, lossy: bool) -> Structure:
    """Parse `text` (the file decoded; `lossy` when invalid bytes were decoded as surrogates)
    and place every block on the lines whose byte offsets are `offsets`."""
    base = 0
    if text.startswith("\ufeff"):  # the parser would read a BOM as text: skip its 3 bytes
        text, base = text[1:], 3
    if lossy:  # each undecodable byte became one surrogate: one '?' keeps every offset
        text = _SURROGATE.sub("?", text)
    found = Structure(None, [], [], [], bytearray(n_lines), bytearray(n_lines))
    blocks, top = found.blocks, found.top
    if text.startswith("---"):
        text, base = _front_matter(text, base, offsets, found)
    marks = {"CodeBlock": found.code, "HtmlBlock": found.html}
    # A block's depth is the number of open blocks around it: those whose byte range ends
    # after it starts (siblings never overlap), so End events need no bookkeeping.
    ends: list[int] = []
    heading: _HeadingText | None = None  # the top-level heading being read
    # A pyromark Event: a one-key dict or a bare string ("SoftBreak", "HardBreak", "Rule").
    # `"Start" in event` is False for those strings too, but mypy cannot narrow on it, and a
    # type() test per event would slow this loop by a fifth.
    event: Any
    for event, rng in pyromark.events_with_range(text, options=OPTIONS):
        if heading is not None:
            if "Text" in event and not heading.hidden:  # most of a heading: plain words
                heading.parts.append(event["Text"])
                continue
            if heading.feed(event):
                continue
            found.headings.append(heading.heading())
            heading = None
        if "Start" in event:
            tag = event["Start"]
            kind = tag if type(tag) is str else next(iter(tag))
            if kind not in BLOCK_KINDS:
                continue
        elif event == "Rule":
            kind = "Rule"
        else:
            continue
        start, end = rng["start"], rng["end"]
        while ends and ends[-1] <= start:
            ends.pop()
        if not ends:
            top.append(len(blocks))
        a = bisect_right(offsets, start + base) - 1
        b = bisect_right(offsets, end - 1 + base, a)
        blocks.append(_new_tuple(Block, (kind, len(ends), a, b)))
        if kind in marks:
            marks[kind][a:b] = b"\x01" * (b - a)
        elif kind == "Heading" and not ends:
            heading = _HeadingText(_LEVELS[tag["Heading"]["level"]], a, b)
        ends.append(end)
    return found

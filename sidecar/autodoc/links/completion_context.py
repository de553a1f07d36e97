"""What the text before the cursor is writing, for link completion: a note's name after `[[`,
one of its headings after `[[note#` (`[[#`: the document's own), a block id after `[[note#^`,
a path after `](`, a heading's slug after `](path#`, or a tag after a `#` at a word's start.

Read from the editor's text alone (nothing indexed), per keystroke: the line, and for code
fences and front matter the lines above it. The completed text starts after the opener (`[[`,
`#`, `^`, `(`, the path's last `/`) so that what a client filters against is what was typed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Literal

Kind = Literal["note", "heading", "block", "path", "anchor", "tag"]

# Of the paragraph around the cursor, for its meaning: ~80-105 tokens, embedded by the bundled
# model on one thread in ~15 ms on 2 cores (1,200 characters, 256 tokens: ~40 ms).
PARAGRAPH_CHARS = 320
# An ATX heading line: a `#` run then a space or the line's end (`#tag` is no heading).
_HEADING_LINE = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")
# A fence line, in a list item or a quote too (its indent and `>` markers before it).
_FENCE = re.compile(r"^[ \t>]*(`{3,}|~{3,})")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_TAG = re.compile(r"(?<!\S)#([\w/-]*)$")
_TAG_TAIL = re.compile(r"[\w/-]*")
_NOT_ALNUM = re.compile(r"[\W_]+")
# A subword's first character: after a separator, at a camel hump, where letters and digits meet.
_WORD_START = re.compile(r"(?<![^\W_])[^\W_]|(?<=[a-z])[A-Z]|(?<=[^\W\d_])\d|(?<=\d)[^\W\d_]")


@dataclass(frozen=True)
class Where:
    """What is being written at the cursor."""

    kind: Kind
    typed: str
    """What is written between `start` and the cursor."""
    start: int
    """Where the completed text begins on the line (a string offset)."""
    cursor: int
    tail: int
    """The end of the name the cursor is in (what follows the cursor up to its closer)."""
    closed: bool
    """The closer (`]]`, `)`), or what goes on after the name (`#`, `|`), follows the tail:
    the entries add no closer."""
    opener: int
    """Where the link starts (its `[[` or `[`); the tag's `#`."""
    note: str = ""
    """Heading and block: the note named before the `#` ("": the document itself); path and
    anchor: the folder or path typed before the segment or the `#`."""


def context_at(lines: list[str], index: int, cursor: int, label_first: bool = False
               ) -> Where | None:  # fmt: skip
    """What line `index` (0-based) is writing at string offset `cursor`; None where nothing
    is completed (prose, code, a link's label, a web address). `label_first`: the vault writes
    `[[label|target]]` (Dendron), so the note is named after the `|`."""
    if not 0 <= index < len(lines):
        return None
    line = lines[index]
    before = line[:cursor]
    if before.count("`") % 2:
        return None
    where: Where | None = None
    wiki, md = before.rfind("[["), before.rfind("](")
    if wiki >= 0 and wiki > md and "]]" not in before[wiki:]:
        where = _wiki(line, wiki, cursor, label_first)
    elif md >= 0 and ")" not in before[md:] and before.rfind("[", 0, md) >= 0:
        where = _markdown(line, md, cursor)
    elif (
        (m := _TAG.search(before))
        and not _HEADING_LINE.match(line)
        and not _in_front_matter(lines, index)
    ):
        tail = _TAG_TAIL.match(line, cursor)
        end = tail.end() if tail else cursor
        where = Where("tag", m[1], m.start(1), cursor, end, True, m.start())
    # the lines above are read only for a line that writes something (prose costs nothing)
    return None if where is None or _in_fence(lines, index) else where


def _wiki(line: str, opener: int, cursor: int, label_first: bool) -> Where | None:
    """`[[name`, `[[name#heading`, `[[name#^block`; nothing in the label after a `|` (label
    first, Dendron's `[[label|name`: the name after it, nothing in the label before it)."""
    inner = line[opener + 2 : cursor]
    if "[" in inner:
        return None
    if "|" in inner:
        if not label_first:
            return None
        bar = opener + 2 + inner.rindex("|")
        found = _wiki(line, bar - 1, cursor, False)  # the name after `|`, as after a `[[`
        return None if found is None else replace(found, opener=opener)
    if label_first and "|" in line[cursor:].split("]]", 1)[0]:
        return None  # in the label of `[[label|name]]`
    if "#" not in inner:
        tail = _until(line, cursor, ("#", "|", "]]", "["))
        closed = _follows(line, tail, ("]]", "#", "|"))
        return Where("note", inner, opener + 2, cursor, tail, closed, opener)
    note, fragment = inner.split("#", 1)
    tail = _until(line, cursor, ("|", "]]", "["))
    closed = _follows(line, tail, ("]]", "|"))
    if fragment.startswith("^"):
        start = cursor - len(fragment) + 1
        return Where("block", fragment[1:], start, cursor, tail, closed, opener, note.strip())
    start = cursor - len(fragment)
    return Where("heading", fragment, start, cursor, tail, closed, opener, note.strip())


def _markdown(line: str, paren: int, cursor: int) -> Where | None:
    """`](folder/na`, `](path#slu`, `](#slu`; nothing for a web address or a spaced text."""
    inner = line[paren + 2 : cursor]
    if any(c.isspace() for c in inner) or inner.startswith("<") or _SCHEME.match(inner):
        return None
    opener = line.rfind("[", 0, paren)
    if "#" in inner:
        path, fragment = inner.split("#", 1)
        tail = _until(line, cursor, (")", " ", "\t"))
        return Where("anchor", fragment, cursor - len(fragment), cursor, tail,
                     _follows(line, tail, (")",)), opener, path)  # fmt: skip
    folder = inner[: inner.rfind("/") + 1]
    tail = _until(line, cursor, ("/", "#", ")", " ", "\t"))
    closed = _follows(line, tail, (")", "#"))
    return Where("path", inner[len(folder) :], paren + 2 + len(folder), cursor, tail, closed,
                 opener, folder)  # fmt: skip


def _until(line: str, at: int, stops: tuple[str, ...]) -> int:
    """Where the first of `stops` occurs from `at` (the line's end if none does)."""
    found = [i for i in (line.find(s, at) for s in stops) if i >= 0]
    return min(found) if found else len(line)


def _follows(line: str, at: int, closers: tuple[str, ...]) -> bool:
    return line.startswith(closers, at)


def _in_fence(lines: list[str], index: int) -> bool:
    """Whether line `index` is inside a fenced code block (its fences count as code)."""
    return bool(fenced_lines(lines[: index + 1])[index])


def fenced_lines(lines: list[str]) -> bytearray:
    """1 on each line of a fenced code block, its fences included (CommonMark's rule: a
    closing fence of the opening's character, at least as long, with nothing after it)."""
    out = bytearray(len(lines))
    fence = ""
    for i, line in enumerate(lines):
        m = _FENCE.match(line) if "``" in line or "~~" in line else None
        if fence:
            out[i] = 1
            if (
                m
                and m[1][0] == fence[0]
                and len(m[1]) >= len(fence)
                and not line[m.end() :].strip()
            ):
                fence = ""
        elif m:
            out[i] = 1
            fence = m[1]
    return out


def _in_front_matter(lines: list[str], index: int) -> bool:
    if not lines or lines[0].rstrip() != "---":
        return False
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ("---", "..."):
            return index <= i
    return False


def paragraph_ahead(lines: list[str], index: int, cursor: int) -> str:
    """At a lone `[` before the cursor, the paragraph a `[[` typed next will be ranked by
    ("" elsewhere)."""
    line = lines[index] if 0 <= index < len(lines) else ""
    if not (
        0 < cursor <= len(line) and line[cursor - 1] == "[" and line[cursor - 2 : cursor] != "[["
    ):
        return ""
    typed = [*lines[:index], line[:cursor] + "[" + line[cursor:], *lines[index + 1 :]]
    where = context_at(typed, index, cursor + 1)
    return paragraph(typed, index, where) if where is not None and where.kind == "note" else ""


def paragraph(lines: list[str], index: int, where: Where) -> str:
    """The paragraph around the cursor without the link being written: what the entries are
    ranked by meaning against (the same text at each keystroke inside one link)."""
    top = index
    while top > 0 and lines[top - 1].strip():
        top -= 1
    bottom = index + 1
    while bottom < len(lines) and lines[bottom].strip():
        bottom += 1
    line = lines[index]
    end = where.tail + (2 if line.startswith("]]", where.tail) else 0)
    half = PARAGRAPH_CHARS // 2
    own = line[max(0, where.opener - half) : where.opener] + line[end : end + half]
    rest = max(0, PARAGRAPH_CHARS - len(own)) // 2
    above = "\n".join(lines[top:index])[-rest:] if rest else ""
    below = "\n".join(lines[index + 1 : bottom])[:rest] if rest else ""
    return "\n".join(p for p in (above, own, below) if p.strip()).strip()


@dataclass
class Entry:
    """One thing offered: shown as `label`, replacing what was typed with `new_text`."""

    label: str
    kind: Literal["note", "heading", "block", "file", "folder", "tag"]
    detail: str
    new_text: str
    filter_text: str
    path: str = ""
    line: int = 0


def _word_starts(name: str) -> list[int]:
    """Where a subword of `name` begins: after a separator, at a camel hump, where letters
    and digits meet."""
    return [m.start() for m in _WORD_START.finditer(name)]


def continued(typed: str, name: str) -> str:
    """`typed`, continued as `name` goes on after the letters typed match it from one of its
    subwords ("sea" and "Search pipeline": "search pipeline"; "pipe": "pipeline"): what a
    client that keeps entries starting with the typed text keeps. `name` where nothing
    matches."""
    found = _continuation(typed, name)
    return name if found is None else found


def matches(typed: str, name: str) -> bool:
    """Whether the letters typed begin one of `name`'s subwords and run on from there (any
    name matches nothing typed)."""
    return _continuation(typed, name) is not None


def _continuation(typed: str, name: str) -> str | None:
    want = _NOT_ALNUM.sub("", typed.casefold())
    if not want:
        return typed + name
    if want not in _NOT_ALNUM.sub("", name.casefold()):
        return None  # the quick answer for most names
    for start in _word_starts(name):
        k = 0
        for i in range(start, len(name)):
            c = name[i]
            if not c.isalnum():
                continue
            if c.casefold() != want[k]:
                break
            k += 1
            if k == len(want):
                return typed + name[i + 1 :]
    return None

"""Read one Markdown file into lines with byte offsets, metadata, tags and links.

Everything downstream (chunk spans, snippets, `doc.read`) depends on byte offsets that match the
file on disk, frontmatter included, so this module never normalises the text it measures.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import unquote

import yaml
from frontmatter.default_handlers import YAMLHandler

_YAML = YAMLHandler()  # python-frontmatter: its delimiter regex and its SafeLoader-based load
# libyaml's safe loader when PyYAML was built with it: same safety, several times faster.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_FM_MAX_BYTES = 256 * 1024
_FM_MAX_NODES = 20_000  # YAML aliases can make a 1 KB block expand to billions of nodes

ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
SETEXT_UNDERLINE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})")
NOT_PARAGRAPH = re.compile(r"^\s*(?:[-*+>|]|\d+[.)]\s|#|$)")
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
INLINE_TAG = re.compile(r"(?<!\S)#([A-Za-z0-9_][\w/-]*)")  # Obsidian: after a space
WIKILINK = re.compile(r"!?\[\[([^\[\]|#\n]*)(?:#([^\[\]|\n]*))?(?:\|([^\[\]\n]*))?\]\]")
MD_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(?:<([^<>\n]+)>|([^()\s<>]+))(?:\s+[\"'(][^)]*)?\)"
)
_HTML_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


@dataclass
class Link:
    kind: str  # "wiki", "md", or "meta" (a frontmatter reference)
    target: str  # as written, normalised (no anchor)
    heading: str
    line: int  # 1-based
    relation: str = ""  # "supersedes" or "superseded_by" when the text says so


SUPERSEDE_FIELDS = {
    "superseded_by": "superseded_by",
    "superseded-by": "superseded_by",
    "supersededby": "superseded_by",
    "supersedes": "supersedes",
}


_SUPERSEDED_BY = re.compile(
    r"^\W*(?:status\W*)?(?:this (?:decision|adr|record|document) (?:is|was|has been) [*_]*)?"
    r"superseded[ -]by\b",
    re.I,
)
_SUPERSEDES = re.compile(r"^\W*(?:status\W*)?supersedes\b", re.I)


def _relation(line: str) -> str:
    """A line that says the whole document is superseded: "Superseded by [[0007]]",
    "> This decision is **superseded by [ADR-57](0057.md)**", "Supersedes [ADR 3](0003.md)".
    A sentence about part of a document ("these IP ranges have been superseded by") is not.
    """
    if _SUPERSEDED_BY.match(line):
        return "superseded_by"
    if _SUPERSEDES.match(line):
        return "supersedes"
    return ""


@dataclass(frozen=True)
class Heading:
    level: int
    text: str
    line: int  # 0-based index of the heading's first line (the text line of a setext heading)


@dataclass
class ParsedDocument:
    data: bytes
    lines: list[str]  # decoded, without line terminators
    offsets: list[int]  # byte offset of each line start, plus len(data) at the end
    body_line: int  # 0-based index of the first line after the frontmatter
    meta: dict[str, Any]
    title: str
    tags: list[str]
    aliases: list[str]
    links: list[Link]
    headings: list[Heading] = field(default_factory=list)
    code: bytearray = field(default_factory=bytearray)  # 1 where a line is fenced code
    problems: list[str] = field(default_factory=list)

    @property
    def frontmatter_span(self) -> tuple[int, int] | None:
        """Line range [start, end) of the frontmatter block, delimiters included."""
        return (0, self.body_line) if self.body_line else None

    def byte_span(self, start: int, end: int) -> tuple[int, int]:
        """Bytes of lines [start, end), without the final line terminator."""
        b0 = self.offsets[start]
        b1 = self.offsets[end] - 1 if end < len(self.lines) else self.offsets[end]
        if b1 > b0 and self.data[b1 - 1 : b1] == b"\r":
            b1 -= 1
        return b0, max(b0, b1)


def split_lines(data: bytes) -> tuple[list[str], list[int], str | None]:
    """Lines and their byte offsets; invalid UTF-8 is kept byte-exact via surrogateescape."""
    problem = None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        problem = f"invalid UTF-8 at byte {exc.start}: shown as U+FFFD"
        text = data.decode("utf-8", "surrogateescape")
    lines = text.split("\n")
    if text.isascii():
        sizes = [len(line) + 1 for line in lines]
    else:
        sizes = [len(line.encode("utf-8", "surrogateescape")) + 1 for line in lines]
    offsets = [0, *accumulate(sizes)]
    offsets[-1] = len(data)  # the last line has no terminator
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    if problem:  # offsets are measured; from here on the text only needs to be printable
        lines = [ln.encode("utf-8", "surrogateescape").decode("utf-8", "replace") for ln in lines]
    if lines and lines[0].startswith("\ufeff"):
        lines[0] = lines[0][1:]
    return lines, offsets, problem


def _json_safe(value: Any, budget: list[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise ValueError("frontmatter expands too far (YAML aliases?)")
    if isinstance(value, dict):
        return {str(k): _json_safe(v, budget) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_json_safe(v, budget) for v in value]
    if isinstance(value, (_dt.date, _dt.datetime, _dt.time)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _frontmatter(lines: list[str]) -> tuple[int, dict[str, Any], str | None]:
    """(first body line, metadata, problem). A block is `---` … `---` at the very top."""
    if not lines or not _YAML.FM_BOUNDARY.match(lines[0]):
        return 0, {}, None
    end = next((i for i in range(1, len(lines)) if _YAML.FM_BOUNDARY.match(lines[i])), None)
    if end is None:
        return 0, {}, None
    block = "\n".join(lines[1:end])
    if len(block) > _FM_MAX_BYTES:
        return end + 1, {}, f"frontmatter larger than {_FM_MAX_BYTES // 1024} KB: ignored"
    try:
        loaded = _YAML.load(block, Loader=_SAFE_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return end + 1, {}, f"malformed frontmatter{where}: {reason}"
    except (ValueError, TypeError, RecursionError) as exc:  # e.g. dates PyYAML cannot build
        return end + 1, {}, f"malformed frontmatter: {exc}"
    if loaded is None:
        return end + 1, {}, None
    if not isinstance(loaded, dict):
        return end + 1, {}, "frontmatter is not a mapping: ignored"
    try:
        meta = _json_safe(loaded, [_FM_MAX_NODES])
    except (ValueError, RecursionError) as exc:
        return end + 1, {}, f"malformed frontmatter: {exc}"
    return end + 1, meta, None


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v for v in re.split(r"[,\s]+", value) if v] if "," in value else [value]
    if isinstance(value, list):
        return [str(v) for v in value if v is not None and str(v).strip()]
    return [str(value)]


def normalise_tag(tag: str) -> str:
    return tag.strip().lstrip("#").lower()


def clean_heading(text: str) -> str:
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # [label](url) → label
    text = _HTML_TAG.sub("", text)  # <a name="x"></a> anchors
    return text.replace("`", "").replace("**", "").strip()


class FenceTracker:
    """Follows fenced code blocks line by line, so headings and tags inside code are ignored."""

    def __init__(self) -> None:
        self.fence: str | None = None

    def feed(self, line: str) -> bool:
        """True when the line opens, closes or lies inside a fenced code block."""
        m = FENCE_OPEN.match(line)
        if self.fence is not None:
            fence = self.fence
            closes = m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence)
            if closes and not line.strip().strip(fence[0]):
                self.fence = None
            return True
        if m and not (m.group(1)[0] == "`" and "`" in line[m.end() :]):
            self.fence = m.group(1)
            return True
        return False


def scan_structure(lines: list[str], start: int) -> tuple[bytearray, list[Heading]]:
    """One pass over the body: which lines are fenced code, and where the headings are."""
    n = len(lines)
    code = bytearray(n)
    paragraph = bytearray(n)  # a line that could be the text of a setext heading
    boundary = bytearray(n)  # blank or a heading: what may precede a setext heading's text
    headings: list[Heading] = []
    fences = FenceTracker()
    for i in range(start, n):
        line = lines[i]
        if fences.feed(line):
            code[i] = 1
            continue
        if "#" in line:
            m = ATX_HEADING.match(line)
            if m:
                headings.append(Heading(len(m.group(1)), clean_heading(m.group(2) or ""), i))
                boundary[i] = 1
                continue
        if (
            i > start
            and paragraph[i - 1]
            and (i - 1 == start or boundary[i - 2])
            and SETEXT_UNDERLINE.match(line)
        ):
            level = 1 if line.lstrip()[0] == "=" else 2
            headings.append(Heading(level, clean_heading(lines[i - 1]), i - 1))
            boundary[i] = 1
            continue
        if not line.strip():
            boundary[i] = 1
        elif not line.startswith("    ") and not NOT_PARAGRAPH.match(line):
            paragraph[i] = 1
    return code, headings


def iter_prose_lines(lines: list[str], start: int, code: bytearray):
    """(index, line) outside fenced and indented code, with inline code blanked."""
    for i in range(start, len(lines)):
        line = lines[i]
        if code[i] or line.startswith(("    ", "\t")):
            continue
        if "`" in line:
            line = _INLINE_CODE.sub(lambda mm: " " * len(mm.group(0)), line)
        yield i, line


def parse_document(data: bytes, path: str) -> ParsedDocument:
    lines, offsets, problem = split_lines(data)
    problems = [problem] if problem else []
    body_line, meta, fm_problem = _frontmatter(lines)
    if fm_problem:
        problems.append(fm_problem)

    tags: list[str] = [normalise_tag(t) for t in _as_list(meta.get("tags"))]
    aliases = _as_list(meta.get("aliases")) + _as_list(meta.get("alias"))
    links: list[Link] = []
    code, headings = scan_structure(lines, body_line)
    first_h1 = next((h.text for h in headings if h.level == 1 and h.text), None)
    for i, line in iter_prose_lines(lines, body_line, code):
        if "#" in line and not ATX_HEADING.match(line):
            tags.extend(normalise_tag(t) for t in INLINE_TAG.findall(line) if _tagish(t))
        relation = _relation(line) if "supersed" in line.lower() else ""
        if "[[" in line:
            for m in WIKILINK.finditer(line):
                target = m.group(1).strip()
                if target:
                    links.append(Link("wiki", target, (m.group(2) or "").strip(), i + 1, relation))
        if "](" in line:
            for m in MD_LINK.finditer(line):
                target = m.group(1) or m.group(2)
                if _SCHEME.match(target) or target.startswith("#"):
                    continue
                heading = ""
                if "#" in target:
                    target, heading = target.split("#", 1)
                target = unquote(target.split("?", 1)[0])
                if target:
                    links.append(Link("md", target, heading, i + 1, relation))

    for key, relation in SUPERSEDE_FIELDS.items():
        for target in _as_list(meta.get(key)):
            links.append(Link("meta", target.strip(), "", 1, relation))

    title = meta.get("title")
    if not isinstance(title, str) or not title.strip():
        title = first_h1 or PurePosixPath(path).stem
    seen: set[str] = set()
    tags = [t for t in tags if t and not (t in seen or seen.add(t))]
    return ParsedDocument(
        data=data,
        lines=lines,
        offsets=offsets,
        body_line=body_line,
        meta=meta,
        title=title.strip(),
        tags=tags,
        aliases=[a.strip() for a in aliases if a.strip()],
        links=links,
        headings=headings,
        code=code,
        problems=problems,
    )


def _tagish(tag: str) -> bool:
    """`#123` is an issue number and `#fff` could be a colour; a tag needs a letter."""
    return any(c.isalpha() for c in tag)

"""Read one Markdown file into lines with byte offsets, metadata, tags and links.

Everything downstream (chunk spans, snippets, `doc.read`) depends on byte offsets that match the
file on disk, frontmatter included, so this module never normalises the text it measures.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from functools import cache
from itertools import accumulate
from operator import or_
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import unquote

from autodoc.parse.markdown import Block, Heading, read_structure

_FM_MAX_BYTES = 256 * 1024
_FM_MAX_NODES = 20_000  # YAML aliases can make a 1 KB block expand to billions of nodes

# Inline code, on one line: a run of backticks, text, the same run. Starting with a literal
# and taking non-backticks whole keeps the scan fast.
_INLINE_CODE = re.compile(r"`(`*)(?:[^`\n]++|(?!`\1)`)+?`\1")
# Obsidian: `#tag` after a space or at a line's start (the lookbehind sees the character
# before the `#`).
INLINE_TAG = re.compile(r"#(?<!\S#)([A-Za-z0-9_][\w/-]*)")
# A wiki link: `[[…]]` on one line; what its words mean (which side of a `|` is the label) is
# the vault's dialect's (`wiki_parts`). In a table row the `|` is written `\|` (Obsidian).
WIKILINK = re.compile(r"\[\[([^\[\]\n]*)\]\]")
# Tags and links never cross a line (prose is scanned a run of lines at a time), and each
# pattern starts with a literal, so a scan jumps from one `#` or `[` to the next (`![[x]]` and
# `![image](x)` match from their `[`). The possessive repeats never backtrack.
MD_LINK = re.compile(
    r"\[(?:[^\[\]\n]++|\[[^\[\]\n]*+\])*+\]\([ \t]*(?:<([^<>\n]+)>|([^()\s<>]+))"
    r"(?:[ \t]+[\"'(][^)\n]*)?\)"
)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


@dataclass
class Link:
    kind: str  # "wiki", "md", "meta" (a frontmatter reference) or "record" (below)
    target: str  # as written, normalised (no anchor)
    heading: str
    line: int  # 1-based
    relation: str = ""  # "supersedes" or "superseded_by" when the text says so
    label: str = ""  # a wiki link's words to show (`[[target|label]]`)


@dataclass(frozen=True)
class WikiParts:
    """A wiki link's inner text read one way: where its target, heading and label are (spans
    into the inner text, trimmed; `heading` None without a `#`, `label` None without a `|`)."""

    inner: str
    target: tuple[int, int]
    heading: tuple[int, int] | None
    label: tuple[int, int] | None

    def text(self, span: tuple[int, int] | None) -> str:
        return "" if span is None else self.inner[span[0] : span[1]]


def wiki_parts(inner: str, label_first: bool = False) -> WikiParts:
    """The parts of `[[inner]]`: `target#heading|label` (Obsidian, Foam, most tools) or, with
    `label_first`, `label|target#heading` (Dendron). A `\\|` (a table row's escaped bar) is
    the bar."""
    bar = inner.rfind("|") if label_first else inner.find("|")
    if bar < 0:
        ref, label = (0, len(inner)), None
    else:
        cut = bar - 1 if bar and inner[bar - 1] == "\\" else bar
        ref, label = (
            ((bar + 1, len(inner)), (0, cut)) if label_first else ((0, cut), (bar + 1, len(inner)))
        )
    hash_at = inner.find("#", ref[0], ref[1])
    if hash_at < 0:
        target, heading = ref, None
    else:
        target, heading = (ref[0], hash_at), _trim(inner, (hash_at + 1, ref[1]))
    return WikiParts(
        inner, _trim(inner, target), heading, None if label is None else _trim(inner, label)
    )


def _trim(text: str, span: tuple[int, int]) -> tuple[int, int]:
    """The span without the blanks at its ends."""
    start, end = span
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


SUPERSEDE_FIELDS = {
    "superseded_by": "superseded_by",
    "superseded-by": "superseded_by",
    "supersededby": "superseded_by",
    "supersedes": "supersedes",
}


# Part of every document's chunk fingerprint: bump when what is read from a document (links,
# their relations, tags, the names its title gives) changes, so every document is read again once.
READING_FORMAT = "links=8"

_SUPERSEDED_BY = re.compile(
    r"^\W*(?:status\W*)?(?:this (?:decision|adr|record|document) (?:is|was|has been) [*_]*)?"
    r"superseded\b(?:\s*\([^)]*\))?(?:[ -]by\b|\s*:?\s*(?=\[))",  # "by", or a link next
    re.I,
)
_SUPERSEDES = re.compile(r"^\W*(?:status\W*)?supersedes\b", re.I)


_SUPERSED = re.compile("supersed", re.I)  # cheap first look before the two patterns

# A record's number where a relation names one: "ADR 32", "ADR-0057", "[0019](…)",
# "[036. Multi-cluster](…)", a site link "/adr/32" or "/adr/ADR-293". Such a reference becomes
# a "record" link: it resolves to the one document in the source's folder whose file name
# carries that number (`record_number`), and it counts only where the relation's own links
# resolve to nothing (a site-absolute link, no link at all). Its target is the number.
_RECORD_REF = re.compile(
    r"(?:\b(?:adr|rfc|dr|record|decision)s?[-_ #/]*|\[\s*)0*(\d{1,6})(?![\d.]\d)", re.I
)
# The number a file name gives its record: `0042-use-kafka`, `ADR-42`, `adr-077-block-retention`,
# `2023-06-19_024-event-sourced-persistence` (a date first, then the number); a name that is
# only a date has none.
_STEM_RECORD = re.compile(
    r"^(?!\d{4}-\d{2}-\d{2}$)(?:\d{4}-\d{2}-\d{2}[-_ ]?)?(?:[A-Za-z]{1,6}[-_ ]?)?0*(\d{1,6})"
    r"(?:[-_ ]|$)"
)
# Frontmatter keys whose value names the successor in words: `deprecated-reason: … See ADR-293`.
_RETIRED_KEY = re.compile(r"deprecat|supersed|replac", re.I)


def record_number(stem: str) -> str:
    """The record number in a file's stem, without its zeros; "" when it has none."""
    m = _STEM_RECORD.match(stem)
    return m.group(1) if m else ""


MAX_RECORD_REFS = 16  # per line or frontmatter value: "superseded by ADR 23 and ADR 26"


def record_refs(text: str) -> list[str]:
    """The record numbers `text` names, each once, in order (at most MAX_RECORD_REFS)."""
    refs = dict.fromkeys(m.group(1) for m in _RECORD_REF.finditer(text))
    return list(refs)[:MAX_RECORD_REFS]


def _blank(m: re.Match) -> str:
    return " " * len(m.group(0))  # keeps offsets


def _relation(line: str) -> str:
    """A line that says the whole document is superseded: "Superseded by [[0007]]",
    "> This decision is **superseded by [ADR-57](0057.md)**", "⌛️ Superseded [0019](0019.md)",
    "Superseded (never implemented) by [ADR 32](0032.md)", "Supersedes [ADR 3](0003.md)".
    A sentence about part of a document ("these IP ranges have been superseded by") is not.
    """
    if _SUPERSEDED_BY.match(line):
        return "superseded_by"
    if _SUPERSEDES.match(line):
        return "supersedes"
    return ""


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
    headings: list[Heading] = field(default_factory=list)  # top level, as a reader sees them
    blocks: list[Block] = field(default_factory=list)  # every block, parents first
    top_blocks: list[int] = field(default_factory=list)  # indexes of the depth-0 blocks
    code: bytearray = field(default_factory=bytearray)  # 1 on lines of code blocks
    html: bytearray = field(default_factory=bytearray)  # 1 on lines of raw HTML blocks
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


def split_lines(data: bytes) -> tuple[str, list[str], list[int], str | None]:
    """The text, its lines and their byte offsets; invalid UTF-8 is kept byte-exact via
    surrogateescape (one surrogate per undecodable byte)."""
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
    return text, lines, offsets, problem


def outline(data: bytes) -> tuple[list[str], list[Heading]]:
    """A document's lines and its headings as the index reads them (top level, front matter
    left out): an editor's outline agrees with the chunks' breadcrumbs."""
    text, lines, offsets, problem = split_lines(data)
    return lines, read_structure(text, offsets, len(lines), lossy=problem is not None).headings


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


@cache
def _yaml_reader() -> tuple[Any, Any]:
    """python-frontmatter's YAML handler (its SafeLoader-based load) and libyaml's safe loader
    when PyYAML was built with it: same safety, several times faster."""
    import yaml
    from frontmatter.default_handlers import YAMLHandler

    return YAMLHandler(), getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _frontmatter(
    lines: list[str], span: tuple[int, int] | None
) -> tuple[dict[str, Any], str | None]:
    """(metadata, problem) of the front matter block the parser found at lines [start, end)."""
    if span is None:
        return {}, None
    start, end = span
    end -= 1  # the closing delimiter's line
    block = "\n".join(lines[start + 1 : end])
    if len(block) > _FM_MAX_BYTES:
        return {}, f"frontmatter larger than {_FM_MAX_BYTES // 1024} KB: ignored"
    import yaml  # PyYAML loads with the first front matter read (a search reads none)

    handler, loader = _yaml_reader()
    try:
        loaded = handler.load(block, Loader=loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + start + 2})" if mark is not None else ""
        reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return {}, f"malformed frontmatter{where}: {reason}"
    except (ValueError, TypeError, RecursionError) as exc:  # e.g. dates PyYAML cannot build
        return {}, f"malformed frontmatter: {exc}"
    if loaded is None:
        return {}, None
    if not isinstance(loaded, dict):
        return {}, "frontmatter is not a mapping: ignored"
    try:
        meta = _json_safe(loaded, [_FM_MAX_NODES])
    except (ValueError, RecursionError) as exc:
        return {}, f"malformed frontmatter: {exc}"
    return meta, None


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


def prose_runs(doc: ParsedDocument, skip: bytes | bytearray) -> Iterator[tuple[int, str]]:
    """(first line index, text) of each run of body lines where `skip` is 0, inline code
    blanked: the prose where tags and links are written. Worked per run, not per line."""
    lines, n = doc.lines, len(doc.lines)
    i = skip.find(0, doc.body_line)
    while 0 <= i < n:
        j = skip.find(1, i)
        j = n if j < 0 else j
        text = "\n".join(lines[i:j])
        if "`" in text:
            text = _INLINE_CODE.sub(_blank, text)  # the pattern never crosses a line end
        yield i, text
        i = skip.find(0, j)


def parse_document(
    data: bytes, path: str, link_fields: Collection[str] = (), label_first: bool = False
) -> ParsedDocument:
    """`link_fields`: lowercased frontmatter keys the schema types `link`: their values name
    documents even when written as a plain name or path. `label_first`: the vault writes a wiki
    link's label before its target (`wiki_parts`)."""
    text, lines, offsets, problem = split_lines(data)
    problems = [problem] if problem else []
    structure = read_structure(text, offsets, len(lines), lossy=problem is not None)
    meta, fm_problem = _frontmatter(lines, structure.front_matter)
    if fm_problem:
        problems.append(fm_problem)
    doc = ParsedDocument(
        data=data,
        lines=lines,
        offsets=offsets,
        body_line=structure.front_matter[1] if structure.front_matter else 0,
        meta=meta,
        title="",
        tags=[normalise_tag(t) for t in _as_list(meta.get("tags"))],
        aliases=[a.strip() for a in _as_list(meta.get("aliases")) + _as_list(meta.get("alias"))],
        links=[],
        headings=structure.headings,
        blocks=structure.blocks,
        top_blocks=structure.top,
        code=structure.code,
        html=structure.html,
        problems=problems,
    )
    _read_prose(doc, link_fields, label_first)
    title = meta.get("title")
    if not isinstance(title, str) or not title.strip():
        first_h1 = next((h.text for h in doc.headings if h.level == 1 and h.text), None)
        title = first_h1 or PurePosixPath(path).stem
    doc.title = title.strip()
    doc.aliases = [a for a in doc.aliases if a]
    doc.tags = list(dict.fromkeys(t for t in doc.tags if t))  # each once, first place kept
    return doc


def _read_prose(
    doc: ParsedDocument, link_fields: Collection[str] = (), label_first: bool = False
) -> None:
    """Inline tags and links of the prose, outside code blocks and raw HTML blocks (which a
    reader sees as code or not at all), then frontmatter references. Tags in headings are
    not tags."""
    skip: bytes | bytearray = doc.code
    if 1 in doc.html:
        skip = bytes(map(or_, skip, doc.html))
    untagged = bytearray(skip)  # and the headings' lines, for tags
    for h in doc.headings:
        untagged[h.line : h.end] = b"\x01" * (h.end - h.line)
    links = doc.links
    for first, text in prose_runs(doc, untagged):
        if "#" in text:
            doc.tags.extend(normalise_tag(t) for t in INLINE_TAG.findall(text) if _tagish(t))
        _find_links(text, first, links, label_first)
    for h in doc.headings:
        for i in range(h.line, h.end):
            if not skip[i]:
                _find_links(_INLINE_CODE.sub(_blank, doc.lines[i]), i, links, label_first)
    links.sort(key=lambda ln: ln.line)  # stable: on a line, wiki links then the others
    meta = doc.meta
    for key, relation in SUPERSEDE_FIELDS.items():
        for target in _as_list(meta.get(key)):
            if target := meta_target(target, label_first):
                links.append(Link("meta", target, "", 1, relation))
    _meta_links(meta, link_fields, links, label_first)
    _meta_records(meta, links)


def _meta_links(
    meta: dict[str, Any], link_fields: Collection[str], out: list[Link], label_first: bool
) -> None:
    """Frontmatter links outside the supersession keys: every value of a `link`-typed field,
    and in any other field a value written whole as a link (`related: "[[0042-use-postgres]]"`,
    `see: "[ADR 7](0007-x.md)"`, not a web address)."""
    for key, value in meta.items():
        name = key.lower() if isinstance(key, str) else ""
        if not name or name in SUPERSEDE_FIELDS:
            continue
        items = value if isinstance(value, list) else [value]
        for item in items:
            if not isinstance(item, str) or not item.strip():
                continue
            v = item.strip()
            written_as_link = WIKILINK.fullmatch(v) or (
                (m := MD_LINK.fullmatch(v)) and not _SCHEME.match(m[1] or m[2])
            )
            if (name in link_fields or written_as_link) and (target := meta_target(v, label_first)):
                out.append(Link("meta", target, "", 1, ""))


def meta_target(value: str, label_first: bool = False) -> str:
    """A frontmatter reference as the document it names: `0042-use-postgres`, `[[0042-use-
    postgres]]` (its target, without heading or alias) or `[ADR 42](0042-use-postgres.md)`
    (its path, without anchor): the body's own link patterns, matching the whole value."""
    v = value.strip()
    if m := WIKILINK.fullmatch(v):
        parts = wiki_parts(m[1], label_first)
        return parts.text(parts.target)
    if m := MD_LINK.fullmatch(v):
        return unquote((m[1] or m[2]).split("#", 1)[0].split("?", 1)[0])
    return v


def _meta_records(meta: dict[str, Any], out: list[Link]) -> None:
    """Record links from frontmatter that names a successor by number: `status: superseded by
    ADR-0057`, `status: accepted; supersedes ADR-0045`, `superseded_by: 57`, `deprecated-reason:
    … See ADR-293`."""
    for key, value in meta.items():
        name = key.lower() if isinstance(key, str) else ""
        if not (name == "status" or _RETIRED_KEY.search(name)):
            continue
        values = value if isinstance(value, list) else [value]
        texts = [str(v) for v in values if isinstance(v, (str, int)) and not isinstance(v, bool)]
        for text in texts:
            if name == "status":
                relation = _status_relation(text)
            else:  # deprecated-reason, replaced_by, …: the record they name replaced this one
                relation = SUPERSEDE_FIELDS.get(name, "superseded_by")
            if not relation:
                continue
            bare = name in SUPERSEDE_FIELDS and text.strip().isdigit()  # superseded_by: 57
            for n in [text.strip().lstrip("0") or "0"] if bare else record_refs(text):
                out.append(Link("record", n, "", 1, relation))


def _status_relation(status: str) -> str:
    """The relation a status value states: "superseded by ADR-0057", "accepted; supersedes …"."""
    if re.search(r"\bsuperseded\b.*\bby\b", status, re.I):
        return "superseded_by"
    if re.search(r"\bsupersedes\b", status, re.I):
        return "supersedes"
    return ""


def _find_links(text: str, first: int, out: list[Link], label_first: bool = False) -> None:
    """Wiki and relative Markdown links in lines of prose that start at line index `first`;
    a link on a line that says the document is superseded carries that relation."""
    relations: dict[int, str] = {}  # per line, worked out once (a line may hold 10,000 links)

    def relation(m: re.Match, line: int) -> str:
        if line not in relations:
            relations[line] = _line_relation(text, m)
        return relations[line]

    if "[[" in text:
        for m, line in _at_lines(WIKILINK.finditer(text), text, first):
            if found := _wiki_link(m, label_first):
                found.line, found.relation = line + 1, relation(m, line)
                out.append(found)
    if "](" in text:
        for m, line in _at_lines(MD_LINK.finditer(text), text, first):
            if md := _md_target(m):
                out.append(Link("md", *md, line + 1, relation(m, line)))
    if _SUPERSED.search(text):
        _record_links(text, first, out)


def _wiki_link(m: re.Match, label_first: bool) -> Link | None:
    """A `[[…]]` match as a link (its `line` left at 1); None when it names no note."""
    parts = wiki_parts(m[1], label_first)
    target = parts.text(parts.target)
    if not target:
        return None
    return Link("wiki", target, parts.text(parts.heading), 1, "", parts.text(parts.label))


def _md_target(m: re.Match) -> tuple[str, str] | None:
    """(path, heading) of a relative Markdown link; None for a web address or an anchor."""
    target = m.group(1) or m.group(2)
    if _SCHEME.match(target) or target.startswith("#"):
        return None
    heading = ""
    if "#" in target:
        target, heading = target.split("#", 1)
    target = unquote(target.split("?", 1)[0])
    return (target, heading) if target else None


def links_on_line(
    text: str, label_first: bool = False, local: bool = False
) -> list[tuple[int, int, Link]]:
    """The wiki and relative Markdown links of one line: (start, end) character columns and
    the link as the indexer reads it (its `line` left at 1), in order: for an editor's
    definition, hover and document links. `local`: the links to a heading of the document
    itself too (`[[#Heading]]`, `[text](#heading)`), their target "" (the index keeps none)."""
    out: list[tuple[int, int, Link]] = []
    for m in WIKILINK.finditer(text):
        if found := _wiki_link(m, label_first):
            out.append((m.start(), m.end(), found))
        elif local and (parts := wiki_parts(m[1], label_first)).heading is not None:
            out.append((m.start(), m.end(), Link("wiki", "", parts.text(parts.heading), 1)))
    for m in MD_LINK.finditer(text):
        if md := _md_target(m):
            out.append((m.start(), m.end(), Link("md", *md, 1)))
        elif local and (dest := m.group(1) or m.group(2)).startswith("#") and len(dest) > 1:
            out.append((m.start(), m.end(), Link("md", "", unquote(dest[1:]), 1)))
    return sorted(out, key=lambda x: x[0])


def without_inline_code(line: str) -> str:
    """The line with its code spans blanked (offsets kept), as the indexer reads a line's links:
    `` `[[x]]` `` is not a link (a rename rewrites only what the index counted)."""
    return _INLINE_CODE.sub(_blank, line) if "`" in line else line


def _record_links(text: str, first: int, out: list[Link]) -> None:
    """Record links from the lines of `text` that say the document is superseded (or supersedes
    another): "Superseded by [ADR 32](/adr/32)", "Superseded by ADR-0032"."""
    for i, line in enumerate(text.split("\n")):
        if _SUPERSED.search(line) and (relation := _relation(line)):
            out.extend(Link("record", n, "", first + i + 1, relation) for n in record_refs(line))


def _at_lines(matches: Iterator[re.Match], text: str, first: int):
    """Each match with the index of the line it starts on (matches come in order)."""
    line, pos = first, 0
    for m in matches:
        line += text.count("\n", pos, m.start())
        pos = m.start()
        yield m, line


def _line_relation(text: str, m: re.Match) -> str:
    """The relation a whole line of `text` (the one where `m` starts) states, if any."""
    start = text.rfind("\n", 0, m.start()) + 1
    end = text.find("\n", m.start())
    line = text[start : end if end >= 0 else len(text)]
    return _relation(line) if _SUPERSED.search(line) else ""


def _tagish(tag: str) -> bool:
    """`#123` is an issue number and `#fff` could be a colour; a tag needs a letter."""
    return any(c.isalpha() for c in tag)

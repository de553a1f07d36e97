"""What a rename changes in the text of the links to a note: pure functions, no store, no files.

A note answers to names (`names` rows: its path, file stem, title, aliases); a link names it by
one of them, and a heading by its words (`[[note#Known gaps]]`) or its slug
(`note.md#known-gaps`). A rename changes one name — the file (path and stem), the title, or a
heading — and each link is rewritten in the form it was written in: a wiki link by path keeps
the path, by stem the stem, by title the title (a link by an alias is kept as it is), a
Markdown link gets the new relative path (with or without `.md`, `./`, `<…>` as it had), a
heading written as words gets the new words and one written as a slug the new slug. Whether
the rewritten link still leads to the note is checked by `Resolver`, with the indexer's own
rule (`names` by rank, Markdown links by path only), before the rename and after it.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

from autodoc.links.dialect import DENDRON_SCHEME, Dialect
from autodoc.links.link_style import relative_from
from autodoc.links.navigate import anchor_key, slug
from autodoc.parse.document import MD_LINK, WIKILINK, links_on_line, wiki_parts
from autodoc.parse.document import without_inline_code as _code_blanked
from autodoc.parse.names import without_md_suffix

MAX_NAME_BYTES = 200  # a file name with `.md` stays under every file system's 255
# Characters no wiki link target can hold (`[[a|b]]`, `[[a#b]]`), nor a file stem we write.
_NOT_IN_WIKI = re.compile(r"[\[\]|#\n\r\x00-\x1f]")
_NOT_IN_HEADING_LINK = re.compile(r"[\[\]|\n\r\x00-\x1f]")
AMBIGUOUS = -1  # `Resolver.after`: two notes would answer to the key equally


class Refused(ValueError):
    """A rename that would break a link it cannot rewrite, or a name no link can hold."""


# -- a note's names, before and after ------------------------------------------------------------


@dataclass(frozen=True)
class NoteNames:
    """What a note answers to: its root-relative path, its title and its aliases."""

    path: str
    title: str
    aliases: tuple[str, ...] = ()

    @property
    def stem(self) -> str:
        return PurePosixPath(self.path).stem

    def name_keys(self, dialect: Dialect) -> list[tuple[str, int]]:
        """(key, rank) of each name, as the indexer writes them in the vault's dialect."""
        return dialect.names(self.path, self.title, list(self.aliases))

    def form(self, key: str) -> str:
        """Which of the names `key` is: path, stem, title, alias, or other (a name the title
        lists, a record number), the best rank first as a link resolves; a key without a
        folder that is both the path and the stem (a note at the root) is the stem."""
        path = without_md_suffix(self.path).lower()
        if key == path and "/" in key:
            return "path"
        if key == self.stem.lower():
            return "stem"
        if key == path:
            return "path"
        if key == self.title.strip().lower():
            return "title"
        if key in {a.strip().lower() for a in self.aliases}:
            return "alias"
        return "other"


class Resolver:
    """Which note a link key finds before the rename (the indexer's rule: the best rank the
    link's `reach` allows, then the lowest id) and after it (the renamed note's names replaced;
    a tie between two notes is `AMBIGUOUS`)."""

    def __init__(
        self,
        fetch: Callable[[list[str]], dict[str, list[tuple[int, int]]]],
        doc_id: int,
        after: list[tuple[str, int]],
    ) -> None:
        self._fetch = fetch
        self._holders: dict[str, list[tuple[int, int]]] = {}
        self.doc_id = doc_id
        self._after: dict[str, list[int]] = {}
        for key, rank in after:
            self._after.setdefault(key, []).append(rank)

    def prefetch(self, keys: Iterable[str]) -> None:
        missing = sorted({k for k in keys if k not in self._holders})
        if missing:
            self._holders.update(self._fetch(missing))

    def _rows(self, key: str) -> list[tuple[int, int]]:
        self.prefetch([key])
        return self._holders[key]

    def before(self, key: str, reach: int) -> int | None:
        rows = [r for r in self._rows(key) if (reach >> r[0]) & 1]
        return min(rows)[1] if rows else None

    def after(self, key: str, reach: int) -> int | None:
        rows = [r for r in self._rows(key) if r[1] != self.doc_id]
        rows += [(rank, self.doc_id) for rank in self._after.get(key, [])]
        rows = [r for r in rows if (reach >> r[0]) & 1]
        if not rows:
            return None
        best = min(r[0] for r in rows)
        found = {d for rank, d in rows if rank == best}
        return found.pop() if len(found) == 1 else AMBIGUOUS


# -- the names a person may type ------------------------------------------------------------------


def file_stem(new_name: str) -> str:
    """The new file stem a person typed (`.md` dropped); Refused for a name no link or folder
    can hold."""
    name = new_name.strip()
    low = name.lower()
    for suffix in (".markdown", ".md"):
        if low.endswith(suffix):
            name = name[: -len(suffix)]
            break
    if not name:
        raise Refused("the new name is empty")
    if "/" in name or "\\" in name:
        raise Refused(f"{name!r} is a path: a rename keeps the note in its folder")
    if name.startswith("."):
        raise Refused(f"{name!r} starts with '.': the index leaves hidden files out")
    if m := _NOT_IN_WIKI.search(name):
        raise Refused(f"{name!r} holds {m[0]!r}, which cannot be part of a link")
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        raise Refused(f"the new name is longer than {MAX_NAME_BYTES} bytes")
    return name


def words(new_name: str, what: str, *, in_wiki: bool) -> str:
    """A new heading or title as typed, checked: not empty, one line, nothing that would end a
    wiki link (`in_wiki`: a wiki link names it by these words)."""
    text = new_name.strip()
    if not text:
        raise Refused(f"the new {what} is empty")
    bad = (_NOT_IN_WIKI if what == "title" else _NOT_IN_HEADING_LINK).search(text)
    if bad and (in_wiki or bad[0] in "\n\r"):
        raise Refused(f"the new {what} holds {bad[0]!r}, which cannot be part of a link")
    if not anchor_key(text):
        raise Refused(f"the new {what} has no letter or digit: no anchor could name it")
    return text


# -- links as written on a line ---------------------------------------------------------------


@dataclass(frozen=True)
class Written:
    """A wiki or Markdown link as written: what the index reads from it, and where on the line
    (string offsets) its target and its heading are."""

    kind: str  # "wiki" or "md"
    target: str  # as the index reads it
    heading: str
    start: int  # where the link begins
    target_span: tuple[int, int]  # wiki: the words, trimmed; md: the path, before `#` and `?`
    heading_span: tuple[int, int] | None  # wiki: the heading's words; md: the anchor
    bracketed: bool  # a Markdown destination in `<…>`


def written_links(line: str, label_first: bool = False) -> list[Written]:
    """The links of one line of prose, as the indexer counts them (code spans are not links;
    `label_first`: the vault's dialect writes `[[label|target]]`)."""
    text = _code_blanked(line)
    out = []
    for start, _end, link in links_on_line(text, label_first):
        if link.kind == "wiki":
            m = WIKILINK.match(text, start)
            assert m is not None
            parts, at = wiki_parts(m[1], label_first), m.start(1)
            heading = None if parts.heading is None else _shifted(parts.heading, at)
            out.append(Written("wiki", link.target, link.heading, start,
                               _shifted(parts.target, at), heading, False))  # fmt: skip
        else:
            m = MD_LINK.match(text, start)
            assert m is not None
            group = 1 if m.group(1) is not None else 2
            dest, at = m.group(group), m.start(group)
            path = dest.split("#", 1)[0].split("?", 1)[0]
            anchor = (at + dest.index("#") + 1, at + len(dest)) if "#" in dest else None
            out.append(Written("md", link.target, link.heading, start, (at, at + len(path)),
                               anchor, group == 1))  # fmt: skip
    return out


def local_anchors(line: str, label_first: bool = False) -> list[tuple[str, str, tuple[int, int]]]:
    """(kind, heading as written, its span) of each link on the line to a heading of its own
    document: `[[#Heading]]` ("wiki"), `[text](#heading)` ("md")."""
    text = _code_blanked(line)
    out = []
    if "[[" in text:
        for m in WIKILINK.finditer(text):
            parts = wiki_parts(m[1], label_first)
            if parts.target[0] == parts.target[1] and parts.heading is not None:
                span = _shifted(parts.heading, m.start(1))
                if span[0] < span[1]:
                    out.append(("wiki", text[span[0] : span[1]], span))
    if "](" in text:
        for m in MD_LINK.finditer(text):
            group = 1 if m.group(1) is not None else 2
            dest = m.group(group)
            if dest.startswith("#") and len(dest) > 1:
                out.append(("md", dest[1:], (m.start(group) + 1, m.end(group))))
    return sorted(out, key=lambda x: x[2])


def _shifted(span: tuple[int, int], by: int) -> tuple[int, int]:
    return span[0] + by, span[1] + by


# -- the new text of a link's target ----------------------------------------------------------


def wiki_target(written: str, before: NoteNames, after: NoteNames, dialect: Dialect) -> str:
    """A wiki link's target for the renamed note, in the form it was written in (a Dendron
    `dendron://vault/` keeps its vault)."""
    if dialect.name == "dendron" and written.lower().startswith(DENDRON_SCHEME):
        vault, _, note = written[len(DENDRON_SCHEME) :].partition("/")
        return (
            f"{written[: len(DENDRON_SCHEME)]}{vault}/{wiki_target(note, before, after, dialect)}"
        )
    bare = without_md_suffix(written)
    suffix = written[len(bare) :]
    form = before.form(bare.lower())
    if form == "path" and after.path != before.path:
        return without_md_suffix(after.path) + suffix
    if form == "stem" and after.stem != before.stem:
        return after.stem + suffix
    if form == "title" and after.title != before.title:
        return after.title
    return written


def relative_path(target: str, source: str, written: str) -> str:
    """`target` (root-relative) as a link from `source` writes it, in `written`'s form: from
    the root (`/…`) or relative (`./` kept), with or without `.md`."""
    if written.startswith("/"):
        new = "/" + target
    else:
        new = relative_from(target, posixpath.dirname(source))
        if written.startswith("./") and not new.startswith("."):
            new = "./" + new
    bare = without_md_suffix(written)
    if bare == written:
        return without_md_suffix(new)
    return without_md_suffix(new) + written[len(bare) :]


def meta_target(written: str, source: str, source_after: str, before: NoteNames,
                after: NoteNames, from_root: bool, dialect: Dialect) -> str:  # fmt: skip
    """A frontmatter reference for the renamed note: a path (from the root when it was read
    from the root, else relative to its file) or a name, as written."""
    bare = without_md_suffix(written)
    if "/" not in written and bare == written:
        return wiki_target(written, before, after, dialect)
    if after.path == before.path and source_after == source:
        return written
    if from_root and not written.startswith(("/", "./", "../")):
        return without_md_suffix(after.path) + written[len(bare) :]
    return relative_path(after.path, source_after, written)


def heading_text(written: str, old: str, new: str, *, anchor: bool) -> str | None:
    """A link's heading for a renamed heading (None when it names another one), in the form
    it was written in: the words for the words (`[[note#Old words]]`), a slug for a slug
    (`note.md#old-words`, `[[note#old-words]]`); an anchor otherwise takes the slug."""
    if anchor_key(written) != anchor_key(old):
        return None
    if written.strip() == old.strip():
        return new
    if written in (slug(old), anchor_key(old)) or anchor:
        return slug(new)
    return new


# -- the frontmatter ----------------------------------------------------------------------------

_KEY_LINE = re.compile(r"^([^\s#\-:][^:]*):(?:[ \t]|$)(.*)$")
_SCALAR = re.compile(r"""(?:"([^"\n]*)"|'([^'\n]*)'|([^,\[\]\s'"#][^,\[\]]*?))\s*(?=,|\]|$|#)""")


def frontmatter_scalars(lines: list[str], body_line: int) -> list[tuple[str, int, int, int]]:
    """(the key it belongs to, line index, start, end) of each scalar value of the front
    matter (`key: value`, `- item`, `[a, b]`), the quotes left out."""
    out = []
    key = ""
    for i in range(1, max(body_line - 1, 1)):
        line = lines[i]
        m = _KEY_LINE.match(line)
        if m:
            key, rest, at = m[1].strip().lower(), m[2], m.start(2)
        else:
            rest, at = line, 0
            stripped = line.lstrip()
            if stripped.startswith("- "):
                at = len(line) - len(stripped) + 2
                rest = line[at:]
        start = len(rest) - len(rest.lstrip(" \t["))
        for s in _SCALAR.finditer(rest, start):
            group = 1 if s.group(1) is not None else 2 if s.group(2) is not None else 3
            value = s.group(group)
            if value.strip():
                lead = len(value) - len(value.lstrip())
                begin = at + s.start(group) + lead
                out.append((key, i, begin, begin + len(value.strip())))
    return out


def title_value(lines: list[str], body_line: int) -> tuple[int, int, int, str] | None:
    """(line index, start, end, quote) of the frontmatter `title:` value's words."""
    for i in range(1, max(body_line - 1, 1)):
        m = _KEY_LINE.match(lines[i])
        if m and m[1].strip().lower() == "title":
            rest = m[2].rstrip()
            value = rest.strip()
            quote = value[0] if value[:1] in ("'", '"') and value[-1:] == value[:1] else ""
            begin = m.start(2) + len(rest) - len(rest.lstrip())
            if quote:
                return i, begin + 1, begin + len(value) - 1, quote
            return i, begin, begin + len(value), ""
    return None


def yaml_words(new: str, quote: str) -> str:
    """New words inside a frontmatter value's quotes (or bare), escaped as YAML reads them;
    a bare value that YAML would read otherwise is quoted."""
    if quote == '"':
        return new.replace("\\", "\\\\").replace('"', '\\"')
    if quote == "'":
        return new.replace("'", "''")
    if re.search(r"^[\s\-?:,\[\]{}#&*!|>'\"%@`]|: | #|\s$", new):
        return '"' + new.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return new


def yaml_scalar(line: str) -> object:
    """The value of a one-line `key: value` as YAML reads it (None when it cannot)."""
    import yaml  # only a rename that rewrites front matter reads YAML

    try:
        loaded = yaml.safe_load(line)
    except yaml.YAMLError:
        return None
    return next(iter(loaded.values()), None) if isinstance(loaded, dict) else None

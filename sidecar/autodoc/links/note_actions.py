"""What a writer can do to the text under the cursor, worked out without touching the vault: the
note a link that leads nowhere asks for, a bare URL made a Markdown link, and how many links
lead to a document and to each of its headings (backlinks).

The engine turns these into answers (`doc.actions`, `doc.lenses`); an editor applies the edits,
so nothing here writes a file.
"""

from __future__ import annotations

import posixpath
import re
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from autodoc.links.dialect import Dialect
from autodoc.parse.document import Link
from autodoc.parse.names import without_md_suffix

# A URL a writer pasted: a scheme and everything up to a space or a bracket that cannot be
# part of it. GFM's autolink extension ends one before trailing punctuation and an unbalanced
# closing parenthesis; `_trim` does that.
_URL = re.compile(r"\b(?:https?|ftp)://[^\s<>\[\]`\"']+", re.IGNORECASE)
# What already holds a URL on a line, so that it is not bare: a code span, an inline link or
# image (`[text](dest)`, `![alt](dest)`), an autolink (`<https://…>`), a reference definition
# (`[label]: https://…`) and an HTML attribute (`href="…"`).
_TAKEN = re.compile(
    r"(`+).*?\1"
    r"|!?\[[^\]]*\]\([^)]*\)"
    r"|<[a-z][a-z0-9+.-]*:[^\s<>]*>"
    r"|^ {0,3}\[[^\]]+\]:\s*\S+"
    r"|=\s*\"[^\"]*\"|=\s*'[^']*'",
    re.IGNORECASE,
)
_TRAILING = ".,:;!?*_~'\""
# Characters no file name in a vault should hold (Windows' reserved ones and control codes):
# a link naming one asks for a note no client could create everywhere.
_BAD_NAME = re.compile(r'[\x00-\x1f<>:"\\|?*]')
NOTE_SUFFIX = ".md"


@dataclass(frozen=True)
class NewNote:
    """The note a link that leads nowhere asks for."""

    path: str  # root-relative, with its suffix
    title: str


def bare_urls(line: str) -> list[tuple[int, int, str]]:
    """(start, end, url) of each URL written bare on a line of prose (not already a link, an
    autolink, a code span or an attribute), as string offsets."""
    taken = [(m.start(), m.end()) for m in _TAKEN.finditer(line)]
    out = []
    for m in _URL.finditer(line):
        url = _trim(m.group())
        start, end = m.start(), m.start() + len(url)
        if "://" not in url or url.endswith("://"):
            continue
        if any(a <= start < b for a, b in taken):
            continue
        out.append((start, end, url))
    return out


def _trim(url: str) -> str:
    """A URL without the punctuation that ends its sentence, nor a `)` it did not open."""
    while url:
        unopened = url[-1] == ")" and url.count(")") > url.count("(")
        if url[-1] in _TRAILING or unopened:
            url = url[:-1]
        else:
            break
    return url


def url_label(url: str) -> str:
    """The words a Markdown link shows for a URL: its host and path, without the scheme, a
    leading `www.` or a trailing slash."""
    rest = url.split("://", 1)[-1]
    rest = rest[4:] if rest.lower().startswith("www.") else rest
    rest = rest.rstrip("/")
    return rest.replace("[", "(").replace("]", ")") or url


def new_note(source: str, link: Link, folder: str, dialect: Dialect) -> NewNote | None:
    """The note an unresolved link asks for, or None when its target cannot be a file inside
    the root. A Markdown link names its file (relative to the linking note); a wiki link names
    a note: `[[folder/name]]` from the root, `[[Name]]` in `folder` (the workspace's
    `new_notes.folder`: "." beside the linking note, "/" the root, else a root-relative path);
    a Dendron note (`[[a.b.c]]`, `[[dendron://vault/a.b]]`) in its vault's folder, titled by
    its hierarchy's last part as Dendron titles it."""
    target = link.target.strip()
    if not target or link.kind not in ("wiki", "md"):
        return None
    title = without_md_suffix(posixpath.basename(target)).strip()
    if link.kind == "md":
        base = "" if target.startswith("/") else posixpath.dirname(source)
        path = posixpath.normpath(posixpath.join(base, target.lstrip("/")))
    elif dialect.name == "dendron":
        name = dialect.note_name(target).strip()
        vault = dialect.vault_named(target) or dialect.vault_of(source)
        home = vault[0] if vault is not None else posixpath.dirname(source)
        path = posixpath.normpath(posixpath.join(home, name)) if name else ""
        title = dendron_title(name)
    elif "/" in target:
        path = posixpath.normpath(target.lstrip("/"))
    else:
        home = posixpath.dirname(source) if folder == "." else folder.strip("/")
        path = posixpath.normpath(posixpath.join(home, target))
    name = posixpath.basename(path)
    if path.startswith("../") or path in ("..", ".", "") or not name or _BAD_NAME.search(path):
        return None
    if not path.lower().endswith((".md", ".markdown")):
        path += NOTE_SUFFIX
    return NewNote(path=path, title=title)


def dendron_title(name: str) -> str:
    """The title Dendron gives a new note: its hierarchy's last part, dashes as spaces, each
    word capitalised (`dendron.topic.multi-vault` → "Multi Vault")."""
    last = name.rsplit(".", 1)[-1].replace("-", " ").replace("_", " ")
    return " ".join(w[:1].upper() + w[1:] for w in last.split()) or name


def note_text(note: NewNote, heading: str, template: str | None, now: float | None = None,
              dialect: Dialect | None = None) -> str:  # fmt: skip
    """A new note's first text: the workspace's template with `{{title}}`, `{{date}}` and
    `{{time}}` filled in (as Obsidian's core templates write them), else its title as a
    heading (a Dendron note: the front matter Dendron writes, id, title, desc, updated and
    created); a link that names a heading gets that heading too."""
    moment = time.time() if now is None else now
    stamp = time.localtime(moment)
    if template is not None:
        text = (
            template.replace("{{title}}", note.title)
            .replace("{{date}}", time.strftime("%Y-%m-%d", stamp))
            .replace("{{time}}", time.strftime("%H:%M", stamp))
        )
    elif dialect is not None and dialect.name == "dendron":
        millis = int(moment * 1000)
        text = (
            f"---\nid: {uuid.uuid4().hex[:23]}\ntitle: {_yaml_text(note.title)}\ndesc: ''\n"
            f"updated: {millis}\ncreated: {millis}\n---\n"
        )
    else:
        text = f"# {note.title}\n"
    if heading:
        text = text.rstrip("\n") + f"\n\n## {heading}\n"
    return text


def _yaml_text(text: str) -> str:
    """A title as a YAML scalar: quoted where it holds what YAML would read otherwise."""
    if re.search(r"^[\s\-?:,\[\]{}#&*!|>'\"%@`]|: | #|\s$", text) or not text:
        return "'" + text.replace("'", "''") + "'"
    return text


def backlink_counts(
    inbound: Iterable[tuple[str, int, str]], slug: Callable[[str], str]
) -> tuple[int, Counter[str]]:
    """(every link to a document, links to each of its headings by slug) from `links_into`'s
    rows (source path, line, heading)."""
    total = 0
    by_heading: Counter[str] = Counter()
    for _path, _line, heading in inbound:
        total += 1
        if heading:
            by_heading[slug(heading)] += 1
    return total, by_heading

"""How a vault writes its links, and a link written that way: wiki or Markdown, with or without
`.md`, a note named by its file name or its path, a heading by its words or its slug, a label
after the target or before it. Completion inserts links in this style; code actions ("copy a
link to this section", "create note") write theirs with it too.

The style is read from the links the vault already has (a sample of the resolved ones, counted
by form in the store) and each part can be set by the workspace option `link_style`
(`form`, `extension`, `name`, `heading`: "auto" or a value; `alias`).
"""

from __future__ import annotations

import json
import posixpath
import re
import threading
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Literal

from autodoc import store as sql
from autodoc.links.dialect import Dialect, dialect_of
from autodoc.links.navigate import slug
from autodoc.parse.names import query_key, without_md_suffix
from autodoc.store import Workspace, read_epochs

SAMPLE = 5_000  # resolved links counted per workspace: enough to tell a vault's habit
_KEPT = 64  # styles remembered (one per workspace and index state)
# Characters a Markdown link's destination cannot hold bare (the index reads them back decoded).
# What breaks a bare Markdown destination (and `#`, `?`, `%`, which it would read as an
# anchor, a query or an escape): written as %XX, which the index reads back. Inside `<…>` only
# what would end it.
_MD_ESCAPE = re.compile(r"[ \t()<>#?%\x00-\x1f]")
_MD_ESCAPE_BRACKETED = re.compile(r"[<>#?%\n\x00-\x1f]")


@dataclass(frozen=True)
class LinkStyle:
    """A vault's way of writing links. `link` writes one."""

    form: Literal["wiki", "markdown"] = "markdown"
    extension: bool = True
    """The target keeps its `.md` (`[[note.md]]`, `(note.md)`)."""
    name: Literal["stem", "path"] = "stem"
    """How a wiki link names its note: the file name, or the root-relative path (a file name
    several notes share is always written as its path)."""
    heading: Literal["text", "slug"] = "text"
    """How a wiki link names a heading: `#Known gaps` or `#known-gaps` (Markdown: a slug)."""
    alias: Literal["target-first", "label-first", "never"] = "target-first"
    """Where a wiki link's label goes: `[[target|Label]]` (Obsidian's, the index reads it),
    `[[Label|target]]` (Dendron's), or nowhere."""
    shared_stems: frozenset[str] = frozenset()
    """File names (lower-cased, no `.md`) more than one note has."""

    def link(self, target: str, heading: str = "", label: str = "", from_path: str = "") -> str:
        """A link to the note at root-relative `target` (at `heading`, its words), written in
        this style. `label`: the words to show (a wiki link shows them only where they differ
        from what it names); `from_path`: the root-relative note the link is written in (a
        Markdown link is relative to its folder)."""
        if self.form == "markdown":
            return self._markdown(target, heading, label, from_path)
        return self._wiki(target, heading, label)

    def _wiki(self, target: str, heading: str, label: str) -> str:
        bare = without_md_suffix(target)
        stem = PurePosixPath(bare).name
        named = bare if self.name == "path" or stem.lower() in self.shared_stems else stem
        if self.extension:
            named += target[len(bare) :]
        if heading:
            named += "#" + (slug(heading) if self.heading == "slug" else heading)
        shows = heading or PurePosixPath(bare).name
        if not label or self.alias == "never" or query_key(label) == query_key(shows):
            return f"[[{named}]]"
        if self.alias == "label-first":
            return f"[[{label}|{named}]]"
        return f"[[{named}|{label}]]"

    def _markdown(self, target: str, heading: str, label: str, from_path: str) -> str:
        path = relative_from(target, posixpath.dirname(from_path))
        if not self.extension:
            path = without_md_suffix(path)
        destination = md_destination(path)
        if heading:  # a section of the note the link is written in: its anchor alone
            destination = ("" if target == from_path else destination) + "#" + slug(heading)
        shown = label or heading or PurePosixPath(without_md_suffix(target)).name
        shown = shown.replace("[", "\\[").replace("]", "\\]")
        return f"[{shown}]({destination})"


def md_destination(path: str, bracketed: bool = False) -> str:
    """A path as a Markdown link's destination writes it: what would end or split it as %XX
    (completion, code actions and renames all write their paths through here)."""
    pattern = _MD_ESCAPE_BRACKETED if bracketed else _MD_ESCAPE
    return pattern.sub(lambda m: "".join(f"%{b:02X}" for b in m[0].encode("utf-8")), path)


def relative_from(target: str, folder: str) -> str:
    """Root-relative `target` as seen from root-relative `folder` (posixpath.relpath without
    its look at the working directory)."""
    to, at = target.split("/"), folder.split("/") if folder else []
    common = 0
    while common < len(at) and common < len(to) - 1 and at[common] == to[common]:
        common += 1
    return "/".join([".."] * (len(at) - common) + to[common:])


_styles: dict[tuple[Any, ...], LinkStyle] = {}
_lock = threading.Lock()


def vault_link_style(conn, ws: Workspace, epochs: tuple[int, int] | None = None) -> LinkStyle:
    """The workspace's link style in this snapshot: its option where set, else what most of
    its resolved links do. Remembered per workspace, index state and option (`epochs`: the
    snapshot's, when the caller has read them)."""
    chosen = ws.options.get("link_style") or {}
    if epochs is None:  # links change only with what the lexical epoch counts
        epochs = read_epochs(conn, ws.id)
    key = (str(ws.root), ws.id, epochs and epochs[0], json.dumps(chosen, sort_keys=True),
           ws.link_dialect)  # fmt: skip
    with _lock:
        found = _styles.get(key)
    if found is not None:
        return found
    style = _detected(conn, ws.id, chosen, dialect_of(ws))
    with _lock:
        if len(_styles) >= _KEPT:
            _styles.clear()
        _styles[key] = style
    return style


def _detected(conn, ws_id: int, chosen: dict[str, Any], dialect: Dialect) -> LinkStyle:
    """Each part of the style the option leaves to "auto": what the vault's dialect says
    (Obsidian's `useMarkdownLinks` and `newLinkFormat`; Dendron's wiki links by note name,
    label first), else counted from the vault's links: the kind most of them are, and the habit
    most of that kind's links have. A vault with no link yet gets Markdown links with `.md`
    (what every renderer reads), an Obsidian or Dendron vault wiki links."""
    counts = sql.link_form_counts(conn, ws_id, SAMPLE)
    wiki, md = counts.get("wiki", (0,) * 5), counts.get("md", (0,) * 5)
    form = chosen.get("form", "auto")
    if form == "auto" and dialect.name != "markdown" and not (wiki[0] or md[0]):
        form = "markdown" if dialect.markdown_links else "wiki"
    elif form == "auto" and dialect.source.endswith("app.json"):
        form = "markdown" if dialect.markdown_links else "wiki"  # what Obsidian will write
    elif form == "auto":
        form = "wiki" if wiki[0] > md[0] else "markdown"
    links, with_md, with_folder, with_heading, texty = wiki if form == "wiki" else md
    extension = chosen.get("extension", "auto")
    if extension == "auto":
        extension = 2 * with_md > links if links else form == "markdown"
    name = chosen.get("name", "auto")
    if name == "auto" and dialect.name == "dendron":
        name = "stem"  # a Dendron note's name is its file's stem, dots and all
    elif name == "auto" and dialect.name == "obsidian" and dialect.link_format != "shortest":
        name = "path"
    elif name == "auto":
        name = "path" if links and 2 * with_folder > links else "stem"
    heading = chosen.get("heading", "auto")
    if heading == "auto":
        heading = "slug" if with_heading and 2 * texty < with_heading else "text"
    return LinkStyle(
        form=form,
        extension=bool(extension),
        name=name,
        heading=heading,
        alias=_alias_order(chosen.get("alias", "auto"), dialect),
        shared_stems=sql.shared_stems(conn, ws_id) if form == "wiki" else frozenset(),
    )


def _alias_order(chosen: str, dialect: Dialect) -> Literal["target-first", "label-first", "never"]:
    """Where a wiki link's label goes: the option's choice, else the dialect's order."""
    if chosen in ("target-first", "label-first", "never"):
        return chosen  # type: ignore[return-value]
    return "label-first" if dialect.label_first else "target-first"

"""A vault's link dialect: which side of a wiki link's `|` names the note, and which names a
link may find its note by. One per workspace (`vault_markers.decide` chooses it), read by the
indexer, the editor's features and `autodoc check` alike.

- **obsidian**: `[[target#heading|label]]`, `#^block`; a note by its file name, by the end of
  its path that tells it apart (`folder/note`, Obsidian's shortest form), by its path from the
  root or relative to the linking note (`../note`); a Markdown link by its relative path, else
  by name as a wiki link. A title or an alias is no name a link resolves by.
- **dendron**: `[[label|target#heading]]`; a note by its hierarchy name (`a.b.c`, its file's
  stem), `[[dendron://vault/a.b]]` in a named vault of the workspace's `dendron.yml`.
- **markdown** (GitHub, Foam, zk, plain Markdown): a Markdown link by its relative path; a wiki
  link `[[target|label]]` by file name, path, title or alias (the most lenient reading).
"""

from __future__ import annotations

import functools
import json
import posixpath
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import PurePosixPath
from typing import Literal

from autodoc.parse.names import link_key, without_md_suffix
from autodoc.store import (
    NAME_PATH,
    NAME_STEM,
    NAME_SUFFIX,
    REACH_ALL,
    Workspace,
    document_names,
)
from autodoc.wire.workspace_options import LINK_DIALECTS

DialectName = Literal["obsidian", "dendron", "markdown"]
DENDRON_SCHEME = "dendron://"
PATH_ONLY = 1 << NAME_PATH
NO_SUFFIX = REACH_ALL & ~(1 << NAME_SUFFIX)  # every rank but a path's tail
SHORTEST = PATH_ONLY | 1 << NAME_STEM | 1 << NAME_SUFFIX  # Obsidian: a path, its tail, the name
HIERARCHY = PATH_ONLY | 1 << NAME_STEM  # Dendron: a note's name (and a vault's `dendron://` key)

IsFile = Callable[[str], bool]


def dialect_name(value: str) -> DialectName:
    """A dialect's name as the option gives it (checked there: one of `LINK_DIALECTS`)."""
    if value not in LINK_DIALECTS:
        raise ValueError(f"no link dialect {value!r}")
    return value  # type: ignore[return-value]


@dataclass(frozen=True)
class Dialect:
    """How a vault writes its links. `source` says what decided it: "option" (the workspace
    option `links.dialect`), a marker file (`.obsidian/app.json`, `dendron.yml`), "links" (the
    reading that resolves more of the vault's own links) or "default"."""

    name: DialectName = "markdown"
    source: str = "default"
    vaults: tuple[tuple[str, str], ...] = field(default=())
    """Dendron: (root-relative folder, vault name) of each vault `dendron.yml` names."""
    markdown_links: bool = False
    """Obsidian's `useMarkdownLinks`: new links are written `[label](path.md)`."""
    link_format: Literal["shortest", "relative", "absolute"] = "shortest"
    """Obsidian's `newLinkFormat`: how a new link names its note."""

    @property
    def label_first(self) -> bool:
        """A wiki link's label comes before its target (`[[label|target]]`)."""
        return self.name == "dendron"

    @property
    def fingerprint(self) -> str:
        """What changes how a document's links are read: part of every document's reading
        fingerprint, so a new dialect reads every document again (its chunks, and so its
        vectors, are kept: their text is the same)."""
        vaults = ";".join(f"{folder}={name}" for folder, name in self.vaults)
        return f"dialect={self.name}" + (f"[{vaults}]" if vaults else "")

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Dialect:
        """The stored dialect; '' (a store from before dialects) is plain Markdown."""
        if not text:
            return cls()
        raw = json.loads(text)
        raw["vaults"] = tuple(tuple(v) for v in raw.get("vaults", ()))
        return cls(**raw)

    # -- what a link names ------------------------------------------------------------------

    def key(self, source: str, kind: str, target: str, is_file: IsFile | None = None
            ) -> tuple[str, int]:  # fmt: skip
        """(the `names` key a link of `source` looks up, the ranks it may find it by: a bit
        each). `is_file` (root-relative path → a file is there) lets a frontmatter path or an
        Obsidian Markdown link choose between readings."""
        t = target.strip()
        if kind == "md":
            if self.name == "obsidian" and _by_name(source, t, is_file):
                return _name_key(t), SHORTEST
            return link_key(source, kind, t, is_file), PATH_ONLY
        if kind == "record":
            return link_key(source, kind, t), REACH_ALL
        if kind == "meta" and ("/" in t or without_md_suffix(t) != t):
            return link_key(source, kind, t, is_file), PATH_ONLY
        if t.startswith(("./", "../")):  # a wiki link relative to its note
            return link_key(source, "md", t), PATH_ONLY
        if self.name == "dendron":
            return self._dendron_key(t), HIERARCHY
        if self.name == "obsidian":
            return _name_key(t.lstrip("/")), PATH_ONLY if t.startswith("/") else SHORTEST
        return link_key(source, kind, t), NO_SUFFIX

    def _dendron_key(self, target: str) -> str:
        """A Dendron note name; `dendron://vault/name` in a vault the workspace names keeps its
        vault (in one it does not, it resolves nowhere: another workspace's note); with no
        vaults known (`dendron.yml` outside the root), the name alone."""
        if not target.lower().startswith(DENDRON_SCHEME):
            return target.lower()
        vault, _, note = target[len(DENDRON_SCHEME) :].partition("/")
        if not self.vaults:
            return note.strip().lower()
        return f"{DENDRON_SCHEME}{vault.strip().lower()}/{note.strip().lower()}"

    def note_name(self, target: str) -> str:
        """A wiki link's target without its Dendron `dendron://vault/`: the note's own name."""
        if self.name == "dendron" and target.lower().startswith(DENDRON_SCHEME):
            return target[len(DENDRON_SCHEME) :].partition("/")[2]
        return target

    def names(self, path: str, title: str, aliases: list[str]) -> list[tuple[str, int]]:
        """(key, rank) of every name a document answers to: the store's (path, stem, title,
        aliases, …) and the dialect's own (Obsidian: each tail of the path; Dendron: its
        vault's `dendron://` key)."""
        found = document_names(path, title, aliases)
        bare = without_md_suffix(path).lower()
        if self.name == "obsidian":
            parts = bare.split("/")
            found.extend(("/".join(parts[i:]), NAME_SUFFIX) for i in range(1, len(parts) - 1))
        elif self.name == "dendron" and (vault := self.vault_of(path)) is not None:
            stem = PurePosixPath(bare).name
            found.append((f"{DENDRON_SCHEME}{vault[1].lower()}/{stem}", NAME_PATH))
        return found

    def vault_named(self, target: str) -> tuple[str, str] | None:
        """The vault (folder, name) a `dendron://vault/note` target names, if the workspace
        holds it."""
        if not target.lower().startswith(DENDRON_SCHEME):
            return None
        wanted = target[len(DENDRON_SCHEME) :].partition("/")[0].strip().lower()
        return next((v for v in self.vaults if v[1].lower() == wanted), None)

    def vault_of(self, path: str) -> tuple[str, str] | None:
        """The Dendron vault (folder, name) a root-relative path is in (the deepest that holds
        it), None outside every vault."""
        best = None
        for folder, name in self.vaults:
            inside = folder in ("", ".") or path.startswith(folder.rstrip("/") + "/")
            if inside and (best is None or len(folder) > len(best[0])):
                best = (folder, name)
        return best


def _name_key(target: str) -> str:
    """A note named as Obsidian names it: its path or the end of it, without `.md`."""
    return without_md_suffix(posixpath.normpath(target)).lower() if target else ""


def _by_name(source: str, target: str, is_file: IsFile | None) -> bool:
    """An Obsidian Markdown link read as a name (the shortest form, `[x](note.md)` for a note
    elsewhere): no `./`, `../` or `/`, and no file where a relative path would put it."""
    if is_file is None or target.startswith(("./", "../", "/")) or not target:
        return False
    beside = posixpath.normpath(posixpath.join(posixpath.dirname(source), target))
    return not (is_file(beside) or is_file(beside + ".md"))


def dialect_of(ws: Workspace) -> Dialect:
    """The dialect the workspace's last full run decided (plain Markdown before one did)."""
    return _parsed(ws.link_dialect)


@functools.lru_cache(maxsize=64)
def _parsed(text: str) -> Dialect:
    return Dialect.from_json(text)

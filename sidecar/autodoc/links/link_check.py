"""Links that lead nowhere, each with its cause: `autodoc check` over a workspace and an editor's
diagnostics for one document read them here, from what the indexer resolved.

Causes, as a vault's owner fixes them:
- **note**: no note has that name or path (an error);
- **attachment**: a file that is not Markdown (an image, a PDF) is not there (an error);
- **outside**: the link leaves the workspace (`../` past its root, a site path `/…` no file of
  the workspace answers, a Dendron vault the workspace does not hold): nothing here can say
  whether it resolves (an error: the link is broken as the vault is checked out);
- **heading**: the note is there but has no such heading or block (a warning: the link still
  leads to the note).
An unresolved link that names a file that is there (an image beside the note, a folder) is no
finding.
"""

from __future__ import annotations

import os
import posixpath
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from autodoc import store as sql
from autodoc.files.walker import MARKDOWN_SUFFIXES
from autodoc.links.dialect import DENDRON_SCHEME, Dialect, dialect_of
from autodoc.links.navigate import anchor_key, wanted_place
from autodoc.store import Workspace

Cause = Literal["note", "attachment", "outside", "heading"]
CAUSES: tuple[Cause, ...] = ("note", "attachment", "outside", "heading")


@dataclass(frozen=True)
class BrokenLink:
    """A link of `path:line` that does not lead where it says, and why."""

    path: str
    line: int
    kind: str  # wiki, md, meta
    target: str
    heading: str
    cause: Cause

    @property
    def severity(self) -> Literal["error", "warning"]:
        return "warning" if self.cause == "heading" else "error"

    @property
    def message(self) -> str:
        if self.cause == "heading":
            what = "block" if self.heading.startswith("^") else "heading"
            return f"link to {self.target!r}: it has no {what} {self.heading!r}"
        why = {
            "note": "",
            "attachment": " (no such file)",
            "outside": " (it points outside the workspace)",
        }[self.cause]
        return f"link to {self.target!r} does not resolve{why}"


def broken_links(conn, ws: Workspace, path: str | None = None) -> list[BrokenLink]:
    """Every link of the workspace (of one document) that leads nowhere or to no such heading,
    by path and line."""
    dialect = dialect_of(ws)
    files = _Files(ws.root)
    out = []
    for source, line, kind, target in sql.unresolved_links(conn, ws.id, path):
        cause = _cause(files, dialect, source, kind, target)
        if cause is not None:
            out.append(BrokenLink(source, line, kind, target, "", cause))
    out += _missing_places(conn, sql.resolved_links_to_headings(conn, ws.id, path))
    out.sort(key=lambda b: (b.path, b.line))
    return out


def _missing_places(conn, rows: list[tuple[str, int, str, str, str, int]]) -> list[BrokenLink]:
    """The links that reach their note but name a heading or block it does not have."""
    keys: dict[int, set[str]] = defaultdict(set)
    for doc_id, held in sql.document_headings(conn, sorted({r[5] for r in rows})).items():
        keys[doc_id] = {anchor_key(text) for _line, _level, text in held}
    out = []
    for source, line, kind, target, heading, doc_id in rows:
        want_kind, want = wanted_place(heading)
        if want_kind == "heading":
            missing = want not in keys[doc_id]
        elif want_kind == "block":
            missing = sql.block_place(conn, doc_id, want) is None
        else:
            missing = False
        if missing:
            out.append(BrokenLink(source, line, kind, target, heading, "heading"))
    return out


def _cause(files: _Files, dialect: Dialect, source: str, kind: str, target: str) -> Cause | None:
    """Why an unresolved link leads nowhere; None when it names a file that is there."""
    if kind == "wiki" and dialect.name == "dendron" and target.lower().startswith(DENDRON_SCHEME):
        vault = target[len(DENDRON_SCHEME) :].partition("/")[0].lower()
        if dialect.vaults and vault not in {name.lower() for _f, name in dialect.vaults}:
            return "outside"
    if kind == "md":
        rel = files.relative(source, target)
        if rel is None:
            return "outside"
        if files.exists_at(rel) or (
            dialect.name == "obsidian" and files.named(posixpath.basename(target))
        ):  # Obsidian finds a file by its name anywhere in the vault
            return None
        if target.startswith("/") and not target.lower().endswith(MARKDOWN_SUFFIXES):
            return "outside"  # a site's path (`/adr/ADR-51`), not a file of the vault
        return "note" if _markdown(target) else "attachment"
    if _attachment(dialect, target):
        return None if files.named(posixpath.basename(target)) else "attachment"
    return "note"


def _markdown(target: str) -> bool:
    """A path that names a Markdown note: `.md`, or no extension at all (`note`, `a/b`)."""
    name = posixpath.basename(target.rstrip("/")).lower()
    return name.endswith(MARKDOWN_SUFFIXES) or "." not in name or target.endswith("/")


def _attachment(dialect: Dialect, target: str) -> bool:
    """A wiki link to a file that is not a note: `![[diagram.png]]`, `[[spec.pdf]]` (a Dendron
    note's name has dots of its own: there only a known file extension says so)."""
    name = posixpath.basename(target).lower()
    if name.endswith(MARKDOWN_SUFFIXES) or "." not in name:
        return False
    extension = name.rsplit(".", 1)[1]
    if dialect.name == "dendron":
        return extension in ATTACHMENT_EXTENSIONS
    return bool(extension) and len(extension) <= 5 and extension.isalnum()


ATTACHMENT_EXTENSIONS = frozenset(
    [
        "png",
        "jpg",
        "jpeg",
        "gif",
        "svg",
        "webp",
        "bmp",
        "avif",
        "pdf",
        "mp3",
        "mp4",
        "webm",
        "ogg",
        "wav",
        "m4a",
        "mov",
        "csv",
        "json",
        "yaml",
        "yml",
        "zip",
        "txt",
        "canvas",
        "excalidraw",
        "drawio",
        "html",
    ]
)


class _Files:
    """Whether an unresolved link still names a real file: an image, a PDF, a folder. Looks
    inside the root only."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._names: set[str] | None = None

    def named(self, name: str) -> bool:
        """A file of this name anywhere in the workspace (Obsidian finds attachments so)."""
        if self._names is None:
            self._names = set()
            for _dir, dirs, files in os.walk(self.root):
                dirs[:] = [d for d in dirs if not d.startswith(".")]
                self._names.update(f.lower() for f in files)
        return name.lower() in self._names

    @staticmethod
    def relative(source: str, target: str) -> str | None:
        """A Markdown link's root-relative path, None when it leaves the root."""
        base = "" if target.startswith("/") else posixpath.dirname(source)
        rel = posixpath.normpath(posixpath.join(base, target.lstrip("/")))
        return None if rel.startswith("../") or rel == ".." else rel

    def exists_at(self, rel: str) -> bool:
        return os.path.exists(os.path.join(self.root, *rel.split("/")))

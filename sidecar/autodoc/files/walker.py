"""Find a workspace's Markdown files without ever leaving its root.

Symlinks are followed only when they resolve inside the root; loops, FIFOs, unreadable folders
and oversized files are reported with a reason instead of stopping the run.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

MARKDOWN_SUFFIXES = (".md", ".markdown")


@dataclass(frozen=True)
class FoundFile:
    rel: str  # relative to the root, forward slashes
    abs: str
    size: int
    mtime_ns: int


@dataclass(frozen=True)
class Skipped:
    path: str
    reason: str


def is_utf8(name: str) -> bool:
    """A path Python could only decode with surrogate escapes (bytes that are not UTF-8) can be
    neither stored nor shown: it is skipped with a reason, never passed on."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def printable(name: str) -> str:
    """A path as it can be reported: undecodable bytes as \\xNN."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


NOT_UTF8 = "file name is not valid UTF-8"


def hidden_allowed(rel: str, include: Sequence[str]) -> bool:
    """Whether every hidden part of a root-relative path (a name starting with a dot: .git,
    .obsidian, editor swap files) is let in by one of the `include_hidden` patterns, matched
    (fnmatch, case-sensitive) against that part's path: `.notes`, `*/.drafts`."""
    parts = rel.split("/")
    for i, part in enumerate(parts):
        if part.startswith("."):
            prefix = "/".join(parts[: i + 1])
            if not any(fnmatch.fnmatchcase(prefix, p) for p in include):
                return False
    return True


@dataclass
class Hidden:
    """The hidden folders and Markdown files a scan did not enter: counted and named, so a
    summary never says "0 skipped" over a silently skipped folder."""

    count: int = 0
    examples: list[str] = field(default_factory=list)  # the first few, folders with a slash

    def add(self, rel: str) -> None:
        self.count += 1
        if len(self.examples) < HIDDEN_EXAMPLES:
            self.examples.append(rel)


HIDDEN_EXAMPLES = 5


def _inside(real: str, root_real: str) -> bool:
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


# Over 60 lines: one walk, every way an entry can fail to be indexable handled where it is met.
def scan(
    root: Path, max_bytes: int, include_hidden: Sequence[str] = (), hidden: Hidden | None = None
) -> tuple[list[FoundFile], list[Skipped]]:
    """Every indexable Markdown file under `root`, and what was skipped with a reason; hidden
    folders and Markdown files not let in by `include_hidden` are counted in `hidden`."""
    root_real = os.path.realpath(root)
    found: list[FoundFile] = []
    skipped: list[Skipped] = []
    visited: set[tuple[int, int]] = set()
    st = os.stat(root_real)
    visited.add((st.st_dev, st.st_ino))
    stack: list[tuple[str, str]] = [(root_real, "")]  # (folder on disk, its path under root)
    while stack:
        folder, rel_folder = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            skipped.append(Skipped(rel_folder or ".", f"cannot list folder: {exc.strerror}"))
            continue
        for entry in entries:
            rel = f"{rel_folder}/{entry.name}" if rel_folder else entry.name
            is_md = entry.name.lower().endswith(MARKDOWN_SUFFIXES)
            if entry.name.startswith(".") and not hidden_allowed(rel, include_hidden):
                if hidden is not None:  # .git, .obsidian, editor swap files
                    with contextlib.suppress(OSError):
                        if entry.is_dir(follow_symlinks=False):
                            hidden.add(printable(rel) + "/")
                        elif is_md:
                            hidden.add(printable(rel))
                continue
            if not is_utf8(entry.name):
                with contextlib.suppress(OSError):
                    if is_md or entry.is_dir():
                        skipped.append(Skipped(printable(rel), NOT_UTF8))
                continue
            try:
                target = entry.path
                if entry.is_symlink():
                    target = os.path.realpath(entry.path)
                    if not _inside(target, root_real):
                        if is_md or os.path.isdir(target):
                            skipped.append(Skipped(rel, "symlink leads outside the workspace root"))
                        continue
                    if not os.path.exists(target):
                        if is_md:
                            skipped.append(Skipped(rel, "broken symlink"))
                        continue
                info = os.stat(target)
            except OSError as exc:
                if is_md:
                    skipped.append(Skipped(rel, f"cannot stat: {exc.strerror}"))
                continue
            if stat.S_ISDIR(info.st_mode):
                key = (info.st_dev, info.st_ino)
                if key in visited:
                    skipped.append(Skipped(rel, "symlink loop: folder already visited"))
                    continue
                visited.add(key)
                stack.append((target, rel))
                continue
            if is_md:
                _take(rel, target, info, max_bytes, found, skipped)
    found.sort(key=lambda f: f.rel)
    return found, skipped


def _take(rel, path, info, max_bytes, found: list[FoundFile], skipped: list[Skipped]) -> None:
    """A Markdown file is indexed if it is a regular file within the size limit."""
    if not stat.S_ISREG(info.st_mode):
        skipped.append(Skipped(rel, "not a regular file"))
    elif info.st_size > max_bytes:
        mb = info.st_size / 1e6
        skipped.append(
            Skipped(rel, f"file too large ({mb:.1f} MB > {max_bytes / 1e6:.0f} MB limit)")
        )
    else:
        found.append(FoundFile(rel, path, info.st_size, info.st_mtime_ns))


def find(
    root: Path, rels: list[str], max_bytes: int, include_hidden: Sequence[str] = ()
) -> tuple[list[FoundFile], list[Skipped]]:
    """The named files, by the same rules as `scan`; a path that is not (or no longer) an
    indexable Markdown file is simply not found, so the caller retires it."""
    root_real = os.path.realpath(root)
    found: list[FoundFile] = []
    skipped: list[Skipped] = []
    for rel in sorted(set(rels)):
        if not is_utf8(rel):
            skipped.append(Skipped(printable(rel), NOT_UTF8))
            continue
        parts = rel.split("/")
        if not rel or any(p in ("", ".", "..") for p in parts):
            continue
        if not hidden_allowed(rel, include_hidden):
            continue
        if not rel.lower().endswith(MARKDOWN_SUFFIXES):
            continue
        path = os.path.join(root_real, *parts)
        try:
            real = os.path.realpath(path)
        except OSError:  # a link on the path changed while it was resolved: not found now
            continue
        if not _inside(real, root_real):
            if os.path.lexists(path):
                skipped.append(Skipped(rel, "symlink leads outside the workspace root"))
            continue
        try:
            info = os.stat(real)
        except OSError:
            if os.path.islink(path):
                skipped.append(Skipped(rel, "broken symlink"))
            continue
        if not stat.S_ISDIR(info.st_mode):
            _take(rel, real, info, max_bytes, found, skipped)
    return found, skipped

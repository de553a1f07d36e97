"""Find a workspace's Markdown files without ever leaving its root.

Symlinks are followed only when they resolve inside the root; loops, FIFOs, unreadable folders
and oversized files are reported with a reason instead of stopping the run. What the workspace's
rules leave out (`ignore_rules`: hidden names, `exclude`, `.gitignore` / `.ignore`) is not
entered, and `find` (a save, a watcher's batch) leaves out the same paths.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from autodoc.files.confine import is_utf8
from autodoc.files.ignore_rules import (
    HIDDEN,
    IGNORE_FILES,
    NO_CHAIN,
    RuleOptions,
    Rules,
    Verdict,
)

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


def printable(name: str) -> str:
    """A path as it can be reported: undecodable bytes as \\xNN."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


NOT_UTF8 = "file name is not valid UTF-8"


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
    root: Path,
    max_bytes: int,
    include_hidden: Sequence[str] = (),
    hidden: Hidden | None = None,
    rules: Rules | None = None,
) -> tuple[list[FoundFile], list[Skipped]]:
    """Every indexable Markdown file under `root`, and what was skipped with a reason. Paths the
    `rules` leave out (by default: hidden ones not let in by `include_hidden`) are not entered:
    hidden ones are counted in `hidden`, the others in `rules.counts`."""
    root_real = os.path.realpath(root)
    if rules is None:
        rules = Rules(root_real, RuleOptions(include_hidden=tuple(include_hidden)))
    found: list[FoundFile] = []
    skipped: list[Skipped] = []
    visited: set[tuple[int, int]] = set()
    st = os.stat(root_real)
    visited.add((st.st_dev, st.st_ino))
    # (folder on disk, its path under root, the verdict on a folder left out that is entered
    # only for what `include` names in it)
    stack: list[tuple[str, str, Verdict | None]] = [(root_real, "", None)]
    while stack:
        folder, rel_folder, out = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            skipped.append(Skipped(rel_folder or ".", f"cannot list folder: {exc.strerror}"))
            continue
        names = [e.name for e in entries if e.name in IGNORE_FILES]
        chain = rules.chain(rel_folder, names) if out is None else NO_CHAIN
        for entry in entries:
            rel = f"{rel_folder}/{entry.name}" if rel_folder else entry.name
            is_md = entry.name.lower().endswith(MARKDOWN_SUFFIXES)
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if not (is_md or is_dir):
                continue
            if out is not None:  # only what `include` names, and the folders on its way
                verdict = None if rules.included(rel, is_dir) else out
                if verdict is not None and not (is_dir and rules.reaches_into(rel)):
                    continue
            else:
                verdict = rules.judge(rel, is_dir, chain)
                if verdict is not None:
                    if verdict.source != HIDDEN:
                        rules.count(verdict, is_dir)
                    elif hidden is not None:  # .git, .obsidian, editor swap files
                        hidden.add(printable(rel) + ("/" if is_dir else ""))
                    if not (is_dir and rules.reaches_into(rel)):
                        continue
            if not is_utf8(entry.name):
                skipped.append(Skipped(printable(rel), NOT_UTF8))
                continue
            try:
                target = entry.path
                if entry.is_symlink():
                    target = os.path.realpath(entry.path)
                    if not _inside(target, root_real):
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
                stack.append((target, rel, verdict))
                continue
            if is_md and verdict is None:
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
    root: Path,
    rels: list[str],
    max_bytes: int,
    include_hidden: Sequence[str] = (),
    rules: Rules | None = None,
) -> tuple[list[FoundFile], list[Skipped]]:
    """The named files, by the same rules as `scan`; a path that is not (or no longer) an
    indexable Markdown file, or that the rules leave out, is simply not found, so the caller
    retires it."""
    root_real = os.path.realpath(root)
    if rules is None:
        rules = Rules(root_real, RuleOptions(include_hidden=tuple(include_hidden)))
    found: list[FoundFile] = []
    skipped: list[Skipped] = []
    for rel in sorted(set(rels)):
        if not is_utf8(rel):
            skipped.append(Skipped(printable(rel), NOT_UTF8))
            continue
        parts = rel.split("/")
        if not rel or any(p in ("", ".", "..") for p in parts):
            continue
        if not rel.lower().endswith(MARKDOWN_SUFFIXES):
            continue
        verdict = rules.judge_path(rel)
        if verdict is not None:
            if verdict.source != HIDDEN:
                rules.count(verdict, False)
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

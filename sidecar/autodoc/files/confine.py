"""Reading a file of the workspace without ever leaving its root, even while the tree changes.

A path that is checked and then opened by name can be swapped for a symlink between the two
(issue 22: 10 of 658 racing `read_span` calls read `/etc/…`). Here nothing is opened by name
from the top: the walk starts at a descriptor of the root and opens one component at a time
relative to the last, each with `O_NOFOLLOW`, so the kernel never follows a link. A component
that is a link is read (`readlink` on its folder's descriptor) and resolved by hand: if the
resolved path stays inside the root, the walk starts again from the root along it (a link
inside the vault to a file inside the vault works, as the scanner allows), otherwise the read
is refused. The last descriptor is `fstat`ed (a regular file within the size limit) and read
from; the name is never opened again.

Every read of a file's content goes through `read_inside`: indexing, search's freshness check,
`doc.read` / `read_span`, `check`.
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

MAX_LINKS = 40  # symlinks resolved in one path, as the kernel's own limit: more is a loop
BINARY_SNIFF_BYTES = 8192
READ_BLOCK = 1 << 20  # what `read_lines` reads at a time
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


OUTSIDE = "path is outside the workspace root"  # the path itself, or a link on it
MISSING = "no such file in the workspace"  # nothing there, or no regular file


class OutsideRoot(ValueError):
    """The path, or a link on it, leads outside the workspace root."""


class NotInWorkspace(ValueError):
    """No such file (or not a regular file) inside the workspace root."""


def _parts(rel: str) -> list[str]:
    """`rel`'s components, `.` and `..` worked out lexically; OutsideRoot when `..` climbs
    above the root."""
    out: list[str] = []
    for part in rel.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not out:
                raise OutsideRoot(OUTSIDE)
            out.pop()
        else:
            out.append(part)
    return out


def _follow(root_real: str, folder: list[str], target: str) -> list[str]:
    """A link's target as components under the root: relative to the folder holding it, or
    absolute (then it must lie under the root's real path)."""
    if os.path.isabs(target):  # under the root, or `..` leads out (and _parts refuses it)
        return _parts(posixpath.relpath(posixpath.normpath(target), root_real))
    return _parts("/".join([*folder, target]))


@contextmanager
def open_inside(root: str | os.PathLike[str], rel: str) -> Iterator[tuple[int, str]]:
    """(a read-only descriptor of the regular file `rel` under `root`, opened as the module
    says, its path under the root with every link resolved); closed on exit. Raises
    OutsideRoot or NotInWorkspace (both ValueError)."""
    root_real = os.path.realpath(root)
    parts = _parts(rel)
    if not parts:
        raise NotInWorkspace(MISSING)
    links = 0
    while True:
        fd, parts, links = _walk(root_real, parts, links)
        if fd >= 0:
            break
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotInWorkspace(MISSING)  # a folder, a FIFO, a device
        yield fd, "/".join(parts)
    finally:
        os.close(fd)


def _walk(root_real: str, parts: list[str], links: int) -> tuple[int, list[str], int]:
    """One walk from the root: (the file's descriptor, parts, links), or (-1, the parts to walk
    again after a link, links + 1)."""
    try:
        here = os.open(root_real, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    except OSError as exc:
        raise NotInWorkspace(f"cannot open the workspace root: {exc.strerror}") from None
    try:
        for i, name in enumerate(parts):
            last = i == len(parts) - 1
            flags = os.O_RDONLY | _NOFOLLOW | _CLOEXEC | (os.O_NONBLOCK if last else _DIRECTORY)
            try:
                nxt = os.open(name, flags, dir_fd=here)
            except OSError as exc:
                target = _link_at(here, name, exc)
                if links >= MAX_LINKS:
                    raise NotInWorkspace("too many levels of symbolic links") from None
                return -1, _follow(root_real, parts[:i], target) + parts[i + 1 :], links + 1
            os.close(here)
            here = nxt
        fd, here = here, -1
        return fd, parts, links
    finally:
        if here >= 0:
            os.close(here)


def _link_at(folder_fd: int, name: str, exc: OSError) -> str:
    """The target of the link `name` that made an O_NOFOLLOW open fail (ELOOP on Linux and
    macOS, EMLINK on FreeBSD); NotInWorkspace when the failure was something else."""
    try:
        return os.readlink(name, dir_fd=folder_fd)
    except OSError:
        pass
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        raise NotInWorkspace(MISSING) from None
    raise NotInWorkspace(f"cannot open: {exc.strerror}") from None


def is_utf8(name: str) -> bool:
    """A path Python could only decode with surrogate escapes (bytes that are not UTF-8) can be
    neither stored nor shown: it is skipped with a reason, never passed on."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def names_file(root: str | os.PathLike[str], rel: str) -> bool:
    """Whether a root-relative path names a file under the root now: a stat, never a read
    (how a link's key is chosen between a path beside its note and one from the root)."""
    if rel.startswith("../") or rel in ("..", ".") or not is_utf8(rel):
        return False
    return os.path.isfile(os.path.join(root, *rel.split("/")))


def read_inside(root: str | os.PathLike[str], rel: str, max_bytes: int) -> tuple[bytes, str]:
    """(the bytes of the Markdown file `rel` under `root`, its resolved path); ValueError with a
    user-facing reason when it is outside, missing, not a regular file, too large or not text."""
    with open_inside(root, rel) as (fd, real):
        size = os.fstat(fd).st_size
        if size > max_bytes:
            raise ValueError(f"file too large ({size / 1e6:.1f} MB)")
        data = _read_all(fd, max_bytes)
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        raise ValueError("binary file (NUL bytes)")
    return data, real


def _read_all(fd: int, max_bytes: int) -> bytes:
    chunks = []
    remaining = max_bytes + 1
    while remaining > 0:
        block = os.read(fd, min(1 << 20, remaining))
        if not block:
            break
        chunks.append(block)
        remaining -= len(block)
    data = b"".join(chunks)
    if len(data) > max_bytes:
        raise ValueError("file grew past the size limit while being read")
    return data


@dataclass
class LineWindow:
    """Lines `first`..`last` of a file as `read_lines` returns them."""

    lines: list[str]  # decoded, replacement characters for bytes that are not UTF-8
    total: int  # the file's lines (an empty file has one, empty)
    cut: bool  # lines of the range left out by the caps, or the one line shortened
    path: str  # under the root, links resolved


def read_lines(
    root: str | os.PathLike[str],
    rel: str,
    first: int,
    last: int | None,
    *,
    max_file_bytes: int,
    max_lines: int,
    max_bytes: int,
) -> LineWindow:
    """Lines `first`..`last` (1-based, inclusive; None: to the end) of the Markdown file `rel`,
    read in blocks from the confined descriptor: at most `max_lines` lines and `max_bytes` of
    text are kept (at least one line, cut when longer), the rest only counted, so memory stays
    bounded whatever the file's size. ValueError as `read_inside`."""
    window = _Window(first, last, max_lines, max_bytes)
    with open_inside(root, rel) as (fd, real):
        size = os.fstat(fd).st_size
        if size > max_file_bytes:
            raise ValueError(f"file too large ({size / 1e6:.1f} MB)")
        seen = 0
        while block := os.read(fd, READ_BLOCK):
            if not seen and b"\x00" in block[:BINARY_SNIFF_BYTES]:
                raise ValueError("binary file (NUL bytes)")
            seen += len(block)
            if seen > max_file_bytes:
                raise ValueError("file grew past the size limit while being read")
            window.feed(block)
    return window.done(real)


class _Window:
    """The state of `read_lines` between blocks: which line is being read, what is kept."""

    def __init__(self, first: int, last: int | None, max_lines: int, max_bytes: int) -> None:
        self.first, self.last = first, last
        self.max_lines, self.max_bytes = max_lines, max_bytes
        self.lineno = 1  # the line being read
        self.current = bytearray()  # its bytes (up to the cap), while it is in the window
        self.partial = False  # the line being read has bytes (so it exists at the end)
        self.out: list[str] = []
        self.size = 0
        self.cut = False

    def _past(self) -> bool:
        return self.cut or (self.last is not None and self.lineno > self.last)

    def feed(self, block: bytes) -> None:
        pos, n = 0, len(block)
        while pos < n:
            if self._past():  # nothing more to keep: count the rest
                self._count(block, pos, block.count(b"\n", pos))
                return
            if self.lineno < self.first:  # before the window: skip whole lines cheaply
                newlines = block.count(b"\n", pos)
                if self.lineno + newlines < self.first:
                    self._count(block, pos, newlines)
                    return
                while self.lineno < self.first:
                    pos = block.index(b"\n", pos) + 1
                    self.lineno += 1
                self.partial = False
                continue
            nl = block.find(b"\n", pos)
            end = nl if nl >= 0 else n
            if end > pos:
                self.partial = True
                room = self.max_bytes + 1 - len(self.current)
                if room > 0:
                    self.current += block[pos : min(end, pos + room)]
            if nl < 0:
                return
            self._end_line()
            pos = nl + 1

    def _count(self, block: bytes, pos: int, newlines: int) -> None:
        if newlines:
            self.lineno += newlines
            self.partial = not block.endswith(b"\n")
        else:
            self.partial = self.partial or pos < len(block)

    def _end_line(self) -> None:
        """The line in the window ends: kept, or (no room) the window is cut."""
        line = bytes(self.current)
        if len(self.out) >= self.max_lines or self.size + len(line) > self.max_bytes:
            if not self.out:  # one line longer than the cap: shortened
                self.out.append(line[: self.max_bytes].decode("utf-8", "ignore"))
            self.cut = True
        else:
            self.out.append(line.decode("utf-8", "replace"))
            self.size += len(line) + 1
        self.current = bytearray()
        self.partial = False
        self.lineno += 1

    def done(self, path: str) -> LineWindow:
        if self.partial or self.lineno == 1:  # a last line without its newline; an empty file
            if self._past() or self.lineno < self.first:
                self.lineno += 1
            else:
                self._end_line()
        return LineWindow(self.out, self.lineno - 1, self.cut, path)

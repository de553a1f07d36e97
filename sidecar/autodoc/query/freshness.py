"""A hit's file checked against the disk before it is shown: size and mtime, then the hash when
those differ. A file that is gone or changed is dropped from the answer (hits further down take
its place) and queued for re-indexing, so no hit points at a span that moved.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import stat
from collections.abc import Iterable

from autodoc.files.confine import open_inside
from autodoc.store import Workspace

STALE_SPARE = 10  # hits read beyond the limit, to stand in for stale ones


def stale_documents(ws: Workspace, rows: Iterable[sqlite3.Row]) -> set[str]:
    """Paths whose file is gone or differs from what was indexed, so no hit points at a
    missing file or a span that moved. A stat per document; the hash only when the stat
    differs (a `touch` or a checkout that rewrote identical bytes is still fresh)."""
    stale: set[str] = set()
    seen: set[str] = set()
    for r in rows:
        path = r["path"]
        if path in seen:
            continue
        seen.add(path)
        if not _fresh(ws, path, r):
            stale.add(path)
    return stale


def _fresh(ws: Workspace, path: str, row: sqlite3.Row) -> bool:
    """The file at `path` has the indexed stat, or else the indexed bytes; a file gone, moved
    outside by a link, or unreadable is not fresh. The common case costs one `lstat` and reads
    nothing (a plain file with the indexed size and mtime); anything else, and every byte
    compared, goes through the confined open."""
    with contextlib.suppress(OSError):
        info = os.lstat(os.path.join(ws.root, *path.split("/")))
        if (
            stat.S_ISREG(info.st_mode)
            and info.st_size == row["size"]
            and info.st_mtime_ns == row["mtime_ns"]
        ):
            return True
    try:
        with open_inside(ws.root, path) as (fd, _):
            info = os.fstat(fd)
            if info.st_size != row["size"]:
                return False
            if info.st_mtime_ns == row["mtime_ns"]:
                return True
            digest = hashlib.sha256()
            while block := os.read(fd, 1 << 20):
                digest.update(block)
            return digest.hexdigest() == row["content_hash"]
    except (OSError, ValueError):
        return False

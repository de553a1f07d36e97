"""File URIs and paths, both ways: the one mapping every LSP feature uses.

A client names a document by a `file:` URI it spelled itself: `%20` for a space, UTF-8 escapes
in upper or lower case for a non-ASCII name, `%3A` for a drive letter's colon. Decoding each
feature's own way (or comparing URI strings) made a note named `My Note.md` unknown to some of
them. Here a URI is decoded segment by segment to the path it names (the bytes of a POSIX name
kept as they were: a name that is not UTF-8 comes back to the same file), and a path becomes the
URI Python's `as_uri` writes, which this decoding reads back to the same path. What names no file
on this machine is refused with the reason: a segment holding an encoded `/` or NUL, a query or
a fragment, another host (`file://host/share`), and on POSIX a Windows drive (`file:///C:/x`).
On Windows a drive letter (`C:` or `c%3A`) and a UNC share are the paths they name there.
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePath, PurePosixPath, PureWindowsPath
from urllib.parse import unquote_to_bytes, urlsplit

WINDOWS = os.name == "nt"
_DRIVE = re.compile(r"^[A-Za-z]:$")
LOCAL_HOSTS = ("", "localhost")


class UriError(ValueError):
    """A `file:` URI that names no file on this machine; the message says why."""


def file_uri_path(uri: str, *, windows: bool = WINDOWS) -> PurePath | None:
    """The path a `file:` URI names (a Windows path where `windows`); None for a URI of
    another scheme (`untitled:`, `git:`: no file to serve). Raises UriError for a file URI that
    names no file here."""
    parts = urlsplit(uri)
    if parts.scheme.lower() != "file":
        return None
    if parts.query or parts.fragment or uri.endswith(("?", "#")):
        raise UriError(f"{uri}: a file URI with a query or fragment names no file")
    segments = [_segment(uri, s, windows) for s in parts.path.split("/")]
    host = parts.netloc
    if host.lower() not in LOCAL_HOSTS:
        if not windows:
            raise UriError(f"{uri}: names a file on the host {host!r}; only local files are served")
        return PureWindowsPath("//" + host + "/".join(segments))
    if not parts.path.startswith("/"):
        raise UriError(f"{uri}: a file URI needs an absolute path")
    drive = segments[1] if len(segments) > 1 else ""
    if _DRIVE.match(drive):
        if not windows:
            raise UriError(f"{uri}: a Windows drive path names no file on this machine")
        return PureWindowsPath(drive.upper() + "/" + "/".join(segments[2:]))
    if windows:
        raise UriError(f"{uri}: a path on Windows starts with a drive (file:///C:/...)")
    return PurePosixPath("/".join(segments))


def _segment(uri: str, segment: str, windows: bool) -> str:
    """One path segment decoded: UTF-8, or on POSIX the name's own bytes where it is not."""
    raw = unquote_to_bytes(segment)
    if b"/" in raw or b"\0" in raw or (windows and b"\\" in raw):
        raise UriError(f"{uri}: the segment {segment!r} holds an encoded separator or NUL")
    if windows:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise UriError(f"{uri}: the segment {segment!r} is not UTF-8") from None
    return os.fsdecode(raw)


def uri_to_path(uri: str) -> Path | None:
    """The local path a `file:` URI names, None for another scheme; UriError as above."""
    path = file_uri_path(uri)
    return None if path is None else Path(path)


def path_to_uri(path: PurePath) -> str:
    """The `file:` URI of an absolute path (each byte that needs it escaped, in upper case):
    `file_uri_path` reads it back to the same path."""
    return path.as_uri()

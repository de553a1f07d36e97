"""The writer lease: the one process allowed to write the store holds an exclusive flock on a
file beside the db. Apart from the connection code because it is about processes, not SQL.

The holder writes who it is into the file, so a process refused the lease can say in words who
writes the store and since when: `pid N on HOST` on the first line (what editors show), then
`command ...` (the holder's command line) and `since ...` (when it took the lease, ISO 8601).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shlex
import socket
import sys
import threading
from datetime import datetime
from pathlib import Path

from autodoc.wire.errors import StoreBusyError

RECORD_BYTES = 1000  # what is read of a holder's record: its lines are capped well below
COMMAND_CHARS = 200  # a command line longer than this is cut (a `--call` with a long JSON)


def command_line(argv: list[str] | None = None) -> str:
    """This process's command as a person would type it: `autodoc serve`, not the path of the
    console script or of `autodoc/__main__.py`."""
    argv = list(sys.argv if argv is None else argv) or ["?"]
    first = Path(argv[0])
    name = first.parent.name if first.name == "__main__.py" else first.name
    line = shlex.join([name or "?", *argv[1:]]).replace("\n", " ")
    return line if len(line) <= COMMAND_CHARS else line[: COMMAND_CHARS - 1] + "…"


def holder_record() -> str:
    """The lines this process writes into the lease file when it takes the lease."""
    since = datetime.now().astimezone().isoformat(timespec="seconds")
    return f"pid {os.getpid()} on {socket.gethostname()}\ncommand {command_line()}\nsince {since}\n"


def parse_record(text: str) -> dict[str, str]:
    """A holder's record read back: `holder` (the first line, as editors show it), and its
    `command` and `since` where it wrote them (an older version wrote only the first line)."""
    lines = [line.strip() for line in text.strip().splitlines()]
    out = {"holder": lines[0][:200] if lines else ""}
    for line in lines[1:]:
        key, _, value = line.partition(" ")
        if key in ("command", "since") and value:
            out[key] = value
    return out


class WriterLease:
    """An exclusive flock on `<db>.lock`: the one process allowed to write the store."""

    def __init__(self, db_path: Path) -> None:
        self.path = Path(str(db_path) + ".lock")
        self.fd: int | None = None
        # Taking the lease and asking whether another holds it exclude each other: a probe
        # between this process's flock and its `fd` would see its own lock as another's.
        self._guard = threading.Lock()

    def acquire(self) -> None:
        with self._guard:
            self._acquire()

    def _acquire(self) -> None:
        if self.fd is not None:
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            record = ""
            with contextlib.suppress(OSError):
                record = os.pread(fd, RECORD_BYTES, 0).decode("utf-8", "replace")
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise StoreBusyError(str(self.path), **parse_record(record)) from None
            raise
        mine = holder_record().encode()
        # written over the last holder's record, then cut to its length: a process that reads
        # it meanwhile finds a whole first line, never an empty file
        os.pwrite(fd, mine, 0)
        os.ftruncate(fd, len(mine))
        self.fd = fd

    def held_elsewhere(self) -> bool:
        """Whether another process holds the lease now (this one does not): a shared lock is
        tried and dropped at once, so asking never takes the lease from anyone."""
        with self._guard:
            return self.fd is None and self._probe()

    def _probe(self) -> bool:
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return False  # no lease file: nobody has ever written, nobody holds it
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as exc:
            return exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)
        else:
            fcntl.flock(fd, fcntl.LOCK_UN)
            return False
        finally:
            os.close(fd)

    def record(self) -> dict[str, str]:
        """Who holds the lease, as its holder wrote it (`parse_record`); empty values if
        unknown."""
        try:
            with open(self.path, "rb") as fh:
                return parse_record(fh.read(RECORD_BYTES).decode("utf-8", "replace"))
        except OSError:
            return {"holder": ""}

    def holder(self) -> str:
        """Who holds the lease, as its holder wrote it (`pid N on HOST`); "" if unknown."""
        return self.record()["holder"]

    def release(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, 0)
            os.close(self.fd)  # closing drops the flock
            self.fd = None

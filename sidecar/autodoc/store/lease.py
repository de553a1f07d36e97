"""The writer lease: the one process allowed to write the store holds an exclusive flock on a
file beside the db. Apart from the connection code because it is about processes, not SQL."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import socket
import threading
from pathlib import Path

from autodoc.wire.errors import StoreBusyError


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
            holder = ""
            with contextlib.suppress(OSError):
                holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise StoreBusyError(str(self.path), holder) from None
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}".encode(), 0)
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

    def holder(self) -> str:
        """Who holds the lease, as its holder wrote it (`pid N on HOST`); "" if unknown."""
        try:
            with open(self.path, "rb") as fh:
                return fh.read(200).decode("utf-8", "replace").strip()
        except OSError:
            return ""

    def release(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, 0)
            os.close(self.fd)  # closing drops the flock
            self.fd = None

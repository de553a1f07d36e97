"""An opt-in log of the questions a server answered, for the report of what the docs do not
answer (`gap_report`).

What is kept, a JSON line each, in a file outside every served folder:
- a question: its time, workspace, who asked (a token's name or the client's, never a token),
  the query, the answer's confidence, `missing` words, best cosine (and the model it is of) and
  its first hits (path, lines, breadcrumb, relevance);
- an opening: a reader read or jumped to a section (MCP `read_span`, the plugin's jump through
  `search.opened`).

How it is written: never on the answer's thread. An answer is digested into a record in a few
microseconds and queued; one thread per process appends the records, each line one `write` to
a file opened `O_APPEND`, under an `flock` shared by every process of a team server, and
`fdatasync`s at most once a second (`SYNC_EVERY_S`). A SIGKILL therefore loses at most the
questions still queued or settling (`SETTLE_S`): a written line is the kernel's. A power loss
may also take the last second's lines, or leave a last line cut short, which the reader skips
and the next writer ends before it appends.

Bounded: past `MAX_BYTES` the file is renamed to `PATH.1` (`PATH.1` to `PATH.2`, ...), `KEEP`
files in all; rotated files older than `MAX_AGE_DAYS` are deleted.

Picker keystrokes are not questions: a question from the same asker and workspace within
`SETTLE_S` of the last, one a prefix of the other, replaces it; the one a user settles on is
written once nothing follows it for `SETTLE_S`, or at once when they open a hit.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import queue
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autodoc.wire.errors import INVALID_PARAMS, RpcError

log = logging.getLogger(__name__)

FORMAT = 1  # the records' `v`
MAX_BYTES = 16 * 1024 * 1024  # one file's size before it is rotated
KEEP = 4  # files kept, the current one included: at most about 64 MiB
MAX_AGE_DAYS = 90  # a rotated file older than this is deleted
SETTLE_S = 2.0  # a picker's next keystroke comes well within this
SYNC_EVERY_S = 1.0  # `fdatasync` at most this often: a power loss may take the last second
MAX_QUERY_CHARS = 500  # a longer query is cut (a pasted page is not a question)
HITS_KEPT = 5  # the first hits a record keeps
MAX_BREADCRUMB_CHARS = 200


def checked_log_path(path: str | None, folders: list[Path]) -> str | None:
    """The question log's path, resolved; -32602 when it is inside a served folder (it would
    be indexed and read as a note) or is a folder, before anything opens."""
    if not path:
        return None
    log = Path(path).expanduser().resolve()
    for folder in folders:
        if log.is_relative_to(folder.resolve()):
            raise RpcError(INVALID_PARAMS, f"--log-questions {log} is inside the served folder "
                           f"{folder}: keep the log outside every vault")  # fmt: skip
    if log.is_dir():
        raise RpcError(INVALID_PARAMS, f"--log-questions takes a file, got the folder {log}")
    return str(log)


def logged_line(question_log: str | None) -> str:
    """What a server's start line says of its question log."""
    return f"questions logged to {question_log}" if question_log else "questions not logged"


def question_record(asker: str, answer: dict[str, Any], at: float) -> dict[str, Any]:
    """What the log keeps of one `search.query` answer."""
    hits = [
        {
            "path": h["path"],
            "line": h.get("line", h.get("line_start", 1)),
            "line_end": h.get("line_end", 0),
            "breadcrumb": str(h.get("breadcrumb", ""))[:MAX_BREADCRUMB_CHARS],
            "relevance": round(float(h.get("relevance", 0.0)), 4),
        }
        for h in answer.get("hits", [])[:HITS_KEPT]
    ]
    return {
        "v": FORMAT,
        "kind": "question",
        "at": round(at, 3),
        "workspace": answer.get("workspace", ""),
        "asker": asker,
        "query": str(answer.get("query", ""))[:MAX_QUERY_CHARS],
        "confidence": answer.get("confidence", ""),
        "missing": list(answer.get("missing", [])),
        "cosine": answer.get("cosine"),
        "model": answer.get("model", ""),  # whose scale `cosine` is on
        "fusion": (answer.get("fusion") or {}).get(
            "method"
        ),  # `learned`: relevance is a probability
        "hits": hits,
    }


def opened_record(asker: str, workspace: str, path: str, line: int, at: float) -> dict[str, Any]:
    """A reader opened a section: the report counts a question whose hit was opened as
    answered."""
    return {"v": FORMAT, "kind": "opened", "at": round(at, 3), "workspace": workspace,
            "asker": asker, "path": path, "line": line}  # fmt: skip


def rotated(path: Path, n: int) -> Path:
    return path.with_name(f"{path.name}.{n}")


def log_files(path: Path) -> list[Path]:
    """The log's files, oldest first."""
    older = [rotated(path, n) for n in range(KEEP - 1, 0, -1)]
    return [p for p in [*older, path] if p.is_file()]


_KINDS = {"question": ("query", str), "opened": ("path", str)}


def _usable(record: Any) -> bool:
    """A record of this format with the fields the report reads, of their types."""
    if not isinstance(record, dict) or record.get("v") != FORMAT:
        return False
    at = record.get("at")
    kind = _KINDS.get(record.get("kind"))  # type: ignore[arg-type]
    return (
        kind is not None
        and isinstance(at, int | float)
        and not isinstance(at, bool)
        and isinstance(record.get(kind[0]), kind[1])
        and isinstance(record.get("workspace"), str)
        and isinstance(record.get("asker"), str)
    )


def read_records(path: Path, since: float | None = None) -> tuple[list[dict[str, Any]], int]:
    """Every record of the log (rotated files first), from `since` (epoch seconds) on, and how
    many lines could not be read (a last line cut by a crash, a stray edit). Read under the
    writers' lock, shared, so no rotation moves the files meanwhile."""
    records: list[dict[str, Any]] = []
    unreadable = 0
    with _shared_lock(path):
        for file in log_files(path):
            with open(file, "rb") as f:
                for raw in f:
                    record = _parsed(raw)
                    if record is None:
                        unreadable += 1
                    elif since is None or record["at"] >= since:
                        records.append(record)
    return records, unreadable


def _parsed(raw: bytes) -> dict[str, Any] | None:
    if not raw.endswith(b"\n"):
        return None  # written up to a crash: the record never finished
    try:
        record = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return record if _usable(record) else None


@contextlib.contextmanager
def _shared_lock(path: Path) -> Iterator[None]:
    try:
        fd = os.open(str(path) + ".lock", os.O_RDONLY)
    except OSError:  # no writer ever ran here
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)


class LogFile:
    """Appends whole lines to the log, rotating it; safe between the processes of one server
    (an `flock` on `PATH.lock` around each batch and each rotation). A file descriptor is
    only ever swapped for one already open, so a failed open (the folder removed, a full
    disk) leaves the old one in use, never a closed number."""

    def __init__(self, path: Path, *, max_bytes: int = MAX_BYTES) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self._synced = -SYNC_EVERY_S
        self.dirty = False  # written since the last `fdatasync`
        self._ends_whole = False  # not known until `_end_cut_line` looks, under the lock
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock_fd = os.open(str(path) + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            self._fd = self._open()
        except OSError:
            os.close(self._lock_fd)
            raise
        self._prune()

    def _open(self) -> int:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def _swap(self) -> None:
        """Write to the file now at `path` (opened first: the old one stays on failure)."""
        fd = self._open()
        os.close(self._fd)
        self._fd = fd
        self._ends_whole = False

    def _end_cut_line(self) -> None:
        """A line cut short (a machine that lost power, a disk that filled mid-write) gets its
        end, so the next record is a line of its own (the reader skips the cut one)."""
        size = os.fstat(self._fd).st_size
        if size:
            fd = os.open(self.path, os.O_RDONLY)
            try:
                last = os.pread(fd, 1, size - 1)
            finally:
                os.close(fd)
            if last != b"\n":
                os.write(self._fd, b"\n")
        self._ends_whole = True

    def append(self, records: list[dict[str, Any]]) -> None:
        lines = [json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in records]
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        try:
            self._follow_rotation()
            if not self._ends_whole:
                self._end_cut_line()
            try:
                for line in lines:
                    data = line.encode()
                    while data:  # one write a line: O_APPEND keeps each whole
                        data = data[os.write(self._fd, data) :]
            except OSError:
                self._ends_whole = False  # a line may be cut: the next batch ends it first
                raise
            self.dirty = True
            self.sync(time.monotonic())
            if os.fstat(self._fd).st_size >= self.max_bytes:
                self._rotate()
        finally:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def sync_due(self) -> float | None:
        """When (monotonic) the lines written since the last sync are due one, or None."""
        return self._synced + SYNC_EVERY_S if self.dirty else None

    def sync(self, now: float) -> None:
        """At most once a `SYNC_EVERY_S` (the writer thread wakes for it): the lines are the
        kernel's once written (a killed process loses none); this bounds what a power loss can
        take."""
        if self.dirty and now - self._synced >= SYNC_EVERY_S:
            os.fdatasync(self._fd)
            self._synced, self.dirty = now, False

    def _follow_rotation(self) -> None:
        """Another process rotated the file: write to the new one."""
        try:
            current = os.stat(self.path).st_ino
        except FileNotFoundError:
            current = -1
        if current != os.fstat(self._fd).st_ino:
            self._swap()

    def _rotate(self) -> None:
        for n in range(KEEP - 1, 0, -1):
            with contextlib.suppress(FileNotFoundError):
                os.replace(rotated(self.path, n - 1) if n > 1 else self.path,
                           rotated(self.path, n))  # fmt: skip
        self._swap()
        self._prune()

    def _prune(self) -> None:
        """Rotated files older than `MAX_AGE_DAYS` go (at a rotation, and when a server starts:
        a quiet log is bounded in age too)."""
        cutoff = time.time() - MAX_AGE_DAYS * 86400
        for n in range(1, KEEP):
            with contextlib.suppress(FileNotFoundError):
                if os.stat(rotated(self.path, n)).st_mtime < cutoff:
                    os.unlink(rotated(self.path, n))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            if self.dirty:
                os.fdatasync(self._fd)
        for fd in (self._fd, self._lock_fd):
            with contextlib.suppress(OSError):
                os.close(fd)


@dataclass
class _Settling:
    record: dict[str, Any]
    due: float  # monotonic


def typed_on(earlier: str, later: str) -> bool:
    """The later query is the earlier one typed on, or taken back (a picker's keystrokes)."""
    a, b = earlier.strip().casefold(), later.strip().casefold()
    return a.startswith(b) or b.startswith(a)


_STOP = object()


class QuestionLog:
    """The log's writer: `asked` and `opened` queue a record and return; one thread settles
    the questions and appends them (see the module)."""

    def __init__(self, path: Path, *, settle_s: float = SETTLE_S, max_bytes: int = MAX_BYTES):
        self.path = path
        self.settle_s = settle_s
        self.file = LogFile(path, max_bytes=max_bytes)
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._settling: dict[tuple[str, str], _Settling] = {}
        self._thread = threading.Thread(target=self._run, name="autodoc-questions", daemon=True)
        self._thread.start()

    def asked(self, asker: str, answer: dict[str, Any]) -> None:
        self._queue.put(question_record(asker, answer, time.time()))

    def opened(self, asker: str, workspace: str, path: str, line: int) -> None:
        self._queue.put(opened_record(asker, workspace, path, line, time.time()))

    def close(self) -> None:
        """Write what is queued and settling, then stop. A writer that does not finish in
        time (a lock held elsewhere, a hung disk) keeps its file: closing it under the thread
        could send its next write to whatever file took the number."""
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self.file.close()

    def _run(self) -> None:
        failing = False
        while True:
            batch, stop = self._take()
            ready = self._settle(batch, stop)
            try:
                if ready:
                    self.file.append(ready)
                self.file.sync(time.monotonic())
                failing = False
            except OSError as exc:  # a full disk: the answers go on; said once, not per batch
                if not failing:
                    log.error("the question log %s could not be written: %s", self.path, exc)
                failing = True
            if stop:
                return

    def _take(self) -> tuple[list[dict[str, Any]], bool]:
        """What arrived, waiting at most until the next settling question or sync is due."""
        dues = [s.due for s in self._settling.values()]
        sync_due = self.file.sync_due()
        due = min([*dues, sync_due] if sync_due is not None else dues, default=None)
        timeout = None if due is None else max(0.0, due - time.monotonic())
        batch: list[dict[str, Any]] = []
        try:
            item = self._queue.get(timeout=timeout)
        except queue.Empty:
            return batch, False
        while True:
            if item is _STOP:
                return batch, True
            batch.append(item)
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return batch, False

    def _settle(self, batch: list[dict[str, Any]], stop: bool) -> list[dict[str, Any]]:
        """The records to write now: openings at once (with their asker's settling question
        first), a question once nothing typed on it followed for `settle_s`."""
        ready: list[dict[str, Any]] = []
        now = time.monotonic()
        for record in batch:
            key = (record["asker"], record["workspace"])
            held = self._settling.pop(key, None)
            if record["kind"] == "opened":
                if held is not None:
                    ready.append(held.record)
                ready.append(record)
                continue
            if held is not None and not typed_on(held.record["query"], record["query"]):
                ready.append(held.record)  # a new question: the last one was settled on
            self._settling[key] = _Settling(record, now + self.settle_s)
        for key, held in list(self._settling.items()):
            if stop or held.due <= now:
                ready.append(self._settling.pop(key).record)
        ready.sort(key=lambda r: r["at"])
        return ready

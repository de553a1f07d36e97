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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def read_records(path: Path, since: float | None = None) -> tuple[list[dict[str, Any]], int]:
    """Every record of the log (rotated files first), from `since` (epoch seconds) on, and how
    many lines could not be read (a last line cut by a crash, a stray edit)."""
    records: list[dict[str, Any]] = []
    unreadable = 0
    for file in log_files(path):
        with open(file, "rb") as f:
            for raw in f:
                if not raw.endswith(b"\n"):
                    unreadable += 1  # written up to a crash: the record never finished
                    continue
                try:
                    record = json.loads(raw)
                except (json.JSONDecodeError, UnicodeDecodeError):
                    unreadable += 1
                    continue
                if not isinstance(record, dict) or record.get("v") != FORMAT:
                    unreadable += 1
                elif since is None or float(record.get("at", 0)) >= since:
                    records.append(record)
    return records, unreadable


class LogFile:
    """Appends whole lines to the log, rotating it; safe between the processes of one server
    (an `flock` on `PATH.lock` around each batch and each rotation)."""

    def __init__(self, path: Path, *, max_bytes: int = MAX_BYTES) -> None:
        self.path = path
        self.max_bytes = max_bytes
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock_fd = os.open(str(path) + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        self._synced = -SYNC_EVERY_S
        self._fd = self._open()

    def _open(self) -> int:
        self._ends_whole = False  # not known until `_end_cut_line` looks, under the lock
        return os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def _end_cut_line(self) -> None:
        """A line cut short (a machine that lost power mid-write) gets its end, so the next
        record is a line of its own (the reader skips the cut one). Whole `write`s keep every
        later line whole, so this is looked at once a file opened."""
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
            for line in lines:
                data = line.encode()
                while data:  # one write a line: O_APPEND keeps each whole
                    data = data[os.write(self._fd, data) :]
            self._sync()
            if os.fstat(self._fd).st_size >= self.max_bytes:
                self._rotate()
        finally:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def _sync(self, now: float | None = None) -> None:
        """At most once a `SYNC_EVERY_S`: the lines are the kernel's once written (a killed
        process loses none); this bounds what a power loss can take."""
        now = time.monotonic() if now is None else now
        if now - self._synced >= SYNC_EVERY_S:
            os.fdatasync(self._fd)
            self._synced = now

    def _follow_rotation(self) -> None:
        """Another process rotated the file: write to the new one."""
        try:
            current = os.stat(self.path).st_ino
        except FileNotFoundError:
            current = -1
        if current != os.fstat(self._fd).st_ino:
            os.close(self._fd)
            self._fd = self._open()

    def _rotate(self) -> None:
        for n in range(KEEP - 1, 0, -1):
            with contextlib.suppress(FileNotFoundError):
                os.replace(rotated(self.path, n - 1) if n > 1 else self.path,
                           rotated(self.path, n))  # fmt: skip
        os.close(self._fd)
        self._fd = self._open()
        cutoff = time.time() - MAX_AGE_DAYS * 86400
        for n in range(1, KEEP):
            with contextlib.suppress(FileNotFoundError):
                if os.stat(rotated(self.path, n)).st_mtime < cutoff:
                    os.unlink(rotated(self.path, n))

    def close(self) -> None:
        with contextlib.suppress(OSError):
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
        """Write what is queued and settling, then stop."""
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join(timeout=10)
        self.file.close()

    def _run(self) -> None:
        while True:
            batch, stop = self._take()
            ready = self._settle(batch, stop)
            if ready:
                try:
                    self.file.append(ready)
                except OSError:  # a full disk: the answers go on, the log says why it stopped
                    log.exception("the question log %s could not be written", self.path)
            if stop:
                return

    def _take(self) -> tuple[list[dict[str, Any]], bool]:
        """What arrived, waiting at most until the next settling question is due."""
        due = min((s.due for s in self._settling.values()), default=None)
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

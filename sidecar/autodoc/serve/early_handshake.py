"""A stdio server's handshake answered before its SDK has loaded (issue 45).

An editor or an agent host starts `autodoc serve` / `autodoc mcp` and waits for the answer to
`initialize` (and, for MCP, to `tools/list`) before it does anything else. Importing the SDKs
takes 0.3–0.6 s (pygls with lsprotocol; the MCP SDK with pydantic), yet those answers are the
same at every start of one installation. So:

- the SDK is imported and the server built on a thread (`InBackground`), while
- the main thread reads the first messages itself and answers those the SDK answered before
  (`AnswerBook`: its answers, keyed by the request and by a fingerprint of the code that gave
  them); then
- the SDK reads every byte again from the start (`ReplayReader`) and handles the handshake as if
  it had read it first; its answers to what was answered already are dropped, compared with what
  was sent, and recorded for the next start (`EarlyHandshake.sdk_answered`).

Anything unexpected (a message that does not parse, a request the script does not name, an
answer not recorded yet) ends the early part there: the SDK reads it and answers as it always
did. The module loads nothing of the SDKs, the store or the engine.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Generic, TypeVar

from autodoc import __version__
from autodoc.models.model_files import cache_dir
from autodoc.wire.limits import MAX_REQUEST_BYTES, unreadable

log = logging.getLogger(__name__)

T = TypeVar("T")
MISSING: Any = object()  # no recorded answer (a recorded one may be null)
PACKAGE = Path(__file__).resolve().parents[1]  # autodoc/: every file of it is in the fingerprint


# -- the wires ---------------------------------------------------------------------------------


class Wire:
    """How messages are framed on a stdio wire: read one, frame one, find a frame's body."""

    name = ""

    def read(self, raw: BinaryIO) -> tuple[bytes, bytes | None]:
        """(every byte consumed, the message's body, or None when no whole message could be
        read within the limits: end of input, a malformed frame, a body too long)."""
        raise NotImplementedError

    def frame(self, body: bytes) -> bytes:
        raise NotImplementedError

    def body(self, frame: bytes) -> bytes:
        raise NotImplementedError


class LspWire(Wire):
    """Base protocol framing: `Content-Length` headers, a blank line, the body."""

    name = "lsp"
    HEADER_LIMIT = 8192  # a header line longer than this is not LSP

    def read(self, raw: BinaryIO) -> tuple[bytes, bytes | None]:
        consumed = bytearray()
        length = None
        while True:
            line = raw.readline(self.HEADER_LIMIT)
            consumed += line
            if not line.endswith(b"\n"):
                return bytes(consumed), None
            if not line.strip():
                break
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                with contextlib.suppress(ValueError):
                    length = int(value)
        if length is None or not 0 <= length <= MAX_REQUEST_BYTES:
            return bytes(consumed), None
        body = raw.read(length)
        consumed += body
        return bytes(consumed), (body if len(body) == length else None)

    def frame(self, body: bytes) -> bytes:
        return b"Content-Length: %d\r\n\r\n" % len(body) + body

    def body(self, frame: bytes) -> bytes:
        return frame.partition(b"\r\n\r\n")[2]


class McpWire(Wire):
    """MCP's stdio framing: one message a line."""

    name = "mcp"

    def read(self, raw: BinaryIO) -> tuple[bytes, bytes | None]:
        line = raw.readline(MAX_REQUEST_BYTES + 1)
        return line, (line if line.endswith(b"\n") else None)

    def frame(self, body: bytes) -> bytes:
        return body + b"\n"

    def body(self, frame: bytes) -> bytes:
        return frame


@dataclass(frozen=True)
class HandshakeScript:
    """What a client sends first, and which of it may be answered early.

    The early part reads on while each message is a request in `answerable` that was answered,
    or a notification in `passes`; it ends after `last` and at anything else. Every answer but
    `opens`'s is keyed by the session's `opens` request too (MCP shapes `tools/list` by the
    protocol version `initialize` agreed): without one, nothing is answered early or recorded."""

    wire: Wire
    opens: str
    answerable: frozenset[str]
    passes: frozenset[str]
    last: str
    # params that name where and who, not what the answer is: left out of the book's key
    ignored: Mapping[str, frozenset[str]]
    sdk_packages: tuple[str, ...]  # their installed files are in the fingerprint


LSP_SCRIPT = HandshakeScript(
    wire=LspWire(),
    opens="initialize",
    answerable=frozenset({"initialize"}),
    passes=frozenset({"initialized"}),
    last="initialized",
    ignored={
        "initialize": frozenset(
            {"processId", "rootUri", "rootPath", "workspaceFolders", "workDoneToken"}
        )
    },
    sdk_packages=("pygls", "lsprotocol", "cattrs"),
)

MCP_SCRIPT = HandshakeScript(
    wire=McpWire(),
    opens="initialize",
    answerable=frozenset({"initialize", "tools/list"}),
    passes=frozenset({"notifications/initialized"}),
    last="tools/list",
    ignored={},
    sdk_packages=("mcp", "mcp_types", "pydantic", "pydantic_core"),
)


# -- the recorded answers ----------------------------------------------------------------------


def code_fingerprint(sdk_packages: Iterable[str]) -> str:
    """Our version, Python's, and the size and time of every file of this package and of each
    SDK package's top module: a reinstall or an edit records the answers again. ~2 ms."""
    h = hashlib.sha256(f"{__version__}\0{sys.version}".encode())
    for folder, dirs, files in os.walk(PACKAGE):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".py"):
                st = os.stat(os.path.join(folder, name))
                h.update(f"{folder}/{name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    for package in sdk_packages:
        spec = importlib.util.find_spec(package)  # finds, does not import
        origin = spec.origin if spec is not None else None
        if origin and os.path.exists(origin):
            st = os.stat(origin)
            h.update(f"{origin}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        else:
            h.update(f"{package}: absent\n".encode())
    return h.hexdigest()


class AnswerBook:
    """The answers one server's SDK gave to handshake requests, for one fingerprint of the code
    that gave them; kept in the cache folder as JSON, a file per fingerprint (installations
    sharing a cache keep theirs), replaced whole (never half-written). Without a `path` (the
    cache could not be named), it records nothing."""

    LIMIT = 32  # distinct requests kept (a client, a version of it): the newest
    FILES = 4  # fingerprints kept per server: the newest written

    def __init__(self, path: Path | None, fingerprint: str) -> None:
        self.path = path
        self.fingerprint = fingerprint
        self.answers: dict[str, Any] = {}
        with contextlib.suppress(OSError, ValueError, TypeError):
            held = json.loads(path.read_bytes()) if path is not None else None
            if isinstance(held, dict) and held.get("fingerprint") == fingerprint:
                answers = held.get("answers")
                self.answers = answers if isinstance(answers, dict) else {}

    @classmethod
    def for_server(cls, script: HandshakeScript) -> AnswerBook:
        try:
            fingerprint = code_fingerprint(script.sdk_packages)
            path = cache_dir() / "answers" / f"{script.wire.name}-{fingerprint[:16]}.json"
        except Exception as exc:  # a file gone mid-walk, no home folder: answer late this once
            log.info("no recorded handshake answers: %s", exc)
            return cls(None, "")
        return cls(path, fingerprint)

    @staticmethod
    def key(
        method: str, params: Any, ignored: frozenset[str] = frozenset(), session: str = ""
    ) -> str:
        """What names an answer: the method, its params less `ignored` and `_meta`'s progress
        token, and `session` (the key of the session's opening request)."""
        asked = dict(params) if isinstance(params, dict) else {} if params is None else params
        if isinstance(asked, dict):
            for name in ignored:
                asked.pop(name, None)
            meta = asked.pop("_meta", None)
            if isinstance(meta, dict):
                meta = {k: v for k, v in meta.items() if k != "progressToken"}
            if meta:
                asked["_meta"] = meta
        text = json.dumps([method, asked, session], sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    def get(self, key: str) -> Any:
        return self.answers.get(key, MISSING)

    def record(self, key: str, result: Any) -> None:
        """Keep `result` for `key`; the file is written only when something changed."""
        if self.answers.get(key, MISSING) == result or self.path is None:
            return
        newer = AnswerBook(self.path, self.fingerprint).answers  # another start's, since
        self.answers = {**newer, **{k: v for k, v in self.answers.items() if k not in newer}}
        self.answers.pop(key, None)
        self.answers[key] = result
        while len(self.answers) > self.LIMIT:
            del self.answers[next(iter(self.answers))]
        held = {"fingerprint": self.fingerprint, "answers": self.answers}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            part = self.path.with_name(f"{self.path.name}.{os.getpid()}.part")
            part.write_text(json.dumps(held))  # ASCII: any text the answers hold is escaped
            os.replace(part, self.path)
            self._forget_old()
        except (OSError, ValueError) as exc:  # a read-only cache: later starts answer late
            log.info("cannot record the handshake's answers in %s: %s", self.path, exc)

    def _forget_old(self) -> None:
        """Keep the newest FILES books of this server (each edit of the code makes another)."""
        assert self.path is not None
        server = self.path.name.rpartition("-")[0]
        books = sorted(
            self.path.parent.glob(f"{server}-*.json"), key=lambda f: f.stat().st_mtime_ns
        )
        for old in books[: -self.FILES]:
            with contextlib.suppress(OSError):
                old.unlink()


# -- the early part ----------------------------------------------------------------------------


class ReplayReader:
    """`head` (the bytes read already), then `raw`: the SDK reads the stream from its start."""

    def __init__(self, head: bytes, raw: BinaryIO) -> None:
        self.head, self.at, self.raw = head, 0, raw

    def readline(self, limit: int = -1) -> bytes:
        if self.at >= len(self.head):
            return self.raw.readline(limit)
        end = self.head.find(b"\n", self.at)
        stop = len(self.head) if end < 0 else end + 1
        if limit >= 0:
            stop = min(stop, self.at + limit)
        piece, self.at = self.head[self.at : stop], stop
        if piece.endswith(b"\n") or len(piece) == limit or self.at < len(self.head):
            return piece
        return piece + self.raw.readline(-1 if limit < 0 else limit - len(piece))

    def read(self, n: int = -1) -> bytes:
        stop = len(self.head) if n < 0 else min(len(self.head), self.at + n)
        piece, self.at = self.head[self.at : stop], max(self.at, stop)
        if n < 0:
            return piece + self.raw.read()
        return piece + self.raw.read(n - len(piece)) if len(piece) < n else piece

    def read1(self, n: int = -1) -> bytes:
        if self.at < len(self.head):  # what is left of the head, never waiting for more
            stop = len(self.head) if n < 0 else min(len(self.head), self.at + n)
            piece, self.at = self.head[self.at : stop], stop
            return piece
        read1 = getattr(self.raw, "read1", None)
        return read1(n) if read1 is not None else self.raw.read(n)


class EarlyHandshake:
    """The first messages read and, where the book has their answers, answered; then handed to
    the SDK (`replayed`), whose answers pass through `sdk_answered`.

    The early part holds the main thread until the script's end or anything else arrives; a
    client that waits after `notifications/initialized` before its `tools/list` keeps the SDK
    waiting too, which costs nothing: neither server speaks before it is asked."""

    # the SDK's first messages read for a handshake request the early part did not reach: a
    # start that missed `initialize` records `tools/list` as well (one start fills the book)
    SDK_WATCH = 16

    def __init__(self, script: HandshakeScript, book: AnswerBook) -> None:
        self.script, self.book = script, book
        self.read_so_far = bytearray()
        # request id -> (book key, what was sent early or MISSING): answers the SDK owes
        self.pending: dict[int | str, tuple[str, Any]] = {}
        self.unseen = set(script.answerable)  # requests whose answers nobody watches for yet
        self.session: str | None = None  # the key of this session's opening request
        self.sdk_watch = self.SDK_WATCH
        self.lock = threading.Lock()

    def answer_first(self, stdin: BinaryIO, stdout: BinaryIO) -> None:
        """Read and answer the handshake's messages while the script allows it."""
        script = self.script
        while True:
            consumed, body = script.wire.read(stdin)
            self.read_so_far += consumed
            message = _parsed(body)
            method = message.get("method") if message is not None else None
            if message is None or not isinstance(method, str):
                return
            if "id" in message and method in script.answerable:
                if not self._answer(message, method, stdout) or method == script.last:
                    return
            elif "id" not in message and method in script.passes:
                if method == script.last:
                    return
            else:
                return

    def _answer(self, message: dict[str, Any], method: str, stdout: BinaryIO) -> bool:
        """Send the recorded answer; False when there is none (the SDK answers, and it is
        recorded)."""
        rid = _request_id(message)
        if rid is None:
            return False
        result = self._watch(rid, method, message.get("params"), early=True)
        if result is MISSING:
            return False
        answer = {"jsonrpc": "2.0", "id": rid, "result": result}
        stdout.write(self.script.wire.frame(json.dumps(answer, ensure_ascii=False).encode()))
        stdout.flush()
        return True

    def _watch(self, rid: int | str, method: str, params: Any, *, early: bool) -> Any:
        """Watch for the SDK's answer to this request, to record it; `early`: the recorded
        answer (or MISSING), which the caller sends. MISSING, unwatched, for a request of a
        session whose opening was not seen."""
        opening = method == self.script.opens
        if not opening and self.session is None:
            return MISSING
        ignored = self.script.ignored.get(method, frozenset())
        key = AnswerBook.key(method, params, ignored, "" if opening else self.session or "")
        result = self.book.get(key) if early else MISSING
        with self.lock:
            self.pending[rid] = (key, result)
            self.unseen.discard(method)
            if opening:
                self.session = key
        return result

    def sdk_reads(self, body: bytes) -> None:
        """A message the SDK reads after the early part: a handshake request among its first
        ones has its answer recorded too (not sent early: the SDK answers it)."""
        if not self.unseen or self.sdk_watch <= 0:
            return
        self.sdk_watch -= 1
        message = _parsed(body) or {}
        method, rid = message.get("method"), _request_id(message)
        if method in self.unseen and rid is not None:
            self._watch(rid, method, message.get("params"), early=False)

    def replayed(self, stdin: BinaryIO) -> ReplayReader:
        return ReplayReader(bytes(self.read_so_far), stdin)

    def sdk_answered(self, message: Mapping[str, Any]) -> bool:
        """The SDK's answer to a request of the handshake: recorded; True when it was sent
        early (the caller drops it: the client has it)."""
        if "method" in message:
            return False
        rid = _request_id(message)
        with self.lock:
            entry = self.pending.pop(rid, None) if rid is not None else None
        if entry is None:
            return False
        key, sent = entry
        result = message.get("result", MISSING)
        if result is not MISSING:
            self.book.record(key, result)
        if sent is MISSING:
            return False
        if result != sent:
            log.warning(
                "the answer sent early to request %r differed from the server's; the "
                "server's is recorded for the next start",
                rid,
            )
        return True


def _request_id(message: Mapping[str, Any]) -> int | str | None:
    """The id an answer can name (a number or a string), else None."""
    rid = message.get("id")
    return rid if isinstance(rid, (int, str)) and not isinstance(rid, bool) else None


def _parsed(body: bytes | None) -> dict[str, Any] | None:
    """The message as an object; None when it is not one, or when the door's guard refuses it
    (too deep for the parser, too long): the SDK's reader then answers it, as it would later."""
    if body is None or unreadable(body) is not None:
        return None
    try:
        message = json.loads(body)
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


class SdkOutput:
    """The SDK's stdout (whole frames, as pygls writes them): its answers to what was answered
    early are dropped; everything else passes as written."""

    def __init__(self, out: BinaryIO, handshake: EarlyHandshake) -> None:
        self.out, self.handshake = out, handshake

    def write(self, data: bytes) -> int:
        if self.handshake.pending and self._answered_early(data):
            return len(data)
        return self.out.write(data)

    def _answered_early(self, data: bytes) -> bool:
        try:
            message = _parsed(self.handshake.script.wire.body(data))
            return message is not None and self.handshake.sdk_answered(message)
        except Exception:  # never lose an answer to the bookkeeping: send it
            log.exception("could not check an answer against the early handshake")
            return False

    def flush(self) -> None:
        self.out.flush()

    def close(self) -> None:
        self.out.close()


class InBackground(Generic[T]):
    """`build()` on a thread of its own; `result()` waits for it and raises what it raised."""

    def __init__(self, build: Callable[[], T]) -> None:
        self._build = build
        self._value: T | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="sdk-load", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._value = self._build()
        except BaseException as exc:  # handed to the main thread, which raises it
            self._error = exc

    def result(self) -> T:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]

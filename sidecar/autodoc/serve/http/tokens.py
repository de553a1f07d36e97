"""A team server's bearer tokens and what each may spend: requests at once and per second.

The token file has a line per token, `TOKEN [read-only] [rps=N] [concurrent=N] [name=NAME]`
(`#` starts a comment); the name is what the question log and the logs say for the token (by
default `token-` and 8 hex digits of its sha256, never the token).

The limits hold for the whole server, however many worker processes answer: every
worker keeps its counts in one small shared file (`TokenLimits`, a memory map beside the
server's other run files), each change under an flock, which the kernel drops if a worker dies
holding it. In-flight counts are kept per worker, so the requests of a worker that was killed
stop counting the moment it is gone.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import math
import mmap
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MIN_TOKEN_CHARS = 16
MAX_TOKENS = 256  # tokens one server tells apart in its limits file
MAX_WORKERS = 64  # worker processes alive at once (a replaced one frees its row)
_DIGEST = 16  # bytes of a token's sha256 that name its row (never the token itself)


@dataclass(frozen=True)
class Token:
    secret: str
    read_only: bool
    rps: float | None = None  # requests per second, a second's worth at once; None: any
    concurrent: int | None = None  # requests in flight at once; None: any
    name: str = ""  # `name=NAME`: what the question log says for it

    @property
    def label(self) -> str:
        """The name the logs give the token: its own, or a short fingerprint."""
        return self.name or f"token-{hashlib.sha256(self.secret.encode()).hexdigest()[:8]}"

    @property
    def limited(self) -> bool:
        return self.rps is not None or self.concurrent is not None

    @property
    def digest(self) -> bytes:
        return hashlib.sha256(self.secret.encode()).digest()[:_DIGEST]


def _limit(word: str, where: str) -> tuple[str, float]:
    key, _, value = word.partition("=")
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if key not in ("rps", "concurrent") or not number > 0 or math.isinf(number):
        raise ValueError(f"{where}: a line is TOKEN [read-only] [rps=N] [concurrent=N] [name=NAME]")
    if key == "concurrent" and number != int(number):
        raise ValueError(f"{where}: concurrent= takes a whole number")
    return key, number


def parse_token_line(words: list[str], where: str) -> Token:
    """One line of the token file, split into words."""
    secret, rest = words[0], words[1:]
    names = [w[len("name=") :] for w in rest if w.startswith("name=")]
    if len(names) > 1 or any(not n for n in names):
        raise ValueError(f"{where}: name= takes one non-empty name")
    rest = [w for w in rest if not w.startswith("name=")]
    read_only = bool(rest) and rest[0] == "read-only"
    limits = dict(_limit(w, where) for w in rest[read_only:])
    if len(limits) != len(rest) - read_only:
        raise ValueError(f"{where}: a limit is given twice")
    concurrent = limits.get("concurrent")
    return Token(secret, read_only, limits.get("rps"),
                 int(concurrent) if concurrent is not None else None,
                 names[0] if names else "")  # fmt: skip


class Tokens:
    """The server's bearer tokens: a file of `TOKEN [read-only] [rps=N] [concurrent=N]`
    lines (`#` comments), and/or one read-write token from an environment variable."""

    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens

    @classmethod
    def load(cls, file: str | None, env: str | None) -> Tokens:
        tokens: list[Token] = []
        if file:
            for n, raw in enumerate(Path(file).read_text(encoding="utf-8").splitlines(), 1):
                words = raw.split("#", 1)[0].split()
                if words:
                    tokens.append(parse_token_line(words, f"{file}:{n}"))
        if env and os.environ.get(env):
            tokens.append(Token(os.environ[env], False, name=env))
        weak = [t for t in tokens if len(t.secret) < MIN_TOKEN_CHARS]
        if weak:
            raise ValueError(f"a token must have at least {MIN_TOKEN_CHARS} characters")
        if len({t.digest for t in tokens}) > MAX_TOKENS:
            raise ValueError(f"at most {MAX_TOKENS} tokens")
        return cls(tokens)

    def check(self, header: str | None) -> Token | None:
        """The token an `Authorization: Bearer …` header carries, None when it is none of
        ours; every token is compared, in constant time, whatever matched first."""
        if not header or not header.startswith("Bearer "):
            return None
        given = header[len("Bearer ") :].strip().encode()
        found = None
        for token in self.tokens:
            if hmac.compare_digest(given, token.secret.encode()):
                found = token
        return found


@dataclass(frozen=True)
class Refusal:
    """Why a request was not let in, and when to come back (whole seconds, at least 1)."""

    why: str
    retry_after: int


_LAYOUT = (  # name, dtype, shape: the shared file's arrays, in order
    ("pids", np.int64, (MAX_WORKERS,)),
    ("digests", f"S{_DIGEST}", (MAX_TOKENS,)),
    ("buckets", np.float64, (MAX_TOKENS, 2)),  # (requests left this second, refilled at)
    ("in_flight", np.int32, (MAX_WORKERS, MAX_TOKENS)),
)
LIMITS_FILE_BYTES = sum(np.dtype(t).itemsize * math.prod(s) for _, t, s in _LAYOUT)


def process_alive(pid: int) -> bool:
    """Whether a process of this id runs (one of another user's counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class TokenLimits:
    """Every worker's counts of every limited token, in one shared file (see the module)."""

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_RDWR)
        self.map = mmap.mmap(self.fd, LIMITS_FILE_BYTES)
        offset, arrays = 0, {}
        for name, dtype, shape in _LAYOUT:
            count = math.prod(shape)
            arrays[name] = np.frombuffer(self.map, dtype, count, offset).reshape(shape)
            offset += np.dtype(dtype).itemsize * count
        self.pids, self.digests = arrays["pids"], arrays["digests"]
        self.buckets, self.in_flight = arrays["buckets"], arrays["in_flight"]
        self.row = self._claim_row()
        self._slots: dict[bytes, int] = {}  # a token's slot, once found: slots never move

    @staticmethod
    def create(path: Path) -> None:
        """The empty file, made by the server's parent before any worker starts."""
        with open(path, "wb") as f:
            f.truncate(LIMITS_FILE_BYTES)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self.fd, fcntl.LOCK_UN)

    def _claim_row(self) -> int:
        """This worker's row of in-flight counts: a free one, or a dead worker's."""
        with self._locked():
            for row, pid in enumerate(self.pids):
                if pid == 0 or not process_alive(int(pid)):
                    self.pids[row] = os.getpid()
                    self.in_flight[row] = 0
                    return row
        raise RuntimeError(f"more than {MAX_WORKERS} workers share one limits file")

    def _slot(self, token: Token) -> int:
        digest = token.digest
        if digest in self._slots:
            return self._slots[digest]
        self._slots[digest] = slot = self._find_slot(token, digest)
        return slot

    def _find_slot(self, token: Token, digest: bytes) -> int:
        free = None
        for slot, held in enumerate(self.digests):
            if held == digest:
                return slot
            if free is None and held == b"":
                free = slot
        if free is None:
            raise RuntimeError(f"more than {MAX_TOKENS} limited tokens")
        self.digests[free] = digest
        self.buckets[free] = (token.rps or 0.0, time.monotonic())
        return free

    def enter(self, token: Token) -> Refusal | None:
        """Let one request of this token in (count it), or say why not."""
        if not token.limited:
            return None
        with self._locked():
            slot = self._slot(token)
            if token.concurrent is not None and self._running(slot) >= token.concurrent:
                return Refusal(f"at most {token.concurrent} requests at once", 1)
            if token.rps is not None:
                left, since = self.buckets[slot]
                now = time.monotonic()
                left = min(max(token.rps, 1.0), left + (now - since) * token.rps)
                if left < 1.0:
                    self.buckets[slot] = (left, now)
                    wait = math.ceil((1.0 - left) / token.rps)
                    return Refusal(f"at most {token.rps:g} requests a second", max(1, wait))
                self.buckets[slot] = (left - 1.0, now)
            self.in_flight[self.row, slot] += 1
        return None

    def leave(self, token: Token) -> None:
        """A request `enter` let in has been answered."""
        if not token.limited:
            return
        with self._locked():
            slot = self._slot(token)
            self.in_flight[self.row, slot] -= 1

    def _running(self, slot: int) -> int:
        """Requests of this token in flight in live workers (a dead worker's row is freed)."""
        running = int(self.in_flight[:, slot].sum())
        if running == 0:
            return 0
        for row in np.flatnonzero(self.in_flight[:, slot]):
            pid = int(self.pids[row])
            if row != self.row and (pid == 0 or not process_alive(pid)):
                running -= int(self.in_flight[row, slot])
                self.in_flight[row] = 0
                self.pids[row] = 0
        return running

    def close(self) -> None:
        del self.pids, self.digests, self.buckets, self.in_flight  # views of the map
        self.map.close()
        os.close(self.fd)

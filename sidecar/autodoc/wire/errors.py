"""JSON-RPC errors shared by every front end (CLI, LSP, tests).

Codes are part of the public contract: clients branch on them, so they never change meaning.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# LSP: the client cancelled the request, or a newer search from it superseded this one.
REQUEST_CANCELLED = -32800

# Application codes (spec §7): the semantic stage was asked for alone and cannot run.
UNSUPPORTED = -32065
EMBED_FAILED = -32067
SWITCHING = -32069
# Another process holds the store's writer lease.
STORE_BUSY = -32070
# The store's folder cannot be written (a read-only mount): it serves reads only.
STORE_READ_ONLY = -32071
# A token that may only read asked for a write, or for the question log's report (HTTP 403).
FORBIDDEN = -32003


class RpcError(Exception):
    """An error that travels to the caller as a JSON-RPC error object."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_dict(self) -> dict[str, Any]:
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            err["data"] = self.data
        return err


def invalid_params(message: str, **data: Any) -> RpcError:
    return RpcError(INVALID_PARAMS, message, data or None)


def options_object(opts: Any, known: Collection[str], what: str = "option") -> dict[str, Any]:
    """A method's options object: null is none; anything else that is not an object, or a key
    the method does not take, is -32602 naming it and what it takes."""
    if opts is None:
        return {}
    if not isinstance(opts, dict):
        takes = ", ".join(sorted(known))
        raise invalid_params(f"options must be an object: {{{takes}}}", field="opts")
    unknown = [key for key in opts if key not in known]
    if unknown:
        takes = ", ".join(sorted(known))
        first = min(unknown)
        raise invalid_params(f"unknown {what} {first!r} (known: {takes})", field=first)
    return opts


class StoreBusyError(RpcError):
    """Raised when a second process tries to write while another holds the lease. `holder`,
    `command` and `since` are what the holder wrote into the lease file (`store.lease`)."""

    def __init__(
        self, lock_path: str, holder: str = "", command: str = "", since: str = ""
    ) -> None:
        data: dict[str, Any] = {"lock": lock_path, "holder": holder}
        if m := _HOLDER.fullmatch(holder):
            data.update(pid=int(m[1]), host=m[2])
        if command:
            data["command"] = command
        if since:
            data["since"] = since
        super().__init__(STORE_BUSY, busy_message(data), data)


_HOLDER = re.compile(r"pid (\d+) on (.+)")


def busy_message(data: dict[str, Any]) -> str:
    """The sentence a store-busy error says: who writes the store, running what, since when."""
    about = [f"`{data['command']}`"] if data.get("command") else []
    if data.get("since"):
        about.append(f"since {data['since'].replace('T', ' ')[:19]}")
    who = data.get("holder") or ""
    if who and about:
        who += f" ({', '.join(about)})"
    who = f", {who}," if who else ""
    return (f"the store is being written by another process{who} which holds its writer lease"
            f" {data['lock']}")  # fmt: skip


class StoreReadOnlyError(StoreBusyError):
    """The store's folder cannot be written (a read-only mount): every front end treats it as
    a lease it cannot take, serving reads, while the error says why."""

    def __init__(self, path: str, folder: str) -> None:
        RpcError.__init__(
            self, STORE_READ_ONLY, f"the store's folder is read-only: {folder}", {"path": path}
        )


class Cancelled(RpcError):
    def __init__(self, reason: str = "cancelled") -> None:
        super().__init__(REQUEST_CANCELLED, reason)


class CancelToken:
    """Set from another thread; long operations call `check()` between stages and stop there."""

    def __init__(self) -> None:
        self.reason = ""

    def cancel(self, reason: str = "cancelled by the client") -> None:
        self.reason = self.reason or reason

    @property
    def cancelled(self) -> bool:
        return bool(self.reason)

    def check(self) -> None:
        if self.reason:
            raise Cancelled(self.reason)

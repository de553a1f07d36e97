"""The command line beside another process that writes the store: an editor's `autodoc serve`,
a team's `autodoc serve --http`, another `autodoc index`. One process at a time holds the
store's writer lease (`store.lease`); every other one reads.

- Reads (`search`, `find`, `related`, `--call index.status`, …) never need the lease.
- A write waits up to `--wait SECONDS` for it, then says in words who holds it (pid, host,
  command, since when, as the holder wrote them into the lease file) and what to do.
- `autodoc check` never waits and never writes the store another process writes: it checks
  the files as they are now, in a private index of its own (lexical only, thrown away after).
  What the holder indexed may be behind the files (a watcher's delay, a folder it does not
  serve), and a CI verdict must be about the files, not about another process's progress.

A write is not relayed to the holder (as a team server's readers relay theirs): an editor's
server listens for no one, and a team server's relay takes a key only its own processes know.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from autodoc.serve.cli.output import tell
from autodoc.serve.dispatcher import Dispatcher
from autodoc.wire.errors import STORE_BUSY, STORE_READ_ONLY, RpcError

T = TypeVar("T")

DEFAULT_WAIT_S = 10.0  # `--wait`: long enough for another one-shot command's write to end
POLL_S = 0.2  # how often a waiting command tries for the lease again
# Options a private index of `check` does not take: where vectors live and which models run
# (a check embeds nothing, and must not write into a Qdrant collection the store shares).
NOT_FOR_CHECKING = ("embedding", "ranker")


def is_busy(err: RpcError) -> bool:
    """Another process writes the store, or its folder cannot be written."""
    return err.code in (STORE_BUSY, STORE_READ_ONLY)


def advice(err: RpcError, can_wait: bool) -> str:
    """What a person can do about a write the store refused."""
    own_store = "give this command a store of its own with --db PATH (or AUTODOC_DB)"
    if err.code == STORE_READ_ONLY:
        return f"To write, {own_store}."
    wait = " or wait longer with --wait SECONDS," if can_wait else ","
    return (
        "A running `autodoc serve` (an editor's, or a team's with --http) indexes the folders it"
        f" serves itself; to write this store now, stop that process{wait} or {own_store}."
    )


class LeaseWait:
    """One command's writes, waiting for the writer lease up to `seconds` in all (`--wait`);
    one that still finds it held fails with a sentence naming the holder."""

    def __init__(self, seconds: float, doing: str, *, can_wait: bool = True) -> None:
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self.doing = doing  # what the command was doing: "index vault"
        self.can_wait = can_wait
        self.told = False

    def write(self, call: Callable[[], T]) -> T:
        while True:
            try:
                return call()
            except RpcError as err:
                if not is_busy(err):
                    raise
                if err.code == STORE_READ_ONLY or time.monotonic() >= self.deadline:
                    raise self.refused(err) from None
                self._say_waiting(err)
                time.sleep(min(POLL_S, max(0.0, self.deadline - time.monotonic())))

    def _say_waiting(self, err: RpcError) -> None:
        if not self.told:
            self.told = True
            who = (err.data or {}).get("holder") or "another process"
            tell(f"waiting up to {self.seconds:g} s for {who} to stop writing the store")

    def refused(self, err: RpcError) -> RpcError:
        waited = f" (waited {self.seconds:g} s)" if self.told else ""
        message = f"cannot {self.doing}: {err.message}{waited}. {advice(err, self.can_wait)}"
        return RpcError(err.code, message, err.data)


def checking_options(stored: dict[str, Any] | None, changes: dict[str, Any]) -> dict[str, Any]:
    """The options of a private index for `check`: the workspace's own (what it leaves out,
    how it reads links, its schema), with `changes` (`--schema`) over them."""
    kept = {k: v for k, v in (stored or {}).items() if k not in NOT_FOR_CHECKING}
    return {**kept, **changes, "embedding": {"provider": "none"}}


def check_privately(
    open_store: Callable[[Path], Dispatcher],
    name: str,
    root: Path,
    options: dict[str, Any],
    why: RpcError,
) -> dict[str, Any]:
    """`index.check` of the folder in a private store in a temporary folder, removed after:
    the files as they are now, with nothing written where another process writes."""
    with tempfile.TemporaryDirectory(prefix="autodoc-check-") as folder:
        private = open_store(Path(folder) / "autodoc.db")
        try:
            private.call("workspace.add", [name, str(root)])
            private.call("workspace.configure", [name, options])
            report = private.call("index.check", [name])
        finally:
            private.engine.close()
    tell(f"{why.message}: checked the files as they are now, in a private index")
    report["not_indexed"] = why.to_dict()  # the shared store was not written
    report["private_index"] = True
    return report

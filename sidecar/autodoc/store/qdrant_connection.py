"""The connection to a Qdrant server or local-mode folder, shared by the vector collection
(`vectors/qdrant_dense.py`) and the BM25 sparse collection (`bm25/qdrant_sparse.py`): one client
per server per process, the lock local mode needs, and its warnings kept quiet.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import warnings
from collections.abc import Iterator
from typing import Any

from autodoc.wire.api_keys import api_key

_CLIENTS: dict[tuple[str, str], tuple[Any, Any]] = {}
_CLIENTS_LOCK = threading.Lock()


@contextlib.contextmanager
def quiet(local: bool) -> Iterator[None]:
    """Local mode warns that indexes and search parameters have no effect there; a server's
    client does not, and the warning filters are the process's: left alone then."""
    if not local:
        yield
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def location_kind(spec: dict[str, Any]) -> str:
    """Where a Qdrant store is, as an answer names it: `local` (a folder, qdrant-client's local
    mode), `memory` (":memory:") or `server` (a URL)."""
    if spec.get("path"):
        return "local"
    return "memory" if spec.get("url") == ":memory:" else "server"


def is_local(spec: dict[str, Any]) -> bool:
    """qdrant-client's in-process local mode (a folder, or ":memory:"), not a server."""
    return location_kind(spec) != "server"


def close_clients() -> None:
    """Close every client this process made. Run at exit, while imports still work: a local
    client left to its own `__del__` at interpreter shutdown imports to unlock its folder and
    prints `ImportError: sys.meta_path is None` on stderr (issue 57)."""
    with _CLIENTS_LOCK:
        held = list(_CLIENTS.values())
        _CLIENTS.clear()
    for client, lock in held:
        with lock:
            client.close()


atexit.register(close_clients)  # this module loads only where a Qdrant store is configured


def client_for(spec: dict[str, Any]) -> tuple[Any, Any]:
    """One client per server (or local folder) per process, and the lock its calls take: local
    mode allows one client and is not safe for concurrent calls (the vector set and the lexical
    index share it); a server's client needs none."""
    from qdrant_client import QdrantClient

    where = ("path", spec["path"]) if spec.get("path") else ("url", spec["url"])
    made: tuple[Any, Any]
    with _CLIENTS_LOCK:
        if where not in _CLIENTS:
            if where[0] == "path":
                made = QdrantClient(path=where[1]), threading.Lock()
            elif where[1] == ":memory:":
                made = QdrantClient(":memory:"), threading.Lock()
            else:
                key = api_key(spec.get("api_key_env"))
                client = QdrantClient(url=where[1], api_key=key, timeout=spec.get("timeout", 10))
                made = client, contextlib.nullcontext()
            _CLIENTS[where] = made
        return _CLIENTS[where]

"""A model file's identity: its weights' hash and its vectors' dimensions, derived once.

An embedder's fingerprint (`model_fp`, which keys every stored vector) names its weights and its
dimensions. Deriving them reads the whole file (~25 ms for the bundled 23 MB graph) and runs the
model once (onnxruntime, the tokenizer: ~150 ms). A search that embeds nothing still needs the
fingerprint (it reports how complete the vectors are), so both are kept beside the optimised
graph in the cache, keyed by the file's path, size and modification time (as the indexer tells
a changed document), and read back by every later process.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any


def cache_dir() -> Path:
    """Where derived files live: $AUTODOC_CACHE, else $XDG_CACHE_HOME/autodoc (a variable set
    empty counts as unset, as XDG's do: never the working directory)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(os.environ.get("AUTODOC_CACHE") or Path(base) / "autodoc")


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _record(path: Path) -> Path:
    key = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]
    return cache_dir() / "models" / f"{key}.identity.json"


def weights_identity(path: Path) -> dict[str, Any]:
    """{"sha256", "dim" once known} of a model file: read from the cache while the file's
    size and modification time are those recorded, else hashed again."""
    stat = path.stat()
    stamp = [str(path.resolve()), stat.st_size, stat.st_mtime_ns]
    with contextlib.suppress(OSError, ValueError):
        held = json.loads(_record(path).read_text())
        if isinstance(held, dict) and held.get("stamp") == stamp and "sha256" in held:
            return held
    identity: dict[str, Any] = {"stamp": stamp, "sha256": file_sha256(path)}
    _keep(path, identity)
    return identity


def remember_dim(path: Path, identity: dict[str, Any], vectors: Any) -> dict[str, Any]:
    """`identity` with the dimensions of `vectors` (a probe's output), kept for later
    processes."""
    identity = {**identity, "dim": int(vectors.shape[1])}
    _keep(path, identity)
    return identity


def _keep(path: Path, identity: dict[str, Any]) -> None:
    """Write the record whole or not at all (a read-only cache: every process derives it)."""
    record = _record(path)
    tmp = record.with_name(f".{record.name}.{os.getpid()}")
    try:
        record.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(identity))
        os.replace(tmp, record)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()

"""The float32 rows of a vector set by embedding id: the saved ones memory-mapped, those
added since in memory; and a ranked list read lazily. Apart from the indexes that search them
(usearch_index.py) because they are plain arrays, shared by every process that maps the files.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HASH_WIDTH = 64  # a sha256 text hash in hex


def mapped(path: Path, dtype, shape: tuple[int, ...]) -> np.ndarray:
    """A read-only map of `path` as a plain ndarray: np.memmap's own indexing costs ~0.1 ms a
    gather in Python (cpp-docs profile), a view of it none."""
    return np.memmap(path, dtype, "r", 0, shape).view(np.ndarray)


@dataclass
class Rows:
    """Float32 vectors by embedding id (ascending), with their text hashes: the saved rows
    memory-mapped (`base_*`), those added since in memory (`tail_*`)."""

    dim: int
    ids: np.ndarray  # uint64, every row's id, ascending
    hashes: np.ndarray  # S64, every row's text hash
    base: np.ndarray  # (saved, dim) float32, memory-mapped
    tail: np.ndarray  # (added since, dim) float32

    @classmethod
    def empty(cls, dim: int) -> Rows:
        return cls(
            dim,
            np.zeros(0, np.uint64),
            np.zeros(0, f"S{HASH_WIDTH}"),
            np.zeros((0, dim), np.float32),
            np.zeros((0, dim), np.float32),
        )

    def __len__(self) -> int:
        return len(self.ids)

    def extend(self, ids: np.ndarray, hashes: np.ndarray, f32: np.ndarray) -> None:
        self.ids = np.concatenate([self.ids, ids])
        self.hashes = np.concatenate([self.hashes, hashes])
        self.tail = np.concatenate([self.tail, f32]) if len(self.tail) else f32

    def vectors(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Rows `start` to `stop` (a copy where they span both parts)."""
        stop = len(self.ids) if stop is None else min(stop, len(self.ids))
        nb = len(self.base)
        if start >= nb:
            return self.tail[start - nb : stop - nb]
        if stop <= nb:
            return self.base[start:stop]
        return np.concatenate([self.base[start:], self.tail[: stop - nb]])

    def gather(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ids, hashes, float32 rows) of these embedding ids, those not held left out."""
        keys = np.asarray(keys, dtype=np.uint64)
        pos = np.searchsorted(self.ids, keys)
        ok = pos < len(self.ids)
        ok[ok] = self.ids[pos[ok]] == keys[ok]
        pos = pos[ok]
        nb = len(self.base)
        out = np.empty((len(pos), self.dim), np.float32)
        low = pos < nb
        out[low] = self.base[pos[low]]
        out[~low] = self.tail[pos[~low] - nb]
        return self.ids[pos], self.hashes[pos], out


class Ranked(Sequence[tuple[str, float]]):
    """(text hash, cosine) pairs, best first, decoded as they are read."""

    def __init__(self, hashes: np.ndarray, scores: np.ndarray) -> None:
        self.hashes, self.scores = hashes, scores

    def __len__(self) -> int:
        return len(self.hashes)

    def __getitem__(self, i):
        if isinstance(i, slice):
            pairs = zip(self.hashes[i], self.scores[i], strict=True)
            return [(h.decode(), float(x)) for h, x in pairs]
        return self.hashes[i].decode(), float(self.scores[i])


def rows_named(meta: Path, owner: str) -> tuple[int, int]:
    """(row files' generation, rows) a vector index's saved .json names now; (-1, 0) if none."""
    try:
        saved = json.loads(meta.read_text())
        if saved.get("owner") == owner:
            return int(saved["rows_gen"]), int(saved["rows"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return -1, 0

"""The sign codes' USearch `b1` index, mapped from its saved file until it is first changed.

Reading the saved file back (108k cpp-docs codes: ~35-45 ms of a new process's hybrid search)
was most of opening the vector index; mapping it (`view`) costs ~1 ms, and its pages are shared
by every process that maps the file, as the graph's are. A mapped index must never be changed
(usearch 2.26.1: an `add` to one crashed the process), so the first `add` or `remove` works on a
copy made then (~4 ms for 20k codes): a reader whose store holds no rows past the saved file,
the common case, never copies it. The copy holds the same codes in the same slots, so searches
answer as the file read back did (tests/unit/test_sign_index.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from usearch.index import BatchMatches, Index, IndexedKeys, Matches


def _empty(dim: int) -> Index:
    from usearch.index import Index

    # A b1 index only scanned exactly: the graph is never walked, so build it cheaply.
    return Index(ndim=dim, metric="hamming", dtype="b1", connectivity=2, expansion_add=1)


class SignIndex:
    """The b1 index of one vector set: `empty`, or `mapped` from a saved file (copied on the
    first change)."""

    def __init__(self, index: Index, mapped: bool) -> None:
        self._index = index
        self.mapped = mapped  # a view of a file: copied before it is changed

    @classmethod
    def empty(cls, dim: int) -> SignIndex:
        return cls(_empty(dim), mapped=False)

    @classmethod
    def mapped_from(cls, path: Path) -> SignIndex | None:
        """The saved index, mapped; None where the file holds none."""
        from usearch.index import Index

        index = Index.restore(str(path), view=True)
        return None if index is None else cls(index, mapped=True)

    def _own(self) -> Index:
        """The index, copied out of its file first if it is mapped."""
        if self.mapped:
            self._index, self.mapped = self._index.copy(), False
        return self._index

    def add(self, keys: np.ndarray, bits: np.ndarray) -> None:
        self._own().add(keys, bits)

    def remove(self, keys: np.ndarray) -> None:
        self._own().remove(keys)

    def contains(self, keys: np.ndarray) -> bool | np.ndarray:
        return self._index.contains(keys)

    def search(self, qbits: np.ndarray, count: int, *, exact: bool) -> Matches | BatchMatches:
        return self._index.search(qbits, count, exact=exact)

    def save(self, path: str) -> None:
        self._index.save(path)  # a mapped index writes the bytes it maps

    @property
    def memory_usage(self) -> int:
        """Bytes usearch holds for it (a mapped index's codes are the file's pages, not counted)."""
        return self._index.memory_usage

    @property
    def ndim(self) -> int:
        return self._index.ndim

    @property
    def keys(self) -> IndexedKeys:
        return self._index.keys

    def __len__(self) -> int:
        return len(self._index)

    def __contains__(self, key: int) -> bool:
        return bool(self._index.contains(key))

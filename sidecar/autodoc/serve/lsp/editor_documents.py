"""The documents the client has open, by the file each names: its text as the editor holds it
and the URI the client spelled.

pygls keeps an open document's text under its own key for the URI (the URI unquoted), and
hands a document it does not find under a key read from disk, without a word: a feature that
looked the text up under the client's URI served a note named `My Note.md` from disk. Here an
open document is found by its path, however its URI was spelled, and an answer naming an open
document reuses the client's URI, so the client matches it to its buffer.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from pygls.workspace import TextDocument

from autodoc.serve.lsp.file_uris import path_to_uri, uri_to_path


class EditorDocuments:
    """Open documents by real path. Written on the event loop (didOpen, didClose), read from
    the reader threads: the table is replaced, never changed in place."""

    def __init__(self) -> None:
        self._by_path: dict[Path, tuple[str, TextDocument]] = {}
        self._lock = threading.Lock()

    def opened(self, uri: str, document: TextDocument) -> Path | None:
        """The client opened `document` under `uri`; its real path (None: not a local file)."""
        path = _real(uri)
        if path is not None:
            with self._lock:
                self._by_path = {**self._by_path, path: (uri, document)}
        return path

    def closed(self, uri: str) -> None:
        path = _real(uri)
        with self._lock:
            self._by_path = {p: v for p, v in self._by_path.items() if p != path}

    def document(self, path: Path) -> TextDocument | None:
        """The editor's text of the file at `path` when the client has it open."""
        found = self._find(path)
        return None if found is None else found[1]

    def uri(self, path: Path) -> str:
        """The URI to name the file at `path` by: the client's own when it has it open."""
        found = self._find(path)
        return path_to_uri(path) if found is None else found[0]

    def each(self) -> list[tuple[str, TextDocument]]:
        """(the client's URI, the document) of each open document."""
        return list(self._by_path.values())

    def _find(self, path: Path) -> tuple[str, TextDocument] | None:
        table = self._by_path
        if not table:
            return None
        found = table.get(path)
        return found if found is not None else table.get(Path(os.path.realpath(path)))


def _real(uri: str) -> Path | None:
    """The real path of a local file's URI (symbolic links followed, as the host locates
    files); None for another scheme or a URI that names no file here."""
    try:
        path = uri_to_path(uri)
    except ValueError:
        return None
    return None if path is None else Path(os.path.realpath(path))

"""Notice changes made outside the editor (git checkout, another editor, a sync tool).

A watchdog observer per workspace root turns file events into `Refresher.touch` calls; the
refresher debounces and batches them. Folder moves and deletions, which say nothing about
the files inside, ask for a rescan of the root instead.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path

from watchdog.events import (
    EVENT_TYPE_CLOSED,
    EVENT_TYPE_CREATED,
    EVENT_TYPE_DELETED,
    EVENT_TYPE_MODIFIED,
    EVENT_TYPE_MOVED,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import ObservedWatch

from autodoc.files.walker import MARKDOWN_SUFFIXES, hidden_allowed
from autodoc.serve.refresh import Refresher

log = logging.getLogger(__name__)

# Markdown, and YAML for the frontmatter schema: a run over a path that is not a document only
# reloads the schema when it changed.
WATCHED_SUFFIXES = (*MARKDOWN_SUFFIXES, ".yaml", ".yml")
_FILE_EVENTS = {
    EVENT_TYPE_CREATED,
    EVENT_TYPE_MODIFIED,
    EVENT_TYPE_DELETED,
    EVENT_TYPE_MOVED,
    EVENT_TYPE_CLOSED,
}


class _Handler(FileSystemEventHandler):
    def __init__(
        self, workspace: str, root: Path, refresher: Refresher, include_hidden: tuple[str, ...]
    ) -> None:
        self.workspace = workspace
        self.root = os.path.realpath(root)
        self.refresher = refresher
        self.include_hidden = include_hidden  # the workspace's option: as the walker

    def _relative(self, path: str | bytes) -> str | None:
        path = os.fsdecode(path)
        rel = os.path.relpath(path, self.root)
        if rel == "." or rel.startswith(".."):
            return None
        rel = "/".join(rel.split(os.sep))
        if not hidden_allowed(rel, self.include_hidden):
            return None  # .git, .obsidian, editor swap files: as the walker
        return rel

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type not in _FILE_EVENTS:
            return
        paths = [event.src_path]
        if event.event_type == EVENT_TYPE_MOVED:
            paths.append(event.dest_path)
        for path in paths:
            rel = self._relative(path)
            if rel is None:
                continue
            if event.is_directory:
                if event.event_type in (EVENT_TYPE_MOVED, EVENT_TYPE_DELETED, EVENT_TYPE_CREATED):
                    self.refresher.rescan(self.workspace)
            elif rel.lower().endswith(WATCHED_SUFFIXES):
                self.refresher.touch(self.workspace, rel)


class Watcher:
    """One observer thread for all of this process's workspace roots."""

    def __init__(self, refresher: Refresher) -> None:
        self.refresher = refresher
        self.observer = Observer()
        self.observer.daemon = True
        self._watches: dict[str, ObservedWatch] = {}
        self._included: dict[str, tuple[str, ...]] = {}
        self.observer.start()

    def watch(self, workspace: str, root: Path, include_hidden: Sequence[str] = ()) -> bool:
        """Watch a root (again, when its hidden patterns changed)."""
        include = tuple(include_hidden)
        if workspace in self._watches:
            if self._included.get(workspace) == include:
                return True
            self.unwatch(workspace)
        try:
            handler = _Handler(workspace, root, self.refresher, include)
            self._watches[workspace] = self.observer.schedule(handler, handler.root, recursive=True)
            self._included[workspace] = include
        except OSError as exc:  # inotify limits, a root on a filesystem without events
            log.warning("cannot watch %s: %s; saves in the editor still re-index", root, exc)
            return False
        return True

    def unwatch(self, workspace: str) -> None:
        watch = self._watches.pop(workspace, None)
        self._included.pop(workspace, None)
        if watch is not None:
            self.observer.unschedule(watch)

    def close(self) -> None:
        self.observer.stop()
        self.observer.join(timeout=5)

"""Notice changes made outside the editor (git checkout, another editor, a sync tool).

A watchdog observer per workspace root turns file events into `Refresher.touch` calls; the
refresher debounces and batches them. Folder moves and deletions, which say nothing about
the files inside, ask for a rescan of the root instead, and so does a `.gitignore` or `.ignore`
written or removed: the walk then applies the new rules. A path the workspace's rules leave out
(`files.ignore_rules`: exclude, ignore files, hidden names) is not passed on at all.
"""

from __future__ import annotations

import logging
import os
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

from autodoc.files.ignore_rules import IGNORE_FILES, RuleOptions, Rules
from autodoc.files.walker import MARKDOWN_SUFFIXES
from autodoc.serve.host.refresh import Refresher

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

_FOLDER_EVENTS = {EVENT_TYPE_MOVED, EVENT_TYPE_DELETED, EVENT_TYPE_CREATED}


class _Handler(FileSystemEventHandler):
    def __init__(
        self, workspace: str, root: Path, refresher: Refresher, options: RuleOptions
    ) -> None:
        self.workspace = workspace
        self.root = os.path.realpath(root)
        self.refresher = refresher
        self.rules = Rules(self.root, options)  # the walker's rules, ignore files cached

    def _relative(self, path: str | bytes) -> str | None:
        path = os.fsdecode(path)
        rel = os.path.relpath(path, self.root)
        if rel == "." or rel.startswith(".."):
            return None
        return "/".join(rel.split(os.sep))

    def _rules_changed(self, rel: str) -> bool:
        """An ignore file in a folder the walk enters: the rules it holds are read again by a
        walk of the whole root (what it leaves out leaves the index, what it lets in comes)."""
        folder, _, name = rel.rpartition("/")
        if name not in IGNORE_FILES or not self.rules.options.respect_gitignore:
            return False
        return not folder or self.rules.judge_path(folder, is_dir=True) is None

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
                moved = event.event_type in _FOLDER_EVENTS
                if moved and self.rules.judge_path(rel, is_dir=True) is None:  # the walk enters it
                    self.rules.forget()
                    self.refresher.rescan(self.workspace)
            elif self._rules_changed(rel):
                self.rules.forget()
                self.refresher.rescan(self.workspace)
            elif rel.lower().endswith(WATCHED_SUFFIXES) and self.rules.judge_path(rel) is None:
                self.refresher.touch(self.workspace, rel)


class Watcher:
    """One observer thread for all of this process's workspace roots."""

    def __init__(self, refresher: Refresher) -> None:
        self.refresher = refresher
        self.observer = Observer()
        self.observer.daemon = True
        self._watches: dict[str, ObservedWatch] = {}
        self._rules: dict[str, RuleOptions] = {}
        self.observer.start()

    def watch(self, workspace: str, root: Path, options: RuleOptions) -> bool:
        """Watch a root (again, when the options that leave files out changed)."""
        if workspace in self._watches:
            if self._rules.get(workspace) == options:
                return True
            self.unwatch(workspace)
        try:
            handler = _Handler(workspace, root, self.refresher, options)
            self._watches[workspace] = self.observer.schedule(handler, handler.root, recursive=True)
            self._rules[workspace] = options
        except OSError as exc:  # inotify limits, a root on a filesystem without events
            log.warning("cannot watch %s: %s; saves in the editor still re-index", root, exc)
            return False
        return True

    def unwatch(self, workspace: str) -> None:
        watch = self._watches.pop(workspace, None)
        self._rules.pop(workspace, None)
        if watch is not None:
            self.observer.unschedule(watch)

    def close(self) -> None:
        self.observer.stop()
        self.observer.join(timeout=5)

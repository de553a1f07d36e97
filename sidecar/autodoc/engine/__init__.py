"""The engine: one store, its workspaces and the operations on them, grouped by concern.

The dispatcher validates and routes requests here; the CLI, the LSP and MCP servers (through
their host) and the tests all go through the dispatcher, so there is one implementation of every
operation. `core` holds the store, the indexes and the per-search plans; each concern
(`indexing`, `workspaces`, `reading`, `navigation`, `actions`, `renaming`, `completion`,
`questions`) is an
object holding that core, and the method table points at its methods.
"""

from __future__ import annotations

from pathlib import Path

from autodoc.engine.actions import Actions
from autodoc.engine.completion import Completion
from autodoc.engine.core import COLLECT_EVERY_S, FILLING, NO_EMBEDDER, EngineCore
from autodoc.engine.indexing import Indexing
from autodoc.engine.navigation import Navigation
from autodoc.engine.questions import Questions
from autodoc.engine.reading import Reading, checked_path
from autodoc.engine.renaming import Renaming
from autodoc.engine.workspaces import Workspaces


class Engine(EngineCore):
    """The core (store, indexes, plans) and the operations on it, one object per concern:
    workspaces (whose configuring may index), indexing, reading, navigation (links as an
    editor follows them), writing actions, renaming, completion and the questions asked (an
    opt-in log)."""

    def __init__(
        self, db_path: Path | str | None = None, *, question_log: Path | str | None = None
    ) -> None:
        super().__init__(db_path)
        self.indexing = Indexing(self)
        self.workspaces = Workspaces(self, self.indexing)
        self.reading = Reading(self)
        self.navigation = Navigation(self)
        self.actions = Actions(self, self.navigation)
        self.renaming = Renaming(self)
        self.completion = Completion(self)
        self.questions = Questions(self, question_log)

    def close(self) -> None:
        self.indexing.stop()  # the background fill first: it writes through the store
        self.questions.close()  # what is queued and settling is written
        super().close()


__all__ = ["COLLECT_EVERY_S", "FILLING", "NO_EMBEDDER", "Engine", "EngineCore", "checked_path"]

"""The engine: one store, its workspaces and the operations on them, split by responsibility.

The dispatcher validates and routes requests here; the CLI, the LSP and MCP servers (through
their host) and the tests all go through the dispatcher, so there is one implementation of every
operation. `core` holds the store, the indexes and the per-search plans; `indexing`, `workspaces`
and `reading` build on it.
"""

from __future__ import annotations

from autodoc.engine.actions import Actions
from autodoc.engine.completion import Completion
from autodoc.engine.core import COLLECT_EVERY_S, FILLING, NO_EMBEDDER, EngineCore
from autodoc.engine.navigation import Navigation
from autodoc.engine.reading import Reading, checked_path
from autodoc.engine.renaming import Renaming
from autodoc.engine.workspaces import Workspaces


class Engine(Workspaces, Reading, Actions, Navigation, Renaming, Completion):
    """Every operation: workspaces (and indexing, which configuring may run), reading,
    navigation (links as an editor follows them) and writing actions."""


__all__ = ["COLLECT_EVERY_S", "FILLING", "NO_EMBEDDER", "Engine", "EngineCore", "checked_path"]

"""What a server's status says of one workspace of its store (`Host.status`): the store's
counts, the stages' state, and how this server keeps it (served, indexing, its file rules)."""

from __future__ import annotations

from typing import Any

from autodoc.wire import protocol
from autodoc.wire.file_rules import FileRules


def workspace_state(
    listed: dict[str, Any],
    stages: protocol.StageState,
    *,
    served: bool,
    indexing: str,
    rules: FileRules | None,
) -> protocol.WorkspaceState:
    """`listed`: the workspace as `workspace.list` gives it; `stages`: `host.stage_state`'s;
    `rules`: what left files out of this server's last walk of it, when it serves it."""
    state = protocol.WorkspaceState(
        name=listed["name"],
        root=listed["root"],
        served=served,
        indexing=indexing,
        documents=listed["documents"],
        chunks=listed["chunks"],
        indexed_at=listed["indexed_at"],
        semantic=stages["semantic"],
        semantic_reason=stages["semantic_reason"],
        semantic_coverage=stages["semantic_coverage"],
        model=stages["model"],
        rank=stages["rank"],
    )
    if served and rules is not None:
        state["rules"] = rules
    return state

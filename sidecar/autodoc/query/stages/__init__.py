"""The pipeline's stages, registered once, in the order a search runs them.

Adding a stage is a module here and one line in REGISTRY. Everything that names stages is
derived from it: the toggles a client may send (`opts.stages`, the picker's keys), the answer's
`stages` record and `mode_used`, and the stage sets the evaluation compares.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast, get_args

from autodoc.query.stages.base import QueryContext, SearchOptions, Skip, Stage
from autodoc.query.stages.fuse import FuseStage
from autodoc.query.stages.lexical import LexicalStage
from autodoc.query.stages.rerank import RerankStage
from autodoc.query.stages.semantic import SemanticStage
from autodoc.wire import protocol

REGISTRY: tuple[Stage, ...] = (LexicalStage(), SemanticStage(), FuseStage(), RerankStage())

# The stages a client may switch on and off, in pipeline order (protocol.StageName).
TOGGLES: tuple[str, ...] = tuple(s.name for s in REGISTRY if s.toggle)
RETRIEVERS: tuple[str, ...] = tuple(s.name for s in REGISTRY if s.retriever)
assert get_args(protocol.StageName) == TOGGLES, "protocol.StageName must list the toggles"


def mode_used(performed: Sequence[str]) -> protocol.ModeUsed:
    """ "hybrid" when every retriever ran, else the one that did, else "none"."""
    ran = [s for s in RETRIEVERS if s in performed]
    if len(ran) > 1 and ran == list(RETRIEVERS):
        return "hybrid"
    if len(ran) == 1:
        return cast(protocol.ModeUsed, ran[0])  # a retriever's name is a mode
    return "none"


def stage_sets() -> dict[str, list[str]]:
    """The sets a benchmark table compares: each retriever alone, all of them ("hybrid"), and
    all of them followed by each later toggle ("rerank")."""
    sets = {name: [name] for name in RETRIEVERS}
    sets["hybrid"] = list(RETRIEVERS)
    for stage in REGISTRY:
        if stage.toggle and not stage.retriever:
            sets[stage.name] = [*RETRIEVERS, stage.name]
    return sets


# Derived once: the sets `opts.mode` names and the evaluation compares.
STAGE_SETS: dict[str, list[str]] = stage_sets()

__all__ = [
    "REGISTRY",
    "RETRIEVERS",
    "STAGE_SETS",
    "TOGGLES",
    "QueryContext",
    "SearchOptions",
    "Skip",
    "Stage",
    "mode_used",
    "stage_sets",
]

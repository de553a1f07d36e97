"""`gaps.report`'s answer: what the docs did not answer, from a server's question log (doc/gaps.md).
Part of the wire schema: `protocol.py` lists them in `WIRE_TYPES`."""

from __future__ import annotations

from typing_extensions import TypedDict

from autodoc.wire.wire_type import wire_type

_WIRE = wire_type


@_WIRE
class GapShown(TypedDict):
    """A section the group's askers were shown and did not open."""

    path: str
    line: int
    breadcrumb: str
    times: int


@_WIRE
class GapGroup(TypedDict):
    """Unanswered questions that ask the same thing, in other words."""

    count: int
    askers: int
    """How many tokens or clients asked it."""
    question: str
    """The group's most central question."""
    questions: list[str]
    """Up to five of its distinct wordings, the central one first."""
    missing: list[str]
    """Its words found nowhere in the workspace, most asked first."""
    shown: list[GapShown]
    first_at: float
    last_at: float
    new: bool
    """No group of the recorded report (`record`) asks the same thing."""


@_WIRE
class AnsweredQuestion(TypedDict):
    question: str
    count: int


@_WIRE
class GapReport(TypedDict):
    log: str
    since: float | None
    until: float
    workspace: str | None
    questions: int
    answered: int
    """Questions whose answer was confident, or one of whose hits the asker opened."""
    unanswered: int
    opened: int
    """Questions one of whose hits the asker opened (`doc.read`, `search.opened`)."""
    unreadable_lines: int
    groups: list[GapGroup]
    """Largest first."""
    answered_well: list[AnsweredQuestion]
    """The base rate: the answered questions asked most."""
    baseline_at: float | None
    """When the report `new` is counted from was recorded; null: none was."""
    new_groups: int


GAP_TYPES: tuple[type, ...] = (GapShown, GapGroup, AnsweredQuestion, GapReport)

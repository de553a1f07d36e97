"""Leaving files out of a workspace: the `exclude` / `include` options checked (gitignore
patterns, compiled by `pathspec` before they are stored: a bad one is a -32602 naming it, and
the options in force stay as they were), and the answers that report the rules: `index.run`'s
summary (`IndexSummary`, with what each rule left out) and a served workspace's `rules` in the
status. Part of the wire schema: `protocol.py` lists them in `WIRE_TYPES`.
"""

from __future__ import annotations

import re
from typing import Any, NotRequired

from typing_extensions import TypedDict

from autodoc.wire.errors import invalid_params
from autodoc.wire.wire_type import wire_type

_WIRE = wire_type

MAX_RULE_PATTERNS = 256
MAX_PATTERN_CHARS = 400


def rule_patterns(field: str) -> Any:
    """The check of one pattern-list option (`exclude` or `include`)."""

    def check(value: Any) -> list[str]:
        if not isinstance(value, list) or len(value) > MAX_RULE_PATTERNS:
            raise invalid_params(
                f"{field} must be a list of at most {MAX_RULE_PATTERNS} gitignore patterns",
                field=field,
                value=value,
            )
        return [_pattern(field, p) for p in value]

    return check


def _pattern(field: str, pattern: Any) -> str:
    """One pattern as gitignore reads it, relative to the root; refused with the reason."""
    why = ""
    if not isinstance(pattern, str) or not pattern.strip():
        why = "an empty pattern matches nothing"
    elif len(pattern) > MAX_PATTERN_CHARS:
        why = f"longer than {MAX_PATTERN_CHARS} characters"
    elif pattern.startswith("#"):
        why = "a line starting with # is a comment in gitignore syntax (\\# for a literal #)"
    elif ".." in pattern.lstrip("!").strip("/").split("/"):
        why = "patterns are relative to the root: '..' cannot lead out of it"
    else:
        # only a request that sets the option compiles a pattern
        from pathspec import GitIgnoreSpec
        from pathspec.patterns.gitignore import GitIgnorePatternError

        try:
            spec = GitIgnoreSpec.from_lines([pattern])
            if all(p.include is None for p in spec.patterns):
                why = "it matches nothing (an unclosed [ ?)"
        except (GitIgnorePatternError, re.error, ValueError) as exc:
            why = str(exc)
    if why:
        raise invalid_params(
            f"{field}: {pattern!r} is not a usable gitignore pattern: {why}",
            field=field,
            value=pattern,
        )
    return str(pattern)


@_WIRE
class LeftOut(TypedDict):
    """What one rule left out of a walk."""

    rule: str
    """The pattern as written (`node_modules/`, `*.draft.md`)."""
    source: str
    """`exclude` (the workspace option), or the root-relative path of the `.gitignore` or
    `.ignore` file that holds the rule."""
    files: int
    """Markdown files it left out."""
    folders: int
    """Folders it kept the walk out of: what they hold is neither read nor counted."""


@_WIRE
class FileRules(TypedDict):
    """The rules leaving files out of a served workspace (`:checkhealth autodoc` shows them).
    As this server's last walk of its whole root found them."""

    exclude: list[str]
    include: list[str]
    respect_gitignore: bool
    ignore_files: list[str]
    """The `.gitignore` and `.ignore` files in force, root-relative (none read above the root)."""
    left_out: list[LeftOut]


@_WIRE
class SkippedFile(TypedDict):
    path: str
    reason: str


@_WIRE
class FileWarning(TypedDict):
    path: str
    message: str


@_WIRE
class HiddenFiles(TypedDict):
    """Hidden folders and Markdown files not entered (`include_hidden` lets some in)."""

    count: int
    examples: list[str]
    """The first few; folders end with a slash."""


@_WIRE
class ResumedRun(TypedDict):
    """The last run over all files was interrupted: how many of them were current already."""

    already: int
    files: int


@_WIRE
class IndexSummary(TypedDict):
    """`index.run`'s answer: what the walk found and left out, what changed in the index.
    Also `workspace.configure`'s `reindexed`, and a server's runs over a few paths."""

    workspace: str
    files: int
    """Markdown files found and let in."""
    added: int
    modified: int
    deleted: int
    """Documents retired: gone from disk, or left out by a rule now."""
    unchanged: int
    chunks_written: int
    chunks_kept: int
    chunks: int | None
    """Live chunks after the run (null after a run over a few paths: not counted)."""
    documents: int | None
    skipped: list[SkippedFile]
    warnings: list[FileWarning]
    warnings_kept: int
    """Warnings of unchanged files from earlier runs (not read again)."""
    hidden: HiddenFiles
    left_out: list[LeftOut]
    """Each rule (`exclude`, a `.gitignore` or `.ignore` line) that left something out."""
    ignore_files: list[str]
    """The `.gitignore` and `.ignore` files read, root-relative."""
    resumed: ResumedRun | None
    seconds: float
    embedding: NotRequired[dict[str, Any]]
    """The embedding that followed: its model and coverage, `{background: true}` in a server."""


FILE_RULE_TYPES: tuple[type, ...] = (
    LeftOut, FileRules, SkippedFile, FileWarning, HiddenFiles, ResumedRun, IndexSummary,
)  # fmt: skip

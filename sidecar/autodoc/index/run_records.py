"""What one indexing run passes between its steps (a changed document read and cut; its plan in
the publishing transaction) and what it reports (`RunSummary`, the `index.run` answer)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from autodoc.files.walker import FoundFile
from autodoc.parse.chunking import Chunk
from autodoc.parse.document import ParsedDocument


@dataclass
class DocumentUpdate:
    file: FoundFile
    parsed: ParsedDocument
    chunks: list[Chunk]
    content_hash: str
    chunk_fp: str
    meta_fp: str
    symbols: dict[str, tuple[int, int, int]]  # name -> (kind, label, line), for lookup


@dataclass
class PublishPlan:
    update: DocumentUpdate
    doc_id: int
    generation: int
    created: bool  # new, or back after a delete
    kept: dict[int, Chunk] = field(default_factory=dict)  # unchanged chunk id -> its new place
    new: list[tuple[int, Chunk]] = field(default_factory=list)  # (assigned id, chunk)


@dataclass
class RunSummary:
    workspace: str
    files: int = 0
    added: int = 0
    modified: int = 0
    deleted: int = 0
    unchanged: int = 0
    chunks_written: int = 0
    chunks_kept: int = 0
    chunks: int | None = 0  # None after a run over a few paths (not counted)
    documents: int | None = 0
    skipped: list[dict[str, str]] = field(default_factory=list)
    warnings: list[dict[str, str]] = field(default_factory=list)
    warnings_kept: int = 0  # warnings of unchanged files from earlier runs (not read again)
    # hidden folders and Markdown files not entered: {"count", "examples"}
    hidden: dict[str, Any] = field(default_factory=lambda: {"count": 0, "examples": []})
    # what each rule (exclude, a .gitignore or .ignore line) left out: {rule, source, files,
    # folders}; the ignore files read
    left_out: list[dict[str, Any]] = field(default_factory=list)
    ignore_files: list[str] = field(default_factory=list)
    # the last run over all files was interrupted: {"already": files current, "files": found}
    resumed: dict[str, int] | None = None
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

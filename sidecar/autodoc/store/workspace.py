"""A workspace as the store holds it: its row read into a `Workspace`, the rule for its name, the
epochs that cached views of it are keyed by, and a set of its documents (`DocumentSet`, what a
filter keeps)."""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autodoc.wire import workspace_options

WORKSPACE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")  # the whole name (fullmatch)


@dataclass(frozen=True)
class Workspace:
    id: int
    name: str
    root: Path
    options: dict[str, Any]
    indexed_at: float | None
    lexical_epoch: int
    vector_epoch: int = 0
    active_model_fp: str | None = None
    active_embedding: dict[str, Any] | None = None
    link_dialect: str = ""  # JSON: how the workspace's links read (`links/dialect`); '' undecided

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Workspace:
        options = workspace_options.defaults()
        options.update(json.loads(row["options"]))
        return cls(
            row["id"],
            row["name"],
            Path(row["root"]),
            options,
            row["indexed_at"],
            row["lexical_epoch"],
            row["vector_epoch"],
            row["active_model_fp"],
            json.loads(row["active_embedding"]) if row["active_embedding"] else None,
            row["link_dialect"],
        )


def epochs_by_name(conn: sqlite3.Connection, names: list[str]) -> dict[str, tuple[int, int]]:
    """(lexical_epoch, vector_epoch) of each named workspace that exists, in one read."""
    marks = ",".join("?" * len(names))
    rows = conn.execute(
        f"SELECT name, lexical_epoch, vector_epoch FROM workspaces WHERE name IN ({marks})", names
    ).fetchall()
    return {r[0]: (r[1], r[2]) for r in rows}


def read_epochs(conn: sqlite3.Connection, ws_id: int) -> tuple[int, int] | None:
    """(lexical_epoch, vector_epoch): what cached views of a workspace are keyed by."""
    row = conn.execute(
        "SELECT lexical_epoch, vector_epoch FROM workspaces WHERE id = ?", (ws_id,)
    ).fetchone()
    return (row[0], row[1]) if row is not None else None


@dataclass
class DocumentSet:
    """The documents a filter keeps: `keep` holds them, or `drop` holds the live others."""

    size: int  # how many are kept
    keep: set[int] | None = None
    drop: set[int] | None = None

    def __contains__(self, doc_id: int) -> bool:
        if self.keep is not None:
            return doc_id in self.keep
        return doc_id not in (self.drop or ())

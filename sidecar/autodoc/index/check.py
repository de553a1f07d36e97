"""`autodoc check`: every document's frontmatter against the schema, and every link that leads
nowhere, as `path:line: message` findings a CI job can gate on.

It reads what the indexer stored (frontmatter as JSON, links with their lines, parse problems),
so it checks exactly what search sees; files are opened only to point a finding at its line.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from autodoc import store as sql
from autodoc.files.confine import open_inside
from autodoc.links.link_check import BrokenLink, broken_links
from autodoc.parse import frontmatter_schema
from autodoc.parse.document import SUPERSEDE_FIELDS
from autodoc.parse.frontmatter_schema import Field, Schema
from autodoc.store import Store, Workspace

ERROR, WARNING = "error", "warning"
_LINE_IN_MESSAGE = re.compile(r"\(line (\d+)\)|^line (\d+): ")
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[Tt ]\d{2}:\d{2}.*)?$")


@dataclass
class Finding:
    path: str
    line: int
    severity: str
    kind: str  # schema, frontmatter, required, type, enum, link, heading, skipped, warning
    message: str
    link: tuple[str, str] | None = None  # a link finding's (kind, target): its place on the line
    cause: str = ""  # a link finding's: note, attachment, outside or heading (links.link_check)

    def __str__(self) -> str:
        level = "" if self.severity == ERROR else "warning: "
        return f"{self.path}:{self.line}: {level}{self.message}"


# Over 60 lines: one read of every document against the schema, findings gathered as it goes.
def check_workspace(store: Store, ws: Workspace, schema_path: str) -> dict[str, Any]:
    findings: list[Finding] = []
    with store.snapshot() as conn:
        schema = sql.stored_schema(conn, ws.id)
        schema_error = sql.schema_error(conn, ws.id)
        problems = sql.problems(conn, ws.id)
        docs = sql.documents_meta(conn, ws.id)
        links = broken_links(conn, ws)
    for path, kind, message in problems:
        findings.append(_problem(path, kind, message))
    unreadable = {f.path for f in findings if f.kind == "frontmatter"}
    typed = 0
    for path, meta_json in docs:
        meta = json.loads(meta_json or "{}")
        doc_type = schema.type_of(path, {str(k).lower(): v for k, v in meta.items()})
        typed += doc_type is not None
        if path in unreadable:  # reported once, not again as every field missing
            continue
        found = validate(schema, doc_type, meta)
        if found:
            lines = _key_lines(ws.root, path)
            for key, message, what in found:
                findings.append(Finding(path, lines.get(key, 1), ERROR, what, message))
    findings += link_findings(ws, links)
    findings.sort(key=lambda f: (f.path, f.line, f.kind))
    counts = Counter(f.severity for f in findings)
    return {
        "workspace": ws.name,
        "root": str(ws.root),
        "schema": frontmatter_schema.schema_state(schema_path, schema, schema_error),
        "findings": [asdict(f) for f in findings],
        "summary": {
            "documents": len(docs),
            "typed": typed,
            "errors": counts[ERROR],
            "warnings": counts[WARNING],
            "by_kind": dict(sorted(Counter(f.kind for f in findings).items())),
            "links_by_cause": dict(sorted(Counter(f.cause for f in findings if f.cause).items())),
            "files_with_errors": len({f.path for f in findings if f.severity == ERROR}),
        },
    }


def link_findings(ws: Workspace, links: list[BrokenLink]) -> list[Finding]:
    """A finding for each broken link (`links.link_check`): a frontmatter reference points at
    the line that holds it."""
    out = []
    for b in links:
        line = _meta_line(ws.root, b.path, b.target, b.line) if b.kind == "meta" else b.line
        kind = "heading" if b.cause == "heading" else "link"  # the note is there, the place not
        out.append(Finding(b.path, line, b.severity, kind, b.message, (b.kind, b.target), b.cause))
    return out


def _problem(path: str, kind: str, message: str) -> Finding:
    m = _LINE_IN_MESSAGE.search(message)
    line = int(m.group(1) or m.group(2)) if m else 1
    if kind == "schema":
        return Finding(path, line, ERROR, "schema", f"schema not loaded: {message}")
    if kind == "skipped":
        return Finding(path, 1, WARNING, "skipped", f"not indexed: {message}")
    if "frontmatter" in message:
        return Finding(path, line, ERROR, "frontmatter", message)
    return Finding(path, line, WARNING, "warning", message)


def validate(schema: Schema, kind: str | None, meta: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(field, message, finding kind) for each way `meta` breaks the schema."""
    out: list[tuple[str, str, str]] = []
    lowered = {str(k).lower(): v for k, v in meta.items()}
    of_type = f" (type {kind})" if kind else ""
    for name, f in schema.fields_for(kind).items():
        if name not in lowered:
            if f.required:
                out.append((name, f"missing required field {name!r}{of_type}", "required"))
            continue
        value = lowered[name]
        if value is None or value == "" or value == []:
            if f.required:
                out.append((name, f"required field {name!r} is empty{of_type}", "required"))
            continue
        problem = _type_problem(f, value)
        if problem:
            out.append((name, f"{name}: {problem}", "enum" if f.type == "enum" else "type"))
    return out


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"number {value}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"{value!r}"


def _type_problem(f: Field, value: Any) -> str:
    kind = f.type
    if kind == "string":
        return "" if isinstance(value, str) else f"expected text, got {_describe(value)}"
    if kind == "integer":
        ok = isinstance(value, int) and not isinstance(value, bool)
        return "" if ok else f"expected an integer, got {_describe(value)}"
    if kind == "number":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return "" if ok else f"expected a number, got {_describe(value)}"
    if kind == "boolean":
        return "" if isinstance(value, bool) else f"expected true or false, got {_describe(value)}"
    if kind == "date":
        if isinstance(value, str) and _ISO_DATE.match(value):
            try:
                _dt.date.fromisoformat(value[:10])
                return ""
            except ValueError:
                pass
        return f"expected a date (YYYY-MM-DD), got {_describe(value)}"
    if kind == "list":
        items = value if isinstance(value, list) else [value]
        bad = [v for v in items if isinstance(v, (dict, list)) or v is None]
        return f"expected a list of values, got {_describe(bad[0])} in it" if bad else ""
    if kind == "link":
        items = value if isinstance(value, list) else [value]
        bad = [v for v in items if not isinstance(v, str)]
        return (
            f"expected a link (a name, a path or [[name]]), got {_describe(bad[0])}" if bad else ""
        )
    if kind == "enum":
        if isinstance(value, (dict, list)):
            return f"expected one of {', '.join(f.values)}, got {_describe(value)}"
        if frontmatter_schema.canonical(value) not in f.values:
            return f"{value!r} is not one of {', '.join(f.values)}"
    return ""


KEY_LINES_BYTES = 1 << 20  # where a file's frontmatter keys are looked for


def _frontmatter_lines(root: Path, rel: str) -> list[str]:
    """The frontmatter's lines (the first is line 2), read from the file's first bytes (opened
    the one confined way: `confine.open_inside`)."""
    try:
        with open_inside(root, rel) as (fd, _):
            data = os.read(fd, KEY_LINES_BYTES)  # the frontmatter is in the first bytes
    except (OSError, ValueError):
        return []
    lines = data.decode("utf-8", "replace").splitlines()
    if not lines or lines[0].strip() != "---":
        return []
    out = []
    for line in lines[1:]:
        if line.strip() in ("---", "..."):
            break
        out.append(line)
    return out


def _key_lines(root: Path, rel: str, lines: list[str] | None = None) -> dict[str, int]:
    """{lowercased frontmatter key: its 1-based line} (of `lines`, once read)."""
    out: dict[str, int] = {}
    for n, line in enumerate(_frontmatter_lines(root, rel) if lines is None else lines, 2):
        m = re.match(r"^([^\s:#][^:]*):", line)
        if m:
            out.setdefault(m.group(1).strip().strip("'\"").lower(), n)
    return out


def _meta_line(root: Path, rel: str, target: str, default: int) -> int:
    """The frontmatter line that names `target` (a supersession key's line when none does)."""
    lines = _frontmatter_lines(root, rel)
    for n, line in enumerate(lines, 2):
        if target in line:
            return n
    keys = _key_lines(root, rel, lines)
    return min((keys[k] for k in SUPERSEDE_FIELDS if k in keys), default=default)

"""Frontmatter-schema facets (spec §6): the schema, each document's facet values, and filters.

A workspace's schema (`_schema/frontmatter.yaml`, or the `schema` option) declares typed fields
under `common` and `types.<name>`. Every declared field is a facet: its values, normalised, go
into the `facets` table when a document is published, and the whole table is rebuilt from the
stored frontmatter when the schema changes (no file is read again). A filter becomes a set of
document ids in the reader's snapshot, which both retrieval stages apply before they rank, so a
facet that matches 1% of the chunks still fills the limit.

Values compare normalised: text case-folded with whitespace collapsed, numbers without a
trailing `.0`, booleans as `true` / `false`, dates as ISO `YYYY-MM-DD` (a query may give a year
or a month: `date:2024`, `date:2024-03`). The schema file's YAML is read by `schema_file`.
"""

from __future__ import annotations

import datetime as _dt
import fnmatch
import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, overload

from autodoc.parse.document import meta_target
from autodoc.wire import protocol
from autodoc.wire.workspace_options import DEFAULT_SCHEMA

# `link`: one or more documents named as the body names them (a name, a path, [[wiki]] or
# [text](path.md)); `check` reports one that resolves to nothing, filters match its target
FIELD_TYPES = ("string", "integer", "number", "boolean", "date", "list", "enum", "link")
TAG_FIELD = "tag"  # the shorthand every workspace has: frontmatter tags and inline #tags
# The file's modification time, every workspace's too unless its schema declares a field of that
# name: `modified:<30d` (changed in the last 30 days), `modified:>=2025-06`.
MODIFIED_FIELD = "modified"
BUILT_IN = "file mtime"  # the built-in modified field's type
DEFAULT_TYPE_FIELD = "type"
MAX_VALUE_CHARS = 200  # longer values (prose) are not facet values
_ISO_DATETIME = re.compile(r"^(\d{4}-\d{2}-\d{2})[Tt ]\d{2}:\d{2}")
BOOLEANS = {"true": True, "yes": True, "on": True, "1": True}
BOOLEANS.update({"false": False, "no": False, "off": False, "0": False})


class SchemaError(Exception):
    """A schema that cannot be used; `line` is 1-based within the schema file."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(f"line {line}: {message}")
        self.message = message
        self.line = line


@dataclass(frozen=True)
class Field:
    name: str
    type: str
    values: tuple[str, ...] = ()  # an enum's allowed values, normalised
    required: bool = False


@dataclass
class Schema:
    common: dict[str, Field] = field(default_factory=dict)
    types: dict[str, dict[str, Field]] = field(default_factory=dict)
    match: dict[str, tuple[str, ...]] = field(default_factory=dict)  # type -> path globs
    type_field: str = DEFAULT_TYPE_FIELD

    def __post_init__(self) -> None:
        self.facets = self._facets()

    def _facets(self) -> dict[str, Field]:
        """Every filterable field, one declaration each (enums of one name pool their values)."""
        out: dict[str, Field] = {}
        for fields in (self.common, *self.types.values()):
            for f in fields.values():
                have = out.get(f.name)
                if have is None:
                    out[f.name] = f
                elif have.type == f.type == "enum":
                    values = tuple(dict.fromkeys((*have.values, *f.values)))
                    out[f.name] = Field(f.name, "enum", values)
        if self.types and self.type_field not in out:
            out[self.type_field] = Field(self.type_field, "enum", tuple(self.types))
        out[TAG_FIELD] = Field(TAG_FIELD, "list")
        out.setdefault(MODIFIED_FIELD, Field(MODIFIED_FIELD, BUILT_IN))
        return out

    @property
    def link_fields(self) -> list[str]:
        """The fields typed `link`: their values are links, whatever the form."""
        return sorted(n for n, f in self.facets.items() if f.type == "link")

    def is_facet(self, name: str) -> bool:
        return name.lower() in self.facets

    def type_of(self, path: str, meta: dict[str, Any]) -> str | None:
        """The document's type: its type field when that names a declared type, else the first
        type whose `match` globs take its path."""
        raw = meta.get(self.type_field)
        for value in raw if isinstance(raw, list) else [raw]:
            name = normalise(value)
            if name in self.types:
                return name
        for name, globs in self.match.items():
            if any(fnmatch.fnmatchcase(path, g) for g in globs):
                return name
        return None

    def fields_for(self, type_name: str | None) -> dict[str, Field]:
        return {**self.common, **(self.types.get(type_name, {}) if type_name else {})}

    def to_json(self) -> str:
        """In declaration order: the first type whose `match` takes a path wins, and an enum
        lists its values as declared, after a reload from the store too."""

        def fields(d: dict[str, Field]) -> dict[str, Any]:
            return {n: [f.type, list(f.values), f.required] for n, f in d.items()}

        return json.dumps(
            {
                "common": fields(self.common),
                "types": {t: fields(d) for t, d in self.types.items()},
                "match": {t: list(g) for t, g in self.match.items()},
                "type_field": self.type_field,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> Schema:
        data = json.loads(text)

        def fields(d: dict[str, Any]) -> dict[str, Field]:
            return {n: Field(n, t, tuple(v), r) for n, (t, v, r) in d.items()}

        return cls(
            fields(data["common"]),
            {t: fields(d) for t, d in data["types"].items()},
            {t: tuple(g) for t, g in data["match"].items()},
            data["type_field"],
        )


EMPTY = Schema()


def schema_location(root: Path, option: str | None) -> tuple[str, Path]:
    """(as messages show it, where it is): the `schema` option, root-relative or absolute."""
    option = option or DEFAULT_SCHEMA
    path = Path(option).expanduser()
    if path.is_absolute():
        return option, path
    return PurePosixPath(option).as_posix(), root / path


def schema_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- values --------------------------------------------------------------------------------------


@overload
def normalise(value: str) -> str: ...
@overload
def normalise(value: Any) -> str | None: ...
def normalise(value: Any) -> str | None:
    """Text as facets compare it: case-folded, whitespace collapsed."""
    if value is None:
        return None
    return " ".join(str(value).split()).casefold()


def canonical(value: Any) -> str | None:
    """A scalar frontmatter value as stored in the facets table (None: not a facet value)."""
    if value is None or isinstance(value, (dict, list)):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return None
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, (_dt.date, _dt.datetime)):
        value = value.isoformat()
    text = normalise(value)
    if not text or len(text) > MAX_VALUE_CHARS:
        return None
    m = _ISO_DATETIME.match(text)
    return m.group(1) if m else text


def tag_values(tags: Iterable[str]) -> set[str]:
    """A tag and each of its parents: `#project/autodoc` is found by `tag:project` too."""
    out: set[str] = set()
    for tag in tags:
        parts = [p for p in normalise(tag).lstrip("#").split("/") if p]
        for i in range(1, len(parts) + 1):
            out.add("/".join(parts[:i]))
    return out


def document_facets(
    schema: Schema, path: str, meta: dict[str, Any], tags: Iterable[str]
) -> list[tuple[str, str]]:
    """(field, value) rows for one document: its declared fields, its type and its tags."""
    rows: set[tuple[str, str]] = {(TAG_FIELD, t) for t in tag_values(tags)}
    if schema.facets:
        lowered = {str(k).lower(): v for k, v in meta.items()}
        for name in schema.facets:
            if name == TAG_FIELD or name not in lowered or schema.facets[name].type == BUILT_IN:
                continue
            raw = lowered[name]
            link = schema.facets[name].type == "link"
            for item in raw if isinstance(raw, list) else [raw]:
                value = canonical(meta_target(item) if link and isinstance(item, str) else item)
                if value is not None:
                    rows.add((name, value))
        if schema.types:
            kind = schema.type_of(path, lowered)
            if kind is not None:
                rows.add((schema.type_field, kind))
    return sorted(rows)


# -- the stored schema -----------------------------------------------------

_PARSED: dict[str, Schema] = {}


def schema_of(stored: str) -> Schema:
    """A stored schema's JSON, parsed once per process (every search reads it)."""
    schema = _PARSED.get(stored)
    if schema is None:
        if len(_PARSED) > 64:
            _PARSED.clear()
        schema = _PARSED[stored] = Schema.from_json(stored)
    return schema


def schema_state(shown: str, schema: Schema, error: str) -> protocol.SchemaState:
    """A loaded schema as `check` and `workspace.configure` describe it."""
    return protocol.SchemaState(
        path=shown,
        fields=sorted(n for n, f in schema.facets.items() if n != TAG_FIELD and f.type != BUILT_IN),
        types=sorted(schema.types),
        error=error,
    )

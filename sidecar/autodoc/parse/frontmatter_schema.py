"""Frontmatter-schema facets (spec §6): the schema, each document's facet values, and filters.

A workspace's schema (`_schema/frontmatter.yaml`, or the `schema` option) declares typed fields
under `common` and `types.<name>`. Every declared field is a facet: its values, normalised, go
into the `facets` table when a document is published, and the whole table is rebuilt from the
stored frontmatter when the schema changes (no file is read again). A filter becomes a set of
document ids in the reader's snapshot, which both retrieval stages apply before they rank, so a
facet that matches 1% of the chunks still fills the limit.

Values compare normalised: text case-folded with whitespace collapsed, numbers without a
trailing `.0`, booleans as `true` / `false`, dates as ISO `YYYY-MM-DD` (a query may give a year
or a month: `date:2024`, `date:2024-03`).
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

import yaml
from yaml.constructor import SafeConstructor

from autodoc.parse.document import meta_target
from autodoc.wire import protocol
from autodoc.wire.workspace_options import DEFAULT_SCHEMA

# `link`: one or more documents named as the body names them (a name, a path, [[wiki]] or
# [text](path.md)); `check` reports one that resolves to nothing, filters match its target
FIELD_TYPES = ("string", "integer", "number", "boolean", "date", "list", "enum", "link")
_TYPE_ALIASES = {
    "str": "string",
    "text": "string",
    "int": "integer",
    "float": "number",
    "bool": "boolean",
    "list[string]": "list",
    "list of strings": "list",
    "strings": "list",
    "links": "link",
    "list of links": "link",
}
TAG_FIELD = "tag"  # the shorthand every workspace has: frontmatter tags and inline #tags
# The file's modification time, every workspace's too unless its schema declares a field of that
# name: `modified:<30d` (changed in the last 30 days), `modified:>=2025-06`.
MODIFIED_FIELD = "modified"
BUILT_IN = "file mtime"  # the built-in modified field's type
DEFAULT_TYPE_FIELD = "type"
MAX_VALUE_CHARS = 200  # longer values (prose) are not facet values
_FIELD_NAME = re.compile(r"^[A-Za-z_][\w.-]*$")
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


# -- reading a schema file -----------------------------------------------------------------------


def parse_schema(text: str) -> Schema:
    """The schema in `text`; SchemaError names the line of the first problem."""
    try:
        root = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        last = max(1, len(text.rstrip("\n").split("\n")))  # a mark at the end: the last line
        line = min(mark.line + 1, last) if mark else 1
        raise SchemaError(f"not valid YAML: {reason}", line) from None
    if root is None:
        return Schema()
    top = _mapping(root, "the schema")
    unknown = [k for k in top if k not in ("common", "types", "match", "type_field")]
    if unknown:
        key, _ = top[unknown[0]]
        raise SchemaError(
            f"unknown section {unknown[0]!r} (expected common, types, match, type_field)",
            _line(key),
        )
    type_field = DEFAULT_TYPE_FIELD
    if "type_field" in top:
        node = top["type_field"][1]
        type_field = _field_name(_scalar(node, "type_field"), node)
    common = _fields(top["common"][1], "common") if "common" in top else {}
    types: dict[str, dict[str, Field]] = {}
    if "types" in top:
        for name, (_key, node) in _mapping(top["types"][1], "types").items():
            types[normalise(name)] = _fields(node, f"types.{name}")
    match: dict[str, tuple[str, ...]] = {}
    if "match" in top:
        for name, (key, node) in _mapping(top["match"][1], "match").items():
            if normalise(name) not in types:
                raise SchemaError(
                    f"match names type {name!r}, which types does not declare", _line(key)
                )
            globs = _value(node)
            globs = [globs] if isinstance(globs, str) else globs
            if not isinstance(globs, list) or not all(isinstance(g, str) and g for g in globs):
                raise SchemaError(f"match.{name} must be a list of path globs", _line(node))
            match[normalise(name)] = tuple(globs)
    _check_consistent(common, types, root)
    return Schema(common, types, match, type_field)


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1


def _value(node: yaml.Node) -> Any:
    return SafeConstructor().construct_object(node, deep=True)


def _scalar(node: yaml.Node, what: str) -> str:
    if not isinstance(node, yaml.ScalarNode):
        raise SchemaError(f"{what} must be a single value", _line(node))
    return str(node.value)


def _mapping(node: yaml.Node, what: str) -> dict[str, tuple[yaml.Node, yaml.Node]]:
    if isinstance(node, yaml.ScalarNode) and node.value in ("", "~", "null"):
        return {}
    if not isinstance(node, yaml.MappingNode):
        raise SchemaError(f"{what} must be a mapping", _line(node))
    out: dict[str, tuple[yaml.Node, yaml.Node]] = {}
    for key, value in node.value:
        name = _scalar(key, "a key")
        if name in out:
            raise SchemaError(f"{name!r} is declared twice in {what}", _line(key))
        out[name] = (key, value)
    return out


def _field_name(name: str, node: yaml.Node) -> str:
    if not _FIELD_NAME.match(name) or name.lower() == TAG_FIELD:
        why = "is reserved for tags" if name.lower() == TAG_FIELD else "is not a field name"
        raise SchemaError(f"{name!r} {why} (letters, digits, _ . -)", _line(node))
    return name.lower()


def _fields(node: yaml.Node, where: str) -> dict[str, Field]:
    fields: dict[str, Field] = {}
    for raw, (key, spec) in _mapping(node, where).items():
        name = _field_name(raw, key)
        fields[name] = _field(name, spec, f"{where}.{raw}")
    return fields


def _field(name: str, node: yaml.Node, where: str) -> Field:
    if isinstance(node, yaml.SequenceNode):  # a list of values is an enum
        return Field(name, "enum", _enum_values(node, where))
    if isinstance(node, yaml.ScalarNode):
        return Field(name, _type_name(node.value, node, where))
    spec = _mapping(node, where)
    unknown = [k for k in spec if k not in ("type", "values", "required")]
    if unknown:
        raise SchemaError(
            f"{where}: unknown key {unknown[0]!r} (type, values, required)",
            _line(spec[unknown[0]][0]),
        )
    if "type" not in spec and "values" not in spec:
        raise SchemaError(f"{where} needs a type", _line(node))
    kind = (
        _type_name(_scalar(spec["type"][1], "type"), spec["type"][1], where)
        if ("type" in spec)
        else "enum"
    )
    values: tuple[str, ...] = ()
    if "values" in spec:
        if kind != "enum":
            raise SchemaError(
                f"{where}: values are for an enum, not a {kind}", _line(spec["values"][0])
            )
        values = _enum_values(spec["values"][1], where)
    elif kind == "enum":
        raise SchemaError(f"{where}: an enum needs values", _line(node))
    required = False
    if "required" in spec:
        required = _value(spec["required"][1])
        if not isinstance(required, bool):
            raise SchemaError(f"{where}.required must be true or false", _line(spec["required"][1]))
    return Field(name, kind, values, required)


def _type_name(raw: str, node: yaml.Node, where: str) -> str:
    kind = _TYPE_ALIASES.get(raw.strip().lower(), raw.strip().lower())
    if kind not in FIELD_TYPES:
        raise SchemaError(
            f"{where}: unknown type {raw!r} (one of {', '.join(FIELD_TYPES)})", _line(node)
        )
    return kind


def _enum_values(node: yaml.Node, where: str) -> tuple[str, ...]:
    if not isinstance(node, yaml.SequenceNode) or not node.value:
        raise SchemaError(f"{where}: values must be a non-empty list", _line(node))
    values = []
    for item in node.value:
        value = canonical(_value(item))
        if value is None:
            raise SchemaError(f"{where}: enum values must be plain values", _line(item))
        values.append(value)
    return tuple(dict.fromkeys(values))


def _check_consistent(common: dict[str, Field], types: dict[str, dict[str, Field]], root) -> None:
    """One field name means one kind of value, so a filter on it coerces one way."""
    seen: dict[str, tuple[str, str]] = {n: (f.type, "common") for n, f in common.items()}
    for tname, fields in types.items():
        for n, f in fields.items():
            if n in seen and seen[n][0] != f.type:
                raise SchemaError(
                    f"field {n!r} is a {f.type} in types.{tname} but a {seen[n][0]} in "
                    f"{seen[n][1]}",
                    _line(root),
                )
            seen.setdefault(n, (f.type, f"types.{tname}"))


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

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
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, overload

import yaml
from yaml.constructor import SafeConstructor

from autodoc import store
from autodoc.parse.document import meta_target
from autodoc.wire import protocol
from autodoc.wire.errors import invalid_params
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
_RANGE_OP = re.compile(r"^(>=|<=|>|<)\s*")
_AGE = re.compile(r"^(\d{1,5})\s*([dwy])$")
_AGE_DAYS = {"d": 1, "w": 7, "y": 365}
DEFAULT_TYPE_FIELD = "type"
MAX_VALUE_CHARS = 200  # longer values (prose) are not facet values
# A kept set larger than this and than half the workspace goes to the stages as the documents
# dropped instead (a Tantivy term set costs by its size: 8,771 ids ~11 ms, 974 ~2 ms).
TERM_SET_SMALL = 4096
_FIELD_NAME = re.compile(r"^[A-Za-z_][\w.-]*$")
_DATE_QUERY = re.compile(r"^(\d{4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?$")
_ISO_DATETIME = re.compile(r"^(\d{4}-\d{2}-\d{2})[Tt ]\d{2}:\d{2}")
_BOOLEANS = {"true": True, "yes": True, "on": True, "1": True}
_BOOLEANS.update({"false": False, "no": False, "off": False, "0": False})


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


# -- filters -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Match:
    value: str
    prefix: bool = False  # a partial date: the value or anything under it
    op: str = ""  # a range on a date: ">=", ">", "<=", "<" (the value's whole day, month, year)
    between: tuple[int | None, int | None] | None = None  # modified: [low, high) in mtime ns

    def shown(self) -> str:
        return self.op + self.value + ("*" if self.prefix and not self.op else "")


@dataclass
class FacetFilter:
    """Conditions on documents: values of one field OR together, fields AND, exclusions win."""

    include: dict[str, list[Match]] = field(default_factory=dict)
    exclude: dict[str, list[Match]] = field(default_factory=dict)
    paths: list[str] = field(default_factory=list)

    @property
    def active(self) -> bool:
        return bool(self.include or self.exclude or self.paths)

    def add(self, name: str, match: Match, negated: bool) -> None:
        target = self.exclude if negated else self.include
        values = target.setdefault(name, [])
        if match not in values:
            values.append(match)

    def describe(self) -> protocol.FilterRecord:
        def side(d: dict[str, list[Match]]) -> dict[str, list[str]]:
            return {k: [m.shown() for m in v] for k, v in d.items()}

        out = protocol.FilterRecord()
        if self.include:
            out["include"] = side(self.include)
        if self.exclude:
            out["exclude"] = side(self.exclude)
        if self.paths:
            out["paths"] = list(self.paths)
        return out

    def select(self, conn, ws_id: int) -> DocumentSet:
        """The live documents that pass. Each condition is read from its index (the facet
        values, or paths by range) and the sets are combined here, so the cost follows the
        rows that match, not the size of the workspace. Kept as the passing ids, or as the
        failing ones when most pass: the stages get whichever list is shorter."""
        total = store.live_document_count(conn, ws_id)
        keep: set[int] | None = None
        for name, matches in self.include.items():
            ids = self._matching(conn, ws_id, name, matches)
            keep = ids if keep is None else keep & ids
        if self.paths:
            under: set[int] = set()
            for p in self.paths:
                under.update(store.documents_under(conn, ws_id, p))
            keep = under if keep is None else keep & under
        drop: set[int] = set()
        for name, matches in self.exclude.items():
            drop |= self._matching(conn, ws_id, name, matches)
        if keep is None:  # only exclusions: facet rows belong to live documents
            return DocumentSet(total - len(drop), drop=drop)
        keep -= drop
        if len(keep) * 2 > total and len(keep) > TERM_SET_SMALL:
            live = store.live_documents(conn, ws_id)
            return DocumentSet(len(keep), drop={d for d in live if d not in keep})
        return DocumentSet(len(keep), keep=keep)

    @staticmethod
    def _matching(conn, ws_id: int, name: str, matches: list[Match]) -> set[int]:
        exact = [m.value for m in matches if not (m.prefix or m.op or m.between)]
        ids: set[int] = set()
        if exact:
            ids.update(store.documents_with_facet(conn, ws_id, name, exact))
        for m in matches:
            if m.between is not None:  # the file's modification time
                ids.update(store.documents_modified(conn, ws_id, *m.between))
            elif m.op:
                ids.update(store.documents_with_facet_range(conn, ws_id, name, *_text_range(m)))
            elif m.prefix:  # a year or a month: itself or under it
                ids.update(store.documents_with_facet_under(conn, ws_id, name, m.value))
        return ids

    def browse(self, conn, ws_id: int, limit: int) -> tuple[list[int], int]:
        """(the first `limit` passing documents in path order, how many pass)."""
        passing = self.select(conn, ws_id)
        if passing.keep is not None:
            paths = store.document_paths(conn, sorted(passing.keep))
            return sorted(paths, key=lambda d: paths[d])[:limit], passing.size
        ids: list[int] = []
        for doc_id in store.live_documents(conn, ws_id):  # in path order
            if doc_id in passing:
                ids.append(doc_id)
                if len(ids) >= limit:
                    break
        return ids, passing.size


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


def coerce(schema: Schema, name: str, raw: Any, *, source: str) -> Match:
    """A query value as the declared field stores it; -32602 naming the field when it cannot
    be one (`source`: where the value came from, for the message)."""
    f = schema.facets.get(name.lower())
    if f is None:
        raise invalid_params(
            f"{name!r} is not a declared facet", field=name, facets=sorted(schema.facets)
        )
    where = {"field": f.name, "value": raw, "source": source}
    if isinstance(raw, (dict, list)) or raw is None:
        raise invalid_params(f"{f.name}: a facet value must be a single value", **where)
    kind = f.type
    value: bool | int | float | str | None  # as the field's kind stores it
    if kind == "boolean":
        value = raw if isinstance(raw, bool) else _BOOLEANS.get(str(raw).strip().lower())
        if value is None:
            raise invalid_params(f"{f.name} is a boolean: true or false, not {raw!r}", **where)
        return Match("true" if value else "false")
    if kind == "integer":
        try:
            if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
                raise ValueError
            value = int(raw) if not isinstance(raw, str) else int(raw.strip(), 10)
        except (TypeError, ValueError):
            raise invalid_params(f"{f.name} is an integer, not {raw!r}", **where) from None
        return Match(str(value))
    if kind == "number":
        try:
            if isinstance(raw, bool):
                raise ValueError
            value = float(raw)
        except (TypeError, ValueError):
            raise invalid_params(f"{f.name} is a number, not {raw!r}", **where) from None
        return Match(canonical(value) or str(raw))
    if kind in ("date", BUILT_IN):
        return _range_match(f.name, kind, str(raw).strip(), where)
    value = canonical(meta_target(raw) if kind == "link" and isinstance(raw, str) else raw)
    if value is None:
        raise invalid_params(f"{f.name}: empty value", **where)
    if kind == "enum" and value not in f.values:
        raise invalid_params(
            f"{f.name} is one of {', '.join(f.values)}, not {raw!r}", **where, allowed=f.values
        )
    return Match(value)


def _range_match(name: str, kind: str, raw: str, where: dict[str, Any]) -> Match:
    """A date, a part of one, or a range: `2025-01`, `>=2025-01`, `<2024`; for the built-in
    `modified` an age too (`<30d`: changed in the last 30 days, `>1y`: not for a year)."""
    m = _RANGE_OP.match(raw)
    op, rest = (m[1], raw[m.end() :]) if m else ("", raw)
    if kind == BUILT_IN and (age := _AGE.match(rest)):
        days = int(age[1]) * _AGE_DAYS[age[2]]
        since = time.time_ns() - days * 86_400 * 10**9
        op = op or "<"  # modified:30d: within 30 days
        between = (since, None) if op in ("<", "<=") else (None, since)
        return Match(f"{age[1]}{age[2]}", op=op, between=between)
    day = _date_match(name, rest, where)
    if kind == BUILT_IN:
        return Match(day.value, day.prefix, op, _mtime_bounds(day, op))
    return Match(day.value, day.prefix, op)


def _text_range(m: Match) -> tuple[str | None, str | None]:
    """[low, high) over ISO date text for a range on a date or a part of one ("~" sorts after
    every digit and "-", so `2025-01~` is past every day of January 2025)."""
    after = m.value + "~"
    return {">=": (m.value, None), ">": (after, None), "<": (None, m.value),
            "<=": (None, after)}[m.op]  # fmt: skip


def _mtime_bounds(day: Match, op: str) -> tuple[int | None, int | None]:
    """[low, high) in mtime ns for a local-time day, month or year and a range operator."""
    parts = [int(x) for x in day.value.split("-")]
    year, month, mday = [*parts, 1, 1][:3]
    start = _dt.datetime(year, month, mday)
    if len(parts) == 1:
        end = start.replace(year=start.year + 1)
    elif len(parts) == 2:
        end = (start.replace(day=28) + _dt.timedelta(days=4)).replace(day=1)
    else:
        end = start + _dt.timedelta(days=1)
    lo, hi = int(start.timestamp() * 10**9), int(end.timestamp() * 10**9)
    return {"": (lo, hi), ">=": (lo, None), ">": (hi, None), "<": (None, lo),
            "<=": (None, hi)}[op]  # fmt: skip


def _date_match(name: str, raw: Any, where: dict[str, Any]) -> Match:
    m = _DATE_QUERY.match(str(raw).strip())
    if m:
        year, month, day = m.group(1), m.group(2), m.group(3)
        try:
            _dt.date(int(year), int(month or 1), int(day or 1))
        except ValueError:
            m = None
        else:
            if day:
                return Match(f"{year}-{int(month):02d}-{int(day):02d}")
            return Match(f"{year}-{int(month):02d}" if month else year, prefix=True)
    raise invalid_params(f"{name} is a date: YYYY-MM-DD, YYYY-MM or YYYY, not {raw!r}", **where)


def build_filter(
    schema: Schema,
    inline: Iterable[tuple[str, str, bool]],
    facets: dict[str, list[Any]] | None = None,
    tags: list[str] | None = None,
    paths: list[str] | None = None,
) -> FacetFilter:
    """The filter from inline tokens (field, value, negated) and the structured options."""
    flt = FacetFilter(paths=list(paths or []))
    for name, value, negated in inline:
        flt.add(name.lower(), coerce(schema, name, value, source="query"), negated)
    for key, values in (facets or {}).items():
        negated = key.startswith("-")
        name = key[1:] if negated else key
        for value in values if isinstance(values, list) else [values]:
            flt.add(name.lower(), coerce(schema, name, value, source="opts.facets"), negated)
    for tag in tags or []:
        negated = tag.startswith("-")
        value = tag[1:] if negated else tag
        flt.add(
            TAG_FIELD, coerce(schema, TAG_FIELD, value.lstrip("#"), source="opts.tags"), negated
        )
    return flt


def validate_options(facets: Any, tags: Any) -> tuple[dict[str, list[Any]], list[str]]:
    """Shape checks for opts.facets / opts.tags (the values are coerced against the schema)."""
    if facets is None:
        facets = {}
    if not isinstance(facets, dict) or not all(isinstance(k, str) and k for k in facets):
        raise invalid_params("facets must be an object of field: [values]", field="facets")
    if tags is None:
        tags = []
    if not isinstance(tags, list) or not all(isinstance(t, str) and t.strip("#-") for t in tags):
        raise invalid_params("tags must be a list of tag names", field="tags")
    return facets, tags


# -- the stored schema and the facets table -----------------------------------------------------

_PARSED: dict[str, Schema] = {}


def schema_of(stored: str) -> Schema:
    """A stored schema's JSON, parsed once per process (every search reads it)."""
    schema = _PARSED.get(stored)
    if schema is None:
        if len(_PARSED) > 64:
            _PARSED.clear()
        schema = _PARSED[stored] = Schema.from_json(stored)
    return schema


def stored_schema(conn, ws_id: int) -> Schema:
    """The workspace's schema in this snapshot (EMPTY when it has none)."""
    stored = store.stored_schema_json(conn, ws_id)
    return schema_of(stored) if stored is not None else EMPTY


def write_facets(conn, ws_id: int, schema: Schema, docs: Iterable[tuple[int, str, Any, Any]]):
    """Replace the facet rows of these documents: (id, path, meta, tags) with meta and tags as
    dicts/lists or their JSON."""
    rows = []
    ids = []
    for doc_id, path, meta, tags in docs:
        ids.append(doc_id)
        meta = json.loads(meta or "{}") if isinstance(meta, str) or meta is None else meta
        tags = json.loads(tags or "[]") if isinstance(tags, str) or tags is None else tags
        rows += [(ws_id, doc_id, f, v) for f, v in document_facets(schema, path, meta, tags)]
    store.replace_facets(conn, ws_id, ids, rows)


def schema_state(shown: str, schema: Schema, error: str) -> protocol.SchemaState:
    """A loaded schema as `check` and `workspace.configure` describe it."""
    return protocol.SchemaState(
        path=shown,
        fields=sorted(n for n, f in schema.facets.items() if n != TAG_FIELD and f.type != BUILT_IN),
        types=sorted(schema.types),
        error=error,
    )


def rebuild_facets(conn, ws_id: int, schema: Schema) -> int:
    """Every document's facets again, from the frontmatter kept in SQLite (a schema change)."""
    store.clear_facets(conn, ws_id)
    docs = store.live_document_frontmatter(conn, ws_id)
    write_facets(conn, ws_id, schema, docs)
    return len(docs)
